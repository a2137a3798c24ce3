/*
 * --draws: many small indexed draws a frame, recorded on several threads, for measuring what
 * a layer adds to command recording and whether it tells redundant binds apart.
 *
 * Thread 0 is whichever thread calls demo_draws_record() (the render thread); threads 1..T-1
 * are workers woken once a frame. Each thread has one command pool per frame slot, made
 * without RESET_COMMAND_BUFFER and reset whole once a frame before the thread records into
 * it, as engines that record many command buffers a frame do. Each thread's command buffer
 * holds, inside a label region "cubes": the pipeline bind, viewport and scissor once, then
 * per draw a vertex buffer, an index buffer and a descriptor set bind and a 3-index draw.
 *
 * The draws go over the frame in a render pass of their own that loads the image
 * (initial and final layout: the frame pass's final one), compatible with the frame pass, so
 * the targets' framebuffers serve it. Primaries begin it themselves; secondaries inherit it
 * from the instance the frame's command buffer begins to execute them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demo.h"
#include "cubes.frag.h"
#include "cubes.vert.h"

/*
 * Pixels on a side of the square every draw is scissored to, so that pixels cost next to
 * nothing on a CPU rasterizer. What is left is per draw: on Mesa 22.3 lavapipe (2 cores) a
 * frame of 10,000 draws took 210-270 ms, nearly all of it lavapipe taking up the vertex
 * buffer and descriptor set bound before each draw (38 ms with either bound once per command
 * buffer); recording them took 250-650 ns a command.
 */
#define SCISSOR_SIZE 4
/* The largest minUniformBufferOffsetAlignment the spec allows: set B's offset suits any
 * device. */
#define UNIFORM_STRIDE 256
/* The brief's pool size: room for more sets than the two taken, as an engine's pool has. */
#define DESCRIPTOR_POOL_SETS 16
/* Meshes A and B: a vertex buffer, an index buffer and a descriptor set each. */
#define MESH_COUNT 2
/* What one allocation holds at most: both meshes' vertex and index buffers. */
#define MAX_FILLED_BUFFERS (2 * MESH_COUNT)
/* Fixed commands of a draw command buffer besides the label and the render pass: pipeline,
 * viewport, scissor. */
#define SETUP_COMMANDS 3
/* Per draw: vertex buffer, index buffer, descriptor set, draw. */
#define COMMANDS_PER_DRAW 4
/* Recordings of each thread whose ns per command is kept for the median. */
#define RECORD_SAMPLES 1024

struct record_job {
    uint32_t slot;
    VkFramebuffer framebuffer;
    VkExtent2D extent;
};

struct recorder {
    struct demo_draws *draws;
    uint32_t index;
    uint32_t draw_count;
    pthread_t thread;           /* workers only: recorder 0 is the caller's thread */
    VkCommandPool pools[DEMO_MAX_FRAMES_IN_FLIGHT];
    /* Written by the recorder during a job, read by others only between jobs. */
    uint64_t record_ns;
    uint64_t commands;
    uint64_t recordings;
    float samples[RECORD_SAMPLES]; /* ns per command of the first recordings */
    uint32_t sample_count;
    bool failed;
};

struct demo_draws {
    struct demo_gpu *gpu;
    struct demo_draws_config config;
    VkRenderPass pass;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool descriptor_pool;
    VkDescriptorSet sets[MESH_COUNT];
    VkDescriptorSetLayout dynamic_layout; /* --wide-binds: set 1, a dynamic uniform buffer */
    VkDescriptorSet dynamic_set;
    VkBuffer vertex_buffers[MESH_COUNT];
    VkBuffer index_buffers[MESH_COUNT];
    VkDeviceMemory mesh_memory;
    VkBuffer uniform_buffer;
    VkDeviceMemory uniform_memory;
    /* NULL without VK_EXT_debug_utils: no label then. */
    PFN_vkCmdBeginDebugUtilsLabelEXT begin_label;
    PFN_vkCmdEndDebugUtilsLabelEXT end_label;
    /* [slot][thread]: a slot's recordings are one array to submit or to execute. */
    VkCommandBuffer cmds[DEMO_MAX_FRAMES_IN_FLIGHT][DEMO_MAX_RECORD_THREADS];
    struct recorder recorders[DEMO_MAX_RECORD_THREADS];

