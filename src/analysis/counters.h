/* The perf counters of the thread that closed frames (src/record/counters.c), per frame:
 * means over the frames that have them, IPC where cycles and instructions were both counted,
 * and what was not counted and why. */
#ifndef FSCOPE_ANALYSIS_COUNTERS_H
#define FSCOPE_ANALYSIS_COUNTERS_H

#include <stdio.h>

#include "recording.h"

struct emit;

struct counter_stats {
    uint64_t frames;                /* frames with any count */
    uint64_t counted[FRAME_COUNTERS]; /* frames with each event's count */
    double mean[FRAME_COUNTERS];    /* per frame, over those */
    double ipc;                     /* instructions per cycle; < 0 when unknown */
};

void counters_compute(const struct recording *rec, struct counter_stats *ret);
/* The "  counters ..." line (thread: who closed the frames); nothing when none were asked. */
void counters_write_text(FILE *f, const struct recording *rec, const struct counter_stats *s,
                         const char *thread);
/* The "counters" member of summary.json (with its trailing ",\n"). */
void counters_write_json(FILE *f, const struct recording *rec, const struct counter_stats *s);
/* frames.csv: a column per counted event, named "counter:NAME"; and a frame's values. */
void counters_write_csv_header(FILE *f, const struct recording *rec);
void counters_emit_csv_row(struct emit *e, const struct recording *rec,
                           const struct fscope_frame *fr);

#endif
