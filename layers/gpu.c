/* GPU timing: a timestamp written before and after each submission, read back once the layer
 * itself knows the GPU finished it, mapped onto CLOCK_MONOTONIC and then onto our ticks.
 *
 * Each queue owns a ring of GPU_SLOTS query pairs with their command buffers recorded once at
 * set-up. A submit splices the slot's begin command buffer in front of the app's first batch
 * and appends one batch of ours: the end command buffer, then a signal of our own completion
 * signal (a timeline semaphore value, or the slot's fence where timeline semaphores are not
 * available). The end timestamp waits for every command submitted before it, and the signal
 * waits for the end timestamp, so the signal proves the whole submission finished.
 *
 * Nothing here waits on an app thread. A reader thread per device waits on the completion
 * signals, reads the queries, resets them from the host and only then gives the slot back
 * (slot_tail). Until then a slot, its command buffers and queries are never reused: a submit
 * that finds no free slot goes down untimed, and is counted.
 *
 * Queues are externally synchronised by the app (Vulkan's rule), so slot_head and the scratch
 * memory need no lock: submit, present and wait-idle on one queue never run at once. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "record/clock.h"
#include "record/gpu_clock.h"
#include "record/worker.h"
#include "layer.h"
#include "util/log.h"
#include "record/meta.h"

struct gpu_stats gpu_stats;

static const struct fscope_loc loc_gpu_submit = { "submission", __FILE__, __LINE__, 0, 0 };

#define RECALIBRATE_NS 1000000000 /* well inside the 4.3 s wrap of 32 valid bits */
/* The reader wakes at least this often to notice new queues and a stop request. */
#define READER_WAIT_NS 50000000
/* At device destruction the app has idled the device (a rule of vkDestroyDevice); this only
 * bounds a broken app. */
#define TEARDOWN_WAIT_NS 1000000000
/* At exit a reader may sit in a driver call that waits on the app's own work: give up on it
 * after this long and report without the last spans. */
#define EXIT_JOIN_NS 200000000

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
            if (i == 0)
                snprintf(name, sizeof(name), "gpu");
            else
                snprintf(name, sizeof(name), "gpu %u", i + 1);
            t->collector = fscope_external_create(name);
            t->spans = fscope_span_log_create();
            if (!t->collector || !t->spans)
                break;
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

/* ---- per-queue set-up ------------------------------------------------------------------ */

