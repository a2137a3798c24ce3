#include "frame.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunked.h"
#include "clock.h"
#include "counters.h"
#include "daemon_link.h"
#include "kernel.h"
#include "meta.h"
#include "sched_trace.h"
#include "recording.h"
#include "util/log.h"
#include "present/present.h"
#ifdef FSCOPE_HAVE_WAYLAND
#include "present/present-wl.h"
#endif
#ifdef FSCOPE_HAVE_X11
#include "present/present-x11.h"
#endif

/* The writers' limits; the recording's directory has room for every one of them. */
#define MAX_FRAME_LOGS 64
#define MAX_SPAN_LOGS 64

/* The recorded part is rec (label, surface, tally, frames); the rest is the recorder's. */
struct fscope_frame_log {
    struct rec_frame_log *rec;
    struct chunked *frames; /* &rec->frames */
    uint64_t last_close_ticks;
    uint64_t last_counts[FSCOPE_COUNT_COUNT];
    /* The closing thread's schedstat at the last close, for the next frame's deltas. */
    int last_kernel_tid;
    struct kernel_thread_view last_kernel;
    /* Its perf counters at the last close (tid 0: none read). */
    int last_counters_tid;
    struct counter_reading last_counters;
    /* Serialises drains: two swapchains of one surface (old and new) may be presented and
     * destroyed on different threads. Only ever try-locked on the present path. */
    pthread_mutex_t drain_lock;

    void *tracker; /* the presentation tracker of ops (Wayland or X11); NULL: none */
    const struct fscope_present_ops *ops;
    _Atomic uint32_t shown_refresh_mhz; /* of the output the latest presented frame was on */
    _Atomic uint64_t last_shown_ticks;
    struct frame_log_tracker_counts final_counts; /* of trackers already torn down */
};

struct fscope_span_log {
    struct rec_span_log *rec;
};

static _Atomic unsigned frame_log_count, span_log_count;
static void counts_snapshot(struct fscope_frame_log *log);
static struct fscope_frame_log *_Atomic frame_logs[MAX_FRAME_LOGS];

FSCOPE_EXPORT struct fscope_frame_log *fscope_frame_log_create(const char *label)
{
    unsigned index = atomic_fetch_add(&frame_log_count, 1);
    if (index >= MAX_FRAME_LOGS) {
        fscope_log(FSCOPE_LOG_WARN, "more than %d surfaces; frames of '%s' are not recorded",
                   MAX_FRAME_LOGS, label);
        return NULL;
    }
    struct fscope_frame_log *log = calloc(1, sizeof(*log));
    uint64_t offset;
    struct rec_frame_log *rec = log ? recording_object_new(sizeof(*rec), &offset) : NULL;
    if (!rec) {
        free(log);
        return NULL;
    }
    log->rec = rec;
    log->frames = &rec->frames;
    snprintf(rec->label, sizeof(rec->label), "%s", label ? label : "frames");
    chunked_init(log->frames, sizeof(struct fscope_frame));
    pthread_mutex_init(&log->drain_lock, NULL);
    recording_publish(REC_OBJ_FRAME_LOG, offset, sizeof(*rec));
    atomic_store(&frame_logs[index], log);
    /* Frames are coming: every thread of the app is worth watching from here. */
    kernel_sampler_start();
    daemon_link_start();
    return log;
}

FSCOPE_EXPORT void fscope_frame_log_open(struct fscope_frame_log *log, uint64_t now_ticks)
{
    if (!log || log->last_close_ticks)
        return;
    uint64_t discarded[FSCOPE_BLOCK_COUNT];
    fscope_thread_take_blocks(discarded);
    fscope_count_totals(log->last_counts);
    log->last_close_ticks = now_ticks;
}

