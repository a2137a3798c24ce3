/* What the capture's rows of detail keep on a long run, as a flight recorder keeps its
 * detail: every frame that ended in the last window of the run (FRAMESCOPE_KEEP_MINUTES),
 * and the KEEP_AROUND_HITCH frames either side of every hitch, the latest hitches first, up
 * to KEEP_HITCH_FRAMES_MAX frames outside the window. frames.csv, presentmon.csv,
 * mangohud.csv and report.html's presented intervals keep those frames' rows; threads.csv
 * the samples that overlap the time they span. Everything else of the capture (the
 * summaries, seconds.csv, the traces) is over the whole run. A row kept keeps the run's
 * frame index, so a gap shows. */
#ifndef FSCOPE_KEEP_H
#define FSCOPE_KEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "recording.h"

struct hitch_stats;

/* The window unless FRAMESCOPE_KEEP_MINUTES says otherwise: 5 minutes. A kept frame costs
 * ~680 B in frames.csv, presentmon.csv, mangohud.csv and report.html, so 5 minutes at 144
 * fps is 29 MB; with the files over the whole run (recording.fsr up to 123 B a frame, the
 * Perfetto trace 97 B, at 144 fps) and trace.json's ten minutes, 3 hours at 144 fps make
 * ~482 MB, under issue 35's 500 MB (the demo on the 2-core VM, tests/bench/README.md,
 * 2026-12-06; the sum is in framescope-capture(5), SIZE). Ten minutes would make ~511 MB. */
#define KEEP_DEFAULT_MS (5u * 60 * 1000)
/* The longest window a value may ask for (a week, as FRAMESCOPE_TRACE_WINDOW's) and the
 * shortest (60 ms: 0.001 minutes), in ms. */
#define KEEP_MAX_MS (7u * 24 * 3600 * 1000)
#define KEEP_MIN_MS 60u
/* Frames kept either side of a hitch: twice the neighbours it was judged against
 * (HITCH_WINDOW), a second at 60 fps. */
#define KEEP_AROUND_HITCH 60
/* At most this many frames around hitches outside the window (14 MB of rows at 680 B, the
 * neighbourhoods of 165 hitches or more): a run that hitches every second would otherwise
 * keep most of its rows. The latest hitches come first; the summary says how many were
 * kept. */
#define KEEP_HITCH_FRAMES_MAX 20000

/* Ticks from..to (inclusive) of the run whose detail is kept. */
struct keep_span {
    uint64_t from, to;
};

struct frame_keep {
    uint32_t window_ms; /* 0: every frame */
    unsigned logs;
    /* Some frame was left out: kept says which. Without (a short run, "all", or memory ran
     * out: then every frame is kept), every frame is. */
    bool cut;
    uint8_t **kept; /* per log, a bit per frame; with cut only */
    /* With cut: the time the kept frames span (the window, each hitch's frames around it),
     * in order, none overlapping another. */
    struct keep_span *spans;
    size_t span_count;
    uint64_t frames, kept_frames;
    uint64_t window_frames; /* kept for the window */
    uint64_t hitch_frames;  /* kept around hitches, outside the window */
    uint64_t hitches, hitches_kept; /* hitches, and those whose frames around are kept */
};

/* Which frames of rec a window of window_ms (0: all) keeps, with the frames around the
 * hitches h found (NULL: none). keep_finish frees it. */
void keep_compute(const struct recording *rec, const struct hitch_stats *h, uint32_t window_ms,
                  struct frame_keep *ret);
void keep_finish(struct frame_keep *k);

/* Whether frame i of log l is kept. */
static inline bool keep_frame(const struct frame_keep *k, unsigned log, uint64_t i)
{
    return !k || !k->cut || (k->kept[log][i >> 3] >> (i & 7) & 1);
}
/* Whether what happened from..to (ticks) overlaps the time of the frames kept. */
bool keep_time(const struct frame_keep *k, uint64_t from, uint64_t to);

#endif
