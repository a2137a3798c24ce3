/* Chrome Trace Event export of a recording's flight recorder. */
#ifndef FSCOPE_TRACE_H
#define FSCOPE_TRACE_H

#include <stdio.h>

#include "recording.h"

/* Writes the whole Chrome trace of rec to f. Returns 0 or -errno. */
int trace_write(FILE *f, const struct recording *rec);

/* Writes a JSON string literal (with quotes) for s. */
void json_write_string(FILE *f, const char *s);

#endif
