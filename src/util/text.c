#include "util/text.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Length of the valid UTF-8 character at s (n bytes left), 0 when it is not one or is a C1
 * control (U+0080..U+009F: CSI and friends in some terminals). */
static size_t utf8_length(const unsigned char *s, size_t n)
{
    size_t len;
    uint32_t min, cp;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        len = 2, min = 0xa0, cp = s[0] & 0x1f;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        len = 3, min = 0x800, cp = s[0] & 0x0f;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        len = 4, min = 0x10000, cp = s[0] & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    bool surrogate = cp >= 0xd800 && cp <= 0xdfff;
    return cp < min || cp > 0x10ffff || surrogate ? 0 : len;
}

static char *printable(char *dst, size_t dst_len, const char *src, size_t src_len,
                       bool keep_backslashes)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t n = 0;
    while (n < src_len && s[n])
        n++;
    size_t out = 0;
    for (size_t i = 0; i < n;) {
        bool plain = s[i] >= 0x20 && s[i] < 0x7f && (s[i] != '\\' || keep_backslashes);
        size_t len = plain ? 1
                     : s[i] >= 0x80                             ? utf8_length(s + i, n - i)
                                                                : 0;
        if (len == 0) {
            if (out + 4 >= dst_len)
                break;
            snprintf(dst + out, 5, "\\x%02x", s[i]);
            out += 4;
            i++;
            continue;
        }
        if (out + len >= dst_len)
            break;
        for (size_t k = 0; k < len; k++)
            dst[out++] = (char)s[i + k];
        i += len;
    }
    dst[out] = '\0';
    return dst;
}

char *fscope_text_printable(char *dst, size_t dst_len, const char *src, size_t src_len)
{
    return printable(dst, dst_len, src, src_len, false);
}

char *fscope_text_shown(char *dst, size_t dst_len, const char *src, size_t src_len)
{
    return printable(dst, dst_len, src, src_len, true);
}
