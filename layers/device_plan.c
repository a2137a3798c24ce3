/* What GPU timing adds to the app's vkCreateDevice, decided apart from the loader plumbing.
 *
 * GPU timing wants host query resets (VK_EXT_host_query_reset, core in 1.2), timeline
 * semaphores (VK_KHR_timeline_semaphore, core in 1.2) for its own completion signal, and
 * VK_EXT_calibrated_timestamps. Each is added only where it is valid for the app's device:
 * - the device's version is the lower of the instance's apiVersion and the GPU's;
 * - every extension added depends on VK_KHR_get_physical_device_properties2 (or 1.1), which
 *   the layer enables on a Vulkan 1.0 instance itself (framescope_CreateInstance); only where
 *   the loader refused it does such an app get none of them;
 * - a feature the app already names in its chain (VkPhysicalDeviceVulkan12Features, very
 *   common, often with hostQueryReset = VK_FALSE) is turned on in a copy of that struct, in a
 *   copy of the chain up to it: adding a second struct beside it would be invalid, and the
 *   app's own memory is never written.
 * Where a struct before the one to change is unknown to us (we cannot copy what we cannot
 * size), nothing is changed and timing falls back to resets in the command buffer and a
 * fence as completion signal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_plan.h"
#include "util/log.h"

static bool has_extension(const VkExtensionProperties *props, uint32_t count, const char *name)
{
    for (uint32_t i = 0; i < count; i++)
        if (strcmp(props[i].extensionName, name) == 0)
            return true;
    return false;
}

static bool app_enabled(const VkDeviceCreateInfo *info, const char *name)
{
    for (uint32_t i = 0; i < info->enabledExtensionCount; i++)
        if (strcmp(info->ppEnabledExtensionNames[i], name) == 0)
            return true;
    return false;
}

static bool supports_calibration(struct instance_data *inst, VkPhysicalDevice phys)
{
    if (!inst->vk.GetPhysicalDeviceCalibrateableTimeDomainsEXT)
        return false;
    VkTimeDomainEXT domains[8];
    uint32_t count = 8;
    VkResult r = inst->vk.GetPhysicalDeviceCalibrateableTimeDomainsEXT(phys, &count, domains);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE)
        return false;
    bool device = false, mono = false;
    for (uint32_t i = 0; i < count; i++) {
        device |= domains[i] == VK_TIME_DOMAIN_DEVICE_EXT;
        mono |= domains[i] == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
    }
    return device && mono;
}

/* Sizes of the structs we may have to copy to reach one we change. */
#define KNOWN_STRUCTS(X)                                                                       \
    X(VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO, VkLayerDeviceCreateInfo)                    \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, VkPhysicalDeviceFeatures2)                 \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, VkPhysicalDeviceVulkan11Features) \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, VkPhysicalDeviceVulkan12Features) \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, VkPhysicalDeviceVulkan13Features) \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES,                             \
      VkPhysicalDeviceHostQueryResetFeatures)                                                  \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,                           \
      VkPhysicalDeviceTimelineSemaphoreFeatures)                                               \
    X(VK_STRUCTURE_TYPE_DEVICE_GROUP_DEVICE_CREATE_INFO, VkDeviceGroupDeviceCreateInfo)        \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES,                            \
      VkPhysicalDeviceSynchronization2Features)                                                \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DYNAMIC_RENDERING_FEATURES,                            \
      VkPhysicalDeviceDynamicRenderingFeatures)                                                \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES,                        \
      VkPhysicalDeviceBufferDeviceAddressFeatures)                                             \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_FEATURES,                          \
      VkPhysicalDeviceDescriptorIndexingFeatures)                                              \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT,                             \
      VkPhysicalDeviceRobustness2FeaturesEXT)                                                  \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,                                \
      VkPhysicalDevice16BitStorageFeatures)                                                    \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,                          \
      VkPhysicalDeviceShaderFloat16Int8Features)                                               \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SCALAR_BLOCK_LAYOUT_FEATURES,                          \
      VkPhysicalDeviceScalarBlockLayoutFeatures)                                               \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_IMAGELESS_FRAMEBUFFER_FEATURES,                        \
      VkPhysicalDeviceImagelessFramebufferFeatures)                                            \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MULTIVIEW_FEATURES, VkPhysicalDeviceMultiviewFeatures) \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_DRAW_PARAMETERS_FEATURES,                       \
      VkPhysicalDeviceShaderDrawParametersFeatures)                                            \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VARIABLE_POINTERS_FEATURES,                            \
      VkPhysicalDeviceVariablePointersFeatures)                                                \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES,                                \
      VkPhysicalDeviceMaintenance4Features)                                                    \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTENDED_DYNAMIC_STATE_FEATURES_EXT,                   \
      VkPhysicalDeviceExtendedDynamicStateFeaturesEXT)                                         \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TRANSFORM_FEEDBACK_FEATURES_EXT,                       \
      VkPhysicalDeviceTransformFeedbackFeaturesEXT)                                            \
    X(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PRIVATE_DATA_FEATURES,                                 \
      VkPhysicalDevicePrivateDataFeatures)                                                     \
    X(VK_STRUCTURE_TYPE_DEVICE_PRIVATE_DATA_CREATE_INFO, VkDevicePrivateDataCreateInfo)

