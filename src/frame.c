#include "frame.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunked.h"
#include "clock.h"
#include "log.h"
#ifdef FSCOPE_HAVE_WAYLAND
#include "present/present-wl.h"
#endif

#define MAX_FRAME_LOGS 64
#define MAX_SPAN_LOGS 64

struct fscope_frame_log {
    char label[64];
    struct chunked frames;
    uint64_t last_close_ticks;
    uint64_t last_counts[FSCOPE_COUNT_COUNT];

    struct fscope_wl_tracker *tracker;
    _Atomic uint32_t shown_refresh_mhz; /* of the output the latest presented frame was on */
    _Atomic uint64_t last_shown_ticks;
    uint32_t output_refresh_mhz[16];     /* the outputs' modes when tracking started */
    size_t output_count;
    bool tracked;          /* a tracker was ever running for this surface */
    char untracked_why[192];
    bool have_final_counts;
    struct frame_log_tracker_counts final_counts;
};

struct gpu_span {
    uint64_t begin, end;
};

struct fscope_span_log {
    struct chunked spans;
};

static struct fscope_frame_log *frame_logs[MAX_FRAME_LOGS];
static _Atomic unsigned frame_log_count;
static struct fscope_span_log *span_logs[MAX_SPAN_LOGS];
static _Atomic unsigned span_log_count;
static pthread_mutex_t logs_lock = PTHREAD_MUTEX_INITIALIZER;

FSCOPE_EXPORT struct fscope_frame_log *fscope_frame_log_create(const char *label)
{
    struct fscope_frame_log *log = calloc(1, sizeof(*log));
    if (!log)
        return NULL;
    snprintf(log->label, sizeof(log->label), "%s", label ? label : "frames");
    chunked_init(&log->frames, sizeof(struct fscope_frame));
    pthread_mutex_lock(&logs_lock);
    unsigned n = atomic_load(&frame_log_count);
    if (n >= MAX_FRAME_LOGS) {
        pthread_mutex_unlock(&logs_lock);
        free(log);
        fscope_log(FSCOPE_LOG_WARN, "more than %d surfaces; frames of '%s' are not recorded",
                   MAX_FRAME_LOGS, label);
        return NULL;
    }
    frame_logs[n] = log;
    atomic_store_explicit(&frame_log_count, n + 1, memory_order_release);
    pthread_mutex_unlock(&logs_lock);
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

FSCOPE_EXPORT struct fscope_frame *fscope_frame_log_close(struct fscope_frame_log *log,
                                                          uint64_t now_ticks,
                                                          uint32_t swapchain_serial)
{
    if (!log)
        return NULL;
    uint64_t blocks[FSCOPE_BLOCK_COUNT];
    fscope_thread_take_blocks(blocks);
    uint8_t flags = fscope_thread_take_frame_flags();
    uint64_t counts[FSCOPE_COUNT_COUNT];
    fscope_count_totals(counts);

    struct fscope_frame *frame = NULL;
    if (log->last_close_ticks && now_ticks >= log->last_close_ticks) {
        frame = chunked_next(&log->frames);
        if (frame) {
            frame->index = chunked_count(&log->frames);
            frame->output_index = -1;
            frame->start_ticks = log->last_close_ticks;
            frame->end_ticks = now_ticks;
            frame->swapchain_serial = swapchain_serial;
            frame->cap_flags = flags;
            uint64_t frame_ticks = now_ticks - log->last_close_ticks;
            uint64_t blocked = 0;
            for (unsigned b = 0; b < FSCOPE_BLOCK_COUNT; b++) {
                /* Blocks on this thread lie inside the frame; clamp against a thread that
                 * closes frames of two surfaces in turn, so the budget still partitions. */
                uint64_t v = blocks[b];
                if (blocked + v > frame_ticks)
                    v = frame_ticks - blocked;
                frame->block_ticks[b] = v;
                blocked += v;
            }
            for (unsigned k = 0; k < FSCOPE_COUNT_COUNT; k++)
                frame->counts[k] = counts[k] - log->last_counts[k];
#ifdef FSCOPE_HAVE_WAYLAND
            /* Right before the present goes down: the feedback binds to its commit. */
            if (log->tracker)
                frame->present_state = fscope_wl_tracker_request(log->tracker, frame->index)
                                           ? FRAME_PRESENT_PENDING
                                           : FRAME_PRESENT_REQUEST_FAILED;
#endif
            chunked_publish(&log->frames);
        }
    }
    log->last_close_ticks = now_ticks;
    memcpy(log->last_counts, counts, sizeof(counts));
    clock_refine();
    return frame;
}

FSCOPE_EXPORT void fscope_frame_log_untrackable(struct fscope_frame_log *log, const char *why)
{
    if (log && !log->untracked_why[0])
        snprintf(log->untracked_why, sizeof(log->untracked_why), "%s", why);
}

FSCOPE_EXPORT bool fscope_frame_log_track_wayland(struct fscope_frame_log *log,
                                                  struct wl_display *display,
                                                  struct wl_surface *surface)
{
    if (!log || log->tracker)
        return log != NULL;
#ifdef FSCOPE_HAVE_WAYLAND
    char why[160] = "";
    log->tracker = fscope_wl_tracker_create(display, surface, why, sizeof(why));
    if (!log->tracker) {
        fscope_frame_log_untrackable(log, why[0] ? why : "the tracker could not start");
        return false;
    }
    log->tracked = true;
    log->untracked_why[0] = '\0';
    struct fscope_output_info outs[16];
    log->output_count = fscope_wl_outputs(outs, 16);
    for (size_t i = 0; i < log->output_count; i++)
        log->output_refresh_mhz[i] = outs[i].refresh_mhz;
    return true;
#else
    (void)display;
    (void)surface;
    fscope_frame_log_untrackable(log, "framescope was built without Wayland support");
    return false;
#endif
}

#ifdef FSCOPE_HAVE_WAYLAND
static void apply_feedback(struct fscope_frame_log *log, const struct fscope_present_feedback *fb)
{
    if (fb->present_id >= chunked_count(&log->frames))
        return;
    struct fscope_frame *f = chunked_at(&log->frames, fb->present_id);
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
        /* The output's own mode when we know which output; else what the compositor claims. */
        uint32_t mhz = 0;
        if (fb->output_index >= 0 && !fb->output_ambiguous &&
            (size_t)fb->output_index < log->output_count)
            mhz = log->output_refresh_mhz[fb->output_index];
        else if (fb->refresh_ns)
            mhz = (uint32_t)(1e12 / fb->refresh_ns);
        atomic_store_explicit(&log->shown_refresh_mhz, mhz, memory_order_relaxed);
        atomic_store_explicit(&log->last_shown_ticks, f->presented_ticks, memory_order_relaxed);
    }
}
#endif

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
#ifdef FSCOPE_HAVE_WAYLAND
    if (!log || !log->tracker)
        return;
    struct fscope_present_feedback fbs[32];
    size_t n;
    while ((n = fscope_wl_tracker_drain(log->tracker, fbs, 32)) > 0)
        for (size_t i = 0; i < n; i++)
            apply_feedback(log, &fbs[i]);
