/* GPU busy time from the recording's GPU spans: per device, per frame and per block.
 *
 * Each device's spans are merged once into a sorted union with running sums, so the busy
 * time inside any interval is two binary searches, however many spans the interval covers
 * and however often a surface's frames change device: a recording's size bounds the work
 * (before, each change of device rebuilt the union, and a frame covering every span walked
 * them all: frames times spans). */
#include "gpu_busy.h"

#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "work.h"

/* One device's spans (every device's for id 0) merged: sorted, disjoint, and before[i] the
 * busy ticks of spans[0..i). Disjoint intervals of uint64_t ticks sum within uint64_t. */
struct busy_union {
    uint32_t device_id;
    uint64_t count;
    struct gpu_span *spans;
    uint64_t *before;
    uint64_t raw; /* spans that went into it */
    /* Where GPU timing was sampled (a span flagged GPU_SPAN_AFTER_GAP): the runs of timed
     * submissions, each from its first span's begin to its spans' last end. Busy time is
     * known inside a run only; with no flagged span, everywhere. */
    bool sampled;
    uint64_t run_count;
    struct gpu_span *runs; /* begin and end of each run, sorted */
};

struct busy_index {
    struct busy_union all;
    struct busy_union *devices; /* by device id */
    size_t device_count;
    struct gpu_span *by_device; /* storage of the devices' unions */
    uint64_t *by_device_before;
};

