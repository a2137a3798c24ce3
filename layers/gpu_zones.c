/* Pipeline statistics (FRAMESCOPE_PIPELINE_STATS=on, on devices with pipelineStatisticsQuery,
 * which the layer then enables): each timed render pass also gets a query of the GPU's
 * pipeline statistics, begun before the pass and ended after it, in a second pool with one
 * query per region, reset, copied and read with the block's timestamps. Not where Vulkan
 * forbids it or it would mix: a pass that executes secondary command buffers (a query active
 * there needs inheritedQueries), one inside the app's own statistics query (two active queries
 * of one type), a multiview pass; those are counted as skipped.
 *
 * GPU zones: every debug-label region (vkCmdBeginDebugUtilsLabelEXT, vkCmdDebugMarkerBeginEXT)
 * and every render pass (vkCmdBeginRenderPass*, vkCmdBeginRendering*) of a primary command
 * buffer timed by two timestamps the layer writes into that command buffer as it is recorded:
 * a render pass's outside the pass (before its begin, after its end), a label's where the app
 * put it. Nested labels nest; a zone is named by its path ("frame/shadow/pass 1024x1024").
 *
 * Queries: each device has one pool of ZONE_BLOCKS blocks of ZONE_BLOCK_QUERIES; a command
 * buffer takes a block at its first zone and holds it until it is recorded again or freed.
 * A submission that carries the command buffer takes a reference, and the device's reader
 * thread reads the block once our completion signal says the submission finished. A block
 * goes back to the pool, reset from the host, when nothing holds it. Two ways to read it:
 *
 * - A ONE_TIME_SUBMIT command buffer (what engines record each frame) runs once per
 *   recording: the reader reads its queries with vkGetQueryPoolResults. Nothing is added to
 *   the command buffer but the timestamps.
 * - Any other may be submitted again without being recorded again, and each run must find its
 *   queries reset: the command buffer resets the block itself (vkCmdResetQueryPool just
 *   before its first timestamp, outside any render pass: a pass's zone opens before its
 *   begin) and at its end copies the timestamps into the block's part of a host-visible
 *   buffer of ours, which the reader reads from memory. It never calls the driver on queries
 *   a later run may be resetting (lavapipe's vkGetQueryPoolResults then reads freed memory).
 *   A run submitted before the previous one was read overwrites that copy: the submitting
 *   thread first keeps the previous run in the block's history where its own signal shows it
 *   complete (zone_history), the block's generation moves on, and the reader reads an older
 *   run from the history, or drops it, counted, where it was not complete. The copy waits
 *   for the timestamps, which costs GPU time at the end of each such command
 *   buffer (on the H200, +1.4% and +3.2% frame time at 0.73 ms frames in two A/X/A rounds
 *   with the demo's command buffers all read this way, against +0.8% the first way).
 *
 * From the host: on a GPU (not a CPU device, where the driver's query read waits for the
 *   device to idle) with host query reset, a command buffer that may run again but never twice
 *   at once (neither ONE_TIME_SUBMIT nor SIMULTANEOUS_USE) gets its timestamps and nothing
 *   else; a SIMULTANEOUS_USE one keeps the reset at its start (a run may begin before the last
 *   one ended, and only the device can reset in between) but no copy, and its last run is
 *   read where its own signal shows it finished, counted as maybe overlapping where not. The reset and the copy cost the GPU more than the zones they serve: on an H100,
 *   +18 us a frame at 1080p (6%) and +20 us on a 22 us frame at 64x64, against +2 us for the
 *   stamps alone (tests/bench/README.md, 2026-12-06). Its next submission may only come once
 *   its last run finished (Vulkan's rule for a command buffer that is not pending), so the
 *   submitting thread then reads that run with vkGetQueryPoolResults into the block's
 *   history and resets the block from the host, before the call down; so does the thread
 *   that records it again, frees it or destroys the device. The reader reads such a block
 *   only from its history, and keeps a run not read yet for a later pass (deferred), so no
 *   two threads ever read and reset its queries at once (Vulkan forbids it).
 *   FRAMESCOPE_GPU_ZONES=host takes this way on CPU devices too (tests).
 *
 * A SIMULTANEOUS_USE command buffer (vkcube and other apps that record once and submit every
 * frame) is read the second way: it may be pending twice at once, but almost never is. A run
 * submitted while an earlier one is not read yet may overlap it on the GPU (both write the
 * same queries), so both are counted untimed; every run that does not overlap is timed.
 *
 * With GPU timing sampled (FRAMESCOPE_GPU_SAMPLE), a command buffer recorded for one
 * submission, or recorded again, gets its zones only while a window of timed frames is open
 * (gpu_sample_may_time): elsewhere its submission goes untimed, and the timestamps would still
 * cost the device (on lavapipe each one flushes the rasterizer). A first recording always gets
 * them, so record-once command buffers stay timed; SIMULTANEOUS_USE ones too.
 *
 * What cannot be timed is counted, never guessed: secondary command buffers, runs of a
 * SIMULTANEOUS_USE command buffer that may overlap, a run submitted again before the last was
 * read, labels left open or closed in another
 * command buffer (and passes suspended across them), labels inside a multiview pass, a command
 * buffer that cannot reset and copy queries (a transfer-only family, or a first zone inside a
 * resumed pass). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cb_table.h"
#include "gpu_zone_blocks.h"
#include "layer.h"
#include "readback.h"
#include "record/clock.h"
#include "record/gpu_zones.h"
#include "record/meta.h"
#include "util/log.h"

/* A command buffer's recording state: only its recording thread touches it (Vulkan's external
 * synchronisation of command buffers). */
