/* Vulkan objects of framescope-demo: instance and device (the pipeline: demo-pipeline.c; the
 * surface, swapchain and offscreen images: demo-targets.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"

const char *demo_vk_result_name(VkResult result)
{
    switch (result) {
#define RESULT(name) case name: return #name;
    RESULT(VK_SUCCESS)
    RESULT(VK_NOT_READY)
    RESULT(VK_TIMEOUT)
    RESULT(VK_EVENT_SET)
    RESULT(VK_EVENT_RESET)
    RESULT(VK_INCOMPLETE)
    RESULT(VK_SUBOPTIMAL_KHR)
    RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    RESULT(VK_ERROR_INITIALIZATION_FAILED)
    RESULT(VK_ERROR_DEVICE_LOST)
    RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    RESULT(VK_ERROR_FRAGMENTED_POOL)
    RESULT(VK_ERROR_UNKNOWN)
    RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    RESULT(VK_ERROR_FRAGMENTATION)
    RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    RESULT(VK_ERROR_SURFACE_LOST_KHR)
    RESULT(VK_ERROR_NATIVE_WINDOW_IN_USE_KHR)
    RESULT(VK_ERROR_OUT_OF_DATE_KHR)
    RESULT(VK_ERROR_INCOMPATIBLE_DISPLAY_KHR)
    RESULT(VK_ERROR_VALIDATION_FAILED_EXT)
    RESULT(VK_ERROR_INVALID_SHADER_NV)
    RESULT(VK_ERROR_NOT_PERMITTED_KHR)
    RESULT(VK_ERROR_FULL_SCREEN_EXCLUSIVE_MODE_LOST_EXT)
#undef RESULT
    default: return "unknown VkResult";
    }
}

bool demo_vk_check(VkResult result, const char *call)
{
    if (result >= 0)
        return true;
    fprintf(stderr, DEMO_NAME ": %s failed: %s (%d)\n", call, demo_vk_result_name(result),
            (int)result);
    return false;
}

/* ---- instance ---- */

enum demo_debug_utils demo_debug_utils;

static bool has_instance_extension(const char *name)
{
    uint32_t count = 0;
    if (vkEnumerateInstanceExtensionProperties(NULL, &count, NULL) < 0)
        return false;
    VkExtensionProperties *extensions = calloc(count ? count : 1, sizeof(*extensions));
    if (!extensions)
        return false;
    bool found = false;
    if (vkEnumerateInstanceExtensionProperties(NULL, &count, extensions) >= 0) {
        for (uint32_t i = 0; i < count && !found; i++)
            found = strcmp(extensions[i].extensionName, name) == 0;
    }
    free(extensions);
    return found;
}

bool demo_instance_init(struct demo_instance *instance, bool with_surface, uint32_t api_version)
{
    uint32_t loader_version = VK_API_VERSION_1_0;
    PFN_vkEnumerateInstanceVersion enumerate_version = (PFN_vkEnumerateInstanceVersion)
        vkGetInstanceProcAddr(VK_NULL_HANDLE, "vkEnumerateInstanceVersion");
    if (enumerate_version &&
        !demo_vk_check(enumerate_version(&loader_version), "vkEnumerateInstanceVersion"))
        return false;
    if (api_version == 0) {
        api_version = loader_version < VK_API_VERSION_1_3 ? loader_version : VK_API_VERSION_1_3;
    } else if (VK_API_VERSION_MINOR(api_version) > VK_API_VERSION_MINOR(loader_version)) {
        /* A 1.0 loader would fail vkCreateInstance with a bare INCOMPATIBLE_DRIVER. */
        fprintf(stderr, DEMO_NAME ": --api-version 1.%u: the Vulkan loader only offers 1.%u\n",
                VK_API_VERSION_MINOR(api_version), VK_API_VERSION_MINOR(loader_version));
        return false;
    }

    const char *extensions[3];
    uint32_t extension_count = 0;
    if (with_surface) {
        extensions[extension_count++] = VK_KHR_SURFACE_EXTENSION_NAME;
        extensions[extension_count++] = "VK_KHR_wayland_surface";
    }
    bool debug_utils = demo_debug_utils == DEMO_DEBUG_UTILS_REQUIRED ||
                       (demo_debug_utils == DEMO_DEBUG_UTILS_IF_AVAILABLE &&
                        has_instance_extension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME));
    if (debug_utils)
        extensions[extension_count++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkApplicationInfo app_info = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = DEMO_NAME,
        .applicationVersion = 1,
        .pEngineName = DEMO_NAME,
        .engineVersion = 1,
        .apiVersion = api_version,
    };
    VkInstanceCreateInfo create_info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app_info,
        .enabledExtensionCount = extension_count,
        .ppEnabledExtensionNames = extension_count ? extensions : NULL,
    };
    *instance = (struct demo_instance){ .api_version = api_version, .debug_utils = debug_utils };
    return demo_vk_check(vkCreateInstance(&create_info, NULL, &instance->handle),
                         "vkCreateInstance");
}