static size_t struct_size(VkStructureType type)
{
    switch (type) {
#define X(stype, ctype)                                                                        \
    case stype:                                                                                \
        return sizeof(ctype);
        KNOWN_STRUCTS(X)
#undef X
    default:
        return 0;
    }
}

/* Does this struct need a change for what we want? */
static bool needs_change(const VkBaseInStructure *s, bool host_reset, bool timeline, bool stats)
{
    switch (s->sType) {
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2:
        return stats && !((const VkPhysicalDeviceFeatures2 *)s)->features.pipelineStatisticsQuery;
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
        const VkPhysicalDeviceVulkan12Features *f = (const void *)s;
        return (host_reset && !f->hostQueryReset) || (timeline && !f->timelineSemaphore);
    }
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES:
        return host_reset && !((const VkPhysicalDeviceHostQueryResetFeatures *)s)->hostQueryReset;
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES:
        return timeline &&
               !((const VkPhysicalDeviceTimelineSemaphoreFeatures *)s)->timelineSemaphore;
    default:
        return false;
    }
}

static void change(VkBaseOutStructure *s, bool host_reset, bool timeline, bool stats)
{
    switch (s->sType) {
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2:
        ((VkPhysicalDeviceFeatures2 *)s)->features.pipelineStatisticsQuery |= stats;
        break;
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
        VkPhysicalDeviceVulkan12Features *f = (void *)s;
        f->hostQueryReset |= host_reset;
        f->timelineSemaphore |= timeline;
        break;
    }
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES:
        ((VkPhysicalDeviceHostQueryResetFeatures *)s)->hostQueryReset |= host_reset;
        break;
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES:
        ((VkPhysicalDeviceTimelineSemaphoreFeatures *)s)->timelineSemaphore |= timeline;
        break;
    default:
        break;
    }
}

/* Copies the chain up to (and including) its last struct that needs a change, changes the
 * copies and links the rest of the app's chain behind them. False when a struct on the way
 * is of a type we cannot size. */
static bool copy_and_change(struct device_plan *plan, const void *app_chain, bool host_reset,
                            bool timeline, bool stats)
{
    const VkBaseInStructure *last = NULL;
    size_t total = 0;
    for (const VkBaseInStructure *s = app_chain; s; s = s->pNext)
        if (needs_change(s, host_reset, timeline, stats))
            last = s;
    if (!last)
        return true;
    for (const VkBaseInStructure *s = app_chain; s != last->pNext; s = s->pNext) {
        size_t size = struct_size(s->sType);
        if (!size) {
            plan->unknown_struct = s->sType;
            return false;
        }
        total += (size + 15) & ~(size_t)15;
    }
    char *memory = calloc(1, total);
    if (!memory)
        return false;
    plan->chain_copy = memory;
    VkBaseOutStructure *prev = NULL;
    for (const VkBaseInStructure *s = app_chain; s != last->pNext; s = s->pNext) {
        size_t size = struct_size(s->sType);
        VkBaseOutStructure *copy = (VkBaseOutStructure *)memory;
        memcpy(copy, s, size);
        change(copy, host_reset, timeline, stats);
        if (prev)
            prev->pNext = copy;
        else
            plan->info.pNext = copy;
        prev = copy;
        memory += (size + 15) & ~(size_t)15;
    }
    prev->pNext = (VkBaseOutStructure *)last->pNext;
    return true;
}

static const void *find_struct(const void *chain, VkStructureType type)
{
    for (const VkBaseInStructure *s = chain; s; s = s->pNext)
        if (s->sType == type)
            return s;
    return NULL;
}

/* For the info log only: whether the app's own chain already turns a feature on, so that the
 * log names what framescope added and nothing the app asked for itself. */
static bool app_turned_on(const void *chain, bool host_reset)
{
    for (const VkBaseInStructure *s = chain; s; s = s->pNext) {
        switch (s->sType) {
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
            const VkPhysicalDeviceVulkan12Features *f = (const void *)s;
            if (host_reset ? f->hostQueryReset : f->timelineSemaphore)
                return true;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES:
            if (host_reset && ((const VkPhysicalDeviceHostQueryResetFeatures *)s)->hostQueryReset)
                return true;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES:
            if (!host_reset &&
                ((const VkPhysicalDeviceTimelineSemaphoreFeatures *)s)->timelineSemaphore)
                return true;
            break;
        default:
            break;
        }
    }
    return false;
}