struct cb_zones {
    struct device_data *dev;
    VkCommandPool pool;
    bool primary, stamps; /* from its allocation: level, and its family has timestamps */
    bool can_reset;       /* its family records query resets and copies (graphics, compute) */
    bool in_pass;         /* inside a render pass instance: no reset or copy can be recorded */
    bool suspends;        /* the pass it is in will be suspended at its end */
    bool suspended;       /* its last pass was suspended (resumed in another command buffer) */
    bool simultaneous;    /* this recording's SIMULTANEOUS_USE */
    bool one_time;        /* this recording's ONE_TIME_SUBMIT */
    bool timed;           /* primary, on a family with timestamps, not sampled out */
    bool sampled_out;     /* this recording is outside the windows of timed frames */
    uint32_t dark;        /* zones opened in this recording while sampled out */
    uint32_t recordings;  /* times begun since its allocation */
    bool in_multiview;    /* inside a pass with a view mask (classic or dynamic rendering) */
    bool pass_secondaries; /* the pass it is in may take secondary command buffers */
    uint32_t app_stats;   /* the app's own pipeline statistics queries active in it */
    struct zone_block *block;
    uint32_t open[ZONE_DEPTH];   /* indices of the open regions in block, outermost first */
    uint8_t open_timed[ZONE_DEPTH]; /* whether each open label got a region */
    uint32_t depth;
    /* The block's query of the last stamp written outside a pass or at a pass's end, or
     * BEGIN_AT_START: where an unstamped pass begins. */
    int last_stamp;
    size_t path_len[ZONE_DEPTH + 1];
    char path[GPU_ZONE_NAME_SIZE];
};

/* ---- recording (app threads) ---- */

static struct cb_zones *state(VkCommandBuffer cb)
{
    struct cb_entry *e = cb_table_entry(cb, false);
    return e ? e->zones : NULL;
}

void zones_cb_allocated(struct device_data *dev, VkCommandPool pool, VkCommandBuffer cb,
                        bool primary, uint32_t family)
{
    struct cb_entry *e = cb_table_entry(cb, true);
    if (!e)
        return;
    struct cb_zones **slot = &e->zones;
    if (!*slot)
        *slot = calloc(1, sizeof(**slot));
    struct cb_zones *z = *slot;
    if (!z)
        return;
    if (z->dev)
        zone_block_release(z->block);
    memset(z, 0, sizeof(*z));
    z->dev = dev;
    z->pool = pool;
    z->primary = primary;
    z->stamps = family < dev->family_count && dev->families[family].timestampValidBits;
    z->can_reset = family < dev->family_count &&
                   (dev->families[family].queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT));
}

