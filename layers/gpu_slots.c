/* GPU timing's per-queue state: a queue's track, its chunks of slots (query pairs and the
 * command buffers that write them, recorded once), its clock calibration, and whether a
 * slot's submission is complete. */
#include <stdio.h>
#include <stdlib.h>

#include "gpu.h"
#include "record/clock.h"
#include "record/meta.h"
#include "util/log.h"
#include "record/frame.h"
#include "record/gpu_clock.h"

/* ---- tracks -------------------------------------------------------------------------------
 * A track is a row in the trace and the zone tree, with the span log behind it. A queue holds
 * one while it lives; a destroyed device's tracks are taken by the next queues, so a program
 * that creates and destroys devices in a loop never runs out. Spans carry their device's id,
 * so a reused track still tells devices apart. */

#define MAX_TRACKS 64 /* queues timed at once, over all devices */

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

/* ---- clock mapping ---------------------------------------------------------------------- */

/* Maps q's timestamps onto CLOCK_MONOTONIC from a calibrated pair (the queue's set-up, then
 * the reader every second); nothing without VK_EXT_calibrated_timestamps. */
void gpu_calibrate(struct device_data *dev, struct queue_data *q)
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
bool gpu_slots_grow(struct device_data *dev, struct queue_data *q)
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
    if (!gpu_slots_grow(dev, q))
        goto error_semaphore;
    q->signal_gap_ticks = fscope_ns_to_ticks(SIGNAL_GAP_NS);
    gpu_calibrate(dev, q); /* here, before the reader sees the queue; then every second there */
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
    for (uint32_t i = 0, n = gpu_chunks_reserved(q); i < n; i++)
        chunk_destroy(dev, atomic_exchange(&q->chunks[i], NULL));
    track_give_back(q->track);
    q->track = NULL;
    q->timing = false;
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
