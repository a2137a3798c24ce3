#ifndef FSCOPE_LOG_H
#define FSCOPE_LOG_H

#include <stdbool.h>

#include "framescope.h"

#define FSCOPE_EXPORT __attribute__((visibility("default")))

/* The one logging function. Messages are single lines; "framescope: " is prefixed. */
FSCOPE_EXPORT void fscope_log(enum fscope_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
FSCOPE_EXPORT bool fscope_log_enabled(enum fscope_log_level level);

void log_init(void);

#endif
