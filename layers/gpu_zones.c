/* GPU zones: every debug-label region (vkCmdBeginDebugUtilsLabelEXT, vkCmdDebugMarkerBeginEXT)
 * and every render pass (vkCmdBeginRenderPass*, vkCmdBeginRendering*) of a primary command
 * buffer timed by two timestamps the layer writes into that command buffer as it is recorded:
 * a render pass's outside the pass (before its begin, after its end), a label's where the app
 * put it. Nested labels nest; a zone is named by its path ("frame/shadow/pass 1024x1024").
 *
 * Queries: each device has one pool of ZONE_BLOCKS blocks of ZONE_BLOCK_QUERIES; a command
 * buffer takes a block at its first zone and holds it until it is recorded again or freed.
 * A submission that carries the command buffer takes a reference too, and the device's reader
 * thread reads the block once our completion signal says the submission finished, then drops
 * it. A block is reset from the host and reused only when nothing holds it, so no query is
 * rewritten before it was read. What cannot be timed that way is counted, never guessed:
 * secondary command buffers, a command buffer submitted again before its last run was read
 * (or SIMULTANEOUS_USE), labels left open or closed in another command buffer, labels inside a
 * multiview pass, a device without host query reset. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer.h"
#include "record/clock.h"
#include "record/gpu_zones.h"
#include "record/meta.h"
#include "util/log.h"

#define ZONE_BLOCKS 1024
#define ZONE_BLOCK_QUERIES 64
#define ZONE_REGIONS (ZONE_BLOCK_QUERIES / 2)
#define ZONE_DEPTH 16

struct zone_region {
    uint16_t name;
    uint8_t depth;
    uint8_t kind;
    bool ended;
};

struct zone_block {
    struct zone_pool *pool;
    uint32_t index;
    _Atomic uint32_t refs;    /* its command buffer's, and each submission's not yet read */
    _Atomic uint32_t pending; /* submissions not yet read */
    uint32_t region_count;    /* region k uses queries 2k and 2k + 1 of the block */
    struct zone_region regions[ZONE_REGIONS];
};

struct zone_pool {
    VkQueryPool pool;
    pthread_mutex_t lock; /* the free list */
    uint32_t free_count;
    uint32_t free_list[ZONE_BLOCKS];
    struct zone_block blocks[ZONE_BLOCKS];
    struct fscope_gpu_zone_log *log;
};

/* A command buffer's recording state: only its recording thread touches it (Vulkan's external
 * synchronisation of command buffers). */
struct cb_zones {
    struct device_data *dev;
    VkCommandPool pool;
    bool primary, stamps; /* from its allocation: level, and its family has timestamps */
    bool simultaneous;    /* this recording's SIMULTANEOUS_USE */
    bool timed;           /* primary, not simultaneous-use, on a family with timestamps */
    bool in_multiview;  /* inside a dynamic-rendering pass with a view mask */
    struct zone_block *block;
    uint32_t open[ZONE_DEPTH];   /* indices of the open regions in block, outermost first */
    uint8_t open_timed[ZONE_DEPTH]; /* whether each open label got a region */
    uint32_t depth;
    size_t path_len[ZONE_DEPTH + 1];
    char path[GPU_ZONE_NAME_SIZE];
};

/* ---- blocks ---- */