    uint32_t workers_started;   /* recorders 1..workers_started run on threads of their own */
    /* Guards job, job_generation, workers_busy and quit. */
    pthread_mutex_t lock;
    pthread_cond_t job_posted;
    pthread_cond_t job_finished;
    bool lock_ready;
    struct record_job job;
    uint64_t job_generation;
    uint32_t workers_busy;
    bool quit;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- recording ---- */

static VkRect2D centred_scissor(VkExtent2D extent)
{
    uint32_t width = extent.width < SCISSOR_SIZE ? extent.width : SCISSOR_SIZE;
    uint32_t height = extent.height < SCISSOR_SIZE ? extent.height : SCISSOR_SIZE;
    return (VkRect2D){
        .offset = { (int32_t)((extent.width - width) / 2),
                    (int32_t)((extent.height - height) / 2) },
        .extent = { width, height },
    };
}

static bool record_draws(struct recorder *recorder, const struct record_job *job)
{
    struct demo_draws *draws = recorder->draws;
    bool secondary = draws->config.secondary;
    VkCommandBuffer cmd = draws->cmds[job->slot][recorder->index];
    if (!demo_vk_check(vkResetCommandPool(draws->gpu->device, recorder->pools[job->slot], 0),
                       "vkResetCommandPool"))
        return false;

    const VkCommandBufferInheritanceInfo inheritance = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO,
        .renderPass = draws->pass,
        .subpass = 0,
        .framebuffer = job->framebuffer,
    };
    const VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT |
                 (secondary ? VK_COMMAND_BUFFER_USAGE_RENDER_PASS_CONTINUE_BIT : 0),
        .pInheritanceInfo = secondary ? &inheritance : NULL,
    };
    const VkRenderPassBeginInfo pass_begin = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
        .renderPass = draws->pass,
        .framebuffer = job->framebuffer,
        .renderArea = { .extent = job->extent },
    };
    const VkViewport viewport = {
        .width = (float)job->extent.width,
        .height = (float)job->extent.height,
        .maxDepth = 1.0f,
    };
    const VkRect2D scissor = centred_scissor(job->extent);
    const VkDebugUtilsLabelEXT label = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
        .pLabelName = "cubes",
    };
    const VkDeviceSize zero_offset = 0;
    bool redundant = draws->config.redundant_binds;
    bool wide = draws->config.wide_binds;

    /* Timed from the begin call to the end call's return, and nothing but Vulkan between. */
    uint64_t start_ns = now_ns();
    if (!demo_vk_check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer"))
        return false;
    if (!secondary)
        vkCmdBeginRenderPass(cmd, &pass_begin, VK_SUBPASS_CONTENTS_INLINE);
    if (draws->begin_label)
        draws->begin_label(cmd, &label);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, draws->pipeline);
    vkCmdSetViewport(cmd, 0, 1, &viewport);
    vkCmdSetScissor(cmd, 0, 1, &scissor);
    for (uint32_t i = 0; i < recorder->draw_count; i++) {
        uint32_t mesh = redundant ? 0 : i % MESH_COUNT;
        if (wide) {
            /* Binding 1 is not read by the pipeline: bound all the same, as engines bind. */
            const VkBuffer buffers[2] = { draws->vertex_buffers[mesh],
                                          draws->vertex_buffers[mesh] };
            const VkDeviceSize offsets[2] = { 0, 0 };
            vkCmdBindVertexBuffers(cmd, 0, 2, buffers, offsets);
        } else {
            vkCmdBindVertexBuffers(cmd, 0, 1, &draws->vertex_buffers[mesh], &zero_offset);
        }
        vkCmdBindIndexBuffer(cmd, draws->index_buffers[mesh], 0, VK_INDEX_TYPE_UINT16);
        if (wide) {
            const VkDescriptorSet sets[2] = { draws->sets[0], draws->dynamic_set };
            const uint32_t dynamic_offset = mesh * UNIFORM_STRIDE;
            vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, draws->layout, 0, 2,
                                    sets, 1, &dynamic_offset);
        } else {
            vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, draws->layout, 0, 1,
                                    &draws->sets[mesh], 0, NULL);
        }
        vkCmdDrawIndexed(cmd, 3, 1, 0, 0, 0);
    }
    if (draws->end_label)
        draws->end_label(cmd);
    if (!secondary)
        vkCmdEndRenderPass(cmd);
    VkResult result = vkEndCommandBuffer(cmd);
    uint64_t end_ns = now_ns();
    if (!demo_vk_check(result, "vkEndCommandBuffer"))
        return false;

    uint64_t commands = SETUP_COMMANDS + (uint64_t)COMMANDS_PER_DRAW * recorder->draw_count +
                        (draws->begin_label ? 2 : 0) + (secondary ? 0 : 2);
    recorder->record_ns += end_ns - start_ns;
    recorder->commands += commands;
    if (recorder->sample_count < RECORD_SAMPLES)
        recorder->samples[recorder->sample_count++] =
            (float)((double)(end_ns - start_ns) / (double)commands);
    recorder->recordings++;
    return true;
}

