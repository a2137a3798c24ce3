#include "engine.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "emit.h"
#include "work.h"

/* VkObjectType values (analysis does not see Vulkan's headers). */
#define OBJECT_TYPE_COMMAND_BUFFER 6
#define OBJECT_TYPE_DEVICE_MEMORY 8
#define OBJECT_TYPE_COMMAND_POOL 25
#define OBJECT_TYPE_DESCRIPTOR_POOL 22

static const char *const bind_kind_names[BIND_KINDS] = {
    [BIND_PIPELINE] = "pipeline",
    [BIND_VERTEX] = "vertex-buffer",
    [BIND_INDEX] = "index-buffer",
    [BIND_DESCRIPTOR] = "descriptor-set",
    [BIND_PUSH_DESCRIPTOR] = "push-descriptor",
    [BIND_DYNAMIC_STATE] = "dynamic-state",
};
static const char *const bind_kind_keys[BIND_KINDS] = {
    [BIND_PIPELINE] = "pipeline",
    [BIND_VERTEX] = "vertex_buffer",
    [BIND_INDEX] = "index_buffer",
    [BIND_DESCRIPTOR] = "descriptor_set",
    [BIND_PUSH_DESCRIPTOR] = "push_descriptor",
    [BIND_DYNAMIC_STATE] = "dynamic_state",
};

/* "'name'" when the app named it, else "what 0x1234". */
static const char *object_label(const struct recording *rec, uint32_t device_id, int32_t type,
                                uint64_t handle, const char *what, char *buf, size_t len)
{
    const char *name = recording_object_name(rec, device_id, type, handle);
    if (name)
        snprintf(buf, len, "'%s'", name);
    else
        snprintf(buf, len, "%s 0x%" PRIx64, what, handle);
    return buf;
}

static double ms(const struct recording *rec, uint64_t ticks)
{
    return recording_ns(rec, ticks) / 1e6;
}

static double per_frame(double total, uint64_t frames)
{
    return frames ? total / (double)frames : 0.0;
}

/* ---- compute ---- */

/* Threads, pools and heaps found by key (open addressing): a run may record from thousands of
 * pools or threads, and every recording, call and sample looks its own up (before, each walked
 * them all: recordings x pools, issue 35). */
struct key_slot {
    uint64_t a;
    uint32_t b;
    uint32_t index; /* + 1 into its array; 0: free */
};
struct key_index {
    struct key_slot *slots;
    size_t capacity, count;
};
struct engine_lookup {
    struct key_index threads, pools, heaps;
    size_t thread_capacity, pool_capacity, heap_capacity;
};

static size_t key_start(uint64_t a, uint32_t b, size_t capacity)
{
    uint64_t h = (a ^ ((uint64_t)b << 32 | b)) * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(h >> 32) & (capacity - 1);
}

/* The array index of key (a, b), or -1. */
static int64_t key_find(const struct key_index *x, uint64_t a, uint32_t b)
{
    work_visited(1);
    if (!x->capacity)
        return -1;
    for (size_t i = key_start(a, b, x->capacity);; i = (i + 1) & (x->capacity - 1)) {
        const struct key_slot *slot = &x->slots[i];
        if (!slot->index)
            return -1;
        if (slot->a == a && slot->b == b)
            return (int64_t)slot->index - 1;
    }
}

/* Adds key (a, b) at index (new to x). False when memory ran out. */
static bool key_add(struct key_index *x, uint64_t a, uint32_t b, uint32_t index)
{
    if (2 * (x->count + 1) > x->capacity) {
        size_t capacity = x->capacity ? 2 * x->capacity : 64;
        struct key_slot *slots = calloc(capacity, sizeof(*slots));
        if (!slots)
            return false;
        for (size_t i = 0; i < x->capacity; i++) {
            const struct key_slot *old = &x->slots[i];
            if (!old->index)
                continue;
            size_t at = key_start(old->a, old->b, capacity);
            while (slots[at].index)
                at = (at + 1) & (capacity - 1);
            slots[at] = *old;
        }
        free(x->slots);
        x->slots = slots;
        x->capacity = capacity;
    }
    size_t at = key_start(a, b, x->capacity);
    while (x->slots[at].index)
        at = (at + 1) & (x->capacity - 1);
    x->slots[at] = (struct key_slot){ a, b, index + 1 };
    x->count++;
    return true;
}

static void engine_lookup_free(struct engine_lookup *k)
{
    free(k->threads.slots);
    free(k->pools.slots);
    free(k->heaps.slots);
}

/* Room for one more of an array of count entries of size bytes, doubling. */
static bool grow(void **array, size_t *capacity, size_t count, size_t size)
{
    if (count < *capacity)
        return true;
    size_t more = *capacity ? 2 * *capacity : 16;
    void *grown = realloc(*array, more * size);
    if (!grown)
        return false;
    *array = grown;
    *capacity = more;
    return true;
}

static struct engine_thread *thread_of(struct engine_stats *s, struct engine_lookup *k, int tid)
{
    int64_t at = key_find(&k->threads, (uint64_t)(uint32_t)tid, 0);
    if (at >= 0)
        return &s->threads[at];
    void *threads = s->threads;
    if (s->thread_count >= UINT32_MAX - 1 ||
        !grow(&threads, &k->thread_capacity, s->thread_count, sizeof(*s->threads)))
        return NULL;
    s->threads = threads;
    if (!key_add(&k->threads, (uint64_t)(uint32_t)tid, 0, s->thread_count))
        return NULL;
    struct engine_thread *t = &s->threads[s->thread_count++];
    memset(t, 0, sizeof(*t));
    t->tid = tid;
    t->oncpu_ns = t->runnable_ns = -1;
    return t;
}

