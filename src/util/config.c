#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ASCII only: <ctype.h> answers by the program's locale, and the game chooses that. */
static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static char ascii_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* The grammar every number shares (config.h): [-]digits[.digits]. */
static bool decimal_syntax(const char *text, bool negative_allowed, bool fraction_allowed)
{
    const char *p = text;
    if (*p == '-' && negative_allowed)
        p++;
    if (!is_digit(*p) || (p[0] == '0' && is_digit(p[1])))
        return false;
    while (is_digit(*p))
        p++;
    if (*p == '.' && fraction_allowed) {
        p++;
        if (!is_digit(*p))
            return false;
        while (is_digit(*p))
            p++;
    }
    return *p == '\0';
}

FSCOPE_EXPORT bool fscope_config_parse_long(const char *text, long min, long max, long *ret)
{
    if (!text || !decimal_syntax(text, min < 0, false))
        return false;
    /* The syntax is checked above: strtol only converts, and says when the value overflows. */
    errno = 0;
    long value = strtol(text, NULL, 10);
    if (errno || value < min || value > max)
        return false;
    *ret = value;
    return true;
}

FSCOPE_EXPORT bool fscope_config_parse_double(const char *text, double min, double max,
                                              double *ret)
{
    if (!text || !decimal_syntax(text, min < 0, true))
        return false;
    /* Not strtod: it reads the decimal point of the game's locale. All digits go into one
     * integer divided once by a power of ten, which rounds correctly while the integer holds
     * 19 digits; later fraction digits cannot change a setting and are dropped. */
    const char *p = text;
    bool negative = *p == '-';
    if (negative)
        p++;
    uint64_t digits = 0;
    double scale_up = 1.0, scale_down = 1.0;
    for (; is_digit(*p); p++) {
        if (digits < UINT64_MAX / 10)
            digits = digits * 10 + (uint64_t)(*p - '0');
        else
            scale_up *= 10.0; /* beyond any range a setting has: only to stay out of it */
    }
    if (*p == '.') {
        for (p++; is_digit(*p) && digits < UINT64_MAX / 10; p++) {
            digits = digits * 10 + (uint64_t)(*p - '0');
            scale_down *= 10.0;
        }
    }
    double value = (double)digits * scale_up / scale_down;
    if (negative)
        value = -value;
    if (!isfinite(value) || value < min || value > max)
        return false;
    *ret = value;
    return true;
}

FSCOPE_EXPORT bool fscope_config_keyword(const char *text, const char *keyword)
{
    if (!text || !keyword)
        return false;
    for (; *text && *keyword; text++, keyword++)
        if (ascii_lower(*text) != ascii_lower(*keyword))
            return false;
    return *text == *keyword;
}

FSCOPE_EXPORT bool fscope_config_parse_switch(const char *text, bool *ret)
{
    if (fscope_config_keyword(text, "on") || fscope_config_keyword(text, "1")) {
        *ret = true;
        return true;
    }
    if (fscope_config_keyword(text, "off") || fscope_config_keyword(text, "0")) {
        *ret = false;
        return true;
    }
    return false;
}

FSCOPE_EXPORT bool fscope_config_is_path(const char *text)
{
    return text && (text[0] == '/' || (text[0] == '.' && text[1] == '/'));
}

FSCOPE_EXPORT const char *fscope_config_escape(const char *text, char *buf, size_t size)
{
    if (!buf || size == 0)
        return buf;
    const unsigned char *p = (const unsigned char *)(text ? text : "");
    size_t used = 0;
    for (size_t taken = 0; *p && taken < FSCOPE_ESCAPE_INPUT_MAX; p++, taken++) {
        char piece[5];
        if (*p == '\\' || *p == '\n' || *p == '\t' || *p == '\r') {
            piece[0] = '\\';
            piece[1] = *p == '\\' ? '\\' : *p == '\n' ? 'n' : *p == '\t' ? 't' : 'r';
            piece[2] = '\0';
        } else if (*p < 0x20 || *p >= 0x7f) {
            static const char hex[] = "0123456789abcdef";
            piece[0] = '\\';
            piece[1] = 'x';
            piece[2] = hex[*p >> 4];
            piece[3] = hex[*p & 0xf];
            piece[4] = '\0';
        } else {
            piece[0] = (char)*p;
            piece[1] = '\0';
        }
        size_t len = strlen(piece);
        if (used + len + sizeof("...") > size)
            break; /* keeps room for the "..." that says so */
        memcpy(buf + used, piece, len);
        used += len;
    }
    if (*p && used + sizeof("...") <= size) {
        memcpy(buf + used, "...", 3);
        used += 3;
    }
    buf[used] = '\0';
    return buf;
}