static void *recorder_main(void *data)
{
    struct recorder *recorder = data;
    struct demo_draws *draws = recorder->draws;
    uint64_t seen_generation = 0;

    pthread_mutex_lock(&draws->lock);
    for (;;) {
        while (draws->job_generation == seen_generation && !draws->quit)
            pthread_cond_wait(&draws->job_posted, &draws->lock);
        if (draws->quit)
            break;
        seen_generation = draws->job_generation;
        struct record_job job = draws->job;
        pthread_mutex_unlock(&draws->lock);

        /* After one failure, keep answering jobs without touching Vulkan. */
        if (!recorder->failed)
            recorder->failed = !record_draws(recorder, &job);

        pthread_mutex_lock(&draws->lock);
        if (--draws->workers_busy == 0)
            pthread_cond_signal(&draws->job_finished);
    }
    pthread_mutex_unlock(&draws->lock);
    return NULL;
}

bool demo_draws_record(struct demo_draws *draws, uint32_t slot,
                       const struct demo_render_target *target)
{
    struct record_job job = {
        .slot = slot,
        .framebuffer = target->framebuffer,
        .extent = target->extent,
    };
    if (draws->workers_started) {
        pthread_mutex_lock(&draws->lock);
        draws->job = job;
        draws->job_generation++;
        draws->workers_busy = draws->workers_started;
        pthread_cond_broadcast(&draws->job_posted);
        pthread_mutex_unlock(&draws->lock);
    }
    struct recorder *own = &draws->recorders[0];
    if (!own->failed)
        own->failed = !record_draws(own, &job);
    if (draws->workers_started) {
        pthread_mutex_lock(&draws->lock);
        while (draws->workers_busy > 0)
            pthread_cond_wait(&draws->job_finished, &draws->lock);
        pthread_mutex_unlock(&draws->lock);
    }
    for (uint32_t i = 0; i < draws->config.threads; i++) {
        if (draws->recorders[i].failed)
            return false;
    }
    return true;
}

void demo_draws_execute(struct demo_draws *draws, VkCommandBuffer cmd, uint32_t slot,
                        const struct demo_render_target *target)
{
    if (!draws->config.secondary)
        return;
    const VkRenderPassBeginInfo pass_begin = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
        .renderPass = draws->pass,
        .framebuffer = target->framebuffer,
        .renderArea = { .extent = target->extent },
    };
    vkCmdBeginRenderPass(cmd, &pass_begin, VK_SUBPASS_CONTENTS_SECONDARY_COMMAND_BUFFERS);
    vkCmdExecuteCommands(cmd, draws->config.threads, draws->cmds[slot]);
    vkCmdEndRenderPass(cmd);
}

const VkCommandBuffer *demo_draws_primaries(const struct demo_draws *draws, uint32_t slot,
                                            uint32_t *ret_count)
{
    *ret_count = draws->config.secondary ? 0 : draws->config.threads;
    return draws->config.secondary ? NULL : draws->cmds[slot];
}

