#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef FSCOPE_HAVE_LIBURING
#include <liburing.h>
#endif

#include "recording.h"
#include "worker.h"
#include "util/compact.h"
#include "util/log.h"
#include "util/pio.h"
#include "util/private_fd.h"

/* Chunks per batch: their ranges go to the stream file in one write, then their memory is
 * given back in one io_uring submission. */
#define STREAM_BATCH 32
/* The batch's ranges, back to back. 32 of the demo's frame chunks take about 300 KiB encoded;
 * a batch is written early when the next chunk's bound would not fit. */
#define STREAM_STAGING (2u << 20)
/* How often the thread looks for sealed chunks: a frame chunk fills in ~10 s at 60 fps. */
#define STREAM_PERIOD_MS 1000

_Static_assert((int)REC_ENCODING_RAW == (int)COMPACT_RAW &&
               (int)REC_ENCODING_ZSTD == (int)COMPACT_ZSTD &&
               (int)REC_ENCODING_ITEMS == (int)COMPACT_ITEMS, "the encodings are util's");
_Static_assert(sizeof(struct rec_range) % 8 == 0, "ranges follow each other at multiples of 8");

static pthread_once_t start_once = PTHREAD_ONCE_INIT;

struct pending {
    struct chunked *array;
    uint64_t chunk, offset, bytes;
};

#ifdef FSCOPE_HAVE_LIBURING
/* Punches n chunks' holes in one submission and waits for all of them. Returns 0 or the
 * first -errno. */
static int uring_punch(struct io_uring *ring, const struct pending *p, unsigned n, int arena_fd)
{
    for (unsigned i = 0; i < n; i++) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
        io_uring_prep_fallocate(sqe, arena_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                (off_t)p[i].offset, (off_t)p[i].bytes);
    }
    int e = io_uring_submit_and_wait(ring, n);
    if (e < 0)
        return e;
    int first = 0;
    for (unsigned i = 0; i < n; i++) {
        struct io_uring_cqe *cqe;
        if ((e = io_uring_wait_cqe(ring, &cqe)) < 0)
            return e;
        if (!first && cqe->res < 0)
            first = cqe->res;
        io_uring_cqe_seen(ring, cqe);
    }
    return first;
}
#endif

static int plain_punch(const struct pending *p, unsigned n, int arena_fd)
{
    for (unsigned i = 0; i < n; i++)
        if (fallocate(arena_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)p[i].offset,
                      (off_t)p[i].bytes) != 0)
            return -errno;
    return 0;
}

struct streamer {
    int stream_fd, arena_fd;
#ifdef FSCOPE_HAVE_LIBURING
    struct io_uring ring;
    bool have_ring, ring_tried;
#endif
    bool failed;
    uint64_t prefault_done, prefault_used; /* recording_prefault's */
    struct compact_coder *coder;
    unsigned char *staging; /* the batch's ranges, encoded */
    size_t staged;
    struct pending batch[STREAM_BATCH];
    unsigned batched;
    uint64_t file_end; /* where the next range goes in the stream file */
    unsigned char *raw; /* an observed chunk's copy: what is encoded is what is observed */
    size_t raw_len;
    /* What it did, said at exit (FRAMESCOPE_LOG=debug). */
    uint64_t chunks, frames, raw_bytes, stored_bytes, encode_ns;
};

static int punch(struct streamer *s, const struct pending *p, unsigned n)
{
#ifdef FSCOPE_HAVE_LIBURING
    if (s->have_ring)
        return uring_punch(&s->ring, p, n, s->arena_fd);
#endif
    return plain_punch(p, n, s->arena_fd);
}

static void stream_failed(struct streamer *s, int e)
{
    /* The recording still holds everything: it only stops shrinking. */
    s->failed = true;
    fscope_log(FSCOPE_LOG_WARN, "cannot stream the recording to disk (%s): it stays in memory "
               "from here on", strerror(-e));
}

/* Writes the batch's ranges, marks their chunks streamed, then gives their memory back: in
 * that order, so a reader after a kill at any point finds each chunk in the file or in
 * memory (a range written for a chunk never marked is one the reader passes over). */
static void flush(struct streamer *s)
{
    unsigned n = s->batched;
    s->batched = 0;
    size_t staged = s->staged;
    s->staged = 0;
    if (!n || s->failed)
        return;
    if (!recording_fds_ours()) {
        /* The app closed them (as programs that close every fd they did not open do), and
         * its own files may have their numbers now: never write or punch through them. */
        s->failed = true;
        fscope_log(FSCOPE_LOG_WARN, "the app closed the recording's descriptors: it stays in "
                   "memory from here on, and nothing is written through them");
        return;
    }
    int e = fscope_pwrite_all(s->stream_fd, s->staging, staged, s->file_end);
    if (e == 0) {
        s->file_end += staged;
        struct rec_header *h = recording_header();
        const struct pending *p = s->batch;
        for (unsigned i = 0; i < n; i++) {
            atomic_store_explicit(&p[i].array->streamed_chunks, p[i].chunk + 1,
                                  memory_order_release);
            atomic_fetch_add_explicit(&h->streamed_bytes, p[i].bytes, memory_order_relaxed);
        }
        atomic_fetch_add_explicit(&h->streamed_stored_bytes, staged, memory_order_relaxed);
        e = punch(s, p, n);
    }
    if (e != 0)
        stream_failed(s, e);
}

