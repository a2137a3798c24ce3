/* What every output asks of a recording: ticks as nanoseconds, the clock, locations, thread
 * labels, object names and where frame times count from; and the order its engine items are
 * kept in. Reads the struct recording only. */
#include "recording.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "work.h"

double recording_ns(const struct recording *rec, uint64_t ticks)
{
    return (double)ticks * rec->ns_per_tick;
}

int64_t recording_mono_ns(const struct recording *rec, uint64_t ticks)
{
    /* Saturated at a quarter of int64_t's range either way: a recording's ticks and base may
     * be anything, and callers subtract one such time from another. */
    const double limit = (double)(INT64_MAX / 4);
    double scaled = (double)(int64_t)(ticks - rec->clock_base_ticks) * rec->ns_per_tick;
    int64_t base = rec->clock_base_ns > INT64_MAX / 4    ? INT64_MAX / 4
                   : rec->clock_base_ns < -(INT64_MAX / 4) ? -(INT64_MAX / 4)
                                                           : rec->clock_base_ns;
    int64_t delta = scaled >= limit ? INT64_MAX / 4 : scaled <= -limit ? -(INT64_MAX / 4)
                                                                        : (int64_t)scaled;
    return base + delta;
}

const char *recording_clock_describe(const struct recording *rec, char *buf, size_t len)
{
    if (!rec->clock_tsc)
        snprintf(buf, len, "clock_gettime(CLOCK_MONOTONIC) (no invariant TSC: readings carry "
                 "its cost)");
    else
        snprintf(buf, len, "tsc (invariant, %.4f GHz calibrated against CLOCK_MONOTONIC)",
                 1.0 / rec->ns_per_tick);
    return buf;
}