static bool record_slot(struct device_data *dev, struct queue_data *q, unsigned i)
{
    const VkCommandBufferBeginInfo begin = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO };
    struct gpu_slot *s = &q->slots[i];
    if (dev->vk.BeginCommandBuffer(s->begin_cb, &begin) != VK_SUCCESS)
        return false;
    /* Without host resets the reset travels with the writes: both run in this submission, so
     * what the reader reads after our completion signal is this lap's, never the last one's. */
    if (!dev->reset_query_pool && !layer_config.fault_skip_query_reset)
        dev->vk.CmdResetQueryPool(s->begin_cb, q->query_pool, 2 * i, 2);
    dev->vk.CmdWriteTimestamp(s->begin_cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, q->query_pool, 2 * i);
    if (dev->vk.EndCommandBuffer(s->begin_cb) != VK_SUCCESS)
        return false;
    if (dev->vk.BeginCommandBuffer(s->end_cb, &begin) != VK_SUCCESS)
        return false;
    dev->vk.CmdWriteTimestamp(s->end_cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, q->query_pool,
                              2 * i + 1);
    return dev->vk.EndCommandBuffer(s->end_cb) == VK_SUCCESS;
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
    q->valid_mask = gpu_valid_mask(bits);
    q->track = track_take();
    if (!q->track) {
        fscope_record_note("more than %d queues timed at once: later queues are not GPU-timed",
                           MAX_TRACKS);
        return;
    }

    const VkCommandPoolCreateInfo pool_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .queueFamilyIndex = q->family,
    };
    const VkQueryPoolCreateInfo query_info = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = 2 * GPU_SLOTS,
    };
    unsigned fences = 0;
    if (dev->vk.CreateCommandPool(dev->device, &pool_info, NULL, &q->pool) != VK_SUCCESS)
        goto error;
    if (dev->vk.CreateQueryPool(dev->device, &query_info, NULL, &q->query_pool) != VK_SUCCESS)
        goto error_pool;
    if (dev->reset_query_pool && !layer_config.fault_skip_query_reset)
        dev->reset_query_pool(dev->device, q->query_pool, 0, 2 * GPU_SLOTS);
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
        if (dev->vk.CreateSemaphore(dev->device, &sem_info, NULL, &q->timeline) != VK_SUCCESS)
            goto error_query;
    } else {
        const VkFenceCreateInfo fence_info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
        for (; fences < GPU_SLOTS; fences++)
            if (dev->vk.CreateFence(dev->device, &fence_info, NULL,
                                    &q->slots[fences].fence) != VK_SUCCESS)
                goto error_sync;
    }
    VkCommandBuffer cbs[2 * GPU_SLOTS];
    const VkCommandBufferAllocateInfo alloc_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = q->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 2 * GPU_SLOTS,
    };
    if (dev->vk.AllocateCommandBuffers(dev->device, &alloc_info, cbs) != VK_SUCCESS)
        goto error_sync;
    for (unsigned i = 0; i < 2 * GPU_SLOTS; i++) {
        /* Command buffers we create are dispatchable: the loader must fill their dispatch. */
        if (dev->set_loader_data(dev->device, cbs[i]) != VK_SUCCESS)
            goto error_sync;
    }
    for (unsigned i = 0; i < GPU_SLOTS; i++) {
        q->slots[i].begin_cb = cbs[2 * i];
        q->slots[i].end_cb = cbs[2 * i + 1];
        if (!record_slot(dev, q, i))
            goto error_sync;
    }
    calibrate(dev, q); /* here, before the reader sees the queue; then every second there */
    q->timing = true;
    fscope_log(FSCOPE_LOG_DEBUG, "device %u: queue family %u (%s) GPU-timed: %u slots, %u-bit "
               "timestamps, completion by %s", dev->id, q->family,
               family_kind(family->queueFlags), GPU_SLOTS, bits,
               dev->timeline_semaphores ? "timeline semaphore" : "fences");
    return;

error_sync:
    if (q->timeline)
        dev->vk.DestroySemaphore(dev->device, q->timeline, NULL);
    q->timeline = VK_NULL_HANDLE;
    while (fences > 0) {
        fences--;
        dev->vk.DestroyFence(dev->device, q->slots[fences].fence, NULL);
        q->slots[fences].fence = VK_NULL_HANDLE;
    }
error_query:
    dev->vk.DestroyQueryPool(dev->device, q->query_pool, NULL);
error_pool:
    dev->vk.DestroyCommandPool(dev->device, q->pool, NULL); /* frees its command buffers */
error:
    q->pool = VK_NULL_HANDLE;
    q->query_pool = VK_NULL_HANDLE;
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
    for (unsigned i = 0; i < GPU_SLOTS; i++)
        if (q->slots[i].fence)
            dev->vk.DestroyFence(dev->device, q->slots[i].fence, NULL);
    if (q->query_pool)
        dev->vk.DestroyQueryPool(dev->device, q->query_pool, NULL);
    if (q->pool)
        dev->vk.DestroyCommandPool(dev->device, q->pool, NULL);
    track_give_back(q->track);
    q->track = NULL;
    q->timing = false;
    free(q->fault_laps);
    q->fault_laps = NULL;
}

/* ---- reading back (reader thread) ------------------------------------------------------ */

static bool slot_complete(struct device_data *dev, struct queue_data *q, uint64_t index,
                          uint64_t timeline_value)
{
    if (q->timeline)
        return timeline_value >= index + 1;
    VkResult r = dev->vk.GetFenceStatus(dev->device, q->slots[index % GPU_SLOTS].fence);
    if (r == VK_ERROR_DEVICE_LOST)
        gpu_device_lost(dev, "vkGetFenceStatus");
    return r == VK_SUCCESS;
}

/* Test only (FRAMESCOPE_TEST_FAULT=stale-read): every other lap, hands back what the slot held
 * a lap ago, as a read that trusted stale availability would, so the check above must fire. */