/* Says at info level what the plan adds to the app's device (the driver may still refuse it:
 * framescope_CreateDevice then says so). */
static void plan_log(const struct device_plan *plan, const VkDeviceCreateInfo *app_info)
{
    if (!fscope_log_enabled(FSCOPE_LOG_INFO))
        return;
    char extensions[256] = "", features[64] = "";
    size_t used = 0;
    for (uint32_t i = app_info->enabledExtensionCount; i < plan->info.enabledExtensionCount; i++) {
        int written = snprintf(extensions + used, sizeof(extensions) - used, "%s%s",
                               used ? ", " : "", plan->names[i]);
        if (written < 0 || (size_t)written >= sizeof(extensions) - used)
            break;
        used += (size_t)written;
    }
    bool host_reset = plan->host_reset && !app_turned_on(app_info->pNext, true);
    bool timeline = plan->timeline && !app_turned_on(app_info->pNext, false);
    snprintf(features, sizeof(features), "%s%s%s", host_reset ? "hostQueryReset" : "",
             host_reset && timeline ? ", " : "", timeline ? "timelineSemaphore" : "");
    fscope_log(FSCOPE_LOG_INFO, "GPU timing adds to the device: extensions: %s; features: %s",
               *extensions ? extensions : "none", *features ? features : "none");
}