static int span_start_compare(const void *a, const void *b)
{
    const struct fscope_block_span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Keeps at most FRAME_BLOCK_SPANS intervals (sorted by start) by joining the two nearest
 * neighbours into their hull, same kind first: only the report's GPU-overlap estimate of
 * such a hull is approximate, never the partition. */
static uint32_t spans_fit(struct fscope_block_span *spans, uint32_t n)
{
    while (n > FRAME_BLOCK_SPANS) {
        uint32_t best = 0;
        uint64_t best_gap = UINT64_MAX;
        for (int same_kind = 1; same_kind >= 0 && best_gap == UINT64_MAX; same_kind--) {
            for (uint32_t i = 0; i + 1 < n; i++) {
                if (same_kind && spans[i].kind != spans[i + 1].kind)
                    continue;
                uint64_t gap = spans[i + 1].start > spans[i].end ? spans[i + 1].start - spans[i].end
                                                                 : 0;
                if (gap < best_gap) {
                    best_gap = gap;
                    best = i;
                }
            }
        }
        if (spans[best + 1].end > spans[best].end)
            spans[best].end = spans[best + 1].end;
        memmove(&spans[best + 1], &spans[best + 2], (n - best - 2) * sizeof(*spans));
        n--;
    }
    return n;
}

/* Charges blocks to the frame [start, end) so that they partition it: the union of every
 * interval, an overlap (a block of another thread charged here during one of ours) counted
 * once, for the block that began first. Blocks whose interval was not kept are added after,
 * clamped to what is left. */
static void frame_charge_blocks(struct fscope_frame *frame, const uint64_t thread_ticks[],
                                struct fscope_block_span *spans, uint32_t n)
{
    uint64_t start = frame->start_ticks, end = frame->end_ticks;
    uint64_t unkept[FSCOPE_BLOCK_COUNT];
    memcpy(unkept, thread_ticks, sizeof(unkept));
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct fscope_block_span sp = spans[i];
        if (sp.from_thread) {
            uint64_t d = sp.end - sp.start;
            unkept[sp.kind] = unkept[sp.kind] > d ? unkept[sp.kind] - d : 0;
        }
        if (sp.start < start)
            sp.start = start;
        if (sp.end > end)
            sp.end = end;
        if (sp.end > sp.start)
            spans[kept++] = sp;
    }
    qsort(spans, kept, sizeof(*spans), span_start_compare);
    uint64_t covered_to = start, blocked = 0;
    for (uint32_t i = 0; i < kept; i++) {
        uint64_t from = spans[i].start > covered_to ? spans[i].start : covered_to;
        if (spans[i].end > from) {
            frame->block_ticks[spans[i].kind] += spans[i].end - from;
            blocked += spans[i].end - from;
            covered_to = spans[i].end;
        }
    }
    uint64_t frame_ticks = end - start;
    for (unsigned b = 0; b < FSCOPE_BLOCK_COUNT; b++) {
        uint64_t v = unkept[b];
        if (blocked + v > frame_ticks)
            v = frame_ticks - blocked;
        frame->block_ticks[b] += v;
        blocked += v;
    }
    uint32_t fit = spans_fit(spans, kept);
    for (uint32_t i = 0; i < fit; i++) {
        frame->block_span_start[i] = spans[i].start;
        frame->block_span_end[i] = spans[i].end;
        frame->block_span_kind[i] = spans[i].kind;
    }
    frame->block_span_count = (uint8_t)fit;
}

/* What the closing thread gathered since the last close, read once per close before the
 * frame is written; the log keeps it as the next frame's starting point. */
struct close_reading {
    uint64_t blocks[FSCOPE_BLOCK_COUNT];
    struct fscope_block_span spans[FSCOPE_THREAD_BLOCK_SPANS + FRAME_ORIGIN_SPANS];
    uint32_t span_count;
    uint8_t flags;
    uint64_t counts[FSCOPE_COUNT_COUNT];
    int tid;
    bool kernel; /* kv was read */
    struct kernel_thread_view kv;
    bool counted; /* counters were read */
    struct counter_reading counters;
};

/* The calling thread's blocks (and the swapchain's, from origin), frame flags, counts,
 * schedstat and perf counters. */
