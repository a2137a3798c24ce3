#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture_dir.h"
#include "counters.h"
#include "engine.h"
#include "formats.h"
#include "gpu_zones.h"
#include "hitches.h"
#include "kms.h"
#include "presentation.h"
#include "stats.h"
#include "emit.h"
#include "trace.h"
#include "util/log.h"
#include "util/text.h"
#include "threads.h"
#include "zones.h"

static void write_recording_notes(FILE *f, const struct recording *rec);

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

int64_t ticks_ns(const struct recording *rec, uint64_t ticks)
{
    double ns = recording_ns(rec, ticks);
    return ns < (double)REPORT_NS_MAX ? (int64_t)llround(ns) : REPORT_NS_MAX;
}

int64_t ns_sum(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(double *values, size_t n)
{
    if (!n)
        return 0;
    qsort(values, n, sizeof(*values), compare_double);
    return values[n / 2];
}


static bool mode_is_fifo(int32_t mode)
{
    return mode == PRESENT_FIFO || mode == PRESENT_FIFO_RELAXED;
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
                              struct display_evidence *ret)
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
    double *app = malloc(count * sizeof(double));
    double *shown = malloc(count * sizeof(double));
    size_t napp = 0, nshown = 0;
    uint64_t presented = 0, discarded = 0, fifo = 0, last_shown = 0;
    for (uint64_t i = 0; i < count; i++) {
        const struct fscope_frame *f = &log->frames[i];
        fifo += mode_is_fifo(f->present_mode);
        if (app)
            app[napp++] = recording_ns(rec, f->end_ticks - f->start_ticks) / 1e6;
        if (f->present_state == FRAME_PRESENT_PRESENTED) {
            presented++;
            if (last_shown && f->presented_ticks > last_shown && shown)
                shown[nshown++] = recording_ns(rec, f->presented_ticks - last_shown) / 1e6;
            last_shown = f->presented_ticks;
        } else if (f->present_state == FRAME_PRESENT_DISCARDED &&
                   !frame_recreation_discard(log, i)) {
            discarded++;
        }
    }
    ret->app_interval_ms = median_of(app, napp);
    ret->shown_interval_ms = median_of(shown, nshown);
    free(app);
    free(shown);
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

void frame_budget(const struct recording *rec, const struct fscope_frame *f,
                  const struct display_evidence *ev, struct frame_budget_ns *ret)
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
    int64_t cap = b->block[FSCOPE_BLOCK_CAP];
    if (b->gpu_timed && (double)b->gpu_busy >= VERDICT_GPU_BUSY_SHARE * frame)
        return FSCOPE_VERDICT_GPU;
    /* Without GPU timing, blocking in present with no display pacing the app is the driver
     * throttling on GPU work (what it is on every driver we measured), and fence waits are
     * waits on the GPU: neither can be split. */
    int64_t gpu_wait = b->gpu_timed ? gpu_in_display + b->gpu_in_waits
                                    : waits + b->present_overhead;
    if (!b->gpu_timed)
        cpu_side = b->cpu;
    if ((double)cap >= VERDICT_BLOCK_SHARE * frame && cap >= cpu_side && cap >= b->display_wait &&
        cap >= gpu_wait)
        return FSCOPE_VERDICT_CAP;
    if ((double)b->display_wait >= VERDICT_BLOCK_SHARE * frame && b->display_wait >= cpu_side &&
        b->display_wait >= gpu_wait)
        return FSCOPE_VERDICT_DISPLAY;
    if (b->gpu_timed && (double)b->gpu_idle_in_waits >= VERDICT_BLOCK_SHARE * frame &&
        (double)b->gpu_in_waits < SYNC_MAX_GPU_SHARE * (double)waits &&
        b->gpu_idle_in_waits >= cpu_side && b->gpu_idle_in_waits >= gpu_wait)
        return FSCOPE_VERDICT_SYNC;
    if ((double)gpu_wait >= VERDICT_BLOCK_SHARE * frame && gpu_wait >= cpu_side)
        return FSCOPE_VERDICT_GPU;
    return FSCOPE_VERDICT_CPU;
}

static int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

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
    struct display_evidence *evidence; /* per log, in log order */
    unsigned primary_log;              /* the log with the most frames */
    struct hitch_stats hitches;
    struct engine_stats engine;
};

static double percentile_ms(const int64_t *sorted, uint64_t n, double p)
{
    return (double)sorted[stats_rank(n, p)] / 1e6;
}

/* Average fps over the slowest share of frames. */
static double low_fps(const int64_t *sorted, uint64_t n, double share)
{
    uint64_t k = (uint64_t)ceil(share * (double)n);
    if (k < 1)
        k = 1;
    double sum = 0;
    for (uint64_t i = n - k; i < n; i++)
        sum += (double)sorted[i];
    return sum > 0 ? 1e9 * (double)k / sum : 0;
}

/* Display evidence of every log, in log order; NULL entries when memory ran out. */
static struct display_evidence *evidence_all(const struct recording *rec)
{
    unsigned logs = rec->log_count;
    struct display_evidence *ev = calloc(logs ? logs : 1, sizeof(*ev));
    for (unsigned l = 0; ev && l < logs; l++)
        display_evidence_compute(rec, &rec->logs[l], &ev[l]);
    return ev;
}

static double ms_per_frame(int64_t total_ns, uint64_t frames)
{
    return (double)total_ns / 1e6 / (double)frames;
}

const char *report_thread_label(const struct recording *rec, int tid, char *buf, size_t len)
{
    for (unsigned i = 0; i < rec->thread_count; i++) {
        if (rec->threads[i].tid == tid && rec->threads[i].state != SLOT_EXTERNAL) {
            snprintf(buf, len, "%s (tid %d)", rec->threads[i].name, tid);
            return buf;
        }
    }
    snprintf(buf, len, "tid %d", tid);
    return buf;
}

