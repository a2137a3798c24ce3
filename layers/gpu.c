/* GPU timing: a timestamp written before and after each submission, read back once the layer
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
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "record/clock.h"
#include "record/frame.h"
#include "record/gpu_clock.h"
#include "record/worker.h"
#include "layer.h"
#include "util/log.h"
#include "record/meta.h"

struct gpu_stats gpu_stats;

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
/* A submission carries our timeline signal when the app fences it (the end of its frame, as a
 * rule), or when SIGNAL_GAP_NS passed since the last one did, or after SIGNAL_RUN that did not:
 * a signal completes every earlier slot of the queue as well. On the H200 a signal in every
 * submission cost 2.2 us of the 4.7 us the layer added to each of 30 submissions a frame. */
#define SIGNAL_GAP_NS 1000000
#define SIGNAL_RUN 32
/* Completed slots read back in one go (and at most this many queries a call). */
#define READ_BATCH 64
/* At exit a reader may sit in a driver call that waits on the app's own work: give up on it
 * after this long and report without the last spans. */
#define EXIT_JOIN_NS 200000000
/* Sampling (FRAMESCOPE_GPU_SAMPLE): every timestamp pair costs the app frame time however
 * cheap our own work is (1.5 us a submission on the H200, measured with the pair written in
 * the app's own command buffers; on lavapipe each extra command buffer is a rasterizer batch).
 * So whole frames are timed, SAMPLE_WINDOW_FRAMES in a row, whenever the budget of timed
 * submissions a second allows: a run of timed frames measures GPU busy exactly inside it,
 * and the analysis takes the frames outside every run as unmeasured, never as an idle GPU.
 * Without presents (a compute app, a GL app without a swapchain) a window is
 * SAMPLE_PRESENTLESS_NS of submissions instead. */
#define SAMPLE_WINDOW_FRAMES 6
#define SAMPLE_PRESENTLESS_NS 100000000 /* no present this long: windows by time */
#define SAMPLE_TAIL_FRAMES 3 /* auto: frames after a window that still carry its cost */
#define SAMPLE_WINDOW_NS 25000000

/* ---- tracks -------------------------------------------------------------------------------
 * A track is a row in the trace and the zone tree, with the span log behind it. A queue holds
 * one while it lives; a destroyed device's tracks are taken by the next queues, so a program
 * that creates and destroys devices in a loop never runs out. Spans carry their device's id,
 * so a reused track still tells devices apart. */

#define MAX_TRACKS 64 /* queues timed at once, over all devices */

struct gpu_track {
    _Atomic bool in_use;
    struct fscope_collector *collector;
    struct fscope_span_log *spans;
};

static struct gpu_track tracks[MAX_TRACKS];
static pthread_mutex_t tracks_lock = PTHREAD_MUTEX_INITIALIZER;

static void track_default_name(unsigned i, char *buf, size_t len)
{
    if (i == 0)
        snprintf(buf, len, "gpu");
    else
        snprintf(buf, len, "gpu %u", i + 1);
}

static struct gpu_track *track_take(void)
{
    struct gpu_track *found = NULL;
    pthread_mutex_lock(&tracks_lock);
    for (unsigned i = 0; i < MAX_TRACKS && !found; i++) {
        struct gpu_track *t = &tracks[i];
        if (atomic_load(&t->in_use))
            continue;
        if (!t->collector) {
            char name[32];
            track_default_name(i, name, sizeof(name));
            t->collector = fscope_external_create(name);
            t->spans = fscope_span_log_create();
            if (!t->collector || !t->spans)
                break;
        } else {
            /* A name the app gave was the last queue's: kept until another queue takes the
             * track, so the report after teardown still shows it. */
            char name[32];
            track_default_name(i, name, sizeof(name));
            fscope_external_rename(t->collector, name);
        }
        atomic_store(&t->in_use, true);
        found = t;
    }
    pthread_mutex_unlock(&tracks_lock);
    return found;
}

static void track_give_back(struct gpu_track *t)
{
    if (t)
        atomic_store(&t->in_use, false);
}

void gpu_queue_named(struct queue_data *q, const char *name)
{
    if (!q || !q->track || !name || !name[0])
        return;
    char track[32];
    snprintf(track, sizeof(track), "gpu %s", name);
    fscope_external_rename(q->track->collector, track);
}

/* ---- clock mapping (reader thread) ----------------------------------------------------- */

static void calibrate(struct device_data *dev, struct queue_data *q)
{
    if (!dev->calibrated_timestamps || layer_config.fault_no_calibration)
        return;
    const VkCalibratedTimestampInfoEXT infos[2] = {
        { VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, NULL, VK_TIME_DOMAIN_DEVICE_EXT },
        { VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT, NULL,
          VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT },
    };
    uint64_t ts[2], deviation;
    if (dev->vk.GetCalibratedTimestampsEXT(dev->device, 2, infos, ts, &deviation) != VK_SUCCESS)
        return;
    if (!q->calibration.calibrated)
        atomic_fetch_add(&gpu_stats.calibrated_queues, 1);
    q->calibration.calibrated = true;
    q->calibration.anchored = true;
    q->calibration.gpu_ticks = ts[0] & q->valid_mask;
    q->calibration.mono_ns = (int64_t)ts[1];
    q->calibration.taken_mono_ns = (int64_t)ts[1];
    q->calibration.recalibrations++;
}

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


/* An absolute time ns (under a second) from now on clock, for the timed waits below. */
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

/* ---- slots ------------------------------------------------------------------------------ */

static bool record_slot(struct device_data *dev, struct queue_data *q, struct gpu_slot *s)
{
    /* The event path never learns through a wait the driver sees that our command buffers
     * finished: SIMULTANEOUS_USE keeps their resubmission valid all the same. */
    const VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = q->timeline ? 0 : VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT,
    };
    if (dev->vk.BeginCommandBuffer(s->begin_cb, &begin) != VK_SUCCESS)
        return false;
    /* Without host resets the reset travels with the writes: both run in this submission, so
     * what the reader reads after our completion signal is this lap's, never the last one's. */
    if (!dev->reset_query_pool && !layer_config.fault_skip_query_reset)
        dev->vk.CmdResetQueryPool(s->begin_cb, s->query_pool, s->query, 2);
    dev->vk.CmdWriteTimestamp(s->begin_cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, s->query_pool,
                              s->query);
    if (dev->vk.EndCommandBuffer(s->begin_cb) != VK_SUCCESS)
        return false;
    if (dev->vk.BeginCommandBuffer(s->end_cb, &begin) != VK_SUCCESS)
        return false;
    dev->vk.CmdWriteTimestamp(s->end_cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, s->query_pool,
                              s->query + 1);
    if (s->event)
        dev->vk.CmdSetEvent(s->end_cb, s->event, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);
    return dev->vk.EndCommandBuffer(s->end_cb) == VK_SUCCESS;
}

