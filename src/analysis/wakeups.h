/* The wake-up chain of the thread that closed each frame, from the recording's scheduler
 * events (src/record/sched_trace.c): what hitches and frames.csv say of it.
 *
 * The events are indexed once per output (sched_index_build: sorted by time, the pause marks
 * apart, each thread's first event), so a frame's view reads only the events inside it and
 * two binary searches: frames x events before (issue 35: a lookup that restarted at the first
 * event for every frame made frames.csv take 122 s for 96,000 frames once the closing thread
 * changed). */
#ifndef FSCOPE_ANALYSIS_WAKEUPS_H
#define FSCOPE_ANALYSIS_WAKEUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recording.h"

/* The wake-up chain of a frame's closing thread (the recording's sched events, where they
 * were recorded): the thread that ran most while it was runnable, and the one that woke it
 * from its longest sleep in the frame. */
struct wakeup_view {
    bool known;          /* events were recorded for this frame's thread */
    int ran_tid;         /* 0: it was never preempted in the frame */
    char ran_comm[16];
    int64_t ran_ns;
    int waker_tid;       /* 0 with slept_ns: an interrupt woke it (the CPU was idle) */
    char waker_comm[16];
    int64_t slept_ns;    /* 0: it never slept in the frame (or its waker was not seen) */
    int64_t io_wait_ns;  /* asleep uninterruptibly (state D: disk and other I/O) in the frame */
};

/* When each traced thread's first event came. */
struct sched_first {
    int tid;
    uint64_t ticks;
};

struct sched_index {
    const struct sched_event **events; /* by time; the pause marks apart */
    size_t count;
    const struct sched_event **marks; /* PAUSED and RESUMED, by time */
    size_t mark_count;
    struct sched_first *firsts; /* by tid */
    size_t first_count;
};
/* The index of rec's events; an empty one (no view known) when memory ran out. */
void sched_index_build(const struct recording *rec, struct sched_index *ret);
void sched_index_free(struct sched_index *x);
/* Frame f's view: its own events and two lookups in x. */
void frame_wakeups(const struct recording *rec, const struct sched_index *x,
                   const struct fscope_frame *f, struct wakeup_view *ret);

#endif
