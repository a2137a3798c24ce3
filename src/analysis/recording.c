#include "recording.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frames.h"
#include "recording_check.h"

/* Gives back the whole pages of [offset, offset + bytes) of a private image once copied out
 * (reader.release_chunks): a packed capture unpacked for reading is held once, not twice. */
static void release_pages(const struct reader *r, uint64_t offset, uint64_t bytes)
{
    if (!r->release_chunks)
        return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = ((uintptr_t)r->bytes + offset + page - 1) & ~(page - 1);
    uintptr_t to = ((uintptr_t)r->bytes + offset + bytes) & ~(page - 1);
    if (to > from)
        madvise((void *)from, to - from, MADV_DONTNEED);
}

/* What reading a chunked array does with its chunks, in order: take gets n items at items (the
 * arena's or one decoded from the stream file, to be copied before they are checked), the
 * first of them item first of those read; begin, before the first, how many will come. */
struct chunk_sink {
    int (*begin)(struct chunk_sink *sink, uint64_t count, uint64_t chunk_items);
    int (*take)(struct chunk_sink *sink, const unsigned char *items, uint64_t first, uint64_t n);
    /* Optional: how many of the array's first chunks (at most usable, those the stream file
     * holds) the sink holds already, taken as they were streamed (recording_early.c). */
    uint64_t (*adopt)(struct chunk_sink *sink, const struct chunked *a, uint64_t usable);
};

/* Reads a chunked array's items chunk by chunk into sink. a is the reader's copy of the array's
 * header (object_copy). Its chunk table and every chunk are claimed, streamed ones too (they
 * hold that place in the arena), before anything is allocated for the items. */
static int read_chunks(struct reader *r, struct recording *rec, const struct chunked *a,
                       uint32_t item_size, const char *what, struct chunk_sink *sink)
{
    rec->items_dropped += a->dropped; /* appends the full arena refused */
    uint64_t count = atomic_load(&a->count);
    if (!count)
        return 0;
    uint64_t capacity = atomic_load(&a->table_capacity);
    uint64_t table_offset = atomic_load(&a->table_offset);
    uint64_t chunk_items = a->chunk_items;
    if (a->item_size != item_size)
        return reader_malformed(r, "%s: items of %u bytes, expected %u", what, a->item_size, item_size);
    if (chunk_items == 0 || chunk_items > r->len / item_size)
        return reader_malformed(r, "%s: chunks of %llu items do not fit in the recording", what,
                         (unsigned long long)chunk_items);
    uint64_t chunk_bytes = chunk_items * item_size;
    uint64_t chunks = count / chunk_items + (count % chunk_items != 0);
    if (chunks > capacity || capacity > r->len / sizeof(uint64_t))
        return reader_malformed(r, "%s: %llu items in chunks of %llu, and a chunk table of %llu", what,
                         (unsigned long long)count, (unsigned long long)chunk_items,
                         (unsigned long long)capacity);
    /* A recording copied while its app ran may also name a table that grew (moved to a new
     * place) after the copy's size was taken: every item it knows of came as far as this copy
     * can tell after the copy, and is left out (CI once saw a copy refused so: "the chunk table
     * of the kernel sampler ... is outside the recording"). A finished one is refused. */
    if (rec->state == REC_STATE_RECORDING &&
        (table_offset >= r->len || capacity * sizeof(uint64_t) > r->len - table_offset))
        return 0;
    int e = reader_claim(r, table_offset, capacity * sizeof(uint64_t), REC_ALIGN, "chunk table", 0);
    if (e)
        return e;
    /* The table read once: the chunks claimed are the chunks copied. */
    uint64_t *table = malloc(chunks * sizeof(*table));
    if (!table)
        return -ENOMEM;
    memcpy(table, r->bytes + table_offset, chunks * sizeof(*table));
    for (uint64_t c = 0; c < chunks && !e; c++) {
        /* A recording copied while its app ran (framescoped's copy, `top`) holds its header's
         * size from when the copy began, and a table copied later may name chunks allocated
         * since, beyond that size, or not yet have their offset: those items came after the
         * copy, and are left out. A finished recording gets no such leave. */
        if (rec->state == REC_STATE_RECORDING && (table[c] == 0 || table[c] >= r->len)) {
            chunks = c;
            count = c * chunk_items;
            break;
        }
        e = reader_claim(r, table[c], chunk_bytes, REC_ALIGN, "chunk", c);
    }
    /* Chunks in the stream file are read from there; without it (a recording read while its
     * app runs, for a trace) they are left out: the items start after them. */
    uint64_t streamed = atomic_load(&a->streamed_chunks);
    if (streamed > chunks)
        streamed = chunks;
    uint64_t skipped = r->stream ? 0 : streamed * chunk_items;
    unsigned char *decoded = NULL;
    if (!e && skipped < count) {
        count -= skipped;
        e = sink->begin(sink, count, chunk_items);
        uint64_t from = skipped / chunk_items;
        if (!e && sink->adopt && r->stream) {
            uint64_t adopted = sink->adopt(sink, a, streamed - from);
            /* Their ranges are the recording's as if decoded: a capture copies them. */
            for (uint64_t c = from; !e && c < from + adopted; c++)
                e = stream_source_taken(r, r->stream, table[c], chunk_bytes);
            from += adopted;
        }
        for (uint64_t c = from; !e && c < chunks; c++) {
            uint64_t first = c * chunk_items - skipped;
            uint64_t n = count - first < chunk_items ? count - first : chunk_items;
            if (c >= streamed) {
                e = sink->take(sink, r->bytes + table[c], first, n);
                release_pages(r, table[c], n * item_size);
                continue;
            }
            /* A chunk decodes whole: a count that ends inside one takes its first items. */
            if (!decoded && !(decoded = malloc(chunk_bytes)))
                e = -ENOMEM;
            if (!e)
                e = stream_source_chunk(r, r->stream, table[c], chunk_bytes, decoded);
            if (!e)
                e = sink->take(sink, decoded, first, n);
        }
    }
    free(decoded);
    free(table);
    return e;
}

