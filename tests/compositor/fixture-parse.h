/* Command-line number parsing shared by the test compositor and the feedback probe. */
#ifndef FSCOPE_FIXTURE_PARSE_H
#define FSCOPE_FIXTURE_PARSE_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

/* A whole decimal number in [min, max]; *ret_value is written only on success. */
static inline bool fixture_parse_long(const char *text, long min, long max, long *ret_value)
{
	char *end;
	long value;

	errno = 0;
	value = strtol(text, &end, 10);
	if (errno || end == text || *end || value < min || value > max)
		return false;
	*ret_value = value;
	return true;
}

#endif