static struct engine_pool *pool_of(struct engine_stats *s, struct engine_lookup *k, uint64_t pool,
                                   uint32_t device_id)
{
    int64_t at = key_find(&k->pools, pool, device_id);
    if (at >= 0)
        return &s->pools[at];
    void *pools = s->pools;
    if (s->pool_count >= UINT32_MAX - 1 ||
        !grow(&pools, &k->pool_capacity, s->pool_count, sizeof(*s->pools)))
        return NULL;
    s->pools = pools;
    if (!key_add(&k->pools, pool, device_id, s->pool_count))
        return NULL;
    struct engine_pool *p = &s->pools[s->pool_count++];
    memset(p, 0, sizeof(*p));
    p->pool = pool;
    p->device_id = device_id;
    return p;
}

static struct engine_heap *heap_of(struct engine_stats *s, struct engine_lookup *k,
                                   const struct recording *rec, uint32_t device_id, uint32_t heap)
{
    int64_t at = key_find(&k->heaps, heap, device_id);
    if (at >= 0)
        return &s->heaps[at];
    void *heaps = s->heaps;
    if (s->heap_count >= UINT32_MAX - 1 ||
        !grow(&heaps, &k->heap_capacity, s->heap_count, sizeof(*s->heaps)))
        return NULL;
    s->heaps = heaps;
    if (!key_add(&k->heaps, heap, device_id, s->heap_count))
        return NULL;
    struct engine_heap *h = &s->heaps[s->heap_count++];
    memset(h, 0, sizeof(*h));
    h->device_id = device_id;
    h->heap = heap;
    const struct recording_engine *g = &rec->engine;
    for (unsigned i = 0; i < g->memory_props_count; i++)
        if (g->memory_props[i].device_id == device_id && heap < g->memory_props[i].heap_count) {
            h->size = g->memory_props[i].heap_size[heap];
            h->device_local = g->memory_props[i].heap_flags[heap] & MEMORY_HEAP_DEVICE_LOCAL;
        }
    return h;
}

static int compare_thread_ticks(const void *a, const void *b)
{
    const struct engine_thread *x = a, *y = b;
    return x->ticks < y->ticks ? 1 : x->ticks > y->ticks ? -1 : x->tid - y->tid;
}

static int compare_pool_ticks(const void *a, const void *b)
{
    const struct engine_pool *x = a, *y = b;
    uint64_t tx = x->record_ticks + x->op_ticks, ty = y->record_ticks + y->op_ticks;
    return tx < ty ? 1 : tx > ty ? -1 : 0;
}

/* Live allocations by handle and device: open addressing, grown at half full; each slot a
 * copy of its allocation (the events are read through a cursor). */
struct live_slot {
    bool used;
    struct memory_event alloc;
};
struct live_map {
    struct live_slot *slots;
    uint64_t capacity, count;
};

static uint64_t live_hash(uint64_t handle, uint32_t device_id)
{
    uint64_t h = (handle ^ ((uint64_t)device_id << 56)) * UINT64_C(0x9e3779b97f4a7c15);
    return h ^ (h >> 31);
}

static bool live_put(struct live_map *m, const struct memory_event *e);

static bool live_grow(struct live_map *m)
{
    struct live_map bigger = { calloc(m->capacity ? m->capacity * 2 : 1024, sizeof(*m->slots)),
                               m->capacity ? m->capacity * 2 : 1024, 0 };
    if (!bigger.slots)
        return false;
    for (uint64_t i = 0; i < m->capacity; i++)
        if (m->slots[i].used)
            live_put(&bigger, &m->slots[i].alloc);
    free(m->slots);
    *m = bigger;
    return true;
}

static bool live_put(struct live_map *m, const struct memory_event *e)
{
    if ((m->count + 1) * 2 > m->capacity && !live_grow(m))
        return false;
    uint64_t i = live_hash(e->handle, e->device_id) & (m->capacity - 1);
    while (m->slots[i].used)
        i = (i + 1) & (m->capacity - 1);
    m->slots[i] = (struct live_slot){ true, *e };
    m->count++;
    return true;
}

/* Takes the allocation of handle out of the map (backward-shift deletion) into *ret; false if
 * none. */
static bool live_take(struct live_map *m, uint64_t handle, uint32_t device,
                      struct memory_event *ret)
{
    if (!m->capacity)
        return false;
    uint64_t mask = m->capacity - 1, i = live_hash(handle, device) & mask;
    while (m->slots[i].used &&
           (m->slots[i].alloc.handle != handle || m->slots[i].alloc.device_id != device))
        i = (i + 1) & mask;
    if (!m->slots[i].used)
        return false;
    *ret = m->slots[i].alloc;
    m->slots[i].used = false;
    m->count--;
    for (uint64_t j = (i + 1) & mask; m->slots[j].used; j = (j + 1) & mask) {
        struct memory_event moved = m->slots[j].alloc;
        m->slots[j].used = false;
        m->count--;
        live_put(m, &moved);
    }
    return true;
}

/* The device memory's allocations and frees replayed in time order: what is live, at its
 * peak, in each heap, the largest, and a point of the live bytes at each event. */
