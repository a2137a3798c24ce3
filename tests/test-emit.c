/* emit.c's numbers against printf, which the outputs wrote them with before (their goldens
 * hold printf's digits), and its buffer against the same text written straight to the FILE. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/emit.h"
#include "analysis/recording.h"
#include "check.h"

static void check_text(const char *got, size_t len, const char *want)
{
    if (len != strlen(want) || memcmp(got, want, len) != 0) {
        fprintf(stderr, "got \"%.*s\", want \"%s\"\n", (int)len, got, want);
        CHECK(!"the same text as printf");
    }
}

static void check_integer(int64_t value)
{
    char got[EMIT_NUMBER_SIZE], want[64];
    snprintf(want, sizeof(want), "%lld", (long long)value);
    check_text(got, emit_format_i64(got, value), want);
    snprintf(want, sizeof(want), "%llu", (unsigned long long)value);
    check_text(got, emit_format_u64(got, (uint64_t)value), want);
    /* csv_write_ms's number as it was written before: sign, whole ms, six decimals. */
    uint64_t magnitude = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;
    snprintf(want, sizeof(want), "%s%llu.%06llu", value < 0 ? "-" : "",
             (unsigned long long)(magnitude / 1000000), (unsigned long long)(magnitude % 1000000));
    check_text(got, emit_format_ms(got, value), want);
}

/* A whole number under 2^52: exactly what printf writes of its quotient, in ms and in us. */
static void check_scaled(double value)
{
    char got[EMIT_NUMBER_SIZE], want[400];
    snprintf(want, sizeof(want), "%.6f", value / 1e6);
    check_text(got, emit_format_scaled(got, value, 6), want);
    snprintf(want, sizeof(want), "%.3f", value / 1e3);
    check_text(got, emit_format_scaled(got, value, 3), want);
}

/* xorshift64*: the same values on every run. */
static uint64_t next_random(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 2685821657736338717ull;
}

static void check_numbers(void)
{
    const int64_t edges[] = {
        0, 1, -1, 9, 10, 99, 100, 999999, 1000000, 1000001, -999999, -1000000, -1000001,
        1500000, 10000000, 120000000000, -120000000000, 16666667, 1234567890123,
        REPORT_NS_MAX, REPORT_NS_MAX - 1, -REPORT_NS_MAX, -REPORT_NS_MAX + 1,
        INT64_MAX, INT64_MIN, INT64_MIN + 1, INT64_MAX - 1,
    };
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
        check_integer(edges[i]);
    for (int64_t power = 1; power <= INT64_MAX / 10; power *= 10)
        for (int64_t d = -1; d <= 1; d++) {
            check_integer(power + d);
            check_integer(-power - d);
        }
    uint64_t state = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 200000; i++) {
        uint64_t r = next_random(&state);
        check_integer((int64_t)(r >> (r % 64)));
        check_integer(-(int64_t)(r >> (r % 63 + 1))); /* at most 2^63 - 1: negated exactly */
    }

    /* Every power of two up to the bound and either side of it, and random values at every
     * magnitude: where the quotient's double is furthest from the exact one. */
    const double bound = 0x1p52;
    for (double power = 1; power < bound; power *= 2)
        for (double d = -3; d <= 3; d++)
            if (power + d < bound) {
                check_scaled(power + d);
                check_scaled(-(power + d));
            }
    check_scaled(bound - 1);
    check_scaled(-(bound - 1));
    check_scaled((double)REPORT_NS_MAX / 2 - 1);
    for (int64_t power = 1; power < (int64_t)bound; power *= 10)
        for (int64_t d = -2; d <= 2; d++) {
            check_scaled((double)(power + d));
            if (power * 7 + d < (int64_t)bound) /* trailing zeros: 7000000 is "7.000000" */
                check_scaled((double)(power * 7 + d));
        }
    for (int i = 0; i < 300000; i++) {
        uint64_t r = next_random(&state);
        double value = (double)(r >> (12 + r % 52)); /* under 2^52 */
        check_scaled(i % 2 ? -value : value);
    }
    char got[EMIT_NUMBER_SIZE];
    /* -0.0 / 1e6 is printf's "-0.000000", as a latency of no time computed negated is. */
    check_text(got, emit_format_scaled(got, -0.0, 6), "-0.000000");
    check_text(got, emit_format_scaled(got, 0.0, 6), "0.000000");
    check_text(got, emit_format_scaled(got, -0.0, 3), "-0.000");
    /* Not provably printf's: left to it. */
    CHECK(emit_format_scaled(got, bound, 6) == 0);
    CHECK(emit_format_scaled(got, -bound, 3) == 0);
    CHECK(emit_format_scaled(got, (double)REPORT_NS_MAX, 6) == 0);
    CHECK(emit_format_scaled(got, 0.5, 6) == 0);
    CHECK(emit_format_scaled(got, -1234.25, 3) == 0);
    CHECK(emit_format_scaled(got, NAN, 6) == 0);
    CHECK(emit_format_scaled(got, INFINITY, 6) == 0);
    CHECK(emit_format_scaled(got, 1000, 4) == 0);
}

