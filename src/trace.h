#ifndef FSCOPE_TRACE_H
#define FSCOPE_TRACE_H

#include <stdio.h>

/* Writes a JSON string literal (with quotes) for s. */
void json_write_string(FILE *f, const char *s);

#endif