static void run_reason(struct run_stats *s)
{
    const struct frame_budget_ns *t = &s->total;
    double frame = t->frame > 0 ? (double)t->frame : 1.0;
#define PCT(x) (100.0 * (double)(x) / frame)
    int64_t gpu_in_display = t->block_gpu[FSCOPE_BLOCK_ACQUIRE] + t->block_gpu[FSCOPE_BLOCK_PRESENT] +
                             t->block_gpu[FSCOPE_BLOCK_PRESENT_WAIT];
    int64_t waits = t->gpu_in_waits + t->gpu_idle_in_waits;
    const struct display_evidence *ev = s->evidence ? &s->evidence[s->primary_log] : NULL;
    switch (s->run_verdict) {
    case FSCOPE_VERDICT_GPU:
        if (!t->gpu_timed)
            snprintf(s->reason, sizeof(s->reason), "waiting on fences, semaphores or idle %.1f%% "
                     "and blocked in acquire/present with no display pacing the app %.1f%% of the "
                     "frame (GPU timing off: how busy the GPU was is not measured)", PCT(waits),
                     PCT(t->present_overhead));
        else
            snprintf(s->reason, sizeof(s->reason), "GPU busy %.1f%% of the frame; blocked while "
                     "the GPU worked %.1f%% (in acquire/present %.1f%%, in fence/semaphore/idle "
                     "waits %.1f%%)", PCT(t->gpu_busy), PCT(gpu_in_display + t->gpu_in_waits),
                     PCT(gpu_in_display), PCT(t->gpu_in_waits));
        break;
    case FSCOPE_VERDICT_CAP:
        snprintf(s->reason, sizeof(s->reason), "%.1f%% of the frame waiting in the frame cap",
                 PCT(t->block[FSCOPE_BLOCK_CAP]));
        break;
    case FSCOPE_VERDICT_DISPLAY:
        snprintf(s->reason, sizeof(s->reason), "%.1f%% of the frame waiting for the display in "
                 "acquire/present with the GPU idle, GPU busy %.1f%%, CPU work %.1f%%; %s: %s",
                 PCT(t->display_wait), PCT(t->gpu_busy), PCT(t->cpu),
                 ev && ev->confirmed ? "confirmed" : "not confirmed", ev ? ev->why : "");
        break;
    case FSCOPE_VERDICT_SYNC:
        snprintf(s->reason, sizeof(s->reason), "CPU-GPU serialisation: %.1f%% of the frame "
                 "waiting on fences/semaphores/idle, the GPU idle for %.1f%% of that wait "
                 "(GPU busy %.1f%% of the frame): the CPU waits for the GPU, then the GPU for "
                 "the CPU, with no frame in flight", PCT(waits),
                 waits ? 100.0 * (double)t->gpu_idle_in_waits / (double)waits : 0.0,
                 PCT(t->gpu_busy));
        break;
    default: {
        char busy[64];
        if (t->gpu_timed)
            snprintf(busy, sizeof(busy), "GPU busy %.1f%%", PCT(t->gpu_busy));
        else
            snprintf(busy, sizeof(busy), "GPU not timed");
        char overhead[384] = "";
        if (t->present_overhead > 0)
            snprintf(overhead, sizeof(overhead), ", present overhead %.1f%% (driver/compositor "
                     "work in acquire/present, not a display wait: %s)", PCT(t->present_overhead),
                     ev ? ev->why : "no display evidence");
        char split[256] = "", thread[64];
        if (s->kernel_frames && s->kernel_cpu > 0) {
            double cpu = (double)s->kernel_cpu;
            snprintf(split, sizeof(split), "; of the CPU part, on thread %s: busy %.1f%%, "
                     "starved (runnable, no CPU) %.1f%%, blocked outside Vulkan %.1f%%",
                     report_thread_label(s->rec, s->kernel_tid, thread, sizeof(thread)),
                     100.0 * (double)s->cpu_busy / cpu,
                     100.0 * (double)s->cpu_starved / cpu, 100.0 * (double)s->cpu_blocked / cpu);
        }
        if (s->counters.ipc >= 0) {
            size_t used = strlen(split);
            snprintf(split + used, sizeof(split) - used, "%sIPC %.2f", used ? ", " : "; ",
                     s->counters.ipc);
        }
        snprintf(s->reason, sizeof(s->reason), "CPU work %.1f%% of the frame%s, %s, blocked "
                 "%.1f%%%s", PCT(t->cpu), overhead, busy, PCT(t->frame - t->cpu), split);
    }
    }
#undef PCT
}

static void compute_stats(const struct recording *rec, struct run_stats *s)
{
    memset(s, 0, sizeof(*s));
    s->rec = rec;
    presentation_compute(rec, &s->presentation);
    s->evidence = evidence_all(rec);
    hitches_compute(rec, s->evidence, &s->hitches);
    unsigned logs = rec->log_count;
    uint64_t most = 0;
    for (unsigned l = 0; l < logs; l++) {
        uint64_t count = rec->logs[l].frame_count;
        s->frames += count;
        if (count > most) {
            most = count;
            s->primary_log = l;
        }
    }
    s->total.gpu_timed = rec->gpu_timing;
    if (!s->frames)
        return;
    for (unsigned l = 0; l < logs; l++)
        for (uint64_t i = 0; i < rec->logs[l].frame_count; i++)
            s->unsampled_frames += rec->logs[l].frames[i].gpu_unsampled != 0;
    /* With GPU timing sampled, the GPU-timed frames carry the budget and the verdict (the
     * others' GPU time is unknown); with none timed, every frame does, as without GPU timing. */
    bool sampled_basis = s->unsampled_frames && s->unsampled_frames < s->frames;
    s->basis_frames = sampled_basis ? s->frames - s->unsampled_frames : s->frames;
    if (s->unsampled_frames == s->frames)
        s->total.gpu_timed = false;
    s->zone_frames = s->frames;
    if (s->unsampled_frames) {
        double submits = 0;
        for (unsigned l = 0; l < logs; l++)
            for (uint64_t i = 0; i < rec->logs[l].frame_count; i++)
                submits += (double)rec->logs[l].frames[i].counts[FSCOPE_COUNT_SUBMITS];
        if (submits > 0 && (double)rec->span_count < submits)
            s->zone_frames = (uint64_t)llround((double)s->frames * (double)rec->span_count /
                                               submits);
        if (!s->zone_frames)
            s->zone_frames = 1;
    }
    int64_t *times = malloc(s->frames * sizeof(*times));
    uint64_t n = 0, first = UINT64_MAX, last = 0;
    double sum_ms = 0;
    int64_t verdict_ns[FSCOPE_VERDICT_COUNT] = { 0 };
    struct frame_budget_ns *total = &s->total;
    for (unsigned l = 0; l < logs; l++) {
        const struct recording_log *log = &rec->logs[l];
        uint64_t count = log->frame_count;
        for (uint64_t i = 0; i < count; i++) {
            const struct fscope_frame *f = &log->frames[i];
            struct frame_budget_ns b;
            frame_budget(rec, f, s->evidence ? &s->evidence[l] : NULL, &b);
            if (times && n < s->frames)
                times[n++] = b.frame;
            sum_ms += (double)b.frame / 1e6;
            if (f->start_ticks < first)
                first = f->start_ticks;
            if (f->end_ticks > last)
                last = f->end_ticks;
            for (unsigned k = 0; k < FSCOPE_COUNT_COUNT; k++)
                s->count_mean[k] += (double)f->counts[k];
            /* Sums that saturate: each term is at most REPORT_NS_MAX, and a recording may
             * hold millions of them. The partition of every frame: */
            struct frame_budget_ns *all = &s->all;
            all->frame = ns_sum(all->frame, b.frame);
            all->cpu = ns_sum(all->cpu, b.cpu);
            for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++)
                all->block[k] = ns_sum(all->block[k], b.block[k]);
            for (unsigned k = 0; k < 3; k++)
                all->other_wait[k] = ns_sum(all->other_wait[k], b.other_wait[k]);
            if (b.kernel) {
                s->kernel_frames++;
                s->cpu_busy = ns_sum(s->cpu_busy, b.cpu_busy);
                s->cpu_starved = ns_sum(s->cpu_starved, b.cpu_starved);
                s->cpu_blocked = ns_sum(s->cpu_blocked, b.cpu_blocked);
                s->kernel_cpu = ns_sum(s->kernel_cpu, b.cpu);
                s->oncpu = ns_sum(s->oncpu, b.oncpu);
                s->runnable = ns_sum(s->runnable, b.runnable);
                s->asleep = ns_sum(s->asleep, b.asleep);
                s->kernel_tid = f->kernel_tid;
            }
            if (sampled_basis && f->gpu_unsampled)
                continue;
            /* What needs the GPU's time, and the verdict, over the basis frames: */
            total->frame = ns_sum(total->frame, b.frame);
            total->cpu = ns_sum(total->cpu, b.cpu);
            total->gpu_busy = ns_sum(total->gpu_busy, b.gpu_busy);
            for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++) {
                total->block[k] = ns_sum(total->block[k], b.block[k]);
                total->block_gpu[k] = ns_sum(total->block_gpu[k], b.block_gpu[k]);
            }
            total->display_wait = ns_sum(total->display_wait, b.display_wait);
            total->present_overhead = ns_sum(total->present_overhead, b.present_overhead);
            total->gpu_in_waits = ns_sum(total->gpu_in_waits, b.gpu_in_waits);
            total->gpu_idle_in_waits = ns_sum(total->gpu_idle_in_waits, b.gpu_idle_in_waits);
            for (unsigned k = 0; k < 3; k++)
                total->other_wait[k] = ns_sum(total->other_wait[k], b.other_wait[k]);
            enum fscope_verdict v = frame_verdict(&b);
            s->verdict_frames[v]++;
            verdict_ns[v] = ns_sum(verdict_ns[v], b.frame);
            if (f->cap_flags & CAP_FLAG_MISSED)
                s->missed_by_verdict[v]++;
        }
    }
    counters_compute(rec, &s->counters);
    double frames = (double)s->frames;
    s->duration_s = recording_ns(rec, last - first) / 1e9;
    s->fps = s->duration_s > 0 ? frames / s->duration_s : 0;
    s->mean_ms = sum_ms / frames;
    if (times) {
        qsort(times, n, sizeof(*times), compare_i64);
        s->p50_ms = percentile_ms(times, n, 0.50);
        s->p95_ms = percentile_ms(times, n, 0.95);
        s->p99_ms = percentile_ms(times, n, 0.99);
        s->max_ms = (double)times[n - 1] / 1e6;
        s->low1_fps = low_fps(times, n, 0.01);
        s->low01_fps = low_fps(times, n, 0.001);
        free(times);
    }
    s->budget_ms[0] = ms_per_frame(s->all.cpu, s->frames);
    s->budget_ms[1] = ms_per_frame(total->gpu_busy, s->basis_frames);
    for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++)
        s->budget_ms[2 + k] = ms_per_frame(s->all.block[k], s->frames);
    for (unsigned k = 0; k < FSCOPE_COUNT_COUNT; k++)
        s->count_mean[k] /= frames;

    /* The run's verdict is the one that held the most time, not the most frames. */
    unsigned best = 0;
    for (unsigned v = 1; v < FSCOPE_VERDICT_COUNT; v++)
        if (verdict_ns[v] > verdict_ns[best])
            best = v;
    s->run_verdict = (enum fscope_verdict)best;
    run_reason(s);
}