/* Any double: "%.Nf" for N 1 to 9 and "%g", digit for digit, wherever the formatter writes it,
 * and written (not left to printf) for every number a capture holds: under 10^9 with up to
 * nine decimals, and "%g"'s fixed form. */
static unsigned long decimals_written, generals_written;

static void check_decimal(double value)
{
    char got[EMIT_NUMBER_SIZE], want[400];
    for (unsigned decimals = 1; decimals <= 9; decimals++) {
        snprintf(want, sizeof(want), "%.*f", (int)decimals, value);
        size_t len = emit_format_decimal(got, value, decimals);
        if (len) {
            check_text(got, len, want);
            decimals_written++;
        } else {
            CHECK(!(fabs(value) < 1e9)); /* NaN included */
        }
    }
    snprintf(want, sizeof(want), "%g", value);
    size_t len = emit_format_general(got, value);
    if (len) {
        check_text(got, len, want);
        generals_written++;
    } else {
        CHECK(strchr(want, 'e') || strchr(want, 'n')); /* exponent form, inf or nan */
    }
}

static void check_decimals(void)
{
    const double edges[] = {
        0.0, -0.0, 0.5, -0.5, 1.5, 2.5, 0.125, 0.375, -0.625, 0.05, 0.15, 0.25, 0.35, 1e-9,
        5e-10, 4.9999999999e-10, 1e-10, 0.0001, 0.00009999995, 0.0000999995, 0.00009, 9e-5,
        999999.0, 999999.4, 999999.5, 999999.6, 1e6, 123456.5, 1234565.0, 16666.666666,
        1e9 - 1e-7, 1e9, 999999999.9999999, 0x1p-1074, 0x1p-1022, 0x1p52, 0x1p53 + 2, 0x1p62,
        0x1p63, 1e18, 1e19, 1.7976931348623157e308, INFINITY, -INFINITY, NAN,
        0.1 + 0.2, 1.0 / 3, 2.0 / 3, 16.6666665, 144.0 / 7,
    };
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
        check_decimal(edges[i]);
        check_decimal(-edges[i]);
    }
    /* Exact ties at every decimal place: k + 1/2 of a unit, where that is a double. */
    for (unsigned decimals = 1; decimals <= 9; decimals++)
        for (uint64_t k = 0; k < 2000; k++) {
            double tie = ((double)k + 0.5) / (double)(1ull << decimals); /* binary: exact */
            check_decimal(tie);
            check_decimal((double)k / 1e3 + 0.0005);
        }
    /* Every power of ten, and the doubles either side of it. */
    for (int p = -12; p <= 20; p++) {
        double power = pow(10, p);
        check_decimal(power);
        check_decimal(nextafter(power, 0));
        check_decimal(nextafter(power, INFINITY));
    }
    uint64_t state = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < 100000; i++) {
        uint64_t r = next_random(&state);
        double any;
        memcpy(&any, &r, sizeof(any)); /* every exponent, subnormals, NaNs */
        check_decimal(any);
        /* What the outputs write: rates, milliseconds, percentages, GiB. */
        double scale = pow(10, (int)(r % 16) - 6);
        check_decimal((double)(r >> 11) / 0x1p53 * scale);
        check_decimal(1e9 / (double)(1 + (r >> 40)));
    }
    /* Not vacuous: the most of them were written here, not left to printf. */
    fprintf(stderr, "written: %lu of \"%%.Nf\", %lu of \"%%g\"\n", decimals_written,
            generals_written);
    CHECK(decimals_written > 9ul * 150000);
    CHECK(generals_written > 150000);
}

