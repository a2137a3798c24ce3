#include "run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "stats.h"
#include "values.h"


/* Average fps over the slowest share of the n frames times holds. */
static double low_fps(const struct values *times, uint64_t n, double share)
{
    uint64_t k = (uint64_t)ceil(share * (double)n);
    if (k < 1)
        k = 1;
    double sum = values_sum_from(times, n - k);
    return sum > 0 ? 1e9 * (double)k / sum : 0;
}

/* Display evidence of every log, in log order (NULL when memory ran out), and with each
 * frame, what woke it and how late it was shown. */
static struct display_evidence *evidence_all(struct recording *rec,
                                             const struct presentation_stats *p,
                                             const struct sched_index *sched)
{
    unsigned logs = rec->log_count;
    struct display_evidence *ev = calloc(logs ? logs : 1, sizeof(*ev));
    struct span_index spans;
    span_index_build(rec, &spans);
    for (unsigned l = 0; ev && l < logs; l++) {
        display_evidence_compute(rec, &rec->logs[l], p->logs ? &p->logs[l] : NULL, &ev[l]);
        display_evidence_wakes(rec, &rec->logs[l], sched, &ev[l]);
        /* How late each frame was shown reads its wakes: kept with it for every output. */
        late_refreshes(rec, &spans, &rec->logs[l], &ev[l]);
    }
    span_index_free(&spans);
    return ev;
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
                     "frame (%s)", PCT(waits), PCT(t->present_overhead),
                     s->sampling.corrected ? "in the frames GPU timing left out, which it did "
                                             "not slow down"
                     : s->sampling.undecided ? "in the frames GPU timing left out: the few it "
                                               "timed could not decide"
                                           : "GPU timing off: how busy the GPU was is not "
                                             "measured");
        else
            snprintf(s->reason, sizeof(s->reason), "GPU busy %.1f%% of the frame; blocked while "
                     "the GPU worked %.1f%% (in acquire/present %.1f%%, in fence/semaphore/idle "
                     "waits %.1f%%)", PCT(t->gpu_busy), PCT(gpu_in_display + t->gpu_in_waits),
                     PCT(gpu_in_display), PCT(t->gpu_in_waits));
        break;
    case FSCOPE_VERDICT_CAP:
        if (t->blocked_timer > t->block[FSCOPE_BLOCK_CAP])
            snprintf(s->reason, sizeof(s->reason), "the app's own limiter: %.1f%% of the frame "
                     "asleep outside Vulkan %s, at a steady cadence of its own (every %.2f ms; "
                     "%s), %.1f%% in the frame cap, CPU work %.1f%%, GPU busy %.1f%%",
                     PCT(t->blocked_timer),
                     s->wake_chain_frames >= s->wake_cadence_frames
                         ? "until an interrupt (its timer) woke it" : "between frames",
                     ev ? ev->app_interval_ms : 0.0,
                     s->wake_chain_frames >= s->wake_cadence_frames
                         ? "the wake-up chain"
                         : "no wake-up chain: not the cadence it is shown at",
                     PCT(t->block[FSCOPE_BLOCK_CAP]),
                     PCT(t->cpu - t->blocked_timer - t->blocked_display), PCT(t->gpu_busy));
        else
            snprintf(s->reason, sizeof(s->reason), "%.1f%% of the frame waiting in the frame cap",
                     PCT(t->block[FSCOPE_BLOCK_CAP]));
        break;
    case FSCOPE_VERDICT_DISPLAY:
        if (t->blocked_display > t->display_wait) {
            char by[96];
            if (s->wake_chain_frames >= s->wake_cadence_frames)
                snprintf(by, sizeof(by), "until %s (another process: the compositor) woke it; "
                         "the wake-up chain", s->display_waker[0] ? s->display_waker : "?");
            else
                snprintf(by, sizeof(by), "no wake-up chain: the app presents at the cadence "
                         "it is shown");
            snprintf(s->reason, sizeof(s->reason), "%.1f%% of the frame asleep outside Vulkan "
                     "waiting for the display (%s), %.1f%% in acquire/present with the GPU "
                     "idle, GPU busy %.1f%%, CPU work %.1f%%; %s: %s", PCT(t->blocked_display),
                     by, PCT(t->display_wait), PCT(t->gpu_busy),
                     PCT(t->cpu - t->blocked_timer - t->blocked_display),
                     ev && ev->confirmed ? "confirmed" : "not confirmed", ev ? ev->why : "");
        } else {
            snprintf(s->reason, sizeof(s->reason), "%.1f%% of the frame waiting for the display "
                     "in acquire/present with the GPU idle, GPU busy %.1f%%, CPU work %.1f%%; "
                     "%s: %s", PCT(t->display_wait), PCT(t->gpu_busy), PCT(t->cpu),
                     ev && ev->confirmed ? "confirmed" : "not confirmed", ev ? ev->why : "");
        }
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
        else if (s->sampling.corrected || s->sampling.undecided)
            snprintf(busy, sizeof(busy), "GPU busy %.1f%% (%s)",
                     100.0 * s->budget_ms[1] / (frame / 1e6 / (double)s->basis_frames),
                     s->sampling.corrected ? "of the timed frames, corrected"
                                           : "of the timed frames");
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
                     recording_thread_label(s->rec, s->kernel_tid, thread, sizeof(thread)),
                     100.0 * (double)s->cpu_busy / cpu,
                     100.0 * (double)s->cpu_starved / cpu, 100.0 * (double)s->cpu_blocked / cpu);
        }
        if (t->blocked_thread > 0 && s->thread_waker[0]) {
            size_t used = strlen(split);
            snprintf(split + used, sizeof(split) - used, " (%.1f%% until its thread %s, tid "
                     "%d, woke it: a lock or a queue)", PCT(t->blocked_thread), s->thread_waker,
                     s->thread_waker_tid);
        }
        if (s->counters.ipc >= 0) {
            size_t used = strlen(split);
            snprintf(split + used, sizeof(split) - used, "%sIPC %.2f", used ? ", " : "; ",
                     s->counters.ipc);
        }
        snprintf(s->reason, sizeof(s->reason), "CPU work %.1f%% of the frame%s, %s, blocked "
                 "%.1f%%%s", PCT(t->cpu), overhead, busy, PCT(t->frame - t->cpu), split);
        char brief_overhead[64] = "";
        if (t->present_overhead > 0)
            snprintf(brief_overhead, sizeof(brief_overhead), ", present overhead %.1f%%",
                     PCT(t->present_overhead));
        snprintf(s->brief_reason, sizeof(s->brief_reason), "CPU work %.1f%% of the frame%s, %s, "
                 "blocked %.1f%%%s", PCT(t->cpu), brief_overhead, busy, PCT(t->frame - t->cpu),
                 split);
        return;
    }
    }
