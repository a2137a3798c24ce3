#include "budget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "presentation.h"
#include "stats.h"
#include "wakeups.h"

static const char *const verdict_names[FSCOPE_VERDICT_COUNT] = { "cpu", "gpu", "display", "cap",
                                                                  "sync" };
static const char *const block_names[FSCOPE_BLOCK_COUNT] = { "acquire", "present", "fence",
                                                             "semaphore", "idle", "cap",
                                                             "present_wait" };

const char *verdict_name(enum fscope_verdict v)
{
    return v < FSCOPE_VERDICT_COUNT ? verdict_names[v] : "unknown";
}

const char *block_name(enum fscope_block kind)
{
    return kind < FSCOPE_BLOCK_COUNT ? block_names[kind] : "unknown";
}

/* Modes in which the app never waits for the display: it outruns it. */
static bool mode_is_mailbox_like(int32_t mode)
{
    return mode == PRESENT_IMMEDIATE || mode == PRESENT_MAILBOX;
}

/* The display paces a surface's frames only on evidence (DESIGN.md, "The frame"): shown at
 * the app's own cadence without discards (presentation feedback), or, without feedback, a
 * FIFO swapchain on a surface a display shows. An app that outruns the display never is. */
void display_evidence_compute(const struct recording *rec, const struct recording_log *log,
                              const struct presentation_log *facts, struct display_evidence *ret)
{
    memset(ret, 0, sizeof(*ret));
    uint64_t count = log->frame_count;
    enum frame_surface surface = log->surface;
    if (surface == FRAME_SURFACE_NONE || surface == FRAME_SURFACE_HEADLESS || !count) {
        snprintf(ret->why, sizeof(ret->why), "%s",
                 surface == FRAME_SURFACE_HEADLESS ? "a headless surface: no display shows it"
                                                   : "no swapchain: no display shows these frames");
        return;
    }
    if (!facts || !facts->ok) {
        snprintf(ret->why, sizeof(ret->why), "out of memory");
        return;
    }
    uint64_t presented = facts->account.presented;
    uint64_t discarded = facts->account.discarded - facts->account.discarded_recreation;
    uint64_t fifo = facts->fifo;
    /* The cadences as the presentation lines state them: one computation for both. */
    ret->app_interval_ms = facts->cadence.app_ms;
    ret->shown_interval_ms = facts->cadence.shown_ms;
    size_t nshown = facts->cadence.shown_intervals;
    /* Steady: 80% of the frames within 10% of the median interval. */
    ret->steady = count >= 4 && (double)facts->near_cadence >= 0.8 * (double)count;
    /* Where the compositor flags vsync, the refresh it claims is one refresh (else, as Weston
     * headless, what it shows is all there is to go by). */
    double refresh_ms = facts->vsync * 2 > presented ? facts->claimed_ms : 0;
    uint64_t decided = presented + discarded;
    if (log->tracked && decided >= 4 && nshown >= 2) {
        ret->confirmed = true;
        ret->discard_share = (double)discarded / (double)decided;
        bool keeps_up = ret->app_interval_ms >= DISPLAY_MIN_CADENCE_RATIO * ret->shown_interval_ms;
        ret->paces = ret->discard_share <= DISPLAY_MAX_DISCARD_SHARE && keeps_up;
        snprintf(ret->why, sizeof(ret->why), "presented every %.2f ms, the app presents every "
                 "%.2f ms, %.1f%% discarded", ret->shown_interval_ms, ret->app_interval_ms,
                 100 * ret->discard_share);
        char output[64];
        double hz;
        ret->cadence_display = ret->paces &&
                               ret->app_interval_ms <= 1.1 * ret->shown_interval_ms &&
                               ret->app_interval_ms >= 0.9 * ret->shown_interval_ms &&
                               (refresh_ms <= 0 || ret->shown_interval_ms <= 1.1 * refresh_ms);
        /* FIFO at the refresh of another output than the one showing it: a display paces the
         * app, only not the one it is on (the mixed-refresh trap). Waiting in present is then
         * a display wait, whatever the discards. */
        if (!ret->paces && fifo * 2 > count &&
            presentation_pacing_output(rec, ret->app_interval_ms, output, sizeof(output), &hz)) {
            ret->paces = true;
            snprintf(ret->why, sizeof(ret->why), "FIFO paced every %.2f ms by output %s "
                     "(%.0f Hz), not the output showing it (every %.2f ms, %.1f%% discarded)",
                     ret->app_interval_ms, output, hz, ret->shown_interval_ms,
                     100 * ret->discard_share);
        }
        return;
    }
    /* No feedback: FIFO alone is no evidence (Xvfb, or a compositor that never says when it
     * showed a frame, lets a FIFO app run at hundreds of frames a second). A display paces it
     * when it presents at the refresh of an output we know. */
    char output[64];
    double hz;
    bool fifo_mostly = fifo * 2 > count;
    ret->paces = fifo_mostly && presentation_pacing_output(rec, ret->app_interval_ms, output,
                                                           sizeof(output), &hz);
    if (ret->paces)
        snprintf(ret->why, sizeof(ret->why), "FIFO at the refresh of output %s (%.0f Hz: the "
                 "app presents every %.2f ms), no presentation feedback", output, hz,
                 ret->app_interval_ms);
    else if (fifo_mostly)
        snprintf(ret->why, sizeof(ret->why), "FIFO present mode but no presentation feedback, "
                 "and the app presents every %.2f ms, at no known output's refresh: no "
                 "evidence a display paces it", ret->app_interval_ms);
    else
        snprintf(ret->why, sizeof(ret->why), "non-FIFO present mode, no presentation feedback");
}

