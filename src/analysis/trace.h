/* Chrome Trace Event export of a recording's flight recorder (trace.json), and the walks of
 * the recording it shares with the Perfetto trace (trace_perfetto.h). */
#ifndef FSCOPE_TRACE_H
#define FSCOPE_TRACE_H

#include <stdbool.h>
#include <stdio.h>

#include "recording.h"

struct hitch;
struct hitch_stats;
struct engine_stats;
struct cmd_recording;
struct pool_op;

/* What analysis made of the run, for the events the recording alone cannot give. Each NULL or
 * false member leaves its events out. */
struct trace_run {
    const struct hitch_stats *hitches; /* instant events on the threads' tracks */
    const struct engine_stats *engine; /* the "device memory MiB" counter (its live points) */
    /* The frames' GPU busy is filled in (recording_compute_gpu_busy): the per-frame counters
     * "fps", "cpu ms" and "gpu busy ms". The primary log's carry those names, the other logs'
     * " surface N" after them. */
    bool frame_counters;
    unsigned primary_log;
    /* trace.json holds the last window_ns of the run (0: all of it), and says so in its
     * otherData when it left anything out; the Perfetto trace always holds everything. */
    int64_t window_ns;
};

/* trace.json's window unless FRAMESCOPE_TRACE_WINDOW says otherwise: ten minutes, 37-64 MB of
 * JSON at 60 fps for the demo (1.0-1.8 KB a frame: tests/bench/README.md, 2026-12-06). */
#define TRACE_WINDOW_DEFAULT_S 600
#define TRACE_WINDOW_MAX_S (7 * 24 * 3600)

/* Writes the whole Chrome trace of rec to f: the threads' zones, the GPU zones, command buffer
 * recording and command pool calls ("X" on the calling thread's track), the process's gauges
 * ("C": "rss MiB", "descriptor sets", "heap N usage MiB", "heap N budget MiB"), and what run
 * adds (run may be NULL). Returns 0 or -errno. */
int trace_write_run(FILE *f, const struct recording *rec, const struct trace_run *run);
/* trace_write_run with hitches (NULL: none) alone. */
int trace_write(FILE *f, const struct recording *rec, const struct hitch_stats *hitches);

/* What both traces hold, walked once here so that trace.json and the Perfetto trace
 * (trace_perfetto.h) carry the same events under the same names. */

/* A thread's flight recorder replayed with a stack: an end with nothing open is the orphaned
 * end of a zone whose begin the ring overwrote, and is dropped; zones still open at the end
 * are closed (open_at_dump) at the last moment the thread is known to have been in them. So
 * every begin gets its end, at the depth it began at. */
#define TRACE_MAX_DEPTH 64
enum trace_zone_kind {
    TRACE_ZONE_BEGIN,
    TRACE_ZONE_END,
    TRACE_ZONE_INSTANT,
};
struct trace_zone_event {
    enum trace_zone_kind kind;
    uint64_t ticks;
    const char *name;                /* NULL for an end */
    const struct fscope_event *begin; /* the zone's begin (an instant: itself) */
    unsigned depth;                  /* zones open around it */
    bool open_at_dump;
};
typedef void (*trace_zone_fn)(void *ctx, const struct trace_zone_event *e);
/* Returns 0 or -ENOMEM. */
int trace_thread_replay(const struct recording *rec, const struct recording_thread *t,
                        trace_zone_fn fn, void *ctx);

/* Command buffer recordings (vkBeginCommandBuffer to vkEndCommandBuffer's return) and command
 * pool calls, on the thread that made them, named as the trace shows them. */
struct trace_interval {
    int tid;
    uint64_t begin_ticks, end_ticks;
    const char *name;
    const char *pool;                 /* its command pool, named or in hex */
    const char *command_buffer;       /* vkResetCommandBuffer's, else NULL */
    const struct cmd_recording *recording; /* one of these two */
    const struct pool_op *pool_op;
};
typedef void (*trace_interval_fn)(void *ctx, const struct trace_interval *iv);
/* Every recording, then every pool call, each in the order they ended; named only when
 * named is true (else name, pool and command_buffer are NULL: the names cost more than the
 * rest together, 1,000,000 recordings at a time). */
void trace_engine_intervals(const struct recording *rec, bool named, trace_interval_fn fn,
                            void *ctx);
/* Room for an interval's words. */
struct trace_engine_words {
    char cb[OBJECT_NAME_SIZE + 32], pool[OBJECT_NAME_SIZE + 32], name[2 * OBJECT_NAME_SIZE + 64];
};
/* The interval of a recording r, or else of a pool call op, its words in words. */
struct trace_interval trace_engine_interval(const struct recording *rec,
                                            const struct cmd_recording *r,
                                            const struct pool_op *op,
                                            struct trace_engine_words *words);

/* The process's counters ("rss MiB", "descriptor sets" with two values, "heap N usage MiB",
 * "heap N budget MiB", "device memory MiB", and per frame "fps", "cpu ms", "gpu busy ms"). */
struct trace_counter {
    uint64_t ticks;
    const char *name;
    unsigned count; /* values: 1, or 2 for "descriptor sets" */
    const char *keys[2];
    double values[2];
    bool integer; /* whole numbers, written as such */
    /* A duration ("cpu ms", "gpu busy ms"): its exact nanoseconds, values[0] being them in
     * ms. The Perfetto trace writes them as such, on a track in nanoseconds named without
     * " ms" ("cpu"). */
    bool duration;
    int64_t ns;
    int64_t frame_ns; /* with "fps": the frame's length (the Perfetto trace's "frame time") */
};
typedef void (*trace_counter_fn)(void *ctx, const struct trace_counter *c);
void trace_counters(const struct recording *rec, const struct trace_run *run, trace_counter_fn fn,
                    void *ctx);

/* A hitch's event name: "hitch +12.3 ms: gpu". Returns name. */
#define TRACE_HITCH_NAME_SIZE 96
const char *trace_hitch_name(const struct hitch *h, char name[TRACE_HITCH_NAME_SIZE]);

/* The first and the last tick of anything the trace holds; false when it holds nothing. */
bool trace_time_range(const struct recording *rec, const struct trace_run *run,
                      uint64_t *ret_first, uint64_t *ret_last);

#endif
