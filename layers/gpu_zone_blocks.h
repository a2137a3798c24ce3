/* GPU zones' query blocks and the runs read from them (gpu_zone_blocks.c), below the hooks
 * that record and submit zones and the reader's pass over them (gpu_zones.c, whose opening
 * comment says how it all works). */
#ifndef FSCOPE_LAYER_GPU_ZONE_BLOCKS_H
#define FSCOPE_LAYER_GPU_ZONE_BLOCKS_H

#include "layer.h"
#include "readback.h"

#define ZONE_BLOCKS 1024
#define ZONE_BLOCK_QUERIES 64
#define ZONE_REGIONS (ZONE_BLOCK_QUERIES / 2)
#define ZONE_DEPTH 16
#define ZONE_DEFERRED 256

/* Where a region's begin time is: its own query 2r, or (a pass on a CPU device, see
 * zones_pass_ending) the query of the last stamp before it in its command buffer, or the
 * start of the command buffer. */
#define BEGIN_AT_START (-1)

struct zone_region {
    uint16_t name;
    uint8_t depth;
    uint8_t kind;
    bool ended;
    bool stats;   /* a pipeline statistics query brackets it (a pass) */
    bool stamped; /* its end was stamped inside its pass (zones_pass_ending) */
    int8_t begin_at; /* the block's query holding its begin, or BEGIN_AT_START */
};

/* What the statistics query counts: PIPELINE_STATS values, in this flags' bit order. */
#define ZONE_STATS_FLAGS                                                                       \
    (VK_QUERY_PIPELINE_STATISTIC_INPUT_ASSEMBLY_VERTICES_BIT |                                 \
     VK_QUERY_PIPELINE_STATISTIC_INPUT_ASSEMBLY_PRIMITIVES_BIT |                               \
     VK_QUERY_PIPELINE_STATISTIC_VERTEX_SHADER_INVOCATIONS_BIT |                               \
     VK_QUERY_PIPELINE_STATISTIC_CLIPPING_INVOCATIONS_BIT |                                    \
     VK_QUERY_PIPELINE_STATISTIC_CLIPPING_PRIMITIVES_BIT |                                     \
     VK_QUERY_PIPELINE_STATISTIC_FRAGMENT_SHADER_INVOCATIONS_BIT |                             \
     VK_QUERY_PIPELINE_STATISTIC_COMPUTE_SHADER_INVOCATIONS_BIT)
#define STATS_WORDS PIPELINE_STATS

struct zone_block {
    struct zone_pool *pool;
    uint32_t index;
    _Atomic uint32_t refs;    /* its command buffer's, and each submission's not yet read */
    _Atomic uint32_t pending; /* submissions not yet read */
    _Atomic uint32_t gen;     /* moves on when a run is submitted before the last was read */
    bool copy;                /* its command buffer resets it and copies it out (see above) */
    /* Read from the host (see "From the host" above): reset and read by the thread that
     * submits its command buffer again, never by the reader. fresh: reset, no run yet;
     * unread: its last run was timed and is still to be read. App threads only (the
     * command buffer is never pending twice). */
    bool host, fresh, unread;
    /* Of a block read from the host, one whose command buffer is SIMULTANEOUS_USE: its runs
     * may overlap, so it resets itself at its start, and a run is read only where its own
     * signal shows it finished (in_buffer_reset). */
    bool in_buffer_reset;
    bool simultaneous;        /* recorded with SIMULTANEOUS_USE: its runs may overlap */
    /* Its last run's completion signal (written by the submitting thread): a later run
     * overlaps it only while it is not complete. */
    struct queue_data *last_queue;
    const struct gpu_slot *last_slot;
    uint64_t last_value;
    bool readable;            /* recorded to its end with regions a run times (and copies) */
    /* A region begins at the command buffer's start, unstamped: a run is read only where the
     * command buffer is its submission's first, right behind our span's begin stamp. */
    bool starts_unstamped;
    uint32_t timed_regions;   /* how many regions a run times: the ended ones */
    uint32_t region_count;    /* region k uses queries 2k and 2k + 1 of the block */
    struct zone_region regions[ZONE_REGIONS];
    /* Runs kept when a later run came before the reader (see zone_history); NULL until the
     * block is first recorded to be copied, then kept for its life. */
    struct zone_history *history;
};

