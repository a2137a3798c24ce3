/* GPU zones' query blocks: the device's pool of them, taken and released, reset, and the runs
 * read from them (the copy, the history, the queries). See gpu_zones.c's opening comment. */
#include "gpu_zone_blocks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/clock.h"
#include "record/gpu_zones.h"
#include "record/meta.h"

/* ---- blocks ---- */

_Static_assert(ZONE_BLOCK_QUERIES == 64, "a block's queries are one 64-bit mask");

/* The queries of a block a run must have written for it to be read: each ended region's end,
 * and the query its begin is in. */
uint64_t zone_needed_queries(const struct zone_block *b)
{
    uint64_t mask = 0;
    for (uint32_t r = 0; r < b->region_count; r++) {
        if (!b->regions[r].ended)
            continue;
        mask |= UINT64_C(1) << (2 * r + 1);
        if (b->regions[r].begin_at != BEGIN_AT_START)
            mask |= UINT64_C(1) << b->regions[r].begin_at;
    }
    return mask;
}

/* The next run of set bits in mask at or after *first: its first bit in *first, its length in
 * *n; false when there is none. */
bool zone_mask_run(uint64_t mask, uint32_t *first, uint32_t *n)
{
    uint64_t m = *first < 64 ? mask >> *first : 0;
    if (!m)
        return false;
    *first += (uint32_t)__builtin_ctzll(m);
    m = ~(mask >> *first);
    *n = m ? (uint32_t)__builtin_ctzll(m) : 64 - *first;
    return true;
}

/* The query pool and the buffer its copies land in, mapped. False (what was made undone)
 * when the device will not give them. */
static bool pool_make(struct device_data *dev, struct zone_pool *p)
{
    const VkQueryPoolCreateInfo query_info = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = ZONE_BLOCKS * ZONE_BLOCK_QUERIES,
    };
    if (dev->vk.CreateQueryPool(dev->device, &query_info, NULL, &p->pool) != VK_SUCCESS)
        return false;
    if (!readback_init(dev, &p->copies, ZONE_BLOCKS * ZONE_BLOCK_QUERIES)) {
        dev->vk.DestroyQueryPool(dev->device, p->pool, NULL);
        return false;
    }
    if (dev->pipeline_stats) {
        const VkQueryPoolCreateInfo stats_info = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_PIPELINE_STATISTICS,
            .queryCount = ZONE_BLOCKS * ZONE_REGIONS,
            .pipelineStatistics = ZONE_STATS_FLAGS,
        };
        if (dev->vk.CreateQueryPool(dev->device, &stats_info, NULL, &p->stats_pool) !=
            VK_SUCCESS) {
            p->stats_pool = VK_NULL_HANDLE;
        } else if (!readback_init(dev, &p->stats_copies,
                                  ZONE_BLOCKS * ZONE_REGIONS * STATS_WORDS)) {
            dev->vk.DestroyQueryPool(dev->device, p->stats_pool, NULL);
            p->stats_pool = VK_NULL_HANDLE;
        }
        if (!p->stats_pool)
            fscope_record_note("device %u: no query pool or buffer for pipeline statistics: "
                               "passes are timed without them", dev->id);
    }
    return true;
}

struct zone_pool *zone_pool_get(struct device_data *dev)
{
    struct zone_pool *p = atomic_load_explicit(&dev->zones, memory_order_acquire);
    if (p || !layer_config.gpu_timing || !layer_config.gpu_zones)
        return p;
    pthread_mutex_lock(&dev->lock);
    p = atomic_load(&dev->zones);
    if (!p && !dev->zones_failed) {
        p = calloc(1, sizeof(*p));
        if (p && pool_make(dev, p)) {
            p->dev = dev;
            if (dev->reset_query_pool) {
                dev->reset_query_pool(dev->device, p->pool, 0, ZONE_BLOCKS * ZONE_BLOCK_QUERIES);
                if (p->stats_pool)
                    dev->reset_query_pool(dev->device, p->stats_pool, 0,
                                          ZONE_BLOCKS * ZONE_REGIONS);
            }
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
            fscope_record_note("device %u: no query pool or host-visible buffer for GPU zones: "
                               "passes and labels are not timed", dev->id);
        }
    }
    pthread_mutex_unlock(&dev->lock);
    return p;
}

struct zone_block *zone_block_take(struct zone_pool *p)
{
    struct zone_block *b = NULL;
    pthread_mutex_lock(&p->lock);
    if (p->free_count)
        b = &p->blocks[p->free_list[--p->free_count]];
    pthread_mutex_unlock(&p->lock);
    if (b) {
        b->region_count = 0;
        b->copy = false;
        b->host = false;
        b->in_buffer_reset = false;
        b->last_queue = NULL;
        b->fresh = true;
        b->unread = false;
        b->simultaneous = false;
        b->readable = false;
        b->starts_unstamped = false;
        b->timed_regions = 0;
        atomic_store(&b->pending, 0);
        atomic_store(&b->refs, 1);
    }
    return b;
}