static void chunk_destroy(struct device_data *dev, struct gpu_chunk *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->count; i++)
        if (c->slots[i].event)
            dev->vk.DestroyEvent(dev->device, c->slots[i].event, NULL);
    if (c->query_pool)
        dev->vk.DestroyQueryPool(dev->device, c->query_pool, NULL);

    if (c->pool)
        dev->vk.DestroyCommandPool(dev->device, c->pool, NULL); /* frees its command buffers */
    free(c);
}

/* Count slots with their pools, command buffers (recorded) and events; NULL when the device
 * will not give them. */
static struct gpu_chunk *chunk_make(struct device_data *dev, struct queue_data *q, uint32_t count)
{
    struct gpu_chunk *c = calloc(1, sizeof(*c) + count * sizeof(c->slots[0]));
    VkCommandBuffer *cbs = calloc(2 * count, sizeof(*cbs));
    if (!c || !cbs)
        goto error;
    c->count = count;
    const VkCommandPoolCreateInfo pool_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .queueFamilyIndex = q->family,
    };
    const VkQueryPoolCreateInfo query_info = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = 2 * count,
    };
    if (dev->vk.CreateCommandPool(dev->device, &pool_info, NULL, &c->pool) != VK_SUCCESS) {
        c->pool = VK_NULL_HANDLE;
        goto error;
    }
    if (dev->vk.CreateQueryPool(dev->device, &query_info, NULL, &c->query_pool) != VK_SUCCESS) {
        c->query_pool = VK_NULL_HANDLE;
        goto error;
    }
    if (dev->reset_query_pool && !layer_config.fault_skip_query_reset)
        dev->reset_query_pool(dev->device, c->query_pool, 0, 2 * count);
    const VkCommandBufferAllocateInfo alloc_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = c->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 2 * count,
    };
    if (dev->vk.AllocateCommandBuffers(dev->device, &alloc_info, cbs) != VK_SUCCESS)
        goto error;
    const VkEventCreateInfo event_info = { .sType = VK_STRUCTURE_TYPE_EVENT_CREATE_INFO };
    for (uint32_t i = 0; i < count; i++) {
        struct gpu_slot *s = &c->slots[i];
        s->begin_cb = cbs[2 * i];
        s->end_cb = cbs[2 * i + 1];
        s->query_pool = c->query_pool;
        s->query = 2 * i;
        /* Command buffers we create are dispatchable: the loader must fill their dispatch. */
        if (dev->set_loader_data(dev->device, s->begin_cb) != VK_SUCCESS ||
            dev->set_loader_data(dev->device, s->end_cb) != VK_SUCCESS)
            goto error;
        if (!q->timeline &&
            dev->vk.CreateEvent(dev->device, &event_info, NULL, &s->event) != VK_SUCCESS) {
            s->event = VK_NULL_HANDLE;
            goto error;
        }
        if (!record_slot(dev, q, s))
            goto error;
    }
    free(cbs);
    return c;
error:
    free(cbs);
    chunk_destroy(dev, c);
    return NULL;
}

/* Adds a chunk as large as what the queue has (GPU_SLOTS_FIRST to begin with): the reader
 * when half are in flight, a submitting thread that found none free. Two at once each add
 * their own; neither waits for the other. False when nothing was added. */
static bool slots_grow(struct device_data *dev, struct queue_data *q)
{
    uint32_t have = atomic_load_explicit(&q->slot_count, memory_order_relaxed), count;
    do {
        count = have ? have : GPU_SLOTS_FIRST;
        if (count > GPU_SLOTS_MAX - have)
            count = GPU_SLOTS_MAX - have;
        if (!count)
            return false;
    } while (!atomic_compare_exchange_weak(&q->slot_count, &have, have + count));
    uint32_t index = atomic_fetch_add(&q->chunks_reserved, 1);
    struct gpu_chunk *c = index < GPU_CHUNKS_MAX ? chunk_make(dev, q, count) : NULL;
    if (!c) {
        atomic_fetch_sub(&q->slot_count, count);
        return false;
    }
    atomic_store_explicit(&q->chunks[index], c, memory_order_release);
    return true;
}

/* Published chunks, in index order (a NULL is one being made, or one that failed). */
static uint32_t chunks_reserved(const struct queue_data *q)
{
    uint32_t n = atomic_load_explicit(&q->chunks_reserved, memory_order_acquire);
    return n < GPU_CHUNKS_MAX ? n : GPU_CHUNKS_MAX;
}

static const char *family_kind(VkQueueFlags flags)
{
    if (flags & VK_QUEUE_GRAPHICS_BIT)
        return "graphics";
    if (flags & VK_QUEUE_COMPUTE_BIT)
        return "compute";
    if (flags & VK_QUEUE_TRANSFER_BIT)
        return "transfer";
    return "other";
}