struct cap_stats {
    const struct recording_cap *cap;
    double target_hz;
    uint64_t waits, intervals;
    double mean_interval_ms;
    double err_us[3]; /* p50, p99, max of |interval - target| */
    uint64_t resyncs, missed;
    uint64_t missed_by_verdict[FSCOPE_VERDICT_COUNT];
};

/* Accuracy over intervals between two releases at the same target, where the second release
 * waited (a missed deadline or a resync is reported separately: it was not the cap's doing). */
static bool cap_compute(const struct run_stats *s, const struct recording_cap *cap,
                        struct cap_stats *ret)
{
    const struct recording *rec = s->rec;
    memset(ret, 0, sizeof(*ret));
    ret->cap = cap;
    uint64_t n = cap->event_count;
    if (!n)
        return false;
    double *errs = malloc(n * sizeof(double));
    if (!errs)
        return false;
    double sum_ms = 0;
    for (uint64_t i = 0; i < n; i++) {
        const struct cap_event *e = &cap->events[i];
        ret->waits++;
        ret->target_hz = 1e9 / e->target_ns;
        ret->resyncs += (e->flags & CAP_FLAG_RESYNC) != 0;
        ret->missed += (e->flags & CAP_FLAG_MISSED) != 0;
        if (i == 0 || (e->flags & (CAP_FLAG_MISSED | CAP_FLAG_RESYNC)))
            continue;
        const struct cap_event *prev = &cap->events[i - 1];
        if (prev->target_ns != e->target_ns)
            continue;
        double interval_ns = recording_ns(rec, e->release_ticks - prev->release_ticks);
        sum_ms += interval_ns / 1e6;
        errs[ret->intervals++] = fabs(interval_ns - e->target_ns) / 1e3;
    }
    if (ret->intervals) {
        ret->mean_interval_ms = sum_ms / (double)ret->intervals;
        stats_sort(errs, ret->intervals);
        ret->err_us[0] = errs[stats_rank(ret->intervals, 0.50)];
        ret->err_us[1] = errs[stats_rank(ret->intervals, 0.99)];
        ret->err_us[2] = errs[ret->intervals - 1];
    }
    free(errs);
    /* What the frames that missed were bound by instead. */
    memcpy(ret->missed_by_verdict, s->missed_by_verdict, sizeof(ret->missed_by_verdict));
    return true;
}

static void write_caps_text(FILE *f, const struct run_stats *s)
{
    const struct recording *rec = s->rec;
    unsigned n = rec->cap_count;
    for (unsigned i = 0; i < n; i++) {
        struct cap_stats c;
        if (!cap_compute(s, &rec->caps[i], &c))
            continue;
        fprintf(f, "  cap         %s: target %.3f Hz (%.3f ms); achieved mean interval %.3f ms; "
                "|interval - target| p50 %.1f  p99 %.1f  max %.1f us over %llu intervals; "
                "%llu resyncs\n", c.cap->label, c.target_hz, 1000.0 / c.target_hz,
                c.mean_interval_ms, c.err_us[0], c.err_us[1], c.err_us[2],
                (unsigned long long)c.intervals, (unsigned long long)c.resyncs);
        if (c.missed) {
            fprintf(f, "  cap missed  %llu frames missed their deadline because the work itself "
                    "was longer than the slice; bound by:", (unsigned long long)c.missed);
            for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++)
                if (c.missed_by_verdict[v])
                    fprintf(f, " %s %llu", verdict_name((enum fscope_verdict)v),
                            (unsigned long long)c.missed_by_verdict[v]);
            fputc('\n', f);
        }
    }
}

static void write_caps_json(FILE *f, const struct run_stats *s)
{
    fputs("  \"caps\": [", f);
    const struct recording *rec = s->rec;
    unsigned n = rec->cap_count;
    bool first = true;
    for (unsigned i = 0; i < n; i++) {
        struct cap_stats c;
        if (!cap_compute(s, &rec->caps[i], &c))
            continue;
        fputs(first ? "{\"label\": " : ", {\"label\": ", f);
        first = false;
        json_write_string(f, c.cap->label);
        fprintf(f, ", \"target_hz\": %.6f, \"waits\": %llu, \"intervals\": %llu, "
                "\"mean_interval_ms\": %.6f, \"error_us\": {\"p50\": %.3f, \"p99\": %.3f, "
                "\"max\": %.3f}, \"resyncs\": %llu, \"missed\": %llu, \"missed_bound_by\": {",
                c.target_hz, (unsigned long long)c.waits, (unsigned long long)c.intervals,
                c.mean_interval_ms, c.err_us[0], c.err_us[1], c.err_us[2],
                (unsigned long long)c.resyncs, (unsigned long long)c.missed);
        for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++)
            fprintf(f, "%s\"%s\": %llu", v ? ", " : "", verdict_name((enum fscope_verdict)v),
                    (unsigned long long)c.missed_by_verdict[v]);
        fputs("}}", f);
    }
    fputs("],\n", f);
}

static const char *kernel_state_name(enum rec_kernel_state state)
{
    switch (state) {
    case REC_KERNEL_ON: return "on";
    case REC_KERNEL_OFF: return "off";
    case REC_KERNEL_UNAVAILABLE: return "unavailable";
    default: return "unknown";
    }
}

/* The kernel's split of the CPU part, per frame, over the frames that have it. */
static void write_kernel_text(FILE *f, const struct run_stats *s)
{
    const struct recording *rec = s->rec;
    if (rec->kernel_state == REC_KERNEL_OFF || rec->kernel_state == REC_KERNEL_UNAVAILABLE) {
        fprintf(f, "  kernel      not measured: %s\n", rec->kernel_why);
        return;
    }
    if (!s->kernel_frames)
        return;
    char thread[64];
    uint64_t n = s->kernel_frames;
    fprintf(f, "  kernel      thread %s: CPU part %.3f = busy %.3f + starved %.3f + blocked "
            "outside Vulkan %.3f ms per frame; whole frame: on CPU %.3f, runnable %.3f, asleep "
            "%.3f ms (%llu frames)\n",
            report_thread_label(rec, s->kernel_tid, thread, sizeof(thread)),
            ms_per_frame(s->kernel_cpu, n), ms_per_frame(s->cpu_busy, n),
            ms_per_frame(s->cpu_starved, n), ms_per_frame(s->cpu_blocked, n),
            ms_per_frame(s->oncpu, n), ms_per_frame(s->runnable, n), ms_per_frame(s->asleep, n),
            (unsigned long long)n);
}

