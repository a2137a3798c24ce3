/* The recording reader's checks (recording_check.c), private to the reader's files: a read
 * claims every range it copies, so that no two objects share a byte and nothing outside the
 * recording is read. Not for outputs: they read a struct recording. */
#ifndef FSCOPE_RECORDING_CHECK_H
#define FSCOPE_RECORDING_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <string.h>

#include "recording.h"
#include "util/text.h"

/* Every string a recording holds was written by the app (thread, zone, label and device
 * names): it is made printable here, once, so that no output (summary, journal, report,
 * trace) carries a terminal escape or a forged line. */
static inline void copy_string(char *dst, size_t dst_len, const char *src, size_t src_len)
{
    fscope_text_printable(dst, dst_len, src, src_len);
}

/* The same, for a string copied in place with the struct that holds it. */
static inline void make_printable(char *s, size_t len)
{
    char raw[256];
    if (len > sizeof(raw))
        len = sizeof(raw);
    memcpy(raw, s, len);
    copy_string(s, len, raw, len);
}

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
    uint64_t pass_stats_capacity;
    /* Where chunks the app streamed are read from (NULL: nowhere; they are left out, as of a
     * running app's recording read for a trace). */
    struct stream_source *stream;
    /* The bytes are a private image of ours: each chunk's pages are given back once copied
     * out, so that reading holds the recording once, not twice. */
    bool release_chunks;
    /* Frame chunks the app's exit packed as they were streamed (NULL: none). */
    struct recording_early *early;
};

/* rec's description of the run (meta: devices, notes, outputs, the system), each string
 * made printable (recording_meta.c). */
void recording_meta_read(struct recording *rec, const struct rec_meta *m);

/* An item's check as the reader makes it: 0, or -EINVAL with r's why set. */
typedef int (*reader_item_check)(struct reader *r, const void *item);
/* Where the reader keeps the array at field (its offset in an object of type type) in a sorter
 * (the engine's command buffer recordings, pool calls, budgets and gauges, each in one of its
 * own; every span log's GPU spans in one they share, *ret_shared): that sorter as the reader
 * makes it ready, and each item's check (NULL: none). False for every other array (and
 * without memory). */
bool reader_sorted_array(uint32_t type, size_t field, struct sorter *ret_sorter,
                         reader_item_check *ret_check, bool *ret_shared);

/* The engine's items, checked as the reader takes them: 0, or -EINVAL with r's why set. */
int reader_span_check(struct reader *r, const void *item);
int reader_cmd_recording_check(struct reader *r, const void *item);
int reader_pool_op_check(struct reader *r, const void *item);
int reader_budget_check(struct reader *r, const void *item);

/* n frames of a surface (label) from items (its chunk of chunk_items, the first of them frame
 * first), copied to frames, analysis's fields cleared, checked (r says why not), and appended
 * to log's store. Returns 0, -EINVAL or -ENOMEM. */
int reader_frames_take(struct reader *r, struct recording_log *log, const char *label,
                       struct fscope_frame *frames, const void *items, uint64_t first,
                       uint64_t n, uint32_t chunk_items);

/* Sets r's why and returns -EINVAL. */
int reader_malformed(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether [offset, offset + size) lies inside the bytes. */
bool reader_inside(const struct reader *r, uint64_t offset, uint64_t size);
/* Sorts the claims and refuses the first two that share a byte. */
int reader_claims_check(struct reader *r);
/* Claims [offset, offset + size) for part (NULL: the current entry's object itself) of the
 * current directory entry: inside, aligned to align, and no byte read for anything else. */
int reader_claim(struct reader *r, uint64_t offset, uint64_t size, uint64_t align,
                 const char *part, uint64_t index);
void reader_finish(struct reader *r);
/* Each object type's size in the arena. */
extern const uint64_t reader_object_sizes[REC_OBJ_TYPE_COUNT];
/* A header of this format, or an error naming what it is instead. */
int reader_check_header(struct reader *r, const struct rec_header *h);
/* The header, copied once (another process may be writing it) and checked; *ret malloc'd. */
int reader_header_copy(struct reader *r, struct rec_header **ret);
/* A reader of bytes (why emptied first, where there is room) and its header, copied and
 * checked as reader_header_copy does. */
int reader_open(struct reader *r, const void *bytes, size_t len, char *why, size_t why_len,
                struct rec_header **ret);
/* The directory's entries, within its capacity. */
uint32_t reader_directory_entries(const struct rec_header *h);
/* Entry i's object in the arena and its type (NULL: reserved, never published). */
int reader_directory_object(struct reader *r, const struct rec_header *h, uint32_t i,
                            uint32_t *ret_type, void **ret_object);
/* The same, with the object's bytes claimed for entry i. */
int reader_directory_claim(struct reader *r, const struct rec_header *h, uint32_t i,
                           uint32_t *ret_type, void **ret_object);
/* The chunked arrays of an object of type (enum rec_object_type) at object, into ret: how
 * many (0 for a type that has none). */
#define READER_ARRAYS_MAX 8
unsigned reader_object_arrays(uint32_t type, void *object, struct chunked *ret[READER_ARRAYS_MAX]);
/* A writer's counters loaded in the order it publishes them, into a copy. */
void reader_chunked_load(struct chunked *dst, const struct chunked *live);

/* The stream file fd (duplicated; version: the recording's) as a source of streamed chunks:
 * its ranges found in one walk from start (recording_stream.c; a packed recording's ranges
 * follow its header, a stream file's start at 0). Returns 0 and *ret, or -EINVAL (r's why
 * says what) or -errno. */
int stream_source_open(struct reader *r, int fd, uint32_t version, uint64_t start,
                       struct stream_source **ret);
void stream_source_free(struct stream_source *s);
/* Decodes the streamed chunk at offset (bytes long) into to: from the range that names it,
 * whole, each range once. Returns 0, -EINVAL (why says what) or -errno. */
int stream_source_chunk(struct reader *r, struct stream_source *s, uint64_t offset,
                        uint64_t bytes, void *to);
/* Marks the streamed chunk at offset (bytes long) read, as stream_source_chunk would, its
 * items having been taken ahead from the same bytes (recording_early.c): its range must be
 * there, unread. Returns 0 or -EINVAL (why says what). */
int stream_source_taken(struct reader *r, struct stream_source *s, uint64_t offset,
                        uint64_t bytes);
/* Writes the range a recording read for the chunk at offset (bytes long) to f as the stream
 * file holds it (a packed recording's range is the same): 1, 0 when no chunk was read from
 * there, or -errno. */
int stream_source_copy(struct stream_source *s, uint64_t offset, uint64_t bytes, FILE *f);

#endif
