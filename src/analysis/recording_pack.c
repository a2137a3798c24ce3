/* A recording packed for a capture (record/format.h, REC_LAYOUT_PACKED) and unpacked again:
 * the arena's header, then every range of it that is not all zeros, compact (util/compact.h).
 * The chunks of its arrays and the threads' flight-recorder rings are stored as items (a
 * frame record less the one before, word by word), the rest as bytes. */
#include "recording.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "recording_check.h"
#include "util/compact.h"

_Static_assert((int)REC_ENCODING_RAW == (int)COMPACT_RAW &&
               (int)REC_ENCODING_ZSTD == (int)COMPACT_ZSTD &&
               (int)REC_ENCODING_ITEMS == (int)COMPACT_ITEMS, "the encodings are util's");

/* The longest arena a packed recording may unpack to: its file's length times
 * PACK_EXPANSION_MAX, plus PACK_EXPANSION_FLOOR. The arena's length bounds what reading it
 * copies and analyses, so a file of a few KiB must not claim GiB. Measured ratios of arena to
 * file: 30 for 100,000 frames of the demo, 200 for 20 frames (the header and fixed tables,
 * mostly zeros, 32 KiB packed); each idle thread adds its ring (1 MiB of arena) and a few
 * hundred bytes of file. */
#define PACK_EXPANSION_MAX 4096u
#define PACK_EXPANSION_FLOOR (64ull << 20)
/* Bytes that are not items are packed in runs between the pages of this size that are all
 * zeros (the arena's pages never written). */
#define PACK_PAGE 4096u

struct item_range {
    uint64_t offset, bytes;
    uint32_t item_size;
};

struct packer {
    FILE *f;
    const unsigned char *bytes;
    uint64_t used;
    struct compact_coder *coder;
    unsigned char *stored; /* compact_bound(REC_RANGE_RAW_MAX) */
    struct item_range *items;
    size_t item_count, item_capacity;
};

static int items_add(struct packer *p, uint64_t offset, uint64_t bytes, uint32_t item_size)
{
    if (p->item_count == p->item_capacity) {
        size_t want = p->item_capacity ? 2 * p->item_capacity : 64;
        void *grown = realloc(p->items, want * sizeof(*p->items));
        if (!grown)
            return -ENOMEM;
        p->items = grown;
        p->item_capacity = want;
    }
    p->items[p->item_count++] = (struct item_range){ offset, bytes, item_size };
    return 0;
}

static bool inside(const struct packer *p, uint64_t offset, uint64_t bytes, uint64_t header_size)
{
    return offset >= header_size && offset % 8 == 0 && offset <= p->used &&
           bytes <= p->used - offset;
}

/* An array's chunks, where they are what they claim to be (else they are packed as bytes). */
static int items_of_array(struct packer *p, const struct chunked *live, uint64_t header_size)
{
    struct chunked a;
    memcpy(&a, live, sizeof(a));
    reader_chunked_load(&a, live);
    uint64_t chunk_bytes = (uint64_t)a.chunk_items * a.item_size;
    uint64_t table = atomic_load(&a.table_offset), capacity = atomic_load(&a.table_capacity);
    if (!chunk_bytes || chunk_bytes > REC_RANGE_RAW_MAX || a.item_size % 8 || !table ||
        capacity > p->used / 8 || !inside(p, table, capacity * 8, header_size))
        return 0;
    int e = 0;
    for (uint64_t c = 0; !e && c < capacity; c++) {
        uint64_t offset;
        memcpy(&offset, p->bytes + table + c * 8, sizeof(offset));
        if (offset && inside(p, offset, chunk_bytes, header_size))
            e = items_add(p, offset, chunk_bytes, a.item_size);
    }
    return e;
}

