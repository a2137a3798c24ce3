/* Frame hooks: every call that can block is timed as a block of the calling thread; a present
 * closes the surface's frame; command recording is counted per thread. */
#include <stdlib.h>
#include <string.h>

#include "record/clock.h"
#include "layer.h"
#include "util/log.h"
#include "record/meta.h"
#include "record/objects.h"

static const struct fscope_loc loc_acquire = { "vkAcquireNextImageKHR", __FILE__, __LINE__, 0, 0 };
static const struct fscope_loc loc_present_wait = { "vkWaitForPresentKHR", __FILE__, __LINE__, 0,
                                                    0 };
static const struct fscope_loc loc_present = { "vkQueuePresentKHR", __FILE__, __LINE__, 0, 0 };
static const struct fscope_loc loc_fence = { "vkWaitForFences", __FILE__, __LINE__, 0, 0 };
static const struct fscope_loc loc_semaphore = { "vkWaitSemaphores", __FILE__, __LINE__, 0, 0 };
static const struct fscope_loc loc_queue_idle = { "vkQueueWaitIdle", __FILE__, __LINE__, 0, 0 };
static const struct fscope_loc loc_device_idle = { "vkDeviceWaitIdle", __FILE__, __LINE__, 0, 0 };
static const struct fscope_loc loc_submit = { "vkQueueSubmit", __FILE__, __LINE__, 1, 0 };
static const struct fscope_loc loc_frame_marker = { "present", __FILE__, __LINE__, 0,
                                                    FSCOPE_LOC_INSTANT };

static void note_result(struct device_data *dev, VkResult r, const char *where)
{
    if (r == VK_ERROR_DEVICE_LOST)
        gpu_device_lost(dev, where);
}

/* ---- the app's own pipeline statistics queries ----
 * A pass inside one gets no statistics query of ours (two active queries of one type are
 * invalid): its pools are remembered, and its begins and ends counted per command buffer. */

#define STATS_POOLS 256
static _Atomic uint64_t stats_pools[STATS_POOLS];
static _Atomic uint32_t stats_pool_count;
static pthread_mutex_t stats_pools_lock = PTHREAD_MUTEX_INITIALIZER;

