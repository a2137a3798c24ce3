/* Every thread of the app as the kernel sampler saw it: per thread over the run, and per tick. */
#ifndef FSCOPE_THREADS_H
#define FSCOPE_THREADS_H

#include <stdio.h>

#include "recording.h"

/* "  threads ..." lines: the busiest threads by time on a CPU, and what perf could not count. */
void threads_write_text(FILE *f, const struct recording *rec);
/* The "threads" member of summary.json (with its trailing ",\n"). */
void threads_write_json(FILE *f, const struct recording *rec);
/* threads.csv: one row per thread per sampler tick. Returns 0. */
int threads_write_csv(FILE *f, const void *rec);

/* "  drm ..." lines: each DRM client's engine busy share and memory, from the kernel's usage
 * stats, and a diagnosis when VRAM residency fell while allocations did not; or why there
 * is nothing to show. */
void drm_write_text(FILE *f, const struct recording *rec);
/* The "drm" member of summary.json (with its trailing ",\n"). */
void drm_write_json(FILE *f, const struct recording *rec);

#endif
