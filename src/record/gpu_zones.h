/* The recording side of GPU zones (layers/gpu_zones.c times them): names interned once per
 * recording, a span log per device written by that device's reader thread, and the count of
 * regions that could not be timed, by reason. */
#ifndef FSCOPE_RECORD_GPU_ZONES_H
#define FSCOPE_RECORD_GPU_ZONES_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"

#define FSCOPE_EXPORT __attribute__((visibility("default")))

struct fscope_gpu_zone_log;

/* The id of a zone path ("frame/shadow"), interned; false when the table is full (counted). */
FSCOPE_EXPORT bool fscope_gpu_zone_name(const char *path, uint16_t *ret_id);
/* One log per device; its spans come from one thread (the device's reader). */
FSCOPE_EXPORT struct fscope_gpu_zone_log *fscope_gpu_zone_log_create(uint32_t device_id);
FSCOPE_EXPORT void fscope_gpu_zone_add(struct fscope_gpu_zone_log *log, uint64_t begin_ticks,
                                       uint64_t end_ticks, uint16_t name, uint8_t depth,
                                       enum gpu_zone_kind kind);
FSCOPE_EXPORT void fscope_gpu_pass_stats(struct fscope_gpu_zone_log *log, uint64_t end_ticks,
                                         uint16_t name, const uint64_t values[PIPELINE_STATS]);
/* Pipeline statistics were asked for: on (a device has them) or unsupported; passes skipped. */
FSCOPE_EXPORT void fscope_gpu_pass_stats_state(enum rec_pipeline_stats_state state);
FSCOPE_EXPORT void fscope_gpu_pass_stats_skipped(uint64_t n);
/* n regions that could not be timed, for why. */
FSCOPE_EXPORT void fscope_gpu_zone_untimed(enum gpu_zone_untimed why, uint64_t n);

#endif
