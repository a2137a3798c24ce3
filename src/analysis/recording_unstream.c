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
#include "util/compact.h"
#include "util/system.h"

/* What recording_unstream brings back: every streamed chunk (in version 9 its place in the
 * arena is its place in the stream file; in version 10 a range of the file names it), and
 * the arrays whose streamed_chunks it then sets to 0. */
struct unstream_plan {
    struct { uint64_t offset, bytes; bool read; } *chunks;
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
            p->chunks[p->chunk_count].read = false;
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

/* Version 9: reads the planned chunks from the stream file, the arena's image, into bytes,
 * each whole or an error. */
static int unstream_read_image(struct reader *r, const struct unstream_plan *p, int stream_fd)
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
    return 0;
}

static int chunk_compare(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* All of len bytes at offset of fd: 0, 1 when the file ends first, or -errno. */
static int read_all(int fd, void *to, size_t len, uint64_t offset)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = pread(fd, (char *)to + done, len - done, (off_t)(offset + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : 1;
        done += (size_t)n;
    }
    return 0;
}

/* Version 10: walks the stream file's ranges (record/stream.c) from its start and decodes each
 * planned chunk's into bytes. A range for no planned chunk is passed over unread (its chunk
 * was written, then the app died before marking it streamed: the arena holds it); one for a
 * chunk read already, or of another size, is refused; the file may end inside a range the
 * plan does not need (the app died writing it). Every planned chunk must be found. What is
 * decoded is the planned chunks, each once: no more than the recording's size. */
static int unstream_read_ranges(struct reader *r, struct unstream_plan *p, int stream_fd)
{
    if (!p->chunk_count)
        return 0;
    /* offset first in each planned chunk: sorted by it for the lookups */
    qsort(p->chunks, p->chunk_count, sizeof(*p->chunks), chunk_compare);
    size_t found = 0;
    void *stored = NULL;
    size_t stored_capacity = 0;
    struct compact_coder *coder = compact_coder_create();
    int e = coder ? 0 : -ENOMEM;
    for (uint64_t at = 0; !e && found < p->chunk_count;) {
        struct rec_range range;
        int end = read_all(stream_fd, &range, sizeof(range), at);
        if (end) {
            e = end < 0 ? end : 0;
            break;
        }
        if (memcmp(range.magic, REC_RANGE_MAGIC, sizeof(range.magic)) != 0 ||
            range.raw_bytes > REC_RANGE_RAW_MAX ||
            range.stored_bytes > compact_bound((size_t)range.raw_bytes)) {
            e = reader_malformed(r, "the stream file holds no valid range at %llu",
                                 (unsigned long long)at);
            break;
        }
        uint64_t next = at + sizeof(range) + (range.stored_bytes + 7) / 8 * 8;
        size_t lo = 0, hi = p->chunk_count;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (p->chunks[mid].offset < range.offset)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == p->chunk_count || p->chunks[lo].offset != range.offset) {
            at = next;
            continue;
        }
        if (p->chunks[lo].read || p->chunks[lo].bytes != range.raw_bytes) {
            e = reader_malformed(r, "the stream file's range at %llu (%llu bytes for %llu) is "
                                 "not the chunk it names, or names it again",
                                 (unsigned long long)at, (unsigned long long)range.raw_bytes,
                                 (unsigned long long)range.offset);
            break;
        }
        if (range.stored_bytes > stored_capacity) {
            void *grown = realloc(stored, (size_t)range.stored_bytes);
            if (!grown) {
                e = -ENOMEM;
                break;
            }
            stored = grown;
            stored_capacity = (size_t)range.stored_bytes;
        }
        end = read_all(stream_fd, stored, (size_t)range.stored_bytes, at + sizeof(range));
        if (end) {
            e = end < 0 ? end : reader_malformed(r, "the stream file ends inside the range at %llu",
                                                 (unsigned long long)at);
            break;
        }
        e = compact_decode(coder, range.encoding, stored, (size_t)range.stored_bytes,
                           range.item_size, (unsigned char *)r->bytes + range.offset,
                           (size_t)range.raw_bytes);
        if (e == -EINVAL)
            e = reader_malformed(r, "the stream file's range at %llu (chunk at %llu, encoding "
                                 "%u) does not decode to its %llu bytes", (unsigned long long)at,
                                 (unsigned long long)range.offset, range.encoding,
                                 (unsigned long long)range.raw_bytes);
        p->chunks[lo].read = true;
        found++;
        at = next;
    }
    if (!e && found < p->chunk_count) {
        for (size_t i = 0; i < p->chunk_count; i++) {
            if (!p->chunks[i].read) {
                e = reader_malformed(r, "%zu streamed chunks are not in the stream file (the "
                                     "first at %llu)", p->chunk_count - found,
                                     (unsigned long long)p->chunks[i].offset);
                break;
            }
        }
    }
    free(stored);
    compact_coder_destroy(coder);
    return e;
}

static int unstream_read(struct reader *r, struct unstream_plan *p, int stream_fd,
                         uint32_t version)
{
    int e = version >= 10 ? unstream_read_ranges(r, p, stream_fd)
                          : unstream_read_image(r, p, stream_fd);
    for (size_t i = 0; !e && i < p->array_count; i++)
        atomic_store(&p->arrays[i]->streamed_chunks, 0);
    return e;
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
    struct reader r;
    struct rec_header *h;
    int e = reader_open(&r, bytes, len, why, why_len, &h);
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
        struct chunked *arrays[READER_ARRAYS_MAX];
        unsigned count = reader_object_arrays(type, object, arrays);
        for (unsigned k = 0; !e && k < count; k++)
            e = unstream_plan_array(&r, arrays[k], &plan);
    }
    /* Nothing is written into the recording before every chunk is known to be its own. */
    if (!e)
        e = reader_claims_check(&r);
    if (!e)
        e = unstream_read(&r, &plan, stream_fd, h->version);
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