static void forget(struct cb_zones *z)
{
    if (z->dev && z->block)
        zone_host_read_last(z->dev, z->block);
    if (z->dev)
        zone_block_release(z->block);
    z->block = NULL;
    z->dev = NULL;
}

void zones_cb_freed(VkCommandBuffer cb)
{
    struct cb_zones *z = state(cb);
    if (z)
        forget(z);
}

/* Every command buffer's zones of dev (of pool, unless VK_NULL_HANDLE) are let go. */
static void forget_all(struct device_data *dev, VkCommandPool pool)
{
    for (unsigned i = 0; i < CB_TABLE_SIZE; i++) {
        struct cb_zones *z = cb_table[i].zones;
        if (z && z->dev == dev && (!pool || z->pool == pool))
            forget(z);
    }
}

void zones_pool_destroyed(struct device_data *dev, VkCommandPool pool)
{
    forget_all(dev, pool);
}

void zones_cb_begin(VkCommandBuffer cb, const VkCommandBufferBeginInfo *info)
{
    struct cb_zones *z = state(cb);
    if (!z || !z->dev)
        return;
    if (z->block)
        zone_host_read_last(z->dev, z->block);
    zone_block_release(z->block);
    z->block = NULL;
    z->depth = 0;
    z->last_stamp = BEGIN_AT_START;
    z->path_len[0] = 0;
    z->path[0] = '\0';
    z->in_multiview = false;
    z->in_pass = false;
    z->suspended = false;
    z->app_stats = 0;
    z->simultaneous = info && (info->flags & VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT);
    z->one_time = info && (info->flags & VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT);
    z->timed = z->primary && z->stamps;
    /* Recorded for one submission, or recorded again (so likely each frame): zones only where
     * the sampling may time that submission. A first recording keeps them: it may be the only
     * one (record once, submit every frame). */
    bool again = z->one_time || z->recordings++ > 0;
    z->sampled_out = z->timed && again && !z->simultaneous && !gpu_sample_may_time(z->dev);
    z->dark = 0;
    if (z->sampled_out)
        z->timed = false;
}

/* At the end of the command buffer: what a run of it times, and where the block is copied
 * out, the copies (each run of contiguous queries a read needs in one copy, waiting for them) made
 * visible to the host. No copy where a pass is left suspended: nothing may come between it
 * and the command buffer that resumes it. */
static void block_end(VkCommandBuffer cb, struct cb_zones *z)
{
    struct zone_block *b = z->block;
    struct zone_pool *p = b->pool;
    uint32_t ended = 0;
    for (uint32_t r = 0; r < b->region_count; r++)
        ended += b->regions[r].ended;
    b->timed_regions = ended;
    if (b->host && ended)
        zone_history_make(b);
    if (!b->copy || !ended) {
        b->readable = ended; /* read with vkGetQueryPoolResults, or nothing to read */
        return;
    }
    if (z->suspended) {
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_UNBALANCED, ended);
        return;
    }
    zone_history_make(b);
    uint32_t base = b->index * ZONE_BLOCK_QUERIES;
    uint64_t needed = zone_needed_queries(b);
    for (uint32_t q = 0, n; zone_mask_run(needed, &q, &n); q += n)
        readback_record_copy(z->dev, cb, &p->copies, p->pool, base + q, n, 1);
    for (uint32_t r = 0; p->stats_pool && r < b->region_count; r++)
        if (b->regions[r].ended && b->regions[r].stats)
            readback_record_copy(z->dev, cb, &p->stats_copies, p->stats_pool,
                                 b->index * ZONE_REGIONS + r, 1, STATS_WORDS);
    readback_record_visible(z->dev, cb);
    b->readable = true;
}

