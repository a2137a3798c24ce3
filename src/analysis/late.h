/* How late each shown frame reached the display: in refreshes after the first one it could
 * have been shown at, from when its present returned and its GPU work ended. */
#ifndef FSCOPE_ANALYSIS_LATE_H
#define FSCOPE_ANALYSIS_LATE_H

#include <stdbool.h>
#include <stddef.h>

#include "budget.h"
#include "recording.h"

/* Whether the recording's GPU spans (rec->spans, by begin) can be read for late_refreshes
 * (ok false: they could not be kept, and no frame can be judged late). Each surface's frames
 * read them in one pass, holding each device's back to the last span no later frame reaches. */
struct span_index {
    bool ok;
};
void span_index_build(const struct recording *rec, struct span_index *ret);
void span_index_free(struct span_index *x);
/* Keeps with each frame of log (x: rec's spans) how many refreshes after it was ready it was
 * shown (frame_extra's late_refreshes), where that can be judged (late_judged: presented, its
 * GPU time known, an earlier shown frame). Ready: its present call returned and the GPU work
 * begun before that ended (with what followed it back to back). The first refresh it could
 * be shown at: on the grid of the frame shown before it, the first one a quarter refresh
 * after it was ready (the compositor's own time); it is late by the refreshes between that
 * one and the one it was shown at. The refresh: the compositor's claim, or the shortest
 * interval it ever showed frames at when longer. Reads each frame's wake-up evidence (after
 * display_evidence_wakes). Returns 0 or -ENOMEM (no frame then judged). */
int late_refreshes(const struct recording *rec, const struct span_index *x,
                   struct recording_log *log, const struct display_evidence *ev);

#endif