void gpu_queue_init(struct device_data *dev, struct queue_data *q)
{
    q->timing = false;
    if (!layer_config.gpu_timing || q->family >= dev->family_count)
        return;
    const VkQueueFamilyProperties *family = &dev->families[q->family];
    uint32_t bits = family->timestampValidBits;
    if (bits == 0) {
        fscope_record_note("queue family %u (%s) has no timestamps (timestampValidBits 0): its "
                           "submissions are not GPU-timed", q->family,
                           family_kind(family->queueFlags));
        return;
    }
    if (!(family->queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT |
                                VK_QUEUE_TRANSFER_BIT))) {
        fscope_record_note("queue family %u has neither graphics, compute nor transfer: its "
                           "submissions are not GPU-timed", q->family);
        return;
    }
    if (!dev->timeline_semaphores &&
        !(family->queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT))) {
        fscope_record_note("queue family %u (transfer) is not GPU-timed: without timeline "
                           "semaphores the layer's completion signal is an event, which a "
                           "transfer-only queue cannot set", q->family);
        return;
    }
    q->valid_mask = gpu_valid_mask(bits);
    q->track = track_take();
    if (!q->track) {
        fscope_record_note("more than %d queues timed at once: later queues are not GPU-timed",
                           MAX_TRACKS);
        return;
    }
    if (dev->timeline_semaphores) {
        const VkSemaphoreTypeCreateInfo type = {
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
            .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
            .initialValue = 0,
        };
        const VkSemaphoreCreateInfo sem_info = {
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
            .pNext = &type,
        };
        if (dev->vk.CreateSemaphore(dev->device, &sem_info, NULL, &q->timeline) != VK_SUCCESS) {
            q->timeline = VK_NULL_HANDLE;
            goto error;
        }
    }
    if (!slots_grow(dev, q))
        goto error_semaphore;
    q->signal_gap_ticks = fscope_ns_to_ticks(SIGNAL_GAP_NS);
    calibrate(dev, q); /* here, before the reader sees the queue; then every second there */
    q->timing = true;
    fscope_log(FSCOPE_LOG_DEBUG, "device %u: queue family %u (%s) GPU-timed: %u slots to begin "
               "with, %u-bit timestamps, completion by %s", dev->id, q->family,
               family_kind(family->queueFlags), GPU_SLOTS_FIRST, bits,
               q->timeline ? "timeline semaphore" : "events");
    return;

error_semaphore:
    if (q->timeline)
        dev->vk.DestroySemaphore(dev->device, q->timeline, NULL);
    q->timeline = VK_NULL_HANDLE;
error:
    track_give_back(q->track);
    q->track = NULL;
    fscope_record_note("could not set up GPU timestamps on queue family %u: GPU not timed",
                       q->family);
}

void gpu_device_lost(struct device_data *dev, const char *where)
{
    if (atomic_exchange(&dev->lost, true))
        return;
    atomic_fetch_add(&gpu_stats.device_lost, 1);
    fscope_record_note("device lost (reported by %s): GPU timing stopped from there on", where);
}

/* Called by the reader only, and by teardown after the reader stopped. */
void gpu_queue_finish(struct device_data *dev, struct queue_data *q)
{
    uint64_t head = atomic_load(&q->slot_head), tail = atomic_load(&q->slot_tail);
    if (q->timing && head > tail)
        atomic_fetch_add(&gpu_stats.in_flight_at_teardown, head - tail);
    if (q->timeline)
        dev->vk.DestroySemaphore(dev->device, q->timeline, NULL);
    q->timeline = VK_NULL_HANDLE;
    for (uint32_t i = 0, n = chunks_reserved(q); i < n; i++)
        chunk_destroy(dev, atomic_exchange(&q->chunks[i], NULL));
    track_give_back(q->track);
    q->track = NULL;
    q->timing = false;
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

bool gpu_slot_complete(struct queue_data *q, const struct gpu_slot *slot, uint64_t value)
{
    struct device_data *dev = q->device;
    if (q->timeline) {
        uint64_t reached = 0;
        return dev->get_counter(dev->device, q->timeline, &reached) == VK_SUCCESS &&
               reached >= value;
    }
    /* An event is reset once its slot is read, and the slot may be taken again since: that
     * reads as not complete, which only costs a run its timing. So does a reader resetting
     * events right now: this thread is the app's and never waits for ours. */
    if (atomic_flag_test_and_set_explicit(&q->event_busy, memory_order_acquire))
        return false;
    bool set = slot->value == value &&
               dev->vk.GetEventStatus(dev->device, slot->event) == VK_EVENT_SET;
    atomic_flag_clear_explicit(&q->event_busy, memory_order_release);
    return set;
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
        slots_grow(dev, q))
        atomic_fetch_add_explicit(&gpu_stats.slots_grown, 1, memory_order_relaxed);
    if (q->calibration.calibrated &&
        fscope_ticks_to_mono_ns(fscope_now()) - q->calibration.taken_mono_ns > RECALIBRATE_NS)
        calibrate(dev, q);
}

static void read_all(struct device_data *dev)
{
    atomic_fetch_add_explicit(&gpu_stats.reader_wakes, 1, memory_order_relaxed);
    for (unsigned i = 0; i < MAX_QUEUES; i++) {
        struct queue_data *q = atomic_load_explicit(&dev->queues[i].item, memory_order_acquire);
        if (q)
            queue_read_completed(dev, q);
    }
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

static long futex(_Atomic int *word, int op, int value, const struct timespec *timeout)
{
    return syscall(SYS_futex, (int *)word, op | FUTEX_PRIVATE_FLAG, value, timeout, NULL, 0);
}

/* Nothing in flight: sleep until a submit wakes us or a while passes. reader_idle is set
 * before looking for work (both sequentially consistent, as the submit's side is), so a
 * submission either is seen here or sees the flag and wakes us. */
static void reader_sleep(struct device_data *dev)
{
    atomic_store(&dev->reader_idle, 1);
    if (!atomic_load(&dev->reader_stop) && !any_in_flight(dev)) {
        const struct timespec timeout = { 0, READER_WAIT_NS };
        futex(&dev->reader_idle, FUTEX_WAIT, 1, &timeout);
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
    futex(&dev->reader_idle, FUTEX_WAKE, INT_MAX, NULL);
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
    } else {
        fscope_record_note("the GPU timestamp reader was still waiting on the driver at exit: "
                           "the last submissions' GPU spans may be missing");
    }
}

/* ---- submission (app thread) ----------------------------------------------------------- */

static void *scratch_reserve(struct queue_data *q, size_t size)
{
    if (size > q->scratch_size) {
        size_t grown = q->scratch_size ? q->scratch_size : 1024;
        while (grown < size)
            grown *= 2;
        void *p = realloc(q->scratch, grown);
        if (!p)
            return NULL;
        q->scratch = p;
        q->scratch_size = grown;
    }
    return q->scratch;
}

/* memcpy for an app's array, which may be NULL when its count is 0 (memcpy's arguments must
 * never be NULL, even for 0 bytes). */
static void copy_array(void *dst, const void *src, size_t bytes)
{
    if (bytes)
        memcpy(dst, src, bytes);
}

/* Device-group masks and protected submissions index or flag the app's command buffers in
 * ways ours cannot join: such batches go down untouched, and are counted. */
static bool chain_blocks_injection(const void *pnext)
{
    for (const VkBaseInStructure *s = pnext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_DEVICE_GROUP_SUBMIT_INFO)
            return true;
        if (s->sType == VK_STRUCTURE_TYPE_PROTECTED_SUBMIT_INFO &&
            ((const VkProtectedSubmitInfo *)s)->protectedSubmit)
            return true;
    }
    return false;
}