/* Drops one reference; the last one resets the block's queries from the host (where the
 * device can) and frees it. */
void zone_block_release(struct zone_block *b)
{
    if (!b || atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    struct zone_pool *p = b->pool;
    if (b->region_count && p->dev->reset_query_pool) {
        p->dev->reset_query_pool(p->dev->device, p->pool, b->index * ZONE_BLOCK_QUERIES,
                                 2 * b->region_count);
        if (p->stats_pool)
            p->dev->reset_query_pool(p->dev->device, p->stats_pool, b->index * ZONE_REGIONS,
                                     b->region_count);
    }
    pthread_mutex_lock(&p->lock);
    p->free_list[p->free_count++] = b->index;
    pthread_mutex_unlock(&p->lock);
}

/* The block's history, big enough for its regions (recording time, not the submit path;
 * none: runs read late go untimed). */
void zone_history_make(struct zone_block *b)
{
    uint32_t words = 2 * b->region_count;
    if (b->history && b->history->words >= words)
        return;
    free(b->history);
    b->history = calloc(1, sizeof(*b->history) +
                               (size_t)ZONE_HISTORY * words * sizeof(b->history->data[0]));
    if (b->history)
        b->history->words = words;
}

/* Writes a run's timestamps into the history at generation gen (see zone_history). */
static void history_put(struct zone_block *b, uint32_t gen, const uint64_t *data)
{
    struct zone_history *h = b->history;
    uint32_t at = gen % ZONE_HISTORY, n = 2 * b->region_count;
    atomic_store_explicit(&h->gen[at], 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    for (uint32_t i = 0; i < n; i++)
        atomic_store_explicit(&h->data[at * h->words + i], data[i], memory_order_relaxed);
    atomic_store_explicit(&h->gen[at], gen + 1, memory_order_release);
}

/* A block read from the host: its last run, finished (its command buffer is not pending), read
 * into its history where it was timed. App threads. */
void zone_host_read_last(struct device_data *dev, struct zone_block *b)
{
    if (!b->host || !b->unread)
        return;
    b->unread = false;
    if (!b->history)
        return;
    uint64_t data[ZONE_BLOCK_QUERIES] = { 0 };
    uint64_t needed = zone_needed_queries(b);
    for (uint32_t q = 0, n; zone_mask_run(needed, &q, &n); q += n)
        if (dev->vk.GetQueryPoolResults(dev->device, b->pool->pool,
                                        b->index * ZONE_BLOCK_QUERIES + q, n,
                                        n * sizeof(uint64_t), data + q, sizeof(uint64_t),
                                        VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
            return; /* not read: the reader counts it */
    history_put(b, atomic_load_explicit(&b->gen, memory_order_relaxed), data);
}

/* Before a block read from the host runs again: its last run read, its queries reset, its
 * generation moved on. The first run after its recording finds it reset already. */
bool zone_host_next_run(struct device_data *dev, struct zone_block *b)
{
    if (b->fresh) {
        b->fresh = false;
        return true;
    }
    bool finished = true;
    if (b->in_buffer_reset) {
        /* Its runs may overlap: read the last one only where its own signal says it is done
         * (one counter read); the command buffer resets its queries itself. */
        finished = !b->last_queue || gpu_slot_complete(b->last_queue, b->last_slot,
                                                       b->last_value);
        if (!finished)
            b->unread = false; /* may be mixed with this run: the reader counts it */
        zone_host_read_last(dev, b);
    } else {
        zone_host_read_last(dev, b);
        dev->reset_query_pool(dev->device, b->pool->pool, b->index * ZONE_BLOCK_QUERIES,
                              2 * b->region_count);
    }
    atomic_fetch_add_explicit(&b->gen, 1, memory_order_seq_cst);
    return finished;
}


/* Keeps the last run of b, complete and not yet read, in its history before the next run
 * rewrites its copy (see zone_history). The caller then moves b's generation on. */
void zone_run_keep(struct device_data *dev, struct zone_block *b)
{
    if (!b->history || !b->last_queue ||
        !gpu_slot_complete(b->last_queue, b->last_slot, b->last_value))
        return;
    struct zone_pool *p = b->pool;
    uint32_t first = b->index * ZONE_BLOCK_QUERIES, n = 2 * b->region_count;
    uint64_t data[ZONE_BLOCK_QUERIES];
    readback_invalidate(dev, &p->copies, first, n);
    for (uint32_t i = 0; i < n; i++)
        data[i] = p->copies.map[first + i];
    history_put(b, atomic_load_explicit(&b->gen, memory_order_relaxed), data);
}

/* Reads a run's copy of block b (taken at generation gen) into data, and its regions'
 * pipeline statistics into stats: false when a later run was submitted meanwhile, so what was
 * read may be that run's. */
bool zone_read_copy(struct device_data *dev, const struct zone_block *b, uint32_t gen,
                      uint64_t *data, uint64_t (*stats)[STATS_WORDS])
{
    struct zone_pool *p = b->pool;
    uint32_t first = b->index * ZONE_BLOCK_QUERIES, n = 2 * b->region_count;
    if (atomic_load_explicit(&b->gen, memory_order_acquire) != gen)
        return false;
    readback_invalidate(dev, &p->copies, first, n);
    for (uint32_t i = 0; i < n; i++)
        data[i] = p->copies.map[first + i];
    for (uint32_t r = 0; p->stats_pool && r < b->region_count; r++) {
        if (!b->regions[r].stats)
            continue;
        uint32_t word = (b->index * ZONE_REGIONS + r) * STATS_WORDS;
        readback_invalidate(dev, &p->stats_copies, word, STATS_WORDS);
        for (uint32_t k = 0; k < STATS_WORDS; k++)
            stats[r][k] = p->stats_copies.map[word + k];
    }
    /* The submission that bumps gen comes after the bump: if gen has not moved, nothing of
     * that run could have landed before the reads above. */
    atomic_thread_fence(memory_order_seq_cst);
    return atomic_load_explicit(&b->gen, memory_order_relaxed) == gen;
}

/* A run of block b at generation gen from its history (its copy has moved on): false when it
 * is not there, or was rewritten while read. No pipeline statistics: marked unread. */
bool zone_read_history(const struct zone_block *b, uint32_t gen, uint64_t *data,
                         uint64_t (*stats)[STATS_WORDS])
{
    struct zone_history *h = b->history;
    uint32_t at = gen % ZONE_HISTORY;
    if (!h || atomic_load_explicit(&h->gen[at], memory_order_acquire) != gen + 1)
        return false;
    for (uint32_t i = 0; i < 2 * b->region_count; i++)
        data[i] = atomic_load_explicit(&h->data[at * h->words + i], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&h->gen[at], memory_order_relaxed) != gen + 1)
        return false;
    memset(stats, 0xff, sizeof(uint64_t[ZONE_REGIONS][STATS_WORDS]));
    return true;
}

/* A ONE_TIME_SUBMIT block's run, from its queries (the submission finished: no wait). */
bool zone_read_queries(struct device_data *dev, const struct zone_block *b, uint64_t *data,
                         uint64_t (*stats)[STATS_WORDS])
{
    uint64_t needed = zone_needed_queries(b); /* not a label left open: its end was never written */
    for (uint32_t q = 0, n; zone_mask_run(needed, &q, &n); q += n)
        if (dev->vk.GetQueryPoolResults(dev->device, b->pool->pool,
                                        b->index * ZONE_BLOCK_QUERIES + q, n,
                                        n * sizeof(uint64_t), data + q, sizeof(uint64_t),
                                        VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
            return false;
    for (uint32_t r = 0; b->pool->stats_pool && r < b->region_count; r++)
        if (b->regions[r].stats && b->regions[r].ended &&
            dev->vk.GetQueryPoolResults(dev->device, b->pool->stats_pool,
                                        b->index * ZONE_REGIONS + r, 1, sizeof(stats[r]),
                                        stats[r], sizeof(stats[r]),
                                        VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
            memset(stats[r], 0xff, sizeof(stats[r])); /* unreadable: marked, not reported */
    return true;
}

/* A run's zones into the log: data holds its block's queries, span_begin the submission's
 * begin timestamp (NULL: unreadable). */
void zone_publish_run(struct zone_block *b, struct queue_data *q, const uint64_t *data,
                        const uint64_t (*stats)[STATS_WORDS], const uint64_t *span_begin,
                        int64_t (*to_mono)(const struct queue_data *q, uint64_t ts))
{
    for (uint32_t i = 0; i < b->region_count; i++) {
        const struct zone_region *z = &b->regions[i];
        if (!z->ended)
            continue;
        const uint64_t *at = z->begin_at == BEGIN_AT_START ? span_begin : &data[z->begin_at];
        if (!at) {
            fscope_gpu_zone_untimed(GPU_ZONE_UNTIMED_UNSTAMPED, 1); /* span unreadable */
            continue;
        }
        uint64_t begin = fscope_mono_ns_to_ticks(to_mono(q, *at & q->valid_mask));
        uint64_t end = fscope_mono_ns_to_ticks(to_mono(q, data[2 * i + 1] & q->valid_mask));
        fscope_gpu_zone_add(b->pool->log, begin, end < begin ? begin : end, z->name, z->depth,
                            (enum gpu_zone_kind)z->kind);
        if (z->stats && stats[i][0] != UINT64_MAX)
            fscope_gpu_pass_stats(b->pool->log, end < begin ? begin : end, z->name, stats[i]);
    }
}

/* The reader is done with a run of b: read or counted. */
void zone_run_done(struct device_data *dev, struct zone_block *b)
{
    if (b->copy)
        atomic_fetch_sub_explicit(&dev->zone_copies_in_flight, 1, memory_order_relaxed);
    atomic_fetch_sub(&b->pending, 1);
    zone_block_release(b);
}