static int by_begin(const void *a, const void *b)
{
    const struct gpu_span *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int by_device_then_begin(const void *a, const void *b)
{
    const struct gpu_span *x = a, *y = b;
    if (x->device_id != y->device_id)
        return x->device_id < y->device_id ? -1 : 1;
    return by_begin(a, b);
}

/* Merges n spans sorted by begin in place into u (spans and before point into storage). */
static void union_merge(struct busy_union *u, struct gpu_span *spans, uint64_t *before, uint64_t n)
{
    uint64_t merged = 0;
    for (uint64_t j = 0; j < n; j++) {
        if (merged && spans[j].begin <= spans[merged - 1].end) {
            if (spans[j].end > spans[merged - 1].end)
                spans[merged - 1].end = spans[j].end;
        } else {
            spans[merged++] = spans[j];
        }
    }
    before[0] = 0;
    for (uint64_t j = 0; j < merged; j++)
        before[j + 1] = before[j] + (spans[j].end - spans[j].begin);
    u->spans = spans;
    u->before = before;
    u->count = merged;
    u->raw = n;
}

/* The runs of timed submissions among n spans sorted by begin, before they are merged. False
 * when memory ran out. */
static bool union_runs(struct busy_union *u, const struct gpu_span *spans, uint64_t n)
{
    u->sampled = false;
    for (uint64_t j = 0; j < n && !u->sampled; j++)
        u->sampled = (spans[j].flags & GPU_SPAN_AFTER_GAP) != 0;
    if (!u->sampled)
        return true;
    u->runs = malloc(n * sizeof(*u->runs));
    if (!u->runs)
        return false;
    for (uint64_t j = 0; j < n; j++) {
        if (j == 0 || (spans[j].flags & GPU_SPAN_AFTER_GAP))
            u->runs[u->run_count++] = spans[j];
        else if (spans[j].end > u->runs[u->run_count - 1].end)
            u->runs[u->run_count - 1].end = spans[j].end;
    }
    return true;
}

/* Whether u's busy time is known over all of [begin, end]: inside one run of timed
 * submissions when timing was sampled. */
static bool union_covers(const struct busy_union *u, uint64_t begin, uint64_t end)
{
    if (!u->sampled)
        return true;
    uint64_t lo = 0, hi = u->run_count; /* the first run beginning after begin */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (u->runs[mid].begin <= begin)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && u->runs[lo - 1].end >= end;
}

static void busy_index_free(struct busy_index *x)
{
    free(x->all.runs);
    for (size_t d = 0; x->devices && d < x->device_count; d++)
        free(x->devices[d].runs);
    free(x->all.spans);
    free(x->all.before);
    free(x->devices);
    free(x->by_device);
    free(x->by_device_before);
}

/* Every union of rec's spans. False when memory ran out (x then holds none). */
static bool busy_index_build(const struct recording *rec, struct busy_index *x)
{
    memset(x, 0, sizeof(*x));
    uint64_t n = rec->span_count;
    if (!n)
        return true;
    x->all.spans = malloc(n * sizeof(*x->all.spans));
    x->all.before = malloc((n + 1) * sizeof(*x->all.before));
    x->by_device = malloc(n * sizeof(*x->by_device));
    /* A device's sums take one more entry than its spans: n + devices <= 2n in all. */
    x->by_device_before = malloc(2 * n * sizeof(*x->by_device_before));
    if (!x->all.spans || !x->all.before || !x->by_device || !x->by_device_before)
        goto error;
    memcpy(x->all.spans, rec->spans, n * sizeof(*rec->spans));
    qsort(x->all.spans, n, sizeof(*x->all.spans), by_begin);
    if (!union_runs(&x->all, x->all.spans, n))
        goto error;
    union_merge(&x->all, x->all.spans, x->all.before, n);
    memcpy(x->by_device, rec->spans, n * sizeof(*rec->spans));
    qsort(x->by_device, n, sizeof(*x->by_device), by_device_then_begin);
    size_t devices = 1;
    for (uint64_t j = 1; j < n; j++)
        devices += x->by_device[j].device_id != x->by_device[j - 1].device_id;
    x->devices = calloc(devices, sizeof(*x->devices));
    if (!x->devices)
        goto error;
    /* Each device's run of spans merged where it lies; its sums after the previous ones'. */
    uint64_t start = 0, sums = 0;
    for (uint64_t j = 1; j <= n; j++) {
        if (j < n && x->by_device[j].device_id == x->by_device[start].device_id)
            continue;
        struct busy_union *u = &x->devices[x->device_count++];
        u->device_id = x->by_device[start].device_id;
        if (!union_runs(u, x->by_device + start, j - start))
            goto error;
        union_merge(u, x->by_device + start, x->by_device_before + sums, j - start);
        sums += u->count + 1;
        start = j;
    }
    return true;
error:
    busy_index_free(x);
    memset(x, 0, sizeof(*x));
    return false;
}

/* The union of a frame's device: every device's for 0; NULL when that device has no span. */
static const struct busy_union *busy_index_find(const struct busy_index *x, uint32_t device_id)
{
    if (device_id == 0)
        return x->all.count ? &x->all : NULL;
    size_t lo = 0, hi = x->device_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->devices[mid].device_id == device_id)
            return &x->devices[mid];
        if (x->devices[mid].device_id < device_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Busy ticks of u before t: the whole spans that end by then, and the part of one it is in. */
static uint64_t busy_before(const struct busy_union *u, uint64_t t)
{
    uint64_t lo = 0, hi = u->count; /* the first span beginning at or after t */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (u->spans[mid].begin < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo && u->spans[lo - 1].end > t)
        return u->before[lo - 1] + (t - u->spans[lo - 1].begin);
    return u->before[lo];
}

/* Busy ticks of u inside [begin, end). */
static uint64_t busy_within(const struct busy_union *u, uint64_t begin, uint64_t end)
{
    if (!u || end <= begin)
        return 0;
    work_visited(1);
    return busy_before(u, end) - busy_before(u, begin);
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

/* A frame's GPU fields from the union of its device's spans (x NULL: 0). */
static void frame_fill(void *ctx, struct fscope_frame *frame, struct frame_extra *extra)
{
    (void)extra;
    const struct busy_index *x = ctx;
    const struct busy_union *u = x ? busy_index_find(x, frame->device_id) : NULL;
    /* Sampled timing: a frame outside every run is unmeasured, as is one whose device has no
     * span at all while others were sampled. */
    frame->gpu_unsampled = x && x->all.sampled &&
                           (!u || !union_covers(u, frame->start_ticks, frame->end_ticks));
    frame->gpu_busy_ticks = busy_within(u, frame->start_ticks, frame->end_ticks);
    memset(frame->block_gpu_ticks, 0, sizeof(frame->block_gpu_ticks));
    if (!u)
        return;
    for (unsigned i = 0; i < frame->block_span_count; i++) {
        unsigned kind = frame->block_span_kind[i];
        frame->block_gpu_ticks[kind] +=
            busy_within(u, frame->block_span_start[i], frame->block_span_end[i]);
    }
    for (unsigned b = 0; b < FSCOPE_BLOCK_COUNT; b++)
        if (frame->block_gpu_ticks[b] > frame->block_ticks[b])
            frame->block_gpu_ticks[b] = frame->block_ticks[b];
}

void recording_compute_gpu_busy(struct recording *rec)
{
    struct busy_index x;
    bool indexed = busy_index_build(rec, &x);
    free(rec->gpu_totals);
    rec->gpu_totals = NULL;
    rec->gpu_total_count = 0;
    if (indexed && x.device_count &&
        (rec->gpu_totals = calloc(x.device_count, sizeof(*rec->gpu_totals)))) {
        for (size_t d = 0; d < x.device_count; d++) {
            const struct busy_union *u = &x.devices[d];
            rec->gpu_totals[d] = (struct device_gpu_total){ u->device_id, u->before[u->count],
                                                            u->raw };
        }
        rec->gpu_total_count = (unsigned)x.device_count;
    }
    for (unsigned l = 0; l < rec->log_count; l++)
        frame_store_update(&rec->logs[l], frame_fill, indexed ? &x : NULL);
    busy_index_free(&x);
}