/* ---- sampling ------------------------------------------------------------------------------ */

void gpu_sample_init(struct device_data *dev)
{
    pthread_mutex_init(&dev->sample_lock, NULL);
    dev->sample_refill_ticks = fscope_now();
    /* One window to start with (auto): a burst of the whole quarter second's budget at
     * start-up would time tens of frames before their cost is known. */
    dev->sample_tokens = layer_config.gpu_sample_auto ? SAMPLE_WINDOW_FRAMES
                                                      : layer_config.gpu_sample_rate / 4.0;
    dev->sample_rate = layer_config.gpu_sample_rate;
    atomic_store(&dev->sample_open, layer_config.gpu_sample_rate == 0);
}

/* Under sample_lock, at a present (FRAMESCOPE_GPU_SAMPLE=auto): the frame that ends now was
 * timed or not (open); its time since the last present goes into the smoothed mean of frames
 * in or just after a window (SAMPLE_TAIL_FRAMES after it: with frames in flight, what timing
 * costs the device shows in the frames presented after it), or of the others. A timed frame
 * costs the difference times (window + tail) / window, in either direction: a timed frame
 * that runs faster is the layer changing the app as much as one that runs slower. The rate
 * becomes what keeps that within GPU_SAMPLE_COST_SHARE of the app's time, between one window
 * a second and the configured ceiling. On a GPU where a timestamp costs a microsecond nothing changes; on
 * lavapipe, where each one flushes the rasterizer and a timed frame takes half as long
 * again, the rate drops. */
static void sample_adapt(struct device_data *dev, uint64_t now, bool open)
{
    uint64_t last = dev->sample_last_present;
    dev->sample_last_present = now;
    if (!layer_config.gpu_sample_auto || !last)
        return;
    double dt = fscope_ticks_to_ns(now - last);
    if (dt <= 0 || dt > 250e6)
        return; /* a pause (loading, a debugger): no frame's cost */
    /* A timed frame is judged against untimed ones once there are some: the first frames,
     * timed while the budget is full, are the app's start-up ones. One slow timed frame is
     * taken as four untimed ones at most, so a hitch in a window cannot close the windows. */
    dev->sample_since_window = open ? 0 : dev->sample_since_window + 1;
    if (open || dev->sample_since_window <= SAMPLE_TAIL_FRAMES) {
        if (dev->sample_out_ns <= 0)
            return;
        if (dt > 4 * dev->sample_out_ns)
            dt = 4 * dev->sample_out_ns;
        dev->sample_in_ns = dev->sample_in_ns > 0 ? dev->sample_in_ns + (dt - dev->sample_in_ns) / 16 : dt;
    } else {
        dev->sample_out_ns = dev->sample_out_ns > 0 ? dev->sample_out_ns + (dt - dev->sample_out_ns) / 32 : dt;
    }
    double ceiling = layer_config.gpu_sample_rate;
    double per_frame = dev->sample_per_frame > 1 ? dev->sample_per_frame : 1;
    double floor = SAMPLE_WINDOW_FRAMES * per_frame;
    double change = dev->sample_in_ns - dev->sample_out_ns;
    double cost = (change < 0 ? -change : change) *
                  (SAMPLE_WINDOW_FRAMES + SAMPLE_TAIL_FRAMES) / SAMPLE_WINDOW_FRAMES;
    double rate = ceiling;
    if (dev->sample_in_ns > 0 && dev->sample_out_ns > 0 && cost > 0)
        rate = GPU_SAMPLE_COST_SHARE * 1e9 / cost * per_frame;
    rate = rate < floor ? (floor < ceiling ? floor : ceiling) : rate > ceiling ? ceiling : rate;
    /* Down at once, up by a quarter a second at most: frame times here are noisy, and one
     * quiet stretch must not open the budget wide again. */
    if (dev->sample_in_ns > 0 && dev->sample_out_ns > 0 && rate > dev->sample_rate) {
        double up = dev->sample_rate * (1 + 0.25 * dt / 1e9);
        rate = rate < up ? rate : up;
    }
    dev->sample_rate = rate;
    atomic_store_explicit(&gpu_stats.sample_in_ns, (uint64_t)dev->sample_in_ns, memory_order_relaxed);
    atomic_store_explicit(&gpu_stats.sample_out_ns, (uint64_t)dev->sample_out_ns, memory_order_relaxed);
    atomic_store_explicit(&gpu_stats.sample_rate, (uint64_t)dev->sample_rate, memory_order_relaxed);
}

/* Under sample_lock: the budget grows by the time passed, up to a quarter second's worth or a
 * window's, whichever is more (a window must always fit). */
static void sample_refill(struct device_data *dev, uint64_t now)
{
    double rate = dev->sample_rate;
    double passed = fscope_ticks_to_ns(now - dev->sample_refill_ticks) / 1e9;
    dev->sample_refill_ticks = now;
    double cap = rate / 4;
    double window = SAMPLE_WINDOW_FRAMES * (dev->sample_per_frame > 1 ? dev->sample_per_frame : 1);
    if (cap < window)
        cap = window;
    dev->sample_tokens += passed * rate;
    if (dev->sample_tokens > cap)
        dev->sample_tokens = cap;
}