#undef PCT
    snprintf(s->brief_reason, sizeof(s->brief_reason), "%s", s->reason);
}

/* Adds frame b to total, the sums that need the GPU's time with the rest. */
static void budget_add(struct frame_budget_ns *total, const struct frame_budget_ns *b)
{
    total->frame = ns_sum(total->frame, b->frame);
    total->cpu = ns_sum(total->cpu, b->cpu);
    total->gpu_busy = ns_sum(total->gpu_busy, b->gpu_busy);
    for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++) {
        total->block[k] = ns_sum(total->block[k], b->block[k]);
        total->block_gpu[k] = ns_sum(total->block_gpu[k], b->block_gpu[k]);
    }
    total->display_wait = ns_sum(total->display_wait, b->display_wait);
    total->present_overhead = ns_sum(total->present_overhead, b->present_overhead);
    total->gpu_in_waits = ns_sum(total->gpu_in_waits, b->gpu_in_waits);
    total->gpu_idle_in_waits = ns_sum(total->gpu_idle_in_waits, b->gpu_idle_in_waits);
    for (unsigned k = 0; k < 3; k++)
        total->other_wait[k] = ns_sum(total->other_wait[k], b->other_wait[k]);
    total->cpu_blocked = ns_sum(total->cpu_blocked, b->cpu_blocked);
    total->blocked_display = ns_sum(total->blocked_display, b->blocked_display);
    total->blocked_timer = ns_sum(total->blocked_timer, b->blocked_timer);
    total->blocked_thread = ns_sum(total->blocked_thread, b->blocked_thread);
}

