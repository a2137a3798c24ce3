#include "readback.h"

/* The host-visible memory the copies land in: host-cached if there is such, coherent if there
 * is such, else -1. */
static int copies_memory_type(struct device_data *dev, uint32_t allowed, bool *coherent)
{
    VkPhysicalDeviceMemoryProperties props;
    dev->instance->vk.GetPhysicalDeviceMemoryProperties(dev->physical, &props);
    int best = -1, best_score = -1;
    for (uint32_t i = 0; i < props.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = props.memoryTypes[i].propertyFlags;
        if (!(allowed & (1u << i)) || !(f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
            continue;
        int score = (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT ? 2 : 0) +
                    (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT ? 1 : 0);
        if (score > best_score) {
            best = (int)i;
            best_score = score;
            *coherent = f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        }
    }
    return best;
}

bool readback_init(struct device_data *dev, struct readback *rb, uint32_t words)
{
    *rb = (struct readback){ 0 };
    const VkBufferCreateInfo buffer_info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = (VkDeviceSize)words * sizeof(uint64_t),
        .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    if (dev->vk.CreateBuffer(dev->device, &buffer_info, NULL, &rb->buffer) != VK_SUCCESS)
        goto error;
    VkMemoryRequirements req;
    dev->vk.GetBufferMemoryRequirements(dev->device, rb->buffer, &req);
    bool coherent = false;
    int type = copies_memory_type(dev, req.memoryTypeBits, &coherent);
    const VkMemoryAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = type < 0 ? 0 : (uint32_t)type,
    };
    void *map = NULL;
    if (type < 0 || dev->vk.AllocateMemory(dev->device, &alloc, NULL, &rb->memory) != VK_SUCCESS)
        goto error_buffer;
    if (dev->vk.BindBufferMemory(dev->device, rb->buffer, rb->memory, 0) != VK_SUCCESS ||
        dev->vk.MapMemory(dev->device, rb->memory, 0, VK_WHOLE_SIZE, 0, &map) != VK_SUCCESS)
        goto error_memory;
    rb->map = map;
    if (!coherent) {
        VkPhysicalDeviceProperties props;
        dev->instance->vk.GetPhysicalDeviceProperties(dev->physical, &props);
        rb->invalidate_atom = props.limits.nonCoherentAtomSize ? props.limits.nonCoherentAtomSize
                                                               : 1;
    }
    return true;
error_memory:
    dev->vk.FreeMemory(dev->device, rb->memory, NULL);
error_buffer:
    dev->vk.DestroyBuffer(dev->device, rb->buffer, NULL);
error:
    *rb = (struct readback){ 0 };
    return false;
}

void readback_finish(struct device_data *dev, struct readback *rb)
{
    if (rb->buffer)
        dev->vk.DestroyBuffer(dev->device, rb->buffer, NULL);
    if (rb->memory)
        dev->vk.FreeMemory(dev->device, rb->memory, NULL); /* unmaps it */
    *rb = (struct readback){ 0 };
}

void readback_record_copy(struct device_data *dev, VkCommandBuffer cb, struct readback *rb,
                          VkQueryPool pool, uint32_t first, uint32_t count, uint32_t words)
{
    VkDeviceSize stride = (VkDeviceSize)words * sizeof(uint64_t);
    dev->vk.CmdCopyQueryPoolResults(cb, pool, first, count, rb->buffer, first * stride, stride,
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
}

void readback_record_visible(struct device_data *dev, VkCommandBuffer cb)
{
    const VkMemoryBarrier to_host = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
    };
    dev->vk.CmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                               1, &to_host, 0, NULL, 0, NULL);
}

void readback_invalidate(struct device_data *dev, struct readback *rb, uint32_t first,
                         uint32_t count)
{
    if (!rb->invalidate_atom)
        return;
    VkDeviceSize a = rb->invalidate_atom, begin = first * sizeof(uint64_t) / a * a;
    VkDeviceSize end = ((first + count) * sizeof(uint64_t) + a - 1) / a * a;
    const VkMappedMemoryRange range = {
        .sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
        .memory = rb->memory,
        .offset = begin,
        .size = end - begin,
    };
    dev->vk.InvalidateMappedMemoryRanges(dev->device, 1, &range);
}