void gpu_sample_presented(struct device_data *dev, uint64_t now)
{
    if (!layer_config.gpu_sample_rate || !layer_config.gpu_timing)
        return;
    atomic_store_explicit(&dev->last_present_ticks, now, memory_order_relaxed);
    if (pthread_mutex_trylock(&dev->sample_lock) != 0)
        return; /* another present decides */
    sample_refill(dev, now);
    double n = (double)atomic_exchange_explicit(&dev->sample_submits, 0, memory_order_relaxed);
    dev->sample_per_frame = dev->sample_per_frame > 0 ? 0.875 * dev->sample_per_frame + 0.125 * n
                                                      : n;
    bool open = atomic_load_explicit(&dev->sample_open, memory_order_relaxed);
    sample_adapt(dev, now, open);
    if (open) {
        dev->sample_tokens -= n;
        if (dev->sample_frames_left > 1) {
            dev->sample_frames_left--;
            pthread_mutex_unlock(&dev->sample_lock);
            return;
        }
    }
    /* A window ends here, or none was open: the next one follows at once when the budget
     * holds it, so an app within the budget is timed in every frame. */
    double per_frame = dev->sample_per_frame > 1 ? dev->sample_per_frame : 1;
    bool next = dev->sample_tokens >= SAMPLE_WINDOW_FRAMES * per_frame;
    dev->sample_frames_left = next ? SAMPLE_WINDOW_FRAMES : 0;
    if (next && !open)
        atomic_fetch_add_explicit(&gpu_stats.sample_windows, 1, memory_order_relaxed);
    if (next != open)
        atomic_store_explicit(&dev->sample_open, next, memory_order_relaxed);
    pthread_mutex_unlock(&dev->sample_lock);
}

bool gpu_sample_may_time(struct device_data *dev)
{
    if (!layer_config.gpu_sample_rate || atomic_load_explicit(&dev->sample_open, memory_order_relaxed))
        return true;
    /* Without presents, windows open at a submission: what is recorded cannot be told apart. */
    uint64_t last = atomic_load_explicit(&dev->last_present_ticks, memory_order_relaxed);
    return !last || fscope_now() - last >= fscope_ns_to_ticks(SAMPLE_PRESENTLESS_NS);
}

/* Where the app presents nothing but marks its frames (fscope_frame_mark, offscreen renderers
 * and benchmarks), the first submission after a mark takes it for a present: windows are
 * whole frames and the budget adapts as with presents. Two loads a submission; several marks
 * between two submissions count as one frame, which only makes that frame look long. */
static void sample_take_marks(struct device_data *dev)
{
    if (atomic_load_explicit(&dev->presents_seen, memory_order_relaxed))
        return;
    uint64_t marks = atomic_load_explicit(&fscope_frame_marks, memory_order_acquire);
    uint64_t seen = atomic_load_explicit(&dev->marks_seen, memory_order_relaxed);
    if (marks == seen ||
        !atomic_compare_exchange_strong_explicit(&dev->marks_seen, &seen, marks,
                                                 memory_order_relaxed, memory_order_relaxed))
        return;
    gpu_sample_presented(dev, atomic_load_explicit(&fscope_frame_mark_ticks,
                                                   memory_order_relaxed));
}

/* Whether a submission now is timed under the budget. One relaxed load while frames are
 * presented; without presents, a window of SAMPLE_WINDOW_NS opens when the budget holds a
 * quarter second's worth, and each submission in it spends one. */
static bool sample_admits(struct device_data *dev)
{
    if (!layer_config.gpu_sample_rate)
        return true;
    sample_take_marks(dev);
    atomic_fetch_add_explicit(&dev->sample_submits, 1, memory_order_relaxed);
    if (atomic_load_explicit(&dev->sample_open, memory_order_relaxed))
        return true;
    uint64_t now = fscope_now();
    uint64_t last = atomic_load_explicit(&dev->last_present_ticks, memory_order_relaxed);
    if (last && now - last < fscope_ns_to_ticks(SAMPLE_PRESENTLESS_NS))
        return false;
    if (pthread_mutex_trylock(&dev->sample_lock) != 0)
        return false;
    sample_refill(dev, now);
    bool admit = now < dev->sample_until_ticks && dev->sample_tokens >= 1;
    /* A window opens once the budget holds a quarter second's worth; the first one (auto,
     * which starts with one window's worth) at once: the first frames, submitted before any
     * present, are timed from the start. */
    double opens = layer_config.gpu_sample_rate / 4.0;
    if (layer_config.gpu_sample_auto && !dev->sample_started)
        opens = 1;
    if (!admit && dev->sample_tokens >= opens) {
        dev->sample_started = true;
        dev->sample_until_ticks = now + fscope_ns_to_ticks(SAMPLE_WINDOW_NS);
        atomic_fetch_add_explicit(&gpu_stats.sample_windows, 1, memory_order_relaxed);
        admit = true;
    }
    if (admit)
        dev->sample_tokens -= 1;
    pthread_mutex_unlock(&dev->sample_lock);
    return admit;
}

/* The next free slot: one read back, else one never used, else a new chunk made here (only
 * when the reader could not keep up), else NULL (counted). Never waits. */
static struct gpu_slot *slot_take(struct device_data *dev, struct queue_data *q)
{
    uint64_t out = atomic_load_explicit(&q->free_out, memory_order_relaxed);
    if (out != atomic_load_explicit(&q->free_in, memory_order_acquire)) {
        struct gpu_slot *s = q->free_ring[out % GPU_SLOTS_MAX];
        atomic_store_explicit(&q->free_out, out + 1, memory_order_relaxed);
        return s;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        for (uint32_t i = q->fresh_chunk, n = chunks_reserved(q); i < n; i++) {
            struct gpu_chunk *c = atomic_load_explicit(&q->chunks[i], memory_order_acquire);
            if (c && c->taken < c->count)
                return &c->slots[c->taken++];
            if (c && i == q->fresh_chunk)
                q->fresh_chunk++; /* used up: never looked at again */
        }
        if (attempt == 0 && slots_grow(dev, q)) {
            atomic_fetch_add_explicit(&gpu_stats.slots_grown, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&gpu_stats.slots_grown_on_app, 1, memory_order_relaxed);
        }
    }
    atomic_fetch_add_explicit(&gpu_stats.unmeasured_no_slot, 1, memory_order_relaxed);
    return NULL;
}