static void close_read(struct close_reading *r, const struct fscope_frame_origin *origin)
{
    r->span_count = 0;
    fscope_thread_take_block_spans(r->blocks, r->spans, &r->span_count);
    for (uint32_t i = 0; i < r->span_count; i++)
        r->spans[i].from_thread = true;
    for (uint32_t i = 0; origin && i < origin->span_count && i < FRAME_ORIGIN_SPANS; i++) {
        r->spans[r->span_count] = origin->spans[i];
        r->spans[r->span_count++].from_thread = false;
    }
    r->flags = fscope_thread_take_frame_flags();
    fscope_count_totals(r->counts);
    struct fscope_collector *self = fscope_thread_collector();
    r->kv = (struct kernel_thread_view){ 0 };
    r->kernel = kernel_thread_times(self, &r->kv);
    r->tid = self ? self->rec.tid : 0;
    r->counted = counters_read(self, &r->counters);
}

/* The frame's place: its index, interval and where it came from. */
static void frame_describe(struct fscope_frame *frame, const struct fscope_frame_log *log,
                           uint64_t now_ticks, const struct fscope_frame_origin *origin,
                           uint8_t flags)
{
    frame->index = chunked_count(log->frames);
    frame->output_index = -1;
    frame->start_ticks = log->last_close_ticks;
    frame->end_ticks = now_ticks;
    frame->swapchain_serial = origin ? origin->swapchain_serial : 0;
    frame->device_id = origin ? origin->device_id : 0;
    frame->present_mode = origin ? origin->present_mode : -1;
    frame->cap_flags = flags;
}

/* The app's counts since the last close, and the waits of every thread minus the presenting
 * thread's own. */
static void frame_charge_counts(struct fscope_frame *frame, const struct fscope_frame_log *log,
                                const struct close_reading *r)
{
    for (unsigned k = 0; k < FSCOPE_COUNT_COUNT; k++)
        frame->counts[k] = r->counts[k] - log->last_counts[k];
    static const unsigned wait_count[3] = { FSCOPE_COUNT_WAIT_FENCE_TICKS,
                                            FSCOPE_COUNT_WAIT_SEMAPHORE_TICKS,
                                            FSCOPE_COUNT_WAIT_IDLE_TICKS };
    static const unsigned wait_block[3] = { FSCOPE_BLOCK_FENCE, FSCOPE_BLOCK_SEMAPHORE,
                                            FSCOPE_BLOCK_IDLE };
    for (unsigned k = 0; k < 3; k++) {
        uint64_t all = frame->counts[wait_count[k]], own = r->blocks[wait_block[k]];
        frame->other_wait_ticks[k] = all > own ? all - own : 0;
    }
}

/* Schedstat deltas, only when the same thread closed the previous frame. */
static void frame_charge_kernel(struct fscope_frame *frame, const struct fscope_frame_log *log,
                                const struct close_reading *r)
{
    const struct kernel_thread_view *kv = &r->kv, *lk = &log->last_kernel;
    if (!r->kernel || log->last_kernel_tid != r->tid || kv->oncpu_ns < lk->oncpu_ns ||
        kv->runnable_ns < lk->runnable_ns)
        return;
    frame->kernel_valid = 1;
    frame->kernel_tid = r->tid;
    frame->kernel_oncpu_ns = kv->oncpu_ns - lk->oncpu_ns;
    frame->kernel_runnable_ns = kv->runnable_ns - lk->runnable_ns;
    frame->kernel_major_faults = (uint32_t)(kv->major_faults - lk->major_faults);
    frame->kernel_block_reads = (uint32_t)(kv->block_reads - lk->block_reads);
    frame->kernel_preempted = (uint32_t)(kv->preempted - lk->preempted);
    frame->kernel_waits = (uint32_t)(kv->waits - lk->waits);
}

/* Perf counts that cover the whole frame, or none: a group the kernel multiplexed counted
 * only part of it. */
static void frame_charge_counters(struct fscope_frame *frame, const struct fscope_frame_log *log,
                                  const struct close_reading *r)
{
    const struct counter_reading *now = &r->counters, *last = &log->last_counters;
    if (!r->counted || log->last_counters_tid != r->tid || now->enabled_ns <= last->enabled_ns ||
        now->running_ns - last->running_ns != now->enabled_ns - last->enabled_ns)
        return;
    frame->counters_valid = now->counted & last->counted;
    for (unsigned k = 0; k < FRAME_COUNTERS; k++)
        frame->counter_values[k] = now->values[k] - last->values[k];
}

