/* The protocol-buffer wire format, written by hand for the few messages the Perfetto trace
 * needs (trace_perfetto.c): varints, fixed 64-bit values, and length-delimited fields (bytes,
 * strings, nested messages) into a buffer that grows. No schema, no reflection: a field is its
 * number and its wire type, and the caller knows which is which. */
#ifndef FSCOPE_ANALYSIS_PROTO_H
#define FSCOPE_ANALYSIS_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proto_buf {
    uint8_t *data;
    size_t len, capacity;
    bool failed; /* memory ran out: everything written since is dropped, len stays put */
};

/* Frees the buffer's memory; the buffer is empty (and usable) after. */
void proto_buf_finish(struct proto_buf *b);
/* Empties the buffer, keeping its memory. */
static inline void proto_buf_clear(struct proto_buf *b)
{
    b->len = 0;
}

/* A field of wire type 0: uint32, uint64, int32 and int64 (a negative int is ten bytes, as
 * protobuf writes it), enum and bool. */
void proto_varint(struct proto_buf *b, unsigned field, uint64_t value);
/* A field of wire type 1: fixed64, and a double as its IEEE 754 bits. */
void proto_fixed64(struct proto_buf *b, unsigned field, uint64_t value);
void proto_double(struct proto_buf *b, unsigned field, double value);
/* A field of wire type 2 holding len bytes (a string without its NUL, bytes). */
void proto_bytes(struct proto_buf *b, unsigned field, const void *bytes, size_t len);
void proto_string(struct proto_buf *b, unsigned field, const char *text);

/* A nested message: proto_begin writes its field's tag and returns where its length goes;
 * the fields written until proto_end(b, mark) are its content. Nests to any depth. The
 * length is written in as few bytes as it takes (the content moves up when it needs more
 * than one), so the output is what any protobuf library would write. */
size_t proto_begin(struct proto_buf *b, unsigned field);
void proto_end(struct proto_buf *b, size_t mark);

#endif