static bool is_stats_pool(VkQueryPool pool)
{
    uint32_t n = atomic_load_explicit(&stats_pool_count, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        if (atomic_load_explicit(&stats_pools[i], memory_order_relaxed) == (uint64_t)pool)
            return true;
    return false;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateQueryPool(
    VkDevice device, const VkQueryPoolCreateInfo *info, const VkAllocationCallbacks *alloc,
    VkQueryPool *ret)
{
    VkResult r = device_lookup(device)->vk.CreateQueryPool(device, info, alloc, ret);
    if (r == VK_SUCCESS && info->queryType == VK_QUERY_TYPE_PIPELINE_STATISTICS) {
        pthread_mutex_lock(&stats_pools_lock);
        uint32_t n = atomic_load(&stats_pool_count), i = 0;
        while (i < n && atomic_load(&stats_pools[i]))
            i++;
        if (i < STATS_POOLS) {
            atomic_store(&stats_pools[i], (uint64_t)*ret);
            if (i == n)
                atomic_store_explicit(&stats_pool_count, n + 1, memory_order_release);
        }
        pthread_mutex_unlock(&stats_pools_lock);
    }
    return r;
}

static VKAPI_ATTR void VKAPI_CALL framescope_DestroyQueryPool(VkDevice device, VkQueryPool pool,
                                                              const VkAllocationCallbacks *alloc)
{
    if (pool) {
        pthread_mutex_lock(&stats_pools_lock);
        uint32_t n = atomic_load(&stats_pool_count);
        for (uint32_t i = 0; i < n; i++)
            if (atomic_load(&stats_pools[i]) == (uint64_t)pool)
                atomic_store(&stats_pools[i], 0);
        pthread_mutex_unlock(&stats_pools_lock);
    }
    device_lookup(device)->vk.DestroyQueryPool(device, pool, alloc);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdBeginQuery(VkCommandBuffer cb, VkQueryPool pool,
                                                           uint32_t query,
                                                           VkQueryControlFlags flags)
{
    if (is_stats_pool(pool))
        zones_app_stats_query(cb, true);
    commands_counted(cb);
    device_lookup(cb)->vk.CmdBeginQuery(cb, pool, query, flags);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdEndQuery(VkCommandBuffer cb, VkQueryPool pool,
                                                         uint32_t query)
{
    commands_counted(cb);
    device_lookup(cb)->vk.CmdEndQuery(cb, pool, query);
    if (is_stats_pool(pool))
        zones_app_stats_query(cb, false);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdBeginQueryIndexedEXT(
    VkCommandBuffer cb, VkQueryPool pool, uint32_t query, VkQueryControlFlags flags,
    uint32_t index)
{
    if (is_stats_pool(pool))
        zones_app_stats_query(cb, true);
    commands_counted(cb);
    device_lookup(cb)->vk.CmdBeginQueryIndexedEXT(cb, pool, query, flags, index);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdEndQueryIndexedEXT(VkCommandBuffer cb,
                                                                   VkQueryPool pool,
                                                                   uint32_t query,
                                                                   uint32_t index)
{
    commands_counted(cb);
    device_lookup(cb)->vk.CmdEndQueryIndexedEXT(cb, pool, query, index);
    if (is_stats_pool(pool))
        zones_app_stats_query(cb, false);
}

/* ---- work that stalls a frame on its thread (the hitches' evidence) ---- */

/* Charges ticks since start and n objects to this thread's counters. */
static void evidence(enum fscope_counter ticks, enum fscope_counter objects, uint64_t start,
                     uint64_t n)
{
    struct fscope_collector *c = fscope_thread_collector();
    if (!c)
        return;
    fscope_collector_count(c, ticks, fscope_now() - start);
    fscope_collector_count(c, objects, n);
}

/* Pipeline creation feedback: each create info is copied with a VkPipelineCreationFeedback-
 * CreateInfo of ours in front of its chain (the app's structs are never written), unless the
 * app chained one itself, which is then read. After the call, the driver says per pipeline
 * whether it came from the app's pipeline cache and how long it took to make. */
struct feedback {
    void *infos;                         /* the copies, or NULL: the app's infos go down */
    VkPipelineCreationFeedbackCreateInfo *ours;
    VkPipelineCreationFeedback *pipelines, *stages;
    const VkPipelineCreationFeedbackCreateInfo **read; /* per pipeline: ours or the app's */
};

static const VkPipelineCreationFeedbackCreateInfo *app_feedback(const void *pnext)
{
    for (const VkBaseInStructure *s = pnext; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO)
            return (const VkPipelineCreationFeedbackCreateInfo *)s;
    return NULL;
}

/* Copies count infos of info_size bytes (whose pNext sits at pnext_offset and whose stage
 * count is stages(info)) with our feedback in front. False: out of memory, nothing to read. */
static bool feedback_prepare(struct feedback *fb, const void *infos, uint32_t count,
                             size_t info_size, uint32_t (*stages)(const void *))
{
    memset(fb, 0, sizeof(*fb));
    uint32_t total_stages = 0;
    for (uint32_t i = 0; i < count; i++)
        total_stages += stages((const char *)infos + i * info_size);
    fb->infos = malloc(count * info_size);
    fb->ours = calloc(count, sizeof(*fb->ours));
    fb->pipelines = calloc(count, sizeof(*fb->pipelines));
    fb->stages = calloc(total_stages ? total_stages : 1, sizeof(*fb->stages));
    fb->read = calloc(count, sizeof(*fb->read));
    if (!fb->infos || !fb->ours || !fb->pipelines || !fb->stages || !fb->read) {
        free(fb->infos);
        fb->infos = NULL;
        return false;
    }
    memcpy(fb->infos, infos, count * info_size);
    for (uint32_t i = 0, at = 0; i < count; i++) {
        VkBaseOutStructure *info = (VkBaseOutStructure *)((char *)fb->infos + i * info_size);
        fb->read[i] = app_feedback(info->pNext);
        if (fb->read[i])
            continue;
        uint32_t n = stages(info);
        fb->ours[i] = (VkPipelineCreationFeedbackCreateInfo){
            .sType = VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO,
            .pNext = info->pNext,
            .pPipelineCreationFeedback = &fb->pipelines[i],
            .pipelineStageCreationFeedbackCount = n,
            .pPipelineStageCreationFeedbacks = n ? &fb->stages[at] : NULL,
        };
        at += n;
        info->pNext = (VkBaseOutStructure *)&fb->ours[i];
        fb->read[i] = &fb->ours[i];
    }
    return true;
}

/* Counts what the driver reported, records each pipeline made (with it, where given), and
 * lets the copies go. */
static void feedback_finish(struct feedback *fb, struct device_data *dev, uint32_t count,
                            VkResult r, const VkPipeline *made, uint64_t start)
{
    struct fscope_collector *c = fscope_thread_collector();
    uint64_t reported = 0, hits = 0, ns = 0, end = fscope_now();
    for (uint32_t i = 0; r >= 0 && made && i < count; i++) {
        if (!made[i])
            continue;
        const VkPipelineCreationFeedback *p = fb->infos ? fb->read[i]->pPipelineCreationFeedback
                                                        : NULL;
        uint32_t flags = 0;
        uint64_t driver_ns = 0;
        if (p && (p->flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT)) {
            reported++;
            flags |= PIPELINE_CREATED_FEEDBACK;
            if (p->flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT) {
                hits++;
                flags |= PIPELINE_CREATED_CACHE_HIT;
            }
            ns += p->duration;
            driver_ns = p->duration;
        }
        fscope_pipeline_created(dev->id, (uint64_t)(uintptr_t)made[i], end, end - start, flags,
                                driver_ns);
    }
    if (c && reported) {
        fscope_collector_count(c, FSCOPE_COUNT_PIPELINES_FEEDBACK, reported);
        fscope_collector_count(c, FSCOPE_COUNT_PIPELINE_CACHE_HITS, hits);
        fscope_collector_count(c, FSCOPE_COUNT_PIPELINE_DRIVER_NS, ns);
    }
    free(fb->infos);
    free(fb->ours);
    free(fb->pipelines);
    free(fb->stages);
    free(fb->read);
}

static uint32_t graphics_stages(const void *info)
{
    return ((const VkGraphicsPipelineCreateInfo *)info)->stageCount;
}

static uint32_t compute_stages(const void *info)
{
    (void)info;
    return 1;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateGraphicsPipelines(
    VkDevice device, VkPipelineCache cache, uint32_t count,
    const VkGraphicsPipelineCreateInfo *infos, const VkAllocationCallbacks *alloc,
    VkPipeline *ret)
{
    struct device_data *dev = device_lookup(device);
    struct feedback fb = { 0 };
    if (dev->creation_feedback && count)
        feedback_prepare(&fb, infos, count, sizeof(*infos), graphics_stages);
    uint64_t start = fscope_now();
    VkResult r = dev->vk.CreateGraphicsPipelines(device, cache, count,
                                                 fb.infos ? fb.infos : (const void *)infos,
                                                 alloc, ret);
    evidence(FSCOPE_COUNT_PIPELINE_TICKS, FSCOPE_COUNT_PIPELINES, start, count);
    feedback_finish(&fb, dev, count, r, ret, start);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateComputePipelines(
    VkDevice device, VkPipelineCache cache, uint32_t count,
    const VkComputePipelineCreateInfo *infos, const VkAllocationCallbacks *alloc,
    VkPipeline *ret)
{
    struct device_data *dev = device_lookup(device);
    struct feedback fb = { 0 };
    if (dev->creation_feedback && count)
        feedback_prepare(&fb, infos, count, sizeof(*infos), compute_stages);
    uint64_t start = fscope_now();
    VkResult r = dev->vk.CreateComputePipelines(device, cache, count,
                                                fb.infos ? fb.infos : (const void *)infos,
                                                alloc, ret);
    evidence(FSCOPE_COUNT_PIPELINE_TICKS, FSCOPE_COUNT_PIPELINES, start, count);
    feedback_finish(&fb, dev, count, r, ret, start);
    return r;
}

/* A deferred operation returns at once and compiles later (on threads the app joins): only
 * the call's own time is charged. */
static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateRayTracingPipelinesKHR(
    VkDevice device, VkDeferredOperationKHR deferred, VkPipelineCache cache, uint32_t count,
    const VkRayTracingPipelineCreateInfoKHR *infos, const VkAllocationCallbacks *alloc,
    VkPipeline *ret)
{
    struct device_data *dev = device_lookup(device);
    uint64_t start = fscope_now();
    VkResult r = dev->vk.CreateRayTracingPipelinesKHR(device, deferred, cache, count, infos,
                                                      alloc, ret);
    evidence(FSCOPE_COUNT_PIPELINE_TICKS, FSCOPE_COUNT_PIPELINES, start, count);
    if (r == VK_SUCCESS) { /* deferred: the handles are not made yet */
        struct feedback none = { 0 };
        feedback_finish(&none, dev, count, r, ret, start);
    }
    return r;
}

_Static_assert(OBJECT_TYPE_PIPELINE == VK_OBJECT_TYPE_PIPELINE, "the recording's pipeline type");

/* Names the app gives its objects: recorded (latest last) for analysis to name what a frame
 * made; passed down untouched. */
/* A name for the recording's object table; a queue's also names its GPU track, a render
 * pass's its GPU zone. */
static void object_named(struct device_data *dev, int32_t type, uint64_t handle,
                         const char *name)
{
    fscope_object_name(dev->id, type, handle, name);
    if (type == VK_OBJECT_TYPE_QUEUE) {
        gpu_queue_named(queue_lookup(dev, (VkQueue)(uintptr_t)handle), name);
    } else if (type == VK_OBJECT_TYPE_RENDER_PASS) {
        struct render_pass_info *pass = table_find(dev->render_passes, MAX_RENDER_PASSES, handle);
        if (pass)
            snprintf(pass->name, sizeof(pass->name), "%s", name ? name : "");
    }
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_SetDebugUtilsObjectNameEXT(
    VkDevice device, const VkDebugUtilsObjectNameInfoEXT *info)
{
    struct device_data *dev = device_lookup(device);
    if (info)
        object_named(dev, (int32_t)info->objectType, info->objectHandle, info->pObjectName);
    return dev->vk.SetDebugUtilsObjectNameEXT(device, info);
}

/* VK_EXT_debug_marker's object types have the core types' values for core objects. */
static VKAPI_ATTR VkResult VKAPI_CALL framescope_DebugMarkerSetObjectNameEXT(
    VkDevice device, const VkDebugMarkerObjectNameInfoEXT *info)
{
    struct device_data *dev = device_lookup(device);
    if (info)
        object_named(dev, (int32_t)info->objectType, info->object, info->pObjectName);
    return dev->vk.DebugMarkerSetObjectNameEXT(device, info);
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateShaderModule(
    VkDevice device, const VkShaderModuleCreateInfo *info, const VkAllocationCallbacks *alloc,
    VkShaderModule *ret)
{
    struct device_data *dev = device_lookup(device);
    uint64_t start = fscope_now();
    VkResult r = dev->vk.CreateShaderModule(device, info, alloc, ret);
    evidence(FSCOPE_COUNT_SHADER_TICKS, FSCOPE_COUNT_SHADERS, start, 1);
    return r;
}

/* ---- submission ------------------------------------------------------------------------- */

static void count_submit(uint32_t command_buffers)
{
    struct fscope_collector *c = fscope_thread_collector();
    if (!c)
        return;
    fscope_collector_count(c, FSCOPE_COUNT_SUBMITS, 1);
    fscope_collector_count(c, FSCOPE_COUNT_COMMAND_BUFFERS, command_buffers);
}

/* vkQueueSubmit and vkQueueSubmit2 (core or KHR), through one view of their batches: what
 * the command buffers recorded is charged to this thread's frame, the call is timed, and the
 * submission is GPU-timed on a queue the layer knows. */
static VkResult submit(struct device_data *dev, VkQueue queue, const struct gpu_submission *sub,
                       const char *where)
{
    struct queue_data *q = queue_lookup(dev, queue);
    uint32_t command_buffers = 0;
    struct fscope_collector *c = fscope_thread_collector();
    for (uint32_t i = 0; i < sub->count; i++) {
        uint32_t n = gpu_submission_cb_count(sub, i);
        command_buffers += n;
        for (uint32_t j = 0; c && j < n; j++)
            commands_submitted(c, gpu_submission_cb(sub, i, j));
    }
    count_submit(command_buffers);
    fscope_zone_begin(&loc_submit);
    uint64_t start = fscope_now();
    VkResult r = q ? gpu_submit(dev, q, sub)
                   : gpu_submission_down(dev, queue, sub, gpu_submission_batches(sub));
    if (c)
        fscope_collector_count(c, FSCOPE_COUNT_SUBMIT_TICKS, fscope_now() - start);
    fscope_zone_end();
    note_result(dev, r, where);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_QueueSubmit(VkQueue queue, uint32_t count,
                                                             const VkSubmitInfo *submits,
                                                             VkFence fence)
{
    const struct gpu_submission sub = { .count = count, .submits = submits, .fence = fence };
    return submit(device_lookup(queue), queue, &sub, "vkQueueSubmit");
}

static VkResult submit2(VkQueue queue, uint32_t count, const VkSubmitInfo2 *submits,
                        VkFence fence, bool khr)
{
    struct device_data *dev = device_lookup(queue);
    const struct gpu_submission sub = {
        .count = count,
        .submits2 = submits,
        .submit2 = khr ? dev->vk.QueueSubmit2KHR : dev->vk.QueueSubmit2,
        .fence = fence,
    };
    return submit(dev, queue, &sub, "vkQueueSubmit2");
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_QueueSubmit2(VkQueue queue, uint32_t count,
                                                              const VkSubmitInfo2 *submits,
                                                              VkFence fence)
{
    return submit2(queue, count, submits, fence, false);
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_QueueSubmit2KHR(VkQueue queue, uint32_t count,
                                                                 const VkSubmitInfo2 *submits,
                                                                 VkFence fence)
{
    return submit2(queue, count, submits, fence, true);
}

/* ---- present and acquire ------------------------------------------------------------------ */

static VKAPI_ATTR VkResult VKAPI_CALL framescope_QueuePresentKHR(VkQueue queue,
                                                                 const VkPresentInfoKHR *info)
{
    struct device_data *dev = device_lookup(queue);
    /* The cap waits before the frame closes: its wait is part of the frame it paces, and the
     * frame boundary is the moment the present is released down the chain. */
    struct swapchain_data *first = info->swapchainCount
                                       ? swapchain_lookup(dev, info->pSwapchains[0]) : NULL;
    if (first && first->surface && first->surface->cap) {
        struct fscope_cap *cap = first->surface->cap;
        if (layer_config.cap_mode == CAP_AUTO) {
            /* Pace to the output the frames are shown on, once we know it. */
            double hz = fscope_frame_log_shown_refresh_hz(first->surface->frames);
            if (hz >= CAP_MIN_HZ && hz <= CAP_MAX_HZ) {
                fscope_cap_target_hz(cap, hz);
                fscope_cap_phase_lock(cap,
                                      fscope_frame_log_last_shown_ticks(first->surface->frames));
            }
        }
        fscope_cap_pace(cap);
    }
    uint64_t now = fscope_now();
    /* Looked up once, used before and after the call down. A present of more swapchains than
     * this is rare; the rest still close their frames, only without the return stamp. */
    enum { TRACKED = 4 };
    struct swapchain_data *swapchains[TRACKED] = { NULL };
    struct fscope_frame *frames[TRACKED] = { NULL };
    for (uint32_t i = 0; i < info->swapchainCount; i++) {
        struct swapchain_data *sc = i == 0 && first ? first
                                                     : swapchain_lookup(dev, info->pSwapchains[i]);
        if (!sc || !sc->surface)
            continue;
        sc->presents++;
        const struct fscope_frame_origin origin = {
            .swapchain_serial = sc->serial,
            .device_id = sc->device_id,
            .present_mode = sc->present_mode,
            .swapchain_presents = sc->presents,
            .spans = sc->pending,
            .span_count = sc->pending_count,
        };
        struct fscope_frame *frame = fscope_frame_log_close(sc->surface->frames, now, &origin);
        sc->pending_count = 0;
        if (i < TRACKED) {
            swapchains[i] = sc;
            frames[i] = frame;
        }
    }
    fscope_instant(&loc_frame_marker, now);
    if (!atomic_load_explicit(&dev->presents_seen, memory_order_relaxed))
        atomic_store_explicit(&dev->presents_seen, true, memory_order_relaxed);
    gpu_sample_presented(dev, now);

    uint64_t start = fscope_block_begin(&loc_present);
    VkResult r = dev->vk.QueuePresentKHR(queue, info);
    uint64_t returned = start + fscope_block_end(FSCOPE_BLOCK_PRESENT, start);
    note_result(dev, r, "vkQueuePresentKHR");
    for (uint32_t i = 0; i < info->swapchainCount; i++) {
        struct swapchain_data *sc = i < TRACKED ? swapchains[i]
                                                : swapchain_lookup(dev, info->pSwapchains[i]);
        /* With several swapchains, each has its own result; else the call's is theirs. */
        VkResult own = info->pResults ? info->pResults[i] : r;
        if (sc && sc->surface)
            fscope_frame_log_presented(sc->surface->frames, i < TRACKED ? frames[i] : NULL,
                                       returned, own < 0);
    }
    return r;
}

/* A block of whatever thread, charged to the swapchain's next frame. Past the pending array
 * the last interval grows to cover it, which keeps its time in the frame. */
static void charge_to_swapchain(struct device_data *dev, VkSwapchainKHR swapchain,
                                enum fscope_block kind, uint64_t start, uint64_t end)
{
    struct swapchain_data *sc = swapchain_lookup(dev, swapchain);
    if (!sc)
        return;
    if (sc->pending_count < FRAME_ORIGIN_SPANS) {
        sc->pending[sc->pending_count++] =
            (struct fscope_block_span){ .start = start, .end = end, .kind = (uint8_t)kind };
    } else if (end > sc->pending[FRAME_ORIGIN_SPANS - 1].end) {
        sc->pending[FRAME_ORIGIN_SPANS - 1].end = end;
    }
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_AcquireNextImageKHR(
    VkDevice device, VkSwapchainKHR swapchain, uint64_t timeout, VkSemaphore semaphore,
    VkFence fence, uint32_t *index)
{
    struct device_data *dev = device_lookup(device);
    uint64_t start = fscope_block_begin(&loc_acquire);
    VkResult r = dev->vk.AcquireNextImageKHR(device, swapchain, timeout, semaphore, fence, index);
    charge_to_swapchain(dev, swapchain, FSCOPE_BLOCK_ACQUIRE, start,
                        fscope_block_end_uncharged());
    note_result(dev, r, "vkAcquireNextImageKHR");
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_AcquireNextImage2KHR(
    VkDevice device, const VkAcquireNextImageInfoKHR *info, uint32_t *index)
{
    struct device_data *dev = device_lookup(device);
    uint64_t start = fscope_block_begin(&loc_acquire);
    VkResult r = dev->vk.AcquireNextImage2KHR(device, info, index);
    charge_to_swapchain(dev, info->swapchain, FSCOPE_BLOCK_ACQUIRE, start,
                        fscope_block_end_uncharged());
    note_result(dev, r, "vkAcquireNextImage2KHR");
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_WaitForPresentKHR(VkDevice device,
                                                                   VkSwapchainKHR swapchain,
                                                                   uint64_t present_id,
                                                                   uint64_t timeout)
{
    struct device_data *dev = device_lookup(device);
    uint64_t start = fscope_block_begin(&loc_present_wait);
    VkResult r = dev->vk.WaitForPresentKHR(device, swapchain, present_id, timeout);
    charge_to_swapchain(dev, swapchain, FSCOPE_BLOCK_PRESENT_WAIT, start,
                        fscope_block_end_uncharged());
    note_result(dev, r, "vkWaitForPresentKHR");
    return r;
}

/* ---- waits -------------------------------------------------------------------------------- */

static VKAPI_ATTR VkResult VKAPI_CALL framescope_WaitForFences(VkDevice device, uint32_t count,
                                                               const VkFence *fences,
                                                               VkBool32 wait_all, uint64_t timeout)
{
    struct device_data *dev = device_lookup(device);
    uint64_t start = fscope_block_begin(&loc_fence);
    VkResult r = dev->vk.WaitForFences(device, count, fences, wait_all, timeout);
    fscope_block_end(FSCOPE_BLOCK_FENCE, start);
    note_result(dev, r, "vkWaitForFences");
    return r;
}

static VkResult wait_semaphores(VkDevice device, const VkSemaphoreWaitInfo *info,
                                uint64_t timeout, bool khr)
{
    struct device_data *dev = device_lookup(device);
    PFN_vkWaitSemaphores next = khr ? dev->vk.WaitSemaphoresKHR : dev->vk.WaitSemaphores;
    uint64_t start = fscope_block_begin(&loc_semaphore);
    VkResult r = next(device, info, timeout);
    fscope_block_end(FSCOPE_BLOCK_SEMAPHORE, start);
    note_result(dev, r, "vkWaitSemaphores");
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_WaitSemaphores(VkDevice device,
                                                                const VkSemaphoreWaitInfo *info,
                                                                uint64_t timeout)
{
    return wait_semaphores(device, info, timeout, false);
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_WaitSemaphoresKHR(VkDevice device,
                                                                   const VkSemaphoreWaitInfo *info,
                                                                   uint64_t timeout)
{
    return wait_semaphores(device, info, timeout, true);
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_QueueWaitIdle(VkQueue queue)
{
    struct device_data *dev = device_lookup(queue);
    uint64_t start = fscope_block_begin(&loc_queue_idle);
    VkResult r = dev->vk.QueueWaitIdle(queue);
    fscope_block_end(FSCOPE_BLOCK_IDLE, start);
    note_result(dev, r, "vkQueueWaitIdle");
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_DeviceWaitIdle(VkDevice device)
{
    struct device_data *dev = device_lookup(device);
    uint64_t start = fscope_block_begin(&loc_device_idle);
    VkResult r = dev->vk.DeviceWaitIdle(device);
    fscope_block_end(FSCOPE_BLOCK_IDLE, start);
    note_result(dev, r, "vkDeviceWaitIdle");
    return r;
}

/* ---- render passes and labels: counted, and timed as GPU zones (gpu_zones.c) ---- */

/* Whether a subpass (VkSubpassDescription or VkSubpassDescription2) has a depth/stencil
 * attachment. */
#define SUBPASS_HAS_DEPTH(s)                                                                   \
    ((s)->pDepthStencilAttachment &&                                                           \
     (s)->pDepthStencilAttachment->attachment != VK_ATTACHMENT_UNUSED)

/* A classic render pass made: its zone is named by its first subpass's attachments; with a
 * view mask in any subpass, labels inside it are not timed. */
static void render_pass_created(VkDevice device, VkRenderPass pass, uint32_t colors, bool depth,
                                bool multiview, uint32_t subpasses)
{
    struct device_data *dev = device_lookup(device);
    struct render_pass_info *info = malloc(sizeof(*info));
    if (info)
        *info = (struct render_pass_info){ .colors = colors, .depth = depth,
                                           .multiview = multiview, .subpasses = subpasses };
    if (!info || !table_insert(dev->render_passes, MAX_RENDER_PASSES, &dev->lock,
                               (uint64_t)pass, info)) {
        free(info);
        if (!atomic_exchange(&dev->render_passes_full, true))
            fscope_record_note("more than %d render pass objects on one device: labels inside "
                               "the ones not known are not timed (they may be multiview)",
                               MAX_RENDER_PASSES);
    }
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateRenderPass(
    VkDevice device, const VkRenderPassCreateInfo *info, const VkAllocationCallbacks *alloc,
    VkRenderPass *ret)
{
    VkResult r = device_lookup(device)->vk.CreateRenderPass(device, info, alloc, ret);
    if (r != VK_SUCCESS)
        return r;
    bool multiview = false;
    for (const VkBaseInStructure *p = info->pNext; p; p = p->pNext)
        if (p->sType == VK_STRUCTURE_TYPE_RENDER_PASS_MULTIVIEW_CREATE_INFO) {
            const VkRenderPassMultiviewCreateInfo *mv = (const void *)p;
            for (uint32_t s = 0; s < mv->subpassCount; s++)
                multiview |= mv->pViewMasks[s] != 0;
        }
    const VkSubpassDescription *first = info->subpassCount ? info->pSubpasses : NULL;
    render_pass_created(device, *ret, first ? first->colorAttachmentCount : 0,
                        first && SUBPASS_HAS_DEPTH(first), multiview, info->subpassCount);
    return r;
}

/* vkCreateRenderPass2 and its KHR alias: the call down, then what the pass is. */
static VkResult create_render_pass2(PFN_vkCreateRenderPass2 down, VkDevice device,
                                    const VkRenderPassCreateInfo2 *info,
                                    const VkAllocationCallbacks *alloc, VkRenderPass *ret)
{
    VkResult r = down(device, info, alloc, ret);
    if (r != VK_SUCCESS)
        return r;
    bool multiview = false;
    for (uint32_t s = 0; s < info->subpassCount; s++)
        multiview |= info->pSubpasses[s].viewMask != 0;
    const VkSubpassDescription2 *first = info->subpassCount ? info->pSubpasses : NULL;
    render_pass_created(device, *ret, first ? first->colorAttachmentCount : 0,
                        first && SUBPASS_HAS_DEPTH(first), multiview, info->subpassCount);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateRenderPass2(
    VkDevice device, const VkRenderPassCreateInfo2 *info, const VkAllocationCallbacks *alloc,
    VkRenderPass *ret)
{
    return create_render_pass2(device_lookup(device)->vk.CreateRenderPass2, device, info, alloc,
                               ret);
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateRenderPass2KHR(
    VkDevice device, const VkRenderPassCreateInfo2 *info, const VkAllocationCallbacks *alloc,
    VkRenderPass *ret)
{
    return create_render_pass2(device_lookup(device)->vk.CreateRenderPass2KHR, device, info,
                               alloc, ret);
}

static VKAPI_ATTR void VKAPI_CALL framescope_DestroyRenderPass(
    VkDevice device, VkRenderPass pass, const VkAllocationCallbacks *alloc)
{
    struct device_data *dev = device_lookup(device);
    struct render_pass_info *info =
        pass ? table_find(dev->render_passes, MAX_RENDER_PASSES, (uint64_t)pass) : NULL;
    if (info) {
        table_remove(dev->render_passes, MAX_RENDER_PASSES, &dev->lock, info);
        free(info);
    }
    dev->vk.DestroyRenderPass(device, pass, alloc);
}

/* A classic render pass: counted, and its zone opened outside it (before the begin), named by
 * its size and first subpass's attachments. Labels inside a multiview pass, or one not known,
 * are not timed. Returns the device, for the call down. */
static struct device_data *render_pass_begin(VkCommandBuffer cb, const VkRenderPassBeginInfo *i,
                                             VkSubpassContents contents)
{
    commands_pass_counted(cb);
    struct device_data *dev = device_lookup(cb);
    const struct render_pass_info *info =
        layer_config.gpu_zones
            ? table_find(dev->render_passes, MAX_RENDER_PASSES, (uint64_t)i->renderPass)
            : NULL;
    bool multiview = info ? info->multiview : atomic_load(&dev->render_passes_full);
    /* Secondaries executed while a statistics query is active need inheritedQueries. */
    bool secondaries = contents != VK_SUBPASS_CONTENTS_INLINE || !info || info->subpasses != 1;
    zones_pass_begin(cb, i->renderArea, info ? info->colors : 0, info && info->depth,
                     multiview ? ~0u : 0, 0, info ? info->name : NULL, secondaries);
    return dev;
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdBeginRenderPass(
    VkCommandBuffer cb, const VkRenderPassBeginInfo *i, VkSubpassContents c)
{
    render_pass_begin(cb, i, c)->vk.CmdBeginRenderPass(cb, i, c);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdBeginRenderPass2(
    VkCommandBuffer cb, const VkRenderPassBeginInfo *i, const VkSubpassBeginInfo *s)
{
    render_pass_begin(cb, i, s->contents)->vk.CmdBeginRenderPass2(cb, i, s);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdBeginRenderPass2KHR(
    VkCommandBuffer cb, const VkRenderPassBeginInfo *i, const VkSubpassBeginInfo *s)
{
    render_pass_begin(cb, i, s->contents)->vk.CmdBeginRenderPass2KHR(cb, i, s);
}

static void rendering_begin(VkCommandBuffer cb, const VkRenderingInfo *i)
{
    commands_pass_counted(cb);
    bool depth = (i->pDepthAttachment && i->pDepthAttachment->imageView) ||
                 (i->pStencilAttachment && i->pStencilAttachment->imageView);
    zones_pass_begin(cb, i->renderArea, i->colorAttachmentCount, depth, i->viewMask, i->flags,
                     NULL, i->flags & VK_RENDERING_CONTENTS_SECONDARY_COMMAND_BUFFERS_BIT);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdBeginRendering(VkCommandBuffer cb,
                                                               const VkRenderingInfo *i)
{
    rendering_begin(cb, i);
    device_lookup(cb)->vk.CmdBeginRendering(cb, i);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdBeginRenderingKHR(VkCommandBuffer cb,
                                                                  const VkRenderingInfo *i)
{
    rendering_begin(cb, i);
    device_lookup(cb)->vk.CmdBeginRenderingKHR(cb, i);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdEndRenderPass(VkCommandBuffer cb)
{
    zones_pass_ending(cb);
    device_lookup(cb)->vk.CmdEndRenderPass(cb);
    zones_pass_end(cb);
    commands_counted(cb);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdEndRenderPass2(VkCommandBuffer cb,
                                                               const VkSubpassEndInfo *i)
{
    zones_pass_ending(cb);
    device_lookup(cb)->vk.CmdEndRenderPass2(cb, i);
    zones_pass_end(cb);
    commands_counted(cb);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdEndRenderPass2KHR(VkCommandBuffer cb,
                                                                  const VkSubpassEndInfo *i)
{
    zones_pass_ending(cb);
    device_lookup(cb)->vk.CmdEndRenderPass2KHR(cb, i);
    zones_pass_end(cb);
    commands_counted(cb);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdEndRendering(VkCommandBuffer cb)
{
    zones_pass_ending(cb);
    device_lookup(cb)->vk.CmdEndRendering(cb);
    zones_pass_end(cb);
    commands_counted(cb);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdEndRenderingKHR(VkCommandBuffer cb)
{
    zones_pass_ending(cb);
    device_lookup(cb)->vk.CmdEndRenderingKHR(cb);
    zones_pass_end(cb);
    commands_counted(cb);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdBeginDebugUtilsLabelEXT(
    VkCommandBuffer cb, const VkDebugUtilsLabelEXT *label)
{
    zones_label_begin(cb, label ? label->pLabelName : NULL);
    commands_label_begin(cb, label ? label->pLabelName : NULL);
    device_lookup(cb)->vk.CmdBeginDebugUtilsLabelEXT(cb, label);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdEndDebugUtilsLabelEXT(VkCommandBuffer cb)
{
    device_lookup(cb)->vk.CmdEndDebugUtilsLabelEXT(cb);
    zones_label_end(cb);
    commands_label_end(cb);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdDebugMarkerBeginEXT(
    VkCommandBuffer cb, const VkDebugMarkerMarkerInfoEXT *marker)
{
    zones_label_begin(cb, marker ? marker->pMarkerName : NULL);
    commands_label_begin(cb, marker ? marker->pMarkerName : NULL);
    device_lookup(cb)->vk.CmdDebugMarkerBeginEXT(cb, marker);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdDebugMarkerEndEXT(VkCommandBuffer cb)
{
    device_lookup(cb)->vk.CmdDebugMarkerEndEXT(cb);
    zones_label_end(cb);
    commands_label_end(cb);
}
static const struct layer_hook hook_rows[] = {
    FRAME_HOOKS(LAYER_HOOK_ROW)
    INSTANCE_CHAIN_HOOKS(LAYER_HOOK_ROW_INSTANCE_CHAIN)
};
const struct layer_hook_table hooks_table = LAYER_HOOK_TABLE(hook_rows);
