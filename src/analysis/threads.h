/* Every thread of the app as the kernel sampler saw it: per thread over the run, and per tick. */
#ifndef FSCOPE_THREADS_H
#define FSCOPE_THREADS_H

#include <stddef.h>
#include <stdio.h>

#include "recording.h"

/* "  threads ..." lines: the busiest threads by time on a CPU, and what perf could not count. */
void threads_write_text(FILE *f, const struct recording *rec);
/* The "threads" member of summary.json (with its trailing ",\n"). */
void threads_write_json(FILE *f, const struct recording *rec);
/* threads.csv: one row per thread per sampler tick, those that overlap the time of the frames
 * kept (keep.h; NULL: all). Returns 0 or -ENOMEM. */
struct frame_keep;
int threads_write_csv(FILE *f, const struct recording *rec, const struct frame_keep *keep);

/* The whole process's time on a CPU at each tick of the kernel sampler: every thread's since
 * its first sample, summed, so the difference between two points over their time apart is the
 * process's CPU load (a thread that exits between two ticks loses its last part). */
struct process_cpu_point {
    uint64_t ticks;
    uint64_t oncpu_ns;
};
/* The points in time order into *ret (to free), and their count; 0 and NULL when the kernel
 * was not sampled or memory ran out. */
size_t threads_process_cpu(const struct recording *rec, struct process_cpu_point **ret);

/* "  drm ..." lines: each DRM client's engine busy share and memory, from the kernel's usage
 * stats, and a diagnosis when VRAM residency fell while allocations did not; or why there
 * is nothing to show. */
void drm_write_text(FILE *f, const struct recording *rec);
/* The "drm" member of summary.json (with its trailing ",\n"). */
void drm_write_json(FILE *f, const struct recording *rec);

#endif