void zones_cb_end(VkCommandBuffer cb)
{
    struct cb_zones *z = state(cb);
    if (!z)
        return;
    if (z->depth) {
        /* Labels still open: their ends would be in another command buffer. */
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_UNBALANCED, z->depth);
        z->depth = 0;
    }
    if (z->dev && z->block)
        block_end(cb, z);
    if (z->dark)
        atomic_fetch_add_explicit(&gpu_stats.zones_sampled_out, 1, memory_order_relaxed);
}

/* Opens a zone named name under the current path; writes its begin timestamp. */
/* Appends text at *len of buf (size bytes in all, kept NUL-terminated), cutting what does not
 * fit. Zone names are made at every recording of a pass: snprintf there cost more than the
 * rest of the pass's begin. */
static void put_text(char *buf, size_t size, size_t *len, const char *text)
{
    if (*len + 1 >= size)
        return;
    size_t n = strlen(text);
    if (n > size - 1 - *len)
        n = size - 1 - *len;
    memcpy(buf + *len, text, n);
    *len += n;
    buf[*len] = '\0';
}

static void put_uint(char *buf, size_t size, size_t *len, uint32_t v)
{
    char text[11];
    unsigned k = sizeof(text) - 1;
    text[k] = '\0';
    do {
        text[--k] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put_text(buf, size, len, text + k);
}

static void zone_open(VkCommandBuffer cb, struct cb_zones *z, const char *name,
                      enum gpu_zone_kind kind)
{
    if (z->depth == ZONE_DEPTH) {
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_FULL, 1);
        return;
    }
    size_t base = z->path_len[z->depth], len = base;
    z->path[len] = '\0';
    if (base)
        put_text(z->path, sizeof(z->path), &len, "/");
    put_text(z->path, sizeof(z->path), &len, name && *name ? name : "(unnamed)");
    for (char *p = z->path + base; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = ' ';
    z->path_len[z->depth + 1] = len;
    uint32_t d = z->depth++;
    z->open_timed[d] = 0;
    if (!z->timed) {
        if (!z->primary)
            fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_SECONDARY, 1);
        z->dark += z->sampled_out;
        return; /* else a family without timestamps: GPU timing says so already */
    }
    if (kind == GPU_ZONE_LABEL && z->in_multiview) {
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_MULTIVIEW, 1);
        return;
    }
    /* A command buffer that may run again without being recorded again resets its block and
     * copies it out itself. One that runs once per recording is read from its queries; it
     * resets them itself only where the device has no host reset (or, a CPU device, no safe
     * one): a block is taken again only once read, so no read can race that reset. */
    bool host = !z->one_time && z->dev->reset_query_pool && !z->dev->pipeline_stats &&
                (!z->dev->cpu_device || layer_config.gpu_zones_host);
    bool copy = (!z->one_time || z->simultaneous) && !host;
    bool reset = copy || (host && z->simultaneous) || !z->dev->reset_query_pool;
    if (!z->block && reset && (!z->can_reset || z->in_pass)) {
        /* Its queries could not be reset before each run (nor copied after it). */
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_NO_RESET, 1);
        return;
    }
    struct zone_pool *p = zone_pool_get(z->dev);
    if (!p)
        return; /* noted once */
    if (!z->block) {
        z->block = zone_block_take(p);
        if (z->block && reset) {
            z->dev->vk.CmdResetQueryPool(cb, p->pool, z->block->index * ZONE_BLOCK_QUERIES,
                                         ZONE_BLOCK_QUERIES);
            if (p->stats_pool)
                z->dev->vk.CmdResetQueryPool(cb, p->stats_pool, z->block->index * ZONE_REGIONS,
                                             ZONE_REGIONS);
        }
        if (z->block) {
            z->block->copy = copy;
            z->block->host = host;
            z->block->in_buffer_reset = host && z->simultaneous;
            z->block->simultaneous = z->simultaneous;
            if (host)
                atomic_store_explicit(&z->dev->zone_host_runs, true, memory_order_relaxed);
        }
    }
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
    b->regions[r].begin_at = (int8_t)(2 * r);
    z->open[d] = r;
    z->open_timed[d] = 1;
    if (kind == GPU_ZONE_PASS && z->dev->cpu_device && b->copy) {
        /* Runs in every submission, timed or not: its begin is the last stamp before it (see
         * zones_pass_ending). */
        b->regions[r].begin_at = (int8_t)z->last_stamp;
        b->starts_unstamped |= z->last_stamp == BEGIN_AT_START;
        return;
    }
    z->dev->vk.CmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, p->pool,
                                 b->index * ZONE_BLOCK_QUERIES + 2 * r);
    if (!z->in_pass)
        z->last_stamp = (int)(2 * r);
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
    if (b->regions[r].stats)
        z->dev->vk.CmdEndQuery(cb, b->pool->stats_pool, b->index * ZONE_REGIONS + r);
    if (!b->regions[r].stamped) {
        z->dev->vk.CmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, b->pool->pool,
                                     b->index * ZONE_BLOCK_QUERIES + 2 * r + 1);
        if (!z->in_pass)
            z->last_stamp = (int)(2 * r + 1);
    }
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