static void fault_stale_read(struct queue_data *q, unsigned slot, uint64_t index,
                             uint64_t data[2])
{
    if (!q->fault_laps && !(q->fault_laps = calloc(GPU_SLOTS, sizeof(*q->fault_laps))))
        return;
    uint64_t fresh[2] = { data[0], data[1] };
    if ((index / GPU_SLOTS) % 2 == 1) {
        data[0] = q->fault_laps[slot][0];
        data[1] = q->fault_laps[slot][1];
    }
    q->fault_laps[slot][0] = fresh[0];
    q->fault_laps[slot][1] = fresh[1];
}

static int64_t queue_to_mono(const struct queue_data *q, uint64_t ts)
{
    return gpu_to_mono(q, q->device->timestamp_period, ts);
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
    double period = dev->timestamp_period;
    while (tail < head && slot_complete(dev, q, tail, value)) {
        unsigned i = (unsigned)(tail % GPU_SLOTS);
        uint64_t data[2] = { 0 };
        /* Complete by our own signal: no wait, and this lap's values (see record_slot). */
        VkResult r = dev->vk.GetQueryPoolResults(dev->device, q->query_pool, 2 * i, 2,
                                                 sizeof(data), data, sizeof(uint64_t),
                                                 VK_QUERY_RESULT_64_BIT);
        int64_t seen = fscope_ticks_to_mono_ns(fscope_now());
        if (r == VK_ERROR_DEVICE_LOST) {
            gpu_device_lost(dev, "vkGetQueryPoolResults");
            return;
        }
        if (r == VK_SUCCESS && layer_config.fault_stale_read)
            fault_stale_read(q, i, tail, data);
        if (r == VK_SUCCESS) {
            uint64_t begin = data[0] & q->valid_mask, end = data[1] & q->valid_mask;
            /* Submissions on one queue start in order: a begin before the last one's is a
             * query read from an earlier lap, which must never happen (counted, reported). */
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
            if (e < b)
                e = b;
            struct fscope_collector *c = q->track->collector;
            uint64_t clamped_before = c->spans_clamped;
            fscope_external_span(c, &loc_gpu_submit, b, e);
            if (c->spans_clamped != clamped_before)
                atomic_fetch_add(&gpu_stats.clamped, 1);
            fscope_span_log_add(q->track->spans, dev->id, b, e);
            atomic_fetch_add_explicit(&gpu_stats.measured, 1, memory_order_relaxed);
        } else {
            atomic_fetch_add_explicit(&gpu_stats.unmeasured_unreadable, 1, memory_order_relaxed);
        }
        zones_read(dev, q, &q->slots[i], queue_to_mono);
        if (dev->reset_query_pool && !layer_config.fault_skip_query_reset)
            dev->reset_query_pool(dev->device, q->query_pool, 2 * i, 2);
        if (!q->timeline)
            dev->vk.ResetFences(dev->device, 1, &q->slots[i].fence);
        tail++;
        atomic_store_explicit(&q->slot_tail, tail, memory_order_release);
    }
    if (q->calibration.calibrated &&
        fscope_ticks_to_mono_ns(fscope_now()) - q->calibration.taken_mono_ns > RECALIBRATE_NS)
        calibrate(dev, q);
}

/* Waits until some queue's oldest pending slot completes, or timeout_ns passes. False when
 * nothing is pending. */