static void compute_memory(const struct recording *rec, struct engine_stats *s,
                           struct engine_lookup *lookup)
{
    const struct recording_engine *g = &rec->engine;
    sorter_init(&s->live_points, sizeof(struct engine_live_point), sorter_as_pushed, 0);
    struct sorter_cursor c;
    bool open = g->memory_count && sorter_cursor_open(&c, &g->memory);
    struct live_map live = { 0 };
    for (const struct memory_item *item; open && (item = sorter_next(&c));) {
        const struct memory_event *e = &item->event;
        if (e->kind == MEMORY_ALLOC_FAILED) {
            s->failed++;
            continue;
        }
        if (e->kind == MEMORY_ALLOC) {
            s->allocations++;
            s->alloc_bytes += e->size;
            if (!live_put(&live, e))
                continue;
            s->live_bytes += e->size;
            struct engine_heap *h = heap_of(s, lookup, rec, e->device_id, e->heap_index);
            if (h) {
                h->allocations++;
                h->live_count++;
                h->live_bytes += e->size;
                if (h->live_bytes > h->peak_bytes)
                    h->peak_bytes = h->live_bytes;
            }
            /* The largest, biggest first. */
            unsigned at = s->largest_count < 5 ? s->largest_count++ : 5;
            while (at > 0 && s->largest[at - 1].size < e->size) {
                if (at < 5)
                    s->largest[at] = s->largest[at - 1];
                at--;
            }
            if (at < 5)
                s->largest[at] = *e;
        } else {
            s->frees++;
            struct memory_event a;
            if (live_take(&live, e->handle, e->device_id, &a)) {
                s->live_bytes -= a.size;
                struct engine_heap *h = heap_of(s, lookup, rec, a.device_id, a.heap_index);
                if (h) {
                    h->live_bytes -= a.size;
                    h->live_count--;
                }
            }
        }
        if (s->live_bytes > s->peak_bytes)
            s->peak_bytes = s->live_bytes;
        const struct engine_live_point point = { e->ticks, s->live_bytes };
        s->live_point_count += sorter_push(&s->live_points, &point);
    }
    if (open)
        sorter_cursor_close(&c);
    sorter_finish(&s->live_points);
    free(live.slots);
}

static void compute_budget(const struct recording *rec, struct engine_stats *s,
                           struct engine_lookup *lookup)
{
    const struct recording_engine *g = &rec->engine;
    for (unsigned i = 0; i < g->memory_props_count; i++)
        if (g->memory_props[i].budget) {
            s->budget_supported_somewhere = true;
            for (uint32_t h = 0; h < g->memory_props[i].heap_count && h < BUDGET_HEAPS; h++)
                heap_of(s, lookup, rec, g->memory_props[i].device_id, h);
        }
    struct sorter_cursor c;
    bool open = g->budget_count && sorter_cursor_open(&c, &g->budgets);
    for (const struct budget_sample *b; open && (b = sorter_next(&c));) {
        for (uint32_t k = 0; k < b->heap_count; k++) {
            struct engine_heap *h = heap_of(s, lookup, rec, b->device_id, k);
            if (!h)
                continue;
            h->budget_read = true;
            h->budget = b->budget[k];
            h->usage = b->usage[k];
            h->samples++;
            if (b->usage[k] > b->budget[k])
                h->over_budget_samples++;
            if (b->usage[k] >= h->peak_usage) {
                h->peak_usage = b->usage[k];
                h->peak_usage_budget = b->budget[k];
            }
        }
    }
    if (open)
        sorter_cursor_close(&c);
}

void engine_compute(const struct recording *rec, uint64_t frames, struct engine_stats *ret)
{
    struct engine_stats *s = ret;
    memset(s, 0, sizeof(*s));
    const struct recording_engine *g = &rec->engine;
    s->present = g->present;
    s->frames = frames;
    if (!g->present)
        return;
    struct engine_lookup k = { 0 };
    struct sorter_cursor c;
    const struct cmd_recording *r;
    const struct pool_op *op;
    bool open = sorter_cursor_open(&c, &g->recordings);
    while (open && (r = sorter_next(&c))) {
        uint64_t ticks = r->end_ticks - r->begin_ticks;
        bool secondary = r->flags & CMD_RECORDING_SECONDARY;
        s->recordings++;
        s->commands += r->commands;
        s->record_ticks += ticks;
        if (secondary) {
            s->secondary_recordings++;
            s->secondary_ticks += ticks;
        }
        struct engine_thread *t = thread_of(s, &k, r->tid);
        if (t) {
            t->recordings++;
            t->commands += r->commands;
            t->ticks += ticks;
            if (secondary) {
                t->secondary_recordings++;
                t->secondary_ticks += ticks;
            }
        }
        struct engine_pool *p = pool_of(s, &k, r->pool, r->device_id);
        if (p) {
            p->recordings++;
            p->record_ticks += ticks;
        }
    }
    if (open)
        sorter_cursor_close(&c);
    open = sorter_cursor_open(&c, &g->pool_ops);
    while (open && (op = sorter_next(&c))) {
        s->pool_op_ticks += op->end_ticks - op->begin_ticks;
        struct engine_pool *p = pool_of(s, &k, op->pool, op->device_id);
        if (p) {
            p->ops[op->kind]++;
            p->op_ticks += op->end_ticks - op->begin_ticks;
        }
    }
    if (open)
        sorter_cursor_close(&c);
    /* Each thread's CPU time: the sampler's totals are since the thread started, so its last
     * sample holds the whole run up to its last tick. */
    const struct kernel_sample *sample;
    open = s->thread_count && sorter_cursor_open(&c, &rec->kernel.samples);
    while (open && (sample = sorter_next(&c))) {
        int64_t t = key_find(&k.threads, (uint64_t)(uint32_t)sample->tid, 0);
        if (t >= 0) {
            s->threads[t].oncpu_ns = (int64_t)sample->oncpu_ns;
            s->threads[t].runnable_ns = (int64_t)sample->runnable_ns;
            s->threads[t].last_sample_ticks = sample->ticks;
        }
    }
    if (open)
        sorter_cursor_close(&c);
    open = s->thread_count && sorter_cursor_open(&c, &g->recordings);
    while (open && (r = sorter_next(&c))) {
        int64_t t = key_find(&k.threads, (uint64_t)(uint32_t)r->tid, 0);
        if (t >= 0 && s->threads[t].oncpu_ns >= 0 &&
            r->end_ticks <= s->threads[t].last_sample_ticks)
            s->threads[t].sampled_ticks += r->end_ticks - r->begin_ticks;
    }
    if (open)
        sorter_cursor_close(&c);
    if (s->thread_count)
        qsort(s->threads, s->thread_count, sizeof(*s->threads), compare_thread_ticks);
    if (s->pool_count)
        qsort(s->pools, s->pool_count, sizeof(*s->pools), compare_pool_ticks);
    compute_memory(rec, s, &k);
    compute_budget(rec, s, &k);
    engine_lookup_free(&k);
    const struct gauge_sample *gs;
    open = g->gauge_count && sorter_cursor_open(&c, &g->gauges);
    while (open && (gs = sorter_next(&c))) {
        if (gs->rss_bytes > s->rss_peak)
            s->rss_peak = gs->rss_bytes;
        s->rss_end = gs->rss_bytes;
        if (gs->descriptor_sets > s->sets_peak) {
            s->sets_peak = gs->descriptor_sets;
            s->capacity_at_peak = gs->descriptor_capacity;
        }
        s->sets_end = gs->descriptor_sets;
        s->capacity_end = gs->descriptor_capacity;
        s->pools_end = gs->descriptor_pools;
    }
    if (open)
        sorter_cursor_close(&c);
    for (unsigned i = 0; i < g->descriptor_pool_count; i++)
        s->descriptor_failures += g->descriptor_pools[i].failures;
}