/* The pass just opened gets a pipeline statistics query where one may be active across it. */
static void pass_stats_begin(VkCommandBuffer cb, struct cb_zones *z, uint32_t view_mask,
                             bool secondary_contents)
{
    if (!z->dev->pipeline_stats)
        return;
    uint32_t d = z->depth - 1;
    struct zone_pool *p = z->block ? z->block->pool : NULL;
    if (!z->open_timed[d] || !p || !p->stats_pool || view_mask ||
        secondary_contents || z->app_stats) {
        fscope_gpu_pass_stats_skipped(1);
        return;
    }
    uint32_t r = z->open[d];
    z->block->regions[r].stats = true;
    z->dev->vk.CmdBeginQuery(cb, p->stats_pool, z->block->index * ZONE_REGIONS + r, 0);
}

void zones_app_stats_query(VkCommandBuffer cb, bool begin)
{
    struct cb_zones *z = state(cb);
    if (!z)
        return;
    if (begin)
        z->app_stats++;
    else if (z->app_stats)
        z->app_stats--;
}

/* "pass 1920x1080" (and its attachments where the call says them): the name of a pass no label
 * names more closely. */
void zones_pass_begin(VkCommandBuffer cb, VkRect2D area, uint32_t colors, bool depth,
                      uint32_t view_mask, VkRenderingFlags flags, const char *pass_name,
                      bool secondary_contents)
{
    struct cb_zones *z = state(cb);
    if (!z || !z->dev)
        return;
    z->suspended = false;
    z->suspends = flags & VK_RENDERING_SUSPENDING_BIT;
    if (flags & (VK_RENDERING_SUSPENDING_BIT | VK_RENDERING_RESUMING_BIT)) {
        /* Suspended or resumed in another command buffer: its two halves are not one span
         * here. Kept on the path (its labels still nest), not timed. */
        bool timed = z->timed;
        z->timed = false;
        zone_open(cb, z, "pass (split across command buffers)", GPU_ZONE_PASS);
        z->timed = timed;
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_UNBALANCED, 1);
    } else {
        /* "pass 'NAME' WxH (N colors + depth)" */
        char name[96];
        size_t n = 0;
        put_text(name, sizeof(name), &n, "pass ");
        if (pass_name && pass_name[0]) {
            put_text(name, sizeof(name), &n, "'");
            put_text(name, sizeof(name), &n, pass_name);
            put_text(name, sizeof(name), &n, "' ");
        }
        put_uint(name, sizeof(name), &n, area.extent.width);
        put_text(name, sizeof(name), &n, "x");
        put_uint(name, sizeof(name), &n, area.extent.height);
        if (colors || depth) {
            put_text(name, sizeof(name), &n, " (");
            put_uint(name, sizeof(name), &n, colors);
            put_text(name, sizeof(name), &n, colors == 1 ? " color" : " colors");
            put_text(name, sizeof(name), &n, depth ? " + depth)" : ")");
        }
        uint32_t before = z->depth;
        zone_open(cb, z, name, GPU_ZONE_PASS);
        if (z->depth == before + 1)
            pass_stats_begin(cb, z, view_mask, secondary_contents);
        else if (z->dev->pipeline_stats)
            fscope_gpu_pass_stats_skipped(1);
    }
    z->in_multiview = view_mask != 0;
    z->pass_secondaries = secondary_contents;
    z->in_pass = true;
}

