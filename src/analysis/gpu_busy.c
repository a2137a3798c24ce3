/* GPU busy time from the recording's GPU spans: per device, per frame and per block. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

static int span_compare(const void *a, const void *b)
{
    const struct gpu_span *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* The union of one device's GPU spans (every device's for device_id 0), sorted; spans on
 * several queues (and real GPUs) overlap. Returns the count; *ret is malloc'd (NULL if none);
 * ret_raw, if not NULL, gets how many spans went into the union. */
static uint64_t device_busy_union(const struct recording *rec, uint32_t device_id,
                                  struct gpu_span **ret, uint64_t *ret_raw)
{
    uint64_t total = rec->span_count;
    *ret = NULL;
    if (ret_raw)
        *ret_raw = 0;
    struct gpu_span *spans = total ? malloc(total * sizeof(*spans)) : NULL;
    if (!spans)
        return 0;
    uint64_t n = 0;
    for (uint64_t j = 0; j < total; j++)
        if (device_id == 0 || rec->spans[j].device_id == device_id)
            spans[n++] = rec->spans[j];
    if (ret_raw)
        *ret_raw = n;
    qsort(spans, n, sizeof(*spans), span_compare);
    uint64_t merged = 0;
    for (uint64_t j = 0; j < n; j++) {
        if (merged && spans[j].begin <= spans[merged - 1].end) {
            if (spans[j].end > spans[merged - 1].end)
                spans[merged - 1].end = spans[j].end;
        } else {
            spans[merged++] = spans[j];
        }
    }
    *ret = spans;
    return merged;
}

/* Busy time of the sorted, disjoint spans[lo..] inside [begin, end). */
static uint64_t busy_within(const struct gpu_span *spans, uint64_t count, uint64_t lo,
                            uint64_t begin, uint64_t end)
{
    uint64_t busy = 0;
    for (uint64_t j = lo; j < count && spans[j].begin < end; j++) {
        uint64_t b = spans[j].begin > begin ? spans[j].begin : begin;
        uint64_t e = spans[j].end < end ? spans[j].end : end;
        if (e > b)
            busy += e - b;
    }
    return busy;
}

void device_gpu_totals(const struct recording *rec, uint32_t device_id, uint64_t *ret_busy_ticks,
                       uint64_t *ret_spans)
{
    struct gpu_span *spans;
    uint64_t raw = 0;
    uint64_t n = device_busy_union(rec, device_id, &spans, &raw);
    uint64_t busy = 0;
    for (uint64_t j = 0; j < n; j++)
        busy += spans[j].end - spans[j].begin;
    free(spans);
    *ret_busy_ticks = busy;
    *ret_spans = raw;
}

void recording_compute_gpu_busy(struct recording *rec)
{
    for (unsigned l = 0; l < rec->log_count; l++) {
        struct recording_log *log = &rec->logs[l];
        uint64_t count = log->frame_count;
        uint32_t device = UINT32_MAX;
        struct gpu_span *spans = NULL;
        uint64_t merged = 0, lo = 0;
        for (uint64_t f = 0; f < count; f++) {
            struct fscope_frame *frame = &log->frames[f];
            if (frame->device_id != device) {
                /* A surface keeps its device for most of its life: rebuild only on a change. */
                free(spans);
                device = frame->device_id;
                merged = device_busy_union(rec, device, &spans, NULL);
                lo = 0;
            }
            /* Frames of one log are in time order, so the search start only moves forward. */
            while (lo < merged && spans[lo].end <= frame->start_ticks)
                lo++;
            frame->gpu_busy_ticks = busy_within(spans, merged, lo, frame->start_ticks,
                                                frame->end_ticks);
            memset(frame->block_gpu_ticks, 0, sizeof(frame->block_gpu_ticks));
            for (unsigned i = 0; i < frame->block_span_count; i++) {
                unsigned kind = frame->block_span_kind[i];
                frame->block_gpu_ticks[kind] +=
                    busy_within(spans, merged, lo, frame->block_span_start[i],
                                frame->block_span_end[i]);
            }
            for (unsigned b = 0; b < FSCOPE_BLOCK_COUNT; b++)
                if (frame->block_gpu_ticks[b] > frame->block_ticks[b])
                    frame->block_gpu_ticks[b] = frame->block_ticks[b];
        }
        free(spans);
    }
}
