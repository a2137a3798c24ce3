/*
 * Recording and submission of framescope-demo's frames.
 *
 * One thread: each frame is one command buffer with one render pass that clears the image
 * and draws the fullscreen triangle once, submitted with the acquire wait, the render-done
 * signal and the slot's fence.
 *
 * N worker threads: the main thread submits an opening barrier (waiting on the acquire
 * semaphore), each worker records one horizontal band of the image (clear plus one draw,
 * scissored) in a command buffer from its own pool and submits it, and the main thread then
 * submits a closing barrier that signals render-done and the fence. Workers submit in any
 * order; their bands do not overlap, and the fence and semaphore of the closing batch cover
 * every batch submitted before it. The GPU load of a frame is the same for any N.
 *
 * --no-fence-wait: one command buffer per swapchain image, recorded once and submitted
 * every time that image comes round, with no fence at all.
 *
 * --draws (one thread only): before the frame's command buffer is recorded, the recording
 * threads of demo-draws.c record the slot's draws; the frame's command buffer then executes
 * them (--secondary), or they follow it in the frame's batch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"

struct frame_slot {
    VkFence in_flight;
    VkSemaphore image_acquired;
    /* One thread: the whole frame. Workers: the opening barrier. */
    VkCommandBuffer frame_cmd;
    /* Workers only: the closing barrier. */
    VkCommandBuffer close_cmd;
};

struct worker {
    struct demo_renderer *renderer;
    uint32_t index;
    pthread_t thread;
    VkCommandPool pool;
    VkCommandBuffer cmds[DEMO_MAX_FRAMES_IN_FLIGHT];
    uint64_t draws;         /* written by the worker, read by main between frames */
    bool failed;
};

/* What the main thread hands every worker for one frame. */
struct frame_job {
    uint32_t slot;
    struct demo_render_target target;
    uint32_t frame;
};

struct demo_renderer {
    struct demo_gpu *gpu;
    const struct demo_pipeline *pipeline;
    uint32_t gpu_iters;
    /* --passes: the frame as labelled passes instead of one */
    uint32_t pass_count;
    struct demo_pass passes[DEMO_MAX_PASSES];
    int64_t spike_at; /* --pass-spike: -1 none */
    uint32_t spike_iters;
    PFN_vkCmdBeginDebugUtilsLabelEXT begin_label;
    PFN_vkCmdEndDebugUtilsLabelEXT end_label;
    struct demo_draws *draws; /* --draws: not ours */
    uint32_t frames_in_flight;
    uint32_t current_slot;
    VkCommandPool pool;     /* the main thread's */
    struct frame_slot slots[DEMO_MAX_FRAMES_IN_FLIGHT];
    uint64_t main_draws;
    /* --self-timestamps: two queries per slot, read when the slot is waited on. */
    VkQueryPool self_queries;
    double self_ns_per_tick;
    uint64_t self_mask;
    bool self_pending[DEMO_MAX_FRAMES_IN_FLIGHT];
    uint64_t self_frames;
    double self_total_ns;
    /* --no-fence-wait's recordings, one per image, from pool. */
    VkCommandBuffer *image_cmds;
    uint32_t image_cmd_count;

    uint32_t worker_count;
    uint32_t workers_started;
    struct worker *workers;
    /* Guards job, job_generation, workers_busy and quit. */
    pthread_mutex_t lock;
    pthread_cond_t job_posted;
    pthread_cond_t job_finished;
    bool lock_ready;
    struct frame_job job;
    uint64_t job_generation;
    uint32_t workers_busy;
    bool quit;
};