/* The slot for the next submission, or NULL (counted) when it goes untimed. */
static struct gpu_slot *slot_acquire(struct device_data *dev, struct queue_data *q,
                                     bool blocked, bool *unsampled)
{
    *unsampled = false;
    if (!q->timing || atomic_load_explicit(&dev->lost, memory_order_relaxed))
        return NULL;
    if (blocked) {
        atomic_fetch_add_explicit(&gpu_stats.unmeasured_unsupported, 1, memory_order_relaxed);
        return NULL;
    }
    if (!sample_admits(dev)) {
        atomic_fetch_add_explicit(&gpu_stats.unsampled, 1, memory_order_relaxed);
        q->sample_gap = true;
        *unsampled = true;
        return NULL;
    }
    struct gpu_slot *s = slot_take(dev, q);
    if (!s)
        q->sample_gap = true;
    if (s)
        s->value = atomic_load_explicit(&q->slot_head, memory_order_relaxed) + 1;
    return s;
}

/* The submission went down: the slot is in flight. The reader is woken only if it sleeps
 * for want of work (then once: it clears the flag), with no lock. */
static void slot_submitted(struct device_data *dev, struct queue_data *q, struct gpu_slot *s)
{
    uint64_t head = atomic_load_explicit(&q->slot_head, memory_order_relaxed);
    s->after_gap = q->sample_gap;
    q->sample_gap = false;
    q->flight[head % GPU_SLOTS_MAX] = s;
    atomic_store_explicit(&q->slot_head, head + 1, memory_order_seq_cst);
    if (atomic_load_explicit(&dev->reader_idle, memory_order_seq_cst) &&
        atomic_exchange(&dev->reader_idle, 0)) {
        futex(&dev->reader_idle, FUTEX_WAKE, 1, NULL);
        atomic_fetch_add_explicit(&gpu_stats.reader_woken, 1, memory_order_relaxed);
    }
}

/* The slot goes back unused: the submission did not go down. */
static void slot_unused(struct device_data *dev, struct queue_data *q, struct gpu_slot *s)
{
    zones_detach(dev, s);
    /* Handed back through the fresh side: the submitting thread owns it still. */
    uint64_t out = atomic_load_explicit(&q->free_out, memory_order_relaxed);
    if (out && q->free_ring[(out - 1) % GPU_SLOTS_MAX] == s) {
        atomic_store_explicit(&q->free_out, out - 1, memory_order_relaxed);
        return;
    }
    for (uint32_t i = q->fresh_chunk, n = chunks_reserved(q); i < n; i++) {
        struct gpu_chunk *c = atomic_load_explicit(&q->chunks[i], memory_order_acquire);
        if (c && c->taken && &c->slots[c->taken - 1] == s) {
            c->taken--;
            return;
        }
    }
}

/* Whether this submission should carry our timeline signal (see SIGNAL_GAP_NS). */
static bool signal_due(struct queue_data *q, bool app_fence)
{
    if (!q->timeline)
        return false;
    return app_fence || q->unsignalled + 1 >= SIGNAL_RUN ||
           fscope_now() - q->last_signal_ticks >= q->signal_gap_ticks;
}

/* The submission went down with (sent) or without our signal. */
static void signal_count(struct queue_data *q, bool sent)
{
    if (sent) {
        q->unsignalled = 0;
        q->last_signal_ticks = fscope_now();
    } else {
        q->unsignalled++;
    }
}

static VkResult after_submit(struct device_data *dev, struct queue_data *q, struct gpu_slot *s,
                             VkResult r)
{
    if (r == VK_SUCCESS)
        slot_submitted(dev, q, s);
    else
        slot_unused(dev, q, s);
    return r;
}

/* The app's timeline-semaphore struct in a batch's chain, through *ret; false when it is
 * there but not first (we would have to copy what comes before it to extend it). */
static bool find_timeline_info(const void *chain, const VkTimelineSemaphoreSubmitInfo **ret)
{
    *ret = NULL;
    for (const VkBaseInStructure *s = chain; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO) {
            *ret = (const VkTimelineSemaphoreSubmitInfo *)s;
            return s == chain;
        }
    return true;
}