void demo_instance_finish(struct demo_instance *instance)
{
    if (instance->handle)
        vkDestroyInstance(instance->handle, NULL);
    instance->handle = VK_NULL_HANDLE;
}

/* ---- device ---- */

static bool has_device_extension(VkPhysicalDevice physical_device, const char *name)
{
    uint32_t count = 0;
    if (vkEnumerateDeviceExtensionProperties(physical_device, NULL, &count, NULL) < 0)
        return false;
    VkExtensionProperties *extensions = calloc(count ? count : 1, sizeof(*extensions));
    if (!extensions)
        return false;
    bool found = false;
    if (vkEnumerateDeviceExtensionProperties(physical_device, NULL, &count, extensions) >= 0) {
        for (uint32_t i = 0; i < count && !found; i++)
            found = strcmp(extensions[i].extensionName, name) == 0;
    }
    free(extensions);
    return found;
}

/* First queue family with graphics that can present to surface, or UINT32_MAX. */
static uint32_t find_queue_family(VkPhysicalDevice physical_device, VkSurfaceKHR surface)
{
    uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(physical_device, &count, NULL);
    VkQueueFamilyProperties *families = calloc(count ? count : 1, sizeof(*families));
    if (!families)
        return UINT32_MAX;
    vkGetPhysicalDeviceQueueFamilyProperties(physical_device, &count, families);

    uint32_t found = UINT32_MAX;
    for (uint32_t i = 0; i < count && found == UINT32_MAX; i++) {
        if (!(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) || families[i].queueCount == 0)
            continue;
        VkBool32 can_present = VK_TRUE;
        if (surface && vkGetPhysicalDeviceSurfaceSupportKHR(physical_device, i, surface,
                                                            &can_present) < 0)
            can_present = VK_FALSE;
        if (can_present)
            found = i;
    }
    free(families);
    return found;
}

bool demo_physical_device_pick(const struct demo_instance *instance, VkSurfaceKHR surface,
                               VkPhysicalDevice *ret_device, uint32_t *ret_family)
{
    uint32_t count = 0;
    if (!demo_vk_check(vkEnumeratePhysicalDevices(instance->handle, &count, NULL),
                       "vkEnumeratePhysicalDevices"))
        return false;
    VkPhysicalDevice *devices = calloc(count ? count : 1, sizeof(*devices));
    if (!devices) {
        fprintf(stderr, DEMO_NAME ": out of memory\n");
        return false;
    }
    if (!demo_vk_check(vkEnumeratePhysicalDevices(instance->handle, &count, devices),
                       "vkEnumeratePhysicalDevices")) {
        free(devices);
        return false;
    }

    bool found = false;
    for (uint32_t i = 0; i < count && !found; i++) {
        uint32_t family = find_queue_family(devices[i], surface);
        if (family == UINT32_MAX)
            continue;
        if (surface && !has_device_extension(devices[i], VK_KHR_SWAPCHAIN_EXTENSION_NAME))
            continue;
        *ret_device = devices[i];
        *ret_family = family;
        found = true;
    }
    free(devices);
    if (!found)
        fprintf(stderr, DEMO_NAME ": no Vulkan device with a graphics queue%s\n",
                surface ? " that can present to the Wayland surface" : "");
    return found;
}

