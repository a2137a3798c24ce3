#include "recording.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/text.h"

/* One range of the recording that a read object came from. */
struct claim {
    uint64_t offset, end;
    uint32_t entry;   /* its directory entry; CLAIM_HEADER for the header */
    uint32_t type;    /* the entry's enum rec_object_type */
    const char *part; /* NULL for the object itself, else "chunk table", "chunk", ... */
    uint64_t index;   /* which chunk */
};
#define CLAIM_HEADER UINT32_MAX

struct reader {
    const unsigned char *bytes;
    size_t len;
    char *why;
    size_t why_len;
    /* Every range read so far, and their sum. A writer allocates each object once, so no two
     * may share a byte: one that does (a directory or chunk-table entry naming something
     * again) is refused, and what is copied and analysed never exceeds the recording. */
    struct claim *claims;
    size_t claim_count, claim_capacity;
    uint64_t claimed_bytes;
    uint32_t entry, type; /* the directory entry being read */
    /* Room in rec's arrays that every object of a kind appends to. */
    uint64_t span_capacity, gpu_zone_capacity, pass_stats_capacity;
};

static int malformed(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int malformed(struct reader *r, const char *fmt, ...)
{
    if (r->why_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->why, r->why_len, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

/* Whether [offset, offset + size) lies inside the bytes. */
static bool inside(const struct reader *r, uint64_t offset, uint64_t size)
{
    return offset <= r->len && size <= r->len - offset;
}

static const char *const type_names[REC_OBJ_TYPE_COUNT] = {
    [REC_OBJ_NONE] = "nothing",
    [REC_OBJ_META] = "metadata",
    [REC_OBJ_LOCS] = "location table",
    [REC_OBJ_THREAD] = "thread",
    [REC_OBJ_FRAME_LOG] = "frame log",
    [REC_OBJ_SPAN_LOG] = "GPU span log",
    [REC_OBJ_CAP] = "cap",
    [REC_OBJ_KERNEL] = "kernel sampler",
    [REC_OBJ_GPU_ZONE_NAMES] = "GPU zone name table",
    [REC_OBJ_GPU_ZONES] = "GPU zone log",
    [REC_OBJ_OBJECTS] = "object table",
    [REC_OBJ_ENGINE] = "engine table",
};

/* "the header", "the frame log of directory entry 3", "chunk 7 of the frame log of ...". */
static const char *claim_describe(const struct claim *c, char *buf, size_t len)
{
    const char *type = c->type < REC_OBJ_TYPE_COUNT ? type_names[c->type] : "object";
    if (c->entry == CLAIM_HEADER)
        snprintf(buf, len, "the header");
    else if (!c->part)
        snprintf(buf, len, "the %s of directory entry %u", type, c->entry);
    else if (strcmp(c->part, "chunk") == 0)
        snprintf(buf, len, "chunk %llu of the %s of directory entry %u",
                 (unsigned long long)c->index, type, c->entry);
    else
        snprintf(buf, len, "the %s of the %s of directory entry %u", c->part, type, c->entry);
    return buf;
}

static int claim_compare(const void *a, const void *b)
{
    const struct claim *x = a, *y = b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Sorts the claims and refuses the first two that share a byte. Sorted by offset, ranges that
 * do not overlap their neighbours overlap nothing (every claim holds a byte at least). */
static int claims_check(struct reader *r)
{
    if (r->claim_count < 2)
        return 0;
    qsort(r->claims, r->claim_count, sizeof(*r->claims), claim_compare);
    for (size_t i = 1; i < r->claim_count; i++) {
        const struct claim *a = &r->claims[i - 1], *b = &r->claims[i];
        if (b->offset >= a->end)
            continue;
        char first[96], second[96];
        return malformed(r, "%s (bytes %llu-%llu) overlaps %s (bytes %llu-%llu)",
                         claim_describe(b, second, sizeof(second)), (unsigned long long)b->offset,
                         (unsigned long long)b->end - 1, claim_describe(a, first, sizeof(first)),
                         (unsigned long long)a->offset, (unsigned long long)a->end - 1);
    }
    return 0;
}

/* Claims [offset, offset + size) for what is read there (part of the current directory entry's
 * object, or the object itself for NULL): inside the recording, aligned as the writer aligns
 * it, and no byte of it read for anything else. A sum of claims beyond the recording's size is
 * refused at once, so a read never copies more than the recording holds; the ranges themselves
 * are checked when the read ends (claims_check), or at once when the sum gives one away. */
static int claim(struct reader *r, uint64_t offset, uint64_t size, uint64_t align,
                 const char *part, uint64_t index)
{
    struct claim c = { offset, offset + size, r->entry, r->type, part, index };
    char what[96];
    if (size == 0 || !inside(r, offset, size))
        return malformed(r, "%s (%llu bytes at %llu) is outside the recording's %zu bytes",
                         claim_describe(&c, what, sizeof(what)), (unsigned long long)size,
                         (unsigned long long)offset, r->len);
    if (offset % align)
        return malformed(r, "%s at %llu is not aligned to %llu bytes",
                         claim_describe(&c, what, sizeof(what)), (unsigned long long)offset,
                         (unsigned long long)align);
    if (r->claim_count == r->claim_capacity) {
        size_t capacity = r->claim_capacity ? 2 * r->claim_capacity : 64;
        struct claim *claims = realloc(r->claims, capacity * sizeof(*claims));
        if (!claims)
            return -ENOMEM;
        r->claims = claims;
        r->claim_capacity = capacity;
    }
    r->claims[r->claim_count++] = c;
    if (size > r->len - r->claimed_bytes) {
        int e = claims_check(r);
        return e ? e : malformed(r, "the recording's objects add up to more than its %zu bytes",
                                 r->len);
    }
    r->claimed_bytes += size;
    return 0;
}

static void reader_finish(struct reader *r)
{
    free(r->claims);
    r->claims = NULL;
    r->claim_count = r->claim_capacity = 0;
}

/* Every string a recording holds was written by the app (thread, zone, label and device
 * names): it is made printable here, once, so that no output (summary, journal, report,
 * trace) carries a terminal escape or a forged line. */
static void copy_string(char *dst, size_t dst_len, const char *src, size_t src_len)
{
    fscope_text_printable(dst, dst_len, src, src_len);
}

/* The same, for a string copied in place with the struct that holds it. */
static void make_printable(char *s, size_t len)
{
    char raw[256];
    if (len > sizeof(raw))
        len = sizeof(raw);
    memcpy(raw, s, len);
    copy_string(s, len, raw, len);
}

/* Copies a chunked array's count items out into *ret (malloc'd; NULL for none). a is the
 * reader's copy of the array's header (object_copy). Its chunk table and every chunk are
 * claimed, streamed ones too (they hold that place in the arena), before anything is
 * allocated for the items. */
static int read_chunked(struct reader *r, struct recording *rec, const struct chunked *a,
                        uint32_t item_size, const char *what, void **ret, uint64_t *ret_count)
{
    *ret = NULL;
    *ret_count = 0;
    rec->items_dropped += a->dropped; /* appends the full arena refused */
    uint64_t count = atomic_load(&a->count);
    if (!count)
        return 0;
    uint64_t capacity = atomic_load(&a->table_capacity);
    uint64_t table_offset = atomic_load(&a->table_offset);
    uint64_t chunk_items = a->chunk_items;
    if (a->item_size != item_size)
        return malformed(r, "%s: items of %u bytes, expected %u", what, a->item_size, item_size);
    if (chunk_items == 0 || chunk_items > r->len / item_size)
        return malformed(r, "%s: chunks of %llu items do not fit in the recording", what,
                         (unsigned long long)chunk_items);
    uint64_t chunk_bytes = chunk_items * item_size;
    uint64_t chunks = count / chunk_items + (count % chunk_items != 0);
    if (chunks > capacity || capacity > r->len / sizeof(uint64_t))
        return malformed(r, "%s: %llu items in chunks of %llu, and a chunk table of %llu", what,
                         (unsigned long long)count, (unsigned long long)chunk_items,
                         (unsigned long long)capacity);
    /* A recording copied while its app ran may also name a table that grew (moved to a new
     * place) after the copy's size was taken: every item it knows of came as far as this copy
     * can tell after the copy, and is left out (CI once saw a copy refused so: "the chunk table
     * of the kernel sampler ... is outside the recording"). A finished one is refused. */
    if (rec->state == REC_STATE_RECORDING &&
        (table_offset >= r->len || capacity * sizeof(uint64_t) > r->len - table_offset))
        return 0;
    int e = claim(r, table_offset, capacity * sizeof(uint64_t), REC_ALIGN, "chunk table", 0);
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
        e = claim(r, table[c], chunk_bytes, REC_ALIGN, "chunk", c);
    }
    /* Chunks still in the stream file (a recording read while its app runs, for a trace) are
     * not here: the items start after them. */
    uint64_t streamed = atomic_load(&a->streamed_chunks);
    if (streamed > chunks)
        streamed = chunks;
    uint64_t skipped = streamed * chunk_items;
    unsigned char *items = NULL;
    if (!e && skipped < count) {
        count -= skipped;
        items = malloc(count * item_size);
        if (!items)
            e = -ENOMEM;
        for (uint64_t c = streamed; !e && c < chunks; c++) {
            uint64_t first = c * chunk_items - skipped;
            uint64_t n = count - first < chunk_items ? count - first : chunk_items;
            memcpy(items + first * item_size, r->bytes + table[c], n * item_size);
        }
    }
    free(table);
    if (e) {
        free(items);
        return e;
    }
    *ret = items;
    *ret_count = items ? count : 0;
    return 0;
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

static int check_frame(struct reader *r, const struct recording_log *log, uint64_t i)
{
    const struct fscope_frame *f = &log->frames[i];
    /* A bool's byte as written: any other value than 0 or 1 is no bool to load. */
    unsigned char ambiguous;
    memcpy(&ambiguous, &f->output_ambiguous, 1);
    bool ok = f->block_span_count <= FRAME_BLOCK_SPANS && f->present_state < FRAME_PRESENT_STATE_COUNT &&
              f->end_ticks >= f->start_ticks && ambiguous <= 1;
    for (unsigned s = 0; ok && s < f->block_span_count; s++)
        ok = f->block_span_kind[s] < FSCOPE_BLOCK_COUNT &&
             f->block_span_end[s] >= f->block_span_start[s];
    if (!ok)
        return malformed(r, "frame %llu of surface '%s' is malformed", (unsigned long long)i,
                         log->label);
    return 0;
}

static int read_frame_log(struct reader *r, struct recording *rec, const struct rec_frame_log *src)
{
    struct recording_log *log = &rec->logs[rec->log_count];
    memset(log, 0, sizeof(*log));
    copy_string(log->label, sizeof(log->label), src->label, sizeof(src->label));
    uint32_t surface = atomic_load(&src->surface);
    if (surface > FRAME_SURFACE_X11)
        return malformed(r, "surface '%s' has an unknown kind %u", log->label, surface);
    log->surface = (enum frame_surface)surface;
    log->tracked = atomic_load(&src->tracked) != 0;
    copy_string(log->untracked_why, sizeof(log->untracked_why), src->untracked_why,
                sizeof(src->untracked_why));
    uint32_t seq = atomic_load(&src->counts_seq);
    log->counts = src->counts;
    log->have_counts = atomic_load(&src->counts_valid) && !(seq & 1) &&
                       atomic_load(&src->counts_seq) == seq;
    void *frames;
    int e = read_chunked(r, rec, &src->frames, sizeof(struct fscope_frame), log->label, &frames,
                         &log->frame_count);
    if (e)
        return e;
    log->frames = frames;
    rec->log_count++;
    for (uint64_t i = 0; i < log->frame_count; i++) {
        log->frames[i].gpu_busy_ticks = 0;
        log->frames[i].gpu_unsampled = 0;
        memset(log->frames[i].block_gpu_ticks, 0, sizeof(log->frames[i].block_gpu_ticks));
        if ((e = check_frame(r, log, i)))
            return e;
    }
    return 0;
}

static int read_gpu_zone_names(struct reader *r, struct recording *rec,
                               const struct rec_gpu_zone_names *src)
{
    if (rec->gpu_zone_names)
        return malformed(r, "two GPU zone name tables");
    uint32_t count = atomic_load(&src->count);
    if (count > GPU_ZONE_NAMES)
        return malformed(r, "%u GPU zone names, at most %u", count, GPU_ZONE_NAMES);
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
        return malformed(r, "pipeline statistics in state %u", rec->pipeline_stats);
    rec->pass_stats_skipped = atomic_load(&src->stats_skipped);
    return 0;
}

static int read_gpu_zones(struct reader *r, struct recording *rec, const struct rec_gpu_zones *src)
{
    void *spans;
    uint64_t count;
    int e = read_chunked(r, rec, &src->spans, sizeof(struct gpu_zone_span), "GPU zones", &spans,
                         &count);
    for (uint64_t i = 0; !e && i < count; i++) {
        const struct gpu_zone_span *z = &((const struct gpu_zone_span *)spans)[i];
        if (z->end < z->begin || z->kind > GPU_ZONE_PASS)
            e = malformed(r, "a GPU zone ends before it begins, or has kind %u", z->kind);
    }
    if (!e && count)
        e = append_items((void **)&rec->gpu_zones, &rec->gpu_zone_count, &r->gpu_zone_capacity,
                         spans, count, sizeof(struct gpu_zone_span));
    free(spans);
    if (e)
        return e;
    void *stats;
    e = read_chunked(r, rec, &src->stats, sizeof(struct gpu_pass_stats), "pipeline statistics",
                     &stats, &count);
    if (!e && count)
        e = append_items((void **)&rec->pass_stats, &rec->pass_stats_count,
                         &r->pass_stats_capacity, stats, count, sizeof(struct gpu_pass_stats));
    free(stats);
    return e;
}

static int read_vk_objects(struct reader *r, struct recording *rec, const struct rec_objects *src)
{
    if (rec->object_names || rec->pipelines)
        return malformed(r, "two object tables");
    void *names, *pipelines;
    int e = read_chunked(r, rec, &src->names, sizeof(struct object_name), "object names", &names,
                         &rec->object_name_count);
    rec->object_names = names;
    if (e)
        return e;
    for (uint64_t i = 0; i < rec->object_name_count; i++)
        make_printable(rec->object_names[i].name, sizeof(rec->object_names[i].name));
    e = read_chunked(r, rec, &src->pipelines, sizeof(struct pipeline_created), "pipelines",
                     &pipelines, &rec->pipeline_count);
    rec->pipelines = pipelines;
    return e;
}

static int read_engine(struct reader *r, struct recording *rec, const struct rec_engine *src)
{
    struct recording_engine *g = &rec->engine;
    if (g->present)
        return malformed(r, "two engine tables");
    g->present = true;
    void *items;
    int e = read_chunked(r, rec, &src->recordings, sizeof(struct cmd_recording),
                         "command buffer recordings", &items, &g->recording_count);
    g->recordings = items;
    for (uint64_t i = 0; !e && i < g->recording_count; i++)
        if (g->recordings[i].end_ticks < g->recordings[i].begin_ticks)
            e = malformed(r, "a command buffer recording ends before it begins");
    if (e)
        return e;
    e = read_chunked(r, rec, &src->pool_ops, sizeof(struct pool_op), "command pool calls", &items,
                     &g->pool_op_count);
    g->pool_ops = items;
    for (uint64_t i = 0; !e && i < g->pool_op_count; i++) {
        const struct pool_op *op = &g->pool_ops[i];
        if (op->end_ticks < op->begin_ticks || op->kind < POOL_OP_RESET_POOL ||
            op->kind > POOL_OP_TRIM)
            e = malformed(r, "a command pool call of kind %u ends before it begins, or is no "
                          "kind known", op->kind);
    }
    if (e)
        return e;
    e = read_chunked(r, rec, &src->memory, sizeof(struct memory_event), "memory events", &items,
                     &g->memory_count);
    g->memory = items;
    for (uint64_t i = 0; !e && i < g->memory_count; i++)
        if (g->memory[i].kind < MEMORY_ALLOC || g->memory[i].kind > MEMORY_ALLOC_FAILED)
            e = malformed(r, "a memory event of kind %u", g->memory[i].kind);
    if (e)
        return e;
    e = read_chunked(r, rec, &src->budgets, sizeof(struct budget_sample), "memory budgets",
                     &items, &g->budget_count);
    g->budgets = items;
    for (uint64_t i = 0; !e && i < g->budget_count; i++)
        if (g->budgets[i].heap_count > BUDGET_HEAPS)
            e = malformed(r, "a memory budget of %u heaps", g->budgets[i].heap_count);
    if (e)
        return e;
    e = read_chunked(r, rec, &src->gauges, sizeof(struct gauge_sample), "gauges", &items,
                     &g->gauge_count);
    g->gauges = items;
    if (e)
        return e;
    g->memory_props_count = atomic_load(&src->memory_props_count);
    if (g->memory_props_count > REC_ENGINE_DEVICES)
        return malformed(r, "memory properties of %u devices", g->memory_props_count);
    for (unsigned i = 0; i < g->memory_props_count; i++) {
        g->memory_props[i] = src->memory_props[i];
        const struct rec_memory_props *m = &g->memory_props[i];
        if (m->heap_count > MEMORY_HEAPS || m->type_count > MEMORY_TYPES)
            return malformed(r, "a device with %u memory heaps and %u types", m->heap_count,
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
            return malformed(r, "a bind site of kind %u", to->kind);
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

static int read_spans(struct reader *r, struct recording *rec, const struct rec_span_log *src)
{
    void *spans;
    uint64_t count;
    int e = read_chunked(r, rec, &src->spans, sizeof(struct gpu_span), "GPU spans", &spans, &count);
    for (uint64_t i = 0; !e && i < count; i++) {
        const struct gpu_span *span = &((const struct gpu_span *)spans)[i];
        if (span->end < span->begin)
            e = malformed(r, "a GPU span ends before it begins");
    }
    if (!e && count)
        e = append_items((void **)&rec->spans, &rec->span_count, &r->span_capacity, spans, count,
                         sizeof(struct gpu_span));
    free(spans);
    return e;
}

static int read_cap(struct reader *r, struct recording *rec, const struct rec_cap *src)
{
    struct recording_cap *cap = &rec->caps[rec->cap_count];
    memset(cap, 0, sizeof(*cap));
    copy_string(cap->label, sizeof(cap->label), src->label, sizeof(src->label));
    void *events;
    int e = read_chunked(r, rec, &src->events, sizeof(struct cap_event), cap->label, &events,
                         &cap->event_count);
    if (e)
        return e;
    cap->events = events;
    rec->cap_count++;
    for (uint64_t i = 0; i < cap->event_count; i++)
        if (cap->events[i].target_ns == 0)
            return malformed(r, "cap '%s' has an event with no target", cap->label);
    return 0;
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
        return malformed(r, "thread '%s' names slot %u; a recording has at most %u", t->name,
                         src->slot, REC_DIR_ENTRIES);
    t->tid = state == SLOT_EXTERNAL ? 1000000 + (int)src->slot : src->tid;
    uint32_t nodes = atomic_load(&src->node_count);
    uint64_t ring_mask = src->ring_mask, ring_size = ring_mask + 1;
    if (nodes == 0 || nodes > src->node_capacity || ring_mask == UINT64_MAX ||
        (ring_mask & ring_size) != 0 || ring_size > r->len / sizeof(struct fscope_event))
        return malformed(r, "thread '%s': %u zones of %u, a ring of %llu events", t->name, nodes,
                         src->node_capacity, (unsigned long long)ring_size);
    /* Both allocated by the writer on their own (recording_alloc): aligned to REC_ALIGN. */
    int e = claim(r, src->nodes_offset, (uint64_t)src->node_capacity * sizeof(struct zone_node),
                  REC_ALIGN, "zone tree", 0);
    if (!e)
        e = claim(r, src->ring_offset, ring_size * sizeof(struct fscope_event), REC_ALIGN, "ring",
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
            return malformed(r, "thread '%s': zone %u has a parent after it", t->name, i);
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

static void read_meta(struct recording *rec, const struct rec_meta *m)
{
    rec->enabled = atomic_load(&m->enabled) != 0;
    rec->gpu_timing = atomic_load(&m->gpu_timing) != 0;
    rec->device_count = atomic_load(&m->device_count);
    if (rec->device_count > REC_MAX_DEVICES)
        rec->device_count = REC_MAX_DEVICES;
    for (unsigned i = 0; i < rec->device_count; i++) {
        struct rec_device *d = &rec->devices[i];
        *d = m->devices[i];
        make_printable(d->name, sizeof(d->name));
        make_printable(d->driver, sizeof(d->driver));
    }
    rec->note_count = atomic_load(&m->note_count);
    if (rec->note_count > REC_MAX_NOTES)
        rec->note_count = REC_MAX_NOTES;
    for (unsigned i = 0; i < rec->note_count; i++)
        copy_string(rec->notes[i], sizeof(rec->notes[i]), m->notes[i], sizeof(m->notes[i]));
    rec->output_count = atomic_load(&m->output_count);
    if (rec->output_count > REC_MAX_OUTPUTS)
        rec->output_count = REC_MAX_OUTPUTS;
    for (unsigned i = 0; i < rec->output_count; i++) {
        rec->outputs[i] = m->outputs[i];
        make_printable(rec->outputs[i].name, sizeof(rec->outputs[i].name));
    }
    uint32_t kernel = atomic_load(&m->kernel_state);
    rec->kernel_state = kernel <= REC_KERNEL_UNAVAILABLE ? (enum rec_kernel_state)kernel
                                                         : REC_KERNEL_UNKNOWN;
    copy_string(rec->kernel_why, sizeof(rec->kernel_why), m->kernel_why, sizeof(m->kernel_why));
    const struct rec_counters *c = &m->counters;
    uint32_t counters = atomic_load(&c->state);
    rec->counters.state = counters <= REC_COUNTERS_UNAVAILABLE ? (enum rec_counter_state)counters
                                                               : REC_COUNTERS_UNKNOWN;
    rec->counters.count = c->count <= FRAME_COUNTERS ? c->count : FRAME_COUNTERS;
    for (unsigned k = 0; k < rec->counters.count; k++) {
        char *name = rec->counters.names[k];
        copy_string(name, sizeof(rec->counters.names[k]), c->names[k], sizeof(c->names[k]));
        /* libpfm4's names are words, "::", ':' and '=': anything else would break a CSV
         * header or a summary line. */
        for (char *p = name; *p; p++)
            if (!isalnum((unsigned char)*p) && !strchr(":=_.-", *p))
                *p = '?';
        rec->counters.kinds[k] = c->kinds[k] <= COUNTER_INSTRUCTIONS ? (enum counter_kind)c->kinds[k]
                                                                     : COUNTER_OTHER;
    }
    copy_string(rec->counters.why, sizeof(rec->counters.why), c->why, sizeof(c->why));
    if (atomic_load(&m->system_known)) {
        const struct rec_system *s = &m->system;
        copy_string(rec->system.os, sizeof(rec->system.os), s->os, sizeof(s->os));
        copy_string(rec->system.cpu, sizeof(rec->system.cpu), s->cpu, sizeof(s->cpu));
        copy_string(rec->system.ram_kib, sizeof(rec->system.ram_kib), s->ram_kib,
                    sizeof(s->ram_kib));
        copy_string(rec->system.kernel, sizeof(rec->system.kernel), s->kernel, sizeof(s->kernel));
        copy_string(rec->system.scheduler, sizeof(rec->system.scheduler), s->scheduler,
                    sizeof(s->scheduler));
    }
}

static int read_kernel(struct reader *r, struct recording *rec, const struct rec_kernel *src)
{
    struct recording_kernel *k = &rec->kernel;
    if (k->present)
        return malformed(r, "two kernel sampler objects");
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
        return malformed(r, "KMS state %u with %u outputs", k->kms.state, k->kms.count);
    k->kms.why[sizeof(k->kms.why) - 1] = '\0';
    for (unsigned i = 0; i < k->kms.count; i++) {
        struct rec_kms_output *o = &k->kms.outputs[i];
        o->card[sizeof(o->card) - 1] = o->connector[sizeof(o->connector) - 1] = '\0';
        if (o->vrr_capable > KMS_UNKNOWN || o->vrr_enabled > KMS_UNKNOWN)
            return malformed(r, "KMS output %u with VRR state %u/%u", i, o->vrr_capable,
                             o->vrr_enabled);
    }
    void *samples;
    int e = read_chunked(r, rec, &src->samples, sizeof(struct kernel_sample), "kernel samples",
                         &samples, &k->sample_count);
    k->samples = samples;
    if (e)
        return e;
    k->drm_fds = atomic_load(&src->drm_fds);
    void *drm;
    e = read_chunked(r, rec, &src->drm_samples, sizeof(struct drm_sample), "DRM samples", &drm,
                     &k->drm_sample_count);
    k->drm_samples = drm;
    for (uint64_t i = 0; !e && i < k->drm_sample_count; i++) {
        struct drm_sample *d = &k->drm_samples[i];
        if (d->engine_count > DRM_SAMPLE_ENGINES || d->region_count > DRM_SAMPLE_REGIONS)
            return malformed(r, "DRM sample %llu is malformed", (unsigned long long)i);
        make_printable(d->driver, sizeof(d->driver));
        for (unsigned j = 0; j < d->engine_count; j++)
            make_printable(d->engines[j].name, sizeof(d->engines[j].name));
        for (unsigned j = 0; j < d->region_count; j++)
            make_printable(d->regions[j].name, sizeof(d->regions[j].name));
    }
    if (e)
        return e;
    uint32_t sched = atomic_load(&src->sched_state);
    k->sched_state = sched <= REC_SCHED_OFF ? (enum rec_sched_state)sched : REC_SCHED_UNKNOWN;
    copy_string(k->sched_why, sizeof(k->sched_why), src->sched_why, sizeof(src->sched_why));
    k->sched_lost = atomic_load(&src->sched_lost);
    k->sched_pauses = atomic_load(&src->sched_pauses);
    k->sched_paused_ms = atomic_load(&src->sched_paused_ms);
    void *events;
    e = read_chunked(r, rec, &src->sched_events, sizeof(struct sched_event), "sched events",
                     &events, &k->sched_count);
    k->sched_events = events;
    k->sched_marks = 0;
    for (uint64_t i = 0; !e && i < k->sched_count; i++) {
        struct sched_event *s = &k->sched_events[i];
        k->sched_marks += s->kind == SCHED_EVENT_PAUSED || s->kind == SCHED_EVENT_RESUMED;
        if (s->kind < SCHED_EVENT_OUT || s->kind > SCHED_EVENT_RESUMED || s->state > SCHED_OUT_OTHER)
            return malformed(r, "sched event %llu is malformed", (unsigned long long)i);
        make_printable(s->other_comm, sizeof(s->other_comm));
    }
    return e;
}

static const uint64_t object_sizes[REC_OBJ_TYPE_COUNT] = {
    [REC_OBJ_META] = sizeof(struct rec_meta),
    [REC_OBJ_LOCS] = sizeof(struct rec_locs),
    [REC_OBJ_THREAD] = sizeof(struct rec_thread),
    [REC_OBJ_FRAME_LOG] = sizeof(struct rec_frame_log),
    [REC_OBJ_SPAN_LOG] = sizeof(struct rec_span_log),
    [REC_OBJ_CAP] = sizeof(struct rec_cap),
    [REC_OBJ_KERNEL] = sizeof(struct rec_kernel),
    [REC_OBJ_GPU_ZONE_NAMES] = sizeof(struct rec_gpu_zone_names),
    [REC_OBJ_GPU_ZONES] = sizeof(struct rec_gpu_zones),
    [REC_OBJ_OBJECTS] = sizeof(struct rec_objects),
    [REC_OBJ_ENGINE] = sizeof(struct rec_engine),
};

/* A header of this format, or an error naming what it is instead. */
static int check_header(struct reader *r, const struct rec_header *h)
{
    if (r->len < sizeof(*h) || memcmp(h->magic, REC_MAGIC, 8) != 0)
        return malformed(r, "not a framescope recording");
    if (h->version != REC_VERSION || h->header_size != sizeof(*h))
        return malformed(r, "a recording of format %u; this framescope reads format %u",
                         h->version, REC_VERSION);
    return 0;
}

/* The header, copied once (another process may be writing it) and checked. */
static int header_copy(struct reader *r, struct rec_header **ret)
{
    *ret = NULL;
    /* The arena is mapped (page-aligned); its 8-byte fields are loaded atomically. */
    if ((uintptr_t)r->bytes % 8)
        return malformed(r, "the recording is not aligned in memory");
    if (r->len < sizeof(**ret))
        return malformed(r, "not a framescope recording");
    struct rec_header *h = malloc(sizeof(*h));
    if (!h)
        return -ENOMEM;
    memcpy(h, r->bytes, sizeof(*h));
    int e = check_header(r, h);
    if (e) {
        free(h);
        return e;
    }
    *ret = h;
    return 0;
}

/* The directory's entries, within its capacity. */
static uint32_t directory_entries(const struct rec_header *h)
{
    uint32_t entries = atomic_load(&h->dir_count);
    return entries < REC_DIR_ENTRIES ? entries : REC_DIR_ENTRIES;
}

/* Entry i's object in the arena and its type: 0 with *ret_object NULL for an entry a writer
 * reserved and never published, -EINVAL for one that is not a valid object of its type. */
static int directory_object(struct reader *r, const struct rec_header *h, uint32_t i,
                            uint32_t *ret_type, void **ret_object)
{
    uint32_t type = atomic_load_explicit(&h->dir[i].type, memory_order_acquire);
    uint64_t offset = h->dir[i].offset, size = h->dir[i].size;
    *ret_type = type;
    *ret_object = NULL;
    if (type == REC_OBJ_NONE)
        return 0;
    if (type >= REC_OBJ_TYPE_COUNT || size != object_sizes[type] || offset < h->header_size ||
        offset % 8 || !inside(r, offset, size))
        return malformed(r, "directory entry %u (type %u, %llu bytes at %llu) is not a valid "
                         "object", i, type, (unsigned long long)size, (unsigned long long)offset);
    *ret_object = (void *)(r->bytes + offset);
    return 0;
}

/* The same, with the object's bytes claimed for entry i (and what is claimed next, its chunks,
 * tree and ring, named after it). */
static int directory_claim(struct reader *r, const struct rec_header *h, uint32_t i,
                           uint32_t *ret_type, void **ret_object)
{
    int e = directory_object(r, h, i, ret_type, ret_object);
    if (e || !*ret_object)
        return e;
    r->entry = i;
    r->type = *ret_type;
    return claim(r, h->dir[i].offset, h->dir[i].size, 8, NULL, 0);
}

/* A writer's counters loaded in the order it publishes them (a count before the table of
 * chunks that holds its items, the table's capacity before its offset), into a copy. */
static void chunked_load(struct chunked *dst, const struct chunked *live)
{
    atomic_store_explicit(&dst->count, atomic_load_explicit(&live->count, memory_order_acquire),
                          memory_order_relaxed);
    uint64_t capacity = atomic_load_explicit(&live->table_capacity, memory_order_acquire);
    uint64_t table = atomic_load_explicit(&live->table_offset, memory_order_acquire);
    atomic_store_explicit(&dst->table_capacity, capacity, memory_order_relaxed);
    atomic_store_explicit(&dst->table_offset, table, memory_order_relaxed);
    atomic_store_explicit(&dst->streamed_chunks,
                          atomic_load_explicit(&live->streamed_chunks, memory_order_acquire),
                          memory_order_relaxed);
}

/* The object at live, copied once into private memory (malloc'd; NULL when out of memory), so
 * what is checked is what is used however its app writes on. The counters a running writer
 * publishes are loaded again after the copy, in their order, so that they never promise more
 * than the arena held when they were read. */
static void *object_copy(const void *live, uint32_t type)
{
    void *copy = malloc(object_sizes[type]);
    if (!copy)
        return NULL;
    memcpy(copy, live, object_sizes[type]);
    switch (type) {
    case REC_OBJ_FRAME_LOG:
        chunked_load(&((struct rec_frame_log *)copy)->frames,
                     &((const struct rec_frame_log *)live)->frames);
        break;
    case REC_OBJ_SPAN_LOG:
        chunked_load(&((struct rec_span_log *)copy)->spans,
                     &((const struct rec_span_log *)live)->spans);
        break;
    case REC_OBJ_CAP:
        chunked_load(&((struct rec_cap *)copy)->events, &((const struct rec_cap *)live)->events);
        break;
    case REC_OBJ_GPU_ZONES:
        chunked_load(&((struct rec_gpu_zones *)copy)->spans,
                     &((const struct rec_gpu_zones *)live)->spans);
        chunked_load(&((struct rec_gpu_zones *)copy)->stats,
                     &((const struct rec_gpu_zones *)live)->stats);
        break;
    case REC_OBJ_OBJECTS:
        chunked_load(&((struct rec_objects *)copy)->names,
                     &((const struct rec_objects *)live)->names);
        chunked_load(&((struct rec_objects *)copy)->pipelines,
                     &((const struct rec_objects *)live)->pipelines);
        break;
    case REC_OBJ_ENGINE: {
        struct rec_engine *c = copy;
        const struct rec_engine *l = live;
        chunked_load(&c->recordings, &l->recordings);
        chunked_load(&c->pool_ops, &l->pool_ops);
        chunked_load(&c->memory, &l->memory);
        chunked_load(&c->budgets, &l->budgets);
        chunked_load(&c->gauges, &l->gauges);
        break;
    }
    case REC_OBJ_KERNEL:
        chunked_load(&((struct rec_kernel *)copy)->samples,
                     &((const struct rec_kernel *)live)->samples);
        chunked_load(&((struct rec_kernel *)copy)->drm_samples,
                     &((const struct rec_kernel *)live)->drm_samples);
        chunked_load(&((struct rec_kernel *)copy)->sched_events,
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
    uint32_t entries = directory_entries(h);
    rec->logs = calloc(entries + 1, sizeof(*rec->logs));
    rec->caps = calloc(entries + 1, sizeof(*rec->caps));
    rec->threads = calloc(entries + 1, sizeof(*rec->threads));
    if (!rec->logs || !rec->caps || !rec->threads)
        return -ENOMEM;
    for (uint32_t i = 0; i < entries; i++) {
        uint32_t type;
        void *live;
        int e = directory_claim(r, h, i, &type, &live);
        if (e)
            return e;
        if (!live)
            continue; /* reserved by a writer that died before publishing it */
        void *object = object_copy(live, type);
        if (!object)
            return -ENOMEM;
        switch (type) {
        case REC_OBJ_META: read_meta(rec, object); break;
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
    return 0;
}

int recording_read(const void *bytes, size_t len, struct recording **ret, char *why,
                   size_t why_len)
{
    struct reader r = { .bytes = bytes, .len = len, .why = why, .why_len = why_len };
    if (why_len)
        why[0] = '\0';
    struct rec_header *h;
    int e = header_copy(&r, &h);
    if (e)
        return e;
    uint64_t used = atomic_load(&h->used);
    /* A running app's recording copied while it grew holds a header copied after the size
     * the copy was made for: what lies past that size came after the copy. */
    if (used > len && atomic_load(&h->state) == REC_STATE_RECORDING && len >= h->header_size)
        used = len;
    if (used < h->header_size || used > len) {
        free(h);
        return malformed(&r, "the recording claims %llu bytes but holds %zu",
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
        e = malformed(&r, "the recording's clock rate is not a rate");
    r.entry = CLAIM_HEADER;
    if (!e)
        e = claim(&r, 0, h->header_size, 1, NULL, 0);
    if (!e)
        e = read_objects(&r, rec, h);
    /* Overlapping objects explain whatever else looked wrong in them: said first. */
    if (!e || e == -EINVAL) {
        int overlap = claims_check(&r);
        e = overlap ? overlap : e;
    }
    reader_finish(&r);
    free(h);
    if (e) {
        recording_free(rec);
        return e;
    }
    *ret = rec;
    return 0;
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
    /* The header says how much of the (sparse) arena is in use: map only that. */
    struct rec_header h;
    if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
        return -EIO;
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
        free(rec->logs[i].frames);
    for (unsigned i = 0; rec->caps && i < rec->cap_count; i++)
        free(rec->caps[i].events);
    for (unsigned i = 0; rec->threads && i < rec->thread_count; i++) {
        free(rec->threads[i].nodes);
        free(rec->threads[i].events);
    }
    free(rec->logs);
    free(rec->caps);
    free(rec->threads);
    free(rec->locs);
    free(rec->spans);
    free(rec->gpu_zones);
    free(rec->gpu_zone_names);
    free(rec->kernel.samples);
    free(rec->kernel.drm_samples);
    free(rec->kernel.sched_events);
    free(rec->object_names);
    free(rec->pipelines);
    free(rec->pass_stats);
    free(rec->engine.recordings);
    free(rec->engine.pool_ops);
    free(rec->engine.memory);
    free(rec->engine.budgets);
    free(rec->engine.gauges);
    free(rec->engine.sites);
    free(rec->engine.descriptor_pools);
    free(rec);
}

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

/* What recording_unstream brings back: every streamed chunk (its place in the arena is its
 * place in the stream file), and the arrays whose streamed_chunks it then sets to 0. */
struct unstream_plan {
    struct { uint64_t offset, bytes; } *chunks;
    size_t chunk_count, chunk_capacity;
    struct chunked **arrays;
    size_t array_count, array_capacity;
};

static bool plan_grow(void **array, size_t *capacity, size_t count, size_t item_size)
{
    if (count < *capacity)
        return true;
    size_t want = *capacity ? 2 * *capacity : 64;
    void *grown = realloc(*array, want * item_size);
    if (!grown)
        return false;
    *array = grown;
    *capacity = want;
    return true;
}

/* Plans one array's streamed chunks: its table and each chunk claimed as recording_read claims
 * them, so no byte of the stream file is read twice and none is written over another object. */
static int unstream_plan_array(struct reader *r, struct chunked *live, struct unstream_plan *p)
{
    struct chunked a;
    memcpy(&a, live, sizeof(a));
    chunked_load(&a, live);
    uint64_t streamed = atomic_load(&a.streamed_chunks);
    if (!streamed)
        return 0;
    uint64_t capacity = atomic_load(&a.table_capacity);
    uint64_t table_offset = atomic_load(&a.table_offset);
    if (a.item_size == 0 || a.chunk_items == 0 || a.chunk_items > r->len / a.item_size ||
        streamed > capacity || capacity > r->len / sizeof(uint64_t))
        return malformed(r, "a streamed array of %llu chunks of %u items of %u bytes, and a "
                         "chunk table of %llu", (unsigned long long)streamed, a.chunk_items,
                         a.item_size, (unsigned long long)capacity);
    uint64_t chunk_bytes = (uint64_t)a.chunk_items * a.item_size;
    int e = claim(r, table_offset, capacity * sizeof(uint64_t), REC_ALIGN, "chunk table", 0);
    for (uint64_t c = 0; !e && c < streamed; c++) {
        uint64_t offset;
        memcpy(&offset, r->bytes + table_offset + c * sizeof(uint64_t), sizeof(offset));
        e = claim(r, offset, chunk_bytes, REC_ALIGN, "chunk", c);
        if (!e && !plan_grow((void **)&p->chunks, &p->chunk_capacity, p->chunk_count,
                             sizeof(*p->chunks)))
            e = -ENOMEM;
        if (!e) {
            p->chunks[p->chunk_count].offset = offset;
            p->chunks[p->chunk_count++].bytes = chunk_bytes;
        }
    }
    if (!e && !plan_grow((void **)&p->arrays, &p->array_capacity, p->array_count,
                         sizeof(*p->arrays)))
        e = -ENOMEM;
    if (!e)
        p->arrays[p->array_count++] = live;
    return e;
}

/* Reads the planned chunks from the stream file into bytes, each whole or an error. */
static int unstream_read(struct reader *r, const struct unstream_plan *p, int stream_fd)
{
    struct stat st;
    bool sized = fstat(stream_fd, &st) == 0 && S_ISREG(st.st_mode);
    for (size_t i = 0; i < p->chunk_count; i++) {
        uint64_t offset = p->chunks[i].offset, bytes = p->chunks[i].bytes;
        /* Never more than the file holds: a recording cannot make us read past its end. */
        if (sized && offset + bytes > (uint64_t)st.st_size)
            return malformed(r, "a streamed chunk (%llu bytes at %llu) is beyond the stream "
                             "file's %lld bytes", (unsigned long long)bytes,
                             (unsigned long long)offset, (long long)st.st_size);
        unsigned char *to = (unsigned char *)r->bytes + offset;
        for (uint64_t done = 0; done < bytes;) {
            ssize_t n = pread(stream_fd, to + done, bytes - done, (off_t)(offset + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return n < 0 ? -errno : malformed(r, "the stream file ends inside the chunk "
                                                  "at %llu", (unsigned long long)offset);
            done += (uint64_t)n;
        }
    }
    for (size_t i = 0; i < p->array_count; i++)
        atomic_store(&p->arrays[i]->streamed_chunks, 0);
    return 0;
}

void recording_system_from(struct rec_system *ret, const struct system_description *machine)
{
    memset(ret, 0, sizeof(*ret));
    snprintf(ret->os, sizeof(ret->os), "%s", machine->os);
    snprintf(ret->cpu, sizeof(ret->cpu), "%s", machine->cpu);
    snprintf(ret->ram_kib, sizeof(ret->ram_kib), "%s", machine->ram_kib);
    snprintf(ret->kernel, sizeof(ret->kernel), "%s", machine->kernel);
    snprintf(ret->scheduler, sizeof(ret->scheduler), "%s", machine->scheduler);
}

int recording_read_ended(void *bytes, size_t len, int stream_fd,
                         const struct system_description *machine, struct recording **ret,
                         char *why, size_t why_len)
{
    int e = stream_fd >= 0 ? recording_unstream(bytes, len, stream_fd, why, why_len) : 0;
    if (e == 0 && machine) {
        struct rec_system system;
        recording_system_from(&system, machine);
        e = recording_set_system(bytes, len, &system, why, why_len);
    }
    if (e == 0)
        e = recording_read(bytes, len, ret, why, why_len);
    return e;
}

int recording_unstream(void *bytes, size_t len, int stream_fd, char *why, size_t why_len)
{
    struct reader r = { .bytes = bytes, .len = len, .why = why, .why_len = why_len };
    if (why_len)
        why[0] = '\0';
    struct rec_header *h;
    int e = header_copy(&r, &h);
    if (e)
        return e;
    uint64_t used = atomic_load(&h->used);
    if (used < h->header_size || used > len)
        e = malformed(&r, "the recording claims %llu bytes but holds %zu",
                      (unsigned long long)used, len);
    else
        r.len = (size_t)used;
    struct unstream_plan plan = { 0 };
    r.entry = CLAIM_HEADER;
    if (!e)
        e = claim(&r, 0, h->header_size, 1, NULL, 0);
    for (uint32_t i = 0; !e && i < directory_entries(h); i++) {
        uint32_t type;
        void *object;
        if ((e = directory_claim(&r, h, i, &type, &object)) || !object)
            continue;
        if (type == REC_OBJ_FRAME_LOG)
            e = unstream_plan_array(&r, &((struct rec_frame_log *)object)->frames, &plan);
        else if (type == REC_OBJ_SPAN_LOG)
            e = unstream_plan_array(&r, &((struct rec_span_log *)object)->spans, &plan);
        else if (type == REC_OBJ_CAP)
            e = unstream_plan_array(&r, &((struct rec_cap *)object)->events, &plan);
        else if (type == REC_OBJ_GPU_ZONES) {
            e = unstream_plan_array(&r, &((struct rec_gpu_zones *)object)->spans, &plan);
            if (!e)
                e = unstream_plan_array(&r, &((struct rec_gpu_zones *)object)->stats, &plan);
        }
        else if (type == REC_OBJ_OBJECTS) {
            e = unstream_plan_array(&r, &((struct rec_objects *)object)->names, &plan);
            if (!e)
                e = unstream_plan_array(&r, &((struct rec_objects *)object)->pipelines, &plan);
        }
        else if (type == REC_OBJ_ENGINE) {
            struct rec_engine *g = object;
            struct chunked *arrays[] = { &g->recordings, &g->pool_ops, &g->memory, &g->budgets,
                                         &g->gauges };
            for (unsigned k = 0; !e && k < sizeof(arrays) / sizeof(arrays[0]); k++)
                e = unstream_plan_array(&r, arrays[k], &plan);
        }
        else if (type == REC_OBJ_KERNEL) {
            e = unstream_plan_array(&r, &((struct rec_kernel *)object)->samples, &plan);
            if (!e)
                e = unstream_plan_array(&r, &((struct rec_kernel *)object)->drm_samples, &plan);
            if (!e)
                e = unstream_plan_array(&r, &((struct rec_kernel *)object)->sched_events, &plan);
        }
    }
    /* Nothing is written into the recording before every chunk is known to be its own. */
    if (!e)
        e = claims_check(&r);
    if (!e)
        e = unstream_read(&r, &plan, stream_fd);
    free(plan.chunks);
    free(plan.arrays);
    reader_finish(&r);
    free(h);
    return e;
}

int recording_set_system(void *bytes, size_t len, const struct rec_system *sys, char *why,
                         size_t why_len)
{
    struct reader r = { .bytes = bytes, .len = len, .why = why, .why_len = why_len };
    if (why_len)
        why[0] = '\0';
    const struct rec_header *h = bytes;
    int e = check_header(&r, h);
    for (uint32_t i = 0; !e && i < directory_entries(h); i++) {
        uint32_t type;
        struct rec_meta *m;
        if ((e = directory_object(&r, h, i, &type, (void **)&m)) || type != REC_OBJ_META)
            continue;
        if (!atomic_load(&m->system_known)) {
            m->system = *sys;
            atomic_store(&m->system_known, 1);
        }
        break;
    }
    return e;
}