/* Right before the present goes down: Wayland's feedback binds to its commit; X11's
 * completion carries the present's serial on its swapchain. */
static void frame_request_feedback(struct fscope_frame *frame, struct fscope_frame_log *log,
                                   const struct fscope_frame_origin *origin)
{
    if (!log->tracker)
        return;
    switch (log->ops->request(log->tracker, frame->index,
                              origin ? origin->swapchain_presents : 0)) {
    case FSCOPE_WL_REQUESTED:
        frame->present_state = FRAME_PRESENT_PENDING;
        atomic_store_explicit(&log->rec->tracked, 1, memory_order_relaxed);
        break;
    case FSCOPE_WL_NOT_READY:
        /* Its set-up runs on its own thread: not done yet (or failed). */
        frame->present_state = FRAME_PRESENT_UNTRACKED;
        break;
    default:
        frame->present_state = FRAME_PRESENT_REQUEST_FAILED;
    }
}

/* The next frame starts here, from what this close read. */
static void close_remember(struct fscope_frame_log *log, uint64_t now_ticks,
                           const struct close_reading *r)
{
    log->last_close_ticks = now_ticks;
    memcpy(log->last_counts, r->counts, sizeof(r->counts));
    log->last_kernel_tid = r->kernel ? r->tid : 0;
    if (r->tid && atomic_load_explicit(&fscope_sched_closer_tid, memory_order_relaxed) != r->tid)
        atomic_store_explicit(&fscope_sched_closer_tid, r->tid, memory_order_relaxed);
    atomic_fetch_add_explicit(&fscope_sched_frames, 1, memory_order_relaxed);
    log->last_kernel = r->kv;
    log->last_counters_tid = r->counted ? r->tid : 0;
    if (r->counted)
        log->last_counters = r->counters;
}

FSCOPE_EXPORT struct fscope_frame *fscope_frame_log_close(struct fscope_frame_log *log,
                                                          uint64_t now_ticks,
                                                          const struct fscope_frame_origin *origin)
{
    if (!log)
        return NULL;
    struct close_reading reading;
    close_read(&reading, origin);

    struct fscope_frame *frame = NULL;
    if (log->last_close_ticks && now_ticks >= log->last_close_ticks)
        frame = chunked_next(log->frames);
    if (frame) {
        frame_describe(frame, log, now_ticks, origin, reading.flags);
        frame_charge_blocks(frame, reading.blocks, reading.spans, reading.span_count);
        frame_charge_counts(frame, log, &reading);
        frame_charge_kernel(frame, log, &reading);
        frame_charge_counters(frame, log, &reading);
        frame_request_feedback(frame, log, origin);
        chunked_publish(log->frames);
    }
    close_remember(log, now_ticks, &reading);
    clock_refine();
    return frame;
}

FSCOPE_EXPORT void fscope_frame_log_set_surface(struct fscope_frame_log *log,
                                                enum frame_surface kind)
{
    if (log)
        atomic_store(&log->rec->surface, kind);
}

/* The reason a surface's presentation is not known, for readers. */
static void set_untracked_why(struct fscope_frame_log *log, const char *why)
{
    snprintf(log->rec->untracked_why, sizeof(log->rec->untracked_why), "%s", why);
}

FSCOPE_EXPORT void fscope_frame_log_untrackable(struct fscope_frame_log *log, const char *why)
{
    if (log && !log->rec->untracked_why[0])
        set_untracked_why(log, why);
}

_Static_assert(FSCOPE_PRESENT_MAX_OUTPUTS <= REC_MAX_OUTPUTS,
               "every output a tracker knows is recorded, so its frames' output index names one");

/* The trackers' sink: the outputs they learn go into the recording, in its own format
 * (analysis may run in another process). */