/* The waker of the most sleep of one kind, by name: a few candidates, the first kept. */
struct waker_tally {
    struct {
        char comm[16];
        int tid;
        int64_t ns;
    } top[8];
};

static void waker_add(struct waker_tally *t, const struct frame_budget_ns *b, unsigned kind,
                      int64_t ns)
{
    if (ns <= 0)
        return;
    for (unsigned i = 0; i < 8; i++) {
        if (!t->top[i].ns || (t->top[i].tid == b->waker_tid[kind] &&
                               !strncmp(t->top[i].comm, b->waker_comm[kind],
                                        sizeof(t->top[i].comm)))) {
            t->top[i].tid = b->waker_tid[kind];
            memcpy(t->top[i].comm, b->waker_comm[kind], sizeof(t->top[i].comm));
            t->top[i].ns = ns_sum(t->top[i].ns, ns);
            return;
        }
    }
}

static int waker_best(const struct waker_tally *t, char *comm, size_t len)
{
    unsigned best = 0;
    for (unsigned i = 1; i < 8; i++)
        if (t->top[i].ns > t->top[best].ns)
            best = i;
    size_t n = strnlen(t->top[best].comm, sizeof(t->top[best].comm));
    n = n < len ? n : len - 1;
    memcpy(comm, t->top[best].comm, n);
    comm[n] = '\0';
    return t->top[best].tid;
}

/* The verdict that held the most time. */
static enum fscope_verdict verdict_by_time(const int64_t *verdict_ns)
{
    unsigned best = 0;
    for (unsigned v = 1; v < FSCOPE_VERDICT_COUNT; v++)
        if (verdict_ns[v] > verdict_ns[best])
            best = v;
    return (enum fscope_verdict)best;
}

/* Timed frames against the others (issue 34): GPU timing has a cost of its own, which shows
 * in the frames it times (on lavapipe a timestamp flushes the rasterizer: vkcube on Xvfb ran
 * its timed frames at 1.98 ms against 1.39 for the rest, and its verdict flipped between
 * runs). The test is Mann-Whitney's, by ranks, not the medians' spread: a few dozen timed
 * frames with a long tail (their quartiles 1.61 and 3.82 ms) hide a shift in the medians'
 * standard errors that the ranks show at once (z 5.7). Where the timed frames are slower by
 * z > SAMPLING_BIAS_Z and by SAMPLING_BIAS_MIN of the others' median at least, the untimed
 * frames carry the verdict and the budget's blocks, by the rules for frames without GPU
 * time, and GPU busy is the timed frames' less the difference of the medians. */
#define SAMPLING_BIAS_Z 2.0
#define SAMPLING_BIAS_MIN 0.05
#define SAMPLING_GROUP_MIN 8
static void sampling_compare(struct run_stats *s, const struct values *timed_ns,
                             const struct values *untimed_ns)
{
    struct sampling_bias *sb = &s->sampling;
    uint64_t timed = values_count(timed_ns), untimed = values_count(untimed_ns);
    sb->timed_frames = timed;
    sb->untimed_frames = untimed;
    if (timed < SAMPLING_GROUP_MIN || untimed < SAMPLING_GROUP_MIN)
        return;
    sb->timed_median_ms = (double)values_median_i64(timed_ns) / 1e6;
    sb->untimed_median_ms = (double)values_median_i64(untimed_ns) / 1e6;
    sb->difference_ms = sb->timed_median_ms - sb->untimed_median_ms;
    double n1 = (double)timed, n2 = (double)untimed;
    double u = values_u_statistic(timed_ns, untimed_ns);
    sb->z = (u - n1 * n2 / 2) / sqrt(n1 * n2 * (n1 + n2 + 1) / 12);
    sb->compared = true;
    sb->corrected = sb->z > SAMPLING_BIAS_Z &&
                    sb->difference_ms > SAMPLING_BIAS_MIN * sb->untimed_median_ms;
}