/* Just before a pass ends, on a CPU device: its zone's end stamped there, at the top of the
 * pipe. Lavapipe writes a timestamp after the top of the pipe by flushing its rasterizer, and
 * one after the pass then starts a scene of its own that its threads rasterize once more: in
 * vkcube's every frame (its command buffer is recorded once, so its zones run in every
 * frame, timed or not) that was 8 of the 13 context switches a frame its zones cost. Inside
 * the pass, the stamp goes into every tile of the pass's own scene behind the tile's draws,
 * and its value, the latest any rasterizer thread wrote, is when the last tile was done: the
 * pass's end. Not where a stamp may not go: a pass whose subpass takes secondary command
 * buffers, a multiview pass (a query per view), one suspended into another command buffer,
 * or a label still open inside it.
 *
 * A pass's begin has no such place: inside the pass a stamp would hold when the last tile
 * began, and before it, a scene of its own again (the other 6 switches a frame). So where its
 * command buffer runs again without being recorded again (what runs in every frame), a pass
 * on a CPU device is not stamped at its begin: it begins at the last stamp before it in its
 * command buffer (the end of the pass before it, a label's begin or end), which is also when
 * lavapipe's rasterizer gets to it (it takes scenes in order), or, with none, at the command
 * buffer's start: the begin stamp of its submission's span, read only where the command
 * buffer is the submission's first (otherwise counted untimed). Work recorded between that
 * stamp and the pass outside any pass (copies, clears) counts in the pass's zone. */
void zones_pass_ending(VkCommandBuffer cb)
{
    struct cb_zones *z = state(cb);
    if (!z || !z->dev || !z->dev->cpu_device || !z->in_pass || z->in_multiview ||
        z->pass_secondaries || z->suspends || !z->depth || !z->block)
        return;
    uint32_t d = z->depth - 1;
    struct zone_block *b = z->block;
    uint32_t r = z->open[d];
    if (!z->open_timed[d] || b->regions[r].kind != GPU_ZONE_PASS)
        return;
    b->regions[r].stamped = true;
    z->dev->vk.CmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, b->pool->pool,
                                 b->index * ZONE_BLOCK_QUERIES + 2 * r + 1);
    z->last_stamp = (int)(2 * r + 1);
}

void zones_pass_end(VkCommandBuffer cb)
{
    struct cb_zones *z = state(cb);
    if (!z || !z->dev)
        return;
    z->in_multiview = false;
    z->in_pass = false;
    z->suspended = z->suspends;
    zone_close(cb, z);
}

/* ---- submission and read-back ---- */

/* A run of block b that will not be read: one read before it that is still to come would
 * find the copy this run rewrites, so that read comes from the history, or is the stale one
 * now (the reader counts it). */
static void run_unread(struct device_data *dev, struct zone_block *b)
{
    if (b->copy && atomic_load(&b->pending)) {
        zone_run_keep(dev, b);
        atomic_fetch_add_explicit(&b->gen, 1, memory_order_seq_cst);
    }
}

