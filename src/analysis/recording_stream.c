/* The stream file an app streamed sealed chunks to (record/stream.c) as a source of those
 * chunks for the reader: its ranges indexed in one walk, each decoded at most once into the
 * items the reader copies out, and copied as they are into a capture's packed recording. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recording_check.h"
#include "util/compact.h"
#include "util/pio.h"

/* The stream file's ranges, by the arena offset each names (version 10), or the file as the
 * arena's image (version 9: a chunk lies at its own offset). Built by one walk of the file;
 * the walk stops at the first range that is not whole (the app died writing it) or not a
 * range: a chunk the recording needs from beyond there is missing, and said so. */
struct stream_range {
    uint64_t offset, raw_bytes; /* in the arena */
    uint64_t at, stored_bytes;  /* in the stream file: the header's place, what follows it */
    uint32_t encoding, item_size;
    bool used; /* decoded into a recording: each range is, once at most */
};

struct stream_source {
    int fd; /* ours (a duplicate), read with pread only */
    uint32_t version;
    struct stream_range *ranges; /* sorted by offset */
    size_t count, capacity;
    struct compact_coder *coder;
    void *stored; /* compact_bound(REC_RANGE_RAW_MAX) */
};

static int range_compare(const void *a, const void *b)
{
    const struct stream_range *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

void stream_source_free(struct stream_source *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    free(s->ranges);
    free(s->stored);
    compact_coder_destroy(s->coder);
    free(s);
}

/* Walks a version 10 stream file's ranges from its start. Two ranges naming one offset make
 * it malformed (the later one could be read for the earlier's chunk). */
static int stream_index(struct reader *r, struct stream_source *s, uint64_t start)
{
    struct stat st;
    if (fstat(s->fd, &st) != 0)
        return -errno;
    uint64_t size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : UINT64_MAX;
    for (uint64_t at = start; at < size;) {
        struct rec_range range;
        int end = fscope_pread_all(s->fd, &range, sizeof(range), at);
        if (end)
            return end < 0 ? end : 0;
        uint64_t padded = (range.stored_bytes + 7) / 8 * 8;
        if (memcmp(range.magic, REC_RANGE_MAGIC, sizeof(range.magic)) != 0 ||
            range.raw_bytes > REC_RANGE_RAW_MAX ||
            range.stored_bytes > compact_bound((size_t)range.raw_bytes) ||
            range.stored_bytes > size - at - sizeof(range))
            break; /* cut short where the app died, or not ours: what is needed is missing */
        if (s->count == s->capacity) {
            size_t want = s->capacity ? 2 * s->capacity : 64;
            void *grown = realloc(s->ranges, want * sizeof(*s->ranges));
            if (!grown)
                return -ENOMEM;
            s->ranges = grown;
            s->capacity = want;
        }
        s->ranges[s->count++] = (struct stream_range){
            .offset = range.offset, .raw_bytes = range.raw_bytes, .at = at,
            .stored_bytes = range.stored_bytes, .encoding = range.encoding,
            .item_size = range.item_size };
        at += sizeof(range) + padded;
    }
    if (s->count)
        qsort(s->ranges, s->count, sizeof(*s->ranges), range_compare);
    for (size_t i = 1; i < s->count; i++)
        if (s->ranges[i].offset == s->ranges[i - 1].offset)
            return reader_malformed(r, "the stream file holds two ranges for the chunk at %llu",
                                    (unsigned long long)s->ranges[i].offset);
    return 0;
}

int stream_source_open(struct reader *r, int fd, uint32_t version, uint64_t start,
                       struct stream_source **ret)
{
    *ret = NULL;
    struct stream_source *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->version = version;
    s->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    int e = s->fd < 0 ? -errno : 0;
    if (!e && version >= 10) {
        s->coder = compact_coder_create();
        s->stored = malloc(compact_bound(REC_RANGE_RAW_MAX) + 8); /* and a range's padding */
        e = s->coder && s->stored ? stream_index(r, s, start) : -ENOMEM;
    }
    if (e) {
        stream_source_free(s);
        return e;
    }
    *ret = s;
    return 0;
}

static struct stream_range *range_find(const struct stream_source *s, uint64_t offset)
{
    size_t lo = 0, hi = s->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->ranges[mid].offset < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->count && s->ranges[lo].offset == offset ? &s->ranges[lo] : NULL;
}

/* The range of the chunk at offset (bytes long), checked as the reader checks it and not
 * read before; NULL (r says why) otherwise. */
static struct stream_range *range_claim(struct reader *r, struct stream_source *s,
                                        uint64_t offset, uint64_t bytes)
{
    struct stream_range *range = range_find(s, offset);
    if (!range) {
        reader_malformed(r, "the streamed chunk at %llu is not in the stream file",
                         (unsigned long long)offset);
        return NULL;
    }
    /* A packed recording's range ends at its chunk's last byte that is not zero. */
    if (range->used || range->raw_bytes > bytes) {
        reader_malformed(r, "the stream file's range at %llu (%llu bytes for %llu) is not the "
                         "chunk it names, or names it again", (unsigned long long)range->at,
                         (unsigned long long)range->raw_bytes, (unsigned long long)offset);
        return NULL;
    }
    return range;
}

int stream_source_taken(struct reader *r, struct stream_source *s, uint64_t offset,
                        uint64_t bytes)
{
    if (s->version < 10)
        return reader_malformed(r, "a chunk read ahead from a stream file of version %u",
                                s->version);
    struct stream_range *range = range_claim(r, s, offset, bytes);
    if (!range)
        return -EINVAL;
    range->used = true;
    return 0;
}

int stream_source_chunk(struct reader *r, struct stream_source *s, uint64_t offset,
                        uint64_t bytes, void *to)
{
    if (s->version < 10) {
        /* The arena's image: never more than the file holds. */
        int end = fscope_pread_all(s->fd, to, (size_t)bytes, offset);
        return end < 0 ? end : end ? reader_malformed(r, "a streamed chunk (%llu bytes at %llu) "
                                                      "is beyond the stream file's end",
                                                      (unsigned long long)bytes,
                                                      (unsigned long long)offset)
                                   : 0;
    }
    struct stream_range *range = range_claim(r, s, offset, bytes);
    if (!range)
        return -EINVAL;
    int end = fscope_pread_all(s->fd, s->stored, (size_t)range->stored_bytes,
                       range->at + sizeof(struct rec_range));
    if (end)
        return end < 0 ? end : reader_malformed(r, "the stream file ends inside the range at %llu",
                                                (unsigned long long)range->at);
    int e = compact_decode(s->coder, range->encoding, s->stored, (size_t)range->stored_bytes,
                           range->item_size, to, (size_t)range->raw_bytes);
    memset((unsigned char *)to + range->raw_bytes, 0, (size_t)(bytes - range->raw_bytes));
    if (e == -EINVAL)
        return reader_malformed(r, "the stream file's range at %llu (chunk at %llu, encoding "
                                "%u) does not decode to its %llu bytes",
                                (unsigned long long)range->at, (unsigned long long)offset,
                                range->encoding, (unsigned long long)range->raw_bytes);
    range->used = e == 0;
    return e;
}

int stream_source_copy(struct stream_source *s, uint64_t offset, uint64_t bytes, FILE *f)
{
    struct stream_range *range = s && s->version >= 10 ? range_find(s, offset) : NULL;
    if (!range || !range->used || range->raw_bytes != bytes)
        return 0;
    uint64_t padded = (range->stored_bytes + 7) / 8 * 8;
    /* The header and the bytes as they are in the file, padding included. */
    unsigned char *at = s->stored;
    struct rec_range header;
    int end = fscope_pread_all(s->fd, &header, sizeof(header), range->at);
    if (!end)
        end = fscope_pread_all(s->fd, at, (size_t)range->stored_bytes, range->at + sizeof(header));
    if (end)
        return end < 0 ? end : -EIO;
    memset(at + range->stored_bytes, 0, (size_t)(padded - range->stored_bytes));
    if (fwrite(&header, sizeof(header), 1, f) != 1 || fwrite(at, 1, (size_t)padded, f) != padded)
        return -(errno ? errno : EIO);
    return 1;
}