/* The sink of read_chunked: every item into one array. */
struct array_sink {
    struct chunk_sink sink;
    uint32_t item_size;
    unsigned char *items;
    uint64_t count;
};

static int array_begin(struct chunk_sink *sink, uint64_t count, uint64_t chunk_items)
{
    (void)chunk_items;
    struct array_sink *s = (struct array_sink *)sink;
    s->items = malloc(count * s->item_size);
    s->count = count;
    return s->items ? 0 : -ENOMEM;
}

static int array_take(struct chunk_sink *sink, const unsigned char *items, uint64_t first,
                      uint64_t n)
{
    struct array_sink *s = (struct array_sink *)sink;
    memcpy(s->items + first * s->item_size, items, n * s->item_size);
    return 0;
}

/* Copies a chunked array's count items out into *ret (malloc'd; NULL for none). */
static int read_chunked(struct reader *r, struct recording *rec, const struct chunked *a,
                        uint32_t item_size, const char *what, void **ret, uint64_t *ret_count)
{
    struct array_sink s = { { array_begin, array_take, NULL }, item_size, NULL, 0 };
    int e = read_chunks(r, rec, a, item_size, what, &s.sink);
    if (e) {
        free(s.items);
        s.items = NULL;
    }
    *ret = s.items;
    *ret_count = s.items ? s.count : 0;
    return e;
}

/* The sink of items kept in a sorter: each checked, then pushed. */
struct sorter_sink {
    struct chunk_sink sink;
    struct reader *r;
    struct sorter *sorter;
    reader_item_check check;
    uint32_t item_size;
};

static int sorter_begin(struct chunk_sink *sink, uint64_t count, uint64_t chunk_items)
{
    (void)sink;
    (void)count;
    (void)chunk_items;
    return 0;
}

static int sorter_take(struct chunk_sink *sink, const unsigned char *items, uint64_t first,
                       uint64_t n)
{
    (void)first;
    struct sorter_sink *s = (struct sorter_sink *)sink;
    for (uint64_t i = 0; i < n; i++) {
        const unsigned char *item = items + i * s->item_size;
        int e = s->check ? s->check(s->r, item) : 0;
        if (e)
            return e;
        if (!sorter_push(s->sorter, item))
            return -ENOMEM;
    }
    return 0;
}

/* The sink of a sorter read ahead (recording_early.c): its array's place in its object. */
struct sorted_sink {
    struct sorter_sink sorted;
    size_t field;
};

static uint64_t sorted_adopt(struct chunk_sink *sink, const struct chunked *a, uint64_t usable)
{
    struct sorted_sink *s = (struct sorted_sink *)sink;
    return recording_early_adopt_sorted(s->sorted.r->early, s->sorted.r->entry, s->field, a,
                                        usable, s->sorted.sorter);
}

/* A chunked array's items, each checked, into sorter (made ready for them), finished. field:
 * the array's place in its object, where it may have been read ahead (reader_sorted_array);
 * NO_FIELD where not. */
#define NO_FIELD SIZE_MAX
static int read_sorted(struct reader *r, struct recording *rec, const struct chunked *a,
                       uint32_t item_size, const char *what, struct sorter *sorter,
                       reader_item_check check, size_t field)
{
    struct sorted_sink s = { { { sorter_begin, sorter_take, field == NO_FIELD ? NULL : sorted_adopt },
                               r, sorter, check, item_size }, field };
    int e = read_chunks(r, rec, a, item_size, what, &s.sorted.sink);
    if (!e && !sorter_finish(sorter))
        e = -ENOMEM;
    return e;
}

/* The sink of items each kept as a copy of its own by keep (which checks it, may change it,
 * and keeps it where it belongs); index: its place in the array. */
typedef int (*copy_keep_fn)(struct reader *r, void *ctx, void *item, uint64_t index);
struct copy_sink {
    struct chunk_sink sink;
    struct reader *r;
    copy_keep_fn keep;
    void *ctx;
    uint32_t item_size;
};

static int copy_take(struct chunk_sink *sink, const unsigned char *items, uint64_t first,
                     uint64_t n)
{
    struct copy_sink *s = (struct copy_sink *)sink;
    union {
        struct drm_sample drm;
        struct sched_event sched;
        struct cap_event cap;
        struct memory_event memory;
        struct pipeline_created pipeline;
    } item;
    if (s->item_size > sizeof(item))
        return -EINVAL;
    for (uint64_t i = 0; i < n; i++) {
        memcpy(&item, items + i * s->item_size, s->item_size);
        int e = s->keep(s->r, s->ctx, &item, first + i);
        if (e)
            return e;
    }
    return 0;
}

/* A chunked array's items, each a copy given to keep. */
static int read_copied(struct reader *r, struct recording *rec, const struct chunked *a,
                       uint32_t item_size, const char *what, copy_keep_fn keep, void *ctx)
{
    struct copy_sink s = { { sorter_begin, copy_take, NULL }, r, keep, ctx, item_size };
    return read_chunks(r, rec, a, item_size, what, &s.sink);
}

/* Appends count items to one of rec's growing arrays, doubling its room as needed: many small
 * objects of a kind cost a copy of the whole each only log(n) times. */
static int append_items(void **array, uint64_t *have, uint64_t *capacity, const void *items,
                        uint64_t count, size_t item_size)
{
    if (count > *capacity - *have) {
        uint64_t want = *capacity ? *capacity : 64;
        while (want < *have + count)
            want *= 2;
        void *grown = realloc(*array, want * item_size);
        if (!grown)
            return -ENOMEM;
        *array = grown;
        *capacity = want;
    }
    memcpy((unsigned char *)*array + *have * item_size, items, count * item_size);
    *have += count;
    return 0;
}

/* The sink of a surface's frames: each chunk copied, checked and packed (frames.h). */
struct frame_sink {
    struct chunk_sink sink;
    struct reader *r;
    struct recording_log *log;
    struct fscope_frame *frames; /* a chunk's */
    uint32_t chunk_items;
};

