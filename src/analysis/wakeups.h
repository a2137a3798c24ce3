/* The wake-up chain of a frame's closing thread, from the recording's sched events
 * (record/sched_trace.c): who ran in its place while it was runnable, who woke it from its
 * longest sleep, and whether the chain was recorded for the frame at all.
 *
 * A frame's chain is known only where every part of it was recorded: its thread followed
 * over the whole frame (FOLLOWED to UNFOLLOWED marks), the events not paused anywhere in
 * it, and no CPU without its events (CPU_UNWATCHED to CPU_WATCHED) anywhere in it: the thread
 * may have run there. Anything else is unknown, never "nothing ran instead, it never slept" (issue 36). */
#ifndef FSCOPE_WAKEUPS_H
#define FSCOPE_WAKEUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recording.h"

enum waker_kind { WAKER_KERNEL, WAKER_APP_THREAD, WAKER_OTHER_PROCESS, WAKER_KIND_COUNT };

/* The chain of one frame, where known. */
struct wakeup_view {
    bool known;          /* its thread's events were recorded over the whole frame */
    int ran_tid;         /* 0: it was never preempted in the frame */
    char ran_comm[16];
    int64_t ran_ns;
    int waker_tid;       /* 0 with slept_ns: an interrupt woke it (the CPU was idle) */
    char waker_comm[16];
    int64_t slept_ns;    /* 0: it never slept in the frame (or its waker was not seen) */
    int64_t io_wait_ns;  /* asleep uninterruptibly (state D: disk and other I/O) in the frame */
    /* Every sleep of the frame with its waker seen, by who woke it: the kernel (an interrupt,
     * a timer), another of the app's threads, another process; each with the waker of the
     * most of it. */
    int64_t slept_by_ns[WAKER_KIND_COUNT];
    int by_tid[WAKER_KIND_COUNT];
    char by_comm[WAKER_KIND_COUNT][16];
};

/* Why a frame's chain is unknown. */
enum wakeup_coverage {
    WAKEUP_KNOWN = 0,
    WAKEUP_NOT_FOLLOWED, /* no thread known for it, or its thread not followed all through */
    WAKEUP_PAUSED,       /* FRAMESCOPE_WAKEUPS=auto paused the events in it */
    WAKEUP_UNWATCHED,    /* a CPU had no events in it (hotplug) */
    WAKEUP_COVERAGE_COUNT,
};

/* A stretch of time: a thread followed, the events paused, or a CPU without them. */
struct sched_span {
    int tid;
    uint64_t from, to; /* ticks; to UINT64_MAX: to the end */
};

/* What every frame's chain is judged by: the stretches, from the marks (held: a few for each
 * change of the thread that closes frames, pause and CPU hotplug), and the threads' events
 * (the recording's sorter, read through a window). */
struct sched_index {
    const struct sorter *events; /* the threads' events by time (marks apart) */
    uint64_t count;
    struct sched_span *followed; /* by thread, then time */
    size_t followed_count;
    unsigned threads;          /* threads followed at some time */
    bool legacy;               /* no FOLLOWED marks (before issue 36): see wakeups.c */
    struct sched_span *paused; /* by time, apart from each other */
    size_t paused_count;
    struct sched_span *unwatched; /* any CPU's, merged: by time, apart from each other */
    size_t unwatched_count;
};
void sched_index_build(const struct recording *rec, struct sched_index *ret);
void sched_index_free(struct sched_index *x);
enum wakeup_coverage frame_wakeup_coverage(const struct sched_index *x,
                                           const struct fscope_frame *f);

/* The most events a window keeps (40 KiB): a frame with more is read through, not kept. */
#define SCHED_WINDOW_MOST 1024u

/* One pass's view of the threads' events: those from the frame asked about on (copies),
 * read on as frames come later; a frame that starts before the last one read them again
 * from the first. Memory: the events of the longest frame asked about, at most `most`; a
 * frame with more (a loading screen's, with the chain on) has its chain read as they pass. */
struct sched_window {
    const struct sched_index *x;
    struct sorter_cursor cursor;
    bool open, ended;
    struct sched_event *events; /* [first, count): by time, none before from */
    size_t first, count, room;
    size_t most; /* SCHED_WINDOW_MOST; tests set fewer */
    uint64_t from;
};
void sched_window_open(struct sched_window *w, const struct sched_index *x);
void sched_window_close(struct sched_window *w);
/* f's chain, where known: the window moves on to f. */
void frame_wakeups(const struct recording *rec, struct sched_window *w,
                   const struct fscope_frame *f, struct wakeup_view *ret);

#endif
