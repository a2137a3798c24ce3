/* GPU timing's reader thread, one per device: reads back every slot our completion signal
 * says finished (and the GPU zones it carried), maps its timestamps onto our clock, and
 * gives the slots back. No app call ever waits for the GPU on our behalf. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "gpu.h"
#include "record/clock.h"
#include "record/meta.h"
#include "util/log.h"
#include "record/frame.h"
#include "record/gpu_clock.h"
#include "record/worker.h"

static const struct fscope_loc loc_gpu_submit = { "submission", __FILE__, __LINE__, 0, 0 };

#define RECALIBRATE_NS 1000000000 /* well inside the 4.3 s wrap of 32 valid bits */
/* Idle (nothing in flight), the reader sleeps this long at most before looking again. */
#define READER_WAIT_NS 50000000
/* In flight, it looks every READER_POLL_NS and reads whatever completed meanwhile in one
 * pass: an app submitting 50 times a frame wakes it no more than one submitting once, and a
 * GPU-bound app on a 2-core machine no longer feels it (waking per completion, through a
 * blocking wait and then a 1 ms batching sleep, it switched 2,150 times a second beside
 * zink's glmark2 on lavapipe and cost that app 20% of its frame rate). */
#define READER_POLL_NS 4000000
/* While a run of a command buffer that copies its GPU zones out is in flight, every
 * millisecond: its next run overwrites the copy (vkcube's, every 4 frames, is read in time at
 * 600 fps). */
#define READER_POLL_COPIES_NS 1000000
/* Completed slots read back in one go (and at most this many queries a call). */
#define READ_BATCH 64
/* At exit a reader may sit in a driver call that waits on the app's own work: give up on it
 * after this long and report without the last spans. */
#define EXIT_JOIN_NS 200000000

static int64_t gpu_to_mono(const struct queue_data *q, double period, uint64_t ts)
{
    return gpu_ticks_to_mono_ns(ts, q->calibration.gpu_ticks, q->calibration.mono_ns,
                                q->valid_mask, period);
}

/* Without calibrated timestamps: a span's end happened before the moment we saw it finished,
 * so each observation bounds the clock offset from above. The tightest bound of each second
 * becomes the anchor, so a GPU clock that drifts against ours is followed, not anchored once. */
static void anchor_observe(struct queue_data *q, double period, uint64_t end_ticks,
                           int64_t seen_mono_ns)
{
    if (!q->calibration.anchored) {
        q->calibration.anchored = true;
        q->calibration.gpu_ticks = end_ticks;
        q->calibration.mono_ns = seen_mono_ns;
        q->calibration.taken_mono_ns = seen_mono_ns;
        q->anchor_best_gap_ns = INT64_MAX;
        atomic_fetch_add(&gpu_stats.estimated_queues, 1);
        return;
    }
    int64_t gap = seen_mono_ns - gpu_to_mono(q, period, end_ticks);
    if (gap < q->anchor_best_gap_ns) {
        q->anchor_best_gap_ns = gap;
        q->anchor_best_ticks = end_ticks;
        q->anchor_best_mono_ns = seen_mono_ns;
    }
    if (seen_mono_ns - q->calibration.taken_mono_ns > RECALIBRATE_NS &&
        q->anchor_best_gap_ns != INT64_MAX) {
        q->calibration.gpu_ticks = q->anchor_best_ticks;
        q->calibration.mono_ns = q->anchor_best_mono_ns;
        q->calibration.taken_mono_ns = seen_mono_ns;
        q->calibration.recalibrations++;
        q->anchor_best_gap_ns = INT64_MAX;
    }
}



static struct timespec deadline_after(clockid_t clock, long ns)
{
    struct timespec until;
    clock_gettime(clock, &until);
    until.tv_nsec += ns;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    return until;
}

/* ---- reading back (reader thread) ------------------------------------------------------ */

