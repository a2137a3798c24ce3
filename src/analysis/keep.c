#include "keep.h"

#include <limits.h>
#include <stdlib.h>

#include "frames.h"
#include "hitches.h"
#include "work.h"

static void bit_set(uint8_t *bits, uint64_t i)
{
    bits[i >> 3] |= (uint8_t)(1u << (i & 7));
}

static int span_compare(const void *a, const void *b)
{
    const struct keep_span *x = a, *y = b;
    return x->from < y->from ? -1 : x->from > y->from;
}

/* Sorts the spans and merges those that overlap or touch. */
static void spans_merge(struct frame_keep *k)
{
    if (!k->span_count)
        return;
    qsort(k->spans, k->span_count, sizeof(*k->spans), span_compare);
    size_t out = 0;
    for (size_t i = 1; i < k->span_count; i++) {
        if (k->spans[i].from <= k->spans[out].to + 1) {
            if (k->spans[i].to > k->spans[out].to)
                k->spans[out].to = k->spans[i].to;
        } else {
            k->spans[++out] = k->spans[i];
        }
    }
    k->span_count = out + 1;
}

static void free_bits(uint8_t **kept, unsigned logs)
{
    for (unsigned l = 0; kept && l < logs; l++)
        free(kept[l]);
    free(kept);
}

/* Frames end in order on a surface: its window is the frames from the first that ended at
 * from or later, as a snapshot's (recording_keep_recent). Returns whether any is left out;
 * window_first gets the first of each log. */
static bool window_find(const struct recording *rec, uint64_t from, uint64_t *window_first)
{
    bool cut = false;
    for (unsigned l = 0; l < rec->log_count; l++) {
        const struct recording_log *log = &rec->logs[l];
        struct frame_cursor c;
        uint64_t i = 0;
        if (frame_cursor_open(&c, rec, log)) { /* else every frame is kept */
            while (i < log->frame_count && frame_at(&c, i)->end_ticks < from)
                i++;
            frame_cursor_close(&c);
        }
        window_first[l] = i;
        cut = cut || i > 0;
    }
    return cut;
}

/* The frames around the hitches, the latest hitches first, up to KEEP_HITCH_FRAMES_MAX frames
 * outside the window: a hitch adds the frames around it below the window and below the next
 * hitch of its surface (the hitches of a surface come together, in frame order), so what each
 * adds is known once the next is read, and the latest hitches that fit are those whose adds,
 * with every later one's, come to the most at most. Two passes over the hitches, forward:
 * their sum, then the hitches kept; every frame is looked at once at most. */
struct keep_walk {
    const struct recording *rec;
    struct frame_keep *k;
    const uint64_t *window_first; /* per log */
    size_t span_capacity;
    uint64_t total;  /* what every hitch adds (the first pass's sum) */
    uint64_t before; /* what the hitches walked already add */
    bool keeping;    /* the second pass */
    bool failed;     /* no memory: no more hitch is kept */
    /* The hitch read last, settled when the next is read: its surface and frames around. */
    bool pending;
    unsigned log;
    uint64_t first, last;
    struct frame_cursor c; /* over the frames of log open */
    unsigned open;
};

static bool span_add(struct keep_walk *w, struct keep_span span)
{
    struct frame_keep *k = w->k;
    /* A hitch near the one before it on its surface: one span (spans_merge would join them). */
    if (k->span_count > 1) {
        struct keep_span *last = &k->spans[k->span_count - 1];
        if (span.from >= last->from && span.from <= last->to + 1) {
            if (span.to > last->to)
                last->to = span.to;
            return true;
        }
    }
    if (k->span_count == w->span_capacity) {
        size_t want = 2 * w->span_capacity;
        struct keep_span *grown = realloc(k->spans, want * sizeof(*grown));
        if (!grown)
            return false;
        k->spans = grown;
        w->span_capacity = want;
    }
    k->spans[k->span_count++] = span;
    return true;
}

/* The pending hitch, now that nothing below floor is left for it to add. */
static void walk_settle(struct keep_walk *w, uint64_t floor)
{
    if (!w->pending)
        return;
    w->pending = false;
    uint64_t upto = w->last < floor ? w->last : floor - 1;
    uint64_t added = w->first < floor ? upto - w->first + 1 : 0;
    uint64_t later = w->total - w->before; /* what it and every later hitch add */
    w->before += added;
    if (!w->keeping || w->failed || later > KEEP_HITCH_FRAMES_MAX)
        return;
    struct frame_keep *k = w->k;
    if (w->open != w->log) {
        if (w->open != UINT_MAX)
            frame_cursor_close(&w->c);
        w->open = UINT_MAX;
        if (!frame_cursor_open(&w->c, w->rec, &w->rec->logs[w->log])) {
            w->failed = true;
            return;
        }
        w->open = w->log;
    }
    struct keep_span span = { frame_at(&w->c, w->first)->start_ticks,
                              frame_at(&w->c, w->last)->end_ticks };
    if (!span_add(w, span)) {
        w->failed = true;
        return;
    }
    for (uint64_t i = w->first; added && i <= upto; i++)
        bit_set(k->kept[w->log], i);
    k->hitch_frames += added;
    k->hitches_kept++;
}