struct demo_gpu *demo_gpu_create(const struct demo_instance *instance, VkSurfaceKHR surface,
                                 const struct demo_gpu_config *config)
{
    struct demo_gpu *gpu = calloc(1, sizeof(*gpu));
    if (!gpu) {
        fprintf(stderr, DEMO_NAME ": out of memory\n");
        return NULL;
    }
    if (pthread_mutex_init(&gpu->queue_lock, NULL) != 0) {
        fprintf(stderr, DEMO_NAME ": pthread_mutex_init failed\n");
        free(gpu);
        return NULL;
    }
    if (!demo_physical_device_pick(instance, surface, &gpu->physical_device, &gpu->queue_family))
        goto error;
    vkGetPhysicalDeviceMemoryProperties(gpu->physical_device, &gpu->memory_properties);

    VkPhysicalDeviceProperties properties;
    vkGetPhysicalDeviceProperties(gpu->physical_device, &properties);
    uint32_t api_version = properties.apiVersion < instance->api_version
                           ? properties.apiVersion : instance->api_version;

    const char *extensions[2];
    uint32_t extension_count = 0;
    if (surface)
        extensions[extension_count++] = VK_KHR_SWAPCHAIN_EXTENSION_NAME;

    /* Each feature struct goes in front of this chain when it is used. */
    void *feature_chain = NULL;

    /* synchronization2 is core in 1.3; before that it is an extension with its own entry. */
    VkPhysicalDeviceSynchronization2Features sync2_features = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES,
    };
    const char *submit2_name = "vkQueueSubmit2";
    if (config->submit2) {
        bool core = api_version >= VK_API_VERSION_1_3;
        if (!core) {
            if (instance->api_version < VK_API_VERSION_1_1 ||
                !has_device_extension(gpu->physical_device,
                                      VK_KHR_SYNCHRONIZATION_2_EXTENSION_NAME)) {
                fprintf(stderr, DEMO_NAME ": --submit2: %s has neither Vulkan 1.3 nor "
                        "VK_KHR_synchronization2\n", properties.deviceName);
                goto error;
            }
            extensions[extension_count++] = VK_KHR_SYNCHRONIZATION_2_EXTENSION_NAME;
            submit2_name = "vkQueueSubmit2KHR";
        }
        VkPhysicalDeviceFeatures2 features = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
            .pNext = &sync2_features,
        };
        vkGetPhysicalDeviceFeatures2(gpu->physical_device, &features);
        if (!sync2_features.synchronization2) {
            fprintf(stderr, DEMO_NAME ": --submit2: %s does not support the "
                    "synchronization2 feature\n", properties.deviceName);
            goto error;
        }
        sync2_features.pNext = feature_chain;
        feature_chain = &sync2_features;
    }

    if ((config->vk12_features || config->timeline_semaphore) &&
        api_version < VK_API_VERSION_1_2) {
        fprintf(stderr, DEMO_NAME ": %s needs Vulkan 1.2; %s with this instance offers 1.%u\n",
                config->vk12_features ? "--vk12-features" : "a timeline semaphore",
                properties.deviceName, VK_API_VERSION_MINOR(api_version));
        goto error;
    }
    if (config->timeline_semaphore) {
        VkPhysicalDeviceTimelineSemaphoreFeatures timeline_support = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
        };
        VkPhysicalDeviceFeatures2 features = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
            .pNext = &timeline_support,
        };
        vkGetPhysicalDeviceFeatures2(gpu->physical_device, &features);
        if (!timeline_support.timelineSemaphore) {
            fprintf(stderr, DEMO_NAME ": %s does not support timeline semaphores\n",
                    properties.deviceName);
            goto error;
        }
    }
    /*
     * The 1.2 aggregate and the per-feature struct of anything it covers may not share a
     * chain, so with --vk12-features the timeline feature is that struct's member instead.
     */
    VkPhysicalDeviceVulkan12Features vk12_features = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .timelineSemaphore = config->timeline_semaphore,
    };
    VkPhysicalDeviceTimelineSemaphoreFeatures timeline_features = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
        .timelineSemaphore = VK_TRUE,
    };
    if (config->vk12_features) {
        vk12_features.pNext = feature_chain;
        feature_chain = &vk12_features;
    } else if (config->timeline_semaphore) {
        timeline_features.pNext = feature_chain;
        feature_chain = &timeline_features;
    }

    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue_infos[2] = { {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = gpu->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    } };
    uint32_t queue_info_count = 1;
    gpu->transfer_family = UINT32_MAX;
    gpu->extra_submits = config->extra_submits;
    if (config->transfer_queue) {
        /* Fewest valid bits first: where timestamps wrap soonest (32 bits on an H200). */
        VkQueueFamilyProperties families[16];
        uint32_t family_count = 16;
        vkGetPhysicalDeviceQueueFamilyProperties(gpu->physical_device, &family_count, families);
        uint32_t best_bits = UINT32_MAX;
        for (uint32_t i = 0; i < family_count; i++) {
            VkQueueFlags flags = families[i].queueFlags;
            if ((flags & VK_QUEUE_GRAPHICS_BIT) || !(flags & (VK_QUEUE_TRANSFER_BIT |
                                                               VK_QUEUE_COMPUTE_BIT)) ||
                families[i].timestampValidBits == 0 || families[i].timestampValidBits >= best_bits)
                continue;
            best_bits = families[i].timestampValidBits;
            gpu->transfer_family = i;
        }
        if (gpu->transfer_family == UINT32_MAX) {
            fprintf(stderr, DEMO_NAME ": --transfer-queue: %s has no queue family without "
                    "graphics that can copy or compute with timestamps\n", properties.deviceName);
            goto error;
        }
        queue_infos[queue_info_count++] = (VkDeviceQueueCreateInfo){
            .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
            .queueFamilyIndex = gpu->transfer_family,
            .queueCount = 1,
            .pQueuePriorities = &priority,
        };
    }
    VkDeviceCreateInfo device_info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = feature_chain,
        .queueCreateInfoCount = queue_info_count,
        .pQueueCreateInfos = queue_infos,
        .enabledExtensionCount = extension_count,
        .ppEnabledExtensionNames = extension_count ? extensions : NULL,
    };
    if (!demo_vk_check(vkCreateDevice(gpu->physical_device, &device_info, NULL, &gpu->device),
                       "vkCreateDevice"))
        goto error;
    vkGetDeviceQueue(gpu->device, gpu->queue_family, 0, &gpu->queue);
    if (gpu->transfer_family != UINT32_MAX) {
        vkGetDeviceQueue(gpu->device, gpu->transfer_family, 0, &gpu->transfer_queue);
        VkCommandPoolCreateInfo pool_info = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
            .queueFamilyIndex = gpu->transfer_family,
        };
        VkCommandBufferAllocateInfo alloc_info = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
            .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            .commandBufferCount = 1,
        };
        VkCommandBufferBeginInfo begin = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO };
        VkFenceCreateInfo fence_info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
        if (!demo_vk_check(vkCreateCommandPool(gpu->device, &pool_info, NULL, &gpu->transfer_pool),
                           "vkCreateCommandPool"))
            goto error;
        alloc_info.commandPool = gpu->transfer_pool;
        /* Recorded once, empty: what matters is that the queue runs a batch every frame. */
        if (!demo_vk_check(vkAllocateCommandBuffers(gpu->device, &alloc_info, &gpu->transfer_cmd),
                           "vkAllocateCommandBuffers") ||
            !demo_vk_check(vkBeginCommandBuffer(gpu->transfer_cmd, &begin),
                           "vkBeginCommandBuffer") ||
            !demo_vk_check(vkEndCommandBuffer(gpu->transfer_cmd), "vkEndCommandBuffer") ||
            !demo_vk_check(vkCreateFence(gpu->device, &fence_info, NULL, &gpu->transfer_fence),
                           "vkCreateFence"))
            goto error;
    }

    if (gpu->extra_submits) {
        /* --submits: one empty command buffer, recorded once and in every extra submission
         * (pending several times at once, so SIMULTANEOUS_USE). */
        const VkCommandPoolCreateInfo extra_pool_info = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
            .queueFamilyIndex = gpu->queue_family,
        };
        VkCommandBufferAllocateInfo extra_alloc = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
            .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            .commandBufferCount = 1,
        };
        const VkCommandBufferBeginInfo extra_begin = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
            .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT,
        };
        if (!demo_vk_check(vkCreateCommandPool(gpu->device, &extra_pool_info, NULL,
                                               &gpu->extra_pool), "vkCreateCommandPool"))
            goto error;
        extra_alloc.commandPool = gpu->extra_pool;
        if (!demo_vk_check(vkAllocateCommandBuffers(gpu->device, &extra_alloc, &gpu->extra_cmd),
                           "vkAllocateCommandBuffers") ||
            !demo_vk_check(vkBeginCommandBuffer(gpu->extra_cmd, &extra_begin),
                           "vkBeginCommandBuffer") ||
            !demo_vk_check(vkEndCommandBuffer(gpu->extra_cmd), "vkEndCommandBuffer"))
            goto error;
    }

    if (instance->debug_utils) {
        gpu->set_object_name = (PFN_vkSetDebugUtilsObjectNameEXT)
            vkGetDeviceProcAddr(gpu->device, "vkSetDebugUtilsObjectNameEXT");
    }
    if (config->submit2) {
        gpu->queue_submit2 = (PFN_vkQueueSubmit2)vkGetDeviceProcAddr(gpu->device,
                                                                     submit2_name);
        if (!gpu->queue_submit2) {
            fprintf(stderr, DEMO_NAME ": vkGetDeviceProcAddr(%s) returned NULL\n",
                    submit2_name);
            goto error;
        }
    }
    return gpu;