static int compare_floats(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

void demo_draws_get_stats(const struct demo_draws *draws, struct demo_draws_stats *ret_stats)
{
    struct demo_draws_stats stats = { 0 };
    uint64_t record_ns = 0, commands = 0;
    static float samples[DEMO_MAX_RECORD_THREADS * RECORD_SAMPLES];
    uint32_t sample_count = 0;
    for (uint32_t i = 0; i < draws->config.threads; i++) {
        const struct recorder *recorder = &draws->recorders[i];
        record_ns += recorder->record_ns;
        commands += recorder->commands;
        memcpy(&samples[sample_count], recorder->samples,
               recorder->sample_count * sizeof(*samples));
        sample_count += recorder->sample_count;
        stats.draws += recorder->recordings * recorder->draw_count;
        /*
         * Worked out from the fixed pattern record_draws() follows rather than tallied in
         * its timed loop. Every command buffer starts with nothing bound; A and B alternate,
         * so no bind repeats the one before it, unless every draw binds A. With --wide-binds
         * the two sets are the same in every draw and their dynamic offset alternates.
         */
        uint32_t draw_count = recorder->draw_count;
        stats.binds[DEMO_BIND_VERTEX] += draw_count;
        stats.binds[DEMO_BIND_INDEX] += draw_count;
        stats.binds[DEMO_BIND_SETS] += draw_count;
        stats.binds[DEMO_BIND_PIPELINE] += 1;
        if (draws->config.redundant_binds && draw_count > 0) {
            stats.redundant[DEMO_BIND_VERTEX] += draw_count - 1;
            stats.redundant[DEMO_BIND_INDEX] += draw_count - 1;
            stats.redundant[DEMO_BIND_SETS] += draw_count - 1;
        }
    }
    stats.ns_per_command = commands ? (double)record_ns / (double)commands : 0.0;
    if (sample_count) {
        qsort(samples, sample_count, sizeof(*samples), compare_floats);
        stats.ns_per_command_median =
            sample_count % 2 ? samples[sample_count / 2]
                             : (samples[sample_count / 2 - 1] + samples[sample_count / 2]) / 2.0;
    }
    *ret_stats = stats;
}

/* ---- set-up ---- */

static bool find_memory_type(struct demo_gpu *gpu, uint32_t type_bits,
                             VkMemoryPropertyFlags required, uint32_t *ret_type)
{
    const VkPhysicalDeviceMemoryProperties *props = &gpu->memory_properties;
    /* DEVICE_LOCAL first: where an engine keeps its meshes when the host can write there. */
    for (uint32_t pass = 0; pass < 2; pass++) {
        VkMemoryPropertyFlags wanted = required |
                                       (pass == 0 ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT : 0);
        for (uint32_t i = 0; i < props->memoryTypeCount; i++) {
            if ((type_bits & (1u << i)) &&
                (props->memoryTypes[i].propertyFlags & wanted) == wanted) {
                *ret_type = i;
                return true;
            }
        }
    }
    return false;
}

/* count (at most MAX_FILLED_BUFFERS) buffers in one host-visible allocation, each filled
 * from data[i]. Whatever was made is in ret_buffers and *ret_memory, also on failure. */
static bool create_filled_buffers(struct demo_gpu *gpu, uint32_t count,
                                  const VkBufferUsageFlags *usages, const VkDeviceSize *sizes,
                                  const void *const *data, VkBuffer *ret_buffers,
                                  VkDeviceMemory *ret_memory)
{
    VkDeviceSize offsets[MAX_FILLED_BUFFERS];
    VkDeviceSize size = 0;
    uint32_t type_bits = UINT32_MAX;
    for (uint32_t i = 0; i < count; i++) {
        const VkBufferCreateInfo info = {
            .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
            .size = sizes[i],
            .usage = usages[i],
            .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
        };
        if (!demo_vk_check(vkCreateBuffer(gpu->device, &info, NULL, &ret_buffers[i]),
                           "vkCreateBuffer"))
            return false;
        VkMemoryRequirements requirements;
        vkGetBufferMemoryRequirements(gpu->device, ret_buffers[i], &requirements);
        offsets[i] = (size + requirements.alignment - 1) / requirements.alignment *
                     requirements.alignment;
        size = offsets[i] + requirements.size;
        type_bits &= requirements.memoryTypeBits;
    }

    VkMemoryAllocateInfo alloc_info = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = size,
    };
    if (!find_memory_type(gpu, type_bits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                          VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                          &alloc_info.memoryTypeIndex)) {
        fprintf(stderr, DEMO_NAME ": --draws: no host-visible, coherent memory type for the "
                "meshes\n");
        return false;
    }
    if (!demo_vk_check(vkAllocateMemory(gpu->device, &alloc_info, NULL, ret_memory),
                       "vkAllocateMemory"))
        return false;
    void *map;
    if (!demo_vk_check(vkMapMemory(gpu->device, *ret_memory, 0, VK_WHOLE_SIZE, 0, &map),
                       "vkMapMemory"))
        return false;
    for (uint32_t i = 0; i < count; i++)
        memcpy((char *)map + offsets[i], data[i], (size_t)sizes[i]);
    /* Coherent: written before the first submission, which makes host writes visible. */
    vkUnmapMemory(gpu->device, *ret_memory);
    for (uint32_t i = 0; i < count; i++) {
        if (!demo_vk_check(vkBindBufferMemory(gpu->device, ret_buffers[i], *ret_memory,
                                              offsets[i]),
                           "vkBindBufferMemory"))
            return false;
    }
    return true;
}