void zones_attach(struct queue_data *q, struct gpu_slot *slot, VkCommandBuffer cb, bool first)
{
    struct cb_zones *z = state(cb);
    if (z && z->dark)
        atomic_fetch_add_explicit(&gpu_stats.zones_dark_timed, 1, memory_order_relaxed);
    bool finished = true;
    if (z && z->block && z->block->host && z->block->region_count)
        finished = zone_host_next_run(q->device, z->block);
    if (!z || !z->block || !z->block->readable)
        return;
    struct zone_block *b = z->block;
    if (b->host) {
        if (slot->zone_count == GPU_SLOT_ZONE_BLOCKS) {
            fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_FULL, b->timed_regions);
            return;
        }
        /* A run that may overlap the last one is counted, never read (the reader does). */
        b->unread = finished;
        atomic_fetch_add(&b->pending, 1);
        atomic_fetch_add(&b->refs, 1);
        slot->zone_gens[slot->zone_count] = atomic_load_explicit(&b->gen, memory_order_relaxed);
        slot->zone_overlaps[slot->zone_count] = !finished;
        slot->zones[slot->zone_count++] = b;
        b->last_queue = q;
        b->last_slot = slot;
        b->last_value = slot->value;
        return;
    }
    if (slot->zone_count == GPU_SLOT_ZONE_BLOCKS || (b->starts_unstamped && !first)) {
        run_unread(q->device, b);
        fscope_gpu_zone_untimed(b->starts_unstamped && !first ? GPU_ZONE_UNTIMED_UNSTAMPED
                                                              : GPU_ZONE_UNTIMED_FULL,
                                b->timed_regions);
        return;
    }
    /* Pending and not yet complete by its own signal (one counter read, only here). */
    bool overlaps = b->simultaneous && atomic_load(&b->pending) &&
                    !gpu_slot_complete(b->last_queue, b->last_slot, b->last_value);
    if (atomic_load(&b->pending)) {
        if (!b->copy) {
            /* ONE_TIME_SUBMIT submitted twice: only the first run is read. */
            fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_RESUBMITTED, b->timed_regions);
            return;
        }
        /* Its last run is not read yet, and this one rewrites the copy: that run is kept in
         * the history where it is complete, else its read is the stale one now (the reader
         * counts it, so each run is counted once, timed or not). */
        if (!overlaps)
            zone_run_keep(q->device, b);
        atomic_fetch_add_explicit(&b->gen, 1, memory_order_seq_cst);
    }
    atomic_fetch_add(&b->pending, 1);
    atomic_fetch_add(&b->refs, 1);
    uint32_t gen = atomic_load_explicit(&b->gen, memory_order_relaxed);
    /* A simultaneous-use run that may overlap the last one: its copy may mix both, so it is
     * read as stale too, and runs after it are until it is read. */
    slot->zone_gens[slot->zone_count] = overlaps ? gen - 1 : gen;
    slot->zone_overlaps[slot->zone_count] = overlaps;
    if (b->copy)
        atomic_fetch_add_explicit(&b->pool->dev->zone_copies_in_flight, 1, memory_order_relaxed);
    slot->zones[slot->zone_count++] = b;
    b->last_queue = q;
    b->last_slot = slot;
    b->last_value = slot->value;
}

void zones_untimed_submit(VkCommandBuffer cb, bool count)
{
    struct cb_zones *z = state(cb);
    if (z && z->block && z->block->host && z->block->region_count)
        zone_host_next_run(z->dev, z->block);
    if (!z || !z->block || !z->block->readable)
        return;
    if (z->block->host) {
        if (count)
            fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_FULL, z->block->timed_regions);
        return;
    }
    run_unread(z->dev, z->block);
    if (count)
        fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_FULL, z->block->timed_regions);
}