bool device_plan_make(struct device_plan *plan, struct instance_data *inst,
                      VkPhysicalDevice phys, const VkDeviceCreateInfo *app_info,
                      bool gpu_timing, bool allow_timeline, bool pipeline_stats)
{
    memset(plan, 0, sizeof(*plan));
    plan->info = *app_info;
    plan->app_host_reset_ext = app_enabled(app_info, VK_EXT_HOST_QUERY_RESET_EXTENSION_NAME);
    plan->app_timeline_ext = app_enabled(app_info, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME);
    plan->app_calibration_ext = app_enabled(app_info, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME);
    plan->app_feedback_ext = app_enabled(app_info,
                                         VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);

    VkPhysicalDeviceProperties props;
    inst->vk.GetPhysicalDeviceProperties(phys, &props);
    plan->api = inst->api_version < props.apiVersion ? inst->api_version : props.apiVersion;
    /* Pipeline creation feedback (the hitches' evidence: cache hits, the driver's compile
     * time) is core in 1.3; below, the extension is added with GPU timing's. */
    plan->creation_feedback = plan->api >= VK_API_VERSION_1_3 || plan->app_feedback_ext;
    if (!gpu_timing) {
        fscope_log(FSCOPE_LOG_INFO, "GPU timing is off (FRAMESCOPE_GPU): nothing added to the "
                   "device");
        return true;
    }
    bool properties2 = plan->api >= VK_API_VERSION_1_1 || inst->properties2;
    if (!properties2) {
        fscope_log(FSCOPE_LOG_INFO, "GPU timing adds nothing to the device: the app uses "
                   "Vulkan 1.0 and the loader refused VK_KHR_get_physical_device_properties2");
        return true; /* nothing we add would be valid */
    }

    uint32_t count = 0;
    VkExtensionProperties *exts = NULL;
    if (inst->vk.EnumerateDeviceExtensionProperties(phys, NULL, &count, NULL) == VK_SUCCESS &&
        count && (exts = calloc(count, sizeof(*exts))) &&
        inst->vk.EnumerateDeviceExtensionProperties(phys, NULL, &count, exts) != VK_SUCCESS)
        count = 0;
    bool core12 = plan->api >= VK_API_VERSION_1_2;
    bool host_reset_offered = core12 || has_extension(exts, count,
                                                      VK_EXT_HOST_QUERY_RESET_EXTENSION_NAME);
    bool timeline_offered = allow_timeline &&
                            (core12 || has_extension(exts, count,
                                                     VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME));
    bool calibration = has_extension(exts, count, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME) &&
                       supports_calibration(inst, phys);
    bool add_feedback = !plan->creation_feedback &&
                        has_extension(exts, count, VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);
    free(exts);

    /* The features themselves: both are required wherever their extension is offered, and
     * present on every 1.2 driver we know, but ask. */
    PFN_vkGetPhysicalDeviceFeatures2 features2 = plan->api >= VK_API_VERSION_1_1
                                                     ? inst->vk.GetPhysicalDeviceFeatures2
                                                     : inst->vk.GetPhysicalDeviceFeatures2KHR;
    if (features2 && (host_reset_offered || timeline_offered)) {
        VkPhysicalDeviceHostQueryResetFeatures hq = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES,
        };
        VkPhysicalDeviceTimelineSemaphoreFeatures tl = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
        };
        VkPhysicalDeviceFeatures2 query = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2 };
        void **tail = &query.pNext;
        if (host_reset_offered) {
            *tail = &hq;
            tail = &hq.pNext;
        }
        if (timeline_offered)
            *tail = &tl;
        features2(phys, &query);
        host_reset_offered &= hq.hostQueryReset == VK_TRUE;
        timeline_offered &= tl.timelineSemaphore == VK_TRUE;
    } else {
        host_reset_offered = timeline_offered = false;
    }

    /* pipelineStatisticsQuery (FRAMESCOPE_PIPELINE_STATS): a 1.0 feature, in the app's
     * pEnabledFeatures (copied), its VkPhysicalDeviceFeatures2 (changed with the others), or
     * a pEnabledFeatures of ours. */
    const void *chain = app_info->pNext;
    bool stats = false;
    plan->pipeline_stats_asked = pipeline_stats;
    if (pipeline_stats) {
        VkPhysicalDeviceFeatures offered;
        inst->vk.GetPhysicalDeviceFeatures(phys, &offered);
        stats = offered.pipelineStatisticsQuery == VK_TRUE;
    }
    bool stats_in_chain = stats && find_struct(chain, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
    if (stats && !stats_in_chain) {
        if (app_info->pEnabledFeatures)
            plan->features10 = *app_info->pEnabledFeatures;
        plan->features10.pipelineStatisticsQuery = VK_TRUE;
        plan->info.pEnabledFeatures = &plan->features10;
    }

    /* Features: change the app's structs where it has them, else put ours in front. */
    if (!copy_and_change(plan, chain, host_reset_offered, timeline_offered, stats_in_chain)) {
        host_reset_offered = timeline_offered = false;
        if (stats_in_chain)
            stats = false;
        free(plan->chain_copy);
        plan->chain_copy = NULL;
        plan->info.pNext = app_info->pNext;
    }
    bool has12 = find_struct(chain, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
    if (!has12 && host_reset_offered &&
        !find_struct(chain, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES)) {
        plan->host_reset_features = (VkPhysicalDeviceHostQueryResetFeatures){
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES,
            .pNext = (void *)plan->info.pNext,
            .hostQueryReset = VK_TRUE,
        };
        plan->info.pNext = &plan->host_reset_features;
    }
    if (!has12 && timeline_offered &&
        !find_struct(chain, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES)) {
        plan->timeline_features = (VkPhysicalDeviceTimelineSemaphoreFeatures){
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
            .pNext = (void *)plan->info.pNext,
            .timelineSemaphore = VK_TRUE,
        };
        plan->info.pNext = &plan->timeline_features;
    }

    /* Extensions: only below 1.2 for the two features; calibration always needs its own. */
    plan->names = calloc(app_info->enabledExtensionCount + 4, sizeof(*plan->names));
    if (!plan->names)
        return false;
    if (app_info->enabledExtensionCount)
        memcpy(plan->names, app_info->ppEnabledExtensionNames,
               app_info->enabledExtensionCount * sizeof(*plan->names));
    plan->info.ppEnabledExtensionNames = plan->names;
    if (host_reset_offered && !core12 && !plan->app_host_reset_ext)
        plan->names[plan->info.enabledExtensionCount++] = VK_EXT_HOST_QUERY_RESET_EXTENSION_NAME;
    if (timeline_offered && !core12 && !plan->app_timeline_ext)
        plan->names[plan->info.enabledExtensionCount++] = VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME;
    if (calibration && !plan->app_calibration_ext)
        plan->names[plan->info.enabledExtensionCount++] =
            VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME;
    if (add_feedback) {
        plan->names[plan->info.enabledExtensionCount++] =
            VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME;
        plan->creation_feedback = true;
    }
    plan->host_reset = host_reset_offered;
    plan->timeline = timeline_offered;
    plan->pipeline_stats = stats;
    plan->calibration = calibration;
    plan_log(plan, app_info);
    return true;
}

bool device_plan_changes_anything(const struct device_plan *plan, const VkDeviceCreateInfo *app)
{
    return plan->info.pNext != app->pNext ||
           plan->info.enabledExtensionCount != app->enabledExtensionCount ||
           plan->info.pEnabledFeatures != app->pEnabledFeatures;
}

void device_plan_finish(struct device_plan *plan)
{
    free(plan->chain_copy);
    free(plan->names);
    plan->chain_copy = NULL;
    plan->names = NULL;
}