static int frames_begin(struct chunk_sink *sink, uint64_t count, uint64_t chunk_items)
{
    (void)count;
    struct frame_sink *s = (struct frame_sink *)sink;
    /* A recording's own chunks hold ~300 frames: 2^32 would be no recording's. */
    if (chunk_items > UINT32_MAX)
        return reader_malformed(s->r, "surface '%s' has chunks of %llu frames", s->log->label,
                                (unsigned long long)chunk_items);
    s->chunk_items = (uint32_t)chunk_items;
    s->frames = malloc(chunk_items * sizeof(*s->frames));
    return s->frames ? 0 : -ENOMEM;
}

static int frames_take(struct chunk_sink *sink, const unsigned char *items, uint64_t first,
                       uint64_t n)
{
    struct frame_sink *s = (struct frame_sink *)sink;
    return reader_frames_take(s->r, s->log, s->log->label, s->frames, items, first, n,
                              s->chunk_items);
}

static uint64_t frames_adopt(struct chunk_sink *sink, const struct chunked *a, uint64_t usable)
{
    struct frame_sink *s = (struct frame_sink *)sink;
    return recording_early_adopt_frames(s->r->early, s->r->entry, a, usable, s->log);
}

static int read_frame_log(struct reader *r, struct recording *rec, const struct rec_frame_log *src)
{
    struct recording_log *log = &rec->logs[rec->log_count];
    memset(log, 0, sizeof(*log));
    copy_string(log->label, sizeof(log->label), src->label, sizeof(src->label));
    uint32_t surface = atomic_load(&src->surface);
    if (surface > FRAME_SURFACE_X11)
        return reader_malformed(r, "surface '%s' has an unknown kind %u", log->label, surface);
    log->surface = (enum frame_surface)surface;
    log->tracked = atomic_load(&src->tracked) != 0;
    copy_string(log->untracked_why, sizeof(log->untracked_why), src->untracked_why,
                sizeof(src->untracked_why));
    uint32_t seq = atomic_load(&src->counts_seq);
    log->counts = src->counts;
    log->have_counts = atomic_load(&src->counts_valid) && !(seq & 1) &&
                       atomic_load(&src->counts_seq) == seq;
    struct frame_sink s = { { frames_begin, frames_take, frames_adopt }, r, log, NULL, 0 };
    rec->log_count++; /* freed with the recording, whatever it holds */
    int e = read_chunks(r, rec, &src->frames, sizeof(struct fscope_frame), log->label, &s.sink);
    free(s.frames);
    return e;
}

static int read_gpu_zone_names(struct reader *r, struct recording *rec,
                               const struct rec_gpu_zone_names *src)
{
    if (rec->gpu_zone_names)
        return reader_malformed(r, "two GPU zone name tables");
    uint32_t count = atomic_load(&src->count);
    if (count > GPU_ZONE_NAMES)
        return reader_malformed(r, "%u GPU zone names, at most %u", count, GPU_ZONE_NAMES);
    rec->gpu_zone_names = calloc(count ? count : 1, sizeof(*rec->gpu_zone_names));
    if (!rec->gpu_zone_names)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++)
        copy_string(rec->gpu_zone_names[i], sizeof(rec->gpu_zone_names[i]), src->names[i],
                    sizeof(src->names[i]));
    rec->gpu_zone_name_count = count;
    for (unsigned k = 0; k < GPU_ZONE_UNTIMED_COUNT; k++)
        rec->gpu_zones_untimed[k] = atomic_load(&src->untimed[k]);
    rec->pipeline_stats = atomic_load(&src->pipeline_stats);
    if (rec->pipeline_stats > REC_PIPELINE_STATS_UNSUPPORTED)
        return reader_malformed(r, "pipeline statistics in state %u", rec->pipeline_stats);
    rec->pass_stats_skipped = atomic_load(&src->stats_skipped);
    return 0;
}

static int gpu_zone_check(struct reader *r, const void *item)
{
    const struct gpu_zone_span *z = item;
    if (z->end < z->begin || z->kind > GPU_ZONE_PASS)
        return reader_malformed(r, "a GPU zone ends before it begins, or has kind %u", z->kind);
    return 0;
}

static int read_gpu_zones(struct reader *r, struct recording *rec, const struct rec_gpu_zones *src)
{
    struct sorter_sink zones = { { sorter_begin, sorter_take, NULL }, r, &rec->gpu_zones,
                                 gpu_zone_check, sizeof(struct gpu_zone_span) };
    int e = read_chunks(r, rec, &src->spans, sizeof(struct gpu_zone_span), "GPU zones",
                        &zones.sink);
    if (e)
        return e;
    uint64_t count;
    void *stats;
    e = read_chunked(r, rec, &src->stats, sizeof(struct gpu_pass_stats), "pipeline statistics",
                     &stats, &count);
    if (!e && count)
        e = append_items((void **)&rec->pass_stats, &rec->pass_stats_count,
                         &r->pass_stats_capacity, stats, count, sizeof(struct gpu_pass_stats));
    free(stats);
    return e;
}

static int name_compare(const void *a, const void *b)
{
    const struct object_name *x = *(const struct object_name *const *)a;
    const struct object_name *y = *(const struct object_name *const *)b;
    if (x->device_id != y->device_id)
        return x->device_id < y->device_id ? -1 : 1;
    if (x->type != y->type)
        return x->type < y->type ? -1 : 1;
    if (x->handle != y->handle)
        return x->handle < y->handle ? -1 : 1;
    return x < y ? -1 : x > y; /* the same array: the order they were recorded in */
}

/* A run records tens of thousands of command buffers against thousands of names: too many to
 * walk the names for each. Without memory for the index, lookups walk them. */
