/* GPU busy time from the recording's GPU spans: per device, per frame and per block.
 *
 * The spans are kept in order of their begin (rec->spans, a sorter), so a surface's frames, in
 * order, are filled by one pass over them: each device's spans merged into a union as they are
 * read, held from the earliest time a frame still asks about to a little past the frame, and a
 * frame's busy time is what of the union lies in it. A pass before finds each device's total
 * and, where GPU timing was sampled, its runs of timed submissions (kept in a sorter of their
 * own, read in step). Work is the spans and runs read once a surface plus those a frame's
 * window meets, and memory the few frames' worth held, whatever the run's length (issue 35;
 * the index this replaces held every span three times). */
#include "gpu_busy.h"

#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "held.h"
#include "work.h"

/* A device's union (every device's, for frames the app marked) and its runs of timed
 * submissions, as the pass holds them; sampled: some span of it came after a gap. */
struct device_pass {
    uint32_t device_id;
    bool sampled;
    struct held busy, timed; /* struct gpu_span: the union's runs, the timed runs */
};

/* A timed run in the runs' sorter: flags RUN_OF_ALL for every device's. */
#define RUN_OF_ALL 1u

struct busy_pass {
    const struct recording *rec;
    struct sorter timed_runs;  /* struct gpu_span, by begin */
    struct sorter_cursor spans, timed;
    bool open, spans_done, timed_done, failed;
    uint64_t spans_to, timed_to; /* the begin of the last span and run read */
    bool read_any, timed_any;
    uint64_t floor;              /* the earliest time a frame asked about */
    struct device_pass all;
    struct device_pass *devices; /* by id */
    size_t device_count;
};

static int run_order(const void *a, const void *b)
{
    const struct gpu_span *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->flags != y->flags)
        return x->flags < y->flags ? -1 : 1;
    if (x->device_id != y->device_id)
        return x->device_id < y->device_id ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* A span into a union: merged with the last run where it meets it. */
static bool union_add(struct held *q, const struct gpu_span *span)
{
    struct gpu_span *last = q->count > q->first ? (struct gpu_span *)q->items + q->count - 1
                                                : NULL;
    if (last && span->begin <= last->end) {
        if (span->end > last->end)
            last->end = span->end;
        return true;
    }
    struct gpu_span run = { span->begin, span->end, span->device_id, 0 };
    return held_push(q, &run, sizeof(run));
}

