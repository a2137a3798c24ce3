/* A run's statistics over its frames: frame times and percentiles, the budget summed over the
 * frames that carry it, the run's verdict and the reason given for it, the kernel's split,
 * hitches, the engine's view and the caps' accuracy. Computed once; every output reads it. */
#ifndef FSCOPE_RUN_H
#define FSCOPE_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "budget.h"
#include "counters.h"
#include "engine.h"
#include "hitches.h"
#include "keep.h"
#include "presentation.h"
#include "wakeups.h"
#include "recording.h"

/* GPU-timed frames against the others, where timing was sampled (run.c, sampling_compare). */
struct sampling_bias {
    uint64_t timed_frames, untimed_frames;
    bool compared;  /* both groups large enough */
    double timed_median_ms, untimed_median_ms, difference_ms;
    double z; /* Mann-Whitney's, timed slower positive */
    enum fscope_verdict timed_verdict, untimed_verdict;
    /* The timed frames were slower beyond the noise: the untimed frames carry the verdict and
     * the blocks, and GPU busy is gpu_busy_timed_ms less difference_ms. */
    bool corrected;
    double gpu_busy_timed_ms;
    /* The timed frames cannot decide between their two leading verdicts (their margin of
     * time shares within twice its standard error) and the untimed frames' verdict is one
     * of the two: the untimed frames carry the verdict and the blocks. */
    bool undecided;
    double timed_margin, timed_margin_se;
};

struct run_stats {
    const struct recording *rec;
    struct presentation_stats presentation;
    uint64_t frames;
    /* Frames the budget, the blocks and the verdict are taken over: all of them, or the ones
     * GPU-timed when GPU timing was sampled (gpu_unsampled frames counted apart). */
    uint64_t basis_frames, unsampled_frames;
    /* Frames whose submissions were timed, for per-frame zone times: all of them, or with
     * sampled timing the frames' share of timed submissions (spans against submissions). */
    uint64_t zone_frames;
    double duration_s, fps;
    double mean_ms, p50_ms, p95_ms, p99_ms, max_ms;
    double low1_fps, low01_fps;
    double budget_ms[2 + FSCOPE_BLOCK_COUNT]; /* cpu, gpu_busy, blocks... (means) */
    struct frame_budget_ns total;             /* sums over the basis frames */
    struct frame_budget_ns all;               /* the partition's sums over every frame */
    double count_mean[FSCOPE_COUNT_COUNT];
    /* The kernel's split of the CPU part, summed over the frames that have it. */
    uint64_t kernel_frames;
    int64_t cpu_busy, cpu_starved, cpu_blocked, oncpu, runnable, asleep, kernel_cpu;
    int kernel_tid; /* the thread that closed most of them */
    struct counter_stats counters;
    uint64_t verdict_frames[FSCOPE_VERDICT_COUNT];
    /* Frames that missed their cap's deadline, by what bound them instead: the same for every
     * cap, counted once. */
    uint64_t missed_by_verdict[FSCOPE_VERDICT_COUNT];
    enum fscope_verdict run_verdict;
    char reason[1024];
    /* The same, short enough for the one-screen summary (the CPU verdict's without the present
     * overhead's explanation); the other verdicts' reasons are short already. */
    char brief_reason[1024];
    struct display_evidence *evidence; /* per log, in log order */
    struct sched_index sched;          /* the wake-up chain's events, for the evidence */
    /* The CPU part's sleep outside Vulkan, by what woke it (struct frame_budget_ns), over the
     * basis frames: how many frames the chain or the cadence judged, and the waker that woke
     * the most of it in each kind, named. */
    uint64_t wake_chain_frames, wake_cadence_frames;
    char display_waker[16], timer_waker[16], thread_waker[16];
    int thread_waker_tid;
    unsigned primary_log;              /* the log with the most frames */
    struct hitch_stats hitches;
    struct engine_stats engine;
    struct sampling_bias sampling;
    /* trace.json's window (trace_run.window_ns): set by report_create, changed by
     * report_set_trace_window. */
    int64_t trace_window_ns;
    /* The frames whose rows the per-frame outputs keep (keep.h): set by report_create,
     * changed by report_set_keep_window. */
    struct frame_keep keep;
};

/* Fills s from rec (frames' GPU fields computed already: recording_compute_gpu_busy), and
 * keeps with rec's frames what it found of each (frames.h, struct frame_extra). */
void run_stats_compute(struct recording *rec, struct run_stats *s);
void run_stats_finish(struct run_stats *s);

struct cap_stats {
    const struct recording_cap *cap;
    double target_hz;
    uint64_t waits, intervals;
    double mean_interval_ms;
    double err_us[3]; /* p50, p99, max of |interval - target| */
    uint64_t resyncs, missed;
    uint64_t missed_by_verdict[FSCOPE_VERDICT_COUNT];
};

/* One cap's accuracy; false when it never waited (or memory ran out). */
bool cap_compute(const struct run_stats *s, const struct recording_cap *cap,
                 struct cap_stats *ret);

static inline double ms_per_frame(int64_t total_ns, uint64_t frames)
{
    return (double)total_ns / 1e6 / (double)frames;
}

#endif