static bool wait_any_pending(struct device_data *dev, uint64_t timeout_ns)
{
    VkSemaphore semaphores[MAX_QUEUES];
    uint64_t values[MAX_QUEUES];
    VkFence fences[MAX_QUEUES];
    uint32_t n = 0;
    for (unsigned i = 0; i < MAX_QUEUES; i++) {
        struct queue_data *q = atomic_load_explicit(&dev->queues[i].item, memory_order_acquire);
        if (!q || !q->timing)
            continue;
        uint64_t tail = atomic_load_explicit(&q->slot_tail, memory_order_relaxed);
        if (tail == atomic_load_explicit(&q->slot_head, memory_order_acquire))
            continue;
        if (q->timeline) {
            semaphores[n] = q->timeline;
            values[n] = tail + 1;
        } else {
            fences[n] = q->slots[tail % GPU_SLOTS].fence;
        }
        n++;
    }
    if (n == 0)
        return false;
    VkResult r;
    if (dev->timeline_semaphores) {
        const VkSemaphoreWaitInfo info = {
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
            .flags = VK_SEMAPHORE_WAIT_ANY_BIT,
            .semaphoreCount = n,
            .pSemaphores = semaphores,
            .pValues = values,
        };
        r = dev->wait_semaphores(dev->device, &info, timeout_ns);
    } else {
        r = dev->vk.WaitForFences(dev->device, n, fences, VK_FALSE, timeout_ns);
    }
    if (r == VK_ERROR_DEVICE_LOST)
        gpu_device_lost(dev, "waiting for the layer's own completion signal");
    return true;
}