static void record_pass_iters(struct demo_renderer *renderer, VkCommandBuffer cmd,
                              VkRenderPass render_pass, const struct demo_render_target *target,
                              VkRect2D area, uint32_t frame, uint32_t gpu_iters)
{
    VkClearValue clear = { .color = { .float32 = { 0.05f, 0.05f, 0.08f, 1.0f } } };
    VkRenderPassBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
        .renderPass = render_pass,
        .framebuffer = target->framebuffer,
        .renderArea = area,
        .clearValueCount = 1,
        .pClearValues = &clear,
    };
    vkCmdBeginRenderPass(cmd, &begin, VK_SUBPASS_CONTENTS_INLINE);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, renderer->pipeline->pipeline);
    /* The viewport is the whole image, so a band shows its part of the same picture. */
    VkViewport viewport = {
        .width = (float)target->extent.width,
        .height = (float)target->extent.height,
        .maxDepth = 1.0f,
    };
    vkCmdSetViewport(cmd, 0, 1, &viewport);
    vkCmdSetScissor(cmd, 0, 1, &area);
    struct demo_push_constants push = {
        .gpu_iters = gpu_iters,
        .frame = frame,
    };
    vkCmdPushConstants(cmd, renderer->pipeline->layout, VK_SHADER_STAGE_FRAGMENT_BIT, 0,
                       sizeof(push), &push);
    vkCmdDraw(cmd, 3, 1, 0, 0);
    vkCmdEndRenderPass(cmd);
}

static void record_pass(struct demo_renderer *renderer, VkCommandBuffer cmd,
                        VkRenderPass render_pass, const struct demo_render_target *target,
                        VkRect2D area, uint32_t frame)
{
    if (!renderer->pass_count) {
        record_pass_iters(renderer, cmd, render_pass, target, area, frame, renderer->gpu_iters);
        return;
    }
    /* Each pass clears and draws the whole target again: its cost is its own iterations. */
    for (uint32_t i = 0; i < renderer->pass_count; i++) {
        const VkDebugUtilsLabelEXT label = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
            .pLabelName = renderer->passes[i].name,
        };
        renderer->begin_label(cmd, &label);
        bool spike = i == 0 && renderer->spike_at == (int64_t)frame;
        record_pass_iters(renderer, cmd, render_pass, target, area, frame,
                          spike ? renderer->spike_iters : renderer->passes[i].gpu_iters);
        renderer->end_label(cmd);
    }
}

bool demo_renderer_set_passes(struct demo_renderer *renderer, VkInstance instance,
                              const struct demo_pass *passes, uint32_t count)
{
    renderer->begin_label = (PFN_vkCmdBeginDebugUtilsLabelEXT)
        vkGetInstanceProcAddr(instance, "vkCmdBeginDebugUtilsLabelEXT");
    renderer->end_label = (PFN_vkCmdEndDebugUtilsLabelEXT)
        vkGetInstanceProcAddr(instance, "vkCmdEndDebugUtilsLabelEXT");
    if (!renderer->begin_label || !renderer->end_label) {
        fprintf(stderr, DEMO_NAME ": --passes: no vkCmdBeginDebugUtilsLabelEXT (VK_EXT_debug_utils "
                "missing)\n");
        return false;
    }
    memcpy(renderer->passes, passes, count * sizeof(*passes));
    renderer->pass_count = count;
    return true;
}

void demo_renderer_set_draws(struct demo_renderer *renderer, struct demo_draws *draws)
{
    renderer->draws = draws;
}

void demo_renderer_set_pass_spike(struct demo_renderer *renderer, int64_t at, uint32_t iters)
{
    renderer->spike_at = at;
    renderer->spike_iters = iters;
}

static bool begin_commands(VkCommandBuffer cmd, VkCommandBufferUsageFlags usage)
{
    VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = usage,
    };
    return demo_vk_check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
}