const char *engine_bind_key(unsigned kind)
{
    return kind < BIND_KINDS ? bind_kind_keys[kind] : "";
}

void engine_window_init(struct engine_window *w, const struct recording *rec)
{
    memset(w, 0, sizeof(*w));
    w->rec = rec;
}

/* The pass from the first recording again: held emptied. */
static bool window_restart(struct engine_window *w)
{
    if (w->open)
        sorter_cursor_close(&w->c);
    w->held.first = w->held.count = 0;
    w->done = false;
    w->open = sorter_cursor_open(&w->c, &w->rec->engine.recordings);
    return w->open;
}

/* Holds the next recording of the pass; false after the last or when memory ran out. */
static bool window_read(struct engine_window *w)
{
    const struct cmd_recording *r = w->done ? NULL : sorter_next(&w->c);
    if (!r) {
        w->done = true;
        return false;
    }
    if (!held_push(&w->held, r, sizeof(*r))) {
        w->done = true;
        return false;
    }
    return true;
}

void engine_frame_recording(struct engine_window *w, uint64_t start, uint64_t end,
                            unsigned *ret_threads, uint64_t *ret_busiest_ticks)
{
    *ret_threads = 0;
    *ret_busiest_ticks = 0;
    if (!w->rec->engine.recording_count)
        return;
    if ((!w->open || start < w->last_start) && !window_restart(w))
        return;
    w->last_start = start;
    /* Held in the order they ended: those that ended before start are no frame's now. */
    struct held *h = &w->held;
    const struct cmd_recording *held = (const struct cmd_recording *)h->items;
    while (h->first < h->count && held[h->first].end_ticks < start)
        h->first++;
    while ((h->first == h->count || held[h->count - 1].end_ticks < end) && window_read(w)) {
        held = (const struct cmd_recording *)h->items; /* moved as it grew */
        if (held[h->count - 1].end_ticks < start)
            h->first = h->count; /* before this frame: dropped as read */
    }
    struct {
        int tid;
        uint64_t ticks;
    } threads[32];
    unsigned count = 0;
    work_visited(1);
    for (size_t i = h->first; i < h->count; i++) {
        const struct cmd_recording *r = &held[i];
        work_visited(1);
        if (r->end_ticks >= end)
            break;
        unsigned t = 0;
        while (t < count && threads[t].tid != r->tid)
            t++;
        if (t == count) {
            if (count == 32)
                continue;
            threads[count].tid = r->tid;
            threads[count++].ticks = 0;
        }
        threads[t].ticks += r->end_ticks - r->begin_ticks;
        if (threads[t].ticks > *ret_busiest_ticks)
            *ret_busiest_ticks = threads[t].ticks;
    }
    *ret_threads = count;
}

void engine_window_free(struct engine_window *w)
{
    if (w->open)
        sorter_cursor_close(&w->c);
    held_free(&w->held);
    memset(w, 0, sizeof(*w));
}

void engine_stats_finish(struct engine_stats *s)
{
    free(s->threads);
    free(s->pools);
    free(s->heaps);
    sorter_free(&s->live_points);
    memset(s, 0, sizeof(*s));
}

/* ---- writing ---- */

static const char *site_label(const struct recording *rec, const struct bind_site *site,
                              char *buf, size_t len)
{
    if (site->kind == BIND_SITE_LABEL)
        snprintf(buf, len, "label '%s'", site->name);
    else if (site->kind == BIND_SITE_PIPELINE) {
        char name[96];
        snprintf(buf, len, "pipeline %s",
                 object_label(rec, site->device_id, OBJECT_TYPE_PIPELINE, site->handle, "", name, sizeof(name)));
        /* An unnamed pipeline reads "pipeline  0x..." from the empty what: tidy it. */
        if (strncmp(buf, "pipeline  ", 10) == 0)
            memmove(buf + 9, buf + 10, strlen(buf + 10) + 1);
    } else
        snprintf(buf, len, "outside labels and pipelines");
    return buf;
}

