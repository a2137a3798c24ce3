/* The recording reader's checks: every range it reads claimed once, inside the bytes and
 * aligned, the header and the directory validated. Shared by the reader (recording.c) and by
 * reading an ended recording whose chunks were streamed (recording_ended.c, recording_stream.c). */
#include "recording_check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int reader_malformed(struct reader *r, const char *fmt, ...)
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
bool reader_inside(const struct reader *r, uint64_t offset, uint64_t size)
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
int reader_claims_check(struct reader *r)
{
    if (r->claim_count < 2)
        return 0;
    qsort(r->claims, r->claim_count, sizeof(*r->claims), claim_compare);
    for (size_t i = 1; i < r->claim_count; i++) {
        const struct claim *a = &r->claims[i - 1], *b = &r->claims[i];
        if (b->offset >= a->end)
            continue;
        char first[96], second[96];
        return reader_malformed(r, "%s (bytes %llu-%llu) overlaps %s (bytes %llu-%llu)",
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
int reader_claim(struct reader *r, uint64_t offset, uint64_t size, uint64_t align,
                 const char *part, uint64_t index)
{
    struct claim c = { offset, offset + size, r->entry, r->type, part, index };
    char what[96];
    if (size == 0 || !reader_inside(r, offset, size))
        return reader_malformed(r, "%s (%llu bytes at %llu) is outside the recording's %zu bytes",
                         claim_describe(&c, what, sizeof(what)), (unsigned long long)size,
                         (unsigned long long)offset, r->len);
    if (offset % align)
        return reader_malformed(r, "%s at %llu is not aligned to %llu bytes",
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
        int e = reader_claims_check(r);
        return e ? e : reader_malformed(r, "the recording's objects add up to more than its %zu bytes",
                                 r->len);
    }
    r->claimed_bytes += size;
    return 0;
}

void reader_finish(struct reader *r)
{
    free(r->claims);
    r->claims = NULL;
    r->claim_count = r->claim_capacity = 0;
}

const uint64_t reader_object_sizes[REC_OBJ_TYPE_COUNT] = {
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
int reader_check_header(struct reader *r, const struct rec_header *h)
{
    if (r->len < sizeof(*h) || memcmp(h->magic, REC_MAGIC, 8) != 0)
        return reader_malformed(r, "not a framescope recording");
    if (h->version < REC_VERSION_OLDEST || h->version > REC_VERSION ||
        h->header_size != sizeof(*h))
        return reader_malformed(r, "a recording of format %u; this framescope reads formats %u "
                                "to %u", h->version, REC_VERSION_OLDEST, REC_VERSION);
    return 0;
}

unsigned reader_object_arrays(uint32_t type, void *object, struct chunked *ret[READER_ARRAYS_MAX])
{
    unsigned n = 0;
    if (type == REC_OBJ_FRAME_LOG) {
        ret[n++] = &((struct rec_frame_log *)object)->frames;
    } else if (type == REC_OBJ_SPAN_LOG) {
        ret[n++] = &((struct rec_span_log *)object)->spans;
    } else if (type == REC_OBJ_CAP) {
        ret[n++] = &((struct rec_cap *)object)->events;
    } else if (type == REC_OBJ_GPU_ZONES) {
        ret[n++] = &((struct rec_gpu_zones *)object)->spans;
        ret[n++] = &((struct rec_gpu_zones *)object)->stats;
    } else if (type == REC_OBJ_OBJECTS) {
        ret[n++] = &((struct rec_objects *)object)->names;
        ret[n++] = &((struct rec_objects *)object)->pipelines;
    } else if (type == REC_OBJ_KERNEL) {
        ret[n++] = &((struct rec_kernel *)object)->samples;
        ret[n++] = &((struct rec_kernel *)object)->drm_samples;
        ret[n++] = &((struct rec_kernel *)object)->sched_events;
    } else if (type == REC_OBJ_ENGINE) {
        struct rec_engine *g = object;
        ret[n++] = &g->recordings;
        ret[n++] = &g->pool_ops;
        ret[n++] = &g->memory;
        ret[n++] = &g->budgets;
        ret[n++] = &g->gauges;
    }
    return n;
}

int reader_open(struct reader *r, const void *bytes, size_t len, char *why, size_t why_len,
                struct rec_header **ret)
{
    *r = (struct reader){ .bytes = bytes, .len = len, .why = why, .why_len = why_len };
    if (why_len)
        why[0] = '\0';
    return reader_header_copy(r, ret);
}

/* The header, copied once (another process may be writing it) and checked. */
int reader_header_copy(struct reader *r, struct rec_header **ret)
{
    *ret = NULL;
    /* The arena is mapped (page-aligned); its 8-byte fields are loaded atomically. */
    if ((uintptr_t)r->bytes % 8)
        return reader_malformed(r, "the recording is not aligned in memory");
    if (r->len < sizeof(**ret))
        return reader_malformed(r, "not a framescope recording");
    struct rec_header *h = malloc(sizeof(*h));
    if (!h)
        return -ENOMEM;
    memcpy(h, r->bytes, sizeof(*h));
    int e = reader_check_header(r, h);
    if (e) {
        free(h);
        return e;
    }
    *ret = h;
    return 0;
}

/* The directory's entries, within its capacity. */
uint32_t reader_directory_entries(const struct rec_header *h)
{
    uint32_t entries = atomic_load(&h->dir_count);
    return entries < REC_DIR_ENTRIES ? entries : REC_DIR_ENTRIES;
}

/* Entry i's object in the arena and its type: 0 with *ret_object NULL for an entry a writer
 * reserved and never published, -EINVAL for one that is not a valid object of its type. */
int reader_directory_object(struct reader *r, const struct rec_header *h, uint32_t i,
                            uint32_t *ret_type, void **ret_object)
{
    uint32_t type = atomic_load_explicit(&h->dir[i].type, memory_order_acquire);
    uint64_t offset = h->dir[i].offset, size = h->dir[i].size;
    *ret_type = type;
    *ret_object = NULL;
    if (type == REC_OBJ_NONE)
        return 0;
    if (type >= REC_OBJ_TYPE_COUNT || size != reader_object_sizes[type] || offset < h->header_size ||
        offset % 8 || !reader_inside(r, offset, size))
        return reader_malformed(r, "directory entry %u (type %u, %llu bytes at %llu) is not a valid "
                         "object", i, type, (unsigned long long)size, (unsigned long long)offset);
    *ret_object = (void *)(r->bytes + offset);
    return 0;
}

/* The same, with the object's bytes claimed for entry i (and what is claimed next, its chunks,
 * tree and ring, named after it). */
int reader_directory_claim(struct reader *r, const struct rec_header *h, uint32_t i,
                           uint32_t *ret_type, void **ret_object)
{
    int e = reader_directory_object(r, h, i, ret_type, ret_object);
    if (e || !*ret_object)
        return e;
    r->entry = i;
    r->type = *ret_type;
    return reader_claim(r, h->dir[i].offset, h->dir[i].size, 8, NULL, 0);
}

/* A writer's counters loaded in the order it publishes them (a count before the table of
 * chunks that holds its items, the table's capacity before its offset), into a copy. */
void reader_chunked_load(struct chunked *dst, const struct chunked *live)
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
