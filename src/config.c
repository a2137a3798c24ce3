#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

FSCOPE_EXPORT bool fscope_config_parse_long(const char *text, long min, long max, long *ret)
{
    if (!text || !*text)
        return false;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || v < min || v > max)
        return false;
    *ret = v;
    return true;
}

FSCOPE_EXPORT bool fscope_config_parse_double(const char *text, double min, double max, double *ret)
{
    if (!text || !*text)
        return false;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || *end || !isfinite(v) || v < min || v > max)
        return false;
    *ret = v;
    return true;
}
