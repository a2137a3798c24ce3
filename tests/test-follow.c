/* framescope run's read-ahead (src/analysis/recording_follow.c), on an arena and a stream file
 * laid out here as an app's stream thread leaves them: a frame log whose first chunks were
 * streamed. Whole, every chunk is read ahead and adopted, frame for frame. Damaged (a chunk out
 * of order, a range that is not one, a payload that does not decode, an array's shape or chunk
 * table changed, and thousands of random bytes changed anywhere the follower reads), it takes
 * only whole chunks in order, never past the damage, and never reads outside what it was
 * given (run under AddressSanitizer in CI). */
#include <inttypes.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analysis/frames.h"
#include "analysis/recording.h"
#include "check.h"
#include "record/format.h"
#include "util/compact.h"

#define CHUNK 16
#define CHUNKS 6 /* streamed */
#define CHUNK_BYTES (CHUNK * sizeof(struct fscope_frame))
/* Where things lie in the arena: the header, then the log, its chunk table, its chunks. */
#define LOG_AT (((sizeof(struct rec_header) + 4095) / 4096) * 4096)
#define TABLE_AT (LOG_AT + ((sizeof(struct rec_frame_log) + 4095) / 4096) * 4096)
#define TABLE_CAPACITY 16
#define CHUNKS_AT (TABLE_AT + 4096)
#define ARENA_USED (CHUNKS_AT + (CHUNKS + 1) * CHUNK_BYTES)
#define MAPPED (((ARENA_USED + 4095) / 4096) * 4096)

/* Chunk k: frames k * CHUNK on, each 100 ticks long. */
static void chunk_make(struct fscope_frame *frames, uint64_t k)
{
    memset(frames, 0, CHUNK * sizeof(*frames));
    for (uint64_t i = 0; i < CHUNK; i++) {
        struct fscope_frame *f = &frames[i];
        f->index = k * CHUNK + i;
        f->start_ticks = 1000 + f->index * 100;
        f->end_ticks = f->start_ticks + 100;
        f->block_ticks[0] = f->index % 7;
        f->present_state = 1;
    }
}

struct setup {
    int arena_fd, stream_fd;
    unsigned char *arena; /* MAPPED bytes, writable */
    struct rec_frame_log *log;
    uint64_t range_at[CHUNKS + 1]; /* each range's place in the stream file, and its end */
};

/* The arena and the stream file as the app's stream thread leaves them after streaming
 * CHUNKS chunks, the ranges in the order given. */
static void setup_make(struct setup *s, const int order[CHUNKS])
{
    s->arena_fd = memfd_create("follow-arena", MFD_CLOEXEC);
    s->stream_fd = memfd_create("follow-stream", MFD_CLOEXEC);
    CHECK(s->arena_fd >= 0 && s->stream_fd >= 0);
    CHECK(ftruncate(s->arena_fd, (off_t)REC_ARENA_SIZE) == 0);
    s->arena = mmap(NULL, MAPPED, PROT_READ | PROT_WRITE, MAP_SHARED, s->arena_fd, 0);
    CHECK(s->arena != MAP_FAILED);
    struct rec_header *h = (struct rec_header *)s->arena;
    rec_header_init(h, REC_ARENA_SIZE);
    s->log = (struct rec_frame_log *)(s->arena + LOG_AT);
    struct chunked *frames = &s->log->frames;
    frames->item_size = sizeof(struct fscope_frame);
    frames->chunk_items = CHUNK;
    atomic_store(&frames->count, (CHUNKS + 1) * CHUNK);
    atomic_store(&frames->table_offset, TABLE_AT);
    atomic_store(&frames->table_capacity, TABLE_CAPACITY);
    atomic_store(&frames->streamed_chunks, CHUNKS);
    uint64_t *table = (uint64_t *)(s->arena + TABLE_AT);
    for (uint64_t k = 0; k <= CHUNKS; k++)
        table[k] = CHUNKS_AT + k * CHUNK_BYTES;
    h->dir[0].offset = LOG_AT;
    h->dir[0].size = sizeof(struct rec_frame_log);
    atomic_store(&h->dir[0].type, REC_OBJ_FRAME_LOG);
    atomic_store(&h->dir_count, 1);
    atomic_store(&h->used, ARENA_USED);

    struct compact_coder *coder = compact_coder_create();
    size_t bound = compact_bound(CHUNK_BYTES);
    unsigned char *stored = malloc(sizeof(struct rec_range) + bound + 8);
    CHECK(coder && stored);
    uint64_t at = 0;
    for (int i = 0; i < CHUNKS; i++) {
        struct fscope_frame items[CHUNK];
        chunk_make(items, (uint64_t)order[i]);
        uint32_t encoding;
        ssize_t n = compact_encode(coder, items, CHUNK_BYTES, sizeof(items[0]),
                                   stored + sizeof(struct rec_range), bound, &encoding);
        CHECK(n > 0);
        struct rec_range range = { .encoding = encoding, .offset = table[order[i]],
                                   .raw_bytes = CHUNK_BYTES, .stored_bytes = (uint64_t)n,
                                   .item_size = sizeof(items[0]) };
        memcpy(range.magic, REC_RANGE_MAGIC, sizeof(range.magic));
        memcpy(stored, &range, sizeof(range));
        size_t padded = ((size_t)n + 7) / 8 * 8;
        memset(stored + sizeof(range) + n, 0, padded - (size_t)n);
        CHECK(pwrite(s->stream_fd, stored, sizeof(range) + padded, (off_t)at) ==
              (ssize_t)(sizeof(range) + padded));
        s->range_at[i] = at;
        at += sizeof(range) + padded;
    }
    s->range_at[CHUNKS] = at;
    atomic_store(&h->streamed_stored_bytes, at);
    free(stored);
    compact_coder_destroy(coder);
}