static bool create_meshes(struct demo_draws *draws)
{
    struct demo_gpu *gpu = draws->gpu;
    /* Two small triangles over the middle of the image, B upside down, and B's indices
     * reversed: different buffers with different contents. */
    static const float vertices[MESH_COUNT][6] = {
        { -0.05f, -0.05f, 0.05f, -0.05f, 0.0f, 0.05f },
        { -0.05f, 0.05f, 0.05f, 0.05f, 0.0f, -0.05f },
    };
    static const uint16_t indices[MESH_COUNT][3] = { { 0, 1, 2 }, { 2, 1, 0 } };
    const VkBufferUsageFlags usages[] = {
        VK_BUFFER_USAGE_VERTEX_BUFFER_BIT, VK_BUFFER_USAGE_VERTEX_BUFFER_BIT,
        VK_BUFFER_USAGE_INDEX_BUFFER_BIT, VK_BUFFER_USAGE_INDEX_BUFFER_BIT,
    };
    const VkDeviceSize sizes[] = {
        sizeof(vertices[0]), sizeof(vertices[1]), sizeof(indices[0]), sizeof(indices[1]),
    };
    const void *const data[] = { vertices[0], vertices[1], indices[0], indices[1] };
    VkBuffer buffers[MAX_FILLED_BUFFERS] = { 0 };
    bool ok = create_filled_buffers(gpu, MAX_FILLED_BUFFERS, usages, sizes, data, buffers, &draws->mesh_memory);
    /* Kept even on failure, so that demo_draws_destroy() finds what was made. */
    draws->vertex_buffers[0] = buffers[0];
    draws->vertex_buffers[1] = buffers[1];
    draws->index_buffers[0] = buffers[2];
    draws->index_buffers[1] = buffers[3];
    if (!ok)
        return false;
    demo_gpu_name(gpu, VK_OBJECT_TYPE_DEVICE_MEMORY, (uint64_t)(uintptr_t)draws->mesh_memory,
                  "mesh memory");

    /* One colour per set, UNIFORM_STRIDE apart in one buffer. */
    float colors[MESH_COUNT][UNIFORM_STRIDE / sizeof(float)] = {
        { 1.0f, 0.6f, 0.1f, 1.0f },
        { 0.1f, 0.8f, 0.7f, 1.0f },
    };
    const VkBufferUsageFlags uniform_usage = VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT;
    const VkDeviceSize uniform_size = sizeof(colors);
    const void *const uniform_data = colors;
    if (!create_filled_buffers(gpu, 1, &uniform_usage, &uniform_size, &uniform_data,
                               &draws->uniform_buffer, &draws->uniform_memory))
        return false;
    demo_gpu_name(gpu, VK_OBJECT_TYPE_DEVICE_MEMORY, (uint64_t)(uintptr_t)draws->uniform_memory,
                  "cubes uniforms");
    return true;
}

/* --wide-binds: set 1, one dynamic uniform buffer over the colours (no shader reads it). */
static bool create_dynamic_set(struct demo_draws *draws)
{
    VkDevice device = draws->gpu->device;
    const VkDescriptorSetLayoutBinding binding = {
        .binding = 0,
        .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC,
        .descriptorCount = 1,
        .stageFlags = VK_SHADER_STAGE_FRAGMENT_BIT,
    };
    const VkDescriptorSetLayoutCreateInfo layout_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = 1,
        .pBindings = &binding,
    };
    if (!demo_vk_check(vkCreateDescriptorSetLayout(device, &layout_info, NULL,
                                                   &draws->dynamic_layout),
                       "vkCreateDescriptorSetLayout"))
        return false;
    const VkDescriptorSetAllocateInfo alloc_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = draws->descriptor_pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &draws->dynamic_layout,
    };
    if (!demo_vk_check(vkAllocateDescriptorSets(device, &alloc_info, &draws->dynamic_set),
                       "vkAllocateDescriptorSets"))
        return false;
    const VkDescriptorBufferInfo buffer_info = {
        .buffer = draws->uniform_buffer,
        .offset = 0,
        .range = 4 * sizeof(float),
    };
    const VkWriteDescriptorSet write = {
        .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
        .dstSet = draws->dynamic_set,
        .dstBinding = 0,
        .descriptorCount = 1,
        .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC,
        .pBufferInfo = &buffer_info,
    };
    vkUpdateDescriptorSets(device, 1, &write, 0, NULL);
    return true;
}