static struct stream_observer observer;

void stream_observe(const struct stream_observer *o)
{
    observer = *o;
}

/* Where the observer is told of chunks of a, what it is told of them. */
struct observed {
    uint32_t entry, type;
    const void *object;
};

static uint64_t thread_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A copy of an observed chunk's items in s->raw, encoded and observed both: the app may still
 * write a sealed chunk (late feedback), and the observer must see the stream file's bytes. */
static const void *observed_copy(struct streamer *s, uint64_t offset, size_t bytes)
{
    if (bytes > s->raw_len) {
        free(s->raw);
        s->raw_len = 0;
        if (!(s->raw = malloc(bytes)))
            return NULL;
        s->raw_len = bytes;
    }
    memcpy(s->raw, recording_at(offset), bytes);
    return s->raw;
}

/* Encodes one sealed chunk into the batch, writing the batch out first when it is full, and
 * tells the observer of it where observed (NULL: it does not want it). */
static void stage(struct streamer *s, struct chunked *a, uint64_t chunk, uint64_t offset,
                  const struct observed *observed)
{
    size_t bytes = (size_t)a->chunk_items * a->item_size;
    size_t room = sizeof(struct rec_range) + compact_bound(bytes) + 8;
    if (s->batched == STREAM_BATCH || STREAM_STAGING - s->staged < room)
        flush(s);
    if (s->failed)
        return;
    unsigned char *at = s->staging + s->staged;
    uint32_t encoding;
    uint64_t began = thread_cpu_ns();
    const void *items = recording_at(offset);
    if (observed && !(items = observed_copy(s, offset, bytes))) {
        stream_failed(s, -ENOMEM);
        return;
    }
    ssize_t stored = compact_encode(s->coder, items, bytes, a->item_size,
                                    at + sizeof(struct rec_range), compact_bound(bytes), &encoding);
    s->encode_ns += thread_cpu_ns() - began;
    if (stored < 0) {
        stream_failed(s, (int)stored);
        return;
    }
    /* Before the batch is written: a batch that fails later leaves the observer ahead of what
     * the array marks streamed, which it checks. */
    if (observed)
        observer.take(observer.ctx, observed->entry, observed->type, observed->object, a, chunk,
                      items);
    struct rec_range range = { .encoding = encoding, .offset = offset, .raw_bytes = bytes,
                               .stored_bytes = (uint64_t)stored,
                               .item_size = encoding == COMPACT_ITEMS ? a->item_size : 0 };
    memcpy(range.magic, REC_RANGE_MAGIC, sizeof(range.magic));
    memcpy(at, &range, sizeof(range));
    size_t padded = ((size_t)stored + 7) / 8 * 8;
    memset(at + sizeof(range) + stored, 0, padded - (size_t)stored);
    s->staged += sizeof(range) + padded;
    s->batch[s->batched++] = (struct pending){ a, chunk, offset, bytes };
    s->chunks++;
    s->raw_bytes += bytes;
    s->stored_bytes += sizeof(range) + padded;
}

/* Stages the sealed chunks of one array. A frame log's chunk waits for the next to fill
 * (presentation feedback lands in its frames meanwhile). */
static void stream_array(struct streamer *s, struct chunked *a, bool frames,
                         const struct observed *object)
{
    const struct observed *observed =
        observer.wants && observer.wants(observer.ctx, object->type, object->object, a)
            ? object : NULL;
    uint64_t lag_chunks = frames ? 1 : 0, chunks = s->chunks;
    uint64_t count = atomic_load_explicit(&a->count, memory_order_acquire);
    uint64_t sealed = count / a->chunk_items;
    sealed = sealed > lag_chunks ? sealed - lag_chunks : 0;
    uint64_t from = atomic_load_explicit(&a->streamed_chunks, memory_order_relaxed);
    const uint64_t *table = recording_at(atomic_load_explicit(&a->table_offset,
                                                              memory_order_acquire));
    for (uint64_t c = from; c < sealed && !s->failed; c++)
        stage(s, a, c, table[c], observed);
    if (frames)
        s->frames += (s->chunks - chunks) * a->chunk_items;
}