/* Whether the timed frames decide between their two leading verdicts (by time): the margin
 * between the two shares against twice its standard error over the timed frames, (p1 + p2 -
 * (p1 - p2)^2) / n as multinomial shares have it. A few dozen timed frames of an app that
 * sits between two causes (vkcube on Xvfb: its GPU busy 50-65% of the frame, the rest in
 * present) called identical runs cpu-, then gpu-bound; where they cannot decide and the
 * untimed frames' verdict is one of the two, the untimed frames, hundreds of times as many,
 * carry it. */
static void sampling_decided(struct sampling_bias *sb, const int64_t *verdict_ns)
{
    double all = 0;
    for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++)
        all += (double)verdict_ns[v];
    if (all <= 0)
        return;
    unsigned first = sb->timed_verdict, second = first == 0 ? 1 : 0;
    for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++)
        if (v != first && verdict_ns[v] > verdict_ns[second])
            second = v;
    double p1 = (double)verdict_ns[first] / all, p2 = (double)verdict_ns[second] / all;
    sb->timed_margin = p1 - p2;
    sb->timed_margin_se = sqrt((p1 + p2 - sb->timed_margin * sb->timed_margin) /
                               (double)sb->timed_frames);
    sb->undecided = sb->timed_margin < 2 * sb->timed_margin_se &&
                    sb->untimed_verdict == (enum fscope_verdict)second &&
                    sb->untimed_frames > sb->timed_frames;
}

