/* Chrome Trace Event export of a recording's flight recorder. */
#ifndef FSCOPE_TRACE_H
#define FSCOPE_TRACE_H

#include <stdbool.h>
#include <stdio.h>

#include "recording.h"

struct hitch_stats;
struct engine_stats;

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
};

/* Writes the whole Chrome trace of rec to f: the threads' zones, the GPU zones, command buffer
 * recording and command pool calls ("X" on the calling thread's track), the process's gauges
 * ("C": "rss MiB", "descriptor sets", "heap N usage MiB", "heap N budget MiB"), and what run
 * adds (run may be NULL). Returns 0 or -errno. */
int trace_write_run(FILE *f, const struct recording *rec, const struct trace_run *run);
/* trace_write_run with hitches (NULL: none) alone. */
int trace_write(FILE *f, const struct recording *rec, const struct hitch_stats *hitches);

#endif
