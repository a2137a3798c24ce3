/* GPU timing: a timestamp written before and after each submission, read back without waiting
 * once the GPU has written it, mapped onto CLOCK_MONOTONIC and then onto our ticks.
 *
 * Each queue owns a ring of GPU_SLOTS query pairs with their command buffers recorded once at
 * set-up, so a submit only splices two prerecorded command buffers into the app's batch.
 * Queues are externally synchronised by the app (Vulkan's rule), so a queue's state needs no
 * lock: submit, present and wait-idle on one queue never run at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "gpu_clock.h"
#include "layer.h"
#include "log.h"
#include "report.h"

struct gpu_stats gpu_stats;

static const struct fscope_loc loc_gpu_submit = { "submission", __FILE__, __LINE__, 0, 0 };
static _Atomic unsigned tracks_created;

#define RECALIBRATE_NS 1000000000 /* well inside the 4.3 s wrap of 32 valid bits */

static void calibrate(struct device_data *dev, struct queue_data *q)
{
    if (!dev->calibrated_timestamps)
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

static bool record_slot(struct device_data *dev, struct queue_data *q, unsigned i)
{
    const VkCommandBufferBeginInfo begin = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO };
    struct gpu_slot *s = &q->slots[i];
    if (dev->vk.BeginCommandBuffer(s->begin_cb, &begin) != VK_SUCCESS)
        return false;
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

void gpu_queue_init(struct device_data *dev, struct queue_data *q)
{
    q->timing = false;
    if (!layer_config.gpu_timing || q->family >= dev->family_count)
        return;
    const VkQueueFamilyProperties *family = &dev->families[q->family];
    uint32_t bits = family->timestampValidBits;
    if (bits == 0 || !(family->queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT))) {
        fscope_report_note("queue family %u has no timestamps (timestampValidBits %u): its "
                           "submissions are not GPU-timed", q->family, bits);
        return;
    }
    q->valid_mask = gpu_valid_mask(bits);

    const VkCommandPoolCreateInfo pool_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .queueFamilyIndex = q->family,
    };
    const VkQueryPoolCreateInfo query_info = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = 2 * GPU_SLOTS,
    };
    if (dev->vk.CreateCommandPool(dev->device, &pool_info, NULL, &q->pool) != VK_SUCCESS)
        goto error;
    if (dev->vk.CreateQueryPool(dev->device, &query_info, NULL, &q->query_pool) != VK_SUCCESS)
        goto error_pool;
    if (dev->reset_query_pool && !layer_config.fault_skip_query_reset)
        dev->reset_query_pool(dev->device, q->query_pool, 0, 2 * GPU_SLOTS);
    VkCommandBuffer cbs[2 * GPU_SLOTS];
    const VkCommandBufferAllocateInfo alloc_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = q->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 2 * GPU_SLOTS,
    };
    if (dev->vk.AllocateCommandBuffers(dev->device, &alloc_info, cbs) != VK_SUCCESS)
        goto error_query;
    for (unsigned i = 0; i < 2 * GPU_SLOTS; i++) {
        /* Command buffers we create are dispatchable: the loader must fill their dispatch. */
        if (dev->set_loader_data(dev->device, cbs[i]) != VK_SUCCESS)
            goto error_query;
    }
    for (unsigned i = 0; i < GPU_SLOTS; i++) {
        q->slots[i].begin_cb = cbs[2 * i];
        q->slots[i].end_cb = cbs[2 * i + 1];
        if (!record_slot(dev, q, i))
            goto error_query;
    }
    unsigned n = atomic_fetch_add(&tracks_created, 1);
    char name[32];
    if (n == 0)
        snprintf(name, sizeof(name), "gpu");
    else
        snprintf(name, sizeof(name), "gpu %u", n + 1);
    q->track = fscope_external_create(name);
    q->spans = fscope_span_log_create();
    calibrate(dev, q);
    q->timing = true;
    return;

