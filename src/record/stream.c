#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#ifdef FSCOPE_HAVE_LIBURING
#include <liburing.h>
#endif

#include "recording.h"
#include "worker.h"
#include "util/log.h"
#include "util/private_fd.h"

/* Chunks written (and then holes punched) per io_uring submission. */
#define STREAM_BATCH 32
/* How often the thread looks for sealed chunks: a frame chunk fills in ~10 s at 60 fps. */
#define STREAM_PERIOD_MS 1000

static pthread_once_t start_once = PTHREAD_ONCE_INIT;

struct pending {
    struct chunked *array;
    uint64_t chunk, offset, bytes;
};

#ifdef FSCOPE_HAVE_LIBURING
/* Runs n operations of one kind (writes, then hole punches) in one submission and waits for
 * all of them. Returns 0 or the first -errno. */
static int uring_batch(struct io_uring *ring, const struct pending *p, unsigned n, bool punch,
                       int stream_fd, int arena_fd)
{
    for (unsigned i = 0; i < n; i++) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
        if (punch)
            io_uring_prep_fallocate(sqe, arena_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                    (off_t)p[i].offset, (off_t)p[i].bytes);
        else
            io_uring_prep_write(sqe, stream_fd, recording_at(p[i].offset),
                                (unsigned)p[i].bytes, p[i].offset);
    }
    int e = io_uring_submit_and_wait(ring, n);
    if (e < 0)
        return e;
    int first = 0;
    for (unsigned i = 0; i < n; i++) {
        struct io_uring_cqe *cqe;
        if ((e = io_uring_wait_cqe(ring, &cqe)) < 0)
            return e;
        /* A short write of a regular file is the disk filling up. */
        if (!first && (cqe->res < 0 || (!punch && (uint64_t)cqe->res != p[i].bytes)))
            first = cqe->res < 0 ? cqe->res : -ENOSPC;
        io_uring_cqe_seen(ring, cqe);
    }
    return first;
}
#endif

static int plain_batch(const struct pending *p, unsigned n, bool punch, int stream_fd,
                       int arena_fd)
{
    for (unsigned i = 0; i < n; i++) {
        if (punch) {
            if (fallocate(arena_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                          (off_t)p[i].offset, (off_t)p[i].bytes) != 0)
                return -errno;
        } else {
            ssize_t w = pwrite(stream_fd, recording_at(p[i].offset), p[i].bytes,
                               (off_t)p[i].offset);
            if (w != (ssize_t)p[i].bytes)
                return w < 0 ? -errno : -ENOSPC;
        }
    }
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
};

static int batch(struct streamer *s, const struct pending *p, unsigned n, bool punch)
{
#ifdef FSCOPE_HAVE_LIBURING
    if (s->have_ring)
        return uring_batch(&s->ring, p, n, punch, s->stream_fd, s->arena_fd);
#endif
    return plain_batch(p, n, punch, s->stream_fd, s->arena_fd);
}

/* Writes a batch of sealed chunks, marks them streamed, then gives their memory back: in that
 * order, so a reader after a kill at any point finds each chunk in the file or in memory. */
static void flush(struct streamer *s, struct pending *p, unsigned n)
{
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
    int e = batch(s, p, n, false);
    if (e == 0) {
        struct rec_header *h = recording_header();
        for (unsigned i = 0; i < n; i++) {
            atomic_store_explicit(&p[i].array->streamed_chunks, p[i].chunk + 1,
                                  memory_order_release);
            atomic_fetch_add_explicit(&h->streamed_bytes, p[i].bytes, memory_order_relaxed);
        }
        e = batch(s, p, n, true);
    }
    if (e != 0) {
        /* The recording still holds everything: it only stops shrinking. */
        s->failed = true;
        fscope_log(FSCOPE_LOG_WARN, "cannot stream the recording to disk (%s): it stays in "
                   "memory from here on", strerror(-e));
    }
}

/* Queues the sealed chunks of one array, flushing full batches. */
static void stream_array(struct streamer *s, struct chunked *a, uint64_t lag_chunks,
                         struct pending *p, unsigned *n)
{
    uint64_t count = atomic_load_explicit(&a->count, memory_order_acquire);
    uint64_t sealed = count / a->chunk_items;
    sealed = sealed > lag_chunks ? sealed - lag_chunks : 0;
    uint64_t from = atomic_load_explicit(&a->streamed_chunks, memory_order_relaxed);
    const uint64_t *table = recording_at(atomic_load_explicit(&a->table_offset,
                                                              memory_order_acquire));
    for (uint64_t c = from; c < sealed && !s->failed; c++) {
        p[*n] = (struct pending){ a, c, table[c], (uint64_t)a->chunk_items * a->item_size };
        if (++*n == STREAM_BATCH) {
            flush(s, p, *n);
            *n = 0;
        }
    }
}

static void stream_pass(struct streamer *s)
{
    struct rec_header *h = recording_header();
    struct pending p[STREAM_BATCH];
    unsigned n = 0;
    uint32_t entries = atomic_load(&h->dir_count);
    for (uint32_t i = 0; i < entries && i < h->dir_capacity && !s->failed; i++) {
        uint32_t type = atomic_load_explicit(&h->dir[i].type, memory_order_acquire);
        void *object = recording_at(h->dir[i].offset);
        if (type == REC_OBJ_FRAME_LOG)
            stream_array(s, &((struct rec_frame_log *)object)->frames, 1, p, &n);
        else if (type == REC_OBJ_SPAN_LOG)
            stream_array(s, &((struct rec_span_log *)object)->spans, 0, p, &n);
        else if (type == REC_OBJ_CAP)
            stream_array(s, &((struct rec_cap *)object)->events, 0, p, &n);
        else if (type == REC_OBJ_GPU_ZONES) {
            stream_array(s, &((struct rec_gpu_zones *)object)->spans, 0, p, &n);
            stream_array(s, &((struct rec_gpu_zones *)object)->stats, 0, p, &n);
        }
        else if (type == REC_OBJ_OBJECTS) {
            stream_array(s, &((struct rec_objects *)object)->names, 0, p, &n);
            stream_array(s, &((struct rec_objects *)object)->pipelines, 0, p, &n);
        }
        else if (type == REC_OBJ_KERNEL) {
            stream_array(s, &((struct rec_kernel *)object)->samples, 0, p, &n);
            stream_array(s, &((struct rec_kernel *)object)->drm_samples, 0, p, &n);
            stream_array(s, &((struct rec_kernel *)object)->sched_events, 0, p, &n);
        }
        else if (type == REC_OBJ_ENGINE) {
            struct rec_engine *e = object;
            stream_array(s, &e->recordings, 0, p, &n);
            stream_array(s, &e->pool_ops, 0, p, &n);
            stream_array(s, &e->memory, 0, p, &n);
            stream_array(s, &e->budgets, 0, p, &n);
            stream_array(s, &e->gauges, 0, p, &n);
        }
    }
    flush(s, p, n);
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
            fscope_log(FSCOPE_LOG_INFO, "io_uring unavailable: the recording streams with pwrite");
    }
    if (final && s->have_ring) {
        fscope_fd_forget(s->ring.ring_fd); /* io_uring_queue_exit closes it */
        io_uring_queue_exit(&s->ring);
    }
#endif
    /* At exit what is still in memory stays there: whoever analyses reads it in place. */
    if (!final) {
        recording_prefault(&s->prefault_done, &s->prefault_used);
        stream_pass(s);
    }
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
