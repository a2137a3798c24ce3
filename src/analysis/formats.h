/* The capture in other tools' formats (PresentMon's and MangoHud's CSV logs); html.h writes
 * it as a report to read in a browser. Output only: these read the frame logs, the zone tree
 * and the run's analysis, and nothing reads them back. */
#ifndef FSCOPE_FORMATS_H
#define FSCOPE_FORMATS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "keep.h"
#include "report.h"

struct hitch_stats;
struct engine_stats;

/* What the writers need of the run beyond the frame logs; the report fills it. */
struct formats_run {
    const struct recording *rec;
    const char *app; /* the process name: PresentMon's Application */
    int pid;
    const char *device, *driver; /* the first device */
    const struct display_evidence *evidence; /* per log, in log order; NULL when unknown */
    unsigned primary_log;                    /* the surface with the most frames */
    /* The run's answer, as summary.json gives it. */
    const char *verdict, *reason;
    uint64_t frames;
    double duration_s, fps;
    double frame_ms[5]; /* mean, p50, p95, p99, max */
    double low_fps[2];  /* 1%, 0.1% */
    double verdict_share[FSCOPE_VERDICT_COUNT];
    bool gpu_timed;
    double budget_ms[2 + FSCOPE_BLOCK_COUNT]; /* means: cpu, gpu busy, blocks in enum order */
    const struct hitch_stats *hitches;        /* NULL: none judged */
    const struct engine_stats *engine; /* report.html's device memory gauge; NULL: none */
    const struct frame_keep *keep;     /* the frames whose rows are written (keep.h) */
};

/* The frame logs as formats.c and html.c both read them. */
static inline int64_t ticks_between_ns(const struct recording *rec, uint64_t from, uint64_t to)
{
    return to >= from ? ticks_ns(rec, to - from) : -ticks_ns(rec, from - to);
}

/* Shown on a display, with a time to show: the frames frames.csv gives presented_ms. */
static inline bool frame_shown(const struct fscope_frame *f, uint64_t origin)
{
    return f->present_state == FRAME_PRESENT_PRESENTED && f->presented_ticks > origin;
}

static inline const struct display_evidence *log_evidence(const struct formats_run *run,
                                                          unsigned l)
{
    return run->evidence ? &run->evidence[l] : NULL;
}

/* Writers for capture_dir_write() (capture_dir.h); run is a struct formats_run. Each
 * returns 0 or -errno. */
/* presentmon.csv: PresentMon 2.x columns, one row per frame, in frames.csv order. */
int formats_write_presentmon(FILE *f, const void *run);
/* mangohud.csv: MangoHud's log (its system line, then one row per frame of the primary
 * surface). */
int formats_write_mangohud(FILE *f, const void *run);

#endif