static void write_summary_text(FILE *f, const struct run_stats *s)
{
    const struct recording *rec = s->rec;
    char clock[160];
    fprintf(f, "framescope: summary for %s (pid %d)\n", rec->app, rec->pid);
    for (unsigned i = 0; i < rec->device_count; i++) {
        const struct rec_device *d = &rec->devices[i];
        if (d->count == 1)
            fprintf(f, "  device      #%u %s, driver %s\n", d->first_id, d->name, d->driver);
        else
            fprintf(f, "  device      #%u..#%u %s, driver %s (%u devices created)\n",
                    d->first_id, d->last_id, d->name, d->driver, d->count);
    }
    fprintf(f, "  clock       %s\n", recording_clock_describe(rec, clock, sizeof(clock)));
    if (!s->frames) {
        fprintf(f, "  frames      0 (nothing was presented and no frame was marked)\n");
        gpu_zones_write_text(f, rec, 0);
    } else {
        fprintf(f, "  frames      %llu in %.3f s, %.1f fps\n", (unsigned long long)s->frames,
                s->duration_s, s->fps);
        fprintf(f, "  frame time  mean %.3f  p50 %.3f  p95 %.3f  p99 %.3f  max %.3f ms; "
                "1%% low %.1f fps, 0.1%% low %.1f fps\n", s->mean_ms, s->p50_ms, s->p95_ms,
                s->p99_ms, s->max_ms, s->low1_fps, s->low01_fps);
        const double *b = s->budget_ms;
        const struct frame_budget_ns *t = &s->total;
        if (s->basis_frames < s->frames)
            fprintf(f, "  sampled     GPU timed in %llu of %llu frames (FRAMESCOPE_GPU_SAMPLE): "
                    "gpu busy, blocks and verdict below are theirs, mean frame %.3f ms\n",
                    (unsigned long long)s->basis_frames, (unsigned long long)s->frames,
                    ms_per_frame(t->frame, s->basis_frames));
        fprintf(f, "  budget      cpu %.3f | blocked: acquire %.3f  present %.3f  present wait "
                "%.3f  fence %.3f  other wait %.3f  cap %.3f | gpu busy %.3f ms per frame\n",
                b[0], b[2 + FSCOPE_BLOCK_ACQUIRE], b[2 + FSCOPE_BLOCK_PRESENT],
                b[2 + FSCOPE_BLOCK_PRESENT_WAIT], b[2 + FSCOPE_BLOCK_FENCE],
                b[2 + FSCOPE_BLOCK_SEMAPHORE] + b[2 + FSCOPE_BLOCK_IDLE],
                b[2 + FSCOPE_BLOCK_CAP], b[1]);
        fprintf(f, "  blocks      acquire/present: GPU working %.3f, display wait %.3f, present "
                "overhead %.3f | fence/semaphore/idle: GPU working %.3f, GPU idle %.3f ms per "
                "frame\n",
                ms_per_frame(t->block_gpu[FSCOPE_BLOCK_ACQUIRE] + t->block_gpu[FSCOPE_BLOCK_PRESENT] +
                                 t->block_gpu[FSCOPE_BLOCK_PRESENT_WAIT], s->basis_frames),
                ms_per_frame(t->display_wait, s->basis_frames),
                ms_per_frame(t->present_overhead, s->basis_frames),
                ms_per_frame(t->gpu_in_waits, s->basis_frames),
                ms_per_frame(t->gpu_idle_in_waits, s->basis_frames));
        fprintf(f, "  other       waits on other threads: fence %.3f  semaphore %.3f  idle %.3f ms "
                "per frame (not in the budget: they overlap the presenting thread)\n",
                ms_per_frame(s->all.other_wait[0], s->frames),
                ms_per_frame(s->all.other_wait[1], s->frames),
                ms_per_frame(s->all.other_wait[2], s->frames));
        write_kernel_text(f, s);
        char thread[64];
        counters_write_text(f, rec, &s->counters,
                            report_thread_label(rec, s->kernel_tid, thread, sizeof(thread)));
        gpu_zones_write_text(f, rec, s->zone_frames);
        threads_write_text(f, rec);
        drm_write_text(f, rec);
        kms_write_text(f, rec);
        fprintf(f, "  work        %.1f submits, %.1f command buffers, %.1f draws, %.1f dispatches, "
                "%.1f render passes per frame\n", s->count_mean[FSCOPE_COUNT_SUBMITS],
                s->count_mean[FSCOPE_COUNT_COMMAND_BUFFERS], s->count_mean[FSCOPE_COUNT_DRAWS],
                s->count_mean[FSCOPE_COUNT_DISPATCHES], s->count_mean[FSCOPE_COUNT_RENDER_PASSES]);
        engine_write_text(f, rec, &s->engine, s->count_mean);
        fprintf(f, "  verdict     %s-bound: %s\n", verdict_name(s->run_verdict), s->reason);
        fprintf(f, "  frames by verdict:");
        for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++)
            fprintf(f, " %s %.1f%%", verdict_names[v],
                    100.0 * (double)s->verdict_frames[v] / (double)s->basis_frames);
        fputc('\n', f);
    }
    presentation_write_text(rec, f, &s->presentation);
    hitches_write_text(f, rec, &s->hitches);
    write_caps_text(f, s);
    write_recording_notes(f, rec);
    for (unsigned i = 0; i < rec->note_count; i++)
        fprintf(f, "  note        %s\n", rec->notes[i]);
}

