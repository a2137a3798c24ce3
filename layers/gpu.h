/* GPU timing, inside the layer: what its files (gpu_stats.c, gpu_sample.c, gpu_slots.c,
 * gpu_reader.c, gpu_submit.c) share beyond layer.h. Lowest first: stats, then sampling and
 * slots, then the reader (which reads zones) and the submit path (which attaches them).
 *
 * GPU timing: a timestamp written before and after each submission, read back once the layer
 * itself knows the GPU finished it, mapped onto CLOCK_MONOTONIC and then onto our ticks.
 *
 * A timed submission takes a slot: a pair of queries with two command buffers recorded once.
 * The slot's begin command buffer goes in front of the app's first batch and its end command
 * buffer behind the app's last, in the app's own batches: no batch or submission of ours is
 * added, so nothing of ours can make a driver's queue throttle (Mesa's queues make one
 * driver submission per batch). Completion is told by a per-queue timeline semaphore: the
 * k-th submission's value is k + 1, and the last batch of some submissions (the ones the app
 * fences, and one a millisecond at most: SIGNAL_GAP_NS) signals it among its own signals; a
 * signal completes every earlier slot of the queue too. A driver without timeline semaphores
 * gets an event instead, set by the end command buffer after its timestamp and polled.
 *
 * Nothing here waits or takes a lock on an app thread. A reader thread per device reads what
 * completed every few milliseconds (READER_POLL_NS), resets the queries from the host and
 * only then gives the slots back, however many submissions a frame has. A queue starts with
 * GPU_SLOTS_FIRST slots and the reader adds as many again whenever half are in flight, so an
 * app that keeps thousands in flight is timed whole; a submit that still finds none free
 * makes the next chunk itself (counted), and goes untimed (counted) only at GPU_SLOTS_MAX.
 *
 * Queues are externally synchronised by the app (Vulkan's rule), so the submitting side of a
 * queue's rings, its signal bookkeeping and its scratch memory need no lock: submit, present
 * and wait-idle on one queue never run at once. */
#ifndef FSCOPE_LAYER_GPU_H
#define FSCOPE_LAYER_GPU_H

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "layer.h"

/* A submission carries our timeline signal when the app fences it (the end of its frame, as a
 * rule), or when SIGNAL_GAP_NS passed since the last one did, or after SIGNAL_RUN that did not:
 * a signal completes every earlier slot of the queue as well. On the H200 a signal in every
 * submission cost 2.2 us of the 4.7 us the layer added to each of 30 submissions a frame. */
#define SIGNAL_GAP_NS 1000000
#define SIGNAL_RUN 32

/* A queue's row in the trace and the zone tree, with the span log behind it (gpu_slots.c). */
struct gpu_track {
    _Atomic bool in_use;
    struct fscope_collector *collector;
    struct fscope_span_log *spans;
};

/* Published chunks, in index order (a NULL is one being made, or one that failed). */
static inline uint32_t gpu_chunks_reserved(const struct queue_data *q)
{
    uint32_t n = atomic_load_explicit(&q->chunks_reserved, memory_order_acquire);
    return n < GPU_CHUNKS_MAX ? n : GPU_CHUNKS_MAX;
}

/* The reader's sleep and a submit's wake of it (dev->reader_idle). */
static inline long gpu_futex(_Atomic int *word, int op, int value, const struct timespec *timeout)
{
    return syscall(SYS_futex, (int *)word, op | FUTEX_PRIVATE_FLAG, value, timeout, NULL, 0);
}

/* gpu_slots.c */
/* Adds a chunk of slots to q (GPU_SLOTS_FIRST, then as many as it has): false when none was. */
bool gpu_slots_grow(struct device_data *dev, struct queue_data *q);
void gpu_calibrate(struct device_data *dev, struct queue_data *q);

/* gpu_sample.c */
/* Whether a submission now is timed under FRAMESCOPE_GPU_SAMPLE's budget (app thread). */
bool gpu_sample_admits(struct device_data *dev);

#endif
