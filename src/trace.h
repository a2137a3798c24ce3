#ifndef FSCOPE_TRACE_H
#define FSCOPE_TRACE_H

#include <stdio.h>

/* Writes the whole Chrome trace to f. Returns 0 or -errno. */
int trace_write(FILE *f);

/* Writes a JSON string literal (with quotes) for s. */
void json_write_string(FILE *f, const char *s);

#endif