static void record_layout_barrier(VkCommandBuffer cmd, VkImage image, VkImageLayout from,
                                  VkImageLayout to, VkPipelineStageFlags dst_stage,
                                  VkAccessFlags dst_access)
{
    VkImageMemoryBarrier barrier = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
        .dstAccessMask = dst_access,
        .oldLayout = from,
        .newLayout = to,
        .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .image = image,
        .subresourceRange = {
            .aspectMask = VK_IMAGE_ASPECT_COLOR_BIT,
            .levelCount = 1,
            .layerCount = 1,
        },
    };
    /* Colour-attachment output is where the acquire semaphore is waited on. */
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT, dst_stage, 0,
                         0, NULL, 0, NULL, 1, &barrier);
}

/* ---- workers ---- */

static bool worker_render_band(struct worker *worker, const struct frame_job *job)
{
    struct demo_renderer *renderer = worker->renderer;
    VkCommandBuffer cmd = worker->cmds[job->slot];
    uint32_t height = job->target.extent.height;
    uint32_t top = (uint32_t)((uint64_t)height * worker->index / renderer->worker_count);
    uint32_t bottom = (uint32_t)((uint64_t)height * (worker->index + 1) /
                                 renderer->worker_count);
    VkRect2D band = {
        .offset = { 0, (int32_t)top },
        .extent = { job->target.extent.width, bottom - top },
    };

    /* The pool has RESET_COMMAND_BUFFER, so begin resets the previous recording. */
    if (!begin_commands(cmd, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
        return false;
    record_pass(renderer, cmd, renderer->pipeline->band_pass, &job->target, band, job->frame);
    if (!demo_vk_check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer"))
        return false;
    if (!demo_gpu_submit(renderer->gpu, &(struct demo_batch){ .cmd = cmd }))
        return false;
    worker->draws++;
    return true;
}

static void *worker_main(void *data)
{
    struct worker *worker = data;
    struct demo_renderer *renderer = worker->renderer;
    uint64_t seen_generation = 0;

    pthread_mutex_lock(&renderer->lock);
    for (;;) {
        while (renderer->job_generation == seen_generation && !renderer->quit)
            pthread_cond_wait(&renderer->job_posted, &renderer->lock);
        if (renderer->quit)
            break;
        seen_generation = renderer->job_generation;
        struct frame_job job = renderer->job;
        pthread_mutex_unlock(&renderer->lock);

        /* After one failure, keep answering jobs without touching Vulkan. */
        if (!worker->failed)
            worker->failed = !worker_render_band(worker, &job);

        pthread_mutex_lock(&renderer->lock);
        if (--renderer->workers_busy == 0)
            pthread_cond_signal(&renderer->job_finished);
    }
    pthread_mutex_unlock(&renderer->lock);
    return NULL;
}

/* Runs one frame's bands on every worker and waits for all of them to have submitted. */
static bool run_workers(struct demo_renderer *renderer, const struct frame_job *job)
{
    pthread_mutex_lock(&renderer->lock);
    renderer->job = *job;
    renderer->job_generation++;
    renderer->workers_busy = renderer->workers_started;
    pthread_cond_broadcast(&renderer->job_posted);
    while (renderer->workers_busy > 0)
        pthread_cond_wait(&renderer->job_finished, &renderer->lock);
    pthread_mutex_unlock(&renderer->lock);

    for (uint32_t i = 0; i < renderer->workers_started; i++) {
        if (renderer->workers[i].failed)
            return false;
    }
    return true;
}

static bool create_command_pool(struct demo_gpu *gpu, VkCommandPool *ret_pool)
{
    VkCommandPoolCreateInfo pool_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = gpu->queue_family,
    };
    return demo_vk_check(vkCreateCommandPool(gpu->device, &pool_info, NULL, ret_pool),
                         "vkCreateCommandPool");
}

static bool allocate_command_buffers(struct demo_gpu *gpu, VkCommandPool pool, uint32_t count,
                                     VkCommandBuffer *ret_cmds)
{
    VkCommandBufferAllocateInfo alloc_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = count,
    };
    return demo_vk_check(vkAllocateCommandBuffers(gpu->device, &alloc_info, ret_cmds),
                         "vkAllocateCommandBuffers");
}

static bool start_workers(struct demo_renderer *renderer, uint32_t count)
{
    renderer->workers = calloc(count, sizeof(*renderer->workers));
    if (!renderer->workers) {
        fprintf(stderr, DEMO_NAME ": out of memory\n");
        return false;
    }
    renderer->worker_count = count;
    if (pthread_mutex_init(&renderer->lock, NULL) != 0 ||
        pthread_cond_init(&renderer->job_posted, NULL) != 0 ||
        pthread_cond_init(&renderer->job_finished, NULL) != 0) {
        fprintf(stderr, DEMO_NAME ": cannot initialise the worker lock\n");
        return false;
    }
    renderer->lock_ready = true;

    for (uint32_t i = 0; i < count; i++) {
        struct worker *worker = &renderer->workers[i];
        worker->renderer = renderer;
        worker->index = i;
        if (!create_command_pool(renderer->gpu, &worker->pool) ||
            !allocate_command_buffers(renderer->gpu, worker->pool, renderer->frames_in_flight,
                                      worker->cmds))
            return false;
    }
    for (uint32_t i = 0; i < count; i++) {
        if (pthread_create(&renderer->workers[i].thread, NULL, worker_main,
                           &renderer->workers[i]) != 0) {
            fprintf(stderr, DEMO_NAME ": cannot start worker thread %u\n", i);
            return false;
        }
        renderer->workers_started++;
    }
    return true;
}

/* ---- renderer ---- */

struct demo_renderer *demo_renderer_create(struct demo_gpu *gpu,
                                           const struct demo_pipeline *pipeline,
                                           uint32_t frames_in_flight, uint32_t threads,
                                           uint32_t gpu_iters)
{
    struct demo_renderer *renderer = calloc(1, sizeof(*renderer));
    if (!renderer) {
        fprintf(stderr, DEMO_NAME ": out of memory\n");
        return NULL;
    }
    renderer->gpu = gpu;
    renderer->pipeline = pipeline;
    renderer->gpu_iters = gpu_iters;
    renderer->frames_in_flight = frames_in_flight;

    if (!create_command_pool(gpu, &renderer->pool))
        goto error;
    for (uint32_t i = 0; i < frames_in_flight; i++) {
        struct frame_slot *slot = &renderer->slots[i];
        /* Signalled, so the first wait on every slot returns at once. */
        VkFenceCreateInfo fence_info = {
            .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
            .flags = VK_FENCE_CREATE_SIGNALED_BIT,
        };
        VkSemaphoreCreateInfo semaphore_info = {
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
        };
        VkCommandBuffer cmds[2];
        if (!demo_vk_check(vkCreateFence(gpu->device, &fence_info, NULL, &slot->in_flight),
                           "vkCreateFence") ||
            !demo_vk_check(vkCreateSemaphore(gpu->device, &semaphore_info, NULL,
                                             &slot->image_acquired),
                           "vkCreateSemaphore") ||
            !allocate_command_buffers(gpu, renderer->pool, 2, cmds))
            goto error;
        slot->frame_cmd = cmds[0];
        slot->close_cmd = cmds[1];
    }
    if (threads > 1 && !start_workers(renderer, threads))
        goto error;
    return renderer;

error:
    demo_renderer_destroy(renderer);
    return NULL;
}

void demo_renderer_destroy(struct demo_renderer *renderer)
{
    if (!renderer)
        return;
    VkDevice device = renderer->gpu->device;

    if (renderer->self_queries)
        vkDestroyQueryPool(device, renderer->self_queries, NULL);
    if (renderer->lock_ready) {
        pthread_mutex_lock(&renderer->lock);
        renderer->quit = true;
        pthread_cond_broadcast(&renderer->job_posted);
        pthread_mutex_unlock(&renderer->lock);
    }
    for (uint32_t i = 0; i < renderer->workers_started; i++)
        pthread_join(renderer->workers[i].thread, NULL);
    for (uint32_t i = 0; renderer->workers && i < renderer->worker_count; i++) {
        /* Destroying the pool frees its command buffers. */
        if (renderer->workers[i].pool)
            vkDestroyCommandPool(device, renderer->workers[i].pool, NULL);
    }
    if (renderer->lock_ready) {
        pthread_cond_destroy(&renderer->job_finished);
        pthread_cond_destroy(&renderer->job_posted);
        pthread_mutex_destroy(&renderer->lock);
    }
    free(renderer->workers);

    for (uint32_t i = 0; i < renderer->frames_in_flight; i++) {
        struct frame_slot *slot = &renderer->slots[i];
        if (slot->image_acquired)
            vkDestroySemaphore(device, slot->image_acquired, NULL);
        if (slot->in_flight)
            vkDestroyFence(device, slot->in_flight, NULL);
    }
    /* Destroying the pool frees the per-image recordings too. */
    if (renderer->pool)
        vkDestroyCommandPool(device, renderer->pool, NULL);
    free(renderer->image_cmds);
    free(renderer);
}

bool demo_renderer_wait_slot(struct demo_renderer *renderer, VkSemaphore *ret_image_acquired)
{
    struct frame_slot *slot = &renderer->slots[renderer->current_slot];
    if (!demo_vk_check(vkWaitForFences(renderer->gpu->device, 1, &slot->in_flight, VK_TRUE,
                                       UINT64_MAX),
                       "vkWaitForFences"))
        return false;
    *ret_image_acquired = slot->image_acquired;
    uint32_t index = renderer->current_slot;
    if (renderer->self_queries && renderer->self_pending[index]) {
        uint64_t ts[2];
        /* The slot's fence has signalled: both timestamps are written. */
        if (vkGetQueryPoolResults(renderer->gpu->device, renderer->self_queries, 2 * index, 2,
                                  sizeof(ts), ts, sizeof(ts[0]), VK_QUERY_RESULT_64_BIT) ==
            VK_SUCCESS) {
            uint64_t ticks = (ts[1] - ts[0]) & renderer->self_mask;
            renderer->self_total_ns += (double)ticks * renderer->self_ns_per_tick;
            renderer->self_frames++;
        }
        renderer->self_pending[index] = false;
    }
    return true;
}

bool demo_renderer_enable_self_timestamps(struct demo_renderer *renderer)
{
    struct demo_gpu *gpu = renderer->gpu;
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(gpu->physical_device, &props);
    uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(gpu->physical_device, &count, NULL);
    VkQueueFamilyProperties *families = calloc(count, sizeof(*families));
    if (!families) {
        fprintf(stderr, DEMO_NAME ": out of memory\n");
        return false;
    }
    vkGetPhysicalDeviceQueueFamilyProperties(gpu->physical_device, &count, families);
    uint32_t bits = gpu->queue_family < count ? families[gpu->queue_family].timestampValidBits : 0;
    free(families);
    if (bits == 0) {
        fprintf(stderr, DEMO_NAME ": --self-timestamps: the queue has no timestamps\n");
        return false;
    }
    renderer->self_mask = bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    renderer->self_ns_per_tick = props.limits.timestampPeriod;
    VkQueryPoolCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = 2 * DEMO_MAX_FRAMES_IN_FLIGHT,
    };
    return demo_vk_check(vkCreateQueryPool(gpu->device, &info, NULL, &renderer->self_queries),
                         "vkCreateQueryPool");
}