static void name_index_build(struct recording *rec)
{
    uint64_t n = rec->object_name_count;
    rec->object_name_index = n ? malloc(n * sizeof(*rec->object_name_index)) : NULL;
    if (!rec->object_name_index)
        return;
    for (uint64_t i = 0; i < n; i++)
        rec->object_name_index[i] = &rec->object_names[i];
    qsort(rec->object_name_index, n, sizeof(*rec->object_name_index), name_compare);
}

/* A pipeline creation, sorted by its end with its place. */
static int pipeline_keep(struct reader *r, void *ctx, void *item, uint64_t index)
{
    (void)r;
    struct pipeline_item p = { .pipeline = *(const struct pipeline_created *)item, .seq = index };
    return sorter_push(ctx, &p) ? 0 : -ENOMEM;
}

static int read_vk_objects(struct reader *r, struct recording *rec, const struct rec_objects *src)
{
    if (rec->object_names || rec->pipelines.finished)
        return reader_malformed(r, "two object tables");
    void *names;
    int e = read_chunked(r, rec, &src->names, sizeof(struct object_name), "object names", &names,
                         &rec->object_name_count);
    rec->object_names = names;
    if (e)
        return e;
    for (uint64_t i = 0; i < rec->object_name_count; i++)
        make_printable(rec->object_names[i].name, sizeof(rec->object_names[i].name));
    name_index_build(rec);
    e = read_copied(r, rec, &src->pipelines, sizeof(struct pipeline_created), "pipelines",
                    pipeline_keep, &rec->pipelines);
    if (!e && !sorter_finish(&rec->pipelines))
        e = -ENOMEM;
    rec->pipeline_count = sorter_count(&rec->pipelines);
    return e;
}

/* A memory event, checked, sorted with its place. */
static int memory_keep(struct reader *r, void *ctx, void *item, uint64_t index)
{
    struct memory_item m = { .event = *(const struct memory_event *)item, .seq = index };
    if (m.event.kind < MEMORY_ALLOC || m.event.kind > MEMORY_ALLOC_FAILED)
        return reader_malformed(r, "a memory event of kind %u", m.event.kind);
    return sorter_push(&((struct recording_engine *)ctx)->memory, &m) ? 0 : -ENOMEM;
}

static int read_engine(struct reader *r, struct recording *rec, const struct rec_engine *src)
{
    struct recording_engine *g = &rec->engine;
    if (g->present)
        return reader_malformed(r, "two engine tables");
    g->present = true;
    recording_engine_init(g);
    int e = read_sorted(r, rec, &src->recordings, sizeof(struct cmd_recording),
                        "command buffer recordings", &g->recordings, reader_cmd_recording_check,
                        offsetof(struct rec_engine, recordings));
    g->recording_count = sorter_count(&g->recordings);
    if (!e)
        e = read_sorted(r, rec, &src->pool_ops, sizeof(struct pool_op), "command pool calls",
                        &g->pool_ops, reader_pool_op_check, offsetof(struct rec_engine, pool_ops));
    g->pool_op_count = sorter_count(&g->pool_ops);
    if (e)
        return e;
    e = read_copied(r, rec, &src->memory, sizeof(struct memory_event), "memory events",
                    memory_keep, g);
    if (!e && !sorter_finish(&g->memory))
        e = -ENOMEM;
    g->memory_count = sorter_count(&g->memory);
    if (e)
        return e;
    e = read_sorted(r, rec, &src->budgets, sizeof(struct budget_sample), "memory budgets",
                    &g->budgets, reader_budget_check, offsetof(struct rec_engine, budgets));
    g->budget_count = sorter_count(&g->budgets);
    if (!e)
        e = read_sorted(r, rec, &src->gauges, sizeof(struct gauge_sample), "gauges", &g->gauges,
                        NULL, offsetof(struct rec_engine, gauges));
    g->gauge_count = sorter_count(&g->gauges);
    if (e)
        return e;
    g->memory_props_count = atomic_load(&src->memory_props_count);
    if (g->memory_props_count > REC_ENGINE_DEVICES)
        return reader_malformed(r, "memory properties of %u devices", g->memory_props_count);
    for (unsigned i = 0; i < g->memory_props_count; i++) {
        g->memory_props[i] = src->memory_props[i];
        const struct rec_memory_props *m = &g->memory_props[i];
        if (m->heap_count > MEMORY_HEAPS || m->type_count > MEMORY_TYPES)
            return reader_malformed(r, "a device with %u memory heaps and %u types", m->heap_count,
                             m->type_count);
    }
    g->sites = calloc(REC_BIND_SITES, sizeof(*g->sites));
    g->descriptor_pools = calloc(REC_DESCRIPTOR_POOLS, sizeof(*g->descriptor_pools));
    if (!g->sites || !g->descriptor_pools)
        return -ENOMEM;
    for (unsigned i = 0; i < REC_BIND_SITES; i++) {
        const struct bind_site *site = &src->sites[i];
        if (!atomic_load(&site->key) || !atomic_load(&site->ready))
            continue;
        struct bind_site *to = &g->sites[g->site_count++];
        memcpy(to, site, sizeof(*to));
        if (to->kind < BIND_SITE_LABEL || to->kind > BIND_SITE_NONE)
            return reader_malformed(r, "a bind site of kind %u", to->kind);
        make_printable(to->name, sizeof(to->name));
    }
    uint32_t pools = atomic_load(&src->descriptor_pool_count);
    for (uint32_t i = 0; i < pools && i < REC_DESCRIPTOR_POOLS; i++) {
        if (!atomic_load(&src->descriptor_pools[i].handle))
            continue;
        memcpy(&g->descriptor_pools[g->descriptor_pool_count++], &src->descriptor_pools[i],
               sizeof(*g->descriptor_pools));
    }
    g->sites_full = atomic_load(&src->sites_full);
    g->descriptor_pools_untracked = atomic_load(&src->descriptor_pools_untracked);
    return 0;
}

/* A span log's spans, into rec->spans (finished once every object is read; those read ahead
 * are there already, recording_early_adopt_shared). */