static struct zone_pool *pool_get(struct device_data *dev)
{
    struct zone_pool *p = atomic_load_explicit(&dev->zones, memory_order_acquire);
    if (p || !dev->reset_query_pool || !layer_config.gpu_timing || !layer_config.gpu_zones)
        return p;
    pthread_mutex_lock(&dev->lock);
    p = atomic_load(&dev->zones);
    if (!p && !dev->zones_failed) {
        p = calloc(1, sizeof(*p));
        const VkQueryPoolCreateInfo info = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = ZONE_BLOCKS * ZONE_BLOCK_QUERIES,
        };
        if (p && dev->vk.CreateQueryPool(dev->device, &info, NULL, &p->pool) == VK_SUCCESS) {
            dev->reset_query_pool(dev->device, p->pool, 0, ZONE_BLOCKS * ZONE_BLOCK_QUERIES);
            pthread_mutex_init(&p->lock, NULL);
            for (uint32_t i = 0; i < ZONE_BLOCKS; i++) {
                p->blocks[i].pool = p;
                p->blocks[i].index = i;
                p->free_list[i] = ZONE_BLOCKS - 1 - i;
            }
            p->free_count = ZONE_BLOCKS;
            p->log = fscope_gpu_zone_log_create(dev->id);
            atomic_store_explicit(&dev->zones, p, memory_order_release);
        } else {
            free(p);
            p = NULL;
            dev->zones_failed = true;
            fscope_record_note("device %u: no query pool for GPU zones: passes and labels are "
                               "not timed", dev->id);
        }
    }
    pthread_mutex_unlock(&dev->lock);
    return p;
}

static struct zone_block *block_take(struct zone_pool *p)
{
    struct zone_block *b = NULL;
    pthread_mutex_lock(&p->lock);
    if (p->free_count)
        b = &p->blocks[p->free_list[--p->free_count]];
    pthread_mutex_unlock(&p->lock);
    if (b) {
        b->region_count = 0;
        atomic_store(&b->pending, 0);
        atomic_store(&b->refs, 1);
    }
    return b;
}

/* Drops one reference; the last one resets the block's queries from the host and frees it. */
static void block_release(struct device_data *dev, struct zone_block *b)
{
    if (!b || atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    struct zone_pool *p = b->pool;
    if (b->region_count)
        dev->reset_query_pool(dev->device, p->pool, b->index * ZONE_BLOCK_QUERIES,
                              2 * b->region_count);
    pthread_mutex_lock(&p->lock);
    p->free_list[p->free_count++] = b->index;
    pthread_mutex_unlock(&p->lock);
}

/* ---- recording (app threads) ---- */

static struct cb_zones *state(VkCommandBuffer cb)
{
    struct cb_zones **slot = hooks_cb_zones(cb, false);
    return slot ? *slot : NULL;
}

void zones_cb_allocated(struct device_data *dev, VkCommandPool pool, VkCommandBuffer cb,
                        bool primary, uint32_t family)
{
    struct cb_zones **slot = hooks_cb_zones(cb, true);
    if (!slot)
        return;
    if (!*slot)
        *slot = calloc(1, sizeof(**slot));
    struct cb_zones *z = *slot;
    if (!z)
        return;
    if (z->dev)
        block_release(z->dev, z->block);
    memset(z, 0, sizeof(*z));
    z->dev = dev;
    z->pool = pool;
    z->primary = primary;
    z->stamps = family < dev->family_count && dev->families[family].timestampValidBits;
}

static void forget(struct cb_zones *z)
{
    if (z->dev)
        block_release(z->dev, z->block);
    z->block = NULL;
    z->dev = NULL;
}

void zones_cb_freed(VkCommandBuffer cb)
{
    struct cb_zones *z = state(cb);
    if (z)
        forget(z);
}

struct forget_what {
    struct device_data *dev;
    VkCommandPool pool; /* VK_NULL_HANDLE: every pool of dev */
};

static void forget_if(struct cb_zones *z, const void *arg)
{
    const struct forget_what *w = arg;
    if (z->dev == w->dev && (!w->pool || z->pool == w->pool))
        forget(z);
}

void zones_pool_destroyed(struct device_data *dev, VkCommandPool pool)
{
    const struct forget_what w = { dev, pool };
    hooks_cb_zones_each(forget_if, &w);
}

void zones_cb_begin(VkCommandBuffer cb, const VkCommandBufferBeginInfo *info)
{
    struct cb_zones *z = state(cb);
    if (!z || !z->dev)
        return;
    block_release(z->dev, z->block);
    z->block = NULL;
    z->depth = 0;
    z->path_len[0] = 0;
    z->path[0] = '\0';
    z->in_multiview = false;
    z->simultaneous = info && (info->flags & VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT);
    z->timed = z->primary && z->stamps && !z->simultaneous;
}

void zones_cb_end(VkCommandBuffer cb)
{
    struct cb_zones *z = state(cb);
    if (z && z->depth) {
        /* Labels still open: their ends would be in another command buffer. */
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_UNBALANCED, z->depth);
        z->depth = 0;
    }
}