struct wakes_fill {
    const struct recording *rec;
    struct sched_window *sched; /* NULL: no events */
    const struct display_evidence *ev;
};

static void wake_fill(void *ctx, struct fscope_frame *f, struct frame_extra *x)
{
    const struct wakes_fill *w_ = ctx;
    const struct display_evidence *ev = w_->ev;
    struct sched_window *sched = w_->sched;
    struct frame_wake *fw = &x->wake;
    memset(fw, 0, sizeof(*fw));
    struct wakeup_view w;
    if (sched)
        frame_wakeups(w_->rec, sched, f, &w);
    if (!sched || !w.known) {
        fw->cadence_display = ev->cadence_display;
        fw->cadence_own = !ev->cadence_display && ev->steady;
        return;
    }
    fw->chain = true;
    /* Another process woke it where a compositor answers for the surface; the kernel (its
     * timer) where its cadence is steady; another of its threads always. */
    static const enum waker_kind kinds[3] = { WAKER_OTHER_PROCESS, WAKER_KERNEL,
                                              WAKER_APP_THREAD };
    const bool allowed[3] = { ev->confirmed, ev->steady, true };
    int64_t *ns[3] = { &fw->display_ns, &fw->timer_ns, &fw->thread_ns };
    for (unsigned k = 0; k < 3; k++) {
        if (!allowed[k] || !w.slept_by_ns[kinds[k]])
            continue;
        *ns[k] = w.slept_by_ns[kinds[k]];
        fw->tid[k] = w.by_tid[kinds[k]];
        memcpy(fw->comm[k], w.by_comm[kinds[k]], sizeof(fw->comm[k]));
    }
    /* In a frame the compositor woke it in, its timer's sleeps are its timing of that wait
     * (mpv sleeps to the vsync it expects, then waits for the frame callback): the display's
     * too, whatever its cadence. */
    if (fw->display_ns && ev->confirmed) {
        fw->display_ns += w.slept_by_ns[WAKER_KERNEL];
        fw->timer_ns = 0;
    }
}

void display_evidence_wakes(const struct recording *rec, struct recording_log *log,
                            const struct sched_index *sched, struct display_evidence *ev)
{
    ev->wakes = false;
    if (!rec->kernel.present || !log->frame_count)
        return;
    struct sched_window window;
    sched_window_open(&window, sched);
    struct wakes_fill fill = { rec, sched && sched->count ? &window : NULL, ev };
    const struct frame_field writes[] = { FRAME_FIELD(extra.wake) };
    ev->wakes = frame_store_update(log, wake_fill, &fill, writes, 1) == 0;
    sched_window_close(&window);
}