VkResult gpu_submit(struct device_data *dev, struct queue_data *q, uint32_t count,
                    const VkSubmitInfo *submits, VkFence fence)
{
    bool blocked = count == 0;
    for (uint32_t i = 0; i < count && !blocked; i++)
        blocked = chain_blocks_injection(submits[i].pNext);
    bool unsampled = false;
    struct gpu_slot *slot = count ? slot_acquire(dev, q, blocked, &unsampled) : NULL;
    /* Untimed and sampled out, a command buffer's zones matter only where a run of it that
     * copies them out is still to be read (zones_untimed_submit): none, no look-up. */
    bool zones = atomic_load_explicit(&dev->zones, memory_order_relaxed) &&
                 (slot || !unsampled ||
                  atomic_load_explicit(&dev->zone_copies_in_flight, memory_order_relaxed));
    for (uint32_t i = 0; i < count && zones; i++)
        for (uint32_t k = 0; k < submits[i].commandBufferCount; k++) {
            if (slot)
                zones_attach(q, slot, submits[i].pCommandBuffers[k], i == 0 && k == 0);
            else
                zones_untimed_submit(submits[i].pCommandBuffers[k], !unsampled);
        }
    if (!slot)
        return dev->vk.QueueSubmit(q->queue, count, submits, fence);
    /* Our signal extends the last batch's timeline struct; one that is not first in its chain
     * is left alone, and the next submission signals instead. */
    const VkTimelineSemaphoreSubmitInfo *app_timeline = NULL;
    bool signal = signal_due(q, fence != VK_NULL_HANDLE) &&
                  find_timeline_info(submits[count - 1].pNext, &app_timeline);

    /* Scratch: the batches, then the first and last batches' command buffers, then the last
     * batch's signals, their values and our timeline struct. */
    const VkSubmitInfo *first = &submits[0], *last = &submits[count - 1];
    uint32_t first_cbs = first->commandBufferCount + 1 + (count == 1);
    uint32_t last_cbs = count > 1 ? last->commandBufferCount + 1 : 0;
    uint32_t signals = signal ? last->signalSemaphoreCount + 1 : 0;
    size_t size = count * sizeof(VkSubmitInfo) + sizeof(VkTimelineSemaphoreSubmitInfo) +
                  signals * (sizeof(VkSemaphore) + sizeof(uint64_t)) +
                  (first_cbs + last_cbs) * sizeof(VkCommandBuffer);
    VkSubmitInfo *copy = scratch_reserve(q, size);
    if (!copy) {
        atomic_fetch_add_explicit(&gpu_stats.unmeasured_no_slot, 1, memory_order_relaxed);
        slot_unused(dev, q, slot);
        q->sample_gap = true;
        return dev->vk.QueueSubmit(q->queue, count, submits, fence);
    }
    memcpy(copy, submits, count * sizeof(VkSubmitInfo));
    VkTimelineSemaphoreSubmitInfo *timeline = (VkTimelineSemaphoreSubmitInfo *)(copy + count);
    uint64_t *values = (uint64_t *)(timeline + 1);
    VkSemaphore *semaphores = (VkSemaphore *)(values + signals);
    VkCommandBuffer *cbs = (VkCommandBuffer *)(semaphores + signals);

    cbs[0] = slot->begin_cb;
    copy_array(cbs + 1, first->pCommandBuffers, first->commandBufferCount * sizeof(*cbs));
    copy[0].pCommandBuffers = cbs;
    copy[0].commandBufferCount = first->commandBufferCount + 1;
    VkSubmitInfo *tail = &copy[count - 1];
    if (count > 1) {
        cbs += first_cbs;
        copy_array(cbs, last->pCommandBuffers, last->commandBufferCount * sizeof(*cbs));
        tail->pCommandBuffers = cbs;
        tail->commandBufferCount = last->commandBufferCount;
    }
    cbs[tail->commandBufferCount++] = slot->end_cb;

    if (signal) {
        /* Our signal joins the batch's own: the app's values where it gave them (binary
         * semaphores ignore theirs), ours last. */
        uint32_t n = last->signalSemaphoreCount;
        copy_array(semaphores, last->pSignalSemaphores, n * sizeof(*semaphores));
        semaphores[n] = q->timeline;
        for (uint32_t k = 0; k < n; k++)
            values[k] = app_timeline && k < app_timeline->signalSemaphoreValueCount
                            ? app_timeline->pSignalSemaphoreValues[k]
                            : 0;
        values[n] = slot->value;
        *timeline = (VkTimelineSemaphoreSubmitInfo){
            .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
            .pNext = app_timeline ? app_timeline->pNext : last->pNext,
            .waitSemaphoreValueCount = app_timeline ? app_timeline->waitSemaphoreValueCount : 0,
            .pWaitSemaphoreValues = app_timeline ? app_timeline->pWaitSemaphoreValues : NULL,
            .signalSemaphoreValueCount = n + 1,
            .pSignalSemaphoreValues = values,
        };
        tail->pNext = timeline;
        tail->signalSemaphoreCount = n + 1;
        tail->pSignalSemaphores = semaphores;
    }
    VkResult r = dev->vk.QueueSubmit(q->queue, count, copy, fence);
    if (r == VK_SUCCESS)
        signal_count(q, signal);
    return after_submit(dev, q, slot, r);
}

VkResult gpu_submit2(struct device_data *dev, struct queue_data *q, PFN_vkQueueSubmit2 next,
                     uint32_t count, const VkSubmitInfo2 *submits, VkFence fence)
{
    bool blocked = count == 0;
    for (uint32_t i = 0; i < count && !blocked; i++)
        blocked = (submits[i].flags & VK_SUBMIT_PROTECTED_BIT) ||
                  chain_blocks_injection(submits[i].pNext);
    bool unsampled = false;
    struct gpu_slot *slot = count ? slot_acquire(dev, q, blocked, &unsampled) : NULL;
    bool signal = slot && signal_due(q, fence != VK_NULL_HANDLE);
    /* Untimed and sampled out, a command buffer's zones matter only where a run of it that
     * copies them out is still to be read (zones_untimed_submit): none, no look-up. */
    bool zones = atomic_load_explicit(&dev->zones, memory_order_relaxed) &&
                 (slot || !unsampled ||
                  atomic_load_explicit(&dev->zone_copies_in_flight, memory_order_relaxed));
    for (uint32_t i = 0; i < count && zones; i++)
        for (uint32_t k = 0; k < submits[i].commandBufferInfoCount; k++) {
            if (slot)
                zones_attach(q, slot, submits[i].pCommandBufferInfos[k].commandBuffer,
                             i == 0 && k == 0);
            else
                zones_untimed_submit(submits[i].pCommandBufferInfos[k].commandBuffer,
                                     !unsampled);
        }
    if (!slot)
        return next(q->queue, count, submits, fence);

    const VkSubmitInfo2 *first = &submits[0], *last = &submits[count - 1];
    uint32_t first_cbs = first->commandBufferInfoCount + 1 + (count == 1);
    uint32_t last_cbs = count > 1 ? last->commandBufferInfoCount + 1 : 0;
    uint32_t signals = signal ? last->signalSemaphoreInfoCount + 1 : 0;
    size_t size = count * sizeof(VkSubmitInfo2) + signals * sizeof(VkSemaphoreSubmitInfo) +
                  (first_cbs + last_cbs) * sizeof(VkCommandBufferSubmitInfo);
    VkSubmitInfo2 *copy = scratch_reserve(q, size);
    if (!copy) {
        atomic_fetch_add_explicit(&gpu_stats.unmeasured_no_slot, 1, memory_order_relaxed);
        slot_unused(dev, q, slot);
        q->sample_gap = true;
        return next(q->queue, count, submits, fence);
    }
    memcpy(copy, submits, count * sizeof(VkSubmitInfo2));
    VkSemaphoreSubmitInfo *semaphores = (VkSemaphoreSubmitInfo *)(copy + count);
    VkCommandBufferSubmitInfo *cbs = (VkCommandBufferSubmitInfo *)(semaphores + signals);
    const VkCommandBufferSubmitInfo ours = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
    };

    cbs[0] = ours;
    cbs[0].commandBuffer = slot->begin_cb;
    copy_array(cbs + 1, first->pCommandBufferInfos, first->commandBufferInfoCount * sizeof(*cbs));
    copy[0].pCommandBufferInfos = cbs;
    copy[0].commandBufferInfoCount = first->commandBufferInfoCount + 1;
    VkSubmitInfo2 *tail = &copy[count - 1];
    if (count > 1) {
        cbs += first_cbs;
        copy_array(cbs, last->pCommandBufferInfos, last->commandBufferInfoCount * sizeof(*cbs));
        tail->pCommandBufferInfos = cbs;
        tail->commandBufferInfoCount = last->commandBufferInfoCount;
    }
    cbs[tail->commandBufferInfoCount] = ours;
    cbs[tail->commandBufferInfoCount++].commandBuffer = slot->end_cb;

    if (signal) {
        uint32_t n = last->signalSemaphoreInfoCount;
        copy_array(semaphores, last->pSignalSemaphoreInfos, n * sizeof(*semaphores));
        semaphores[n] = (VkSemaphoreSubmitInfo){
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
            .semaphore = q->timeline,
            .value = slot->value,
            .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
        };
        tail->signalSemaphoreInfoCount = n + 1;
        tail->pSignalSemaphoreInfos = semaphores;
    }
    VkResult r = next(q->queue, count, copy, fence);
    if (r == VK_SUCCESS)
        signal_count(q, signal);
    return after_submit(dev, q, slot, r);
}

