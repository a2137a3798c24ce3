/* GPU busy time of each frame, from the GPU spans of the frame's device. */
#ifndef FSCOPE_GPU_BUSY_H
#define FSCOPE_GPU_BUSY_H

#include <stddef.h>
#include <stdint.h>

#include "recording.h"

/* Fills gpu_busy_ticks, block_gpu_ticks and gpu_unsampled of every frame (frames.h) from the
 * GPU spans of the frame's device (of every device for frames marked by the app), and
 * rec->gpu_totals. Without memory for it, they stay 0. */
void recording_compute_gpu_busy(struct recording *rec);
/* Every device with GPU spans, by id: its busy time (the union of its spans) and its span
 * count, as recording_compute_gpu_busy found them. Returns how many; *ret is malloc'd (NULL
 * for none, or when memory ran out). */
struct device_gpu_total {
    uint32_t device_id;
    uint64_t busy_ticks, spans;
};
size_t device_gpu_totals(const struct recording *rec, struct device_gpu_total **ret);

#endif
