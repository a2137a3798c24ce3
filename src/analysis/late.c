#include "late.h"

#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "held.h"
#include "work.h"

/* One pass over the spans in order of begin for one surface's frames in order: each device's
 * that last, held back to the last span no later frame can reach. */
struct span_window {
    struct sorter_cursor c;
    bool cursor, done, read_any;
    uint64_t read_to; /* the begin of the last span read */
    struct held_devices devices; /* struct gpu_span */
};

void span_index_build(const struct recording *rec, struct span_index *ret)
{
    ret->ok = rec->span_count == 0 || !sorter_failed(&rec->spans);
}

void span_index_free(struct span_index *x)
{
    memset(x, 0, sizeof(*x));
}

/* Drops d's spans up to the last that began before ret and ended a refresh (unit) before it:
 * every later frame's look back (returns no earlier) stops there. */
static void device_prune(struct held_device *d, uint64_t ret, uint64_t unit)
{
    struct held *h = &d->items;
    const struct gpu_span *spans = (const struct gpu_span *)h->items;
    for (size_t k = h->count; k-- > h->first;) {
        if (spans[k].begin < ret && spans[k].end + unit <= ret) {
            h->first = k + 1;
            break;
        }
    }
    d->pruned = h->count - h->first;
}

static bool device_push(struct held_device *d, const struct gpu_span *span, uint64_t ret,
                        uint64_t unit)
{
    if (d->items.count - d->items.first > 2 * d->pruned + 64)
        device_prune(d, ret, unit); /* a device no frame asks about holds no more */
    return held_push(&d->items, span, sizeof(*span));
}

/* Reads spans until one begins at or after to (ret, unit: the frame's, for pruning). */
static bool window_read(struct span_window *w, uint64_t to, uint64_t ret, uint64_t unit)
{
    while (!w->done && (!w->read_any || w->read_to < to)) {
        const struct gpu_span *span = sorter_next(&w->c);
        if (!span) {
            w->done = true;
            return !w->c.failed;
        }
        work_visited(1);
        w->read_any = true;
        w->read_to = span->begin;
        if (span->end <= span->begin)
            continue; /* no time: as the index before this left them out */
        struct held_device *d = held_device(&w->devices, span->device_id, true);
        if (!d || !device_push(d, span, ret, unit))
            return false;
    }
    return true;
}

static void window_close(struct span_window *w)
{
    held_devices_free(&w->devices);
    if (w->cursor)
        sorter_cursor_close(&w->c);
    memset(w, 0, sizeof(*w));
}

/* The pass from the first span (again), nothing held; false when memory ran out. */
static bool window_open(struct span_window *w, const struct recording *rec)
{
    window_close(w);
    w->done = rec->span_count == 0;
    w->cursor = !w->done && sorter_cursor_open(&w->c, &rec->spans);
    return w->done || w->cursor;
}

/* ns as the recording's ticks. */
static uint64_t ns_to_ticks(const struct recording *rec, double ns)
{
    double per_second = recording_ns(rec, 1000000000u);
    return per_second > 0 ? (uint64_t)(ns * 1e9 / per_second) : 0;
}

/* What the update pass of one surface carries from frame to frame. */
struct late_pass {
    const struct recording *rec;
    const struct display_evidence *ev;
    uint64_t unit;        /* the refresh, in ticks; 0: no frame can be judged */
    struct span_window w;
    bool ok;              /* the spans still read */
    uint64_t last_return; /* the latest present return read so far */
    uint64_t shown;       /* when the frame shown before was */
};