error:
    demo_gpu_destroy(gpu);
    return NULL;
}

void demo_gpu_destroy(struct demo_gpu *gpu)
{
    if (!gpu)
        return;
    if (gpu->transfer_fence)
        vkDestroyFence(gpu->device, gpu->transfer_fence, NULL);
    if (gpu->transfer_pool)
        vkDestroyCommandPool(gpu->device, gpu->transfer_pool, NULL);
    if (gpu->extra_pool)
        vkDestroyCommandPool(gpu->device, gpu->extra_pool, NULL);
    if (gpu->device)
        vkDestroyDevice(gpu->device, NULL);
    pthread_mutex_destroy(&gpu->queue_lock);
    free(gpu);
}

void demo_gpu_name(struct demo_gpu *gpu, VkObjectType type, uint64_t handle, const char *name)
{
    if (!gpu->set_object_name)
        return;
    const VkDebugUtilsObjectNameInfoEXT info = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT,
        .objectType = type,
        .objectHandle = handle,
        .pObjectName = name,
    };
    /* A name is a hint for tools: a failure changes nothing the demo does. */
    gpu->set_object_name(gpu->device, &info);
}

bool demo_gpu_submit_transfer(struct demo_gpu *gpu)
{
    if (gpu->transfer_submitted &&
        (!demo_vk_check(vkWaitForFences(gpu->device, 1, &gpu->transfer_fence, VK_TRUE,
                                        UINT64_MAX), "vkWaitForFences") ||
         !demo_vk_check(vkResetFences(gpu->device, 1, &gpu->transfer_fence), "vkResetFences")))
        return false;
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &gpu->transfer_cmd,
    };
    /* Only this thread uses the transfer queue: no lock. */
    gpu->transfer_submitted = demo_vk_check(vkQueueSubmit(gpu->transfer_queue, 1, &submit,
                                                          gpu->transfer_fence),
                                            "vkQueueSubmit");
    return gpu->transfer_submitted;
}

