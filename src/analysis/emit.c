#include "emit.h"

#include <math.h>
#include <stdarg.h>

static const uint64_t powers_of_ten[] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                          100000000, 1000000000, 10000000000 };

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
    size_t len = 0;
    if (negative)
        buf[len++] = '-';
    len += emit_format_u64(buf + len, magnitude / powers_of_ten[decimals]);
    buf[len++] = '.';
    uint32_t fraction = (uint32_t)(magnitude % powers_of_ten[decimals]);
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

/* |value| x 10^decimals (0 to 10) rounded to a whole number, ties to even, from value's exact
 * binary fraction m x 2^e: in 128 bits, m x 10^decimals is exact (under 2^83), and so is the
 * shift and the remainder that decides the rounding. False for a result of 2^63 or more, or a
 * value that is not finite. */
static bool round_scaled(double value, unsigned decimals, uint64_t *ret)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof(bits));
    unsigned biased = (unsigned)(bits >> 52) & 0x7ff;
    uint64_t mantissa = bits & ((1ull << 52) - 1);
    if (biased == 0x7ff)
        return false; /* infinity or NaN */
    int exponent = -1074; /* subnormal: no hidden bit */
    if (biased) {
        mantissa |= 1ull << 52;
        exponent = (int)biased - 1075;
    }
    unsigned __int128 product = (unsigned __int128)mantissa * powers_of_ten[decimals];
    const unsigned __int128 limit = (unsigned __int128)1 << 63;
    if (exponent >= 0) {
        if (exponent >= 63 || product >= limit >> exponent)
            return false;
        *ret = (uint64_t)(product << exponent);
        return true;
    }
    unsigned shift = (unsigned)-exponent;
    if (shift >= 127) {
        *ret = 0; /* under 2^-44: rounds to nothing */
        return true;
    }
    unsigned __int128 whole = product >> shift;
    unsigned __int128 rest = product - (whole << shift);
    unsigned __int128 half = (unsigned __int128)1 << (shift - 1);
    if (rest > half || (rest == half && (whole & 1)))
        whole++;
    if (whole >= limit)
        return false;
    *ret = (uint64_t)whole;
    return true;
}

size_t emit_format_decimal(char *buf, double value, unsigned decimals)
{
    uint64_t magnitude;
    if (decimals < 1 || decimals > 9 || !round_scaled(value, decimals, &magnitude) ||
        magnitude >= 1000000000000000000ull)
        return 0;
    return emit_format_fixed(buf, magnitude, signbit(value), decimals);
}

/* "%g" is "%.*f" with 5 - X decimals, its trailing zeros and then a bare point dropped, where X
 * is the decimal exponent of value rounded to 6 digits and -4 <= X < 6; else it is "%e"'s
 * form, which this leaves to printf. */
size_t emit_format_general(char *buf, double value)
{
    if (value == 0) {
        size_t len = 0;
        if (signbit(value))
            buf[len++] = '-';
        buf[len++] = '0';
        return len;
    }
    if (!isfinite(value))
        return 0;
    double magnitude = fabs(value);
    if (magnitude < 9e-5 || magnitude >= 1e6)
        return 0; /* X below -4 or 6 and over, whatever the rounding */
    /* log10's guess of X, then settled on the rounded digits: six of them, no more, no less. */
    int exponent = (int)floor(log10(magnitude));
    uint64_t digits = 0;
    for (int tries = 0; tries < 3; tries++) {
        int decimals = 5 - exponent;
        if (decimals < 0 || decimals > 10 || !round_scaled(value, (unsigned)decimals, &digits))
            return 0;
        if (digits >= 1000000)
            exponent++;
        else if (digits < 100000)
            exponent--;
        else
            break;
    }
    if (digits < 100000 || digits >= 1000000 || exponent < -4 || exponent > 5)
        return 0;
    unsigned decimals = (unsigned)(5 - exponent);
    while (decimals > 0 && digits % 10 == 0) {
        digits /= 10;
        decimals--;
    }
    size_t len = 0;
    if (signbit(value))
        buf[len++] = '-';
    if (decimals == 0)
        return len + emit_format_u64(buf + len, digits);
    return len + emit_format_fixed(buf + len, digits, false, decimals);
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
        emit_decimal(e, value / (decimals == 3 ? 1e3 : 1e6), decimals);
}

void emit_decimal(struct emit *e, double value, unsigned decimals)
{
    char *at = emit_room(e, EMIT_NUMBER_SIZE);
    size_t len = emit_format_decimal(at, value, decimals);
    if (len)
        e->len += len;
    else
        emit_printf(e, "%.*f", (int)decimals, value);
}

void emit_general(struct emit *e, double value)
{
    char *at = emit_room(e, EMIT_NUMBER_SIZE);
    size_t len = emit_format_general(at, value);
    if (len)
        e->len += len;
    else
        emit_printf(e, "%g", value);
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