void zones_read(struct device_data *dev, struct queue_data *q, struct gpu_slot *slot,
                const uint64_t *span_begin,
                int64_t (*to_mono)(const struct queue_data *q, uint64_t ts))
{
    for (uint32_t k = 0; k < slot->zone_count; k++) {
        struct zone_block *b = slot->zones[k];
        uint64_t data[ZONE_BLOCK_QUERIES];
        uint64_t stats[ZONE_REGIONS][STATS_WORDS];
        uint32_t gen = slot->zone_gens[k];
        bool read;
        if (b->host) {
            read = !slot->zone_overlaps[k] && zone_read_history(b, gen, data, stats);
            struct zone_pool *p = b->pool;
            if (!read && !slot->zone_overlaps[k] &&
                atomic_load_explicit(&b->gen, memory_order_acquire) == gen &&
                p->deferred_count < ZONE_DEFERRED) {
                /* Not read yet by the thread that submits it again: a later pass. */
                p->deferred[p->deferred_count++] = (struct zone_deferred){
                    .block = b, .gen = gen, .queue = q, .has_begin = span_begin != NULL,
                    .begin = span_begin ? *span_begin : 0 };
                continue;
            }
        } else {
            read = b->copy ? zone_read_copy(dev, b, gen, data, stats) ||
                                 (!slot->zone_overlaps[k] && zone_read_history(b, gen, data, stats))
                           : zone_read_queries(dev, b, data, stats);
        }
        if (read)
            zone_publish_run(b, q, data, (const uint64_t (*)[STATS_WORDS])stats, span_begin, to_mono);
        else if (b->copy || b->host)
            fscope_gpu_zone_untimed(slot->zone_overlaps[k] ? GPU_ZONE_UNTIMED_SIMULTANEOUS
                                                           : GPU_ZONE_UNTIMED_RESUBMITTED,
                                    b->timed_regions);
        zone_run_done(dev, b);
    }
    slot->zone_count = 0;
}

void zones_read_deferred(struct device_data *dev, bool last,
                         int64_t (*to_mono)(const struct queue_data *q, uint64_t ts))
{
    struct zone_pool *p = atomic_load_explicit(&dev->zones, memory_order_acquire);
    if (!p)
        return;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < p->deferred_count; i++) {
        struct zone_deferred *d = &p->deferred[i];
        struct zone_block *b = d->block;
        uint64_t data[ZONE_BLOCK_QUERIES];
        uint64_t stats[ZONE_REGIONS][STATS_WORDS];
        if (zone_read_history(b, d->gen, data, stats)) {
            zone_publish_run(b, d->queue, data, (const uint64_t (*)[STATS_WORDS])stats,
                        d->has_begin ? &d->begin : NULL, to_mono);
        } else if (!last && atomic_load_explicit(&b->gen, memory_order_acquire) == d->gen) {
            p->deferred[kept++] = *d; /* still to be read */
            continue;
        } else {
            fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_RESUBMITTED, b->timed_regions);
        }
        zone_run_done(dev, b);
    }
    p->deferred_count = kept;
}

void zones_device_finish_runs(struct device_data *dev)
{
    /* The app idled the device before destroying it: every run is finished. */
    for (unsigned i = 0; i < CB_TABLE_SIZE; i++) {
        struct cb_zones *z = cb_table[i].zones;
        if (z && z->dev == dev && z->block)
            zone_host_read_last(dev, z->block);
    }
}

void zones_detach(struct device_data *dev, struct gpu_slot *slot)
{
    for (uint32_t k = 0; k < slot->zone_count; k++) {
        slot->zones[k]->unread = false; /* its run never went down */
        if (slot->zones[k]->copy)
            atomic_fetch_sub_explicit(&dev->zone_copies_in_flight, 1, memory_order_relaxed);
        atomic_fetch_sub(&slot->zones[k]->pending, 1);
        zone_block_release(slot->zones[k]);
    }
    slot->zone_count = 0;
}

void zones_device_destroy(struct device_data *dev)
{
    struct zone_pool *p = atomic_exchange(&dev->zones, NULL);
    if (!p)
        return;
    forget_all(dev, VK_NULL_HANDLE);
    for (uint32_t i = 0; i < ZONE_BLOCKS; i++)
        free(p->blocks[i].history);
    dev->vk.DestroyQueryPool(dev->device, p->pool, NULL);
    readback_finish(dev, &p->copies);
    if (p->stats_pool) {
        dev->vk.DestroyQueryPool(dev->device, p->stats_pool, NULL);
        readback_finish(dev, &p->stats_copies);
    }
    pthread_mutex_destroy(&p->lock);
    /* The log stays: it belongs to the recording. */
    free(p);
}