bool demo_gpu_submit(struct demo_gpu *gpu, const struct demo_batch *batch)
{
    VkResult result;
    /* The acquire wait first, then the timeline one; unused entries stay past the count. */
    VkSemaphore waits[2];
    uint64_t wait_values[2] = { 0, 0 };
    uint32_t wait_count = 0;
    if (batch->wait)
        waits[wait_count++] = batch->wait;
    uint32_t timeline_index = wait_count;
    if (batch->timeline_wait) {
        wait_values[wait_count] = batch->timeline_wait_value;
        waits[wait_count++] = batch->timeline_wait;
    }
    VkCommandBuffer cmds[1 + DEMO_MAX_RECORD_THREADS];
    uint32_t cmd_count = 0;
    if (batch->cmd)
        cmds[cmd_count++] = batch->cmd;
    for (uint32_t i = 0; i < batch->then_cmd_count && cmd_count < 1 + DEMO_MAX_RECORD_THREADS;
         i++)
        cmds[cmd_count++] = batch->then_cmds[i];

    pthread_mutex_lock(&gpu->queue_lock);
    const VkSubmitInfo extra = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &gpu->extra_cmd,
    };
    for (uint32_t i = 0; i < gpu->extra_submits; i++) {
        if (!demo_vk_check(vkQueueSubmit(gpu->queue, 1, &extra, VK_NULL_HANDLE),
                           "vkQueueSubmit")) {
            pthread_mutex_unlock(&gpu->queue_lock);
            return false;
        }
    }
    if (gpu->queue_submit2) {
        VkSemaphoreSubmitInfo wait_infos[2];
        for (uint32_t i = 0; i < wait_count; i++) {
            wait_infos[i] = (VkSemaphoreSubmitInfo){
                .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
                .semaphore = waits[i],
                .value = wait_values[i],
                .stageMask = i == timeline_index
                             ? VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT
                             : VK_PIPELINE_STAGE_2_COLOR_ATTACHMENT_OUTPUT_BIT,
            };
        }
        VkSemaphoreSubmitInfo signal_info = {
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
            .semaphore = batch->signal,
            .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
        };
        VkCommandBufferSubmitInfo cmd_infos[1 + DEMO_MAX_RECORD_THREADS];
        for (uint32_t i = 0; i < cmd_count; i++) {
            cmd_infos[i] = (VkCommandBufferSubmitInfo){
                .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
                .commandBuffer = cmds[i],
            };
        }
        VkSubmitInfo2 submit = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
            .waitSemaphoreInfoCount = wait_count,
            .pWaitSemaphoreInfos = wait_infos,
            .commandBufferInfoCount = cmd_count,
            .pCommandBufferInfos = cmd_infos,
            .signalSemaphoreInfoCount = batch->signal ? 1 : 0,
            .pSignalSemaphoreInfos = &signal_info,
        };
        result = gpu->queue_submit2(gpu->queue, 1, &submit, batch->fence);
    } else {
        VkPipelineStageFlags wait_stages[2];
        for (uint32_t i = 0; i < wait_count; i++) {
            wait_stages[i] = i == timeline_index ? VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
                                                 : VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
        }
        /* Binary semaphores ignore their value, but every semaphore needs an entry. */
        uint64_t signal_value = 0;
        VkTimelineSemaphoreSubmitInfo timeline_info = {
            .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
            .waitSemaphoreValueCount = wait_count,
            .pWaitSemaphoreValues = wait_values,
            .signalSemaphoreValueCount = batch->signal ? 1 : 0,
            .pSignalSemaphoreValues = &signal_value,
        };
        VkSubmitInfo submit = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
            /* Only chained when used: it is a 1.2 struct, and --api-version 1.0 exists. */
            .pNext = batch->timeline_wait ? &timeline_info : NULL,
            .waitSemaphoreCount = wait_count,
            .pWaitSemaphores = waits,
            .pWaitDstStageMask = wait_stages,
            .commandBufferCount = cmd_count,
            .pCommandBuffers = cmds,
            .signalSemaphoreCount = batch->signal ? 1 : 0,
            .pSignalSemaphores = &batch->signal,
        };
        result = vkQueueSubmit(gpu->queue, 1, &submit, batch->fence);
    }
    pthread_mutex_unlock(&gpu->queue_lock);
    return demo_vk_check(result, gpu->queue_submit2 ? "vkQueueSubmit2" : "vkQueueSubmit");
}