error_query:
    dev->vk.DestroyQueryPool(dev->device, q->query_pool, NULL);
error_pool:
    dev->vk.DestroyCommandPool(dev->device, q->pool, NULL); /* frees its command buffers */
error:
    q->pool = VK_NULL_HANDLE;
    q->query_pool = VK_NULL_HANDLE;
    fscope_report_note("could not set up GPU timestamps on queue family %u: GPU not timed",
                       q->family);
}

void gpu_device_lost(struct device_data *dev, const char *where)
{
    if (dev->lost)
        return;
    dev->lost = true;
    atomic_fetch_add(&gpu_stats.device_lost, 1);
    fscope_report_note("device lost (reported by %s): GPU timing stopped from there on", where);
}

void gpu_queue_poll(struct device_data *dev, struct queue_data *q)
{
    if (!q->timing || dev->lost)
        return;
    double period = dev->timestamp_period;
    while (q->slot_tail < q->slot_head) {
        unsigned i = (unsigned)(q->slot_tail % GPU_SLOTS);
        uint64_t data[4] = { 0 };
        VkResult r = dev->vk.GetQueryPoolResults(dev->device, q->query_pool, 2 * i, 2,
                                                 sizeof(data), data, 2 * sizeof(uint64_t),
                                                 VK_QUERY_RESULT_64_BIT |
                                                     VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
        if (r == VK_ERROR_DEVICE_LOST) {
            gpu_device_lost(dev, "vkGetQueryPoolResults");
            return;
        }
        if ((r != VK_SUCCESS && r != VK_NOT_READY) || !data[1] || !data[3])
            break; /* not written yet: the ring completes in order, so stop here */
        uint64_t begin = data[0] & q->valid_mask, end = data[2] & q->valid_mask;
        if (!q->calibration.anchored) {
            /* No calibrated timestamps: anchor the span's end to now, the earliest moment we
             * know it had happened. Durations stay exact; placement is late by up to a frame. */
            q->calibration.anchored = true;
            q->calibration.gpu_ticks = end;
            q->calibration.mono_ns = fscope_ticks_to_mono_ns(fscope_now());
            atomic_fetch_add(&gpu_stats.estimated_queues, 1);
        }
        uint64_t b = fscope_mono_ns_to_ticks(gpu_to_mono(q, period, begin));
        uint64_t e = fscope_mono_ns_to_ticks(gpu_to_mono(q, period, end));
        if (e < b)
            e = b;
        uint64_t clamped_before = q->track ? q->track->spans_clamped : 0;
        fscope_external_span(q->track, &loc_gpu_submit, b, e);
        if (q->track && q->track->spans_clamped != clamped_before)
            atomic_fetch_add(&gpu_stats.clamped, 1);
        fscope_span_log_add(q->spans, b, e);
        atomic_fetch_add_explicit(&gpu_stats.measured, 1, memory_order_relaxed);
        q->slot_tail++;
    }
    if (q->calibration.calibrated &&
        fscope_ticks_to_mono_ns(fscope_now()) - q->calibration.taken_mono_ns > RECALIBRATE_NS)
        calibrate(dev, q);
}

void gpu_queue_finish(struct device_data *dev, struct queue_data *q)
{
    if (q->timing) {
        gpu_queue_poll(dev, q);
        atomic_fetch_add(&gpu_stats.in_flight_at_teardown, q->slot_head - q->slot_tail);
    }
    if (q->query_pool)
        dev->vk.DestroyQueryPool(dev->device, q->query_pool, NULL);
    if (q->pool)
        dev->vk.DestroyCommandPool(dev->device, q->pool, NULL);
    q->timing = false;
}

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

/* Returns the slot for the next submission, or NULL (counted) when it goes untimed. */
static struct gpu_slot *slot_acquire(struct device_data *dev, struct queue_data *q,
                                     bool blocked)
{
    if (!q->timing || dev->lost)
        return NULL;
    if (blocked) {
        atomic_fetch_add_explicit(&gpu_stats.unmeasured_unsupported, 1, memory_order_relaxed);
        return NULL;
    }
    gpu_queue_poll(dev, q);
    if (q->slot_head - q->slot_tail >= GPU_SLOTS) {
        atomic_fetch_add_explicit(&gpu_stats.unmeasured_no_slot, 1, memory_order_relaxed);
        return NULL;
    }
    unsigned i = (unsigned)(q->slot_head % GPU_SLOTS);
    /* Reset when the slot is reused, not when it was read: by now the app has waited on the
     * work that used it (the validation layer only retires a submission at such a wait). */
    if (dev->reset_query_pool && q->slot_head >= GPU_SLOTS && !layer_config.fault_skip_query_reset)
        dev->reset_query_pool(dev->device, q->query_pool, 2 * i, 2);
    return &q->slots[i];
}

VkResult gpu_submit(struct device_data *dev, struct queue_data *q, uint32_t count,
                    const VkSubmitInfo *submits, VkFence fence)
{
    bool blocked = count == 0;
    for (uint32_t i = 0; i < count && !blocked; i++)
        blocked = chain_blocks_injection(submits[i].pNext);
    struct gpu_slot *slot = count ? slot_acquire(dev, q, blocked) : NULL;
    if (!slot)
        return dev->vk.QueueSubmit(q->queue, count, submits, fence);

    const VkSubmitInfo *first = &submits[0], *last = &submits[count - 1];
    size_t cb_count = first->commandBufferCount + 1 + (count == 1 ? 1 : last->commandBufferCount + 1);
    size_t size = count * sizeof(VkSubmitInfo) + cb_count * sizeof(VkCommandBuffer);
    VkSubmitInfo *copy = scratch_reserve(q, size);
    if (!copy) {
        atomic_fetch_add_explicit(&gpu_stats.unmeasured_no_slot, 1, memory_order_relaxed);
        return dev->vk.QueueSubmit(q->queue, count, submits, fence);
    }
    memcpy(copy, submits, count * sizeof(VkSubmitInfo));
    VkCommandBuffer *cbs = (VkCommandBuffer *)(copy + count);

    VkCommandBuffer *first_cbs = cbs;
    first_cbs[0] = slot->begin_cb;
    memcpy(first_cbs + 1, first->pCommandBuffers, first->commandBufferCount * sizeof(*cbs));
    copy[0].pCommandBuffers = first_cbs;
    copy[0].commandBufferCount = first->commandBufferCount + 1;
    if (count == 1) {
        first_cbs[copy[0].commandBufferCount] = slot->end_cb;
        copy[0].commandBufferCount++;
    } else {
        VkCommandBuffer *last_cbs = first_cbs + first->commandBufferCount + 1;
        memcpy(last_cbs, last->pCommandBuffers, last->commandBufferCount * sizeof(*cbs));
        last_cbs[last->commandBufferCount] = slot->end_cb;
        copy[count - 1].pCommandBuffers = last_cbs;
        copy[count - 1].commandBufferCount = last->commandBufferCount + 1;
    }
    VkResult r = dev->vk.QueueSubmit(q->queue, count, copy, fence);
    if (r == VK_SUCCESS)
        q->slot_head++;
    return r;
}

VkResult gpu_submit2(struct device_data *dev, struct queue_data *q, PFN_vkQueueSubmit2 next,
                     uint32_t count, const VkSubmitInfo2 *submits, VkFence fence)
{
    bool blocked = count == 0;
    for (uint32_t i = 0; i < count && !blocked; i++)
        blocked = (submits[i].flags & VK_SUBMIT_PROTECTED_BIT) ||
                  chain_blocks_injection(submits[i].pNext);
    struct gpu_slot *slot = count ? slot_acquire(dev, q, blocked) : NULL;
    if (!slot)
        return next(q->queue, count, submits, fence);

    const VkSubmitInfo2 *first = &submits[0], *last = &submits[count - 1];
    size_t cb_count = first->commandBufferInfoCount + 1 +
                      (count == 1 ? 1 : last->commandBufferInfoCount + 1);
    size_t size = count * sizeof(VkSubmitInfo2) + cb_count * sizeof(VkCommandBufferSubmitInfo);
    VkSubmitInfo2 *copy = scratch_reserve(q, size);
    if (!copy) {
        atomic_fetch_add_explicit(&gpu_stats.unmeasured_no_slot, 1, memory_order_relaxed);
        return next(q->queue, count, submits, fence);
    }
    memcpy(copy, submits, count * sizeof(VkSubmitInfo2));
    VkCommandBufferSubmitInfo *infos = (VkCommandBufferSubmitInfo *)(copy + count);
    const VkCommandBufferSubmitInfo ours_begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
        .commandBuffer = slot->begin_cb,
    };
    const VkCommandBufferSubmitInfo ours_end = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
        .commandBuffer = slot->end_cb,
    };
    VkCommandBufferSubmitInfo *first_infos = infos;
    first_infos[0] = ours_begin;
    memcpy(first_infos + 1, first->pCommandBufferInfos,
           first->commandBufferInfoCount * sizeof(*infos));
    copy[0].pCommandBufferInfos = first_infos;
    copy[0].commandBufferInfoCount = first->commandBufferInfoCount + 1;
    if (count == 1) {
        first_infos[copy[0].commandBufferInfoCount] = ours_end;
        copy[0].commandBufferInfoCount++;
    } else {
        VkCommandBufferSubmitInfo *last_infos = first_infos + first->commandBufferInfoCount + 1;
        memcpy(last_infos, last->pCommandBufferInfos,
               last->commandBufferInfoCount * sizeof(*infos));
        last_infos[last->commandBufferInfoCount] = ours_end;
        copy[count - 1].pCommandBufferInfos = last_infos;
        copy[count - 1].commandBufferInfoCount = last->commandBufferInfoCount + 1;
    }
    VkResult r = next(q->queue, count, copy, fence);
    if (r == VK_SUCCESS)
        q->slot_head++;
    return r;
}