const struct rec_loc *recording_loc_find(const struct recording *rec, const void *address)
{
    uint64_t key = (uint64_t)(uintptr_t)address;
    size_t lo = 0, hi = rec->loc_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t a = atomic_load_explicit(&rec->locs[mid].address, memory_order_relaxed);
        if (a == key)
            return &rec->locs[mid];
        if (a < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int64_t ns_sum(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

const char *recording_thread_label(const struct recording *rec, int tid, char *buf, size_t len)
{
    for (unsigned i = 0; i < rec->thread_count; i++) {
        if (rec->threads[i].tid == tid && rec->threads[i].state != SLOT_EXTERNAL) {
            snprintf(buf, len, "%s (tid %d)", rec->threads[i].name, tid);
            return buf;
        }
    }
    snprintf(buf, len, "tid %d", tid);
    return buf;
}

uint64_t frames_origin_ticks(const struct recording *rec)
{
    uint64_t origin = UINT64_MAX;
    unsigned logs = rec->log_count;
    for (unsigned l = 0; l < logs; l++) {
        const struct recording_log *log = &rec->logs[l];
        if (log->frame_count && log->first_start_ticks < origin)
            origin = log->first_start_ticks;
    }
    return origin == UINT64_MAX ? 0 : origin;
}

const char *recording_object_name(const struct recording *rec, uint32_t device_id, int32_t type,
                                  uint64_t handle)
{
    if (!handle)
        return NULL;
    const struct object_name *found = NULL;
    if (!rec->object_name_index) {
        work_visited(rec->object_name_count);
        for (uint64_t i = 0; i < rec->object_name_count; i++) {
            const struct object_name *n = &rec->object_names[i];
            if (n->handle == handle && n->type == type && n->device_id == device_id)
                found = n; /* the latest wins */
        }
    } else {
        /* The first entry after (device, type, handle); the one before it is the latest of
         * the handle's. */
        work_visited(1);
        size_t low = 0, high = rec->object_name_count;
        while (low < high) {
            size_t middle = low + (high - low) / 2;
            const struct object_name *n = rec->object_name_index[middle];
            bool before = n->device_id < device_id ||
                          (n->device_id == device_id &&
                           (n->type < type || (n->type == type && n->handle <= handle)));
            if (before)
                low = middle + 1;
            else
                high = middle;
        }
        const struct object_name *n = low ? rec->object_name_index[low - 1] : NULL;
        if (n && n->device_id == device_id && n->type == type && n->handle == handle)
            found = n;
    }
    return found && found->name[0] ? found->name : NULL;
}

/* The engine's items, GPU spans and zones in the order the model keeps them: by their end
 * (their begin for spans), then whatever tells two apart (equal ones need no order). */
#define ORDER(x, y) \
    if ((x) != (y)) \
        return (x) < (y) ? -1 : 1

static int recording_order(const void *a, const void *b)
{
    const struct cmd_recording *x = a, *y = b;
    ORDER(x->end_ticks, y->end_ticks);
    ORDER(x->begin_ticks, y->begin_ticks);
    ORDER(x->tid, y->tid);
    ORDER(x->device_id, y->device_id);
    ORDER(x->cb, y->cb);
    return memcmp(a, b, sizeof(*x));
}

static int pool_op_order(const void *a, const void *b)
{
    const struct pool_op *x = a, *y = b;
    ORDER(x->end_ticks, y->end_ticks);
    ORDER(x->begin_ticks, y->begin_ticks);
    ORDER(x->tid, y->tid);
    return memcmp(a, b, sizeof(*x));
}

/* GPU spans by begin: the order every union of them is merged in. Every field is compared, so
 * spans that compare equal are the same bytes, and the order the span logs are pushed in never
 * shows (the exit's read-ahead pushes theirs first: recording_early.c). */
_Static_assert(sizeof(struct gpu_span) == 2 * sizeof(uint64_t) + 2 * sizeof(uint32_t),
               "span_order compares every byte of a span");
static int span_order(const void *a, const void *b)
{
    const struct gpu_span *x = a, *y = b;
    ORDER(x->begin, y->begin);
    ORDER(x->end, y->end);
    ORDER(x->device_id, y->device_id);
    ORDER(x->flags, y->flags);
    return 0;
}

/* GPU zones by end: the order hitches find those that ended in a frame. */
static int gpu_zone_order(const void *a, const void *b)
{
    const struct gpu_zone_span *x = a, *y = b;
    ORDER(x->end, y->end);
    ORDER(x->device_id, y->device_id);
    ORDER(x->begin, y->begin);
    ORDER(x->depth, y->depth);
    ORDER(x->name, y->name);
    ORDER(x->kind, y->kind);
    return 0;
}

#undef ORDER

/* Pipelines by the end of their create call, then as recorded. */
static int pipeline_item_order(const void *a, const void *b)
{
    const struct pipeline_item *x = a, *y = b;
    if (x->pipeline.end_ticks != y->pipeline.end_ticks)
        return x->pipeline.end_ticks < y->pipeline.end_ticks ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void recording_span_sorter_init(struct sorter *spans)
{
    sorter_init(spans, sizeof(struct gpu_span), span_order, 0);
}

void recording_spans_init(struct recording *rec)
{
    sorter_init(&rec->pipelines, sizeof(struct pipeline_item), pipeline_item_order, 0);
    recording_span_sorter_init(&rec->spans);
    sorter_init(&rec->gpu_zones, sizeof(struct gpu_zone_span), gpu_zone_order, 0);
}

uint64_t sched_seq(const struct sched_event *e)
{
    uint64_t seq = 0;
    for (unsigned b = 0; b < sizeof(e->reserved); b++)
        seq |= (uint64_t)e->reserved[b] << (8 * b);
    return seq;
}

/* The threads' events by time, then in the order recorded. */
static int sched_order(const void *a, const void *b)
{
    const struct sched_event *x = a, *y = b;
    if (x->ticks != y->ticks)
        return x->ticks < y->ticks ? -1 : 1;
    uint64_t p = sched_seq(x), q = sched_seq(y);
    return p < q ? -1 : p > q;
}

void recording_kernel_init(struct recording_kernel *k)
{
    sorter_init(&k->samples, sizeof(struct kernel_sample), sorter_as_pushed, 0);
    sorter_init(&k->drm_samples, sizeof(struct drm_sample), sorter_as_pushed, 0);
    sorter_init(&k->sched_events, sizeof(struct sched_event), sched_order, 0);
}

bool recording_sched_add(struct recording_kernel *k, const struct sched_event *e)
{
    uint64_t seq = k->sched_count++;
    struct sched_event copy = *e;
    for (unsigned b = 0; b < sizeof(copy.reserved); b++)
        copy.reserved[b] = (unsigned char)(seq >> (8 * b));
    if (e->kind < SCHED_EVENT_PAUSED)
        return sorter_push(&k->sched_events, &copy);
    if (k->sched_marks == k->sched_mark_room) {
        uint64_t room = k->sched_mark_room ? 2 * k->sched_mark_room : 16;
        struct sched_event *more = realloc(k->sched_mark_list, room * sizeof(*more));
        if (!more)
            return false;
        k->sched_mark_list = more;
        k->sched_mark_room = room;
    }
    k->sched_mark_list[k->sched_marks++] = copy;
    return true;
}

/* Memory events by time, then in the order recorded: the order they are replayed in. */
static int memory_item_order(const void *a, const void *b)
{
    const struct memory_item *x = a, *y = b;
    if (x->event.ticks != y->event.ticks)
        return x->event.ticks < y->event.ticks ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void recording_engine_init(struct recording_engine *g)
{
    sorter_init(&g->memory, sizeof(struct memory_item), memory_item_order, 0);
    sorter_init(&g->recordings, sizeof(struct cmd_recording), recording_order, 0);
    sorter_init(&g->pool_ops, sizeof(struct pool_op), pool_op_order, 0);
    sorter_init(&g->budgets, sizeof(struct budget_sample), sorter_as_pushed, 0);
    sorter_init(&g->gauges, sizeof(struct gauge_sample), sorter_as_pushed, 0);
}
