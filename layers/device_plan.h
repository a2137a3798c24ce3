/* What GPU timing adds to the app's vkCreateDevice (device_plan.c says why and how). */
#ifndef FSCOPE_DEVICE_PLAN_H
#define FSCOPE_DEVICE_PLAN_H

#include "layer.h"

struct device_plan {
    VkDeviceCreateInfo info; /* what goes down the chain */
    uint32_t api;            /* the device's version: min(instance apiVersion, the GPU's) */
    bool host_reset, timeline, calibration; /* enabled, by the app or by us */
    bool creation_feedback; /* VkPipelineCreationFeedbackCreateInfo may be chained (1.3, or
                             * VK_EXT_pipeline_creation_feedback enabled by the app or us) */
    bool app_host_reset_ext, app_timeline_ext, app_calibration_ext, app_feedback_ext;
    /* pipelineStatisticsQuery asked for (FRAMESCOPE_PIPELINE_STATS), offered, and enabled (by
     * the app or by us: features10 replaces the app's pEnabledFeatures when we add it). */
    bool pipeline_stats_asked, pipeline_stats;
    VkPhysicalDeviceFeatures features10;
    VkStructureType unknown_struct; /* why the app's chain could not be changed; 0 if it could */
    VkPhysicalDeviceHostQueryResetFeatures host_reset_features;
    VkPhysicalDeviceTimelineSemaphoreFeatures timeline_features;
    const char **names;
    void *chain_copy;
};

/* Fills plan (which must not move until finish: info points into it). False when out of
 * memory. allow_timeline false: never use timeline semaphores (a test fault). */
bool device_plan_make(struct device_plan *plan, struct instance_data *inst,
                      VkPhysicalDevice phys, const VkDeviceCreateInfo *app_info,
                      bool gpu_timing, bool allow_timeline, bool pipeline_stats);
bool device_plan_changes_anything(const struct device_plan *plan, const VkDeviceCreateInfo *app);
/* Accepts a plan that failed half-way. */
void device_plan_finish(struct device_plan *plan);

#endif