static bool slot_complete(struct device_data *dev, const struct gpu_slot *s,
                          uint64_t timeline_value)
{
    if (dev->idle)
        return true;
    if (!s->event)
        return timeline_value >= s->value;
    VkResult r = dev->vk.GetEventStatus(dev->device, s->event);
    if (r == VK_ERROR_DEVICE_LOST)
        gpu_device_lost(dev, "vkGetEventStatus");
    return r == VK_EVENT_SET;
}

/* Test only (FRAMESCOPE_TEST_FAULT=stale-read): every other lap, hands back what the slot held
 * a lap ago, as a read that trusted stale availability would, so the check above must fire. */
static void fault_stale_read(struct gpu_slot *s, uint64_t data[2])
{
    uint64_t fresh[2] = { data[0], data[1] };
    if (s->laps++ % 2 == 1) {
        data[0] = s->fault_last[0];
        data[1] = s->fault_last[1];
    }
    s->fault_last[0] = fresh[0];
    s->fault_last[1] = fresh[1];
}

static int64_t queue_to_mono(const struct queue_data *q, uint64_t ts)
{
    return gpu_to_mono(q, q->device->timestamp_period, ts);
}

/* One completed slot's span: recorded, checked against the queue's last begin. */
/* One completed slot's span from its two timestamps: recorded, checked against the queue's
 * last begin. */
static void slot_span(struct device_data *dev, struct queue_data *q, struct gpu_slot *s,
                      uint64_t data[2], int64_t seen)
{
    if (layer_config.fault_stale_read)
        fault_stale_read(s, data);
    double period = dev->timestamp_period;
    uint64_t begin = data[0] & q->valid_mask, end = data[1] & q->valid_mask;
    /* Submissions on one queue start in order: a begin before the last one's is a query read
     * from an earlier lap, which must never happen (counted, reported). */
    if (q->have_last_begin &&
        ((begin - q->last_begin_ticks) & q->valid_mask) > q->valid_mask / 2) {
        atomic_fetch_add_explicit(&gpu_stats.backwards, 1, memory_order_relaxed);
    } else {
        q->last_begin_ticks = begin; /* the latest begin, so a run of stale reads counts */
        q->have_last_begin = true;
    }
    if (!q->calibration.calibrated)
        anchor_observe(q, period, end, seen);
    uint64_t b = fscope_mono_ns_to_ticks(gpu_to_mono(q, period, begin));
    uint64_t e = fscope_mono_ns_to_ticks(gpu_to_mono(q, period, end));
    uint32_t flags = s->after_gap || q->span_gap_carry ? GPU_SPAN_AFTER_GAP : 0;
    q->span_gap_carry = false;
    if (e <= b)
        e = b + (flags != 0); /* an empty span is dropped, and its flag must not be */
    struct fscope_collector *c = q->track->collector;
    uint64_t clamped_before = c->spans_clamped;
    fscope_external_span(c, &loc_gpu_submit, b, e);
    if (c->spans_clamped != clamped_before)
        atomic_fetch_add(&gpu_stats.clamped, 1);
    fscope_span_log_add(q->track->spans, dev->id, b, e, flags);
    atomic_fetch_add_explicit(&gpu_stats.measured, 1, memory_order_relaxed);
}

/* Resets a read slot's event once no submitting thread is asking for its status: such a
 * thread holds the flag for one vkGetEventStatus, so this waits that long at most. */
static void event_reset(struct device_data *dev, struct queue_data *q, VkEvent event)
{
    while (atomic_flag_test_and_set_explicit(&q->event_busy, memory_order_acquire))
        sched_yield();
    dev->vk.ResetEvent(dev->device, event);
    atomic_flag_clear_explicit(&q->event_busy, memory_order_release);
}