/* The CPU part's sleep outside Vulkan split by what woke the thread (struct frame_budget_ns):
 * by the wakers of the frame's sleeps where the wake-up chain recorded it (the display's
 * first, then the timer's, then its threads', each at most what is left: its sleeps in
 * Vulkan calls are not told apart from those outside), else the whole of it by the cadence. */
static void split_blocked(const struct frame_extra *x, const struct display_evidence *ev,
                          struct frame_budget_ns *b)
{
    if (!ev->wakes || !x)
        return;
    const struct frame_wake *fw = &x->wake;
    if (!fw->chain) {
        if (fw->cadence_display || fw->cadence_own)
            b->wake_evidence = WAKE_EVIDENCE_CADENCE;
        if (fw->cadence_display)
            b->blocked_display = b->cpu_blocked;
        else if (fw->cadence_own)
            b->blocked_timer = b->cpu_blocked;
        return;
    }
    b->wake_evidence = WAKE_EVIDENCE_CHAIN;
    int64_t left = b->cpu_blocked;
    const int64_t ns[3] = { fw->display_ns, fw->timer_ns, fw->thread_ns };
    int64_t *part[3] = { &b->blocked_display, &b->blocked_timer, &b->blocked_thread };
    for (unsigned k = 0; k < 3; k++) {
        *part[k] = ns[k] < left ? ns[k] : left;
        left -= *part[k];
        b->waker_tid[k] = fw->tid[k];
        memcpy(b->waker_comm[k], fw->comm[k], sizeof(b->waker_comm[k]));
    }
}

void frame_budget(const struct recording *rec, const struct fscope_frame *f,
                  const struct frame_extra *x, const struct display_evidence *ev,
                  struct frame_budget_ns *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->frame = ticks_ns(rec, f->end_ticks - f->start_ticks);
    int64_t blocked = 0;
    for (unsigned b = 0; b < FSCOPE_BLOCK_COUNT; b++) {
        ret->block[b] = ticks_ns(rec, f->block_ticks[b]);
        if (blocked + ret->block[b] > ret->frame)
            ret->block[b] = ret->frame - blocked; /* rounding never breaks the partition */
        blocked += ret->block[b];
        ret->block_gpu[b] = ticks_ns(rec, f->block_gpu_ticks[b]);
        if (ret->block_gpu[b] > ret->block[b])
            ret->block_gpu[b] = ret->block[b];
    }
    ret->cpu = ret->frame - blocked;
    ret->gpu_busy = ticks_ns(rec, f->gpu_busy_ticks);
    if (ret->gpu_busy > ret->frame)
        ret->gpu_busy = ret->frame;
    ret->gpu_timed = rec->gpu_timing && !f->gpu_unsampled;
    if (f->gpu_unsampled) {
        /* Outside a run of timed submissions: what spans it holds are part of its GPU work. */
        ret->gpu_busy = 0;
        memset(ret->block_gpu, 0, sizeof(ret->block_gpu));
    }
    static const unsigned display_blocks[] = { FSCOPE_BLOCK_ACQUIRE, FSCOPE_BLOCK_PRESENT,
                                               FSCOPE_BLOCK_PRESENT_WAIT };
    int64_t idle_in_display = 0;
    for (unsigned i = 0; i < 3; i++)
        idle_in_display += ret->block[display_blocks[i]] - ret->block_gpu[display_blocks[i]];
    bool paces = ev && ev->paces && !mode_is_mailbox_like(f->present_mode);
    if (paces)
        ret->display_wait = idle_in_display;
    else
        ret->present_overhead = idle_in_display;
    static const unsigned wait_blocks[] = { FSCOPE_BLOCK_FENCE, FSCOPE_BLOCK_SEMAPHORE,
                                            FSCOPE_BLOCK_IDLE };
    for (unsigned i = 0; i < 3; i++) {
        ret->gpu_in_waits += ret->block_gpu[wait_blocks[i]];
        ret->gpu_idle_in_waits += ret->block[wait_blocks[i]] - ret->block_gpu[wait_blocks[i]];
        ret->other_wait[i] = ticks_ns(rec, f->other_wait_ticks[i]);
    }
    if (f->kernel_valid) {
        ret->kernel = true;
        /* Compared unsigned: the recording's counts may be anything. */
        uint64_t oncpu = f->kernel_oncpu_ns, runnable = f->kernel_runnable_ns;
        ret->oncpu = oncpu < (uint64_t)ret->frame ? (int64_t)oncpu : ret->frame;
        ret->runnable = runnable < (uint64_t)(ret->frame - ret->oncpu) ? (int64_t)runnable
                                                                        : ret->frame - ret->oncpu;
        ret->asleep = ret->frame - ret->oncpu - ret->runnable;
        int64_t blocks = ret->frame - ret->cpu;
        int64_t outside = ret->asleep - blocks;
        ret->cpu_blocked = outside < 0 ? 0 : outside > ret->cpu ? ret->cpu : outside;
        int64_t left = ret->cpu - ret->cpu_blocked;
        ret->cpu_starved = ret->runnable < left ? ret->runnable : left;
        ret->cpu_busy = left - ret->cpu_starved;
        if (ev && ret->cpu_blocked > 0)
            split_blocked(x, ev, ret);
    }
}