static void write_summary_json(FILE *f, const struct run_stats *s)
{
    const struct recording *rec = s->rec;
    char clock[160];
    fputs("{\n  \"schema\": \"framescope-summary-1\",\n  \"app\": ", f);
    json_write_string(f, rec->app);
    fprintf(f, ",\n  \"pid\": %d,\n  \"device\": ", rec->pid);
    json_write_string(f, rec->device_count ? rec->devices[0].name : "");
    fputs(",\n  \"driver\": ", f);
    json_write_string(f, rec->device_count ? rec->devices[0].driver : "");
    fputs(",\n  \"devices\": [", f);
    for (unsigned i = 0; i < rec->device_count; i++) {
        const struct rec_device *d = &rec->devices[i];
        fputs(i ? ", {\"name\": " : "{\"name\": ", f);
        json_write_string(f, d->name);
        fputs(", \"driver\": ", f);
        json_write_string(f, d->driver);
        fprintf(f, ", \"first_id\": %u, \"last_id\": %u, \"created\": %u}", d->first_id,
                d->last_id, d->count);
    }
    fputs("]", f);
    /* GPU time per device, kept apart: a frame's GPU busy is its presenting device's. The
     * devices that have spans, not every id up to the largest (a recording names any). */
    fputs(",\n  \"device_gpu\": [", f);
    struct device_gpu_total *gpu;
    size_t gpu_count = device_gpu_totals(rec, &gpu);
    bool first_gpu = true;
    for (size_t i = 0; i < gpu_count; i++) {
        if (gpu[i].device_id == 0)
            continue;
        fprintf(f, "%s{\"id\": %u, \"spans\": %llu, \"busy_ms\": %.6f}", first_gpu ? "" : ", ",
                gpu[i].device_id, (unsigned long long)gpu[i].spans,
                recording_ns(rec, gpu[i].busy_ticks) / 1e6);
        first_gpu = false;
    }
    free(gpu);
    fputs("]", f);
    fputs(",\n  \"clock\": ", f);
    json_write_string(f, recording_clock_describe(rec, clock, sizeof(clock)));
    fprintf(f, ",\n  \"frames\": %llu,\n  \"duration_s\": %.6f,\n  \"fps\": %.3f,\n",
            (unsigned long long)s->frames, s->duration_s, s->fps);
    fprintf(f, "  \"frame_ms\": {\"mean\": %.6f, \"p50\": %.6f, \"p95\": %.6f, \"p99\": %.6f, "
            "\"max\": %.6f},\n", s->mean_ms, s->p50_ms, s->p95_ms, s->p99_ms, s->max_ms);
    fprintf(f, "  \"low_fps\": {\"1%%\": %.3f, \"0.1%%\": %.3f},\n", s->low1_fps, s->low01_fps);
    const double *b = s->budget_ms;
    fprintf(f, "  \"budget_ms\": {\"cpu\": %.6f, \"gpu_busy\": %.6f, \"acquire\": %.6f, "
            "\"present\": %.6f, \"present_wait\": %.6f, \"fence\": %.6f, \"semaphore\": %.6f, "
            "\"idle\": %.6f, \"other_wait\": %.6f, \"cap\": %.6f},\n", b[0], b[1],
            b[2 + FSCOPE_BLOCK_ACQUIRE], b[2 + FSCOPE_BLOCK_PRESENT],
            b[2 + FSCOPE_BLOCK_PRESENT_WAIT], b[2 + FSCOPE_BLOCK_FENCE],
            b[2 + FSCOPE_BLOCK_SEMAPHORE], b[2 + FSCOPE_BLOCK_IDLE],
            b[2 + FSCOPE_BLOCK_SEMAPHORE] + b[2 + FSCOPE_BLOCK_IDLE], b[2 + FSCOPE_BLOCK_CAP]);
    const struct frame_budget_ns *t = &s->total;
    uint64_t nf = s->basis_frames ? s->basis_frames : 1;
    fprintf(f, "  \"blocks_ms\": {\"display_gpu_working\": %.6f, \"display_wait\": %.6f, "
            "\"present_overhead\": %.6f, \"waits_gpu_working\": %.6f, \"waits_gpu_idle\": %.6f, "
            "\"other_threads\": {\"fence\": %.6f, \"semaphore\": %.6f, \"idle\": %.6f}},\n",
            ms_per_frame(t->block_gpu[FSCOPE_BLOCK_ACQUIRE] + t->block_gpu[FSCOPE_BLOCK_PRESENT] +
                             t->block_gpu[FSCOPE_BLOCK_PRESENT_WAIT], nf),
            ms_per_frame(t->display_wait, nf), ms_per_frame(t->present_overhead, nf),
            ms_per_frame(t->gpu_in_waits, nf), ms_per_frame(t->gpu_idle_in_waits, nf),
            ms_per_frame(s->all.other_wait[0], s->frames ? s->frames : 1),
            ms_per_frame(s->all.other_wait[1], s->frames ? s->frames : 1),
            ms_per_frame(s->all.other_wait[2], s->frames ? s->frames : 1));
    fprintf(f, "  \"gpu_timed\": %s,\n", t->gpu_timed ? "true" : "false");
    fprintf(f, "  \"gpu_sampled\": {\"sampled\": %s, \"basis_frames\": %llu, "
            "\"unsampled_frames\": %llu, \"basis_frame_ms\": %.6f},\n",
            s->unsampled_frames ? "true" : "false", (unsigned long long)s->basis_frames,
            (unsigned long long)s->unsampled_frames, ms_per_frame(t->frame, nf));
    {
        char thread[64];
        uint64_t kn = s->kernel_frames ? s->kernel_frames : 1;
        fputs("  \"kernel\": {\"state\": ", f);
        json_write_string(f, kernel_state_name(rec->kernel_state));
        fputs(", \"why\": ", f);
        json_write_string(f, rec->kernel_why);
        fputs(", \"thread\": ", f);
        json_write_string(f, s->kernel_frames ? report_thread_label(rec, s->kernel_tid, thread,
                                                              sizeof(thread)) : "");
        fprintf(f, ", \"frames\": %llu, \"cpu_ms\": %.6f, \"cpu_busy_ms\": %.6f, "
                "\"cpu_starved_ms\": %.6f, \"cpu_blocked_ms\": %.6f, \"oncpu_ms\": %.6f, "
                "\"runnable_ms\": %.6f, \"asleep_ms\": %.6f},\n",
                (unsigned long long)s->kernel_frames, ms_per_frame(s->kernel_cpu, kn),
                ms_per_frame(s->cpu_busy, kn), ms_per_frame(s->cpu_starved, kn),
                ms_per_frame(s->cpu_blocked, kn), ms_per_frame(s->oncpu, kn),
                ms_per_frame(s->runnable, kn), ms_per_frame(s->asleep, kn));
    }
    counters_write_json(f, rec, &s->counters);
    fprintf(f, "  \"per_frame\": {\"submits\": %.3f, \"command_buffers\": %.3f, \"draws\": %.3f, "
            "\"dispatches\": %.3f, \"render_passes\": %.3f},\n",
            s->count_mean[FSCOPE_COUNT_SUBMITS], s->count_mean[FSCOPE_COUNT_COMMAND_BUFFERS],
            s->count_mean[FSCOPE_COUNT_DRAWS], s->count_mean[FSCOPE_COUNT_DISPATCHES],
            s->count_mean[FSCOPE_COUNT_RENDER_PASSES]);
    engine_write_json(f, rec, &s->engine, s->count_mean);
    fputs("  \"verdict\": {\"run\": ", f);
    json_write_string(f, s->frames ? verdict_name(s->run_verdict) : "none");
    fputs(", \"reason\": ", f);
    json_write_string(f, s->reason);
    fputs(", \"shares\": {", f);
    for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++)
        fprintf(f, "%s\"%s\": %.6f", v ? ", " : "", verdict_names[v],
                s->basis_frames ? (double)s->verdict_frames[v] / (double)s->basis_frames : 0.0);
    fputs("}},\n", f);
    presentation_write_json(rec, f, &s->presentation);
    hitches_write_json(f, rec, &s->hitches);
    threads_write_json(f, rec);
    drm_write_json(f, rec);
    kms_write_json(f, rec);
    gpu_zones_write_json(f, rec, s->zone_frames);
    write_caps_json(f, s);
    fputs("  \"surfaces\": [", f);
    unsigned logs = rec->log_count;
    for (unsigned l = 0; l < logs; l++) {
        fputs(l ? ", {\"label\": " : "{\"label\": ", f);
        const struct recording_log *log = &rec->logs[l];
        json_write_string(f, log->label);
        struct presentation_accounting a = { 0 };
        presentation_account(log, &a);
        fprintf(f, ", \"frames\": %llu, \"presentation_tracked\": %s, \"requested\": %llu, "
                "\"presented\": %llu, \"discarded\": %llu, \"discarded_recreation\": %llu, "
                "\"pending\": %llu, \"untracked_reason\": ",
                (unsigned long long)log->frame_count,
                log->tracked ? "true" : "false", (unsigned long long)a.requested,
                (unsigned long long)a.presented, (unsigned long long)a.discarded,
                (unsigned long long)a.discarded_recreation, (unsigned long long)a.pending);
        json_write_string(f, log->untracked_why);
        if (s->evidence) {
            const struct display_evidence *ev = &s->evidence[l];
            fprintf(f, ", \"display_paces\": %s, \"display_confirmed\": %s, \"display_evidence\": ",
                    ev->paces ? "true" : "false", ev->confirmed ? "true" : "false");
            json_write_string(f, ev->why);
        }
        fputc('}', f);
    }
    fputs("],\n  \"notes\": [", f);
    for (unsigned i = 0; i < rec->note_count; i++) {
        if (i)
            fputs(", ", f);
        json_write_string(f, rec->notes[i]);
    }
    fputs("]\n}\n", f);
}