static bool create_descriptor_sets(struct demo_draws *draws)
{
    VkDevice device = draws->gpu->device;
    const VkDescriptorSetLayoutBinding binding = {
        .binding = 0,
        .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
        .descriptorCount = 1,
        .stageFlags = VK_SHADER_STAGE_FRAGMENT_BIT,
    };
    const VkDescriptorSetLayoutCreateInfo layout_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = 1,
        .pBindings = &binding,
    };
    if (!demo_vk_check(vkCreateDescriptorSetLayout(device, &layout_info, NULL,
                                                   &draws->set_layout),
                       "vkCreateDescriptorSetLayout"))
        return false;

    const VkDescriptorPoolSize pool_sizes[2] = {
        { .type = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, .descriptorCount = DESCRIPTOR_POOL_SETS },
        { .type = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC, .descriptorCount = 1 },
    };
    const VkDescriptorPoolCreateInfo pool_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = DESCRIPTOR_POOL_SETS,
        .poolSizeCount = 2,
        .pPoolSizes = pool_sizes,
    };
    if (!demo_vk_check(vkCreateDescriptorPool(device, &pool_info, NULL,
                                              &draws->descriptor_pool),
                       "vkCreateDescriptorPool"))
        return false;

    const VkDescriptorSetLayout layouts[MESH_COUNT] = { draws->set_layout, draws->set_layout };
    const VkDescriptorSetAllocateInfo alloc_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = draws->descriptor_pool,
        .descriptorSetCount = MESH_COUNT,
        .pSetLayouts = layouts,
    };
    if (!demo_vk_check(vkAllocateDescriptorSets(device, &alloc_info, draws->sets),
                       "vkAllocateDescriptorSets"))
        return false;

    VkDescriptorBufferInfo buffer_infos[MESH_COUNT];
    VkWriteDescriptorSet writes[MESH_COUNT];
    for (uint32_t i = 0; i < MESH_COUNT; i++) {
        buffer_infos[i] = (VkDescriptorBufferInfo){
            .buffer = draws->uniform_buffer,
            .offset = (VkDeviceSize)i * UNIFORM_STRIDE,
            .range = 4 * sizeof(float),
        };
        writes[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = draws->sets[i],
            .dstBinding = 0,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
            .pBufferInfo = &buffer_infos[i],
        };
    }
    vkUpdateDescriptorSets(device, MESH_COUNT, writes, 0, NULL);
    if (draws->config.wide_binds && !create_dynamic_set(draws))
        return false;

    const VkDescriptorSetLayout set_layouts[2] = { draws->set_layout, draws->dynamic_layout };
    const VkPipelineLayoutCreateInfo pipeline_layout_info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = draws->config.wide_binds ? 2 : 1,
        .pSetLayouts = set_layouts,
    };
    return demo_vk_check(vkCreatePipelineLayout(device, &pipeline_layout_info, NULL,
                                                &draws->layout),
                         "vkCreatePipelineLayout");
}

/* Loads what the frame drew and leaves the image in the layout the frame pass left it in. */
static bool create_render_pass(struct demo_draws *draws, const struct demo_pipeline *pipeline)
{
    if (!demo_render_pass_create(draws->gpu, pipeline->format, VK_ATTACHMENT_LOAD_OP_LOAD,
                                 pipeline->final_layout, pipeline->final_layout, &draws->pass))
        return false;
    demo_gpu_name(draws->gpu, VK_OBJECT_TYPE_RENDER_PASS, (uint64_t)(uintptr_t)draws->pass,
                  "cubes pass");
    return true;
}

static bool create_shader_module(struct demo_gpu *gpu, const uint32_t *code, size_t size,
                                 VkShaderModule *ret_module)
{
    const VkShaderModuleCreateInfo create_info = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = size,
        .pCode = code,
    };
    return demo_vk_check(vkCreateShaderModule(gpu->device, &create_info, NULL, ret_module),
                         "vkCreateShaderModule");
}