/* Reads every slot our completion signal says is done, in order; gives each back. */
static void queue_read_completed(struct device_data *dev, struct queue_data *q)
{
    if (!q->timing || atomic_load(&dev->lost))
        return;
    uint64_t head = atomic_load_explicit(&q->slot_head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&q->slot_tail, memory_order_relaxed);
    if (tail == head)
        return;
    uint64_t value = 0;
    if (q->timeline) {
        VkResult r = dev->get_counter(dev->device, q->timeline, &value);
        if (r == VK_ERROR_DEVICE_LOST)
            gpu_device_lost(dev, "vkGetSemaphoreCounterValue");
        if (r != VK_SUCCESS)
            return;
    }
    uint64_t free_in = atomic_load_explicit(&q->free_in, memory_order_relaxed);
    int64_t seen = fscope_ticks_to_mono_ns(fscope_now());
    while (tail < head) {
        /* The completed slots at the tail, read in as few calls as their queries allow:
         * consecutive slots of a chunk are consecutive queries (lavapipe idles the whole
         * device in every vkGetQueryPoolResults: one a slot left the reader behind a
         * 30-submission frame). */
        struct gpu_slot *done[READ_BATCH];
        uint64_t data[2 * READ_BATCH];
        bool read[READ_BATCH];
        uint32_t n = 0;
        while (n < READ_BATCH && tail + n < head &&
               slot_complete(dev, q->flight[(tail + n) % GPU_SLOTS_MAX], value)) {
            done[n] = q->flight[(tail + n) % GPU_SLOTS_MAX];
            n++;
        }
        if (n == 0)
            break;
        for (uint32_t first = 0, last; first < n; first = last) {
            for (last = first + 1; last < n && done[last]->query_pool == done[first]->query_pool &&
                                   done[last]->query == done[last - 1]->query + 2;
                 last++)
                ;
            uint32_t count = 2 * (last - first);
            VkResult r = dev->vk.GetQueryPoolResults(
                dev->device, done[first]->query_pool, done[first]->query, count,
                count * sizeof(uint64_t), &data[2 * first], sizeof(uint64_t),
                VK_QUERY_RESULT_64_BIT);
            if (r == VK_ERROR_DEVICE_LOST) {
                gpu_device_lost(dev, "vkGetQueryPoolResults");
                return;
            }
            for (uint32_t k = first; k < last; k++) {
                read[k] = r == VK_SUCCESS;
                if (r == VK_SUCCESS) {
                    slot_span(dev, q, done[k], &data[2 * k], seen);
                } else {
                    atomic_fetch_add_explicit(&gpu_stats.unmeasured_unreadable, 1,
                                              memory_order_relaxed);
                    q->span_gap_carry = true; /* its time is unknown: a gap like any */
                }
            }
        }
        for (uint32_t k = 0; k < n; k++) {
            struct gpu_slot *slot = done[k];
            zones_read(dev, q, slot, read[k] ? &data[2 * k] : NULL, queue_to_mono);
            if (dev->reset_query_pool && !layer_config.fault_skip_query_reset)
                dev->reset_query_pool(dev->device, slot->query_pool, slot->query, 2);
            if (slot->event)
                event_reset(dev, q, slot->event);
            q->free_ring[free_in++ % GPU_SLOTS_MAX] = slot;
        }
        atomic_store_explicit(&q->free_in, free_in, memory_order_release);
        tail += n;
        atomic_store_explicit(&q->slot_tail, tail, memory_order_release);
    }
    /* Half in flight: add as many again before the submitting thread runs short. */
    uint64_t in_flight = head - tail;
    if (2 * in_flight >= atomic_load_explicit(&q->slot_count, memory_order_relaxed) &&
        gpu_slots_grow(dev, q))
        atomic_fetch_add_explicit(&gpu_stats.slots_grown, 1, memory_order_relaxed);
    if (q->calibration.calibrated &&
        fscope_ticks_to_mono_ns(fscope_now()) - q->calibration.taken_mono_ns > RECALIBRATE_NS)
        gpu_calibrate(dev, q);
}

static void read_all(struct device_data *dev)
{
    atomic_fetch_add_explicit(&gpu_stats.reader_wakes, 1, memory_order_relaxed);
    for (unsigned i = 0; i < MAX_QUEUES; i++) {
        struct queue_data *q = atomic_load_explicit(&dev->queues[i].item, memory_order_acquire);
        if (q)
            queue_read_completed(dev, q);
    }
    zones_read_deferred(dev, false, queue_to_mono);
}