static int read_spans(struct reader *r, struct recording *rec, const struct rec_span_log *src)
{
    struct sorted_sink s = { { { sorter_begin, sorter_take, sorted_adopt }, r, &rec->spans,
                               reader_span_check, sizeof(struct gpu_span) },
                             offsetof(struct rec_span_log, spans) };
    return read_chunks(r, rec, &src->spans, sizeof(struct gpu_span), "GPU spans",
                       &s.sorted.sink);
}

/* A cap's event, with a target, kept as recorded. */
static int cap_keep(struct reader *r, void *ctx, void *item, uint64_t index)
{
    (void)index;
    struct recording_cap *cap = ctx;
    const struct cap_event *e = item;
    if (e->target_ns == 0)
        return reader_malformed(r, "cap '%s' has an event with no target", cap->label);
    cap->last_target_ns = e->target_ns;
    return sorter_push(&cap->events, e) ? 0 : -ENOMEM;
}

static int read_cap(struct reader *r, struct recording *rec, const struct rec_cap *src)
{
    struct recording_cap *cap = &rec->caps[rec->cap_count++];
    memset(cap, 0, sizeof(*cap));
    copy_string(cap->label, sizeof(cap->label), src->label, sizeof(src->label));
    sorter_init(&cap->events, sizeof(struct cap_event), sorter_as_pushed, 0);
    int e = read_copied(r, rec, &src->events, sizeof(struct cap_event), cap->label, cap_keep,
                        cap);
    if (!e && !sorter_finish(&cap->events))
        e = -ENOMEM;
    cap->event_count = sorter_count(&cap->events);
    return e;
}

/* src is the reader's copy of the slot; live is the slot in the arena, whose head is read
 * again after the ring is copied. */
static int read_thread(struct reader *r, struct recording *rec, const struct rec_thread *src,
                       const struct rec_thread *live)
{
    int state = atomic_load(&src->state);
    if (state != SLOT_LIVE && state != SLOT_EXITED && state != SLOT_EXTERNAL)
        return 0; /* free or being claimed: nothing to show */
    struct recording_thread *t = &rec->threads[rec->thread_count];
    memset(t, 0, sizeof(*t));
    t->state = state;
    copy_string(t->name, sizeof(t->name), src->name, sizeof(src->name));
    /* External tracks are named by their slot, one of the directory's objects. */
    if (state == SLOT_EXTERNAL && src->slot >= REC_DIR_ENTRIES)
        return reader_malformed(r, "thread '%s' names slot %u; a recording has at most %u", t->name,
                         src->slot, REC_DIR_ENTRIES);
    t->tid = state == SLOT_EXTERNAL ? 1000000 + (int)src->slot : src->tid;
    uint32_t nodes = atomic_load(&src->node_count);
    uint64_t ring_mask = src->ring_mask, ring_size = ring_mask + 1;
    if (nodes == 0 || nodes > src->node_capacity || ring_mask == UINT64_MAX ||
        (ring_mask & ring_size) != 0 || ring_size > r->len / sizeof(struct fscope_event))
        return reader_malformed(r, "thread '%s': %u zones of %u, a ring of %llu events", t->name, nodes,
                         src->node_capacity, (unsigned long long)ring_size);
    /* Both allocated by the writer on their own (recording_alloc): aligned to REC_ALIGN. */
    int e = reader_claim(r, src->nodes_offset, (uint64_t)src->node_capacity * sizeof(struct zone_node),
                  REC_ALIGN, "zone tree", 0);
    if (!e)
        e = reader_claim(r, src->ring_offset, ring_size * sizeof(struct fscope_event), REC_ALIGN, "ring",
                  0);
    if (e)
        return e;
    t->nodes = malloc(nodes * sizeof(*t->nodes));
    if (!t->nodes)
        return -ENOMEM;
    memcpy(t->nodes, r->bytes + src->nodes_offset, nodes * sizeof(*t->nodes));
    t->node_count = nodes;
    rec->thread_count++;
    /* Nodes are created after their parents: a parent always has a smaller index. */
    for (uint32_t i = 1; i < nodes; i++)
        if (t->nodes[i].parent >= i)
            return reader_malformed(r, "thread '%s': zone %u has a parent after it", t->name, i);
    uint64_t head = atomic_load(&src->ring_head);
    uint64_t first = head > ring_size ? head - ring_size : 0;
    t->event_count = head - first;
    t->events = malloc((t->event_count ? t->event_count : 1) * sizeof(*t->events));
    if (!t->events)
        return -ENOMEM;
    /* The ring's window in at most two pieces: from the oldest slot to the end, then from 0. */
    const unsigned char *ring = r->bytes + src->ring_offset;
    uint64_t oldest = first & ring_mask;
    uint64_t to_end = ring_size - oldest < t->event_count ? ring_size - oldest : t->event_count;
    memcpy(t->events, ring + oldest * sizeof(*t->events), to_end * sizeof(*t->events));
    memcpy(t->events + to_end, ring, (t->event_count - to_end) * sizeof(*t->events));
    /* A thread still running (the app reading its own recording) may have overwritten the
     * oldest of them while we copied: those are not trustworthy, drop them. */
    uint64_t head_after = atomic_load_explicit(&live->ring_head, memory_order_acquire);
    uint64_t safe_first = head_after > ring_size ? head_after - ring_size : 0;
    uint64_t skip = safe_first > first ? safe_first - first : 0;
    if (skip > t->event_count)
        skip = t->event_count;
    if (skip) {
        memmove(t->events, t->events + skip, (t->event_count - skip) * sizeof(*t->events));
        t->event_count -= skip;
    }
    return 0;
}

static int loc_compare(const void *a, const void *b)
{
    uint64_t x = ((const struct rec_loc *)a)->address, y = ((const struct rec_loc *)b)->address;
    return x < y ? -1 : x > y;
}