static struct device_pass *device_of(struct busy_pass *p, uint32_t device_id)
{
    size_t lo = 0, hi = p->device_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->devices[mid].device_id == device_id)
            return &p->devices[mid];
        if (p->devices[mid].device_id < device_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The device with device_id, made (in order of id) on its first span; NULL when memory ran
 * out. */
static struct device_pass *device_add(struct busy_pass *p, uint32_t device_id, size_t *capacity)
{
    struct device_pass *d = device_of(p, device_id);
    if (d)
        return d;
    if (p->device_count == *capacity) {
        size_t want = *capacity ? 2 * *capacity : 4;
        struct device_pass *grown = realloc(p->devices, want * sizeof(*grown));
        if (!grown)
            return NULL;
        p->devices = grown;
        *capacity = want;
    }
    size_t at = p->device_count;
    while (at > 0 && p->devices[at - 1].device_id > device_id)
        at--;
    memmove(&p->devices[at + 1], &p->devices[at], (p->device_count - at) * sizeof(*p->devices));
    p->device_count++;
    memset(&p->devices[at], 0, sizeof(p->devices[at]));
    p->devices[at].device_id = device_id;
    return &p->devices[at];
}

/* What the pass before the frames keeps of a device (or of all) as it reads the spans. */
struct device_total {
    uint64_t busy, spans;
    bool merging, timing;
    struct gpu_span merged, run; /* the union's and the timed runs' last, still growing */
};

/* Adds span to t's totals and timed runs (those ended go to the runs' sorter, tagged). */
static void total_add(struct busy_pass *p, struct device_total *t, const struct gpu_span *span,
                      uint32_t tag)
{
    t->spans++;
    if (t->merging && span->begin <= t->merged.end) {
        if (span->end > t->merged.end)
            t->merged.end = span->end;
    } else {
        if (t->merging)
            t->busy += t->merged.end - t->merged.begin;
        t->merged = *span;
        t->merging = true;
    }
    if (t->timing && !(span->flags & GPU_SPAN_AFTER_GAP)) {
        if (span->end > t->run.end)
            t->run.end = span->end;
        return;
    }
    if (t->timing)
        sorter_push(&p->timed_runs, &t->run);
    t->run = (struct gpu_span){ span->begin, span->end, span->device_id, tag };
    t->timing = true;
}

static void total_end(struct busy_pass *p, struct device_total *t)
{
    if (t->merging)
        t->busy += t->merged.end - t->merged.begin;
    if (t->timing)
        sorter_push(&p->timed_runs, &t->run);
}

/* The pass before the frames: every device (p->devices, in order of id), its total
 * (rec->gpu_totals), whether it was sampled, and the timed runs' sorter. False when memory
 * ran out. */
static bool totals_pass(struct recording *rec, struct busy_pass *p)
{
    struct device_total all = { 0 }, *totals = NULL;
    size_t capacity = 0, totals_capacity = 0;
    sorter_init(&p->timed_runs, sizeof(struct gpu_span), run_order, 0);
    struct sorter_cursor c;
    if (!sorter_cursor_open(&c, &rec->spans))
        return false;
    const struct gpu_span *span;
    bool ok = true;
    while (ok && (span = sorter_next(&c))) {
        work_visited(1);
        p->all.sampled |= (span->flags & GPU_SPAN_AFTER_GAP) != 0;
        total_add(p, &all, span, RUN_OF_ALL);
        size_t before = p->device_count;
        struct device_pass *d = device_add(p, span->device_id, &capacity);
        ok = d != NULL;
        if (ok && totals_capacity < capacity) {
            struct device_total *grown = realloc(totals, capacity * sizeof(*grown));
            ok = grown != NULL;
            if (ok) {
                totals = grown;
                totals_capacity = capacity;
            }
        }
        if (!ok)
            break;
        size_t at = (size_t)(d - p->devices);
        if (p->device_count > before) { /* made: the totals move with the devices */
            memmove(&totals[at + 1], &totals[at], (p->device_count - 1 - at) * sizeof(*totals));
            memset(&totals[at], 0, sizeof(totals[at]));
        }
        d->sampled |= (span->flags & GPU_SPAN_AFTER_GAP) != 0;
        total_add(p, &totals[at], span, 0);
    }
    ok = ok && !c.failed;
    sorter_cursor_close(&c);
    total_end(p, &all);
    for (size_t d = 0; ok && d < p->device_count; d++)
        total_end(p, &totals[d]);
    ok = ok && sorter_finish(&p->timed_runs);
    if (ok && p->device_count &&
        (rec->gpu_totals = calloc(p->device_count, sizeof(*rec->gpu_totals)))) {
        for (size_t d = 0; d < p->device_count; d++)
            rec->gpu_totals[d] = (struct device_gpu_total){ p->devices[d].device_id,
                                                            totals[d].busy, totals[d].spans };
        rec->gpu_total_count = (unsigned)p->device_count;
    }
    free(totals);
    return ok;
}

static void deque_clear(struct held *q)
{
    q->first = q->count = 0;
}

/* The pass from the first span again, nothing held. */
static bool pass_restart(struct busy_pass *p)
{
    if (p->open) {
        sorter_cursor_close(&p->spans);
        sorter_cursor_close(&p->timed);
        p->open = false;
    }
    deque_clear(&p->all.busy);
    deque_clear(&p->all.timed);
    for (size_t d = 0; d < p->device_count; d++) {
        deque_clear(&p->devices[d].busy);
        deque_clear(&p->devices[d].timed);
    }
    p->spans_done = p->timed_done = p->read_any = p->timed_any = false;
    p->floor = 0;
    if (!sorter_cursor_open(&p->spans, &p->rec->spans))
        return false;
    if (!sorter_cursor_open(&p->timed, &p->timed_runs)) {
        sorter_cursor_close(&p->spans);
        return false;
    }
    p->open = true;
    return true;
}

/* Drops the timed runs a later one begun by floor replaces. */
static void timed_drop(struct device_pass *d, uint64_t floor)
{
    struct held *q = &d->timed;
    const struct gpu_span *runs = (const struct gpu_span *)q->items;
    while (q->first + 1 < q->count && runs[q->first + 1].begin <= floor)
        q->first++;
}

/* Drops the runs that end by floor (busy), and the timed runs a later one begun by floor
 * replaces. */
static void device_drop(struct device_pass *d, uint64_t floor)
{
    struct held *q = &d->busy;
    const struct gpu_span *runs = (const struct gpu_span *)q->items;
    while (q->first < q->count && runs[q->first].end <= floor)
        q->first++;
    timed_drop(d, floor);
}

/* Frames from floor on: what ends before it is dropped (the pass restarts for a floor
 * earlier than the last). False when the pass cannot go on. */
static bool pass_floor(struct busy_pass *p, uint64_t floor)
{
    if ((!p->open || floor < p->floor) && !pass_restart(p))
        return false;
    p->floor = floor;
    device_drop(&p->all, floor);
    for (size_t d = 0; d < p->device_count; d++)
        device_drop(&p->devices[d], floor);
    return true;
}

/* Reads spans until one begins at or after to: every span that begins before to is held. */
static bool read_spans(struct busy_pass *p, uint64_t to)
{
    while (!p->spans_done && (!p->read_any || p->spans_to < to)) {
        const struct gpu_span *span = sorter_next(&p->spans);
        if (!span) {
            p->spans_done = true;
            return !p->spans.failed;
        }
        work_visited(1);
        p->read_any = true;
        p->spans_to = span->begin;
        if (span->end <= p->floor)
            continue; /* device_drop's already: a pass that starts late holds none of it */
        struct device_pass *d = device_of(p, span->device_id);
        if (!union_add(&p->all.busy, span) || !d || !union_add(&d->busy, span))
            return false;
    }
    return true;
}

/* Reads timed runs until one begins after to: every run that begins by to is held. */
static bool read_timed(struct busy_pass *p, uint64_t to)
{
    while (!p->timed_done && (!p->timed_any || p->timed_to <= to)) {
        const struct gpu_span *run = sorter_next(&p->timed);
        if (!run) {
            p->timed_done = true;
            return !p->timed.failed;
        }
        work_visited(1);
        p->timed_any = true;
        p->timed_to = run->begin;
        struct device_pass *d = run->flags & RUN_OF_ALL ? &p->all : device_of(p, run->device_id);
        if (!d || !held_push(&d->timed, run, sizeof(*run)))
            return false;
        timed_drop(d, p->floor); /* a pass that starts late holds one run before it */
    }
    return true;
}

/* Whether d's busy time is known over all of [begin, end]: inside one run of timed
 * submissions when timing was sampled. */
static bool device_covers(const struct device_pass *d, uint64_t begin, uint64_t end)
{
    if (!d->sampled)
        return true;
    const struct held *q = &d->timed;
    const struct gpu_span *runs = (const struct gpu_span *)q->items;
    for (size_t k = q->count; k-- > q->first;)
        if (runs[k].begin <= begin)
            return runs[k].end >= end;
    return false;
}

/* Busy ticks of d's union inside [begin, end). */
static uint64_t device_busy(const struct device_pass *d, uint64_t begin, uint64_t end)
{
    if (!d || end <= begin)
        return 0;
    work_visited(1);
    uint64_t busy = 0;
    const struct held *q = &d->busy;
    const struct gpu_span *runs = (const struct gpu_span *)q->items;
    for (size_t k = q->first; k < q->count && runs[k].begin < end; k++) {
        uint64_t from = runs[k].begin > begin ? runs[k].begin : begin;
        uint64_t to = runs[k].end < end ? runs[k].end : end;
        busy += to > from ? to - from : 0;
    }
    return busy;
}

static void pass_free(struct busy_pass *p)
{
    if (p->open) {
        sorter_cursor_close(&p->spans);
        sorter_cursor_close(&p->timed);
    }
    held_free(&p->all.busy);
    held_free(&p->all.timed);
    for (size_t d = 0; d < p->device_count; d++) {
        held_free(&p->devices[d].busy);
        held_free(&p->devices[d].timed);
    }
    free(p->devices);
    sorter_free(&p->timed_runs);
    memset(p, 0, sizeof(*p));
}

size_t device_gpu_totals(const struct recording *rec, struct device_gpu_total **ret)
{
    *ret = NULL;
    if (!rec->gpu_total_count)
        return 0;
    *ret = malloc(rec->gpu_total_count * sizeof(**ret));
    if (!*ret)
        return 0;
    memcpy(*ret, rec->gpu_totals, rec->gpu_total_count * sizeof(**ret));
    return rec->gpu_total_count;
}

/* A frame's GPU fields from the union of its device's spans (no pass, or none of its device:
 * 0). */
static void frame_fill(void *ctx, struct fscope_frame *frame, struct frame_extra *extra)
{
    (void)extra;
    struct busy_pass *p = ctx;
    uint64_t from = frame->start_ticks, to = frame->end_ticks;
    for (unsigned i = 0; i < frame->block_span_count; i++) {
        if (frame->block_span_start[i] < from)
            from = frame->block_span_start[i];
        if (frame->block_span_end[i] > to)
            to = frame->block_span_end[i];
    }
    if (p && !p->failed)
        p->failed = !pass_floor(p, from) || !read_spans(p, to) ||
                    !read_timed(p, frame->start_ticks);
    const struct device_pass *d = NULL;
    if (p && !p->failed)
        d = frame->device_id == 0 ? (p->all.busy.count ? &p->all : NULL)
                                  : device_of(p, frame->device_id);
    /* Sampled timing: a frame outside every run is unmeasured, as is one whose device has no
     * span at all while others were sampled. */
    frame->gpu_unsampled = p && !p->failed && p->all.sampled &&
                           (!d || !device_covers(d, frame->start_ticks, frame->end_ticks));
    frame->gpu_busy_ticks = device_busy(d, frame->start_ticks, frame->end_ticks);
    memset(frame->block_gpu_ticks, 0, sizeof(frame->block_gpu_ticks));
    if (!d)
        return;
    for (unsigned i = 0; i < frame->block_span_count; i++) {
        unsigned kind = frame->block_span_kind[i];
        frame->block_gpu_ticks[kind] +=
            device_busy(d, frame->block_span_start[i], frame->block_span_end[i]);
    }
    for (unsigned b = 0; b < FSCOPE_BLOCK_COUNT; b++)
        if (frame->block_gpu_ticks[b] > frame->block_ticks[b])
            frame->block_gpu_ticks[b] = frame->block_ticks[b];
}

void recording_compute_gpu_busy(struct recording *rec)
{
    free(rec->gpu_totals);
    rec->gpu_totals = NULL;
    rec->gpu_total_count = 0;
    struct busy_pass p;
    memset(&p, 0, sizeof(p));
    p.rec = rec;
    bool ok = rec->span_count && totals_pass(rec, &p);
    const struct frame_field writes[] = { FRAME_FIELD(frame.gpu_unsampled),
                                          FRAME_FIELD(frame.gpu_busy_ticks),
                                          FRAME_FIELD(frame.block_gpu_ticks) };
    for (unsigned l = 0; l < rec->log_count; l++) {
        if (ok) /* each surface's frames from the first span again */
            p.failed = !pass_restart(&p);
        frame_store_update(&rec->logs[l], frame_fill, ok ? &p : NULL, writes, 3);
    }
    pass_free(&p);
}
