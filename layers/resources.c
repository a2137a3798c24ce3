/* Resources: device memory (every allocation and free, by heap and type), descriptor pools
 * (sets allocated against their capacity) and VK_EXT_memory_budget, read with the kernel
 * sampler's tick on its thread. Allocation calls are slow and rare next to commands: each is
 * written down whole; a descriptor set allocation, common per frame in some engines, costs
 * a lock-free lookup and two atomics. */
#include <stdlib.h>
#include <string.h>

#include "layer.h"
#include "record/clock.h"
#include "record/engine.h"
#include "record/meta.h"

/* ---- device memory ---- */

/* The heap a memory type lives in (0xff: unknown). */
static uint8_t type_heap(const struct device_data *dev, uint32_t type)
{
    return type < dev->memory_type_count ? (uint8_t)dev->memory_type_heap[type] : 0xff;
}

static bool dedicated(const VkMemoryAllocateInfo *info)
{
    for (const VkBaseInStructure *p = info->pNext; p; p = p->pNext)
        if (p->sType == VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO) {
            const VkMemoryDedicatedAllocateInfo *d = (const void *)p;
            return d->image || d->buffer;
        }
    return false;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_AllocateMemory(
    VkDevice device, const VkMemoryAllocateInfo *info, const VkAllocationCallbacks *alloc,
    VkDeviceMemory *ret)
{
    struct device_data *dev = device_lookup(device);
    uint64_t start = fscope_now();
    VkResult r = dev->vk.AllocateMemory(device, info, alloc, ret);
    uint64_t end = fscope_now();
    struct fscope_collector *c = fscope_thread_collector();
    if (c) {
        fscope_collector_count(c, FSCOPE_COUNT_MEMORY_TICKS, end - start);
        fscope_collector_count(c, FSCOPE_COUNT_MEMORY_CALLS, 1);
        if (r == VK_SUCCESS) {
            fscope_collector_count(c, FSCOPE_COUNT_MEMORY_ALLOCS, 1);
            fscope_collector_count(c, FSCOPE_COUNT_MEMORY_ALLOC_BYTES, info->allocationSize);
        }
    }
    struct memory_event m = {
        .ticks = end,
        .handle = r == VK_SUCCESS ? (uint64_t)*ret : 0,
        .size = info->allocationSize,
        .device_id = dev->id,
        .tid = c ? c->rec.tid : 0,
        .kind = r == VK_SUCCESS ? MEMORY_ALLOC : MEMORY_ALLOC_FAILED,
        .type_index = (uint8_t)info->memoryTypeIndex,
        .heap_index = type_heap(dev, info->memoryTypeIndex),
        .dedicated = dedicated(info),
        .result = r,
    };
    fscope_engine_memory(&m);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL framescope_FreeMemory(VkDevice device, VkDeviceMemory memory,
                                                       const VkAllocationCallbacks *alloc)
{
    struct device_data *dev = device_lookup(device);
    uint64_t start = fscope_now();
    dev->vk.FreeMemory(device, memory, alloc);
    if (!memory)
        return;
    uint64_t end = fscope_now();
    struct fscope_collector *c = fscope_thread_collector();
    if (c) {
        fscope_collector_count(c, FSCOPE_COUNT_MEMORY_TICKS, end - start);
        fscope_collector_count(c, FSCOPE_COUNT_MEMORY_CALLS, 1);
        fscope_collector_count(c, FSCOPE_COUNT_MEMORY_FREES, 1);
    }
    struct memory_event m = {
        .ticks = end,
        .handle = (uint64_t)memory,
        .device_id = dev->id,
        .tid = c ? c->rec.tid : 0,
        .kind = MEMORY_FREE,
    };
    fscope_engine_memory(&m);
}

/* ---- descriptor pools ---- */

#define DESCRIPTOR_POOL_TABLE 4096
static struct table_entry pool_table[DESCRIPTOR_POOL_TABLE];
static pthread_mutex_t pool_table_lock = PTHREAD_MUTEX_INITIALIZER;

static struct descriptor_pool_entry *pool_entry(VkDescriptorPool pool)
{
    return pool ? table_find(pool_table, DESCRIPTOR_POOL_TABLE, (uint64_t)pool) : NULL;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateDescriptorPool(
    VkDevice device, const VkDescriptorPoolCreateInfo *info, const VkAllocationCallbacks *alloc,
    VkDescriptorPool *ret)
{
    struct device_data *dev = device_lookup(device);
    VkResult r = dev->vk.CreateDescriptorPool(device, info, alloc, ret);
    if (r != VK_SUCCESS)
        return r;
    struct descriptor_pool_entry *e = fscope_engine_descriptor_pool(
        dev->id, (uint64_t)*ret, info->maxSets,
        info->flags & VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT);
    /* A pool the table has no room for is still in the recording's table, counted; it only
     * goes unfollowed. */
    if (e && !table_insert(pool_table, DESCRIPTOR_POOL_TABLE, &pool_table_lock, (uint64_t)*ret, e))
        atomic_store(&e->destroyed, 1);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL framescope_DestroyDescriptorPool(
    VkDevice device, VkDescriptorPool pool, const VkAllocationCallbacks *alloc)
{
    struct descriptor_pool_entry *e = pool_entry(pool);
    if (e) {
        atomic_store(&e->live, 0);
        atomic_store(&e->destroyed, 1);
        table_remove(pool_table, DESCRIPTOR_POOL_TABLE, &pool_table_lock, e);
    }
    device_lookup(device)->vk.DestroyDescriptorPool(device, pool, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_ResetDescriptorPool(
    VkDevice device, VkDescriptorPool pool, VkDescriptorPoolResetFlags flags)
{
    VkResult r = device_lookup(device)->vk.ResetDescriptorPool(device, pool, flags);
    struct descriptor_pool_entry *e = pool_entry(pool);
    if (e && r == VK_SUCCESS)
        atomic_store(&e->live, 0);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_AllocateDescriptorSets(
    VkDevice device, const VkDescriptorSetAllocateInfo *info, VkDescriptorSet *sets)
{
    VkResult r = device_lookup(device)->vk.AllocateDescriptorSets(device, info, sets);
    struct descriptor_pool_entry *e = pool_entry(info->descriptorPool);
    if (r == VK_SUCCESS) {
        fscope_count(FSCOPE_COUNT_DESCRIPTOR_SETS, info->descriptorSetCount);
        if (e) {
            int64_t live = atomic_fetch_add(&e->live, info->descriptorSetCount) +
                           info->descriptorSetCount;
            atomic_fetch_add_explicit(&e->allocated, info->descriptorSetCount,
                                      memory_order_relaxed);
            uint64_t peak = atomic_load_explicit(&e->peak, memory_order_relaxed);
            while (live > 0 && (uint64_t)live > peak &&
                   !atomic_compare_exchange_weak(&e->peak, &peak, (uint64_t)live))
                ;
        }
    } else if (e && (r == VK_ERROR_OUT_OF_POOL_MEMORY || r == VK_ERROR_FRAGMENTED_POOL)) {
        atomic_fetch_add_explicit(&e->failures, 1, memory_order_relaxed);
    }
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_FreeDescriptorSets(
    VkDevice device, VkDescriptorPool pool, uint32_t count, const VkDescriptorSet *sets)
{
    VkResult r = device_lookup(device)->vk.FreeDescriptorSets(device, pool, count, sets);
    struct descriptor_pool_entry *e = pool_entry(pool);
    if (e && r == VK_SUCCESS) {
        int64_t freed = 0;
        for (uint32_t i = 0; i < count; i++)
            freed += sets[i] != VK_NULL_HANDLE;
        atomic_fetch_sub(&e->live, freed);
    }
    return r;
}

/* ---- the device: its heaps, and its budget at the sampler's tick ---- */

static bool has_extension(struct instance_data *inst, VkPhysicalDevice phys, const char *name)
{
    uint32_t count = 0;
    if (inst->vk.EnumerateDeviceExtensionProperties(phys, NULL, &count, NULL) != VK_SUCCESS ||
        !count)
        return false;
    VkExtensionProperties *props = calloc(count, sizeof(*props));
    bool found = false;
    if (props && inst->vk.EnumerateDeviceExtensionProperties(phys, NULL, &count, props) >= 0)
        for (uint32_t i = 0; i < count && !found; i++)
            found = strcmp(props[i].extensionName, name) == 0;
    free(props);
    return found;
}

static bool read_budget(void *ctx, struct budget_sample *ret)
{
    struct device_data *dev = ctx;
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT,
    };
    VkPhysicalDeviceMemoryProperties2 props = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
        .pNext = &budget,
    };
    dev->memory_properties2(dev->physical, &props);
    uint32_t heaps = props.memoryProperties.memoryHeapCount;
    ret->device_id = dev->id;
    ret->heap_count = heaps < BUDGET_HEAPS ? heaps : BUDGET_HEAPS;
    for (uint32_t h = 0; h < ret->heap_count; h++) {
        ret->budget[h] = budget.heapBudget[h];
        ret->usage[h] = budget.heapUsage[h];
    }
    return true;
}

void resources_device_init(struct device_data *dev)
{
    struct instance_data *inst = dev->instance;
    VkPhysicalDeviceProperties device_props;
    inst->vk.GetPhysicalDeviceProperties(dev->physical, &device_props);
    uint32_t device_api = device_props.apiVersion;
    VkPhysicalDeviceMemoryProperties props;
    inst->vk.GetPhysicalDeviceMemoryProperties(dev->physical, &props);
    struct rec_memory_props rec = {
        .device_id = dev->id,
        .heap_count = props.memoryHeapCount < MEMORY_HEAPS ? props.memoryHeapCount
                                                            : MEMORY_HEAPS,
        .type_count = props.memoryTypeCount < MEMORY_TYPES ? props.memoryTypeCount
                                                            : MEMORY_TYPES,
    };
    for (uint32_t h = 0; h < rec.heap_count; h++) {
        rec.heap_size[h] = props.memoryHeaps[h].size;
        rec.heap_flags[h] = props.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT
                                ? MEMORY_HEAP_DEVICE_LOCAL : 0;
    }
    for (uint32_t t = 0; t < rec.type_count; t++) {
        rec.type_heap[t] = props.memoryTypes[t].heapIndex;
        rec.type_flags[t] = props.memoryTypes[t].propertyFlags;
        dev->memory_type_heap[t] = props.memoryTypes[t].heapIndex;
    }
    dev->memory_type_count = rec.type_count;

    /* The budget is the physical device's: its extension need only be supported, read through
     * the core query (1.1 instance and device) or VK_KHR_get_physical_device_properties2. */
    if (inst->api_version >= VK_API_VERSION_1_1 && device_api >= VK_API_VERSION_1_1)
        dev->memory_properties2 = inst->vk.GetPhysicalDeviceMemoryProperties2;
    else if (inst->properties2)
        dev->memory_properties2 = inst->vk.GetPhysicalDeviceMemoryProperties2KHR;
    rec.budget = dev->memory_properties2 &&
                 has_extension(inst, dev->physical, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    fscope_engine_memory_props(&rec);
    if (rec.budget)
        fscope_engine_budget_probe_add(read_budget, dev);
}

void resources_device_finish(struct device_data *dev)
{
    fscope_engine_budget_probe_remove(dev);
}

static const struct layer_hook hook_rows[] = {
    RESOURCE_HOOKS(LAYER_HOOK_ROW)
};
const struct layer_hook_table resources_hook_table = LAYER_HOOK_TABLE(hook_rows);