static int read_locs(struct reader *r, struct recording *rec, const struct rec_locs *src)
{
    (void)r;
    free(rec->locs);
    rec->locs = calloc(REC_LOC_CAPACITY, sizeof(*rec->locs));
    if (!rec->locs)
        return -ENOMEM;
    rec->loc_count = 0;
    for (unsigned i = 0; i < REC_LOC_CAPACITY; i++) {
        const struct rec_loc *e = &src->entries[i];
        if (!atomic_load(&e->ready) || !atomic_load(&e->address))
            continue;
        struct rec_loc *l = &rec->locs[rec->loc_count++];
        atomic_store(&l->address, atomic_load(&e->address));
        l->line = e->line;
        l->level = e->level;
        l->flags = e->flags;
        copy_string(l->name, sizeof(l->name), e->name, sizeof(e->name));
    }
    qsort(rec->locs, rec->loc_count, sizeof(*rec->locs), loc_compare);
    rec->locs_dropped = atomic_load(&src->dropped);
    return 0;
}

/* A DRM sample, checked and made printable, kept as recorded. */
static int drm_keep(struct reader *r, void *ctx, void *item, uint64_t index)
{
    struct drm_sample *d = item;
    if (d->engine_count > DRM_SAMPLE_ENGINES || d->region_count > DRM_SAMPLE_REGIONS)
        return reader_malformed(r, "DRM sample %llu is malformed", (unsigned long long)index);
    make_printable(d->driver, sizeof(d->driver));
    for (unsigned j = 0; j < d->engine_count; j++)
        make_printable(d->engines[j].name, sizeof(d->engines[j].name));
    for (unsigned j = 0; j < d->region_count; j++)
        make_printable(d->regions[j].name, sizeof(d->regions[j].name));
    return sorter_push(&((struct recording_kernel *)ctx)->drm_samples, d) ? 0 : -ENOMEM;
}

/* A sched event, checked and made printable: a mark apart, a thread's sorted by time. */
static int sched_keep(struct reader *r, void *ctx, void *item, uint64_t index)
{
    struct sched_event *e = item;
    if (e->kind < SCHED_EVENT_OUT || e->kind > SCHED_EVENT_KIND_LAST ||
        e->state > SCHED_OUT_OTHER)
        return reader_malformed(r, "sched event %llu is malformed", (unsigned long long)index);
    make_printable(e->other_comm, sizeof(e->other_comm));
    return recording_sched_add(ctx, e) ? 0 : -ENOMEM;
}

static int read_kernel(struct reader *r, struct recording *rec, const struct rec_kernel *src)
{
    struct recording_kernel *k = &rec->kernel;
    if (k->present)
        return reader_malformed(r, "two kernel sampler objects");
    k->present = true;
    k->tick_ms = src->tick_ms;
    k->thread_count = atomic_load(&src->thread_count);
    if (k->thread_count > REC_KERNEL_THREADS)
        k->thread_count = REC_KERNEL_THREADS;
    for (unsigned i = 0; i < k->thread_count; i++) {
        k->threads[i].tid = src->threads[i].tid;
        copy_string(k->threads[i].name, sizeof(k->threads[i].name), src->threads[i].name,
                    sizeof(src->threads[i].name));
    }
    copy_string(k->perf_why, sizeof(k->perf_why), src->perf_why, sizeof(src->perf_why));
    k->unwatched_threads = atomic_load(&src->unwatched_threads);
    k->kms = src->kms;
    if (k->kms.state > REC_KMS_UNAVAILABLE || k->kms.count > REC_KMS_OUTPUTS)
        return reader_malformed(r, "KMS state %u with %u outputs", k->kms.state, k->kms.count);
    k->kms.why[sizeof(k->kms.why) - 1] = '\0';
    for (unsigned i = 0; i < k->kms.count; i++) {
        struct rec_kms_output *o = &k->kms.outputs[i];
        o->card[sizeof(o->card) - 1] = o->connector[sizeof(o->connector) - 1] = '\0';
        if (o->vrr_capable > KMS_UNKNOWN || o->vrr_enabled > KMS_UNKNOWN)
            return reader_malformed(r, "KMS output %u with VRR state %u/%u", i, o->vrr_capable,
                             o->vrr_enabled);
    }
    recording_kernel_init(k);
    int e = read_sorted(r, rec, &src->samples, sizeof(struct kernel_sample), "kernel samples",
                        &k->samples, NULL, NO_FIELD); /* any counts: each use clamps them */
    k->sample_count = sorter_count(&k->samples);
    if (e)
        return e;
    k->drm_fds = atomic_load(&src->drm_fds);
    e = read_copied(r, rec, &src->drm_samples, sizeof(struct drm_sample), "DRM samples",
                    drm_keep, k);
    if (!e && !sorter_finish(&k->drm_samples))
        e = -ENOMEM;
    k->drm_sample_count = sorter_count(&k->drm_samples);
    if (e)
        return e;
    uint32_t sched = atomic_load(&src->sched_state);
    k->sched_state = sched <= REC_SCHED_OFF ? (enum rec_sched_state)sched : REC_SCHED_UNKNOWN;
    copy_string(k->sched_why, sizeof(k->sched_why), src->sched_why, sizeof(src->sched_why));
    k->sched_lost = atomic_load(&src->sched_lost);
    k->sched_pauses = atomic_load(&src->sched_pauses);
    k->sched_paused_ms = atomic_load(&src->sched_paused_ms);
    e = read_copied(r, rec, &src->sched_events, sizeof(struct sched_event), "sched events",
                    sched_keep, k);
    if (!e && !sorter_finish(&k->sched_events))
        e = -ENOMEM;
    return e;
}

/* The object at live, copied once into private memory (malloc'd; NULL when out of memory), so
 * what is checked is what is used however its app writes on. The counters a running writer
 * publishes are loaded again after the copy, in their order, so that they never promise more
 * than the arena held when they were read. */
