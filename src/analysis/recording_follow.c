/* framescope run's read-ahead of its command's recording: what the app's own exit gets from
 * its stream thread (recording_early.c), an observer gets by following the stream file from
 * its own thread, a pass every FOLLOW_PERIOD_MS. Each range the app's stream thread wrote is
 * matched to the next chunk of an array read ahead (by the arena offset its chunk table gives),
 * decoded from the file's own bytes, and handed to recording_early_take, which checks and keeps
 * it as it would in the app. The arena is another process's memory: every field is loaded once
 * and checked against the arena's used bytes before it is followed, and only the directory,
 * the arrays and their chunk tables are read (never a chunk's memory, which the app gives
 * back once streamed: reading it would bring it back). Anything that does not fit stops the
 * read-ahead of that array or of the whole file, and the exit reads the rest as without it. */
#include "recording.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "record/format.h"
#include "util/compact.h"
#include "util/pio.h"

/* How often the file is followed: the app's stream thread writes a batch a second, so this
 * keeps the read-ahead at most about a second behind it, a pass costing little when nothing
 * came. */
#define FOLLOW_PERIOD_MS 250

/* The arrays read ahead, by where they lie in their object (record/stream.c streams these). */
static const struct {
    uint32_t type;
    size_t field;
} follow_fields[] = {
    { REC_OBJ_FRAME_LOG, offsetof(struct rec_frame_log, frames) },
    { REC_OBJ_SPAN_LOG, offsetof(struct rec_span_log, spans) },
    { REC_OBJ_ENGINE, offsetof(struct rec_engine, recordings) },
    { REC_OBJ_ENGINE, offsetof(struct rec_engine, pool_ops) },
    { REC_OBJ_ENGINE, offsetof(struct rec_engine, memory) },
    { REC_OBJ_ENGINE, offsetof(struct rec_engine, budgets) },
    { REC_OBJ_ENGINE, offsetof(struct rec_engine, gauges) },
};

struct followed {
    uint32_t entry, type;
    size_t field;
    const struct chunked *live; /* in the arena, for recording_early_take */
    uint64_t next;              /* the chunk looked for next */
    uint64_t next_offset;       /* its arena offset, 0: not known yet */
    bool stopped;               /* its chunk size changed: the exit reads it */
};

struct recording_follow {
    const unsigned char *arena; /* mapped read-only, REC_ARENA_SIZE bytes */
    int stream_fd;              /* the observer's own, read with pread only */
    struct recording_early *early;
    struct compact_coder *coder;
    unsigned char *stored, *items; /* a range's bytes as stored, and decoded */
    struct followed *arrays;
    size_t count, capacity;
    uint32_t entries_seen;
    uint64_t file_at; /* the next range's place in the stream file */
    bool broken;      /* the file holds what is not a range: followed no further */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping, started;
};

/* Whether bytes at offset lie in the arena's used part, past its header, aligned as the
 * arena places everything (the reader refuses anything else, recording_check.c). */
static bool in_arena(uint64_t used, uint64_t offset, uint64_t bytes)
{
    return offset >= sizeof(struct rec_header) && offset % 8 == 0 && offset <= used &&
           bytes <= used - offset;
}

/* Adds the arrays of the directory's entries published since the last pass. */
static void follow_directory(struct recording_follow *f, uint64_t used)
{
    const struct rec_header *h = (const struct rec_header *)f->arena;
    uint32_t count = atomic_load_explicit(&h->dir_count, memory_order_acquire);
    uint32_t capacity = h->dir_capacity;
    if (count > capacity)
        count = capacity;
    if (count > REC_DIR_ENTRIES)
        count = REC_DIR_ENTRIES;
    for (; f->entries_seen < count; f->entries_seen++) {
        const struct rec_dir_entry *d = &h->dir[f->entries_seen];
        uint32_t type = atomic_load_explicit(&d->type, memory_order_acquire);
        if (type == 0)
            return; /* reserved, not yet published: looked at again next pass */
        uint64_t offset = d->offset;
        for (size_t k = 0; k < sizeof(follow_fields) / sizeof(follow_fields[0]); k++) {
            if (follow_fields[k].type != type ||
                !recording_early_wants(type, follow_fields[k].field) ||
                !in_arena(used, offset, follow_fields[k].field + sizeof(struct chunked)))
                continue;
            if (f->count == f->capacity) {
                size_t want = f->capacity ? 2 * f->capacity : 16;
                struct followed *grown = realloc(f->arrays, want * sizeof(*grown));
                if (!grown)
                    return;
                f->arrays = grown;
                f->capacity = want;
            }
            f->arrays[f->count++] = (struct followed){
                .entry = f->entries_seen, .type = type, .field = follow_fields[k].field,
                .live = (const struct chunked *)(f->arena + offset + follow_fields[k].field) };
        }
    }
}

/* The arena offset of a's next chunk, from its chunk table as it is now; 0 when it has none
 * yet or the table is not in the arena. */
static uint64_t next_offset(const struct recording_follow *f, const struct followed *a,
                            uint64_t used)
{
    uint64_t table = atomic_load_explicit(&a->live->table_offset, memory_order_acquire);
    uint64_t capacity = atomic_load_explicit(&a->live->table_capacity, memory_order_relaxed);
    if (!table || a->next >= capacity || a->next > (UINT64_MAX - table) / 8 - 1 ||
        !in_arena(used, table, 8 * (a->next + 1)))
        return 0;
    uint64_t offset;
    memcpy(&offset, f->arena + table + 8 * a->next, sizeof(offset));
    return offset;
}

