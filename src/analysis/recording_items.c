/* Items as the reader takes them, wherever they are read (recording.c at the end, and
 * recording_early.c ahead of the app's exit): each frame and each of the engine's sorted items
 * checked the one way, and which arrays the reader keeps in a sorter of their own. */
#include <string.h>

#include "frames.h"
#include "recording_check.h"

static int check_frame(struct reader *r, const char *label, const struct fscope_frame *f,
                       uint64_t i)
{
    /* A bool's byte as written: any other value than 0 or 1 is no bool to load. */
    unsigned char ambiguous;
    memcpy(&ambiguous, &f->output_ambiguous, 1);
    bool ok = f->block_span_count <= FRAME_BLOCK_SPANS && f->present_state < FRAME_PRESENT_STATE_COUNT &&
              f->end_ticks >= f->start_ticks && ambiguous <= 1;
    for (unsigned s = 0; ok && s < f->block_span_count; s++)
        ok = f->block_span_kind[s] < FSCOPE_BLOCK_COUNT &&
             f->block_span_end[s] >= f->block_span_start[s];
    if (!ok)
        return reader_malformed(r, "frame %llu of surface '%s' is malformed", (unsigned long long)i,
                         label);
    return 0;
}

int reader_frames_take(struct reader *r, struct recording_log *log, const char *label,
                       struct fscope_frame *frames, const void *items, uint64_t first,
                       uint64_t n, uint32_t chunk_items)
{
    memcpy(frames, items, n * sizeof(*frames));
    for (uint64_t i = 0; i < n; i++) {
        /* Analysis fills these (recording_compute_gpu_busy): the app leaves them 0. */
        struct fscope_frame *f = &frames[i];
        f->gpu_busy_ticks = 0;
        f->gpu_unsampled = 0;
        memset(f->block_gpu_ticks, 0, sizeof(f->block_gpu_ticks));
        int e = check_frame(r, label, f, first + i);
        if (e)
            return e;
    }
    return frame_store_append(log, chunk_items, frames, n);
}

int reader_span_check(struct reader *r, const void *item)
{
    const struct gpu_span *span = item;
    return span->end < span->begin ? reader_malformed(r, "a GPU span ends before it begins") : 0;
}

int reader_cmd_recording_check(struct reader *r, const void *item)
{
    const struct cmd_recording *x = item;
    if (x->end_ticks < x->begin_ticks)
        return reader_malformed(r, "a command buffer recording ends before it begins");
    return 0;
}

int reader_pool_op_check(struct reader *r, const void *item)
{
    const struct pool_op *op = item;
    if (op->end_ticks < op->begin_ticks || op->kind < POOL_OP_RESET_POOL || op->kind > POOL_OP_TRIM)
        return reader_malformed(r, "a command pool call of kind %u ends before it begins, or is no "
                                "kind known", op->kind);
    return 0;
}

int reader_budget_check(struct reader *r, const void *item)
{
    const struct budget_sample *b = item;
    if (b->heap_count > BUDGET_HEAPS)
        return reader_malformed(r, "a memory budget of %u heaps", b->heap_count);
    return 0;
}

bool reader_sorted_array(uint32_t type, size_t field, struct sorter *ret_sorter,
                         reader_item_check *ret_check, bool *ret_shared)
{
    *ret_shared = false;
    if (type == REC_OBJ_SPAN_LOG && field == offsetof(struct rec_span_log, spans)) {
        recording_span_sorter_init(ret_sorter); /* every span log's, into one */
        *ret_check = reader_span_check;
        *ret_shared = true;
        return true;
    }
    if (type != REC_OBJ_ENGINE)
        return false;
    struct recording_engine g;
    recording_engine_init(&g); /* allocates nothing */
    if (field == offsetof(struct rec_engine, recordings)) {
        *ret_sorter = g.recordings;
        *ret_check = reader_cmd_recording_check;
    } else if (field == offsetof(struct rec_engine, pool_ops)) {
        *ret_sorter = g.pool_ops;
        *ret_check = reader_pool_op_check;
    } else if (field == offsetof(struct rec_engine, budgets)) {
        *ret_sorter = g.budgets;
        *ret_check = reader_budget_check;
    } else if (field == offsetof(struct rec_engine, gauges)) {
        *ret_sorter = g.gauges;
        *ret_check = NULL;
    } else {
        return false;
    }
    return true;
}