static void *object_copy(const void *live, uint32_t type)
{
    void *copy = malloc(reader_object_sizes[type]);
    if (!copy)
        return NULL;
    memcpy(copy, live, reader_object_sizes[type]);
    switch (type) {
    case REC_OBJ_FRAME_LOG:
        reader_chunked_load(&((struct rec_frame_log *)copy)->frames,
                     &((const struct rec_frame_log *)live)->frames);
        break;
    case REC_OBJ_SPAN_LOG:
        reader_chunked_load(&((struct rec_span_log *)copy)->spans,
                     &((const struct rec_span_log *)live)->spans);
        break;
    case REC_OBJ_CAP:
        reader_chunked_load(&((struct rec_cap *)copy)->events, &((const struct rec_cap *)live)->events);
        break;
    case REC_OBJ_GPU_ZONES:
        reader_chunked_load(&((struct rec_gpu_zones *)copy)->spans,
                     &((const struct rec_gpu_zones *)live)->spans);
        reader_chunked_load(&((struct rec_gpu_zones *)copy)->stats,
                     &((const struct rec_gpu_zones *)live)->stats);
        break;
    case REC_OBJ_OBJECTS:
        reader_chunked_load(&((struct rec_objects *)copy)->names,
                     &((const struct rec_objects *)live)->names);
        reader_chunked_load(&((struct rec_objects *)copy)->pipelines,
                     &((const struct rec_objects *)live)->pipelines);
        break;
    case REC_OBJ_ENGINE: {
        struct rec_engine *c = copy;
        const struct rec_engine *l = live;
        reader_chunked_load(&c->recordings, &l->recordings);
        reader_chunked_load(&c->pool_ops, &l->pool_ops);
        reader_chunked_load(&c->memory, &l->memory);
        reader_chunked_load(&c->budgets, &l->budgets);
        reader_chunked_load(&c->gauges, &l->gauges);
        break;
    }
    case REC_OBJ_KERNEL:
        reader_chunked_load(&((struct rec_kernel *)copy)->samples,
                     &((const struct rec_kernel *)live)->samples);
        reader_chunked_load(&((struct rec_kernel *)copy)->drm_samples,
                     &((const struct rec_kernel *)live)->drm_samples);
        reader_chunked_load(&((struct rec_kernel *)copy)->sched_events,
                     &((const struct rec_kernel *)live)->sched_events);
        break;
    case REC_OBJ_THREAD: {
        struct rec_thread *t = copy;
        const struct rec_thread *l = live;
        atomic_store_explicit(&t->node_count,
                              atomic_load_explicit(&l->node_count, memory_order_acquire),
                              memory_order_relaxed);
        atomic_store_explicit(&t->ring_head,
                              atomic_load_explicit(&l->ring_head, memory_order_acquire),
                              memory_order_relaxed);
        break;
    }
    default:
        break;
    }
    return copy;
}

static int read_objects(struct reader *r, struct recording *rec, const struct rec_header *h)
{
    uint32_t entries = reader_directory_entries(h);
    rec->logs = calloc(entries + 1, sizeof(*rec->logs));
    rec->caps = calloc(entries + 1, sizeof(*rec->caps));
    rec->threads = calloc(entries + 1, sizeof(*rec->threads));
    if (!rec->logs || !rec->caps || !rec->threads)
        return -ENOMEM;
    recording_spans_init(rec);
    /* Every span log's spans go to one sorter, whose order is the same whatever order they
     * come in: those read ahead go there first. */
    if (r->stream)
        recording_early_adopt_shared(r->early, &rec->spans);
    for (uint32_t i = 0; i < entries; i++) {
        uint32_t type;
        void *live;
        int e = reader_directory_claim(r, h, i, &type, &live);
        if (e)
            return e;
        if (!live)
            continue; /* reserved by a writer that died before publishing it */
        void *object = object_copy(live, type);
        if (!object)
            return -ENOMEM;
        switch (type) {
        case REC_OBJ_META: recording_meta_read(rec, object); break;
        case REC_OBJ_LOCS: e = read_locs(r, rec, object); break;
        case REC_OBJ_THREAD: e = read_thread(r, rec, object, live); break;
        case REC_OBJ_FRAME_LOG: e = read_frame_log(r, rec, object); break;
        case REC_OBJ_SPAN_LOG: e = read_spans(r, rec, object); break;
        case REC_OBJ_CAP: e = read_cap(r, rec, object); break;
        case REC_OBJ_KERNEL: e = read_kernel(r, rec, object); break;
        case REC_OBJ_GPU_ZONE_NAMES: e = read_gpu_zone_names(r, rec, object); break;
        case REC_OBJ_GPU_ZONES: e = read_gpu_zones(r, rec, object); break;
        case REC_OBJ_OBJECTS: e = read_vk_objects(r, rec, object); break;
        case REC_OBJ_ENGINE: e = read_engine(r, rec, object); break;
        }
        free(object);
        if (e)
            return e;
    }
    rec->span_count = sorter_count(&rec->spans);
    rec->gpu_zone_count = sorter_count(&rec->gpu_zones);
    return sorter_finish(&rec->spans) && sorter_finish(&rec->gpu_zones) ? 0 : -ENOMEM;
}

/* recording_read, chunks streamed to stream_fd (-1: none) read from there, and with
 * release_chunks the pages of each chunk given back once copied (bytes is our own image). */
