/* Text every output writes alike: JSON string literals and CSV fields, escaped once, and
 * milliseconds written exactly, here. */
#ifndef FSCOPE_ANALYSIS_EMIT_H
#define FSCOPE_ANALYSIS_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Writes a JSON string literal (with quotes) for s (NULL: ""). */
void json_write_string(FILE *f, const char *s);
/* The same for a literal inside an HTML <script> element: '<', '>' and '&' are escaped too, so
 * no text of the program's ("</script>" in a zone name) can end the element, and every
 * control byte is a \u escape. */
void json_write_script_string(FILE *f, const char *s);

/* ",ms" with six decimals: exact nanoseconds, so columns sum exactly; negative values too. */
void csv_write_ms(FILE *f, int64_t ns);
/* Writes text as a quoted CSV field ("" inside for "). */
void csv_quoted(FILE *f, const char *text);

/* Numbers as text, without printf. Each writes into buf, which holds EMIT_NUMBER_SIZE bytes,
 * and returns the length written (no NUL). */
#define EMIT_NUMBER_SIZE 32
/* What "%llu" writes. */
size_t emit_format_u64(char *buf, uint64_t value);
/* What "%lld" writes. */
size_t emit_format_i64(char *buf, int64_t value);
/* magnitude / 10^decimals with all its decimals (1 to 9), "-" before it when negative, even
 * for 0: "%.6f" of a whole number of nanoseconds in ms, digit for digit, with no double. */
size_t emit_format_fixed(char *buf, uint64_t magnitude, bool negative, unsigned decimals);
/* csv_write_ms's number: ns in ms with six decimals, exactly, over all of int64_t. */
size_t emit_format_ms(char *buf, int64_t ns);
/* What printf's "%.*f" writes of value / 10^decimals (decimals 3 or 6, the division done in
 * double, as callers write it) where value is a whole number under 2^52 in magnitude: the
 * quotient's double is then within half a unit of its last place (at most 2^-21 ms or 2^-11
 * us) of the exact quotient, which has only those decimals, so printf's rounding gives them
 * back. Returns 0 for any other value (a fraction, too large, not finite), which the caller
 * prints through printf. */
size_t emit_format_scaled(char *buf, double value, unsigned decimals);
/* What printf's "%.*f" writes of any double value with decimals 1 to 9, and "%g" of it, digit
 * for digit: rounded from value's exact binary fraction, ties to even, as glibc rounds (no
 * double arithmetic on the way). Returns 0 where the number would have 19 digits or more, or
 * "%g" would take its exponent form, or value is not finite: the caller prints those through
 * printf. */
size_t emit_format_decimal(char *buf, double value, unsigned decimals);
size_t emit_format_general(char *buf, double value);

/* Text gathered in memory and handed to its FILE a block at a time. An output of a row per
 * frame writes a hundred short fields a frame; fprintf's parsing of its format, and the
 * stream's lock taken on every call, cost more than the digits (frames.csv of 1,000,000
 * frames: see tests/bench/README.md, 2026-12-06). A writer that starts one writes everything
 * through it until emit_flush, so that the bytes keep their order; the FILE's error flag
 * tells of a failed write, as with fwrite. */
#define EMIT_BUFFER_SIZE 8192
struct emit {
    FILE *f;
    size_t len;
    char data[EMIT_BUFFER_SIZE];
};

void emit_init(struct emit *e, FILE *f);
/* Hands what is gathered to the FILE. */
void emit_flush(struct emit *e);
void emit_bytes(struct emit *e, const char *bytes, size_t len);

/* Room for n (at most EMIT_BUFFER_SIZE) more bytes at e->data + e->len. */
static inline char *emit_room(struct emit *e, size_t n)
{
    if (sizeof(e->data) - e->len < n)
        emit_flush(e);
    return e->data + e->len;
}

static inline void emit_char(struct emit *e, char c)
{
    *emit_room(e, 1) = c;
    e->len++;
}

static inline void emit_str(struct emit *e, const char *s)
{
    emit_bytes(e, s, strlen(s));
}

static inline void emit_u64(struct emit *e, uint64_t value)
{
    e->len += emit_format_u64(emit_room(e, EMIT_NUMBER_SIZE), value);
}

static inline void emit_i64(struct emit *e, int64_t value)
{
    e->len += emit_format_i64(emit_room(e, EMIT_NUMBER_SIZE), value);
}

/* csv_write_ms's field: ",ms". */
static inline void emit_csv_ms(struct emit *e, int64_t ns)
{
    char *at = emit_room(e, EMIT_NUMBER_SIZE + 1);
    *at = ',';
    e->len += 1 + emit_format_ms(at + 1, ns);
}

/* printf's "%.*f" of value / 10^decimals (3 or 6): emit_format_scaled's digits where value is
 * whole, else emit_decimal's of the quotient. */
void emit_scaled(struct emit *e, double value, unsigned decimals);
/* printf's "%.*f" (decimals 1 to 9) and "%g" of value, through emit_format_decimal and
 * emit_format_general where they write it, else through printf. */
void emit_decimal(struct emit *e, double value, unsigned decimals);
void emit_general(struct emit *e, double value);
void emit_printf(struct emit *e, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* json_write_string's literal. */
void emit_json_string(struct emit *e, const char *s);

#endif