void run_stats_compute(struct recording *rec, struct run_stats *s)
{
    memset(s, 0, sizeof(*s));
    s->rec = rec;
    presentation_compute(rec, &s->presentation);
    sched_index_build(rec, &s->sched);
    s->evidence = evidence_all(rec, &s->presentation, &s->sched);
    hitches_compute(rec, s->evidence, &s->hitches);
    unsigned logs = rec->log_count;
    for (unsigned l = 0; l < logs; l++)
        s->frames += rec->logs[l].frame_count;
    /* The surface of the presentation lines, so that the verdict's evidence states the same
     * cadences. */
    s->primary_log = presentation_primary_log(rec);
    s->total.gpu_timed = rec->gpu_timing;
    if (!s->frames)
        return;
    double submits = 0;
    for (unsigned l = 0; l < logs; l++) {
        struct frame_cursor c;
        if (!frame_cursor_open(&c, rec, &rec->logs[l]))
            continue;
        for (uint64_t i = 0; i < rec->logs[l].frame_count; i++) {
            const struct fscope_frame *f = frame_at(&c, i);
            s->unsampled_frames += f->gpu_unsampled != 0;
            submits += (double)f->counts[FSCOPE_COUNT_SUBMITS];
        }
        frame_cursor_close(&c);
    }
    /* With GPU timing sampled, the GPU-timed frames carry the budget and the verdict (the
     * others' GPU time is unknown); with none timed, every frame does, as without GPU timing. */
    bool sampled_basis = s->unsampled_frames && s->unsampled_frames < s->frames;
    s->basis_frames = sampled_basis ? s->frames - s->unsampled_frames : s->frames;
    if (s->unsampled_frames == s->frames)
        s->total.gpu_timed = false;
    s->zone_frames = s->frames;
    if (s->unsampled_frames) {
        if (submits > 0 && (double)rec->span_count < submits)
            s->zone_frames = (uint64_t)llround((double)s->frames * (double)rec->span_count /
                                               submits);
        if (!s->zone_frames)
            s->zone_frames = 1;
    }
    /* Every frame's time; with sampled timing, the timed frames' and the others' apart too,
     * for sampling_compare. */
    struct values times, groups[2];
    values_init_i64(&times);
    values_init_i64(&groups[0]);
    values_init_i64(&groups[1]);
    uint64_t first = UINT64_MAX, last = 0;
    double sum_ms = 0;
    int64_t verdict_ns[FSCOPE_VERDICT_COUNT] = { 0 }, untimed_verdict_ns[FSCOPE_VERDICT_COUNT] = { 0 };
    uint64_t untimed_verdict_frames[FSCOPE_VERDICT_COUNT] = { 0 };
    struct frame_budget_ns *total = &s->total, untimed_total = { 0 };
    struct waker_tally wakers[3] = { 0 }; /* display, timer, thread */
    for (unsigned l = 0; l < logs; l++) {
        const struct recording_log *log = &rec->logs[l];
        uint64_t count = log->frame_count;
        struct frame_cursor c;
        if (!frame_cursor_open(&c, rec, log))
            continue;
        for (uint64_t i = 0; i < count; i++) {
            const struct fscope_frame *f = frame_at(&c, i);
            struct frame_budget_ns b;
            frame_budget(rec, f, frame_extra_at(&c, i), s->evidence ? &s->evidence[l] : NULL,
                         &b);
            values_add_i64(&times, b.frame);
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
            enum fscope_verdict v = frame_verdict(&b);
            if (sampled_basis && f->gpu_unsampled) {
                /* Judged by the rules for frames without GPU time, in case they carry it. */
                budget_add(&untimed_total, &b);
                untimed_verdict_frames[v]++;
                untimed_verdict_ns[v] = ns_sum(untimed_verdict_ns[v], b.frame);
                if (sampled_basis)
                    values_add_i64(&groups[1], b.frame);
                continue;
            }
            if (sampled_basis)
                values_add_i64(&groups[0], b.frame);
            /* What needs the GPU's time, and the verdict, over the basis frames: */
            budget_add(total, &b);
            s->wake_chain_frames += b.wake_evidence == WAKE_EVIDENCE_CHAIN;
            s->wake_cadence_frames += b.wake_evidence == WAKE_EVIDENCE_CADENCE;
            waker_add(&wakers[0], &b, 0, b.blocked_display);
            waker_add(&wakers[1], &b, 1, b.blocked_timer);
            waker_add(&wakers[2], &b, 2, b.blocked_thread);
            s->verdict_frames[v]++;
            verdict_ns[v] = ns_sum(verdict_ns[v], b.frame);
            if (f->cap_flags & CAP_FLAG_MISSED)
                s->missed_by_verdict[v]++;
        }
        frame_cursor_close(&c);
    }
    counters_compute(rec, &s->counters);
    waker_best(&wakers[0], s->display_waker, sizeof(s->display_waker));
    waker_best(&wakers[1], s->timer_waker, sizeof(s->timer_waker));
    s->thread_waker_tid = waker_best(&wakers[2], s->thread_waker, sizeof(s->thread_waker));
    double frames = (double)s->frames;
    s->duration_s = recording_ns(rec, last - first) / 1e9;
    s->fps = s->duration_s > 0 ? frames / s->duration_s : 0;
    s->mean_ms = sum_ms / frames;
    uint64_t n = values_count(&times);
    if (values_finish(&times) && n) {
        uint64_t ranks[4] = { stats_rank(n, 0.50), stats_rank(n, 0.95), stats_rank(n, 0.99),
                              n - 1 };
        double at[4];
        values_at(&times, ranks, 4, at);
        s->p50_ms = at[0] / 1e6;
        s->p95_ms = at[1] / 1e6;
        s->p99_ms = at[2] / 1e6;
        s->max_ms = at[3] / 1e6;
        s->low1_fps = low_fps(&times, n, 0.01);
        s->low01_fps = low_fps(&times, n, 0.001);
    }
    values_free(&times);
    s->budget_ms[0] = ms_per_frame(s->all.cpu, s->frames);
    s->budget_ms[1] = ms_per_frame(total->gpu_busy, s->basis_frames);
    for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++)
        s->budget_ms[2 + k] = ms_per_frame(s->all.block[k], s->frames);
    for (unsigned k = 0; k < FSCOPE_COUNT_COUNT; k++)
        s->count_mean[k] /= frames;

    /* The run's verdict is the one that held the most time, not the most frames. */
    s->run_verdict = verdict_by_time(verdict_ns);
    if (sampled_basis && values_finish(&groups[0]) && values_finish(&groups[1]))
        sampling_compare(s, &groups[0], &groups[1]);
    values_free(&groups[0]);
    values_free(&groups[1]);
    struct sampling_bias *sb = &s->sampling;
    if (sb->compared) {
        sb->timed_verdict = s->run_verdict;
        sb->untimed_verdict = verdict_by_time(untimed_verdict_ns);
        sampling_decided(sb, verdict_ns);
    }
    sb->gpu_busy_timed_ms = s->budget_ms[1];
    if (sb->corrected) {
        /* GPU busy is the timed frames' less what timing added to them. */
        double busy_ms = s->budget_ms[1] - sb->difference_ms;
        s->budget_ms[1] = busy_ms > 0 ? busy_ms : 0;
    }
    if (sb->corrected || sb->undecided) {
        /* The untimed frames carry the verdict and the blocks. */
        *total = untimed_total;
        total->gpu_timed = false;
        s->basis_frames = sb->untimed_frames;
        memcpy(s->verdict_frames, untimed_verdict_frames, sizeof(s->verdict_frames));
        s->run_verdict = sb->untimed_verdict;
    }
    run_reason(s);
}