/* How the run ended and what the recording lost, when it says so. */
static void write_recording_notes(FILE *f, const struct recording *rec)
{
    if (rec->state != REC_STATE_ENDED) {
        if (rec->end_signal)
            fprintf(f, "  ended       killed by signal %d (%s) before its exit: the recording "
                    "holds what it had written until then\n", rec->end_signal,
                    strsignal(rec->end_signal));
        else if (rec->end_status) {
            int status = rec->end_status - 1;
            char how[96] = "";
            if (status == 124)
                snprintf(how, sizeof(how), " (what timeout(1) returns when its time runs out)");
            else if (status > 128 && status < 128 + 65)
                snprintf(how, sizeof(how), " (128 + %d: a death by signal %s, as a shell "
                         "reports it)", status - 128, strsignal(status - 128));
            fprintf(f, "  ended       %s ended without reaching its own exit; the command "
                    "framescope ran exited with status %d%s: the recording holds what it had "
                    "written until then\n", rec->app[0] ? rec->app : "the app", status, how);
        }
        else
            fprintf(f, "  ended       still running or cut short: the recording holds what it "
                    "had written until then\n");
    }
    if (rec->items_dropped || rec->alloc_failures)
        fprintf(f, "  recording   full: %llu frames, GPU spans or cap waits were not recorded\n",
                (unsigned long long)rec->items_dropped);
}

void csv_write_ms(FILE *f, int64_t ns)
{
    uint64_t magnitude = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
    fprintf(f, ",%s%llu.%06llu", ns < 0 ? "-" : "", (unsigned long long)(magnitude / 1000000),
            (unsigned long long)(magnitude % 1000000));
}

uint64_t frames_origin_ticks(const struct recording *rec)
{
    uint64_t origin = UINT64_MAX;
    unsigned logs = rec->log_count;
    for (unsigned l = 0; l < logs; l++) {
        const struct recording_log *log = &rec->logs[l];
        if (log->frame_count && log->frames[0].start_ticks < origin)
            origin = log->frames[0].start_ticks;
    }
    return origin == UINT64_MAX ? 0 : origin;
}

static void write_frames_csv(FILE *f, const struct run_stats *s)
{
    const struct recording *rec = s->rec;
    fputs("frame,surface,swapchain,start_ms,frame_ms,cpu_ms,gpu_busy_ms", f);
    for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++)
        fprintf(f, ",%s_ms", block_names[k]);
    fputs(",record_ms,submits,command_buffers,draws,dispatches,render_passes,verdict,"
          "cap,present,presented_ms,latency_ms,latency_from_return_ms,refresh_ms,seq,flags,"
          "output,device,display_gpu_ms,display_wait_ms,present_overhead_ms,waits_gpu_ms,"
          "waits_gpu_idle_ms,other_fence_ms,other_semaphore_ms,other_idle_ms,cpu_busy_ms,"
          "cpu_starved_ms,cpu_blocked_ms,oncpu_ms,runnable_ms,asleep_ms,kernel_tid,"
          "pipelines,pipeline_ms,shader_modules,shader_module_ms,memory_calls,memory_ms,"
          "swapchain_ms,submit_ms,major_faults,block_reads,preempted,voluntary_switches,"
          "late_refreshes,pipelines_reported,pipeline_cache_hits,pipeline_driver_ms,"
          "ran_instead,ran_instead_ms,woken_by,woken_after_ms,io_wait_ms,recordings,"
          "record_secondary_ms,record_threads,record_busiest_thread_ms,commands,pool_ms,"
          "vertices,indices,instances,indirect_draws", f);
    for (unsigned k = 0; k < BIND_KINDS; k++)
        fprintf(f, ",binds_%s,redundant_%s", engine_bind_key(k), engine_bind_key(k));
    fputs(",memory_allocations,memory_allocated_bytes,memory_frees,descriptor_sets", f);
    counters_write_csv_header(f, rec);
    fputc('\n', f);
    unsigned logs = rec->log_count;
    uint64_t origin = frames_origin_ticks(rec);
    for (unsigned l = 0; l < logs; l++) {
        const struct recording_log *log = &rec->logs[l];
        uint64_t count = log->frame_count;
        int *late = count ? malloc(count * sizeof(*late)) : NULL;
        struct sched_index sched;
        sched_index_build(rec, &sched);
        if (late)
            hitches_late_refreshes(rec, l, s->evidence ? &s->evidence[l] : NULL, late);
        for (uint64_t i = 0; i < count; i++) {
            const struct fscope_frame *fr = &log->frames[i];
            struct frame_budget_ns b;
            frame_budget(rec, fr, s->evidence ? &s->evidence[l] : NULL, &b);
            fprintf(f, "%llu,%u,%u,%.6f", (unsigned long long)i, l, fr->swapchain_serial,
                    recording_ns(rec, fr->start_ticks - origin) / 1e6);
            csv_write_ms(f, b.frame);
            csv_write_ms(f, b.cpu);
            /* A frame GPU timing sampled out has no GPU busy and no verdict (the run's are
             * its GPU-timed frames'): empty, never 0. */
            bool outside = s->basis_frames < s->frames && fr->gpu_unsampled;
            if (outside)
                fputc(',', f);
            else
                csv_write_ms(f, b.gpu_busy);
            for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++)
                csv_write_ms(f, b.block[k]);
            csv_write_ms(f, ticks_ns(rec, fr->counts[FSCOPE_COUNT_RECORD_TICKS]));
            fprintf(f, ",%llu,%llu,%llu,%llu,%llu,%s,",
                    (unsigned long long)fr->counts[FSCOPE_COUNT_SUBMITS],
                    (unsigned long long)fr->counts[FSCOPE_COUNT_COMMAND_BUFFERS],
                    (unsigned long long)fr->counts[FSCOPE_COUNT_DRAWS],
                    (unsigned long long)fr->counts[FSCOPE_COUNT_DISPATCHES],
                    (unsigned long long)fr->counts[FSCOPE_COUNT_RENDER_PASSES],
                    outside ? "" : verdict_name(frame_verdict(&b)));
            fputs(fr->cap_flags & CAP_FLAG_RESYNC   ? "resync,"
                  : fr->cap_flags & CAP_FLAG_MISSED ? "missed,"
                  : fr->cap_flags & CAP_FLAG_CAPPED ? "capped,"
                                                    : ",", f);
            fputs(frame_present_state_name(fr, log), f);
            if (fr->present_state == FRAME_PRESENT_PRESENTED && fr->presented_ticks > origin) {
                double latency = fr->presented_ticks > fr->end_ticks
                                     ? recording_ns(rec, fr->presented_ticks - fr->end_ticks) / 1e6
                                     : -recording_ns(rec, fr->end_ticks - fr->presented_ticks) / 1e6;
                double from_return = fr->presented_ticks > fr->present_return_ticks
                                         ? recording_ns(rec, fr->presented_ticks -
                                                              fr->present_return_ticks) / 1e6
                                         : -recording_ns(rec, fr->present_return_ticks -
                                                               fr->presented_ticks) / 1e6;
                fprintf(f, ",%.6f,%.6f,%.6f,%.6f,%llu,%u,%d",
                        recording_ns(rec, fr->presented_ticks - origin) / 1e6, latency,
                        from_return, fr->refresh_ns / 1e6, (unsigned long long)fr->present_seq,
                        fr->present_flags, fr->output_index);
            } else {
                fputs(",,,,,,,", f);
            }
            fprintf(f, ",%u", fr->device_id);
            csv_write_ms(f, b.block_gpu[FSCOPE_BLOCK_ACQUIRE] + b.block_gpu[FSCOPE_BLOCK_PRESENT] +
                            b.block_gpu[FSCOPE_BLOCK_PRESENT_WAIT]);
            csv_write_ms(f, b.display_wait);
            csv_write_ms(f, b.present_overhead);
            csv_write_ms(f, b.gpu_in_waits);
            csv_write_ms(f, b.gpu_idle_in_waits);
            for (unsigned k = 0; k < 3; k++)
                csv_write_ms(f, b.other_wait[k]);
            if (b.kernel) {
                const int64_t kernel[] = { b.cpu_busy, b.cpu_starved, b.cpu_blocked, b.oncpu,
                                           b.runnable, b.asleep };
                for (unsigned k = 0; k < 6; k++)
                    csv_write_ms(f, kernel[k]);
                fprintf(f, ",%d", fr->kernel_tid);
            } else {
                fputs(",,,,,,,", f);
            }
            fprintf(f, ",%llu", (unsigned long long)fr->counts[FSCOPE_COUNT_PIPELINES]);
            csv_write_ms(f, ticks_ns(rec, fr->counts[FSCOPE_COUNT_PIPELINE_TICKS]));
            fprintf(f, ",%llu", (unsigned long long)fr->counts[FSCOPE_COUNT_SHADERS]);
            csv_write_ms(f, ticks_ns(rec, fr->counts[FSCOPE_COUNT_SHADER_TICKS]));
            fprintf(f, ",%llu", (unsigned long long)fr->counts[FSCOPE_COUNT_MEMORY_CALLS]);
            csv_write_ms(f, ticks_ns(rec, fr->counts[FSCOPE_COUNT_MEMORY_TICKS]));
            csv_write_ms(f, ticks_ns(rec, fr->counts[FSCOPE_COUNT_SWAPCHAIN_TICKS]));
            csv_write_ms(f, ticks_ns(rec, fr->counts[FSCOPE_COUNT_SUBMIT_TICKS]));
            if (fr->kernel_valid)
                fprintf(f, ",%u,%u,%u,%u", fr->kernel_major_faults, fr->kernel_block_reads,
                        fr->kernel_preempted, fr->kernel_waits);
            else
                fputs(",,,,", f);
            if (late && late[i] >= 0)
                fprintf(f, ",%d", late[i]);
            else
                fputc(',', f);
            fprintf(f, ",%llu,%llu",
                    (unsigned long long)fr->counts[FSCOPE_COUNT_PIPELINES_FEEDBACK],
                    (unsigned long long)fr->counts[FSCOPE_COUNT_PIPELINE_CACHE_HITS]);
            csv_write_ms(f, fr->counts[FSCOPE_COUNT_PIPELINE_DRIVER_NS] < (uint64_t)INT64_MAX
                                ? (int64_t)fr->counts[FSCOPE_COUNT_PIPELINE_DRIVER_NS]
                                : INT64_MAX);
            /* The wake-up chain: empty where it was not recorded for the frame's thread; a
             * name, or empty with 0 ms, where nothing preempted or woke it. */
            struct wakeup_view wake;
            frame_wakeups(rec, &sched, fr, &wake);
            if (wake.known) {
                fputc(',', f);
                for (const char *c = wake.ran_comm; wake.ran_tid && *c; c++)
                    fputc(*c == ',' || *c == '"' ? ' ' : *c, f);
                csv_write_ms(f, wake.ran_ns);
                fputc(',', f);
                for (const char *c = wake.waker_comm; wake.slept_ns && *c; c++)
                    fputc(*c == ',' || *c == '"' ? ' ' : *c, f);
                csv_write_ms(f, wake.slept_ns);
                csv_write_ms(f, wake.io_wait_ns);
            } else {
                fputs(",,,,,", f);
            }
            const uint64_t *n = fr->counts;
            unsigned threads;
            uint64_t busiest;
            engine_frame_recording(&s->engine, rec, fr->start_ticks, fr->end_ticks, &threads,
                                   &busiest);
            fprintf(f, ",%llu", (unsigned long long)n[FSCOPE_COUNT_RECORDINGS]);
            csv_write_ms(f, ticks_ns(rec, n[FSCOPE_COUNT_RECORD_SECONDARY_TICKS]));
            fprintf(f, ",%u", threads);
            csv_write_ms(f, ticks_ns(rec, busiest));
            fprintf(f, ",%llu", (unsigned long long)n[FSCOPE_COUNT_RECORD_COMMANDS]);
            csv_write_ms(f, ticks_ns(rec, n[FSCOPE_COUNT_POOL_TICKS]));
            fprintf(f, ",%llu,%llu,%llu,%llu", (unsigned long long)n[FSCOPE_COUNT_VERTICES],
                    (unsigned long long)n[FSCOPE_COUNT_INDICES],
                    (unsigned long long)n[FSCOPE_COUNT_INSTANCES],
                    (unsigned long long)n[FSCOPE_COUNT_INDIRECT_DRAWS]);
            for (unsigned k = 0; k < BIND_KINDS; k++)
                fprintf(f, ",%llu,%llu", (unsigned long long)n[FSCOPE_COUNT_BINDS + k],
                        (unsigned long long)n[FSCOPE_COUNT_REDUNDANT + k]);
            fprintf(f, ",%llu,%llu,%llu,%llu", (unsigned long long)n[FSCOPE_COUNT_MEMORY_ALLOCS],
                    (unsigned long long)n[FSCOPE_COUNT_MEMORY_ALLOC_BYTES],
                    (unsigned long long)n[FSCOPE_COUNT_MEMORY_FREES],
                    (unsigned long long)n[FSCOPE_COUNT_DESCRIPTOR_SETS]);
            counters_write_csv_row(f, rec, fr);
            fputc('\n', f);
        }
        free(late);
        sched_index_free(&sched);
    }
}

