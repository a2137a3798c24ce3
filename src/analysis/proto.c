#include "proto.h"

#include <stdlib.h>
#include <string.h>

enum wire_type {
    WIRE_VARINT = 0,
    WIRE_FIXED64 = 1,
    WIRE_LENGTH = 2,
};

#define VARINT_MAX 10 /* 64 bits, 7 a byte */

void proto_buf_finish(struct proto_buf *b)
{
    free(b->data);
    *b = (struct proto_buf){ 0 };
}

/* Room for n more bytes; false (and failed set) when memory ran out. */
static bool reserve(struct proto_buf *b, size_t n)
{
    if (b->failed)
        return false;
    if (b->capacity - b->len >= n)
        return true;
    size_t capacity = b->capacity ? b->capacity : 4096;
    while (capacity - b->len < n) {
        if (capacity > SIZE_MAX / 2) {
            b->failed = true;
            return false;
        }
        capacity *= 2;
    }
    uint8_t *data = realloc(b->data, capacity);
    if (!data) {
        b->failed = true;
        return false;
    }
    b->data = data;
    b->capacity = capacity;
    return true;
}

static size_t varint_encode(uint8_t out[VARINT_MAX], uint64_t value)
{
    size_t n = 0;
    while (value >= 0x80) {
        out[n++] = (uint8_t)(value | 0x80);
        value >>= 7;
    }
    out[n++] = (uint8_t)value;
    return n;
}

static void put_varint(struct proto_buf *b, uint64_t value)
{
    if (!reserve(b, VARINT_MAX))
        return;
    b->len += varint_encode(b->data + b->len, value);
}

static void put_tag(struct proto_buf *b, unsigned field, enum wire_type type)
{
    put_varint(b, (uint64_t)field << 3 | type);
}

void proto_varint(struct proto_buf *b, unsigned field, uint64_t value)
{
    put_tag(b, field, WIRE_VARINT);
    put_varint(b, value);
}

void proto_fixed64(struct proto_buf *b, unsigned field, uint64_t value)
{
    put_tag(b, field, WIRE_FIXED64);
    if (!reserve(b, 8))
        return;
    for (unsigned i = 0; i < 8; i++) /* little-endian, whatever the host */
        b->data[b->len++] = (uint8_t)(value >> (8 * i));
}

void proto_double(struct proto_buf *b, unsigned field, double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof(bits));
    proto_fixed64(b, field, bits);
}

void proto_bytes(struct proto_buf *b, unsigned field, const void *bytes, size_t len)
{
    put_tag(b, field, WIRE_LENGTH);
    put_varint(b, len);
    if (!reserve(b, len))
        return;
    if (len)
        memcpy(b->data + b->len, bytes, len);
    b->len += len;
}

void proto_string(struct proto_buf *b, unsigned field, const char *text)
{
    proto_bytes(b, field, text ? text : "", text ? strlen(text) : 0);
}

size_t proto_begin(struct proto_buf *b, unsigned field)
{
    put_tag(b, field, WIRE_LENGTH);
    if (!reserve(b, 1))
        return b->len;
    b->data[b->len] = 0; /* one byte for the length: most messages here are under 128 */
    return b->len++;
}

void proto_end(struct proto_buf *b, size_t mark)
{
    if (b->failed)
        return;
    size_t content = b->len - (mark + 1);
    uint8_t length[VARINT_MAX];
    size_t n = varint_encode(length, content);
    if (n > 1) {
        if (!reserve(b, n - 1))
            return;
        memmove(b->data + mark + n, b->data + mark + 1, content);
        b->len += n - 1;
    }
    memcpy(b->data + mark, length, n);
}
