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

#define FSCOPE_EXPORT __attribute__((visibility("default")))

/* Limits on a cap's rate. */
#define CAP_MIN_HZ 1.0
#define CAP_MAX_HZ 1000.0
/* A deadline more than this many slices in the past is a stall (a load screen): resync. */
#define CAP_RESYNC_SLICES 4

/* Frame flags left on the calling thread by a wait, taken by the next frame close. */
#define CAP_FLAG_CAPPED 0x1
#define CAP_FLAG_MISSED 0x2 /* the work alone ran past the deadline */
#define CAP_FLAG_RESYNC 0x4

struct cap_event {
    uint64_t release_ticks;
    uint32_t target_ns;
    uint8_t flags;
};

struct fscope_cap {
    char label[64];
    _Atomic uint64_t target_ns; /* the slice; 0 = off. Set from any thread. */
    _Atomic uint64_t vblank_ticks; /* a known presentation time of the output paced to; 0 none */
    uint64_t slice_ns_in_use;
    uint64_t deadline_ticks;
    uint64_t last_release_ticks;
    uint64_t oversleep_ns[32]; /* recent wake-up lateness, to size the spin */
    unsigned oversleep_next;
    struct chunked events; /* one per wait, for the accuracy report */
    uint64_t resyncs, missed;
};

/* A cap owned by the caller (the layer has one per surface). Never freed: reports read it. */
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

/* For reports. */
unsigned caps_count(void);
struct fscope_cap *cap_at(unsigned index);

#endif