static void setup_free(struct setup *s)
{
    munmap(s->arena, MAPPED);
    close(s->arena_fd);
    close(s->stream_fd);
}

/* Follows the setup to its end, then adopts as the exit's reader would; returns the chunks
 * adopted, each checked frame for frame where exact (random damage may change what a range
 * decodes to, as it would for the exit's reader, and is checked for whole chunks only). */
static uint64_t follow(struct setup *s, const char *what, bool exact)
{
    struct recording_early *early = recording_early_create();
    CHECK(early);
    struct recording_follow *f = recording_follow_start(s->arena_fd, s->stream_fd, early);
    CHECK(f);
    recording_follow_finish(f);
    struct recording_early_counts counts;
    recording_early_counts(early, &counts);
    EXPECT(counts.frames_taken % CHUNK == 0 && counts.frames_taken <= CHUNKS * CHUNK,
           "%s: %" PRIu64 " frames taken", what, counts.frames_taken);
    const struct chunked shape = { .item_size = sizeof(struct fscope_frame),
                                   .chunk_items = CHUNK };
    struct recording_log log;
    memset(&log, 0, sizeof(log));
    uint64_t adopted = recording_early_adopt_frames(early, 0, &shape, CHUNKS, &log);
    EXPECT(adopted * CHUNK == counts.frames_taken, "%s: %" PRIu64 " chunks adopted of %" PRIu64
           " frames taken", what, adopted, counts.frames_taken);
    struct frame_cursor c;
    if (exact && adopted && frame_cursor_open(&c, NULL, &log)) {
        uint64_t wrong = 0;
        for (uint64_t k = 0; k < adopted; k++) {
            struct fscope_frame frames[CHUNK];
            chunk_make(frames, k);
            for (uint64_t i = 0; i < CHUNK; i++)
                wrong += memcmp(frame_at(&c, k * CHUNK + i), &frames[i], sizeof(frames[i])) != 0;
        }
        frame_cursor_close(&c);
        EXPECT(!wrong, "%s: %" PRIu64 " frames adopted are not the ones streamed", what, wrong);
    } else if (exact && adopted) {
        EXPECT(false, "%s: no cursor on the adopted frames", what);
    }
    frame_store_free(&log);
    recording_follow_free(f);
    recording_early_destroy(early);
    return adopted;
}

static const int in_order[CHUNKS] = { 0, 1, 2, 3, 4, 5 };