static int summary_writer(FILE *f, const void *arg)
{
    write_summary_json(f, arg);
    return 0;
}

static int csv_writer(FILE *f, const void *arg)
{
    write_frames_csv(f, arg);
    return 0;
}

static int zones_writer(FILE *f, const void *arg)
{
    const struct run_stats *s = arg;
    zones_write_csv(f, s->rec);
    return 0;
}

static int trace_writer(FILE *f, const void *arg)
{
    const struct run_stats *s = arg;
    const struct trace_run run = { .hitches = &s->hitches, .engine = &s->engine,
                                   .frame_counters = true, .primary_log = s->primary_log };
    return trace_write_run(f, s->rec, &run);
}

static int threads_writer(FILE *f, const void *arg)
{
    const struct run_stats *s = arg;
    return threads_write_csv(f, s->rec);
}

static int text_writer(FILE *f, const void *arg)
{
    write_summary_text(f, arg);
    return 0;
}

struct report {
    struct run_stats stats;
    struct formats_run run;
};

/* What the other formats (formats.h) need of the run. */
static void formats_run_fill(const struct run_stats *s, struct formats_run *ret)
{
    const struct recording *rec = s->rec;
    memset(ret, 0, sizeof(*ret));
    ret->rec = rec;
    ret->app = rec->app;
    ret->device = rec->device_count ? rec->devices[0].name : "";
    ret->driver = rec->device_count ? rec->devices[0].driver : "";
    ret->pid = rec->pid;
    ret->evidence = s->evidence;
    ret->primary_log = s->primary_log;
    ret->verdict = s->frames ? verdict_name(s->run_verdict) : "none";
    ret->reason = s->reason;
    ret->frames = s->frames;
    ret->duration_s = s->duration_s;
    ret->fps = s->fps;
    const double frame_ms[5] = { s->mean_ms, s->p50_ms, s->p95_ms, s->p99_ms, s->max_ms };
    memcpy(ret->frame_ms, frame_ms, sizeof(frame_ms));
    ret->low_fps[0] = s->low1_fps;
    ret->low_fps[1] = s->low01_fps;
    for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++)
        ret->verdict_share[v] = s->basis_frames ? (double)s->verdict_frames[v] /
                                                  (double)s->basis_frames : 0;
    ret->gpu_timed = s->total.gpu_timed;
    memcpy(ret->budget_ms, s->budget_ms, sizeof(ret->budget_ms));
    ret->hitches = &s->hitches;
    ret->engine = &s->engine;
}

struct report *report_create(struct recording *rec)
{
    struct report *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    recording_compute_gpu_busy(rec);
    compute_stats(rec, &r->stats);
    engine_compute(rec, r->stats.frames, &r->stats.engine);
    formats_run_fill(&r->stats, &r->run);
    return r;
}