/* The copy of a command buffer recorded once is rewritten by its next run, and an app that
 * records once submits it again as soon as it may: each frame slot comes round in about a
 * millisecond at the frame rates such apps run at, while the reader looks every few (with two
 * frames in flight on lavapipe, 298 of 300 runs were rewritten before read). So the thread
 * that submits the next run first keeps the last one where it is complete (its own signal
 * says so: one counter read), in the block's history by generation; the reader reads a run
 * there when its copy has moved on. A seqlock per entry: the submitting thread writes, the
 * reader checks the generation before and after. 64 runs: the reader, every few milliseconds
 * and later on a loaded machine, was 20 runs behind at 2,000 fps. Timestamps only: a run read
 * from here has no pipeline statistics. */
#define ZONE_HISTORY 64
struct zone_history {
    uint32_t words;                /* 2 * the regions of the recording it was made for */
    _Atomic uint32_t gen[ZONE_HISTORY]; /* the run's generation + 1; 0 while written or empty */
    _Atomic uint64_t data[];       /* words a run, ZONE_HISTORY runs */
};
struct zone_pool {
    struct device_data *dev;
    VkQueryPool pool;
    /* Pipeline statistics: query b * ZONE_REGIONS + r for region r of block b, and their
     * copies at STATS_WORDS words each. VK_NULL_HANDLE: not asked for, or not made. */
    VkQueryPool stats_pool;
    struct readback stats_copies;
    /* The copies: block b's query q at word b * ZONE_BLOCK_QUERIES + q, mapped for good. */
    struct readback copies;
    pthread_mutex_t lock; /* the free list */
    uint32_t free_count;
    uint32_t free_list[ZONE_BLOCKS];
    struct zone_block blocks[ZONE_BLOCKS];
    struct fscope_gpu_zone_log *log;
    /* Runs of blocks read from the host whose slot the reader reached before they were read:
     * the reader's alone. Each holds a reference to its block. */
    struct zone_deferred {
        struct zone_block *block;
        uint32_t gen;
        struct queue_data *queue;
        bool has_begin;
        uint64_t begin;
    } deferred[ZONE_DEFERRED];
    uint32_t deferred_count;
};

/* The queries of a block a run must have written for it to be read: each ended region's end,
 * and the query its begin is in. */
uint64_t zone_needed_queries(const struct zone_block *b);
/* The next run of set bits in mask at or after *first: its first bit in *first, its length in
 * *n; false when there is none. */
bool zone_mask_run(uint64_t mask, uint32_t *first, uint32_t *n);
/* The device's pool, made at its first use; NULL when zones are off or it cannot be made. */
struct zone_pool *zone_pool_get(struct device_data *dev);
struct zone_block *zone_block_take(struct zone_pool *p);
/* Drops one reference; the last one resets the block's queries from the host and frees it. */
void zone_block_release(struct zone_block *b);
/* The block's history, big enough for its regions (recording time). */
void zone_history_make(struct zone_block *b);
/* A block read from the host: its last run read into its history (app threads). */
void zone_host_read_last(struct device_data *dev, struct zone_block *b);
/* Before a block read from the host runs again: its last run read, its queries reset (from the
 * host, unless it resets itself), generation moved on. False where the last run may still be
 * running (a SIMULTANEOUS_USE command buffer): the new run may overlap it. */
bool zone_host_next_run(struct device_data *dev, struct zone_block *b);
/* A copied block's last run, complete and unread, kept in its history before the next run
 * rewrites the copy. */
void zone_run_keep(struct device_data *dev, struct zone_block *b);
/* Reader thread: a run at generation gen from the copy, the history or the queries; false
 * when it is not there (anymore). */
bool zone_read_copy(struct device_data *dev, const struct zone_block *b, uint32_t gen,
                    uint64_t *data, uint64_t (*stats)[STATS_WORDS]);
bool zone_read_history(const struct zone_block *b, uint32_t gen, uint64_t *data,
                       uint64_t (*stats)[STATS_WORDS]);
bool zone_read_queries(struct device_data *dev, const struct zone_block *b, uint64_t *data,
                       uint64_t (*stats)[STATS_WORDS]);
/* A run's zones into the log. */
void zone_publish_run(struct zone_block *b, struct queue_data *q, const uint64_t *data,
                      const uint64_t (*stats)[STATS_WORDS], const uint64_t *span_begin,
                      int64_t (*to_mono)(const struct queue_data *q, uint64_t ts));
/* The reader is done with a run of b: read or counted. */
void zone_run_done(struct device_data *dev, struct zone_block *b);

#endif