/* Opens a zone named name under the current path; writes its begin timestamp. */
static void zone_open(VkCommandBuffer cb, struct cb_zones *z, const char *name,
                      enum gpu_zone_kind kind)
{
    if (z->depth == ZONE_DEPTH) {
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_FULL, 1);
        return;
    }
    size_t base = z->path_len[z->depth];
    int n = snprintf(z->path + base, sizeof(z->path) - base, "%s%s", base ? "/" : "",
                     name && *name ? name : "(unnamed)");
    size_t len = n < 0 ? base : base + (size_t)n;
    if (len >= sizeof(z->path))
        len = sizeof(z->path) - 1;
    for (char *p = z->path + base; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = ' ';
    z->path_len[z->depth + 1] = len;
    uint32_t d = z->depth++;
    z->open_timed[d] = 0;
    if (!z->timed) {
        if (!z->primary)
            fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_SECONDARY, 1);
        else if (z->simultaneous)
            fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_SIMULTANEOUS, 1);
        return; /* else a family without timestamps: GPU timing says so already */
    }
    if (kind == GPU_ZONE_LABEL && z->in_multiview) {
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_MULTIVIEW, 1);
        return;
    }
    struct zone_pool *p = pool_get(z->dev);
    if (!p) {
        if (!z->dev->reset_query_pool)
            fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_NO_RESET, 1);
        return;
    }
    if (!z->block)
        z->block = block_take(p);
    uint16_t id;
    if (!z->block || z->block->region_count == ZONE_REGIONS) {
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_FULL, 1);
        return;
    }
    if (!fscope_gpu_zone_name(z->path, &id))
        return; /* counted by the name table */
    struct zone_block *b = z->block;
    uint32_t r = b->region_count++;
    b->regions[r] = (struct zone_region){ .name = id, .depth = (uint8_t)d, .kind = (uint8_t)kind };
    z->open[d] = r;
    z->open_timed[d] = 1;
    z->dev->vk.CmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, p->pool,
                                 b->index * ZONE_BLOCK_QUERIES + 2 * r);
}

static void zone_close(VkCommandBuffer cb, struct cb_zones *z)
{
    if (!z->depth) {
        /* An end whose begin was recorded in another command buffer. */
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_UNBALANCED, 1);
        return;
    }
    uint32_t d = --z->depth;
    z->path[z->path_len[d]] = '\0';
    if (!z->open_timed[d] || !z->block)
        return;
    struct zone_block *b = z->block;
    uint32_t r = z->open[d];
    b->regions[r].ended = true;
    z->dev->vk.CmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, b->pool->pool,
                                 b->index * ZONE_BLOCK_QUERIES + 2 * r + 1);
}

void zones_label_begin(VkCommandBuffer cb, const char *name)
{
    struct cb_zones *z = state(cb);
    if (z && z->dev)
        zone_open(cb, z, name, GPU_ZONE_LABEL);
}

void zones_label_end(VkCommandBuffer cb)
{
    struct cb_zones *z = state(cb);
    if (z && z->dev)
        zone_close(cb, z);
}

/* "pass 1920x1080" (and its attachments where the call says them): the name of a pass no label
 * names more closely. */
