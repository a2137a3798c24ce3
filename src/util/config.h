/* Parsing of configuration values given by users (environment, CLI): one strict grammar for
 * every FRAMESCOPE_* variable and every framescope flag, so that a value means the same
 * wherever it is given and a typo is refused instead of half-read.
 *
 * Numbers are plain decimal: ASCII digits with no leading zero (other tools read 010 as octal),
 * a fraction ("59.94") only where the caller takes one, a '-' only where the range holds
 * negatives, and nothing else: no whitespace, '+', hex, exponent, inf or nan.
 * Keywords (on, off, auto, ...) match whatever their case.
 *
 * The framescope CLI compiles this file in as well (it does not load libframescope), so it
 * depends on nothing else of ours. */
#ifndef FSCOPE_CONFIG_H
#define FSCOPE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define FSCOPE_EXPORT __attribute__((visibility("default")))

/* How much of a user's value a warning echoes: enough to recognise it, never a screenful. */
#define FSCOPE_ESCAPE_INPUT_MAX 64
/* A buffer that holds any escaped value: four characters per byte ("\xNN"), "..." and NUL. */
#define FSCOPE_ESCAPE_SIZE (4 * FSCOPE_ESCAPE_INPUT_MAX + 4)

/* Parses a whole integer in [min, max]. ret is written only on success. */
FSCOPE_EXPORT bool fscope_config_parse_long(const char *text, long min, long max, long *ret);
/* Parses a whole number, with an optional fraction, in [min, max]. Independent of the
 * program's locale (a game may have set one whose decimal point is ','). ret is written only
 * on success. */
FSCOPE_EXPORT bool fscope_config_parse_double(const char *text, double min, double max,
                                              double *ret);
/* True when text is keyword, ignoring ASCII case. */
FSCOPE_EXPORT bool fscope_config_keyword(const char *text, const char *keyword);
/* Parses a switch: on or 1, off or 0. ret is written only on success. */
FSCOPE_EXPORT bool fscope_config_parse_switch(const char *text, bool *ret);
/* True when text names a file explicitly: it starts with '/' or "./". A bare word (a typo of
 * a keyword, ".hidden", "..") is not taken for a file name. */
FSCOPE_EXPORT bool fscope_config_is_path(const char *text);
/* Writes a printable copy of text into buf (size bytes; FSCOPE_ESCAPE_SIZE holds any) for a
 * message that echoes it: '\\', '\n', '\t' and '\r' escaped as in C, every other byte outside
 * printable ASCII as \xNN, and "..." after the first FSCOPE_ESCAPE_INPUT_MAX bytes (or
 * wherever buf is full). A newline in a value can then never start a line of its own in the
 * log. Returns buf; NULL text reads as "". */
FSCOPE_EXPORT const char *fscope_config_escape(const char *text, char *buf, size_t size);

#endif