/* Whether any queue has a slot in flight. */
static bool any_in_flight(struct device_data *dev)
{
    for (unsigned i = 0; i < MAX_QUEUES; i++) {
        struct queue_data *q = atomic_load_explicit(&dev->queues[i].item, memory_order_acquire);
        if (q && q->timing &&
            atomic_load_explicit(&q->slot_tail, memory_order_relaxed) !=
                atomic_load_explicit(&q->slot_head, memory_order_seq_cst))
            return true;
    }
    return false;
}

/* Nothing in flight: sleep until a submit wakes us or a while passes. reader_idle is set
 * before looking for work (both sequentially consistent, as the submit's side is), so a
 * submission either is seen here or sees the flag and wakes us. */
static void reader_sleep(struct device_data *dev)
{
    atomic_store(&dev->reader_idle, 1);
    if (!atomic_load(&dev->reader_stop) && !any_in_flight(dev)) {
        const struct timespec timeout = { 0, READER_WAIT_NS };
        gpu_futex(&dev->reader_idle, FUTEX_WAIT, 1, &timeout);
    }
    atomic_store(&dev->reader_idle, 0);
}

static void sleep_until(int64_t mono_ns)
{
    const struct timespec until = { mono_ns / 1000000000, mono_ns % 1000000000 };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
        ;
}

static void *reader_main(void *arg)
{
    struct device_data *dev = arg;
    int64_t next_pass = fscope_ticks_to_mono_ns(fscope_now());
    while (!atomic_load(&dev->reader_stop) && !atomic_load(&dev->lost)) {
        if (!any_in_flight(dev)) {
            reader_sleep(dev);
            next_pass = fscope_ticks_to_mono_ns(fscope_now()) + READER_POLL_NS;
        }
        sleep_until(next_pass);
        next_pass += atomic_load_explicit(&dev->zone_copies_in_flight, memory_order_relaxed)
                         ? READER_POLL_COPIES_NS
                         : READER_POLL_NS;
        int64_t now = fscope_ticks_to_mono_ns(fscope_now());
        if (next_pass < now)
            next_pass = now; /* late (preempted): no burst of catch-up passes */
        read_all(dev);
    }
    return NULL;
}

void gpu_reader_start(struct device_data *dev)
{
    if (!layer_config.gpu_timing || dev->reader_started)
        return;
    int err = fscope_worker_spawn(&dev->reader, "fscope-gpu", reader_main, dev);
    if (err != 0) {
        fscope_record_note("cannot start the GPU timestamp reader (%s): GPU not timed",
                           strerror(err));
        return;
    }
    dev->reader_started = true;
}

static void reader_signal_stop(struct device_data *dev)
{
    atomic_store(&dev->reader_stop, true);
    atomic_store(&dev->reader_idle, 0);
    gpu_futex(&dev->reader_idle, FUTEX_WAKE, INT_MAX, NULL);
}

void gpu_reader_stop(struct device_data *dev)
{
    if (!dev->reader_started)
        return;
    reader_signal_stop(dev);
    pthread_join(dev->reader, NULL);
    dev->reader_started = false;
    /* The app idled the device before destroying it (the spec's rule; this wait returns at
     * once then, and bounds a broken app): every slot is complete, also those after the last
     * submission that carried our signal. */
    if (!atomic_load(&dev->lost) && dev->vk.DeviceWaitIdle(dev->device) == VK_SUCCESS)
        dev->idle = true;
    read_all(dev);
    zones_read_deferred(dev, true, queue_to_mono);
}

void gpu_reader_stop_at_exit(struct device_data *dev)
{
    if (!dev->reader_started)
        return;
    reader_signal_stop(dev);
    struct timespec until = deadline_after(CLOCK_REALTIME, EXIT_JOIN_NS);
    if (pthread_timedjoin_np(dev->reader, NULL, &until) == 0) {
        dev->reader_started = false;
        read_all(dev);
        zones_read_deferred(dev, true, queue_to_mono);
    } else {
        fscope_record_note("the GPU timestamp reader was still waiting on the driver at exit: "
                           "the last submissions' GPU spans may be missing");
    }
}