static int items_of_thread(struct packer *p, const struct rec_thread *live, uint64_t header_size)
{
    struct rec_thread t;
    memcpy(&t, live, sizeof(t));
    uint64_t item = sizeof(struct fscope_event);
    if (t.ring_mask >= p->used / item)
        return 0;
    uint64_t bytes = (t.ring_mask + 1) * item;
    if (!inside(p, t.ring_offset, bytes, header_size))
        return 0;
    int e = 0;
    for (uint64_t at = 0; !e && at < bytes; at += REC_RANGE_RAW_MAX)
        e = items_add(p, t.ring_offset + at, bytes - at < REC_RANGE_RAW_MAX ? bytes - at
                                                                           : REC_RANGE_RAW_MAX,
                      (uint32_t)item);
    return e;
}

static int item_compare(const void *a, const void *b)
{
    const struct item_range *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Every range of items the directory names, sorted, none overlapping another (a range that
 * would is left to be packed as bytes). */
static int items_find(struct packer *p, const struct rec_header *h)
{
    struct reader r = { .bytes = p->bytes, .len = (size_t)p->used };
    int e = 0;
    for (uint32_t i = 0; !e && i < reader_directory_entries(h); i++) {
        uint32_t type;
        void *object;
        if (reader_directory_object(&r, h, i, &type, &object) || !object)
            continue;
        struct chunked *arrays[READER_ARRAYS_MAX];
        unsigned count = reader_object_arrays(type, object, arrays);
        for (unsigned k = 0; !e && k < count; k++)
            e = items_of_array(p, arrays[k], h->header_size);
        if (!e && type == REC_OBJ_THREAD)
            e = items_of_thread(p, object, h->header_size);
    }
    if (e || !p->item_count)
        return e;
    qsort(p->items, p->item_count, sizeof(*p->items), item_compare);
    size_t kept = 0;
    uint64_t end = 0;
    for (size_t i = 0; i < p->item_count; i++) {
        if (p->items[i].offset < end)
            continue;
        p->items[kept++] = p->items[i];
        end = p->items[i].offset + p->items[i].bytes;
    }
    p->item_count = kept;
    return 0;
}

static int write_bytes(FILE *f, const void *bytes, size_t len)
{
    return fwrite(bytes, 1, len, f) == len ? 0 : -(errno ? errno : EIO);
}

/* One range, encoded, with its header and padding. */
static int range_write(struct packer *p, uint64_t offset, uint64_t bytes, uint32_t item_size)
{
    uint32_t encoding;
    ssize_t stored = compact_encode(p->coder, p->bytes + offset, (size_t)bytes, item_size,
                                    p->stored, compact_bound(REC_RANGE_RAW_MAX), &encoding);
    if (stored < 0)
        return (int)stored;
    struct rec_range range = { .encoding = encoding, .offset = offset, .raw_bytes = bytes,
                               .stored_bytes = (uint64_t)stored,
                               .item_size = encoding == COMPACT_ITEMS ? item_size : 0 };
    memcpy(range.magic, REC_RANGE_MAGIC, sizeof(range.magic));
    static const unsigned char zeros[8];
    size_t pad = (8 - (size_t)stored % 8) % 8;
    int e = write_bytes(p->f, &range, sizeof(range));
    if (!e)
        e = write_bytes(p->f, p->stored, (size_t)stored);
    if (!e)
        e = write_bytes(p->f, zeros, pad);
    return e;
}

static bool page_zero(const unsigned char *at, size_t len)
{
    static const unsigned char zeros[PACK_PAGE];
    return memcmp(at, zeros, len) == 0;
}

/* [from, to) as bytes: the runs of it between pages of zeros, at most REC_RANGE_RAW_MAX each. */
static int bytes_write(struct packer *p, uint64_t from, uint64_t to)
{
    uint64_t run = from, page_end;
    int e = 0;
    for (uint64_t at = from; !e && at < to; at = page_end) {
        page_end = (at / PACK_PAGE + 1) * PACK_PAGE;
        page_end = page_end < to ? page_end : to;
        if (page_zero(p->bytes + at, (size_t)(page_end - at))) {
            if (run < at)
                e = range_write(p, run, at - run, 0);
            run = page_end;
        } else if (page_end - run > REC_RANGE_RAW_MAX) {
            e = range_write(p, run, at - run, 0);
            run = at;
        }
    }
    if (!e && run < to)
        e = range_write(p, run, to - run, 0);
    return e;
}

/* An array's chunk or a ring without its trailing items of zeros (the part not yet written:
 * most of a run's last chunks and of an idle thread's ring). */
static uint64_t items_trimmed(const struct packer *p, const struct item_range *r)
{
    if (r->item_size > PACK_PAGE)
        return r->bytes;
    uint64_t n = r->bytes / r->item_size;
    while (n && page_zero(p->bytes + r->offset + (n - 1) * r->item_size, r->item_size))
        n--;
    return n * r->item_size;
}

int recording_pack_write(FILE *f, const void *bytes, size_t len, const struct recording *rec)
{
    struct packer p = { .f = f, .bytes = bytes };
    struct reader r = { .bytes = bytes, .len = len };
    struct rec_header *h;
    int e = reader_header_copy(&r, &h);
    if (e)
        return e;
    p.used = atomic_load(&h->used) < len ? atomic_load(&h->used) : len;
    if (p.used < h->header_size || h->header_size % 8) {
        free(h);
        return -EINVAL;
    }
    p.coder = compact_coder_create();
    p.stored = malloc(compact_bound(REC_RANGE_RAW_MAX));
    e = p.coder && p.stored ? items_find(&p, h) : -ENOMEM;
    if (!e) {
        /* A version 9 arena is laid out as version 10's: packed, it is version 10. */
        h->version = REC_VERSION;
        h->layout = REC_LAYOUT_PACKED;
        atomic_store(&h->used, p.used);
        e = write_bytes(f, h, h->header_size);
    }
    uint64_t at = h->header_size;
    for (size_t i = 0; !e && i < p.item_count; i++) {
        const struct item_range *item = &p.items[i];
        e = bytes_write(&p, at, item->offset);
        /* A chunk read from the stream file is copied from there: the arena holds nothing
         * of it (its pages were given back when it was streamed). */
        int copied = e ? 0 : stream_source_copy(rec ? rec->stream : NULL, item->offset,
                                                item->bytes, f);
        if (copied < 0)
            e = copied;
        uint64_t kept = e || copied ? 0 : items_trimmed(&p, item);
        if (!e && kept)
            e = range_write(&p, item->offset, kept, item->item_size);
        at = item->offset + item->bytes;
    }
    if (!e)
        e = bytes_write(&p, at, p.used);
    free(p.items);
    free(p.stored);
    compact_coder_destroy(p.coder);
    free(h);
    return e;
}

/* A packed recording holds every chunk of its arrays, those its app had streamed copied from
 * the stream file (recording_pack_write): none is left to read from elsewhere, but with
 * defer_arrays every array's, which stay in the packed file (all their chunks said streamed:
 * the reader bounds the count by the array's). */
static void unpacked_whole(void *image, size_t len, bool defer_arrays)
{
    struct reader r = { .bytes = image, .len = len };
    const struct rec_header *h = image;
    for (uint32_t i = 0; i < reader_directory_entries(h); i++) {
        uint32_t type;
        void *object;
        if (reader_directory_object(&r, h, i, &type, &object) || !object)
            continue;
        struct chunked *arrays[READER_ARRAYS_MAX];
        unsigned count = reader_object_arrays(type, object, arrays);
        for (unsigned k = 0; k < count; k++)
            atomic_store(&arrays[k]->streamed_chunks, defer_arrays ? UINT64_MAX : 0);
    }
}

int recording_unpack(const void *file, size_t file_len, bool defer_arrays, void **ret_bytes,
                     size_t *ret_len, char *why, size_t why_len)
{
    struct reader r;
    struct rec_header *h;
    int e = reader_open(&r, file, file_len, why, why_len, &h);
    if (e)
        return e;
    uint64_t used = atomic_load(&h->used);
    uint64_t most = (uint64_t)file_len * PACK_EXPANSION_MAX + PACK_EXPANSION_FLOOR;
    if (h->layout != REC_LAYOUT_PACKED || h->version < 10)
        e = reader_malformed(&r, "a recording of format %u laid out as %u, not packed",
                             h->version, h->layout);
    else if (used < h->header_size || used > REC_ARENA_SIZE || used > most)
        e = reader_malformed(&r, "the packed recording claims an arena of %llu bytes, and its "
                             "file holds %zu", (unsigned long long)used, file_len);
    void *image = MAP_FAILED;
    if (!e) {
        image = mmap(NULL, (size_t)used, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (image == MAP_FAILED)
            e = -ENOMEM;
    }
    struct compact_coder *coder = NULL;
    if (!e) {
        h->layout = REC_LAYOUT_ARENA;
        memcpy(image, h, h->header_size);
        coder = compact_coder_create();
        e = coder ? 0 : -ENOMEM;
    }
    const unsigned char *bytes = file;
    uint64_t end = h->header_size; /* of the ranges so far: the next starts there or after */
    for (uint64_t at = h->header_size; !e && at < file_len;) {
        struct rec_range range;
        if (file_len - at < sizeof(range)) {
            e = reader_malformed(&r, "the packed recording is cut inside the range at %llu",
                                 (unsigned long long)at);
            break;
        }
        memcpy(&range, bytes + at, sizeof(range));
        at += sizeof(range);
        bool valid = memcmp(range.magic, REC_RANGE_MAGIC, sizeof(range.magic)) == 0;
        if (valid && range.stored_bytes > file_len - at) {
            e = reader_malformed(&r, "the packed recording is cut inside the range at %llu "
                                 "(%llu bytes stored, %llu left)",
                                 (unsigned long long)(at - sizeof(range)),
                                 (unsigned long long)range.stored_bytes,
                                 (unsigned long long)(file_len - at));
            break;
        }
        if (!valid || !range.raw_bytes || range.raw_bytes > REC_RANGE_RAW_MAX ||
            range.offset < end || range.offset > used || range.raw_bytes > used - range.offset ||
            range.stored_bytes > file_len - at) {
            e = reader_malformed(&r, "the packed recording holds no valid range at %llu (%llu "
                                 "bytes at %llu of %llu, %llu of them stored)",
                                 (unsigned long long)(at - sizeof(range)),
                                 (unsigned long long)range.raw_bytes,
                                 (unsigned long long)range.offset, (unsigned long long)used,
                                 (unsigned long long)range.stored_bytes);
            break;
        }
        /* An array's chunk left in the file is checked where the reader decodes it. Ranges of
         * items are arrays' chunks or threads' rings (recording_pack_write): those of a ring's
         * item size are decoded, whichever they are. */
        bool deferred = defer_arrays && range.encoding == REC_ENCODING_ITEMS &&
                        range.item_size != sizeof(struct fscope_event);
        if (!deferred)
            e = compact_decode(coder, range.encoding, bytes + at, (size_t)range.stored_bytes,
                               range.item_size, (unsigned char *)image + range.offset,
                               (size_t)range.raw_bytes);
        if (e == -EINVAL)
            e = reader_malformed(&r, "the packed recording's range at %llu (encoding %u) does "
                                 "not decode to its %llu bytes",
                                 (unsigned long long)(at - sizeof(range)), range.encoding,
                                 (unsigned long long)range.raw_bytes);
        end = range.offset + range.raw_bytes;
        at += (range.stored_bytes + 7) / 8 * 8;
    }
    compact_coder_destroy(coder);
    if (e && image != MAP_FAILED)
        munmap(image, (size_t)used);
    if (!e)
        unpacked_whole(image, (size_t)used, defer_arrays);
    if (!e) {
        *ret_bytes = image;
        *ret_len = (size_t)used;
    }
    free(h);
    return e;
}
