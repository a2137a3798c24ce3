/* The engine's own cost, from a recording's engine table: command recording by thread and
 * by pool, redundant binds by site, device memory by heap, the budget, descriptor pools and
 * the process's gauges. Per-frame means of the counters come from the report (count_mean). */
#ifndef FSCOPE_ANALYSIS_ENGINE_H
#define FSCOPE_ANALYSIS_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "held.h"
#include "recording.h"

struct engine_thread {
    int tid;
    uint64_t recordings, secondary_recordings, commands;
    uint64_t ticks, secondary_ticks;
    /* Its time on a CPU and runnable but waiting for one, over its life, from the kernel
     * sampler; -1: not sampled. Recording time is wall time: it fits in their sum (a thread
     * preempted while it records waits for a CPU inside its recording). */
    int64_t oncpu_ns, runnable_ns;
    /* Its recording time up to its last sample (a thread that exits between two ticks has
     * recorded past its last one): what fits in oncpu_ns + runnable_ns. */
    uint64_t sampled_ticks, last_sample_ticks;
};

struct engine_pool {
    uint64_t pool;
    uint32_t device_id;
    uint64_t recordings, record_ticks;
    uint64_t ops[POOL_OP_TRIM + 1], op_ticks;
};

struct engine_heap {
    uint32_t device_id, heap;
    uint64_t size;
    bool device_local;
    uint64_t allocations, live_bytes, peak_bytes, live_count;
    /* VK_EXT_memory_budget over the run: the last sample, the most used, samples over. */
    bool budget_read;
    uint64_t budget, usage, peak_usage, peak_usage_budget;
    uint64_t samples, over_budget_samples;
};

/* Device memory live over the run: one point at each allocation or free. */
struct engine_live_point {
    uint64_t ticks;
    uint64_t live_bytes;
};

struct engine_stats {
    bool present;
    uint64_t frames;
    /* Recording over the run. */
    uint64_t recordings, secondary_recordings, commands, record_ticks, secondary_ticks;
    unsigned thread_count;
    struct engine_thread *threads; /* most recording time first */
    unsigned pool_count;
    struct engine_pool *pools;     /* most time (recording and pool calls) first */
    uint64_t pool_op_ticks;
    /* Device memory. */
    uint64_t allocations, frees, failed, alloc_bytes;
    uint64_t live_bytes, peak_bytes;
    unsigned heap_count;
    struct engine_heap *heaps;
    struct memory_event largest[5]; /* biggest first */
    unsigned largest_count;
    uint64_t live_point_count;
    struct sorter live_points; /* struct engine_live_point, in time order (sorter_as_pushed) */
    bool budget_supported_somewhere;
    /* The process and descriptor pools, from the gauges. */
    uint64_t rss_end, rss_peak;
    uint64_t sets_end, capacity_end, sets_peak, capacity_at_peak;
    uint32_t pools_end;
    uint64_t descriptor_failures;
};

void engine_compute(const struct recording *rec, uint64_t frames, struct engine_stats *ret);
void engine_stats_finish(struct engine_stats *s);


/* frames.csv's key for a bind kind ("vertex_buffer"). */
const char *engine_bind_key(unsigned kind);
/* The recordings that ended in one frame after another, for per-frame views: one pass over
 * them in the order they ended, holding those of the frame's window (a frame that starts
 * before the one asked before starts the pass again). */
struct engine_window {
    const struct recording *rec;
    struct sorter_cursor c;
    bool open, done;
    struct held held; /* struct cmd_recording: read, ending at or after the last start asked */
    uint64_t last_start;
};

void engine_window_init(struct engine_window *w, const struct recording *rec);
/* The recordings that ended in [start, end): on how many threads, and the most recording time
 * one thread spent in them (0 and 0 when memory ran out). */
void engine_frame_recording(struct engine_window *w, uint64_t start, uint64_t end,
                            unsigned *ret_threads, uint64_t *ret_busiest_ticks);
void engine_window_free(struct engine_window *w);

/* The summary's lines; count_mean: the report's per-frame means of every counter. */
void engine_write_text(FILE *f, const struct recording *rec, const struct engine_stats *s,
                       const double *count_mean);
/* summary.json's "engine" member (with its trailing comma and newline). */
void engine_write_json(FILE *f, const struct recording *rec, const struct engine_stats *s,
                       const double *count_mean);

#endif