/* The buffer: a text many times its size, of every kind of call, as fprintf writes it. */
static void check_buffer(void)
{
    char *got = NULL, *want = NULL;
    size_t got_len = 0, want_len = 0;
    FILE *g = open_memstream(&got, &got_len), *w = open_memstream(&want, &want_len);
    CHECK(g && w);
    static char long_text[3 * EMIT_BUFFER_SIZE + 7];
    memset(long_text, 'x', sizeof(long_text) - 1);
    struct emit e;
    emit_init(&e, g);
    for (int i = 0; i < 5000; i++) {
        int64_t ns = (int64_t)i * 1000003 - 2500000000;
        emit_u64(&e, (uint64_t)i);
        emit_csv_ms(&e, ns);
        emit_char(&e, ',');
        emit_i64(&e, -i);
        emit_char(&e, ',');
        emit_scaled(&e, (double)ns, 3);
        emit_char(&e, ',');
        emit_scaled(&e, (double)ns + 0.5, 6); /* not whole: through printf */
        emit_printf(&e, ",%g,", 1e9 / (i + 1));
        emit_general(&e, 1e9 / (i + 1));
        emit_char(&e, ',');
        emit_decimal(&e, (double)ns / 7e5, i % 9 + 1);
        emit_decimal(&e, i % 2 ? 1e300 : -1e-300, 2); /* through printf, and written */
        emit_char(&e, ',');
        emit_json_string(&e, i % 7 ? "zone" : "a \"b\"\\c\n\t\x01<>&");
        if (i % 997 == 0)
            emit_str(&e, long_text);
        if (i % 1999 == 0)
            emit_printf(&e, "%s", long_text);
        emit_char(&e, '\n');

        fprintf(w, "%d,%s%lld.%06lld,%d,%.3f,%.6f,%g,", i, ns < 0 ? "-" : "",
                llabs(ns) / 1000000, llabs(ns) % 1000000, -i, (double)ns / 1e3,
                ((double)ns + 0.5) / 1e6, 1e9 / (i + 1));
        fprintf(w, "%g,%.*f%.2f,", 1e9 / (i + 1), i % 9 + 1, (double)ns / 7e5,
                i % 2 ? 1e300 : -1e-300);
        fputs(i % 7 ? "\"zone\"" : "\"a \\\"b\\\"\\\\c\\n\\t\\u0001<>&\"", w);
        if (i % 997 == 0)
            fputs(long_text, w);
        if (i % 1999 == 0)
            fputs(long_text, w);
        fputc('\n', w);
    }
    emit_flush(&e);
    CHECK(fclose(g) == 0 && fclose(w) == 0);
    CHECK(got_len == want_len && memcmp(got, want, got_len) == 0);
    free(got);
    free(want);

    /* The escapers on a FILE: the script one escapes what could end an HTML element. */
    FILE *s = open_memstream(&got, &got_len);
    CHECK(s);
    json_write_string(s, "\x1f<\"\\\n");
    json_write_script_string(s, "\x1f<\"\\\n&>");
    json_write_string(s, NULL);
    csv_write_ms(s, -1);
    csv_write_ms(s, 16666667);
    CHECK(fclose(s) == 0);
    check_text(got, got_len,
               "\"\\u001f<\\\"\\\\\\n\"\"\\u001f\\u003c\\\"\\\\\\u000a\\u0026\\u003e\"\"\""
               ",-0.000001,16.666667");
    free(got);
}

int main(void)
{
    check_numbers();
    check_decimals();
    check_buffer();
    return 0;
}
