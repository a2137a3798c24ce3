#include "late.h"

#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "work.h"

static int span_by_begin(const void *a, const void *b)
{
    const struct gpu_span *x = *(const struct gpu_span *const *)a;
    const struct gpu_span *y = *(const struct gpu_span *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* By device, then as recorded (the pointers are into one array). */
static int span_by_device(const void *a, const void *b)
{
    const struct gpu_span *x = *(const struct gpu_span *const *)a;
    const struct gpu_span *y = *(const struct gpu_span *const *)b;
    if (x->device_id != y->device_id)
        return x->device_id < y->device_id ? -1 : 1;
    return x < y ? -1 : x > y;
}

void span_index_build(const struct recording *rec, struct span_index *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->spans = malloc((rec->span_count ? rec->span_count : 1) * sizeof(*ret->spans));
    if (!ret->spans)
        return;
    work_visited(rec->span_count);
    for (uint64_t k = 0; k < rec->span_count; k++)
        if (rec->spans[k].end > rec->spans[k].begin)
            ret->spans[ret->count++] = &rec->spans[k];
    /* Each device's spans as recorded, then by begin: as late_refreshes once sorted
     * them for every change of device. */
    qsort(ret->spans, ret->count, sizeof(*ret->spans), span_by_device);
    for (size_t from = 0, to; from < ret->count; from = to) {
        for (to = from + 1; to < ret->count && ret->spans[to]->device_id ==
                                                   ret->spans[from]->device_id; to++)
            ;
        qsort(ret->spans + from, to - from, sizeof(*ret->spans), span_by_begin);
    }
    ret->ok = true;
}

void span_index_free(struct span_index *x)
{
    free(x->spans);
    memset(x, 0, sizeof(*x));
}

/* device_id's spans in x, by begin (*ret_count 0: none). */
static const struct gpu_span *const *span_index_of(const struct span_index *x,
                                                   uint32_t device_id, size_t *ret_count)
{
    work_visited(1);
    size_t lo = 0, hi = x->count; /* the device's first span */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->spans[mid]->device_id < device_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t first = lo;
    for (hi = x->count; lo < hi;) { /* the first span of a later device */
        size_t mid = lo + (hi - lo) / 2;
        if (x->spans[mid]->device_id <= device_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    *ret_count = lo - first;
    return x->spans + first;
}

/* ns as the recording's ticks. */
static uint64_t ns_to_ticks(const struct recording *rec, double ns)
{
    double per_second = recording_ns(rec, 1000000000u);
    return per_second > 0 ? (uint64_t)(ns * 1e9 / per_second) : 0;
}

void late_refreshes(const struct recording *rec, const struct span_index *x, unsigned l,
                    const struct display_evidence *ev, int *late)
{
    const struct recording_log *log = &rec->logs[l];
    uint64_t n = log->frame_count;
    for (uint64_t i = 0; i < n; i++)
        late[i] = -1;
    struct frame_cursor c;
    if (!x->ok || !frame_cursor_open(&c, rec, log))
        return;
    /* The refresh: the claim, or the shortest shown interval when that is longer. */
    uint64_t unit = 0, shortest = UINT64_MAX, prev = 0;
    for (uint64_t i = 0; i < n; i++) {
        const struct fscope_frame *f = frame_at(&c, i);
        if (f->present_state != FRAME_PRESENT_PRESENTED || !f->presented_ticks)
            continue;
        if (!unit && f->refresh_ns)
            unit = ns_to_ticks(rec, f->refresh_ns);
        if (prev && f->presented_ticks > prev && f->presented_ticks - prev < shortest)
            shortest = f->presented_ticks - prev;
        prev = f->presented_ticks;
    }
    if (shortest != UINT64_MAX && shortest > unit)
        unit = shortest;
    uint32_t device = UINT32_MAX;
    size_t count = 0;
    const struct gpu_span *const *spans = NULL;
    uint64_t shown = 0; /* when the frame shown before was */
    for (uint64_t i = 0; unit && i < n; i++) {
        const struct fscope_frame *f = frame_at(&c, i);
        if (f->present_state != FRAME_PRESENT_PRESENTED || !f->presented_ticks ||
            !f->present_return_ticks)
            continue;
        uint64_t prev_shown = shown;
        shown = f->presented_ticks;
        struct frame_budget_ns b;
        frame_budget(rec, f, frame_extra_at(&c, i), ev, &b);
        if (!prev_shown || !b.gpu_timed || f->presented_ticks <= prev_shown)
            continue;
        if (f->device_id != device) {
            device = f->device_id;
            spans = span_index_of(x, device, &count);
        }
        /* Ready: the present returned, and the GPU work begun by then ended (and the work
         * that followed it back to back, queued behind it). */
        uint64_t ready = f->present_return_ticks, gap = ns_to_ticks(rec, 50000);
        size_t a = 0, z = count;
        while (a < z) { /* the first span beginning after the return */
            size_t m = a + (z - a) / 2;
            if (spans[m]->begin < f->present_return_ticks)
                a = m + 1;
            else
                z = m;
        }
        work_visited(1);
        for (size_t k = a; k-- > 0 && spans[k]->end + unit > f->present_return_ticks;) {
            work_visited(1);
            if (spans[k]->end > ready)
                ready = spans[k]->end;
        }
        for (size_t k = a; k < count && spans[k]->begin <= ready + gap &&
                           spans[k]->begin < f->presented_ticks; k++) {
            work_visited(1);
            if (spans[k]->end > ready)
                ready = spans[k]->end;
        }
        /* The first refresh after the frame shown before it that comes a quarter refresh
         * after the frame was ready (the compositor's own time to take it), on the grid of
         * refreshes that frame was shown on; late by the whole refreshes after that. */
        uint64_t taken = ready + unit / 4;
        uint64_t k = taken > prev_shown ? (taken - prev_shown + unit - 1) / unit : 1;
        uint64_t first = prev_shown + (k ? k : 1) * unit;
        late[i] = f->presented_ticks > first ? (int)((f->presented_ticks - first + unit / 2) / unit)
                                             : 0;
    }
    frame_cursor_close(&c);
}
