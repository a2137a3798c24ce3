#include "emit.h"

#include <math.h>
#include <stdarg.h>

static const char digit_pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
                                  "31323334353637383940414243444546474849505152535455565758596061"
                                  "6263646566676869707172737475767778798081828384858687888990919293"
                                  "949596979899";

size_t emit_format_u64(char *buf, uint64_t value)
{
    char digits[20];
    char *at = digits + sizeof(digits);
    while (value >= 100) {
        at -= 2;
        memcpy(at, &digit_pairs[2 * (value % 100)], 2);
        value /= 100;
    }
    if (value >= 10) {
        at -= 2;
        memcpy(at, &digit_pairs[2 * value], 2);
    } else {
        *--at = (char)('0' + value);
    }
    size_t len = (size_t)(digits + sizeof(digits) - at);
    memcpy(buf, at, len);
    return len;
}

size_t emit_format_i64(char *buf, int64_t value)
{
    if (value >= 0)
        return emit_format_u64(buf, (uint64_t)value);
    buf[0] = '-';
    return 1 + emit_format_u64(buf + 1, 0 - (uint64_t)value);
}

size_t emit_format_fixed(char *buf, uint64_t magnitude, bool negative, unsigned decimals)
{
    static const uint32_t scale[] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                      100000000, 1000000000 };
    size_t len = 0;
    if (negative)
        buf[len++] = '-';
    len += emit_format_u64(buf + len, magnitude / scale[decimals]);
    buf[len++] = '.';
    uint32_t fraction = (uint32_t)(magnitude % scale[decimals]);
    for (unsigned k = decimals; k > 0; k--) {
        buf[len + k - 1] = (char)('0' + fraction % 10);
        fraction /= 10;
    }
    return len + decimals;
}

size_t emit_format_ms(char *buf, int64_t ns)
{
    uint64_t magnitude = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
    return emit_format_fixed(buf, magnitude, ns < 0, 6);
}

size_t emit_format_scaled(char *buf, double value, unsigned decimals)
{
    if ((decimals != 3 && decimals != 6) || !(fabs(value) < 0x1p52) ||
        value != (double)(int64_t)value)
        return 0;
    /* signbit, not < 0: printf writes -0.0 / 1e6 as "-0.000000". */
    uint64_t magnitude = (uint64_t)(int64_t)fabs(value);
    return emit_format_fixed(buf, magnitude, signbit(value), decimals);
}

void emit_init(struct emit *e, FILE *f)
{
    e->f = f;
    e->len = 0;
}

void emit_flush(struct emit *e)
{
    if (e->len)
        fwrite(e->data, 1, e->len, e->f);
    e->len = 0;
}

void emit_bytes(struct emit *e, const char *bytes, size_t len)
{
    if (len > sizeof(e->data) - e->len) {
        emit_flush(e);
        if (len > sizeof(e->data)) {
            fwrite(bytes, 1, len, e->f);
            return;
        }
    }
    memcpy(e->data + e->len, bytes, len);
    e->len += len;
}

void emit_scaled(struct emit *e, double value, unsigned decimals)
{
    char *at = emit_room(e, EMIT_NUMBER_SIZE);
    size_t len = emit_format_scaled(at, value, decimals);
    if (len)
        e->len += len;
    else
        emit_printf(e, "%.*f", (int)decimals, value / (decimals == 3 ? 1e3 : 1e6));
}

void emit_printf(struct emit *e, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    size_t room = sizeof(e->data) - e->len;
    int len = vsnprintf(e->data + e->len, room, format, args);
    va_end(args);
    if (len < 0)
        return;
    if ((size_t)len < room) {
        e->len += (size_t)len;
        return;
    }
    /* Did not fit: the text goes after what is gathered, whatever its length. */
    emit_flush(e);
    va_start(args, format);
    vfprintf(e->f, format, args);
    va_end(args);
}

static void emit_escaped(struct emit *e, const char *s, bool in_script)
{
    static const char hex[] = "0123456789abcdef";
    emit_char(e, '"');
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        char *at = emit_room(e, 6);
        if (*p == '"' || *p == '\\') {
            memcpy(at, (const char[]){ '\\', (char)*p }, 2);
            e->len += 2;
        } else if (!in_script && *p == '\n') {
            memcpy(at, "\\n", 2);
            e->len += 2;
        } else if (!in_script && *p == '\t') {
            memcpy(at, "\\t", 2);
            e->len += 2;
        } else if (*p < 0x20 || (in_script && (*p == '<' || *p == '>' || *p == '&'))) {
            memcpy(at, (const char[]){ '\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15] }, 6);
            e->len += 6;
        } else {
            *at = (char)*p;
            e->len++;
        }
    }
    emit_char(e, '"');
}

void emit_json_string(struct emit *e, const char *s)
{
    emit_escaped(e, s, false);
}

void json_write_string(FILE *f, const char *s)
{
    struct emit e;
    emit_init(&e, f);
    emit_escaped(&e, s, false);
    emit_flush(&e);
}

void json_write_script_string(FILE *f, const char *s)
{
    struct emit e;
    emit_init(&e, f);
    emit_escaped(&e, s, true);
    emit_flush(&e);
}

void csv_write_ms(FILE *f, int64_t ns)
{
    char text[EMIT_NUMBER_SIZE + 1];
    text[0] = ',';
    fwrite(text, 1, 1 + emit_format_ms(text + 1, ns), f);
}

void csv_quoted(FILE *f, const char *text)
{
    fputc('"', f);
    for (const char *p = text; *p; p++) {
        if (*p == '"')
            fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}