double demo_renderer_self_gpu_ms(struct demo_renderer *renderer, uint64_t *ret_frames)
{
    *ret_frames = renderer->self_frames;
    return renderer->self_frames ? renderer->self_total_ns / 1e6 / (double)renderer->self_frames
                                 : 0.0;
}

bool demo_renderer_wait_submitted(struct demo_renderer *renderer)
{
    uint32_t last = (renderer->current_slot + renderer->frames_in_flight - 1) %
                    renderer->frames_in_flight;
    return demo_vk_check(vkWaitForFences(renderer->gpu->device, 1,
                                         &renderer->slots[last].in_flight, VK_TRUE,
                                         UINT64_MAX),
                         "vkWaitForFences");
}

static bool submit_single(struct demo_renderer *renderer, struct frame_slot *slot,
                          const struct demo_render_target *target,
                          const struct demo_frame_sync *sync, uint32_t frame)
{
    VkRect2D whole = { .extent = target->extent };
    uint32_t index = renderer->current_slot;
    if (renderer->draws && !demo_draws_record(renderer->draws, index, target))
        return false;
    if (!begin_commands(slot->frame_cmd, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
        return false;
    if (renderer->self_queries) {
        vkCmdResetQueryPool(slot->frame_cmd, renderer->self_queries, 2 * index, 2);
        vkCmdWriteTimestamp(slot->frame_cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                            renderer->self_queries, 2 * index);
    }
    record_pass(renderer, slot->frame_cmd, renderer->pipeline->frame_pass, target, whole,
                frame);
    if (renderer->draws)
        demo_draws_execute(renderer->draws, slot->frame_cmd, index, target);
    if (renderer->self_queries) {
        vkCmdWriteTimestamp(slot->frame_cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                            renderer->self_queries, 2 * index + 1);
        renderer->self_pending[index] = true;
    }
    if (!demo_vk_check(vkEndCommandBuffer(slot->frame_cmd), "vkEndCommandBuffer"))
        return false;
    struct demo_batch batch = {
        .cmd = slot->frame_cmd,
        .wait = sync->image_acquired,
        .timeline_wait = sync->gate,
        .timeline_wait_value = sync->gate_value,
        .signal = sync->render_done,
        .fence = slot->in_flight,
    };
    if (renderer->draws)
        batch.then_cmds = demo_draws_primaries(renderer->draws, index, &batch.then_cmd_count);
    if (!demo_gpu_submit(renderer->gpu, &batch))
        return false;
    renderer->main_draws++;
    return true;
}

static bool submit_threaded(struct demo_renderer *renderer, struct frame_slot *slot,
                            const struct demo_render_target *target,
                            const struct demo_frame_sync *sync, uint32_t frame)
{
    /* Open: the image goes from whatever it was to an attachment every band can load. */
    if (!begin_commands(slot->frame_cmd, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
        return false;
    record_layout_barrier(slot->frame_cmd, target->image, VK_IMAGE_LAYOUT_UNDEFINED,
                          VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                          VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                          VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT);
    struct demo_batch open_batch = {
        .cmd = slot->frame_cmd,
        .wait = sync->image_acquired,
        .timeline_wait = sync->gate,
        .timeline_wait_value = sync->gate_value,
    };
    if (!demo_vk_check(vkEndCommandBuffer(slot->frame_cmd), "vkEndCommandBuffer") ||
        !demo_gpu_submit(renderer->gpu, &open_batch))
        return false;

    struct frame_job job = {
        .slot = renderer->current_slot,
        .target = *target,
        .frame = frame,
    };
    if (!run_workers(renderer, &job))
        return false;

    /* Close: to the final layout, then signal render-done and the slot's fence. */
    if (!begin_commands(slot->close_cmd, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
        return false;
    record_layout_barrier(slot->close_cmd, target->image,
                          VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                          renderer->pipeline->final_layout,
                          VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0);
    if (!demo_vk_check(vkEndCommandBuffer(slot->close_cmd), "vkEndCommandBuffer"))
        return false;
    struct demo_batch close_batch = {
        .cmd = slot->close_cmd,
        .signal = sync->render_done,
        .fence = slot->in_flight,
    };
    return demo_gpu_submit(renderer->gpu, &close_batch);
}

bool demo_renderer_submit_frame(struct demo_renderer *renderer,
                                const struct demo_render_target *target,
                                const struct demo_frame_sync *sync, uint32_t frame)
{
    struct frame_slot *slot = &renderer->slots[renderer->current_slot];
    if (!demo_vk_check(vkResetFences(renderer->gpu->device, 1, &slot->in_flight),
                       "vkResetFences"))
        return false;

    bool ok = renderer->workers_started > 0
              ? submit_threaded(renderer, slot, target, sync, frame)
              : submit_single(renderer, slot, target, sync, frame);
    renderer->current_slot = (renderer->current_slot + 1) % renderer->frames_in_flight;
    return ok;
}

bool demo_renderer_record_images(struct demo_renderer *renderer,
                                 const struct demo_targets *targets,
                                 VkCommandBufferUsageFlags usage)
{
    VkDevice device = renderer->gpu->device;
    if (renderer->image_cmds) {
        vkFreeCommandBuffers(device, renderer->pool, renderer->image_cmd_count,
                             renderer->image_cmds);
        free(renderer->image_cmds);
        renderer->image_cmds = NULL;
        renderer->image_cmd_count = 0;
    }

    VkCommandBuffer *cmds = calloc(targets->image_count, sizeof(*cmds));
    if (!cmds) {
        fprintf(stderr, DEMO_NAME ": out of memory\n");
        return false;
    }
    if (!allocate_command_buffers(renderer->gpu, renderer->pool, targets->image_count, cmds)) {
        free(cmds);
        return false;
    }
    renderer->image_cmds = cmds;
    renderer->image_cmd_count = targets->image_count;

    VkRect2D whole = { .extent = targets->extent };
    for (uint32_t i = 0; i < targets->image_count; i++) {
        struct demo_render_target target = {
            .image = targets->images[i].image,
            .framebuffer = targets->images[i].framebuffer,
            .extent = targets->extent,
        };
        if (!begin_commands(cmds[i], usage))
            return false;
        /* Recorded once, so the frame number in the picture is the image's index. */
        record_pass(renderer, cmds[i], renderer->pipeline->frame_pass, &target, whole, i);
        if (!demo_vk_check(vkEndCommandBuffer(cmds[i]), "vkEndCommandBuffer"))
            return false;
        renderer->main_draws++;
    }
    return true;
}

bool demo_renderer_submit_image(struct demo_renderer *renderer, uint32_t image_index,
                                const struct demo_frame_sync *sync)
{
    struct demo_batch batch = {
        .cmd = renderer->image_cmds[image_index],
        .wait = sync->image_acquired,
        .timeline_wait = sync->gate,
        .timeline_wait_value = sync->gate_value,
        .signal = sync->render_done,
    };
    return demo_gpu_submit(renderer->gpu, &batch);
}

bool demo_renderer_submit_recorded(struct demo_renderer *renderer, uint32_t image_index)
{
    struct frame_slot *slot = &renderer->slots[renderer->current_slot];
    if (!demo_vk_check(vkResetFences(renderer->gpu->device, 1, &slot->in_flight),
                       "vkResetFences"))
        return false;
    struct demo_batch batch = {
        .cmd = renderer->image_cmds[image_index],
        .fence = slot->in_flight,
    };
    renderer->current_slot = (renderer->current_slot + 1) % renderer->frames_in_flight;
    if (!demo_gpu_submit(renderer->gpu, &batch))
        return false;
    renderer->main_draws++;
    return true;
}

uint64_t demo_renderer_draw_count(const struct demo_renderer *renderer)
{
    uint64_t draws = renderer->main_draws;
    for (uint32_t i = 0; i < renderer->workers_started; i++)
        draws += renderer->workers[i].draws;
    if (renderer->draws) {
        struct demo_draws_stats stats;
        demo_draws_get_stats(renderer->draws, &stats);
        draws += stats.draws;
    }
    return draws;
}