static bool create_pipeline(struct demo_draws *draws)
{
    struct demo_gpu *gpu = draws->gpu;
    VkShaderModule vertex = VK_NULL_HANDLE, fragment = VK_NULL_HANDLE;
    bool ok = false;
    if (!create_shader_module(gpu, cubes_vert_spv, sizeof(cubes_vert_spv), &vertex) ||
        !create_shader_module(gpu, cubes_frag_spv, sizeof(cubes_frag_spv), &fragment))
        goto out;

    const VkPipelineShaderStageCreateInfo stages[] = {
        {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_VERTEX_BIT,
            .module = vertex,
            .pName = "main",
        },
        {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_FRAGMENT_BIT,
            .module = fragment,
            .pName = "main",
        },
    };
    const VkVertexInputBindingDescription vertex_binding = {
        .binding = 0,
        .stride = 2 * sizeof(float),
        .inputRate = VK_VERTEX_INPUT_RATE_VERTEX,
    };
    const VkVertexInputAttributeDescription vertex_attribute = {
        .location = 0,
        .binding = 0,
        .format = VK_FORMAT_R32G32_SFLOAT,
        .offset = 0,
    };
    const VkPipelineVertexInputStateCreateInfo vertex_input = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO,
        .vertexBindingDescriptionCount = 1,
        .pVertexBindingDescriptions = &vertex_binding,
        .vertexAttributeDescriptionCount = 1,
        .pVertexAttributeDescriptions = &vertex_attribute,
    };
    const VkPipelineInputAssemblyStateCreateInfo input_assembly = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO,
        .topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST,
    };
    /* Dynamic: set once per command buffer, for whatever size the target has. */
    const VkPipelineViewportStateCreateInfo viewport = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO,
        .viewportCount = 1,
        .scissorCount = 1,
    };
    const VkPipelineRasterizationStateCreateInfo rasterization = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO,
        .polygonMode = VK_POLYGON_MODE_FILL,
        .cullMode = VK_CULL_MODE_NONE,
        .frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE,
        .lineWidth = 1.0f,
    };
    const VkPipelineMultisampleStateCreateInfo multisample = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO,
        .rasterizationSamples = VK_SAMPLE_COUNT_1_BIT,
    };
    const VkPipelineColorBlendAttachmentState blend_attachment = {
        .colorWriteMask = VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT |
                          VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT,
    };
    const VkPipelineColorBlendStateCreateInfo blend = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO,
        .attachmentCount = 1,
        .pAttachments = &blend_attachment,
    };
    static const VkDynamicState dynamic_states[] = {
        VK_DYNAMIC_STATE_VIEWPORT,
        VK_DYNAMIC_STATE_SCISSOR,
    };
    const VkPipelineDynamicStateCreateInfo dynamic = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO,
        .dynamicStateCount = 2,
        .pDynamicStates = dynamic_states,
    };
    const VkGraphicsPipelineCreateInfo create_info = {
        .sType = VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO,
        .stageCount = 2,
        .pStages = stages,
        .pVertexInputState = &vertex_input,
        .pInputAssemblyState = &input_assembly,
        .pViewportState = &viewport,
        .pRasterizationState = &rasterization,
        .pMultisampleState = &multisample,
        .pColorBlendState = &blend,
        .pDynamicState = &dynamic,
        .layout = draws->layout,
        .renderPass = draws->pass,
        .subpass = 0,
    };
    ok = demo_vk_check(vkCreateGraphicsPipelines(gpu->device, VK_NULL_HANDLE, 1, &create_info,
                                                 NULL, &draws->pipeline),
                       "vkCreateGraphicsPipelines");
    if (ok)
        demo_gpu_name(gpu, VK_OBJECT_TYPE_PIPELINE, (uint64_t)(uintptr_t)draws->pipeline,
                      "cubes pipeline");
out:
    if (fragment)
        vkDestroyShaderModule(gpu->device, fragment, NULL);
    if (vertex)
        vkDestroyShaderModule(gpu->device, vertex, NULL);
    return ok;
}

/* Each thread's pools, one per slot, and one command buffer from each. */
static bool create_command_buffers(struct demo_draws *draws)
{
    struct demo_gpu *gpu = draws->gpu;
    const struct demo_draws_config *config = &draws->config;
    for (uint32_t t = 0; t < config->threads; t++) {
        struct recorder *recorder = &draws->recorders[t];
        char pool_name[32], cmd_name[32];
        snprintf(pool_name, sizeof(pool_name), "record pool %u", t);
        snprintf(cmd_name, sizeof(cmd_name), "record cb %u", t);
        for (uint32_t slot = 0; slot < config->frames_in_flight; slot++) {
            /* No RESET_COMMAND_BUFFER: the whole pool is reset once a frame. */
            const VkCommandPoolCreateInfo pool_info = {
                .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                .queueFamilyIndex = gpu->queue_family,
            };
            if (!demo_vk_check(vkCreateCommandPool(gpu->device, &pool_info, NULL,
                                                   &recorder->pools[slot]),
                               "vkCreateCommandPool"))
                return false;
            const VkCommandBufferAllocateInfo alloc_info = {
                .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                .commandPool = recorder->pools[slot],
                .level = config->secondary ? VK_COMMAND_BUFFER_LEVEL_SECONDARY
                                           : VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                .commandBufferCount = 1,
            };
            if (!demo_vk_check(vkAllocateCommandBuffers(gpu->device, &alloc_info,
                                                        &draws->cmds[slot][t]),
                               "vkAllocateCommandBuffers"))
                return false;
            demo_gpu_name(gpu, VK_OBJECT_TYPE_COMMAND_POOL,
                          (uint64_t)(uintptr_t)recorder->pools[slot], pool_name);
            demo_gpu_name(gpu, VK_OBJECT_TYPE_COMMAND_BUFFER,
                          (uint64_t)(uintptr_t)draws->cmds[slot][t], cmd_name);
        }
    }
    return true;
}