static void record_tracker_outputs(void *ctx, const struct fscope_output_info *outputs,
                                   size_t count)
{
    struct rec_output recorded[REC_MAX_OUTPUTS];
    (void)ctx;
    if (count > REC_MAX_OUTPUTS)
        count = REC_MAX_OUTPUTS;
    for (size_t i = 0; i < count; i++) {
        snprintf(recorded[i].name, sizeof(recorded[i].name), "%.63s", outputs[i].name);
        recorded[i].width = outputs[i].width;
        recorded[i].height = outputs[i].height;
        recorded[i].refresh_mhz = outputs[i].refresh_mhz;
        recorded[i].scale = outputs[i].scale;
    }
    record_outputs(recorded, count);
}

static const struct fscope_present_sink recording_sink = { .outputs = record_tracker_outputs };

void frame_logs_record_wl_outputs(void)
{
#ifdef FSCOPE_HAVE_WAYLAND
    struct fscope_output_info outputs[FSCOPE_PRESENT_MAX_OUTPUTS];
    size_t count = fscope_wl_outputs(outputs, FSCOPE_PRESENT_MAX_OUTPUTS);
    record_tracker_outputs(NULL, outputs, count);
#endif
}

/* Starts tracking with a tracker create() returned (NULL: why says why). The tracker's set-up
 * runs on its own thread; tracked is set by the first feedback actually requested, and until
 * then the tracker's why() is the surface's. */
static bool track_with(struct fscope_frame_log *log, void *tracker,
                       const struct fscope_present_ops *ops, const char *why)
{
    if (!tracker) {
        fscope_frame_log_untrackable(log, why[0] ? why : "the tracker could not start");
        return false;
    }
    log->tracker = tracker;
    log->ops = ops;
    log->rec->untracked_why[0] = '\0';
    return true;
}

FSCOPE_EXPORT bool fscope_frame_log_track_wayland(struct fscope_frame_log *log,
                                                  struct wl_display *display,
                                                  struct wl_surface *surface)
{
    if (!log || log->tracker)
        return log != NULL;
#ifdef FSCOPE_HAVE_WAYLAND
    char why[160] = "";
    void *t = fscope_wl_tracker_create(display, surface, &recording_sink, why, sizeof(why));
    return track_with(log, t, &fscope_wl_present_ops, why);
#else
    (void)display;
    (void)surface;
    return track_with(log, NULL, NULL, "framescope was built without Wayland support");
#endif
}

FSCOPE_EXPORT bool fscope_frame_log_track_x11(struct fscope_frame_log *log, uint32_t window)
{
    if (!log || log->tracker)
        return log != NULL;
#ifdef FSCOPE_HAVE_X11
    char why[160] = "";
    void *t = fscope_x11_tracker_create(NULL, window, &recording_sink, why, sizeof(why));
    return track_with(log, t, &fscope_x11_present_ops, why);
#else
    (void)window;
    return track_with(log, NULL, NULL,
                      "framescope was built without X11 (xcb-present, xcb-randr) support");
#endif
}

static void apply_feedback(struct fscope_frame_log *log, const struct fscope_present_feedback *fb)
{
    if (fb->present_id >= chunked_count(log->frames))
        return;
    struct fscope_frame *f = chunked_at(log->frames, fb->present_id);
    f->present_state = fb->outcome == FSCOPE_PRESENT_PRESENTED ? FRAME_PRESENT_PRESENTED
                       : fb->outcome == FSCOPE_PRESENT_DISCARDED ? FRAME_PRESENT_DISCARDED
                                                                 : FRAME_PRESENT_PENDING;
    if (fb->outcome == FSCOPE_PRESENT_PRESENTED)
        f->presented_ticks = fscope_mono_ns_to_ticks(fb->presented_mono_ns);
    f->refresh_ns = fb->refresh_ns;
    f->present_seq = fb->seq;
    f->present_flags = (uint8_t)fb->flags;
    f->output_index = (int16_t)fb->output_index;
    f->output_ambiguous = fb->output_ambiguous;
    if (fb->outcome == FSCOPE_PRESENT_PRESENTED) {
        /* The output's own mode when we know which output and it has one (Xvfb's has
         * none); else what the compositor claims (X11: the refresh measured from MSCs). */
        uint32_t mhz = 0;
        if (fb->output_index >= 0 && !fb->output_ambiguous)
            mhz = fb->output_refresh_mhz;
        if (!mhz && fb->refresh_ns)
            mhz = (uint32_t)(1e12 / fb->refresh_ns);
        atomic_store_explicit(&log->shown_refresh_mhz, mhz, memory_order_relaxed);
        atomic_store_explicit(&log->last_shown_ticks, f->presented_ticks, memory_order_relaxed);
    }
}