void report_destroy(struct report *r)
{
    if (!r)
        return;
    free(r->stats.evidence);
    hitches_free(&r->stats.hitches);
    engine_stats_finish(&r->stats.engine);
    free(r);
}

bool report_has_frames(const struct report *r)
{
    return r->stats.frames > 0;
}

static const struct {
    const char *name;  /* for --format */
    const char *file;  /* in a capture */
    capture_writer writer;
    bool uses_run;     /* takes the formats_run, else the run_stats */
} formats[REPORT_FORMAT_COUNT] = {
    [REPORT_TEXT] = { "text", NULL, text_writer, false },
    [REPORT_JSON] = { "json", "summary.json", summary_writer, false },
    [REPORT_CSV] = { "csv", "frames.csv", csv_writer, false },
    [REPORT_ZONES] = { "zones", "zones.csv", zones_writer, false },
    [REPORT_TRACE] = { "trace", "trace.json", trace_writer, false },
    [REPORT_THREADS] = { "threads", "threads.csv", threads_writer, false },
    [REPORT_PRESENTMON] = { "presentmon", "presentmon.csv", formats_write_presentmon, true },
    [REPORT_MANGOHUD] = { "mangohud", "mangohud.csv", formats_write_mangohud, true },
    [REPORT_HTML] = { "html", "report.html", formats_write_report_html, true },
};

bool report_format_parse(const char *name, enum report_format *ret)
{
    for (unsigned i = 0; i < REPORT_FORMAT_COUNT; i++) {
        if (strcasecmp(name, formats[i].name) == 0) {
            *ret = (enum report_format)i;
            return true;
        }
    }
    return false;
}

const char *report_format_name(enum report_format format)
{
    return format < REPORT_FORMAT_COUNT ? formats[format].name : "?";
}

int report_write(FILE *f, const struct report *r, enum report_format format)
{
    if (format >= REPORT_FORMAT_COUNT)
        return -EINVAL;
    int e = formats[format].writer(f, formats[format].uses_run ? (const void *)&r->run
                                                               : (const void *)&r->stats);
    if (e == 0 && (fflush(f) != 0 || ferror(f)))
        e = -(errno ? errno : EIO);
    return e;
}

struct bytes {
    const void *data;
    size_t len;
};

/* The recording, with holes where it is zero: the arena is sparse (pages never written, a
 * thread's unused ring and tree), and the file stays as small on disk as the data in it. */
static int bytes_writer(FILE *f, const void *arg)
{
    enum { BLOCK = 4096 };
    static const unsigned char zeros[BLOCK];
    const struct bytes *b = arg;
    const unsigned char *data = b->data;
    for (size_t at = 0; at < b->len; at += BLOCK) {
        size_t n = b->len - at < BLOCK ? b->len - at : BLOCK;
        if (memcmp(data + at, zeros, n) == 0) {
            if (fseeko(f, (off_t)n, SEEK_CUR) != 0)
                return -(errno ? errno : EIO);
        } else if (fwrite(data + at, 1, n, f) != n) {
            return -(errno ? errno : EIO);
        }
    }
    /* A hole at the end is made by the file's length. */
    if (fflush(f) != 0 || ftruncate(fileno(f), (off_t)b->len) != 0)
        return -(errno ? errno : EIO);
    return 0;
}

/* A path the user gave (FRAMESCOPE_OUTPUT, --output, FRAMESCOPE_SUMMARY) as a message shows
 * it: an escape sequence or a newline in it forges no line of the summary or the log. */
#define SHOWN_PATH_SIZE (4 * 4096 + 1)
static const char *shown_path(const char *path, char shown[SHOWN_PATH_SIZE])
{
    return fscope_text_printable(shown, SHOWN_PATH_SIZE, path, strlen(path));
}

void report_write_capture_line(FILE *f, const char *dir)
{
    char shown[SHOWN_PATH_SIZE];
    fprintf(f, "  capture     %s (%s", shown_path(dir, shown), REPORT_RECORDING_FILE);
    for (unsigned i = 0; i < REPORT_FORMAT_COUNT; i++)
        if (formats[i].file)
            fprintf(f, ", %s", formats[i].file);
    fputs(")\n", f);
}

int report_write_capture(const struct report *r, const void *recording, size_t recording_len,
                         const char *output_dir, FILE *summary)
{
    struct capture_dir dir;
    const char *why = "";
    const char *failed = NULL;
    struct bytes raw = { recording, recording_len };
    int e = capture_dir_begin(&dir, output_dir, &why);
    if (e == 0) {
        e = capture_dir_write(&dir, REPORT_RECORDING_FILE, bytes_writer, &raw);
        if (e != 0)
            failed = REPORT_RECORDING_FILE;
    }
    for (unsigned i = 0; e == 0 && i < REPORT_FORMAT_COUNT; i++) {
        if (!formats[i].file)
            continue;
        e = capture_dir_write(&dir, formats[i].file, formats[i].writer,
                              formats[i].uses_run ? (const void *)&r->run
                                                  : (const void *)&r->stats);
        if (e != 0)
            failed = formats[i].file;
    }
    if (e == 0)
        e = capture_dir_commit(&dir);
    else
        capture_dir_abort(&dir);
    if (e != 0) {
        char what[96] = "";
        if (why[0])
            snprintf(what, sizeof(what), " (%s)", why);
        else if (failed)
            snprintf(what, sizeof(what), " (writing %s)", failed);
        char shown[SHOWN_PATH_SIZE];
        shown_path(output_dir, shown);
        fscope_log(FSCOPE_LOG_ERROR, "could not write the capture to %s%s: %s; nothing of this "
                   "run was written there", shown, what, strerror(-e));
        if (summary)
            fprintf(summary, "  capture     NOT written to %s%s: %s\n", shown, what,
                    strerror(-e));
    } else if (summary) {
        report_write_capture_line(summary, output_dir);
    }
    return e;
}

static int summary_text_writer(FILE *f, const void *arg)
{
    fputs(arg, f);
    return 0;
}

int report_deliver(const struct report *r, const void *recording, size_t recording_len,
                   enum report_summary where, const char *summary_path, const char *output_dir,
                   FILE *err, int *ret_capture_error)
{
    *ret_capture_error = 0;
    char *text = NULL;
    size_t text_len = 0;
    FILE *summary = where == REPORT_SUMMARY_OFF    ? NULL
                    : where == REPORT_SUMMARY_PATH ? open_memstream(&text, &text_len)
                                                   : err;
    if (where == REPORT_SUMMARY_PATH && !summary)
        summary = err; /* out of memory: there rather than nowhere */
    if (summary)
        report_write(summary, r, REPORT_TEXT);
    int e = 0;
    if (output_dir && output_dir[0])
        *ret_capture_error = e = report_write_capture(r, recording, recording_len, output_dir,
                                                      summary);
    if (summary == err) {
        if (err)
            fflush(err);
    } else if (summary) {
        fclose(summary);
        /* Written whole (the capture line with it) or, on failure, printed there. */
        int w = capture_write_file(summary_path, summary_text_writer, text);
        if (w != 0) {
            char shown[SHOWN_PATH_SIZE];
            /* capture_write_file's own failures, said as what they mean for a summary */
            const char *why = w == -ENXIO     ? "nothing has it open for reading: a FIFO with no reader"
                              : w == -ETIMEDOUT ? "the FIFO's reader took nothing for 5 s"
                              : w == -EPIPE     ? "the FIFO's reader closed it"
                              : w == -ELOOP     ? "it is a symbolic link, which is not followed"
                                                : strerror(-w);
            fscope_log(FSCOPE_LOG_ERROR, "cannot write the summary to %s (%s); printing it here",
                       shown_path(summary_path, shown), why);
            if (err)
                fputs(text, err);
            if (e == 0)
                e = w;
        }
        free(text);
    }
    return e;
}