/* The array whose next chunk lies at offset, or NULL. */
static struct followed *chunk_owner(struct recording_follow *f, uint64_t offset, uint64_t used)
{
    for (size_t i = 0; i < f->count; i++) {
        struct followed *a = &f->arrays[i];
        if (a->stopped)
            continue;
        if (!a->next_offset)
            a->next_offset = next_offset(f, a, used);
        if (a->next_offset == offset)
            return a;
    }
    return NULL;
}

/* Decodes one range (its header at f->file_at) into a's next chunk and hands it over. */
static void follow_chunk(struct recording_follow *f, struct followed *a,
                         const struct rec_range *range)
{
    /* The array's shape, loaded once: recording_early_take checks it against the chunk. */
    struct chunked shape = { .item_size = a->live->item_size,
                             .chunk_items = a->live->chunk_items };
    uint64_t bytes = (uint64_t)shape.item_size * shape.chunk_items;
    if (!bytes || bytes != range->raw_bytes ||
        fscope_pread_all(f->stream_fd, f->stored, (size_t)range->stored_bytes,
                         f->file_at + sizeof(*range)) != 0 ||
        compact_decode(f->coder, range->encoding, f->stored, (size_t)range->stored_bytes,
                       range->item_size, f->items, (size_t)bytes) != 0) {
        a->stopped = true;
        return;
    }
    recording_early_take(f->early, a->entry, a->type, a->field, &shape, a->live, a->next,
                         f->items);
    a->next++;
    a->next_offset = 0;
}

/* One pass: the ranges the app's stream thread finished writing since the last; the last
 * pass (final) goes to the end whatever, the others stop when asked. */
static void follow_pass(struct recording_follow *f, bool final)
{
    const struct rec_header *h = (const struct rec_header *)f->arena;
    uint64_t used = atomic_load_explicit(&h->used, memory_order_acquire);
    if (used > REC_ARENA_SIZE)
        return;
    /* Loaded before the arrays: every range before it was written before its chunk was
     * marked streamed. */
    uint64_t written = atomic_load_explicit(&h->streamed_stored_bytes, memory_order_acquire);
    follow_directory(f, used);
    while (!f->broken && f->file_at < written && written - f->file_at >= sizeof(struct rec_range)) {
        if (!final) {
            pthread_mutex_lock(&f->lock);
            bool stopping = f->stopping;
            pthread_mutex_unlock(&f->lock);
            if (stopping)
                return;
        }
        struct rec_range range;
        uint64_t padded;
        if (fscope_pread_all(f->stream_fd, &range, sizeof(range), f->file_at) != 0 ||
            memcmp(range.magic, REC_RANGE_MAGIC, sizeof(range.magic)) != 0 ||
            range.raw_bytes > REC_RANGE_RAW_MAX ||
            range.stored_bytes > compact_bound((size_t)range.raw_bytes) ||
            (padded = (range.stored_bytes + 7) / 8 * 8) >
                written - f->file_at - sizeof(range)) {
            f->broken = true;
            return;
        }
        struct followed *a = chunk_owner(f, range.offset, used);
        if (a)
            follow_chunk(f, a, &range);
        f->file_at += sizeof(range) + padded;
    }
}

static void *follow_thread(void *arg)
{
    struct recording_follow *f = arg;
    pthread_mutex_lock(&f->lock);
    while (!f->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += FOLLOW_PERIOD_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&f->wake, &f->lock, &until);
        if (f->stopping)
            break;
        pthread_mutex_unlock(&f->lock);
        follow_pass(f, false);
        pthread_mutex_lock(&f->lock);
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

struct recording_follow *recording_follow_start(int arena_fd, int stream_fd,
                                                struct recording_early *early)
{
    if (arena_fd < 0 || stream_fd < 0 || !early)
        return NULL;
    struct recording_follow *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->stream_fd = stream_fd;
    f->early = early;
    f->arena = mmap(NULL, REC_ARENA_SIZE, PROT_READ, MAP_SHARED, arena_fd, 0);
    f->coder = compact_coder_create();
    f->stored = malloc(compact_bound(REC_RANGE_RAW_MAX) + 8);
    f->items = malloc(REC_RANGE_RAW_MAX);
    pthread_condattr_t attr;
    bool ready = f->arena != MAP_FAILED && f->coder && f->stored && f->items &&
                 pthread_condattr_init(&attr) == 0;
    if (ready) {
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&f->wake, &attr);
        pthread_condattr_destroy(&attr);
        pthread_mutex_init(&f->lock, NULL);
        /* Every signal blocked: framescope run's handlers pass them on from its own thread. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        f->started = pthread_create(&f->thread, NULL, follow_thread, f) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (!f->started) {
            pthread_cond_destroy(&f->wake);
            pthread_mutex_destroy(&f->lock);
        }
    }
    if (!f->started) {
        if (f->arena == MAP_FAILED)
            f->arena = NULL;
        recording_follow_free(f);
        return NULL;
    }
    return f;
}

static void follow_stop(struct recording_follow *f)
{
    if (!f->started)
        return;
    pthread_mutex_lock(&f->lock);
    f->stopping = true;
    pthread_cond_signal(&f->wake);
    pthread_mutex_unlock(&f->lock);
    pthread_join(f->thread, NULL);
    pthread_cond_destroy(&f->wake);
    pthread_mutex_destroy(&f->lock);
    f->started = false;
}

void recording_follow_finish(struct recording_follow *f)
{
    if (!f || !f->started)
        return;
    follow_stop(f);
    follow_pass(f, true);
}

void recording_follow_free(struct recording_follow *f)
{
    if (!f)
        return;
    follow_stop(f);
    if (f->arena)
        munmap((void *)f->arena, REC_ARENA_SIZE);
    compact_coder_destroy(f->coder);
    free(f->stored);
    free(f->items);
    free(f->arrays);
    free(f);
}