FSCOPE_EXPORT double fscope_frame_log_shown_refresh_hz(struct fscope_frame_log *log)
{
    return log ? atomic_load_explicit(&log->shown_refresh_mhz, memory_order_relaxed) / 1000.0 : 0;
}

FSCOPE_EXPORT uint64_t fscope_frame_log_last_shown_ticks(struct fscope_frame_log *log)
{
    return log ? atomic_load_explicit(&log->last_shown_ticks, memory_order_relaxed) : 0;
}

FSCOPE_EXPORT void fscope_frame_log_drain(struct fscope_frame_log *log)
{
    if (!log || !log->tracker)
        return;
    struct fscope_present_feedback fbs[32];
    size_t n;
    /* Whoever holds the lock drains; a present that finds it taken drains next time. */
    if (pthread_mutex_trylock(&log->drain_lock) != 0)
        return;
    while ((n = log->ops->drain(log->tracker, fbs, 32)) > 0)
        for (size_t i = 0; i < n; i++)
            apply_feedback(log, &fbs[i]);
    pthread_mutex_unlock(&log->drain_lock);
}

FSCOPE_EXPORT void fscope_frame_log_presented(struct fscope_frame_log *log,
                                              struct fscope_frame *frame, uint64_t now_ticks,
                                              bool call_failed)
{
    if (frame) {
        frame->present_return_ticks = now_ticks;
        /* Only a frame that asked for feedback: its request is the one left without a commit. */
        if (call_failed && frame->present_state == FRAME_PRESENT_PENDING) {
            frame->present_state = FRAME_PRESENT_CALL_FAILED;
            /* Nothing was committed: its feedback would bind to the next commit. */
            if (log->tracker)
                log->ops->present_failed(log->tracker, frame->index);
        }
    }
    fscope_frame_log_drain(log);
}

static void counts_add(struct frame_log_tracker_counts *sum, const struct fscope_wl_counts *c)
{
    /* An orphaned request (fscope_wl_tracker_present_failed) belongs to a present that
     * failed: it is counted apart, as its CALL_FAILED frame is in the frames' tally. */
    sum->requested += c->requested - c->orphaned;
    sum->orphaned += c->orphaned;
    sum->presented += c->presented;
    sum->discarded += c->discarded;
    sum->pending += c->pending;
    sum->lost += c->lost;
    sum->failed += c->failed;
}

/* The tracker's tally as the frames have it: its thread may finish a present between our
 * drain and its count, so count, then drain again, until nothing came in between. Called with
 * drain_lock held. */
static void counts_agreed(struct fscope_frame_log *log, struct fscope_wl_counts *c)
{
    struct fscope_present_feedback fbs[32];
    size_t n;
    do {
        log->ops->counts(log->tracker, c);
        n = log->ops->drain(log->tracker, fbs, 32);
        for (size_t i = 0; i < n; i++)
            apply_feedback(log, &fbs[i]);
    } while (n);
}

/* Copies the tracker's tally (of torn-down trackers plus the live one) into the recording,
 * for readers: a seqlock, so a reader after a kill mid-store knows the copy is torn. Only at
 * teardown and exit, never on the present path: the tally is a cross-check of a run that
 * ended, and a killed run's is not cross-checked. */
static void counts_snapshot(struct fscope_frame_log *log)
{
    struct frame_log_tracker_counts sum = log->final_counts;
    if (log->tracker) {
        struct fscope_wl_counts c;
        counts_agreed(log, &c);
        counts_add(&sum, &c);
        /* A tracker that is not tracking (set-up failed or unfinished, or it stopped asking)
         * says why. */
        char why[sizeof(log->rec->untracked_why)];
        if (log->ops->why(log->tracker, why, sizeof(why)))
            memcpy(log->rec->untracked_why, why, sizeof(why));
    }
    struct rec_frame_log *rec = log->rec;
    atomic_fetch_add_explicit(&rec->counts_seq, 1, memory_order_acq_rel);
    atomic_thread_fence(memory_order_release);
    rec->counts = sum;
    atomic_store_explicit(&rec->counts_valid, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&rec->counts_seq, 1, memory_order_release);
}