static void check_whole_and_damaged(void)
{
    struct setup s;
    setup_make(&s, in_order);
    EXPECT(follow(&s, "whole", true) == CHUNKS, "whole: not every chunk adopted");
    setup_free(&s);

    /* Chunk 2 after 3: 0 to 2 in order, then 3 was passed over and is never seen again. */
    const int swapped[CHUNKS] = { 0, 1, 3, 2, 4, 5 };
    setup_make(&s, swapped);
    EXPECT(follow(&s, "out of order", true) == 3, "out of order: not chunks 0 to 2");
    setup_free(&s);

    /* The third range is not one: the file is followed no further. */
    setup_make(&s, in_order);
    CHECK(pwrite(s.stream_fd, "XXXX", 4, (off_t)s.range_at[2]) == 4);
    EXPECT(follow(&s, "bad magic", true) == 2, "bad magic: not chunks 0 and 1");
    setup_free(&s);

    /* The fourth's payload does not decode: that array stops there. */
    setup_make(&s, in_order);
    CHECK(pwrite(s.stream_fd, "garbage!", 8, (off_t)(s.range_at[3] + sizeof(struct rec_range))) ==
          8);
    EXPECT(follow(&s, "bad payload", true) == 3, "bad payload: not chunks 0 to 2");
    setup_free(&s);

    /* A range longer than the file holds. */
    setup_make(&s, in_order);
    struct rec_range range;
    CHECK(pread(s.stream_fd, &range, sizeof(range), (off_t)s.range_at[1]) == sizeof(range));
    range.stored_bytes = compact_bound(CHUNK_BYTES);
    CHECK(pwrite(s.stream_fd, &range, sizeof(range), (off_t)s.range_at[1]) == sizeof(range));
    EXPECT(follow(&s, "long range", true) == 1, "long range: not chunk 0 only");
    setup_free(&s);

    /* The array's shape changed: a chunk of it is no longer the range's size. */
    setup_make(&s, in_order);
    s.log->frames.chunk_items = 1u << 30;
    EXPECT(follow(&s, "huge chunks", true) == 0, "huge chunks: adopted");
    setup_free(&s);

    /* The chunk table outside the arena, and the object outside it. */
    setup_make(&s, in_order);
    atomic_store(&s.log->frames.table_offset, ARENA_USED - 8);
    EXPECT(follow(&s, "table outside", true) == 0, "table outside: adopted");
    setup_free(&s);
    setup_make(&s, in_order);
    ((struct rec_header *)s.arena)->dir[0].offset = ARENA_USED;
    EXPECT(follow(&s, "object outside", true) == 0, "object outside: adopted");
    setup_free(&s);

    /* Only what the file holds by streamed_stored_bytes: the last range not yet whole. */
    setup_make(&s, in_order);
    atomic_store(&((struct rec_header *)s.arena)->streamed_stored_bytes, s.range_at[CHUNKS] - 8);
    EXPECT(follow(&s, "last range unfinished", true) == CHUNKS - 1, "last range unfinished: taken");
    setup_free(&s);
}

/* xorshift64*: the same damage on every run. */
static uint64_t next_random(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 2685821657736338717ull;
}

/* Random bytes changed in what the follower reads: the header's directory and counts, the
 * log's array, its table, the stream file. follow() checks what was adopted is whole chunks
 * in order, each frame as streamed, or nothing. */
static void check_random_damage(void)
{
    uint64_t state = 0x853c49e6748fea9bull;
    const unsigned rounds = 2000;
    for (unsigned round = 0; round < rounds; round++) {
        struct setup s;
        setup_make(&s, in_order);
        struct rec_header *h = (struct rec_header *)s.arena;
        for (int n = 0; n < 1 + (int)(round % 4); n++) {
            uint64_t r = next_random(&state);
            unsigned char byte = (unsigned char)(r >> 56);
            switch (r % 5) {
            case 0:
                ((unsigned char *)&h->dir[0])[r / 5 % sizeof(h->dir[0])] = byte;
                break;
            case 1:
                ((unsigned char *)&h->used)[r / 5 % 8] = byte;
                break;
            case 2:
                ((unsigned char *)&s.log->frames)[r / 5 % sizeof(s.log->frames)] = byte;
                break;
            case 3:
                s.arena[TABLE_AT + r / 5 % (8 * (CHUNKS + 1))] = byte;
                break;
            default:
                CHECK(pwrite(s.stream_fd, &byte, 1, (off_t)(r / 5 % s.range_at[CHUNKS])) == 1);
            }
        }
        char what[32];
        snprintf(what, sizeof(what), "damage round %u", round);
        follow(&s, what, false);
        setup_free(&s);
    }
}

int main(void)
{
    check_whole_and_damaged();
    check_random_damage();
    if (check_failures)
        fprintf(stderr, "%d failure(s)\n", check_failures);
    else
        printf("streamed chunks followed and adopted whole; damaged, only whole chunks in "
               "order before the damage\n");
    return check_failures ? 1 : 0;
}
