/* Chrome Trace Event export of a recording's flight recorder. */
#ifndef FSCOPE_TRACE_H
#define FSCOPE_TRACE_H

#include <stdio.h>

#include "recording.h"

/* Writes the whole Chrome trace of rec to f. Returns 0 or -errno. */
struct hitch_stats;
/* hitches: NULL, or instant events to add on the threads' tracks. */
int trace_write(FILE *f, const struct recording *rec, const struct hitch_stats *hitches);

/* Writes a JSON string literal (with quotes) for s. */
void json_write_string(FILE *f, const char *s);

#endif