/* The order is what makes the answer trustworthy: a saturated GPU is the ceiling whichever
 * wait it shows up in; then the cap; then a display wait, which needs the display's evidence
 * and the GPU idle; then waits on GPU work, split by whether the GPU was working through them
 * (DESIGN.md, "The frame"). Present overhead counts on the CPU side: it is driver and
 * compositor work the app pays for in its own thread. */
enum fscope_verdict frame_verdict(const struct frame_budget_ns *b)
{
    double frame = b->frame > 0 ? (double)b->frame : 1.0;
    int64_t cpu_side = b->cpu + b->present_overhead;
    int64_t gpu_in_display = b->block_gpu[FSCOPE_BLOCK_ACQUIRE] +
                             b->block_gpu[FSCOPE_BLOCK_PRESENT] +
                             b->block_gpu[FSCOPE_BLOCK_PRESENT_WAIT];
    int64_t waits = b->gpu_in_waits + b->gpu_idle_in_waits;
    /* Asleep outside Vulkan until the display or the app's own timer woke it is not CPU
     * work: a display wait and a cap like those in present and in the layer's cap. */
    int64_t cap = b->block[FSCOPE_BLOCK_CAP] + b->blocked_timer;
    int64_t display_wait = b->display_wait + b->blocked_display;
    int64_t not_cpu = b->blocked_timer + b->blocked_display;
    cpu_side -= not_cpu;
    if (b->gpu_timed && (double)b->gpu_busy >= VERDICT_GPU_BUSY_SHARE * frame)
        return FSCOPE_VERDICT_GPU;
    /* Without GPU timing, blocking in present with no display pacing the app is the driver
     * throttling on GPU work (what it is on every driver we measured), and fence waits are
     * waits on the GPU: neither can be split. */
    int64_t gpu_wait = b->gpu_timed ? gpu_in_display + b->gpu_in_waits
                                    : waits + b->present_overhead;
    if (!b->gpu_timed)
        cpu_side = b->cpu - not_cpu;
    if ((double)cap >= VERDICT_BLOCK_SHARE * frame && cap >= cpu_side && cap >= display_wait &&
        cap >= gpu_wait)
        return FSCOPE_VERDICT_CAP;
    if ((double)display_wait >= VERDICT_BLOCK_SHARE * frame && display_wait >= cpu_side &&
        display_wait >= gpu_wait)
        return FSCOPE_VERDICT_DISPLAY;
    if (b->gpu_timed && (double)b->gpu_idle_in_waits >= VERDICT_BLOCK_SHARE * frame &&
        (double)b->gpu_in_waits < SYNC_MAX_GPU_SHARE * (double)waits &&
        b->gpu_idle_in_waits >= cpu_side && b->gpu_idle_in_waits >= gpu_wait)
        return FSCOPE_VERDICT_SYNC;
    if ((double)gpu_wait >= VERDICT_BLOCK_SHARE * frame && gpu_wait >= cpu_side)
        return FSCOPE_VERDICT_GPU;
    return FSCOPE_VERDICT_CPU;
}