void gpu_report_notes(void)
{
    uint64_t measured = atomic_load(&gpu_stats.measured);
    uint64_t no_slot = atomic_load(&gpu_stats.unmeasured_no_slot);
    uint64_t unsupported = atomic_load(&gpu_stats.unmeasured_unsupported);
    uint64_t in_flight = atomic_load(&gpu_stats.in_flight_at_teardown);
    if (!layer_config.gpu_timing) {
        fscope_report_note("GPU timing off (FRAMESCOPE_GPU=off): gpu busy reads 0");
        return;
    }
    fscope_report_note("GPU timing: %llu submissions timed; untimed: %llu (no free query slot), "
                       "%llu (device-group or protected), %llu (in flight at teardown)",
                       (unsigned long long)measured, (unsigned long long)no_slot,
                       (unsigned long long)unsupported, (unsigned long long)in_flight);
    if (atomic_load(&gpu_stats.calibrated_queues))
        fscope_report_note("GPU clock mapped with VK_EXT_calibrated_timestamps, re-calibrated "
                           "every second");
    if (atomic_load(&gpu_stats.estimated_queues))
        fscope_report_note("GPU clock not calibrated (no VK_EXT_calibrated_timestamps): span "
                           "durations are exact, their placement is late by up to a frame");
    if (atomic_load(&gpu_stats.clamped))
        fscope_report_note("%llu GPU spans overlapped the previous one on their queue and were "
                           "clamped", (unsigned long long)atomic_load(&gpu_stats.clamped));
    fscope_report_note("a submission's GPU span runs from its first command's start to its last "
                       "command's end, so it includes any semaphore wait inside it");
}
