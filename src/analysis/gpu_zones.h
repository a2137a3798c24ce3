/* GPU zones (layers/gpu_zones.c): the app's label regions and render passes as the GPU ran
 * them, per path ("frame/shadow/pass 1024x1024"): the summary's top passes, summary.json,
 * zones.csv rows and the trace's nested GPU tracks. */
#ifndef FSCOPE_ANALYSIS_GPU_ZONES_H
#define FSCOPE_ANALYSIS_GPU_ZONES_H

#include <stdio.h>

#include "held.h"
#include "recording.h"

struct emit;

/* Per path, over the run. */
struct gpu_zone_total {
    const char *path;
    unsigned depth, kind;
    uint64_t count;
    int64_t total_ns, children_ns, max_ns;
};

/* Totals of every path seen, by time (largest first); *ret_count of them. Free with free(). */
struct gpu_zone_total *gpu_zones_totals(const struct recording *rec, unsigned *ret_count);
/* "  gpu zones ..." lines (nothing when none was timed and none untimed). */
void gpu_zones_write_text(FILE *f, const struct recording *rec, uint64_t frames);
/* The "gpu_zones" member of summary.json (with its trailing ",\n"). */
void gpu_zones_write_json(FILE *f, const struct recording *rec, uint64_t frames);
/* zones.csv rows, thread "gpu zones" (thread id 2000000 + device id). */
void gpu_zones_write_csv(FILE *f, const struct recording *rec);
/* The trace's events: a track per device, "X" events that nest by containment; those that
 * begin before from_ticks are left out. */
void gpu_zones_write_trace(struct emit *e, const struct recording *rec, int pid, int64_t base_ns,
                           uint64_t from_ticks, bool *first);

/* A pass over the GPU zones in order of their end (rec->gpu_zones), for windows asked in
 * order of their start: each device's zones (of a known name, lasting) that end after the
 * last window's start are held, no others. */
struct zone_window {
    const struct recording *rec;
    struct sorter_cursor c;
    bool cursor, done, read_any, failed;
    uint64_t read_to, from;
    struct held_devices devices; /* struct gpu_zone_span */
};
void zone_window_init(struct zone_window *w, const struct recording *rec);
/* device_id's zones that ended in (from, to], in order of their end: *ret_count of them,
 * valid until the next call (a window that starts before the last one's reads the zones
 * again from the first; none when memory ran out). */
const struct gpu_zone_span *zone_window_ended(struct zone_window *w, uint32_t device_id,
                                              uint64_t from, uint64_t to, size_t *ret_count);
void zone_window_free(struct zone_window *w);

#endif