#else
    (void)log;
#endif
}

FSCOPE_EXPORT void fscope_frame_log_presented(struct fscope_frame_log *log,
                                              struct fscope_frame *frame, uint64_t now_ticks)
{
    if (frame)
        frame->present_return_ticks = now_ticks;
    fscope_frame_log_drain(log);
}

FSCOPE_EXPORT void fscope_frame_log_untrack(struct fscope_frame_log *log)
{
#ifdef FSCOPE_HAVE_WAYLAND
    if (!log || !log->tracker)
        return;
    fscope_frame_log_drain(log);
    struct fscope_wl_counts c;
    fscope_wl_tracker_destroy_with_counts(log->tracker, &c);
    log->tracker = NULL;
    /* Several trackers over a surface's life (recreated surfaces) add up. */
    log->final_counts.requested += c.requested;
    log->final_counts.presented += c.presented;
    log->final_counts.discarded += c.discarded;
    log->final_counts.pending += c.pending;
    log->final_counts.lost += c.lost;
    log->final_counts.failed += c.failed;
    log->have_final_counts = true;
#else
    (void)log;
#endif
}

bool frame_log_tracked(const struct fscope_frame_log *log)
{
    return log->tracked;
}

const char *frame_log_untracked_why(const struct fscope_frame_log *log)
{
    return log->untracked_why;
}

bool frame_log_tracker_counts(struct fscope_frame_log *log, struct frame_log_tracker_counts *ret)
{
    if (!log->tracked)
        return false;
    *ret = log->final_counts;
#ifdef FSCOPE_HAVE_WAYLAND
    if (log->tracker) {
        struct fscope_wl_counts c;
        fscope_wl_tracker_counts(log->tracker, &c);
        ret->requested += c.requested;
        ret->presented += c.presented;
        ret->discarded += c.discarded;
        ret->pending += c.pending;
        ret->lost += c.lost;
        ret->failed += c.failed;
    }
#endif
    return true;
}