/* Accuracy over intervals between two releases at the same target, where the second release
 * waited (a missed deadline or a resync is reported separately: it was not the cap's doing). */
bool cap_compute(const struct run_stats *s, const struct recording_cap *cap,
                        struct cap_stats *ret)
{
    const struct recording *rec = s->rec;
    memset(ret, 0, sizeof(*ret));
    ret->cap = cap;
    struct sorter_cursor c;
    if (!cap->event_count || !sorter_cursor_open(&c, &cap->events))
        return false;
    struct values errs; /* microseconds */
    values_init_double(&errs);
    double sum_ms = 0;
    struct cap_event prev = { 0 };
    bool first = true;
    for (const struct cap_event *e; (e = sorter_next(&c)); prev = *e, first = false) {
        ret->waits++;
        ret->target_hz = 1e9 / e->target_ns;
        ret->resyncs += (e->flags & CAP_FLAG_RESYNC) != 0;
        ret->missed += (e->flags & CAP_FLAG_MISSED) != 0;
        if (first || (e->flags & (CAP_FLAG_MISSED | CAP_FLAG_RESYNC)))
            continue;
        if (prev.target_ns != e->target_ns)
            continue;
        double interval_ns = recording_ns(rec, e->release_ticks - prev.release_ticks);
        sum_ms += interval_ns / 1e6;
        values_add(&errs, fabs(interval_ns - e->target_ns) / 1e3);
        ret->intervals++;
    }
    sorter_cursor_close(&c);
    if (ret->intervals)
        ret->mean_interval_ms = sum_ms / (double)ret->intervals;
    if (ret->intervals && values_finish(&errs)) {
        const uint64_t ranks[3] = { stats_rank(ret->intervals, 0.50),
                                    stats_rank(ret->intervals, 0.99), ret->intervals - 1 };
        values_at(&errs, ranks, 3, ret->err_us);
    }
    values_free(&errs);
    /* What the frames that missed were bound by instead. */
    memcpy(ret->missed_by_verdict, s->missed_by_verdict, sizeof(ret->missed_by_verdict));
    return true;
}

void run_stats_finish(struct run_stats *s)
{
    free(s->evidence);
    sched_index_free(&s->sched);
    hitches_free(&s->hitches);
    engine_stats_finish(&s->engine);
    keep_finish(&s->keep);
    presentation_finish(&s->presentation);
}