void zones_pass_begin(VkCommandBuffer cb, VkRect2D area, uint32_t colors, bool depth,
                      uint32_t view_mask, bool split)
{
    struct cb_zones *z = state(cb);
    if (!z || !z->dev)
        return;
    if (split) {
        /* Suspended or resumed in another command buffer: its two halves are not one span
         * here. Kept on the path (its labels still nest), not timed. */
        bool timed = z->timed;
        z->timed = false;
        zone_open(cb, z, "pass (split across command buffers)", GPU_ZONE_PASS);
        z->timed = timed;
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_UNBALANCED, 1);
        return;
    }
    char name[64];
    int n = snprintf(name, sizeof(name), "pass %ux%u", area.extent.width, area.extent.height);
    if (colors || depth)
        snprintf(name + n, sizeof(name) - (size_t)n, " (%u color%s%s)", colors,
                 colors == 1 ? "" : "s", depth ? " + depth" : "");
    zone_open(cb, z, name, GPU_ZONE_PASS);
    z->in_multiview = view_mask != 0;
}

void zones_pass_end(VkCommandBuffer cb)
{
    struct cb_zones *z = state(cb);
    if (!z || !z->dev)
        return;
    z->in_multiview = false;
    zone_close(cb, z);
}

/* ---- submission and read-back ---- */

void zones_attach(struct gpu_slot *slot, VkCommandBuffer cb)
{
    struct cb_zones *z = state(cb);
    if (!z || !z->block || !z->block->region_count)
        return;
    struct zone_block *b = z->block;
    if (slot->zone_count == GPU_SLOT_ZONE_BLOCKS) {
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_FULL, b->region_count);
        return;
    }
    if (atomic_load(&b->pending)) {
        /* Its last run is not read yet: this one would write the same queries. */
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_RESUBMITTED, b->region_count);
        return;
    }
    atomic_fetch_add(&b->pending, 1);
    atomic_fetch_add(&b->refs, 1);
    slot->zones[slot->zone_count++] = b;
}

void zones_untimed_submit(VkCommandBuffer cb)
{
    struct cb_zones *z = state(cb);
    if (z && z->block && z->block->region_count)
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_FULL, z->block->region_count);
}

void zones_read(struct device_data *dev, struct queue_data *q, struct gpu_slot *slot,
                int64_t (*to_mono)(const struct queue_data *q, uint64_t ts))
{
    for (uint32_t k = 0; k < slot->zone_count; k++) {
        struct zone_block *b = slot->zones[k];
        uint64_t data[ZONE_BLOCK_QUERIES];
        uint32_t n = 2 * b->region_count;
        VkResult r = dev->vk.GetQueryPoolResults(dev->device, b->pool->pool,
                                                 b->index * ZONE_BLOCK_QUERIES, n,
                                                 n * sizeof(uint64_t), data, sizeof(uint64_t),
                                                 VK_QUERY_RESULT_64_BIT);
        for (uint32_t i = 0; r == VK_SUCCESS && i < b->region_count; i++) {
            const struct zone_region *z = &b->regions[i];
            if (!z->ended)
                continue;
            uint64_t begin = fscope_mono_ns_to_ticks(to_mono(q, data[2 * i] & q->valid_mask));
            uint64_t end = fscope_mono_ns_to_ticks(to_mono(q, data[2 * i + 1] & q->valid_mask));
            fscope_gpu_zone_add(b->pool->log, begin, end < begin ? begin : end, z->name, z->depth,
                                (enum gpu_zone_kind)z->kind);
        }
        atomic_fetch_sub(&b->pending, 1);
        block_release(dev, b);
    }
    slot->zone_count = 0;
}

void zones_detach(struct device_data *dev, struct gpu_slot *slot)
{
    for (uint32_t k = 0; k < slot->zone_count; k++) {
        atomic_fetch_sub(&slot->zones[k]->pending, 1);
        block_release(dev, slot->zones[k]);
    }
    slot->zone_count = 0;
}

void zones_device_destroy(struct device_data *dev)
{
    struct zone_pool *p = atomic_exchange(&dev->zones, NULL);
    if (!p)
        return;
    const struct forget_what w = { dev, VK_NULL_HANDLE };
    hooks_cb_zones_each(forget_if, &w);
    dev->vk.DestroyQueryPool(dev->device, p->pool, NULL);
    pthread_mutex_destroy(&p->lock);
    /* The log stays: it belongs to the recording. */
    free(p);
}