static int read_from(const void *bytes, size_t len, int stream_fd, uint64_t stream_start,
                     bool release_chunks, struct recording_early *early, struct recording **ret,
                     char *why, size_t why_len)
{
    struct reader r;
    struct rec_header *h;
    int e = reader_open(&r, bytes, len, why, why_len, &h);
    if (e)
        return e;
    r.release_chunks = release_chunks;
    r.early = early;
    if (h->layout != REC_LAYOUT_ARENA) {
        uint32_t layout = h->layout;
        free(h);
        return reader_malformed(&r, "a recording laid out as %u (1: packed, which "
                                "recording_read_fd unpacks), not as its arena", layout);
    }
    uint64_t used = atomic_load(&h->used);
    /* A running app's recording copied while it grew holds a header copied after the size
     * the copy was made for: what lies past that size came after the copy. */
    if (used > len && atomic_load(&h->state) == REC_STATE_RECORDING && len >= h->header_size)
        used = len;
    if (used < h->header_size || used > len) {
        free(h);
        return reader_malformed(&r, "the recording claims %llu bytes but holds %zu",
                         (unsigned long long)used, len);
    }
    r.len = (size_t)used;
    struct recording *rec = calloc(1, sizeof(*rec));
    if (!rec) {
        free(h);
        return -ENOMEM;
    }
    copy_string(rec->app, sizeof(rec->app), h->app, sizeof(h->app));
    rec->pid = atomic_load(&h->owner_pid);
    uint32_t state = atomic_load(&h->state);
    rec->state = state <= REC_STATE_ENDED ? (enum rec_state)state : REC_STATE_RECORDING;
    rec->end_status = h->end_status;
    rec->end_signal = h->end_signal;
    rec->clock_tsc = h->clock.tsc != 0;
    rec->clock_base_ticks = atomic_load(&h->clock.base_ticks);
    rec->clock_base_ns = atomic_load(&h->clock.base_ns);
    uint64_t bits = atomic_load(&h->clock.ns_per_tick_bits);
    memcpy(&rec->ns_per_tick, &bits, sizeof(bits));
    rec->alloc_failures = atomic_load(&h->alloc_failures);
    rec->gpu_timing = true;
    if (!isfinite(rec->ns_per_tick) || rec->ns_per_tick <= 0 || rec->ns_per_tick > 1e6)
        e = reader_malformed(&r, "the recording's clock rate is not a rate");
    if (!e && stream_fd >= 0)
        e = stream_source_open(&r, stream_fd, h->version, stream_start, &r.stream);
    r.entry = CLAIM_HEADER;
    if (!e)
        e = reader_claim(&r, 0, h->header_size, 1, NULL, 0);
    if (!e)
        e = read_objects(&r, rec, h);
    /* Overlapping objects explain whatever else looked wrong in them: said first. */
    if (!e || e == -EINVAL) {
        int overlap = reader_claims_check(&r);
        e = overlap ? overlap : e;
    }
    reader_finish(&r);
    free(h);
    if (e) {
        stream_source_free(r.stream);
        recording_free(rec);
        return e;
    }
    rec->stream = r.stream;
    *ret = rec;
    return 0;
}

int recording_read(const void *bytes, size_t len, struct recording **ret, char *why,
                   size_t why_len)
{
    return read_from(bytes, len, -1, 0, false, NULL, ret, why, why_len);
}

int recording_read_streamed(const void *bytes, size_t len, int stream_fd,
                            struct recording_early *early, struct recording **ret, char *why,
                            size_t why_len)
{
    return read_from(bytes, len, stream_fd, 0, false, early, ret, why, why_len);
}

int recording_read_fd(int fd, struct recording **ret, char *why, size_t why_len)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -errno;
    if (why_len)
        why[0] = '\0';
    if (!S_ISREG(st.st_mode)) {
        /* a directory's size is its blocks', not a recording's length */
        snprintf(why, why_len, "not a regular file");
        return -EINVAL;
    }
    if ((uint64_t)st.st_size < sizeof(struct rec_header)) {
        snprintf(why, why_len, "not a framescope recording (%lld bytes)", (long long)st.st_size);
        return -EINVAL;
    }
    struct rec_header h;
    if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
        return -EIO;
    if (h.layout == REC_LAYOUT_PACKED && memcmp(h.magic, REC_MAGIC, 8) == 0) {
        /* A capture's (version 10 on): unpacked into memory of our own, all but its frames,
         * which the reader decodes from the file chunk by chunk as it packs them (the file is
         * their stream file, its ranges after its header). */
        size_t file_len = (size_t)st.st_size;
        void *file = mmap(NULL, file_len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (file == MAP_FAILED)
            return -errno;
        void *image;
        size_t image_len;
        int e = recording_unpack(file, file_len, true, &image, &image_len, why, why_len);
        munmap(file, file_len);
        if (e)
            return e;
        e = read_from(image, image_len, fd, h.header_size, true, NULL, ret, why, why_len);
        munmap(image, image_len);
        return e;
    }
    /* An arena (version 9's captures): the header says how much of it is in use (a sparse
     * file): map only that. */
    uint64_t used = atomic_load(&h.used);
    size_t len = used >= sizeof(h) && used <= (uint64_t)st.st_size ? (size_t)used
                                                                    : (size_t)st.st_size;
    void *bytes = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (bytes == MAP_FAILED)
        return -errno;
    int e = recording_read(bytes, len, ret, why, why_len);
    munmap(bytes, len);
    return e;
}

void recording_free(struct recording *rec)
{
    if (!rec)
        return;
    for (unsigned i = 0; rec->logs && i < rec->log_count; i++)
        frame_store_free(&rec->logs[i]);
    free(rec->gpu_totals);
    for (unsigned i = 0; rec->caps && i < rec->cap_count; i++)
        sorter_free(&rec->caps[i].events);
    for (unsigned i = 0; rec->threads && i < rec->thread_count; i++) {
        free(rec->threads[i].nodes);
        free(rec->threads[i].events);
    }
    free(rec->logs);
    free(rec->caps);
    free(rec->threads);
    free(rec->locs);
    sorter_free(&rec->spans);
    sorter_free(&rec->gpu_zones);
    free(rec->gpu_zone_names);
    sorter_free(&rec->kernel.samples);
    sorter_free(&rec->kernel.drm_samples);
    sorter_free(&rec->kernel.sched_events);
    free(rec->kernel.sched_mark_list);
    free(rec->object_names);
    free(rec->object_name_index);
    sorter_free(&rec->pipelines);
    free(rec->pass_stats);
    sorter_free(&rec->engine.recordings);
    sorter_free(&rec->engine.pool_ops);
    sorter_free(&rec->engine.memory);
    sorter_free(&rec->engine.budgets);
    sorter_free(&rec->engine.gauges);
    free(rec->engine.sites);
    free(rec->engine.descriptor_pools);
    stream_source_free(rec->stream);
    free(rec);
}
