/* A running app at a glance (framescope top, via framescoped): its frames over the final
 * window of what its recording holds in memory. And the recent part of a recording, for a
 * snapshot of a running app. */
#ifndef FSCOPE_ANALYSIS_LIVE_H
#define FSCOPE_ANALYSIS_LIVE_H

#include <stdio.h>

#include "recording.h"

struct live_stats {
    uint64_t frames;         /* in the window */
    double window_s;         /* first frame start to last frame end inside it */
    double fps, p50_ms, p99_ms;
    const char *verdict;     /* the most frames' verdict; "none" without frames */
    double verdict_share;
    uint64_t shown, resolved; /* presented, and presented + discarded (feedback arrived) */
    double cap_hz;           /* the cap's target; 0: not capped */
    double age_s;            /* since the latest frame ended (0 when it is the newest) */
};

/* Over the frames that ended in the last window_s before the newest frame's end, by the
 * analysis a capture's summary comes from (run.h): rec is cut to those frames, and their GPU
 * fields computed. */
void live_stats_compute(struct recording *rec, double window_s, struct live_stats *ret);
/* Drops every frame that ended more than seconds before the newest one. */
void recording_keep_recent(struct recording *rec, double seconds);

#endif