/* How late f was (x->late_refreshes), where it can be judged. */
static void late_fill(void *ctx, struct fscope_frame *f, struct frame_extra *x)
{
    struct late_pass *p = ctx;
    const struct recording *rec = p->rec;
    uint64_t unit = p->unit;
    x->late_judged = false;
    x->late_refreshes = 0;
    if (!p->ok || !unit || f->present_state != FRAME_PRESENT_PRESENTED || !f->presented_ticks ||
        !f->present_return_ticks)
        return;
    uint64_t prev_shown = p->shown;
    p->shown = f->presented_ticks;
    struct frame_budget_ns b;
    frame_budget(rec, f, x, p->ev, &b);
    if (!prev_shown || !b.gpu_timed || f->presented_ticks <= prev_shown)
        return;
    /* Frames whose present returned earlier than the last's: the pass again. */
    if (f->present_return_ticks < p->last_return && !(p->ok = window_open(&p->w, rec)))
        return;
    p->last_return = f->present_return_ticks;
    if (!(p->ok = window_read(&p->w, f->presented_ticks, f->present_return_ticks, unit)))
        return;
    struct held_device *d = held_device(&p->w.devices, f->device_id, false);
    const struct gpu_span *spans = d ? (const struct gpu_span *)d->items.items + d->items.first
                                     : NULL;
    size_t count = d ? d->items.count - d->items.first : 0;
    /* Ready: the present returned, and the GPU work begun by then ended (and the work that
     * followed it back to back, queued behind it). */
    uint64_t ready = f->present_return_ticks, gap = ns_to_ticks(rec, 50000);
    size_t a = 0, z = count;
    while (a < z) { /* the first span beginning after the return */
        size_t m = a + (z - a) / 2;
        if (spans[m].begin < f->present_return_ticks)
            a = m + 1;
        else
            z = m;
    }
    work_visited(1);
    size_t back = a;
    for (; back-- > 0 && spans[back].end + unit > f->present_return_ticks;) {
        work_visited(1);
        if (spans[back].end > ready)
            ready = spans[back].end;
    }
    for (size_t j = a; j < count && spans[j].begin <= ready + gap &&
                       spans[j].begin < f->presented_ticks; j++) {
        work_visited(1);
        if (spans[j].end > ready)
            ready = spans[j].end;
    }
    if (back != (size_t)-1) /* where the look back stopped, every later one stops */
        d->items.first += back + 1;
    /* The first refresh after the frame shown before it that comes a quarter refresh after
     * the frame was ready (the compositor's own time to take it), on the grid of refreshes
     * that frame was shown on; late by the whole refreshes after that. */
    uint64_t taken = ready + unit / 4;
    uint64_t k = taken > prev_shown ? (taken - prev_shown + unit - 1) / unit : 1;
    uint64_t first = prev_shown + (k ? k : 1) * unit;
    x->late_judged = true;
    x->late_refreshes = f->presented_ticks > first
                            ? (int)((f->presented_ticks - first + unit / 2) / unit)
                            : 0;
}

int late_refreshes(const struct recording *rec, const struct span_index *x,
                   struct recording_log *log, const struct display_evidence *ev)
{
    uint64_t n = log->frame_count;
    struct late_pass p = { .rec = rec, .ev = ev };
    struct frame_cursor c;
    if (x->ok && frame_cursor_open(&c, rec, log)) {
        /* The refresh: the claim, or the shortest shown interval when that is longer. */
        uint64_t shortest = UINT64_MAX, prev = 0;
        for (uint64_t i = 0; i < n; i++) {
            const struct fscope_frame *f = frame_at(&c, i);
            if (f->present_state != FRAME_PRESENT_PRESENTED || !f->presented_ticks)
                continue;
            if (!p.unit && f->refresh_ns)
                p.unit = ns_to_ticks(rec, f->refresh_ns);
            if (prev && f->presented_ticks > prev && f->presented_ticks - prev < shortest)
                shortest = f->presented_ticks - prev;
            prev = f->presented_ticks;
        }
        frame_cursor_close(&c);
        if (shortest != UINT64_MAX && shortest > p.unit)
            p.unit = shortest;
        p.ok = window_open(&p.w, rec);
    }
    const struct frame_field writes[] = { FRAME_FIELD(extra.late_judged),
                                          FRAME_FIELD(extra.late_refreshes) };
    int e = frame_store_update(log, late_fill, &p, writes, 2);
    window_close(&p.w);
    return e;
}
