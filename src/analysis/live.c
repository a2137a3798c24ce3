#include "live.h"

#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "frames.h"
#include "gpu_busy.h"
#include "run.h"

/* The newest frame end over every log, in ticks. */
static uint64_t newest_end(const struct recording *rec)
{
    uint64_t newest = 0;
    for (unsigned l = 0; l < rec->log_count; l++) {
        const struct recording_log *log = &rec->logs[l];
        if (log->frame_count && log->last_end_ticks > newest)
            newest = log->last_end_ticks;
    }
    return newest;
}

static uint64_t window_ticks(const struct recording *rec, double seconds)
{
    if (rec->ns_per_tick <= 0)
        return 0;
    /* Any rate the recording claims: a window past uint64_t's ticks is all of them. */
    double ticks = seconds * 1e9 / rec->ns_per_tick;
    return ticks < 18446744073709549568.0 ? (uint64_t)ticks : UINT64_MAX;
}

void live_stats_compute(struct recording *rec, double window_s, struct live_stats *ret)
{
    *ret = (struct live_stats){ .verdict = "none" };
    /* The window's frames through the analysis the capture's summary comes from: the same
     * verdict (display evidence, sampling) for the same frames. */
    recording_keep_recent(rec, window_s);
    recording_compute_gpu_busy(rec);
    struct run_stats s;
    run_stats_compute(rec, &s);
    if (s.frames) {
        ret->frames = s.frames;
        ret->window_s = s.duration_s;
        ret->fps = s.fps;
        ret->p50_ms = s.p50_ms;
        ret->p99_ms = s.p99_ms;
        ret->verdict = verdict_name(s.run_verdict);
        ret->verdict_share = s.basis_frames
                                 ? (double)s.verdict_frames[s.run_verdict] / (double)s.basis_frames
                                 : 0;
        ret->shown = s.presentation.total.presented;
        ret->resolved = s.presentation.total.presented + s.presentation.total.discarded;
    }
    run_stats_finish(&s);
    for (unsigned c = 0; c < rec->cap_count; c++) {
        const struct recording_cap *cap = &rec->caps[c];
        if (cap->event_count && cap->last_target_ns)
            ret->cap_hz = 1e9 / cap->last_target_ns;
    }
}

void recording_keep_recent(struct recording *rec, double seconds)
{
    uint64_t newest = newest_end(rec), span = window_ticks(rec, seconds);
    uint64_t from = span < newest ? newest - span : 0;
    for (unsigned l = 0; l < rec->log_count; l++) {
        struct recording_log *log = &rec->logs[l];
        struct frame_cursor c;
        if (!frame_cursor_open(&c, rec, log))
            continue; /* no memory to say which: every frame kept */
        uint64_t skip = 0;
        while (skip < log->frame_count && frame_at(&c, skip)->end_ticks < from)
            skip++;
        frame_cursor_close(&c);
        frame_store_drop(log, skip);
    }
}