static void stream_pass(struct streamer *s)
{
    struct rec_header *h = recording_header();
    uint32_t entries = atomic_load(&h->dir_count);
    for (uint32_t i = 0; i < entries && i < h->dir_capacity && !s->failed; i++) {
        uint32_t type = atomic_load_explicit(&h->dir[i].type, memory_order_acquire);
        void *object = recording_at(h->dir[i].offset);
        const struct observed at = { i, type, object };
        if (type == REC_OBJ_FRAME_LOG)
            stream_array(s, &((struct rec_frame_log *)object)->frames, true, &at);
        else if (type == REC_OBJ_SPAN_LOG)
            stream_array(s, &((struct rec_span_log *)object)->spans, false, &at);
        else if (type == REC_OBJ_CAP)
            stream_array(s, &((struct rec_cap *)object)->events, false, &at);
        else if (type == REC_OBJ_GPU_ZONES) {
            stream_array(s, &((struct rec_gpu_zones *)object)->spans, false, &at);
            stream_array(s, &((struct rec_gpu_zones *)object)->stats, false, &at);
        }
        else if (type == REC_OBJ_OBJECTS) {
            stream_array(s, &((struct rec_objects *)object)->names, false, &at);
            stream_array(s, &((struct rec_objects *)object)->pipelines, false, &at);
        }
        else if (type == REC_OBJ_KERNEL) {
            stream_array(s, &((struct rec_kernel *)object)->samples, false, &at);
            stream_array(s, &((struct rec_kernel *)object)->drm_samples, false, &at);
            stream_array(s, &((struct rec_kernel *)object)->sched_events, false, &at);
        }
        else if (type == REC_OBJ_ENGINE) {
            struct rec_engine *e = object;
            stream_array(s, &e->recordings, false, &at);
            stream_array(s, &e->pool_ops, false, &at);
            stream_array(s, &e->memory, false, &at);
            stream_array(s, &e->budgets, false, &at);
            stream_array(s, &e->gauges, false, &at);
        }
    }
    flush(s);
}

/* The stream thread's tick: the ring is made on its first one, on that thread. */
static void stream_tick(void *arg, bool final)
{
    struct streamer *s = arg;
#ifdef FSCOPE_HAVE_LIBURING
    if (!s->ring_tried) {
        s->ring_tried = true;
        s->have_ring = io_uring_queue_init(STREAM_BATCH, &s->ring, 0) == 0;
        if (s->have_ring) {
            /* Out of the app's range and held (a forked child lets go of it); its mappings
             * are made, so only io_uring_enter and the exit use the number. */
            s->ring.ring_fd = s->ring.enter_ring_fd = fscope_fd_high(s->ring.ring_fd);
        }
        if (!s->have_ring)
            fscope_log(FSCOPE_LOG_INFO, "io_uring unavailable: the streamed chunks' memory is "
                       "given back one fallocate at a time");
    }
    if (final && s->have_ring) {
        fscope_fd_forget(s->ring.ring_fd); /* io_uring_queue_exit closes it */
        io_uring_queue_exit(&s->ring);
    }
#endif
    if (!s->coder && !s->failed) {
        s->coder = compact_coder_create();
        s->staging = malloc(STREAM_STAGING);
        if (!s->coder || !s->staging)
            stream_failed(s, -ENOMEM);
    }
    /* At exit what is still in memory stays there: whoever analyses reads it in place. */
    if (!final) {
        recording_prefault(&s->prefault_done, &s->prefault_used);
        stream_pass(s);
        return;
    }
    fscope_log(FSCOPE_LOG_DEBUG, "the stream thread moved %llu chunks (%llu frames), %llu KiB "
               "stored in %llu KiB; %.1f ms of its CPU time, %.1f ms of it encoding",
               (unsigned long long)s->chunks, (unsigned long long)s->frames,
               (unsigned long long)s->raw_bytes / 1024,
               (unsigned long long)s->stored_bytes / 1024, thread_cpu_ns() / 1e6,
               s->encode_ns / 1e6);
    compact_coder_destroy(s->coder);
    free(s->staging);
    free(s->raw);
    s->coder = NULL;
    s->staging = NULL;
    s->raw = NULL;
    s->raw_len = 0;
}

static struct streamer streamer;
static struct worker worker = WORKER_INIT;

static void start(void)
{
    if (recording_stream_fd() < 0 || recording_fd() < 0)
        return;
    streamer.stream_fd = recording_stream_fd();
    streamer.arena_fd = recording_fd();
    if (!worker_start(&worker, "fscope-stream", STREAM_PERIOD_MS, stream_tick, &streamer))
        fscope_log(FSCOPE_LOG_WARN, "cannot start the recording's stream thread: the recording "
                   "stays in memory");
}

void stream_kick(void)
{
    pthread_once(&start_once, start);
}

void stream_stop(void)
{
    worker_stop(&worker);
}