static uint64_t site_redundant(const struct bind_site *site)
{
    uint64_t n = 0;
    for (unsigned k = 0; k < BIND_KINDS; k++)
        n += site->redundant[k];
    return n;
}

/* Sites by redundant binds, most first (indices into rec->engine.sites); returns how many
 * have any. */
static unsigned sites_by_redundancy(const struct recording *rec, unsigned *order, unsigned max)
{
    const struct recording_engine *g = &rec->engine;
    unsigned n = 0;
    for (unsigned i = 0; i < g->site_count; i++) {
        uint64_t r = site_redundant(&g->sites[i]);
        if (!r)
            continue;
        unsigned at = n < max ? n++ : max;
        while (at > 0 && site_redundant(&g->sites[order[at - 1]]) < r) {
            if (at < max)
                order[at] = order[at - 1];
            at--;
        }
        if (at < max)
            order[at] = i;
    }
    return n;
}

static void write_bytes(FILE *f, uint64_t bytes)
{
    if (bytes >= (1ull << 30))
        fprintf(f, "%.2f GiB", (double)bytes / (double)(1ull << 30));
    else if (bytes >= (1ull << 20))
        fprintf(f, "%.1f MiB", (double)bytes / (double)(1ull << 20));
    else
        fprintf(f, "%.1f KiB", (double)bytes / 1024.0);
}

