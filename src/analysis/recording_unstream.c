/* A recording whose app streamed sealed chunks to a file (record/stream.c) made whole again,
 * and the machine's description written into an ended recording: the steps between a run's
 * end and its analysis, over the reader's checks. */
#include "recording.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recording_check.h"
#include "util/system.h"

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
    reader_chunked_load(&a, live);
    uint64_t streamed = atomic_load(&a.streamed_chunks);
    if (!streamed)
        return 0;
    uint64_t capacity = atomic_load(&a.table_capacity);
    uint64_t table_offset = atomic_load(&a.table_offset);
    if (a.item_size == 0 || a.chunk_items == 0 || a.chunk_items > r->len / a.item_size ||
        streamed > capacity || capacity > r->len / sizeof(uint64_t))
        return reader_malformed(r, "a streamed array of %llu chunks of %u items of %u bytes, and a "
                         "chunk table of %llu", (unsigned long long)streamed, a.chunk_items,
                         a.item_size, (unsigned long long)capacity);
    uint64_t chunk_bytes = (uint64_t)a.chunk_items * a.item_size;
    int e = reader_claim(r, table_offset, capacity * sizeof(uint64_t), REC_ALIGN, "chunk table", 0);
    for (uint64_t c = 0; !e && c < streamed; c++) {
        uint64_t offset;
        memcpy(&offset, r->bytes + table_offset + c * sizeof(uint64_t), sizeof(offset));
        e = reader_claim(r, offset, chunk_bytes, REC_ALIGN, "chunk", c);
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
            return reader_malformed(r, "a streamed chunk (%llu bytes at %llu) is beyond the stream "
                             "file's %lld bytes", (unsigned long long)bytes,
                             (unsigned long long)offset, (long long)st.st_size);
        unsigned char *to = (unsigned char *)r->bytes + offset;
        for (uint64_t done = 0; done < bytes;) {
            ssize_t n = pread(stream_fd, to + done, bytes - done, (off_t)(offset + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return n < 0 ? -errno : reader_malformed(r, "the stream file ends inside the chunk "
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
    int e = reader_header_copy(&r, &h);
    if (e)
        return e;
    uint64_t used = atomic_load(&h->used);
    if (used < h->header_size || used > len)
        e = reader_malformed(&r, "the recording claims %llu bytes but holds %zu",
                      (unsigned long long)used, len);
    else
        r.len = (size_t)used;
    struct unstream_plan plan = { 0 };
    r.entry = CLAIM_HEADER;
    if (!e)
        e = reader_claim(&r, 0, h->header_size, 1, NULL, 0);
    for (uint32_t i = 0; !e && i < reader_directory_entries(h); i++) {
        uint32_t type;
        void *object;
        if ((e = reader_directory_claim(&r, h, i, &type, &object)) || !object)
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
        e = reader_claims_check(&r);
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
    int e = reader_check_header(&r, h);
    for (uint32_t i = 0; !e && i < reader_directory_entries(h); i++) {
        uint32_t type;
        struct rec_meta *m;
        if ((e = reader_directory_object(&r, h, i, &type, (void **)&m)) || type != REC_OBJ_META)
            continue;
        if (!atomic_load(&m->system_known)) {
            m->system = *sys;
            atomic_store(&m->system_known, 1);
        }
        break;
    }
    return e;
}

