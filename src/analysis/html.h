/* report.html: the capture as one self-contained page to read in a browser (inline CSS and
 * script, the data embedded as JSON). Output only, like formats.h: it reads the frame logs,
 * the zone tree and the run's analysis, and nothing reads it back. */
#ifndef FSCOPE_HTML_H
#define FSCOPE_HTML_H

#include <stdio.h>

#include "formats.h"

/* A writer for capture_dir_write() (capture_dir.h); run is a struct formats_run. Returns 0 or
 * -errno. */
int html_write_report(FILE *f, const void *run);

#endif