void engine_write_text(FILE *f, const struct recording *rec, const struct engine_stats *s,
                       const double *count_mean)
{
    if (!s->present)
        return;
    const struct recording_engine *g = &rec->engine;
    uint64_t frames = s->frames;
    char label[160], thread[64];
    if (s->recordings) {
        fprintf(f, "  recording   %.3f ms per frame on %u thread%s (%.0f%% secondary), %.1f "
                "command buffers and %.0f commands per frame; pool resets and frees %.3f ms "
                "per frame\n", per_frame(ms(rec, s->record_ticks), frames), s->thread_count,
                s->thread_count == 1 ? "" : "s",
                s->record_ticks ? 100.0 * (double)s->secondary_ticks / (double)s->record_ticks : 0.0,
                per_frame((double)s->recordings, frames), per_frame((double)s->commands, frames),
                per_frame(ms(rec, s->pool_op_ticks), frames));
        fputs("  recorders  ", f);
        for (unsigned i = 0; i < s->thread_count && i < 4; i++)
            fprintf(f, "%s %s %.3f ms per frame (%llu recordings)", i ? ";" : "",
                    recording_thread_label(rec, s->threads[i].tid, thread, sizeof(thread)),
                    per_frame(ms(rec, s->threads[i].ticks), frames),
                    (unsigned long long)s->threads[i].recordings);
        if (s->thread_count > 4)
            fprintf(f, "; %u more", s->thread_count - 4);
        fputc('\n', f);
        fputs("  pools      ", f);
        for (unsigned i = 0; i < s->pool_count && i < 3; i++) {
            const struct engine_pool *p = &s->pools[i];
            fprintf(f, "%s %s: recorded %.3f, resets and frees %.3f ms per frame (%llu resets, "
                    "%llu frees)", i ? ";" : "",
                    object_label(rec, p->device_id, OBJECT_TYPE_COMMAND_POOL, p->pool, "pool", label,
                                 sizeof(label)),
                    per_frame(ms(rec, p->record_ticks), frames),
                    per_frame(ms(rec, p->op_ticks), frames),
                    (unsigned long long)(p->ops[POOL_OP_RESET_POOL] + p->ops[POOL_OP_RESET_BUFFER]),
                    (unsigned long long)p->ops[POOL_OP_FREE]);
        }
        if (s->pool_count > 3)
            fprintf(f, "; %u more", s->pool_count - 3);
        fputc('\n', f);
    }
    double binds = 0, redundant = 0;
    for (unsigned k = 0; k < BIND_KINDS; k++) {
        binds += count_mean[FSCOPE_COUNT_BINDS + k];
        redundant += count_mean[FSCOPE_COUNT_REDUNDANT + k];
    }
    if (binds > 0) {
        fprintf(f, "  redundant   %.1f of %.1f binds per frame set what was bound:", redundant,
                binds);
        bool first = true;
        for (unsigned k = 0; k < BIND_KINDS; k++) {
            if (count_mean[FSCOPE_COUNT_BINDS + k] <= 0)
                continue;
            fprintf(f, "%s %.1f of %.1f %s", first ? "" : ",",
                    count_mean[FSCOPE_COUNT_REDUNDANT + k], count_mean[FSCOPE_COUNT_BINDS + k],
                    bind_kind_names[k]);
            first = false;
        }
        fputc('\n', f);
        /* Sites are charged at every submission, frames at their close: per frame, a site's
         * counts are divided by the frames its submissions make (all sites' binds over the
         * frames' mean), so a submission after the last close does not inflate them. */
        double site_binds = 0;
        for (unsigned i = 0; i < g->site_count; i++)
            for (unsigned k = 0; k < BIND_KINDS; k++)
                site_binds += (double)g->sites[i].binds[k];
        double site_frames = binds > 0 && site_binds > 0 ? site_binds / binds : (double)frames;
        unsigned order[3];
        unsigned n = sites_by_redundancy(rec, order, 3);
        for (unsigned i = 0; i < n && i < 3; i++) {
            const struct bind_site *site = &g->sites[order[i]];
            fprintf(f, "  redundant   at %s:", site_label(rec, site, label, sizeof(label)));
            bool first_kind = true;
            for (unsigned k = 0; k < BIND_KINDS; k++) {
                if (!site->binds[k])
                    continue;
                fprintf(f, "%s %.1f of %.1f %s", first_kind ? "" : ",",
                        (double)site->redundant[k] / site_frames,
                        (double)site->binds[k] / site_frames, bind_kind_names[k]);
                first_kind = false;
            }
            fputs(" binds per frame\n", f);
        }
    }
    double draws = count_mean[FSCOPE_COUNT_DRAWS];
    if (draws > 0)
        fprintf(f, "  geometry    %.1f draws (%.1f indirect: their counts are on the GPU), %.0f "
                "vertices, %.0f indices, %.0f instances per frame\n", draws,
                count_mean[FSCOPE_COUNT_INDIRECT_DRAWS], count_mean[FSCOPE_COUNT_VERTICES],
                count_mean[FSCOPE_COUNT_INDICES], count_mean[FSCOPE_COUNT_INSTANCES]);
    if (s->allocations || s->failed) {
        fputs("  memory      device memory live ", f);
        write_bytes(f, s->live_bytes);
        fputs(" at the end (peak ", f);
        write_bytes(f, s->peak_bytes);
        fprintf(f, ") after %llu allocations and %llu frees; %.2f allocations per frame",
                (unsigned long long)s->allocations, (unsigned long long)s->frees,
                count_mean[FSCOPE_COUNT_MEMORY_ALLOCS]);
        if (s->failed)
            fprintf(f, "; %llu allocations failed", (unsigned long long)s->failed);
        fputc('\n', f);
        for (unsigned i = 0; i < s->heap_count; i++) {
            const struct engine_heap *h = &s->heaps[i];
            fprintf(f, "  memory      device %u heap %u (%s, ", h->device_id, h->heap,
                    h->device_local ? "device local" : "host");
            write_bytes(f, h->size);
            fputs("): live ", f);
            write_bytes(f, h->live_bytes);
            fputs(", peak ", f);
            write_bytes(f, h->peak_bytes);
            fprintf(f, " in %llu allocations\n", (unsigned long long)h->allocations);
        }
        fputs("  memory      largest:", f);
        for (unsigned i = 0; i < s->largest_count; i++) {
            const struct memory_event *e = &s->largest[i];
            fprintf(f, "%s %s ", i ? "," : "",
                    object_label(rec, e->device_id, OBJECT_TYPE_DEVICE_MEMORY, e->handle, "memory", label,
                                 sizeof(label)));
            write_bytes(f, e->size);
            fprintf(f, " (heap %u)", e->heap_index);
        }
        fputc('\n', f);
    }
    if (s->budget_supported_somewhere) {
        for (unsigned i = 0; i < s->heap_count; i++) {
            const struct engine_heap *h = &s->heaps[i];
            if (!h->budget_read)
                continue;
            fprintf(f, "  budget      device %u heap %u: usage ", h->device_id, h->heap);
            write_bytes(f, h->usage);
            fputs(" of a ", f);
            write_bytes(f, h->budget);
            fputs(" budget at the end, peak ", f);
            write_bytes(f, h->peak_usage);
            if (h->over_budget_samples)
                fprintf(f, "; OVER BUDGET in %llu of %llu samples: the driver may move memory "
                        "out of the heap, which stalls frames", (unsigned long long)
                        h->over_budget_samples, (unsigned long long)h->samples);
            else if (h->peak_usage_budget && h->peak_usage * 10 > h->peak_usage_budget * 9)
                fputs("; near the budget (above 90%)", f);
            fputc('\n', f);
        }
    } else if (g->memory_props_count) {
        fputs("  budget      not read: no device here offers VK_EXT_memory_budget\n", f);
    }
    if (g->gauge_count) {
        fputs("  process     resident ", f);
        write_bytes(f, s->rss_end);
        fputs(" at the end, peak ", f);
        write_bytes(f, s->rss_peak);
        fprintf(f, "; descriptor sets %llu of %llu in %u pools at the end, peak %llu of %llu",
                (unsigned long long)s->sets_end, (unsigned long long)s->capacity_end,
                s->pools_end, (unsigned long long)s->sets_peak,
                (unsigned long long)s->capacity_at_peak);
        if (s->descriptor_failures)
            fprintf(f, "; %llu set allocations failed (pool out of memory or fragmented)",
                    (unsigned long long)s->descriptor_failures);
        fputc('\n', f);
    }
}

static void json_double(FILE *f, const char *key, double v, bool comma)
{
    fprintf(f, "\"%s\": %.6f%s", key, v, comma ? ", " : "");
}