FSCOPE_EXPORT uint64_t fscope_frame_log_count(const struct fscope_frame_log *log)
{
    return log ? chunked_count(&log->frames) : 0;
}

FSCOPE_EXPORT void fscope_frame_mark(void)
{
    uint64_t now = fscope_now();
    struct fscope_collector *c = fscope_thread_collector();
    if (!c)
        return;
    if (!c->mark_log) {
        char label[64];
        snprintf(label, sizeof(label), "frame marks (%s)", c->name[0] ? c->name : "thread");
        c->mark_log = fscope_frame_log_create(label);
    }
    fscope_frame_log_close(c->mark_log, now, 0);
}

FSCOPE_EXPORT struct fscope_span_log *fscope_span_log_create(void)
{
    struct fscope_span_log *log = calloc(1, sizeof(*log));
    if (!log)
        return NULL;
    chunked_init(&log->spans, sizeof(struct gpu_span));
    pthread_mutex_lock(&logs_lock);
    unsigned n = atomic_load(&span_log_count);
    if (n >= MAX_SPAN_LOGS) {
        pthread_mutex_unlock(&logs_lock);
        free(log);
        return NULL;
    }
    span_logs[n] = log;
    atomic_store_explicit(&span_log_count, n + 1, memory_order_release);
    pthread_mutex_unlock(&logs_lock);
    return log;
}

FSCOPE_EXPORT void fscope_span_log_add(struct fscope_span_log *log, uint64_t begin_ticks,
                                       uint64_t end_ticks)
{
    if (!log || end_ticks <= begin_ticks)
        return;
    struct gpu_span *s = chunked_next(&log->spans);
    if (!s)
        return;
    s->begin = begin_ticks;
    s->end = end_ticks;
    chunked_publish(&log->spans);
}

unsigned frame_logs_count(void)
{
    return atomic_load_explicit(&frame_log_count, memory_order_acquire);
}

struct fscope_frame_log *frame_log_at(unsigned index)
{
    return frame_logs[index];
}

const char *frame_log_label(const struct fscope_frame_log *log)
{
    return log->label;
}

struct fscope_frame *frame_log_frame(struct fscope_frame_log *log, uint64_t index)
{
    return chunked_at(&log->frames, index);
}

static int span_compare(const void *a, const void *b)
{
    const struct gpu_span *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

void frames_compute_gpu_busy(void)
{
    uint64_t total = 0;
    unsigned logs = atomic_load_explicit(&span_log_count, memory_order_acquire);
    for (unsigned i = 0; i < logs; i++)
        total += chunked_count(&span_logs[i]->spans);
    struct gpu_span *spans = total ? malloc(total * sizeof(*spans)) : NULL;
    uint64_t merged = 0;
    if (spans) {
        uint64_t n = 0;
        for (unsigned i = 0; i < logs; i++) {
            uint64_t count = chunked_count(&span_logs[i]->spans);
            for (uint64_t j = 0; j < count && n < total; j++)
                spans[n++] = *(struct gpu_span *)chunked_at(&span_logs[i]->spans, j);
        }
        qsort(spans, n, sizeof(*spans), span_compare);
        /* The union: spans on several queues (and real GPUs) overlap. */
        for (uint64_t j = 0; j < n; j++) {
            if (merged && spans[j].begin <= spans[merged - 1].end) {
                if (spans[j].end > spans[merged - 1].end)
                    spans[merged - 1].end = spans[j].end;
            } else {
                spans[merged++] = spans[j];
            }
        }
    }
    unsigned flogs = frame_logs_count();
    for (unsigned l = 0; l < flogs; l++) {
        struct fscope_frame_log *log = frame_logs[l];
        uint64_t count = chunked_count(&log->frames);
        uint64_t lo = 0;
        for (uint64_t f = 0; f < count; f++) {
            struct fscope_frame *frame = frame_log_frame(log, f);
            /* Frames of one log are in time order, so the search start only moves forward. */
            while (lo < merged && spans[lo].end <= frame->start_ticks)
                lo++;
            uint64_t busy = 0;
            for (uint64_t j = lo; j < merged && spans[j].begin < frame->end_ticks; j++) {
                uint64_t b = spans[j].begin > frame->start_ticks ? spans[j].begin
                                                                 : frame->start_ticks;
                uint64_t e = spans[j].end < frame->end_ticks ? spans[j].end : frame->end_ticks;
                if (e > b)
                    busy += e - b;
            }
            frame->gpu_busy_ticks = busy;
        }
    }
    free(spans);
}
