/* The recording side of Vulkan objects: the names the app gives them, and each pipeline
 * creation (the layer's hooks call these, from any app thread). */
#ifndef FSCOPE_RECORD_OBJECTS_H
#define FSCOPE_RECORD_OBJECTS_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"

#define FSCOPE_EXPORT __attribute__((visibility("default")))

/* The app named object (type: a VkObjectType) name; a NULL or empty name clears it. */
FSCOPE_EXPORT void fscope_object_name(uint32_t device_id, int32_t type, uint64_t handle,
                                      const char *name);
/* A pipeline made by a create call that ended at end_ticks after duration_ticks. */
FSCOPE_EXPORT void fscope_pipeline_created(uint32_t device_id, uint64_t handle,
                                           uint64_t end_ticks, uint64_t duration_ticks,
                                           uint32_t flags, uint64_t driver_ns);

#endif