void gpu_report_notes(void)
{
    uint64_t measured = atomic_load(&gpu_stats.measured);
    uint64_t no_slot = atomic_load(&gpu_stats.unmeasured_no_slot);
    uint64_t unsupported = atomic_load(&gpu_stats.unmeasured_unsupported);
    uint64_t unreadable = atomic_load(&gpu_stats.unmeasured_unreadable);
    uint64_t in_flight = atomic_load(&gpu_stats.in_flight_at_teardown);
    if (!layer_config.gpu_timing) {
        fscope_record_note("GPU timing off (FRAMESCOPE_GPU=off): no GPU busy time was measured");
        return;
    }
    fscope_record_note("GPU timing: %llu submissions timed; untimed: %llu (no free query slot), "
                       "%llu (device-group or protected), %llu (unreadable), %llu (in flight at "
                       "teardown)", (unsigned long long)measured, (unsigned long long)no_slot,
                       (unsigned long long)unsupported, (unsigned long long)unreadable,
                       (unsigned long long)in_flight);
    uint64_t unsampled = atomic_load(&gpu_stats.unsampled);
    if (layer_config.gpu_sample_rate)
        fscope_record_note("GPU timing sampled (FRAMESCOPE_GPU_SAMPLE=%s%u timed submissions a "
                           "second): %llu windows of timed frames; %llu submissions left untimed "
                           "between them, whose frames are unmeasured, not idle",
                           layer_config.gpu_sample_auto ? "auto: up to " : "",
                           layer_config.gpu_sample_rate,
                           (unsigned long long)atomic_load(&gpu_stats.sample_windows),
                           (unsigned long long)unsampled);
    uint64_t in_ns = atomic_load(&gpu_stats.sample_in_ns), out_ns = atomic_load(&gpu_stats.sample_out_ns);
    if (layer_config.gpu_sample_rate && layer_config.gpu_sample_auto && in_ns && out_ns)
        fscope_record_note("GPU timing's cost measured as it ran: %.3f ms a frame (present to "
                           "present, or frame mark to mark) in timed frames and the 3 after "
                           "them, %.3f ms in the others; %llu timed submissions a second "
                           "allowed at the end (timed frames' change of time, either way, at "
                           "most %.1f%% of the app's, one window a second at least)%s",
                           (double)in_ns / 1e6, (double)out_ns / 1e6,
                           (unsigned long long)atomic_load(&gpu_stats.sample_rate),
                           GPU_SAMPLE_COST_SHARE * 100,
                           in_ns < out_ns ? "; timed frames ran faster: the driver works "
                                            "differently around our timestamps (lavapipe "
                                            "starts its rasterizer at each)"
                                          : "");
    if (atomic_load(&gpu_stats.zones_sampled_out))
        fscope_record_note("GPU zones left out of %llu command buffers recorded again between "
                           "windows of timed frames (their timestamps would cost the device "
                           "for nothing); %llu timed submissions carried one, their zones "
                           "unknown", (unsigned long long)atomic_load(&gpu_stats.zones_sampled_out),
                           (unsigned long long)atomic_load(&gpu_stats.zones_dark_timed));
    fscope_log(FSCOPE_LOG_DEBUG, "GPU timestamp readers: %llu read passes, %llu woken by a submit",
               (unsigned long long)atomic_load(&gpu_stats.reader_wakes),
               (unsigned long long)atomic_load(&gpu_stats.reader_woken));
    if (atomic_load(&gpu_stats.slots_grown))
        fscope_record_note("GPU timing added query slots %llu times while the app ran (more "
                           "submissions in flight than it had), %llu of them on a submitting "
                           "thread that found none free",
                           (unsigned long long)atomic_load(&gpu_stats.slots_grown),
                           (unsigned long long)atomic_load(&gpu_stats.slots_grown_on_app));
    if (atomic_load(&gpu_stats.calibrated_queues))
        fscope_record_note("GPU clock mapped with VK_EXT_calibrated_timestamps, re-calibrated "
                           "every second");
    if (atomic_load(&gpu_stats.estimated_queues))
        fscope_record_note("GPU clock not calibrated (no VK_EXT_calibrated_timestamps): span "
                           "durations are exact; placement is re-anchored every second from "
                           "when each span was seen complete");
    if (atomic_load(&gpu_stats.backwards))
        fscope_record_note("%llu GPU spans began older than the one before on their queue: "
                           "stale query results (a framescope bug, please report)",
                           (unsigned long long)atomic_load(&gpu_stats.backwards));
    if (atomic_load(&gpu_stats.clamped))
        fscope_record_note("%llu GPU spans overlapped the previous one on their queue and were "
                           "clamped", (unsigned long long)atomic_load(&gpu_stats.clamped));
    fscope_record_note("a submission's GPU span runs from its first command's start to its last "
                       "command's end, so it includes any semaphore wait inside it");
}