VkResult demo_gpu_present(struct demo_gpu *gpu, VkSwapchainKHR swapchain, uint32_t image_index,
                          VkSemaphore wait)
{
    VkPresentInfoKHR present = {
        .sType = VK_STRUCTURE_TYPE_PRESENT_INFO_KHR,
        .waitSemaphoreCount = 1,
        .pWaitSemaphores = &wait,
        .swapchainCount = 1,
        .pSwapchains = &swapchain,
        .pImageIndices = &image_index,
    };
    pthread_mutex_lock(&gpu->queue_lock);
    VkResult result = vkQueuePresentKHR(gpu->queue, &present);
    pthread_mutex_unlock(&gpu->queue_lock);
    return result;
}

bool demo_gpu_wait_idle(struct demo_gpu *gpu)
{
    pthread_mutex_lock(&gpu->queue_lock);
    VkResult result = vkQueueWaitIdle(gpu->queue);
    pthread_mutex_unlock(&gpu->queue_lock);
    return demo_vk_check(result, "vkQueueWaitIdle");
}

bool demo_gpu_wait_device_idle(struct demo_gpu *gpu)
{
    /* vkDeviceWaitIdle needs every queue of the device externally synchronised. */
    pthread_mutex_lock(&gpu->queue_lock);
    VkResult result = vkDeviceWaitIdle(gpu->device);
    pthread_mutex_unlock(&gpu->queue_lock);
    return demo_vk_check(result, "vkDeviceWaitIdle");
}