/* One pass over the hitches; false when they could not all be read. */
static bool walk_hitches(struct keep_walk *w, const struct hitch_stats *h)
{
    struct sorter_cursor c;
    if (!hitches_open(&c, h))
        return !h || !h->count;
    uint64_t read = 0;
    for (const struct hitch *x; (x = sorter_next(&c)); read++) {
        if (x->log >= w->k->logs || x->frame >= w->rec->logs[x->log].frame_count)
            continue;
        uint64_t n = w->rec->logs[x->log].frame_count;
        uint64_t first = x->frame > KEEP_AROUND_HITCH ? x->frame - KEEP_AROUND_HITCH : 0;
        uint64_t last = x->frame + KEEP_AROUND_HITCH < n ? x->frame + KEEP_AROUND_HITCH : n - 1;
        if (w->pending) {
            uint64_t floor = w->window_first[w->log];
            walk_settle(w, w->log == x->log && first < floor ? first : floor);
        }
        w->pending = true;
        w->log = x->log;
        w->first = first;
        w->last = last;
    }
    if (w->pending)
        walk_settle(w, w->window_first[w->log]);
    sorter_cursor_close(&c);
    return read == h->count;
}

static void hitches_keep(const struct recording *rec, const struct hitch_stats *h,
                         const uint64_t *window_first, size_t span_capacity,
                         struct frame_keep *k)
{
    struct keep_walk w = { .rec = rec, .k = k, .window_first = window_first,
                           .span_capacity = span_capacity, .open = UINT_MAX };
    if (walk_hitches(&w, h)) {
        w.total = w.before;
        w.before = 0;
        w.keeping = true;
        walk_hitches(&w, h);
    }
    if (w.open != UINT_MAX)
        frame_cursor_close(&w.c);
}

void keep_compute(const struct recording *rec, const struct hitch_stats *h, uint32_t window_ms,
                  struct frame_keep *ret)
{
    *ret = (struct frame_keep){ .window_ms = window_ms, .logs = rec->log_count,
                                .hitches = h ? h->count : 0 };
    unsigned logs = rec->log_count;
    uint64_t newest = 0;
    for (unsigned l = 0; l < logs; l++) {
        const struct recording_log *log = &rec->logs[l];
        ret->frames += log->frame_count;
        if (log->frame_count && log->last_end_ticks > newest)
            newest = log->last_end_ticks;
    }
    ret->kept_frames = ret->window_frames = ret->frames;
    ret->hitches_kept = ret->hitches;
    if (!window_ms || rec->ns_per_tick <= 0 || !logs)
        return;
    double span = (double)window_ms * 1e6 / rec->ns_per_tick;
    uint64_t from = span < (double)newest ? newest - (uint64_t)span : 0;
    uint64_t *window_first = calloc(logs, sizeof(*window_first));
    if (!window_first || !window_find(rec, from, window_first)) {
        free(window_first);
        return; /* nothing left out, or no memory to say what: every frame kept */
    }
    uint8_t **kept = calloc(logs, sizeof(*kept));
    bool ok = kept != NULL;
    for (unsigned l = 0; ok && l < logs; l++) {
        kept[l] = calloc(rec->logs[l].frame_count / 8 + 1, 1);
        ok = kept[l] != NULL;
    }
    const size_t span_capacity = 16;
    struct keep_span *spans = ok ? calloc(span_capacity, sizeof(*spans)) : NULL;
    if (!spans) {
        free_bits(kept, logs);
        free(window_first);
        return;
    }
    ret->cut = true;
    ret->kept = kept;
    ret->spans = spans;
    ret->spans[ret->span_count++] = (struct keep_span){ from, newest };
    ret->window_frames = 0;
    for (unsigned l = 0; l < logs; l++) {
        for (uint64_t i = window_first[l]; i < rec->logs[l].frame_count; i++)
            bit_set(kept[l], i);
        ret->window_frames += rec->logs[l].frame_count - window_first[l];
    }
    ret->hitches_kept = 0;
    hitches_keep(rec, h, window_first, span_capacity, ret);
    ret->kept_frames = ret->window_frames + ret->hitch_frames;
    spans_merge(ret);
    free(window_first);
}

bool keep_time(const struct frame_keep *k, uint64_t from, uint64_t to)
{
    if (!k || !k->cut)
        return true;
    work_visited(1);
    /* The first span that ends at from or later: it overlaps when it begins by to. */
    size_t lo = 0, hi = k->span_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k->spans[mid].to < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < k->span_count && k->spans[lo].from <= to;
}

void keep_finish(struct frame_keep *k)
{
    if (!k)
        return;
    free_bits(k->kept, k->logs);
    free(k->spans);
    k->kept = NULL;
    k->spans = NULL;
}
