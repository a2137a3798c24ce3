/* framescope diff's table (tools/diff.c), for compare_texts(). */
#ifndef FSCOPE_TOOLS_DIFF_H
#define FSCOPE_TOOLS_DIFF_H

#include <stdbool.h>
#include <stdio.h>

#include "capture_files.h"

/* diff's table of caps[0] (A) against caps[1] (B) on out, as text or JSON. Returns 0, or 2
 * after one line on err. */
int diff_write(const struct capture caps[2], bool json, FILE *out, FILE *err);

#endif