FSCOPE_EXPORT void fscope_frame_log_untrack(struct fscope_frame_log *log)
{
    if (!log || !log->tracker)
        return;
    struct fscope_wl_counts c, at_destroy;
    pthread_mutex_lock(&log->drain_lock);
    /* The tally as the frames have it; what finishes after this is in neither. */
    counts_agreed(log, &c);
    char why[sizeof(log->rec->untracked_why)];
    bool stopped = log->ops->why(log->tracker, why, sizeof(why));
    log->ops->destroy_with_counts(log->tracker, &at_destroy);
    c.display_gone = at_destroy.display_gone;
    log->tracker = NULL;
    /* Never ready (set-up failed or unfinished), or it stopped asking: the tracker's reason is
     * the surface's. */
    if (stopped && !log->rec->untracked_why[0])
        set_untracked_why(log, why);
    if (c.display_gone)
        fscope_log(FSCOPE_LOG_WARN, "%s: the app disconnected its Wayland display before "
                   "destroying the surface; %llu presentation feedback(s) left pending",
                   log->rec->label, (unsigned long long)c.pending);
    /* Several trackers over a surface's life (recreated surfaces) add up. */
    counts_add(&log->final_counts, &c);
    counts_snapshot(log);
    pthread_mutex_unlock(&log->drain_lock);
}

void frame_logs_finish(void)
{
    for (unsigned i = 0; i < MAX_FRAME_LOGS; i++) {
        struct fscope_frame_log *log = atomic_load(&frame_logs[i]);
        if (!log)
            continue;
        pthread_mutex_lock(&log->drain_lock);
        counts_snapshot(log); /* drains what is finished */
        pthread_mutex_unlock(&log->drain_lock);
    }
}

FSCOPE_EXPORT _Atomic uint64_t fscope_frame_marks;
FSCOPE_EXPORT _Atomic uint64_t fscope_frame_mark_ticks;

FSCOPE_EXPORT void fscope_frame_mark(void)
{
    uint64_t now = fscope_now();
    struct fscope_collector *c = fscope_thread_collector();
    if (!c)
        return;
    if (!c->mark_log) {
        char label[64];
        snprintf(label, sizeof(label), "frame marks (%s)", c->rec.name[0] ? c->rec.name : "thread");
        c->mark_log = fscope_frame_log_create(label);
    }
    fscope_frame_log_close(c->mark_log, now, NULL);
    atomic_store_explicit(&fscope_frame_mark_ticks, now, memory_order_relaxed);
    atomic_fetch_add_explicit(&fscope_frame_marks, 1, memory_order_release);
}

FSCOPE_EXPORT struct fscope_span_log *fscope_span_log_create(void)
{
    if (atomic_fetch_add(&span_log_count, 1) >= MAX_SPAN_LOGS)
        return NULL;
    struct fscope_span_log *log = calloc(1, sizeof(*log));
    uint64_t offset;
    struct rec_span_log *rec = log ? recording_object_new(sizeof(*rec), &offset) : NULL;
    if (!rec) {
        free(log);
        return NULL;
    }
    log->rec = rec;
    chunked_init(&rec->spans, sizeof(struct gpu_span));
    recording_publish(REC_OBJ_SPAN_LOG, offset, sizeof(*rec));
    return log;
}

FSCOPE_EXPORT void fscope_span_log_add(struct fscope_span_log *log, uint32_t device_id,
                                       uint64_t begin_ticks, uint64_t end_ticks, uint32_t flags)
{
    if (!log || end_ticks <= begin_ticks)
        return;
    struct gpu_span *s = chunked_next(&log->rec->spans);
    if (!s)
        return;
    s->begin = begin_ticks;
    s->end = end_ticks;
    s->device_id = device_id;
    s->flags = flags;
    chunked_publish(&log->rec->spans);
}
