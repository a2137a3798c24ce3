/* Parsing of configuration values given by users (environment, CLI). */
#ifndef FSCOPE_CONFIG_H
#define FSCOPE_CONFIG_H

#include <stdbool.h>

#define FSCOPE_EXPORT __attribute__((visibility("default")))

/* Parses a whole decimal integer in [min, max]. ret is written only on success. */
FSCOPE_EXPORT bool fscope_config_parse_long(const char *text, long min, long max, long *ret);
/* Parses a whole finite number in [min, max]. ret is written only on success. */
FSCOPE_EXPORT bool fscope_config_parse_double(const char *text, double min, double max, double *ret);

#endif
