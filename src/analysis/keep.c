#include "keep.h"

#include <limits.h>
#include <stdlib.h>

#include "frames.h"
#include "hitches.h"
#include "work.h"

static bool bit(const uint8_t *bits, uint64_t i)
{
    return bits[i >> 3] >> (i & 7) & 1;
}

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

/* The latest hitches first, up to KEEP_HITCH_FRAMES_MAX frames. Each log's hitches come in
 * frame order, so walking back, what a hitch adds ends below what the later ones kept
 * (floor, the window's first frame at the start): every frame is looked at once at most,
 * however many hitches there are. */
static void hitches_keep(const struct recording *rec, const struct hitch_stats *h, uint64_t *floor,
                         struct frame_keep *k)
{
    struct frame_cursor c; /* over the frames of log open (a log's hitches come together) */
    unsigned open = UINT_MAX;
    for (uint64_t n = k->hitches; n-- > 0;) {
        const struct hitch *x = &h->hitches[n];
        if (x->log >= k->logs || x->frame >= rec->logs[x->log].frame_count)
            continue;
        const struct recording_log *log = &rec->logs[x->log];
        if (x->log != open) {
            if (open != UINT_MAX)
                frame_cursor_close(&c);
            open = UINT_MAX;
            if (!frame_cursor_open(&c, rec, log))
                break; /* no memory: the hitches before are not kept */
            open = x->log;
        }
        uint64_t first = x->frame > KEEP_AROUND_HITCH ? x->frame - KEEP_AROUND_HITCH : 0;
        uint64_t last = x->frame + KEEP_AROUND_HITCH < log->frame_count
                            ? x->frame + KEEP_AROUND_HITCH : log->frame_count - 1;
        uint64_t added = 0;
        if (first < floor[x->log]) {
            uint64_t upto = last < floor[x->log] ? last : floor[x->log] - 1;
            for (uint64_t i = first; i <= upto; i++)
                added += !bit(k->kept[x->log], i);
            if (k->hitch_frames + added > KEEP_HITCH_FRAMES_MAX)
                break;
            for (uint64_t i = first; i <= upto; i++)
                bit_set(k->kept[x->log], i);
            floor[x->log] = first;
        }
        k->hitch_frames += added;
        k->hitches_kept++;
        uint64_t from = frame_at(&c, first)->start_ticks;
        k->spans[k->span_count++] = (struct keep_span){ from, frame_at(&c, last)->end_ticks };
    }
    if (open != UINT_MAX)
        frame_cursor_close(&c);
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
    struct keep_span *spans = ok ? calloc(ret->hitches + 1, sizeof(*spans)) : NULL;
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
    hitches_keep(rec, h, window_first, ret);
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
