/* Timestamps copied by the GPU into host memory of ours (vkCmdCopyQueryPoolResults), read
 * back from that memory with no driver call: for queries a later run may be resetting (GPU
 * zones in re-submitted command buffers), and on CPU devices, where the driver's query read
 * serialises with execution (lavapipe's vkGetQueryPoolResults waits for the device to idle). */
#ifndef FSCOPE_LAYER_READBACK_H
#define FSCOPE_LAYER_READBACK_H

#include "layer.h"

struct readback {
    VkBuffer buffer;
    VkDeviceMemory memory;
    const volatile uint64_t *map;
    VkDeviceSize invalidate_atom; /* 0: coherent memory, nothing to invalidate */
};

/* words 64-bit words of host-visible memory behind a transfer-destination buffer, mapped for
 * good. False (nothing made) when the device will not give them. */
bool readback_init(struct device_data *dev, struct readback *rb, uint32_t words);
/* Accepts a readback that was never made. */
void readback_finish(struct device_data *dev, struct readback *rb);
/* Records a copy of count queries from first, each words 64-bit words (a timestamp's 1, a
 * pipeline statistics query's one per statistic), into the words from first * words, waiting
 * for them; then readback_record_visible, once after a command buffer's copies, makes them
 * visible to the host. Outside any render pass. */
void readback_record_copy(struct device_data *dev, VkCommandBuffer cb, struct readback *rb,
                          VkQueryPool pool, uint32_t first, uint32_t count, uint32_t words);
void readback_record_visible(struct device_data *dev, VkCommandBuffer cb);
/* Makes the GPU's writes of words [first, first + count) visible to the host: once the
 * submission that copied them is known complete. */
void readback_invalidate(struct device_data *dev, struct readback *rb, uint32_t first,
                         uint32_t count);

#endif
