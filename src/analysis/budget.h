/* The frame, as DESIGN.md defines it ("The frame"): each frame split into nanoseconds so that
 * CPU work and the blocks sum to it exactly, the blocks split by whether the GPU worked through
 * them and by whether the display paces the app (on evidence), and each frame's verdict. The
 * run's verdict (run.h) and every output are built on this file. */
#ifndef FSCOPE_BUDGET_H
#define FSCOPE_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "recording.h"

enum fscope_verdict {
    FSCOPE_VERDICT_CPU,
    FSCOPE_VERDICT_GPU,
    FSCOPE_VERDICT_DISPLAY,
    FSCOPE_VERDICT_CAP,
    /* Waiting on fences the GPU answers late although it was mostly idle: submit, wait,
     * repeat, with no frame in flight. Neither more CPU nor more GPU speed alone fixes it. */
    FSCOPE_VERDICT_SYNC,
    FSCOPE_VERDICT_COUNT,
};

/* Shares of the frame above which a cause is taken to hold the frame back. */
#define VERDICT_GPU_BUSY_SHARE 0.80
#define VERDICT_BLOCK_SHARE 0.20
/* A surface's frames are paced by the display only when it throws away at most this share of
 * what it decided on, and the app presents no faster than this fraction of the shown cadence. */
#define DISPLAY_MAX_DISCARD_SHARE 0.05
#define DISPLAY_MIN_CADENCE_RATIO 0.85
/* A wait on the GPU in which the GPU was busy less than this share is CPU-GPU serialisation. */
#define SYNC_MAX_GPU_SHARE 0.50

/* VkPresentModeKHR values (analysis does not include Vulkan). */
enum { PRESENT_IMMEDIATE = 0, PRESENT_MAILBOX = 1, PRESENT_FIFO = 2, PRESENT_FIFO_RELAXED = 3 };

static inline bool present_mode_fifo(int32_t mode)
{
    return mode == PRESENT_FIFO || mode == PRESENT_FIFO_RELAXED;
}

struct sched_index;
struct presentation_log;
struct frame_extra;

/* Whether a surface's display paces its frames: evidence, not assumption. */
struct display_evidence {
    bool paces;          /* a block in present/acquire with the GPU idle is a display wait */
    bool confirmed;      /* by presentation feedback (else by the present mode alone) */
    double app_interval_ms, shown_interval_ms, discard_share;
    char why[224];
    /* For the CPU part's sleep outside Vulkan (frame_budget): */
    bool steady;         /* the app's frame intervals: 80% within 10% of their median */
    /* The app presents at the cadence it is shown (within 10%, at every claimed refresh
     * where the compositor flags vsync): without the wake-up chain, its sleep outside Vulkan
     * is taken as waiting for the display. */
    bool cadence_display;
    /* What woke each of the log's frames' closing thread from its longest sleep is kept with
     * the frame (display_evidence_wakes, struct frame_extra); false: not known. */
    bool wakes;
};

/* A frame's sleeps in the wake-up chain by what woke the thread (frame_budget splits the CPU
 * part's sleep outside Vulkan by them), each kind with the waker of the most of it. */
struct frame_wake {
    int64_t display_ns, timer_ns, thread_ns; /* 0 where the evidence does not allow the kind */
    int tid[3];                              /* display, timer, thread; 0: an interrupt */
    char comm[3][16];
    bool chain; /* the chain recorded the frame (else the cadence is the evidence) */
    bool cadence_display;
    bool cadence_own; /* no chain: steady at a cadence of its own, not the one shown */
};
/* Keeps with each of log's frames what woke it, from the wake-up chain's events (sched: NULL
 * or empty where none were recorded), once per analysis: each frame_budget then reads its
 * own. */
void display_evidence_wakes(const struct recording *rec, struct recording_log *log,
                            const struct sched_index *sched, struct display_evidence *ev);
void display_evidence_compute(const struct recording *rec, const struct recording_log *log,
                              const struct presentation_log *facts, struct display_evidence *ret);

struct frame_budget_ns {
    int64_t frame, cpu, gpu_busy;
    int64_t block[FSCOPE_BLOCK_COUNT];
    /* Not in the partition: how the blocks split. */
    int64_t block_gpu[FSCOPE_BLOCK_COUNT]; /* part of each block the GPU was busy */
    int64_t display_wait;     /* acquire/present/present-wait, GPU idle, display pacing */
    int64_t present_overhead; /* the same time when no display paces the app */
    int64_t gpu_in_waits, gpu_idle_in_waits; /* of fence, semaphore and idle waits */
    int64_t other_wait[3];    /* fence, semaphore, idle waits of other threads */
    bool gpu_timed;
    /* The CPU part split by the kernel's view of the closing thread (kernel true only when
     * the frame has it): cpu_busy + cpu_starved + cpu_blocked == cpu exactly. The thread is
     * taken to sleep through its Vulkan blocks first, so sleep beyond them is blocking
     * outside Vulkan (a lock, another thread, I/O, a page fault). */
    bool kernel;
    int64_t cpu_busy, cpu_starved, cpu_blocked;
    int64_t oncpu, runnable, asleep; /* the whole frame's, as the kernel counted it */
    /* Of cpu_blocked, what the evidence says it waited for (DESIGN.md, "The frame"): the
     * display (woken by another process, the compositor, on a surface whose presentation
     * feedback it sends; or without the wake-up chain, presented at the cadence shown, an output's
     * refresh), or the app's own limiter (woken by an interrupt, its timer, at a steady
     * cadence). Neither is CPU work; the rest of cpu_blocked stays on the CPU side, with what
     * woke it (another of its threads: a lock or a queue) named. */
    int64_t blocked_display, blocked_timer, blocked_thread;
    enum { WAKE_EVIDENCE_NONE, WAKE_EVIDENCE_CHAIN, WAKE_EVIDENCE_CADENCE } wake_evidence;
    int waker_tid[3]; /* what woke it most, as a display, a timer, a thread; 0: an interrupt */
    char waker_comm[3][16];
};

/* Splits a frame into nanoseconds so that cpu + blocks == frame exactly, and splits its
 * blocks by GPU activity and by what the display evidence allows (ev: its log's; x: what
 * analysis keeps of the frame, frame_extra_at's). */
void frame_budget(const struct recording *rec, const struct fscope_frame *f,
                  const struct frame_extra *x, const struct display_evidence *ev,
                  struct frame_budget_ns *ret);
enum fscope_verdict frame_verdict(const struct frame_budget_ns *b);
const char *verdict_name(enum fscope_verdict v);
/* A block kind as frames.csv names its column, without _ms. */
const char *block_name(enum fscope_block kind);

#endif