static bool start_workers(struct demo_draws *draws)
{
    if (draws->config.threads < 2)
        return true;
    if (pthread_mutex_init(&draws->lock, NULL) != 0)
        goto error;
    if (pthread_cond_init(&draws->job_posted, NULL) != 0) {
        pthread_mutex_destroy(&draws->lock);
        goto error;
    }
    if (pthread_cond_init(&draws->job_finished, NULL) != 0) {
        pthread_cond_destroy(&draws->job_posted);
        pthread_mutex_destroy(&draws->lock);
        goto error;
    }
    draws->lock_ready = true;
    for (uint32_t t = 1; t < draws->config.threads; t++) {
        struct recorder *recorder = &draws->recorders[t];
        if (pthread_create(&recorder->thread, NULL, recorder_main, recorder) != 0)
            goto error;
        /* At most 16 threads (demo-options.c): "demo-record-15" fits the kernel's 16 bytes. */
        char name[16];
        snprintf(name, sizeof(name), "demo-record-%u", t % 100u);
        pthread_setname_np(recorder->thread, name);
        draws->workers_started++;
    }
    return true;

error:
    fprintf(stderr, DEMO_NAME ": cannot start the --record-threads threads\n");
    return false;
}

struct demo_draws *demo_draws_create(struct demo_gpu *gpu, const struct demo_instance *instance,
                                     const struct demo_pipeline *pipeline,
                                     const struct demo_draws_config *config)
{
    struct demo_draws *draws = calloc(1, sizeof(*draws));
    if (!draws) {
        fprintf(stderr, DEMO_NAME ": out of memory\n");
        return NULL;
    }
    draws->gpu = gpu;
    draws->config = *config;
    /* N / T each, and one more for the first N % T. */
    for (uint32_t t = 0; t < config->threads; t++) {
        draws->recorders[t] = (struct recorder){
            .draws = draws,
            .index = t,
            .draw_count = config->draws / config->threads + (t < config->draws % config->threads),
        };
    }
    if (instance->debug_utils) {
        draws->begin_label = (PFN_vkCmdBeginDebugUtilsLabelEXT)
            vkGetInstanceProcAddr(instance->handle, "vkCmdBeginDebugUtilsLabelEXT");
        draws->end_label = (PFN_vkCmdEndDebugUtilsLabelEXT)
            vkGetInstanceProcAddr(instance->handle, "vkCmdEndDebugUtilsLabelEXT");
        if (!draws->begin_label || !draws->end_label) {
            draws->begin_label = NULL;
            draws->end_label = NULL;
        }
    }

    if (!create_meshes(draws) || !create_descriptor_sets(draws) ||
        !create_render_pass(draws, pipeline) || !create_pipeline(draws) ||
        !create_command_buffers(draws) || !start_workers(draws)) {
        demo_draws_destroy(draws);
        return NULL;
    }
    return draws;
}

void demo_draws_destroy(struct demo_draws *draws)
{
    if (!draws)
        return;
    VkDevice device = draws->gpu->device;

    if (draws->lock_ready) {
        pthread_mutex_lock(&draws->lock);
        draws->quit = true;
        pthread_cond_broadcast(&draws->job_posted);
        pthread_mutex_unlock(&draws->lock);
    }
    for (uint32_t t = 1; t <= draws->workers_started; t++)
        pthread_join(draws->recorders[t].thread, NULL);
    if (draws->lock_ready) {
        pthread_cond_destroy(&draws->job_finished);
        pthread_cond_destroy(&draws->job_posted);
        pthread_mutex_destroy(&draws->lock);
    }

    /* Destroying a pool frees its command buffer. */
    for (uint32_t t = 0; t < draws->config.threads; t++) {
        for (uint32_t slot = 0; slot < draws->config.frames_in_flight; slot++) {
            if (draws->recorders[t].pools[slot])
                vkDestroyCommandPool(device, draws->recorders[t].pools[slot], NULL);
        }
    }
    if (draws->pipeline)
        vkDestroyPipeline(device, draws->pipeline, NULL);
    if (draws->layout)
        vkDestroyPipelineLayout(device, draws->layout, NULL);
    /* Destroying the pool frees the sets. */
    if (draws->descriptor_pool)
        vkDestroyDescriptorPool(device, draws->descriptor_pool, NULL);
    if (draws->set_layout)
        vkDestroyDescriptorSetLayout(device, draws->set_layout, NULL);
    if (draws->dynamic_layout)
        vkDestroyDescriptorSetLayout(device, draws->dynamic_layout, NULL);
    if (draws->pass)
        vkDestroyRenderPass(device, draws->pass, NULL);
    for (uint32_t i = 0; i < MESH_COUNT; i++) {
        if (draws->vertex_buffers[i])
            vkDestroyBuffer(device, draws->vertex_buffers[i], NULL);
        if (draws->index_buffers[i])
            vkDestroyBuffer(device, draws->index_buffers[i], NULL);
    }
    if (draws->uniform_buffer)
        vkDestroyBuffer(device, draws->uniform_buffer, NULL);
    if (draws->mesh_memory)
        vkFreeMemory(device, draws->mesh_memory, NULL);
    if (draws->uniform_memory)
        vkFreeMemory(device, draws->uniform_memory, NULL);
    free(draws);
}
