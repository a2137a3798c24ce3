/* What the compositor did with the frames: shown or not, when, on which output, at what
 * cadence, and what paced them. Computed from a recording. */
#ifndef FSCOPE_PRESENTATION_H
#define FSCOPE_PRESENTATION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "frames.h"
#include "recording.h"

#define MAX_DIAGNOSES 4

struct presentation_accounting {
    uint64_t requested, presented, discarded, discarded_recreation, pending, failed, untracked;
    uint64_t present_failed; /* the present call itself failed: nothing to show */
};

/* A surface's cadences, the one computation every line that states them reads: the median
 * interval between the app's presents (its frames) and between successive presentations (two
 * frames shown at one refresh are one). */
struct presentation_cadence {
    double app_ms, shown_ms; /* 0: no frame, or no two presentations */
    size_t shown_intervals;
};

/* What one pass over a surface's frames gives every analysis that needs no evidence (the
 * display evidence, the summary's surfaces). */
struct presentation_log {
    bool ok; /* memory sufficed: else all 0 */
    struct presentation_accounting account;
    struct presentation_cadence cadence;
    uint64_t fifo;         /* frames presented FIFO or FIFO relaxed */
    uint64_t vsync;        /* presented frames the compositor flagged vsync */
    double claimed_ms;     /* the median refresh claimed for its presented frames; 0: none */
    uint64_t near_cadence; /* frames within 10% of cadence.app_ms */
};

struct presentation_stats {
    struct presentation_log *logs; /* each surface's, in log order; NULL: no memory */
    bool tracked; /* feedback was tracked for at least one surface */
    struct presentation_accounting total;
    bool mismatch; /* the frames' tally and the tracker's own disagree: a bug, said loudly */
    char mismatch_text[256];

    /* Of the primary surface (presentation_primary_log). */
    double app_interval_ms;       /* median interval between present calls */
    double presented_interval_ms; /* median interval between successive presentations */
    double claimed_refresh_ms;    /* median refresh the compositor claims */
    bool vsync;                   /* most presented frames carry the vsync flag */
    double unit_ms;               /* one refresh: claimed if vsync-flagged, else measured */
    uint64_t intervals_by_units[4]; /* 1, 2, 3, 4+ refreshes between presentations */
    uint64_t missed_refreshes;    /* refreshes that passed with no new frame shown */
    double judder_ms;             /* standard deviation of the presented intervals */
    double latency_ms[4];         /* present call -> shown: mean, p50, p95, p99 */
    double latency_return_ms[4];  /* present return -> shown */
    uint64_t latency_samples;
    int shown_output;             /* most frequent output, -1 unknown */
    bool shown_output_ambiguous;
    bool at_output_cadence;       /* presented at the output's cadence: confirms display-bound */

    char diagnoses[MAX_DIAGNOSES][256];
    unsigned diagnosis_count;
};

/* Fills ret from one pass over each surface's frames (free with presentation_finish). */
void presentation_compute(const struct recording *rec, struct presentation_stats *ret);
void presentation_finish(struct presentation_stats *s);
void presentation_write_text(const struct recording *rec, FILE *f,
                             const struct presentation_stats *s);
void presentation_write_json(const struct recording *rec, FILE *f,
                             const struct presentation_stats *s);

/* The known output whose refresh period matches period_ms within 3%: a display that can pace
 * an app presenting at that cadence. False when none does. */
bool presentation_pacing_output(const struct recording *rec, double period_ms, char *ret_name, size_t name_len,
                                double *ret_hz);


/* The surface the summary's cadences, verdict and presentation lines are of: the tracked one
 * with the most frames, else the one with the most frames (the first of equals); 0 without
 * any. */
unsigned presentation_primary_log(const struct recording *rec);

/* A discarded frame (index, of c's log) that was the last present of a swapchain replaced by
 * recreation. A frame c gave before stays valid (it reads the next). */
bool frame_recreation_discard(struct frame_cursor *c, uint64_t index);
const char *frame_present_state_name(struct frame_cursor *c, uint64_t index);

#endif