static void read_all(struct device_data *dev)
{
    for (unsigned i = 0; i < MAX_QUEUES; i++) {
        struct queue_data *q = atomic_load_explicit(&dev->queues[i].item, memory_order_acquire);
        if (q)
            queue_read_completed(dev, q);
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

static void *reader_main(void *arg)
{
    struct device_data *dev = arg;
    while (!atomic_load(&dev->reader_stop) && !atomic_load(&dev->lost)) {
        if (wait_any_pending(dev, READER_WAIT_NS)) {
            read_all(dev);
            continue;
        }
        /* Nothing in flight: sleep until a submit wakes us (it only signals while we say we
         * are idle, so a busy app makes no system call for us), or a while passes. */
        pthread_mutex_lock(&dev->reader_lock);
        atomic_store(&dev->reader_idle, true);
        struct timespec until = deadline_after(CLOCK_MONOTONIC, READER_WAIT_NS);
        if (!atomic_load(&dev->reader_stop))
            pthread_cond_timedwait(&dev->reader_wake, &dev->reader_lock, &until);
        atomic_store(&dev->reader_idle, false);
        pthread_mutex_unlock(&dev->reader_lock);
        read_all(dev);
    }
    return NULL;
}

void gpu_reader_start(struct device_data *dev)
{
    if (!layer_config.gpu_timing || dev->reader_started)
        return;
    fscope_worker_cond_init(&dev->reader_wake);
    pthread_mutex_init(&dev->reader_lock, NULL);
    int err = fscope_worker_spawn(&dev->reader, "fscope-gpu", reader_main, dev);
    if (err != 0) {
        pthread_cond_destroy(&dev->reader_wake);
        pthread_mutex_destroy(&dev->reader_lock);
        fscope_record_note("cannot start the GPU timestamp reader (%s): GPU not timed",
                           strerror(err));
        return;
    }
    dev->reader_started = true;
}

static void reader_signal_stop(struct device_data *dev)
{
    pthread_mutex_lock(&dev->reader_lock);
    atomic_store(&dev->reader_stop, true);
    pthread_cond_signal(&dev->reader_wake);
    pthread_mutex_unlock(&dev->reader_lock);
}

void gpu_reader_stop(struct device_data *dev)
{
    if (!dev->reader_started)
        return;
    reader_signal_stop(dev);
    pthread_join(dev->reader, NULL);
    dev->reader_started = false;
    pthread_cond_destroy(&dev->reader_wake);
    pthread_mutex_destroy(&dev->reader_lock);
    /* The app idled the device before destroying it; read what is left, bounded. */
    int64_t deadline = fscope_ticks_to_mono_ns(fscope_now()) + TEARDOWN_WAIT_NS;
    for (;;) {
        read_all(dev);
        int64_t left = deadline - fscope_ticks_to_mono_ns(fscope_now());
        if (atomic_load(&dev->lost) || left <= 0 || !wait_any_pending(dev, (uint64_t)left))
            break;
    }
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

/* Returns the slot for the next submission, or NULL (counted) when it goes untimed. Never
 * waits: a slot is free only once the reader has seen our completion signal for it. */
static struct gpu_slot *slot_acquire(struct device_data *dev, struct queue_data *q,
                                     bool blocked)
{
    if (!q->timing || atomic_load_explicit(&dev->lost, memory_order_relaxed))
        return NULL;
    if (blocked) {
        atomic_fetch_add_explicit(&gpu_stats.unmeasured_unsupported, 1, memory_order_relaxed);
        return NULL;
    }
    uint64_t head = atomic_load_explicit(&q->slot_head, memory_order_relaxed);
    if (head - atomic_load_explicit(&q->slot_tail, memory_order_acquire) >= GPU_SLOTS) {
        atomic_fetch_add_explicit(&gpu_stats.unmeasured_no_slot, 1, memory_order_relaxed);
        return NULL;
    }
    return &q->slots[head % GPU_SLOTS];
}

static void slot_submitted(struct device_data *dev, struct queue_data *q)
{
    atomic_store_explicit(&q->slot_head, atomic_load_explicit(&q->slot_head,
                                                              memory_order_relaxed) + 1,
                          memory_order_release);
    if (atomic_load_explicit(&dev->reader_idle, memory_order_relaxed)) {
        pthread_mutex_lock(&dev->reader_lock);
        pthread_cond_signal(&dev->reader_wake);
        pthread_mutex_unlock(&dev->reader_lock);
    }
}

/* Where there is no timeline semaphore, the slot's fence rides on the app's call when the app
 * passed none (*ret_fence), else on an empty submission of ours right behind it (true). */
static bool fence_goes_separately(const struct queue_data *q, const struct gpu_slot *slot,
                                  VkFence app_fence, VkFence *ret_fence)
{
    *ret_fence = !q->timeline && !app_fence ? slot->fence : app_fence;
    return !q->timeline && app_fence;
}

/* After the app's batches and ours went down: the fallback fence follows if it must, and the
 * slot counts as in flight only once its completion signal is surely on the queue. */
static VkResult after_submit(struct device_data *dev, struct queue_data *q, struct gpu_slot *slot,
                             VkResult r, bool separate_fence)
{
    if (r != VK_SUCCESS) {
        zones_detach(dev, slot);
        return r;
    }
    if (separate_fence && dev->vk.QueueSubmit(q->queue, 0, NULL, slot->fence) != VK_SUCCESS) {
        /* The work is on the queue but we cannot know when it ends: never reuse this slot's
         * command buffers blind. Stop timing this queue. */
        q->timing = false;
        fscope_record_note("could not submit the layer's completion fence: GPU timing stopped "
                           "on queue family %u", q->family);
        return r;
    }
    slot_submitted(dev, q);
    return r;
}

VkResult gpu_submit(struct device_data *dev, struct queue_data *q, uint32_t count,
                    const VkSubmitInfo *submits, VkFence fence)
{
    bool blocked = count == 0;
    for (uint32_t i = 0; i < count && !blocked; i++)
        blocked = chain_blocks_injection(submits[i].pNext);
    struct gpu_slot *slot = count ? slot_acquire(dev, q, blocked) : NULL;
    for (uint32_t i = 0; i < count; i++)
        for (uint32_t k = 0; k < submits[i].commandBufferCount; k++) {
            if (slot)
                zones_attach(slot, submits[i].pCommandBuffers[k]);
            else
                zones_untimed_submit(submits[i].pCommandBuffers[k]);
        }
    if (!slot)
        return dev->vk.QueueSubmit(q->queue, count, submits, fence);

    const VkSubmitInfo *first = &submits[0];
    size_t size = (count + 1) * sizeof(VkSubmitInfo) +
                  (first->commandBufferCount + 1) * sizeof(VkCommandBuffer);
    VkSubmitInfo *copy = scratch_reserve(q, size);
    if (!copy) {
        atomic_fetch_add_explicit(&gpu_stats.unmeasured_no_slot, 1, memory_order_relaxed);
        zones_detach(dev, slot);
        return dev->vk.QueueSubmit(q->queue, count, submits, fence);
    }
    memcpy(copy, submits, count * sizeof(VkSubmitInfo));
    VkCommandBuffer *first_cbs = (VkCommandBuffer *)(copy + count + 1);
    first_cbs[0] = slot->begin_cb;
    memcpy(first_cbs + 1, first->pCommandBuffers, first->commandBufferCount * sizeof(*first_cbs));
    copy[0].pCommandBuffers = first_cbs;
    copy[0].commandBufferCount = first->commandBufferCount + 1;

    uint64_t value = atomic_load_explicit(&q->slot_head, memory_order_relaxed) + 1;
    const VkTimelineSemaphoreSubmitInfo timeline = {
        .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
        .signalSemaphoreValueCount = 1,
        .pSignalSemaphoreValues = &value,
    };
    copy[count] = (VkSubmitInfo){
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .pNext = q->timeline ? &timeline : NULL,
        .commandBufferCount = 1,
        .pCommandBuffers = &slot->end_cb,
        .signalSemaphoreCount = q->timeline ? 1 : 0,
        .pSignalSemaphores = &q->timeline,
    };
    VkFence call_fence;
    bool separate_fence = fence_goes_separately(q, slot, fence, &call_fence);
    return after_submit(dev, q, slot, dev->vk.QueueSubmit(q->queue, count + 1, copy, call_fence),
                        separate_fence);
}

VkResult gpu_submit2(struct device_data *dev, struct queue_data *q, PFN_vkQueueSubmit2 next,
                     uint32_t count, const VkSubmitInfo2 *submits, VkFence fence)
{
    bool blocked = count == 0;
    for (uint32_t i = 0; i < count && !blocked; i++)
        blocked = (submits[i].flags & VK_SUBMIT_PROTECTED_BIT) ||
                  chain_blocks_injection(submits[i].pNext);
    struct gpu_slot *slot = count ? slot_acquire(dev, q, blocked) : NULL;
    for (uint32_t i = 0; i < count; i++)
        for (uint32_t k = 0; k < submits[i].commandBufferInfoCount; k++) {
            if (slot)
                zones_attach(slot, submits[i].pCommandBufferInfos[k].commandBuffer);
            else
                zones_untimed_submit(submits[i].pCommandBufferInfos[k].commandBuffer);
        }
    if (!slot)
        return next(q->queue, count, submits, fence);

    const VkSubmitInfo2 *first = &submits[0];
    size_t size = (count + 1) * sizeof(VkSubmitInfo2) +
                  (first->commandBufferInfoCount + 1) * sizeof(VkCommandBufferSubmitInfo);
    VkSubmitInfo2 *copy = scratch_reserve(q, size);
    if (!copy) {
        atomic_fetch_add_explicit(&gpu_stats.unmeasured_no_slot, 1, memory_order_relaxed);
        zones_detach(dev, slot);
        return next(q->queue, count, submits, fence);
    }
    memcpy(copy, submits, count * sizeof(VkSubmitInfo2));
    VkCommandBufferSubmitInfo *first_infos = (VkCommandBufferSubmitInfo *)(copy + count + 1);
    first_infos[0] = (VkCommandBufferSubmitInfo){
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
        .commandBuffer = slot->begin_cb,
    };
    memcpy(first_infos + 1, first->pCommandBufferInfos,
           first->commandBufferInfoCount * sizeof(*first_infos));
    copy[0].pCommandBufferInfos = first_infos;
    copy[0].commandBufferInfoCount = first->commandBufferInfoCount + 1;

    const VkCommandBufferSubmitInfo end_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
        .commandBuffer = slot->end_cb,
    };
    const VkSemaphoreSubmitInfo signal = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
        .semaphore = q->timeline,
        .value = atomic_load_explicit(&q->slot_head, memory_order_relaxed) + 1,
        .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
    };
    copy[count] = (VkSubmitInfo2){
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
        .commandBufferInfoCount = 1,
        .pCommandBufferInfos = &end_info,
        .signalSemaphoreInfoCount = q->timeline ? 1 : 0,
        .pSignalSemaphoreInfos = &signal,
    };
    VkFence call_fence;
    bool separate_fence = fence_goes_separately(q, slot, fence, &call_fence);
    return after_submit(dev, q, slot, next(q->queue, count + 1, copy, call_fence),
                        separate_fence);
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
