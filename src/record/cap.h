/* The frame cap: paces a thread's frames to a target rate with a deadline that accumulates one
 * slice per frame (never restarted from "now", so overshoot never becomes drift). The bulk of
 * the wait sleeps on CLOCK_MONOTONIC with the thread's timer slack at 1 ns; the last part
 * spins. The wait is a block (FSCOPE_BLOCK_CAP) of the frame budget and a zone in the trace. */
#ifndef FSCOPE_CAP_H
#define FSCOPE_CAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "chunked.h"
#include "format.h"

#define FSCOPE_EXPORT __attribute__((visibility("default")))

/* Limits on a cap's rate. */
#define CAP_MIN_HZ 1.0
#define CAP_MAX_HZ 1000.0
/* A deadline more than this many slices in the past is a stall (a load screen): resync. */
#define CAP_RESYNC_SLICES 4

struct fscope_cap {
    struct rec_cap *rec; /* label and the events, one per wait, for the accuracy report */
    _Atomic uint64_t target_ns; /* the slice; 0 = off. Set from any thread. */
    _Atomic uint64_t vblank_ticks; /* a known presentation time of the output paced to; 0 none */
    uint64_t slice_ns_in_use;
    uint64_t deadline_ticks;
    uint64_t last_release_ticks;
    uint64_t oversleep_ns[32]; /* recent wake-up lateness, to size the spin */
    unsigned oversleep_next;
    uint64_t resyncs, missed;
};

/* A cap owned by the caller (the layer has one per surface). Never freed: the recording keeps
 * its events. */
FSCOPE_EXPORT struct fscope_cap *fscope_cap_create(const char *label);
/* 0 turns the cap off. Returns 0 or -EINVAL outside [CAP_MIN_HZ, CAP_MAX_HZ]. */
FSCOPE_EXPORT int fscope_cap_target_hz(struct fscope_cap *cap, double hz);
/* Locks the cap's phase to an output: vblank_ticks is a time a frame was shown on it. The
 * deadlines then drift (by at most an eighth of a slice a frame) to half a refresh before each
 * vblank, as far as possible from both edges, so jitter never puts two frames in one refresh
 * or none in another. */
FSCOPE_EXPORT void fscope_cap_phase_lock(struct fscope_cap *cap, uint64_t vblank_ticks);
/* Waits for the cap's next deadline; one caller at a time per cap. Returns at once when off. */
FSCOPE_EXPORT void fscope_cap_pace(struct fscope_cap *cap);

#endif