void engine_write_json(FILE *f, const struct recording *rec, const struct engine_stats *s,
                       const double *count_mean)
{
    const struct recording_engine *g = &rec->engine;
    uint64_t frames = s->frames;
    char thread[64];
    fprintf(f, "  \"engine\": {\"present\": %s, ", s->present ? "true" : "false");
    fputs("\"recording\": {", f);
    json_double(f, "ms_per_frame", per_frame(ms(rec, s->record_ticks), frames), true);
    json_double(f, "secondary_ms_per_frame", per_frame(ms(rec, s->secondary_ticks), frames), true);
    json_double(f, "pool_ms_per_frame", per_frame(ms(rec, s->pool_op_ticks), frames), true);
    fprintf(f, "\"recordings\": %llu, \"secondary_recordings\": %llu, \"commands\": %llu, "
            "\"record_ms\": %.6f, \"secondary_ms\": %.6f, \"pool_ms\": %.6f, \"threads\": [",
            (unsigned long long)s->recordings, (unsigned long long)s->secondary_recordings,
            (unsigned long long)s->commands, ms(rec, s->record_ticks),
            ms(rec, s->secondary_ticks), ms(rec, s->pool_op_ticks));
    for (unsigned i = 0; i < s->thread_count; i++) {
        const struct engine_thread *t = &s->threads[i];
        fprintf(f, "%s{\"tid\": %d, \"name\": ", i ? ", " : "", t->tid);
        json_write_string(f, recording_thread_label(rec, t->tid, thread, sizeof(thread)));
        fprintf(f, ", \"recordings\": %llu, \"secondary_recordings\": %llu, \"commands\": %llu, "
                "\"record_ms\": %.6f, \"secondary_ms\": %.6f, \"oncpu_ms\": ",
                (unsigned long long)t->recordings, (unsigned long long)t->secondary_recordings,
                (unsigned long long)t->commands, ms(rec, t->ticks), ms(rec, t->secondary_ticks));
        if (t->oncpu_ns >= 0)
            fprintf(f, "%.6f, \"runnable_ms\": %.6f, \"record_ms_sampled\": %.6f}",
                    (double)t->oncpu_ns / 1e6, (double)t->runnable_ns / 1e6,
                    ms(rec, t->sampled_ticks));
        else
            fputs("null, \"runnable_ms\": null, \"record_ms_sampled\": null}", f);
    }
    fputs("], \"pools\": [", f);
    for (unsigned i = 0; i < s->pool_count; i++) {
        const struct engine_pool *p = &s->pools[i];
        const char *name = recording_object_name(rec, p->device_id, OBJECT_TYPE_COMMAND_POOL, p->pool);
        fprintf(f, "%s{\"handle\": \"0x%" PRIx64 "\", \"device\": %u, \"name\": ", i ? ", " : "",
                p->pool, p->device_id);
        json_write_string(f, name ? name : "");
        fprintf(f, ", \"recordings\": %llu, \"record_ms\": %.6f, \"resets\": %llu, "
                "\"buffer_resets\": %llu, \"frees\": %llu, \"trims\": %llu, \"ops_ms\": %.6f}",
                (unsigned long long)p->recordings, ms(rec, p->record_ticks),
                (unsigned long long)p->ops[POOL_OP_RESET_POOL],
                (unsigned long long)p->ops[POOL_OP_RESET_BUFFER],
                (unsigned long long)p->ops[POOL_OP_FREE], (unsigned long long)p->ops[POOL_OP_TRIM],
                ms(rec, p->op_ticks));
    }
    fputs("], \"command_buffers\": [", f);
    /* Each command buffer once, by name where the app gave one: the first 64 recorded. */
    struct listed_cb {
        struct cmd_recording first;
        uint64_t count, ticks, commands;
    } *listed = calloc(64, sizeof(*listed));
    unsigned listed_count = 0;
    struct sorter_cursor c;
    const struct cmd_recording *r;
    bool open = listed && sorter_cursor_open(&c, &g->recordings);
    while (open && (r = sorter_next(&c))) {
        unsigned i = 0;
        while (i < listed_count &&
               (listed[i].first.cb != r->cb || listed[i].first.device_id != r->device_id))
            i++;
        if (i == listed_count) {
            if (listed_count == 64)
                continue;
            listed[listed_count++].first = *r;
        }
        listed[i].count++;
        listed[i].ticks += r->end_ticks - r->begin_ticks;
        listed[i].commands += r->commands;
    }
    if (open)
        sorter_cursor_close(&c);
    for (unsigned i = 0; i < listed_count; i++) {
        const struct listed_cb *l = &listed[i];
        const char *name = recording_object_name(rec, l->first.device_id,
                                                 OBJECT_TYPE_COMMAND_BUFFER, l->first.cb);
        fprintf(f, "%s{\"handle\": \"0x%" PRIx64 "\", \"name\": ", i ? ", " : "", l->first.cb);
        json_write_string(f, name ? name : "");
        fprintf(f, ", \"pool\": \"0x%" PRIx64 "\", \"secondary\": %s, \"recordings\": %llu, "
                "\"record_ms\": %.6f, \"commands\": %llu}", l->first.pool,
                l->first.flags & CMD_RECORDING_SECONDARY ? "true" : "false",
                (unsigned long long)l->count, ms(rec, l->ticks), (unsigned long long)l->commands);
    }
    free(listed);
    fputs("]}, \"binds_per_frame\": {", f);
    for (unsigned k = 0; k < BIND_KINDS; k++)
        fprintf(f, "%s\"%s\": {\"binds\": %.6f, \"redundant\": %.6f}", k ? ", " : "",
                bind_kind_keys[k], count_mean[FSCOPE_COUNT_BINDS + k],
                count_mean[FSCOPE_COUNT_REDUNDANT + k]);
    fputs("}, \"sites\": [", f);
    for (unsigned i = 0; i < g->site_count; i++) {
        const struct bind_site *site = &g->sites[i];
        char label[160];
        fprintf(f, "%s{\"kind\": \"%s\", \"name\": ", i ? ", " : "",
                site->kind == BIND_SITE_LABEL ? "label"
                : site->kind == BIND_SITE_PIPELINE ? "pipeline" : "none");
        json_write_string(f, site->kind == BIND_SITE_LABEL ? site->name
                             : site->kind == BIND_SITE_PIPELINE
                                 ? (recording_object_name(rec, site->device_id, OBJECT_TYPE_PIPELINE, site->handle)
                                        ?: "")
                                 : "");
        fputs(", \"label\": ", f);
        json_write_string(f, site_label(rec, site, label, sizeof(label)));
        fputs(", \"binds\": {", f);
        for (unsigned k = 0; k < BIND_KINDS; k++)
            fprintf(f, "%s\"%s\": [%llu, %llu]", k ? ", " : "", bind_kind_keys[k],
                    (unsigned long long)site->binds[k], (unsigned long long)site->redundant[k]);
        fputs("}}", f);
    }
    fprintf(f, "], \"sites_full\": %llu, \"geometry_per_frame\": {\"draws\": %.6f, "
            "\"indirect_draws\": %.6f, \"vertices\": %.6f, \"indices\": %.6f, \"instances\": "
            "%.6f}, ", (unsigned long long)g->sites_full, count_mean[FSCOPE_COUNT_DRAWS],
            count_mean[FSCOPE_COUNT_INDIRECT_DRAWS], count_mean[FSCOPE_COUNT_VERTICES],
            count_mean[FSCOPE_COUNT_INDICES], count_mean[FSCOPE_COUNT_INSTANCES]);
    fprintf(f, "\"memory\": {\"allocations\": %llu, \"frees\": %llu, \"failed\": %llu, "
            "\"allocated_bytes\": %llu, \"live_bytes\": %llu, \"peak_bytes\": %llu, "
            "\"allocations_per_frame\": %.6f, \"allocated_bytes_per_frame\": %.6f, \"heaps\": [",
            (unsigned long long)s->allocations, (unsigned long long)s->frees,
            (unsigned long long)s->failed, (unsigned long long)s->alloc_bytes,
            (unsigned long long)s->live_bytes, (unsigned long long)s->peak_bytes,
            count_mean[FSCOPE_COUNT_MEMORY_ALLOCS], count_mean[FSCOPE_COUNT_MEMORY_ALLOC_BYTES]);
    for (unsigned i = 0; i < s->heap_count; i++) {
        const struct engine_heap *h = &s->heaps[i];
        fprintf(f, "%s{\"device\": %u, \"heap\": %u, \"size\": %llu, \"device_local\": %s, "
                "\"allocations\": %llu, \"live_bytes\": %llu, \"peak_bytes\": %llu, "
                "\"budget_read\": %s, \"budget\": %llu, \"usage\": %llu, \"peak_usage\": %llu, "
                "\"budget_samples\": %llu, \"over_budget_samples\": %llu}", i ? ", " : "",
                h->device_id, h->heap, (unsigned long long)h->size,
                h->device_local ? "true" : "false", (unsigned long long)h->allocations,
                (unsigned long long)h->live_bytes, (unsigned long long)h->peak_bytes,
                h->budget_read ? "true" : "false", (unsigned long long)h->budget,
                (unsigned long long)h->usage, (unsigned long long)h->peak_usage,
                (unsigned long long)h->samples, (unsigned long long)h->over_budget_samples);
    }
    fputs("], \"largest\": [", f);
    for (unsigned i = 0; i < s->largest_count; i++) {
        const struct memory_event *e = &s->largest[i];
        const char *name = recording_object_name(rec, e->device_id, OBJECT_TYPE_DEVICE_MEMORY, e->handle);
        fprintf(f, "%s{\"handle\": \"0x%" PRIx64 "\", \"name\": ", i ? ", " : "", e->handle);
        json_write_string(f, name ? name : "");
        fprintf(f, ", \"bytes\": %llu, \"device\": %u, \"heap\": %u, \"type\": %u, "
                "\"dedicated\": %s}", (unsigned long long)e->size, e->device_id, e->heap_index,
                e->type_index, e->dedicated ? "true" : "false");
    }
    fprintf(f, "], \"budget_supported\": %s}, ", s->budget_supported_somewhere ? "true" : "false");
    fprintf(f, "\"process\": {\"gauges\": %llu, \"rss_bytes\": %llu, \"rss_peak_bytes\": %llu}, "
            "\"descriptors\": {\"sets\": %llu, \"capacity\": %llu, \"pools\": %u, "
            "\"peak_sets\": %llu, \"capacity_at_peak\": %llu, \"failures\": %llu, "
            "\"untracked_pools\": %llu, \"pools_list\": [",
            (unsigned long long)g->gauge_count, (unsigned long long)s->rss_end,
            (unsigned long long)s->rss_peak, (unsigned long long)s->sets_end,
            (unsigned long long)s->capacity_end, s->pools_end, (unsigned long long)s->sets_peak,
            (unsigned long long)s->capacity_at_peak, (unsigned long long)s->descriptor_failures,
            (unsigned long long)g->descriptor_pools_untracked);
    for (unsigned i = 0; i < g->descriptor_pool_count; i++) {
        const struct descriptor_pool_entry *p = &g->descriptor_pools[i];
        const char *name = recording_object_name(rec, p->device_id, OBJECT_TYPE_DESCRIPTOR_POOL, p->handle);
        fprintf(f, "%s{\"handle\": \"0x%" PRIx64 "\", \"name\": ", i ? ", " : "",
                (uint64_t)p->handle);
        json_write_string(f, name ? name : "");
        fprintf(f, ", \"device\": %u, \"max_sets\": %u, \"live\": %lld, \"peak\": %llu, "
                "\"allocated\": %llu, \"failures\": %llu, \"destroyed\": %s}", p->device_id,
                p->max_sets, (long long)p->live, (unsigned long long)p->peak,
                (unsigned long long)p->allocated, (unsigned long long)p->failures,
                p->destroyed ? "true" : "false");
    }
    fputs("]}},\n", f);
}
