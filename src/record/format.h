/* The recording: what the app writes and what analysis reads, laid out in one shared-memory
 * arena (a memfd). This header is the contract between the two sides and the only thing they
 * share; the reader (src/analysis/recording.c) trusts none of it and checks every offset, size
 * and count against the bytes it was given.
 *
 * Layout: a header at offset 0, then objects bump-allocated from the arena. Objects are found
 * through the header's directory (type, offset, size), published once initialised. Items that
 * grow (frames, GPU spans, cap events) live in chunked arrays whose chunks are arena offsets.
 * Offsets, never pointers, cross from writer to reader; the two addresses that do appear (a
 * zone's location, in zone nodes and ring events) are keys into the location table.
 *
 * Everything here is little-endian x86-64 with natural alignment; REC_VERSION changes with any
 * change of layout, and a reader refuses versions it cannot read (REC_VERSION_OLDEST on).
 *
 * Stored, the recording is compact: what the stream file and a capture's recording.fsr hold
 * are ranges of the arena (struct rec_range), encoded by util/compact.h. */
#ifndef FSCOPE_RECORD_FORMAT_H
#define FSCOPE_RECORD_FORMAT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define REC_MAGIC "FSCOPREC"
#define REC_VERSION 10u
/* The oldest version this reader reads. Version 9's arena is version 10's; its stream file was
 * the arena's image (each chunk, as it was, at its own offset) and its captures the arena as
 * it was, both of which version 10 still reads (REC_LAYOUT_ARENA). */
#define REC_VERSION_OLDEST 9u
/* Objects and chunks start at multiples of this: a cache line, so no two writers share one. */
#define REC_ALIGN 64u
/* The arena's size: virtual address space only (a sparse memfd, mapped without reserve), so
 * it costs the pages actually written. */
#define REC_ARENA_SIZE (16ull << 30)
/* Objects the directory can name: 64 frame logs, 64 span logs, 64 caps and 256 thread slots
 * (the writer's own limits) plus the metadata and location table, with room to spare. */
#define REC_DIR_ENTRIES 1024u

enum rec_object_type {
    REC_OBJ_NONE = 0, /* a directory entry reserved but not yet published */
    REC_OBJ_META,
    REC_OBJ_LOCS,
    REC_OBJ_THREAD,
    REC_OBJ_FRAME_LOG,
    REC_OBJ_SPAN_LOG,
    REC_OBJ_CAP,
    REC_OBJ_KERNEL,
    REC_OBJ_GPU_ZONE_NAMES, /* struct rec_gpu_zone_names: one per recording */
    REC_OBJ_GPU_ZONES,      /* struct rec_gpu_zones: one per device */
    REC_OBJ_OBJECTS,        /* struct rec_objects: one per recording */
    REC_OBJ_ENGINE,         /* struct rec_engine: one per recording */
    REC_OBJ_TYPE_COUNT,
};

/* Where the app is in its life, as the app last said. */
enum rec_state {
    REC_STATE_EMPTY = 0, /* created by an observer; no app has claimed it */
    REC_STATE_RECORDING,
    REC_STATE_ENDED, /* the app reached its exit and flushed what it had */
};

struct rec_dir_entry {
    _Atomic uint32_t type; /* enum rec_object_type; stored last (release) */
    uint32_t reserved;
    uint64_t offset, size;
};

/* The clock the recording's ticks are in: ns = base_ns + (ticks - base_ticks) * ns_per_tick.
 * A seqlock: the app refines the rate while it runs; an odd seq is a store in progress. */
struct rec_clock {
    _Atomic uint32_t seq;
    uint32_t tsc; /* ticks are TSC cycles (else CLOCK_MONOTONIC ns) */
    _Atomic uint64_t base_ticks;
    _Atomic int64_t base_ns;
    _Atomic uint64_t ns_per_tick_bits; /* a double's bits */
};

struct rec_header {
    char magic[8];
    uint32_t version;
    uint32_t header_size;
    uint64_t size;          /* the arena's bytes, header included */
    _Atomic uint64_t used;  /* bump pointer: bytes allocated so far */
    _Atomic int32_t owner_pid; /* the process recording into it; 0: none yet */
    _Atomic uint32_t state;    /* enum rec_state */
    /* How the app ended, filled by whoever saw it end (the observer). 0: not known. */
    int32_t end_status;     /* exit status + 1, so 0 means unknown */
    int32_t end_signal;     /* the signal that killed it */
    char app[64];           /* /proc/self/comm of the owner */
    struct rec_clock clock;
    _Atomic uint64_t alloc_failures; /* allocations refused: the arena was full */
    /* The file sealed chunks are streamed to, as a descriptor of the owner (framescope run
     * passes it; the app makes its own otherwise); -1: none, nothing is streamed. */
    int32_t stream_fd;
    uint32_t layout;        /* enum rec_layout: 0 in memory */
    _Atomic uint64_t streamed_bytes;        /* the chunks streamed, as they are in the arena */
    _Atomic uint64_t streamed_stored_bytes; /* what they took in the stream file (version 10) */
    uint64_t reserved[5];
    _Atomic uint32_t dir_count; /* entries reserved, some maybe not yet published */
    uint32_t dir_capacity;
    struct rec_dir_entry dir[REC_DIR_ENTRIES];
};

/* How a recording is laid out in its file (rec_header.layout). */
enum rec_layout {
    REC_LAYOUT_ARENA = 0, /* the arena itself, byte for byte (a memfd; version 9's captures) */
    /* A capture's recording.fsr since version 10: the header (its used the arena's length),
     * then, from the next multiple of 8, struct rec_range after struct rec_range in the
     * order of their offsets, none overlapping, to the end of the file. Every byte of the
     * arena no range holds is zero. It holds every chunk of its arrays, those streamed too
     * (their ranges copied from the stream file): a reader takes streamed_chunks as 0. */
    REC_LAYOUT_PACKED = 1,
};

/* How a range's bytes are stored: util/compact.h's encodings. */
enum rec_encoding {
    REC_ENCODING_RAW = 0,   /* as they are */
    REC_ENCODING_ZSTD = 1,  /* one zstd frame (with its content size and checksum) */
    /* Items of item_size bytes (a multiple of 8 dividing raw_bytes): each 8-byte word less the
     * same word of the item before (the first item's less 0, modulo 2^64), stored word by word
     * (every item's word 0, then every item's word 1, ...) and that as one zstd frame. */
    REC_ENCODING_ITEMS = 2,
};

/* One range of the arena as stored: in the stream file (version 10), a sealed chunk, in the
 * order they were streamed; in a packed recording, any range that is not all zeros. The
 * header is followed by stored_bytes of payload, then zeros to a multiple of 8. */
#define REC_RANGE_MAGIC "FSRG"
/* The most bytes a range holds once decoded: a chunk (chunked.h, 256 KiB) fits with room. */
#define REC_RANGE_RAW_MAX (1u << 20)
struct rec_range {
    char magic[4];
    uint32_t encoding;     /* enum rec_encoding */
    uint64_t offset;       /* where its bytes lie in the arena */
    uint64_t raw_bytes;    /* how many, decoded: at most REC_RANGE_RAW_MAX */
    uint64_t stored_bytes; /* how many follow this header */
    uint32_t item_size;    /* REC_ENCODING_ITEMS: an item's bytes; else 0 */
    uint32_t reserved;
};

/* An append-only array of fixed-size items: chunks of chunk_items reached through a table of
 * arena offsets that is replaced by a bigger copy when full (the old one stays valid). */
struct chunked {
    uint32_t item_size, chunk_items;
    _Atomic uint64_t count;        /* items published */
    uint64_t dropped;              /* appends lost: the arena was full */
    _Atomic uint64_t table_offset; /* uint64_t[table_capacity] chunk offsets, 0: none yet */
    _Atomic uint64_t table_capacity;
    /* Chunks [0, streamed_chunks) were written to the stream file, each a struct rec_range
     * (version 9: as they were, at their own arena offsets), and their memory given back:
     * read them from there (src/record/stream.c). */
    _Atomic uint64_t streamed_chunks;
};

/* A zone's location as the app gave it, keyed by its address in the app. */
#define REC_LOC_CAPACITY 4096u
#define REC_LOC_NAME 94
struct rec_loc {
    _Atomic uint64_t address; /* 0: free */
    _Atomic uint32_t ready;   /* the fields below are written */
    uint32_t line;
    uint8_t level, flags;     /* FSCOPE_LEVEL_*, FSCOPE_LOC_* */
    char name[REC_LOC_NAME];  /* truncated */
};
struct rec_locs {
    _Atomic uint64_t dropped; /* locations that found the table full */
    struct rec_loc entries[REC_LOC_CAPACITY];
};

/* One flight-recorder event: 16 bytes, no kind field. A loc of 0 is the exit of the innermost
 * open zone; the reader keeps the stack. A location flagged FSCOPE_LOC_INSTANT is a point in
 * time. loc is the app's address of its struct fscope_loc: a key into rec_locs. */
struct fscope_event {
    uint64_t ticks;
    const struct fscope_loc *loc;
};

#define FSCOPE_NODE_NONE UINT32_MAX
struct zone_node {
    const struct fscope_loc *loc; /* a key into rec_locs; NULL for the root */
    uint32_t parent;
    uint32_t first_child;
    uint32_t next_sibling;
    uint32_t last_hit_child;         /* where the next lookup under this node starts */
    _Atomic int32_t detail_override; /* -1: inherit; governs this node's children */
    uint64_t calls;
    uint64_t inclusive_ticks;
    uint64_t child_ticks;
    uint64_t max_ticks;
};

enum slot_state { SLOT_FREE, SLOT_CLAIMING, SLOT_LIVE, SLOT_EXITED, SLOT_EXTERNAL };

/* What the recording shows of one thread slot (or external track such as a GPU queue). */
struct rec_thread {
    _Atomic int state; /* enum slot_state */
    int tid;
    char name[32];
    uint32_t slot;     /* external tracks are named by it */
    _Atomic uint32_t node_count;
    uint32_t node_capacity;
    uint32_t reserved;
    uint64_t nodes_offset; /* struct zone_node[node_capacity] */
    uint64_t ring_offset;  /* struct fscope_event[ring_mask + 1] */
    uint64_t ring_mask;
    _Atomic uint64_t ring_head; /* events ever written; the ring holds the last mask+1 */
    uint64_t nodes_exhausted;
};

/* Time a thread spent blocked inside calls, by kind. The frame budget's blocks. */
enum fscope_block {
    FSCOPE_BLOCK_ACQUIRE,
    FSCOPE_BLOCK_PRESENT,
    FSCOPE_BLOCK_FENCE,
    FSCOPE_BLOCK_SEMAPHORE,
    FSCOPE_BLOCK_IDLE,
    FSCOPE_BLOCK_CAP,
    FSCOPE_BLOCK_PRESENT_WAIT, /* vkWaitForPresentKHR */
    FSCOPE_BLOCK_COUNT,
};

/* What a bind sets, for the redundant-state counts. */
enum bind_kind {
    BIND_PIPELINE,
    BIND_VERTEX,        /* vkCmdBindVertexBuffers(2): a call whose buffers are all bound already */
    BIND_INDEX,
    BIND_DESCRIPTOR,    /* vkCmdBindDescriptorSets: same sets, layout and dynamic offsets */
    BIND_PUSH_DESCRIPTOR, /* vkCmdPushDescriptorSetKHR: the same writes */
    BIND_DYNAMIC_STATE, /* vkCmdSet*: the same value */
    BIND_KINDS,
};

/* Per-thread event counters, summed over threads when a frame closes. */
enum fscope_counter {
    FSCOPE_COUNT_SUBMITS,
    FSCOPE_COUNT_COMMAND_BUFFERS,
    FSCOPE_COUNT_DRAWS,
    FSCOPE_COUNT_DISPATCHES,
    FSCOPE_COUNT_RENDER_PASSES,
    FSCOPE_COUNT_RECORD_TICKS,
    /* Waits of every thread, whatever frame they are charged to (or none). */
    FSCOPE_COUNT_WAIT_FENCE_TICKS,
    FSCOPE_COUNT_WAIT_SEMAPHORE_TICKS,
    FSCOPE_COUNT_WAIT_IDLE_TICKS,
    /* Work that stalls a frame when done on its critical path (the hitches' evidence): time
     * in the call and how many objects it made, on every thread. */
    FSCOPE_COUNT_PIPELINE_TICKS, /* vkCreate{Graphics,Compute,RayTracing}Pipelines */
    FSCOPE_COUNT_PIPELINES,
    FSCOPE_COUNT_SHADER_TICKS,   /* vkCreateShaderModule */
    FSCOPE_COUNT_SHADERS,
    FSCOPE_COUNT_MEMORY_TICKS,   /* vkAllocateMemory, vkFreeMemory */
    FSCOPE_COUNT_MEMORY_CALLS,
    FSCOPE_COUNT_SWAPCHAIN_TICKS, /* vkCreateSwapchainKHR */
    FSCOPE_COUNT_SUBMIT_TICKS,    /* vkQueueSubmit, vkQueueSubmit2: the driver's own work */
    /* Pipeline creation feedback (graphics and compute pipelines whose driver reported it):
     * how many, how many found in the app's pipeline cache, the driver's own time (ns). */
    FSCOPE_COUNT_PIPELINES_FEEDBACK,
    FSCOPE_COUNT_PIPELINE_CACHE_HITS,
    FSCOPE_COUNT_PIPELINE_DRIVER_NS,
    /* Command recording, charged when a recording ends (layers/commands.c): recordings, the
     * time of the secondary ones (RECORD_TICKS holds all), the commands they recorded, and
     * time in vkResetCommandPool, vkResetCommandBuffer, vkFreeCommandBuffers and
     * vkTrimCommandPool. */
    FSCOPE_COUNT_RECORDINGS,
    FSCOPE_COUNT_RECORD_SECONDARY_TICKS,
    FSCOPE_COUNT_RECORD_COMMANDS,
    FSCOPE_COUNT_POOL_TICKS,
    /* Geometry, charged at submission like the draws: vertices and indices of direct draws
     * (times their instances), instances, and indirect draws (their counts live on the GPU;
     * counted apart, each also one of the draws). */
    FSCOPE_COUNT_VERTICES,
    FSCOPE_COUNT_INDICES,
    FSCOPE_COUNT_INSTANCES,
    FSCOPE_COUNT_INDIRECT_DRAWS,
    /* Binds by enum bind_kind, and those that set what was already bound; at submission. */
    FSCOPE_COUNT_BINDS,
    FSCOPE_COUNT_REDUNDANT = FSCOPE_COUNT_BINDS + BIND_KINDS,
    /* Device memory on the calling thread: allocations, their bytes, frees; descriptor sets
     * allocated. */
    FSCOPE_COUNT_MEMORY_ALLOCS = FSCOPE_COUNT_REDUNDANT + BIND_KINDS,
    FSCOPE_COUNT_MEMORY_ALLOC_BYTES,
    FSCOPE_COUNT_MEMORY_FREES,
    FSCOPE_COUNT_DESCRIPTOR_SETS,
    FSCOPE_COUNT_COUNT,
};


/* What kind of surface a frame log presents to: whether a display can pace it at all. */
enum frame_surface {
    FRAME_SURFACE_NONE = 0, /* frames marked by the app (fscope_frame_mark), no swapchain */
    FRAME_SURFACE_WAYLAND,
    FRAME_SURFACE_HEADLESS, /* VK_EXT_headless_surface: no display behind it */
    FRAME_SURFACE_OTHER,    /* display (VK_KHR_display) and others: no presentation feedback */
    FRAME_SURFACE_X11,      /* XCB or Xlib: the Present extension's completions */
};

/* What became of a frame's present, from the compositor's presentation feedback. */
enum frame_present_state {
    FRAME_PRESENT_UNTRACKED = 0, /* no feedback was asked for (not Wayland, tracker off) */
    FRAME_PRESENT_PENDING,       /* asked for, no answer (yet, or ever: torn down first) */
    FRAME_PRESENT_PRESENTED,
    FRAME_PRESENT_DISCARDED,
    FRAME_PRESENT_REQUEST_FAILED, /* the tracker could not ask */
    FRAME_PRESENT_CALL_FAILED,    /* vkQueuePresentKHR returned an error: nothing was shown */
    FRAME_PRESENT_STATE_COUNT,
};

/* Perf counters per frame (src/record/counters.c): the events FRAMESCOPE_COUNTERS names. */
#define FRAME_COUNTERS 4
#define COUNTER_NAME_SIZE 48
enum counter_kind {
    COUNTER_OTHER = 0,
    COUNTER_CYCLES,       /* for IPC */
    COUNTER_INSTRUCTIONS, /* for IPC */
};
enum rec_counter_state {
    REC_COUNTERS_UNKNOWN = 0, /* no frame closed yet */
    REC_COUNTERS_ON,          /* read at every frame close */
    REC_COUNTERS_OFF,         /* FRAMESCOPE_COUNTERS=off, or the kernel view off */
    REC_COUNTERS_UNAVAILABLE, /* why says why */
};
struct rec_counters {
    uint32_t count; /* events encoded, at most FRAME_COUNTERS */
    _Atomic uint32_t state; /* enum rec_counter_state */
    char names[FRAME_COUNTERS][COUNTER_NAME_SIZE]; /* as given (or our defaults) */
    uint8_t kinds[FRAME_COUNTERS]; /* enum counter_kind */
    char why[256]; /* what was not counted and why ("" when all was) */
};

/* Block intervals a frame keeps for the report (which part of each block the GPU was busy). */
#define FRAME_BLOCK_SPANS 8

struct fscope_frame {
    uint64_t index;
    uint64_t start_ticks;  /* the previous present call (or mark) */
    uint64_t end_ticks;    /* this present call (or mark) */
    uint64_t block_ticks[FSCOPE_BLOCK_COUNT]; /* the partition: never more than the frame */
    uint64_t counts[FSCOPE_COUNT_COUNT];
    /* Fence, semaphore and idle waits of threads other than the presenting one, ended during
     * this frame. Not in the partition: they overlap the presenting thread's time. */
    uint64_t other_wait_ticks[3];
    uint64_t block_span_start[FRAME_BLOCK_SPANS], block_span_end[FRAME_BLOCK_SPANS];
    uint8_t block_span_kind[FRAME_BLOCK_SPANS];
    uint8_t block_span_count;
    /* Left 0 by the app; analysis fills them in its copy from the device's GPU spans. */
    uint64_t gpu_busy_ticks;                      /* union of GPU spans inside the frame */
    uint64_t block_gpu_ticks[FSCOPE_BLOCK_COUNT]; /* part of each block the GPU was busy */
    uint32_t swapchain_serial;
    uint32_t device_id;
    int32_t present_mode;

    /* Presentation (Wayland surfaces with wp_presentation). */
    uint64_t present_return_ticks; /* when the present call returned */
    uint64_t presented_ticks;      /* when the compositor says it was shown */
    uint64_t present_seq;
    uint32_t refresh_ns;           /* as the compositor claims */
    uint8_t present_state;         /* enum frame_present_state */
    uint8_t present_flags;         /* FSCOPE_PRESENT_FLAG_* */
    int16_t output_index;          /* into the recording's outputs; -1 unknown */
    bool output_ambiguous;
    uint8_t cap_flags;             /* CAP_FLAG_* of the cap wait in this frame */

    /* The kernel's view of the thread that closed the frame, over the frame (its schedstat:
     * time on a CPU, time runnable but waiting for one); valid only when the same thread
     * closed the frame before (else the deltas would mix two threads). */
    uint8_t kernel_valid;
    /* Left 0 by the app (it was padding); analysis sets it when the frame lies outside every
     * run of timed submissions (GPU timing sampled): its GPU busy is unknown, not 0. */
    uint8_t gpu_unsampled;
    int32_t kernel_tid;
    uint64_t kernel_oncpu_ns, kernel_runnable_ns;
    /* The closing thread's perf counters over the frame (rec_counters names them). Bit k of
     * counters_valid: event k was counted over the whole frame (the same thread closed the
     * frame before, the kernel took the event and did not multiplex the group). */
    uint8_t counters_valid;
    uint64_t counter_values[FRAME_COUNTERS];
    /* The closing thread's rusage over the frame (getrusage(RUSAGE_THREAD)), valid with
     * kernel_valid: page faults that read from disk, block reads (file-system input), and
     * how often it left the CPU preempted (involuntary) or to wait (voluntary). */
    uint32_t kernel_major_faults, kernel_block_reads;
    uint32_t kernel_preempted, kernel_waits;
};

/* The presentation tracker's own tally for a surface, to check the frames' against. */
struct frame_log_tracker_counts {
    uint64_t requested, presented, discarded, pending, lost, failed;
    uint64_t orphaned; /* requested for presents that then failed: never counted as shown */
};

struct rec_frame_log {
    char label[64];
    _Atomic uint32_t surface; /* enum frame_surface */
    _Atomic uint32_t tracked; /* a tracker asked for feedback at least once */
    char untracked_why[192];
    /* The tracker's tally as of its last snapshot: a seqlock (odd: being stored). */
    _Atomic uint32_t counts_seq;
    _Atomic uint32_t counts_valid;
    struct frame_log_tracker_counts counts;
    struct chunked frames; /* struct fscope_frame */
};

/* GPU_SPAN_AFTER_GAP: submissions on the span's queue went untimed since the last span
 * (sampled out by FRAMESCOPE_GPU_SAMPLE, or no slot): GPU busy between them is unknown. A
 * recording with no flagged span timed every submission it could. */
#define GPU_SPAN_AFTER_GAP 1u
struct gpu_span {
    uint64_t begin, end;
    uint32_t device_id;
    uint32_t flags; /* GPU_SPAN_* */
};

struct rec_span_log {
    struct chunked spans; /* struct gpu_span */
};

/* GPU zones (layers/gpu_zones.c): the app's debug-label regions and render passes, timed by
 * timestamps the layer writes into its command buffers. A zone is named by its path of
 * labels ("frame/shadow/pass 1024x1024"); names are interned in one table per recording. */
#define GPU_ZONE_NAMES 1024
#define GPU_ZONE_NAME_SIZE 96
enum gpu_zone_untimed {
    GPU_ZONE_UNTIMED_SECONDARY,   /* in a secondary command buffer */
    GPU_ZONE_UNTIMED_FULL,        /* its command buffer's queries (or the device's) ran out */
    GPU_ZONE_UNTIMED_UNBALANCED,  /* an end with no begin in its command buffer, or the reverse */
    GPU_ZONE_UNTIMED_RESUBMITTED, /* its command buffer went down again before it was read */
    GPU_ZONE_UNTIMED_NAMES,       /* the name table was full */
    GPU_ZONE_UNTIMED_NO_RESET,    /* no query reset or copy can be recorded where it would go */
    GPU_ZONE_UNTIMED_MULTIVIEW,   /* a label inside a multiview pass (one query per view) */
    GPU_ZONE_UNTIMED_SIMULTANEOUS, /* a SIMULTANEOUS_USE run that may overlap another */
    GPU_ZONE_UNTIMED_UNSTAMPED,   /* begins at its command buffer's start, unstamped (a CPU
                                   * device), and that start is not its span's */
    GPU_ZONE_UNTIMED_COUNT,
};
/* The GPU's pipeline statistics per render pass (FRAMESCOPE_PIPELINE_STATS=on): a query around
 * each pass a zone times, in this order (the order of their VkQueryPipelineStatisticFlagBits). */
enum pipeline_stat {
    PIPELINE_STAT_IA_VERTICES,
    PIPELINE_STAT_IA_PRIMITIVES,
    PIPELINE_STAT_VS_INVOCATIONS,
    PIPELINE_STAT_CLIPPING_INVOCATIONS,
    PIPELINE_STAT_CLIPPING_PRIMITIVES,
    PIPELINE_STAT_FS_INVOCATIONS,
    PIPELINE_STAT_CS_INVOCATIONS,
    PIPELINE_STATS,
};
enum rec_pipeline_stats_state {
    REC_PIPELINE_STATS_OFF = 0,    /* not asked for */
    REC_PIPELINE_STATS_ON,         /* asked for, and a device has them */
    REC_PIPELINE_STATS_UNSUPPORTED, /* asked for; no device offers pipelineStatisticsQuery */
};
struct gpu_pass_stats {
    uint64_t end_ticks; /* the pass's end timestamp */
    uint32_t device_id;
    uint16_t name;      /* the pass's zone, in rec_gpu_zone_names */
    uint16_t reserved;
    uint64_t values[PIPELINE_STATS];
};
struct rec_gpu_zone_names {
    _Atomic uint32_t count;
    _Atomic uint32_t pipeline_stats; /* enum rec_pipeline_stats_state */
    _Atomic uint64_t untimed[GPU_ZONE_UNTIMED_COUNT];
    /* Passes whose statistics were not taken, timed or not: with secondary command buffers,
     * inside the app's own statistics query, multiview, or no query to hold them. */
    _Atomic uint64_t stats_skipped;
    char names[GPU_ZONE_NAMES][GPU_ZONE_NAME_SIZE];
};
enum gpu_zone_kind { GPU_ZONE_LABEL = 0, GPU_ZONE_PASS };
struct gpu_zone_span {
    uint64_t begin, end; /* ticks */
    uint32_t device_id;
    uint16_t name;       /* index into rec_gpu_zone_names */
    uint8_t depth;       /* 0: outermost */
    uint8_t kind;        /* enum gpu_zone_kind */
};
struct rec_gpu_zones {
    uint32_t device_id;
    uint32_t reserved;
    struct chunked spans; /* struct gpu_zone_span, in the order they were read */
    struct chunked stats; /* struct gpu_pass_stats (FRAMESCOPE_PIPELINE_STATS=on) */
};

/* Frame flags left on the calling thread by a cap wait, taken by the next frame close. */
#define CAP_FLAG_CAPPED 0x1
#define CAP_FLAG_MISSED 0x2 /* the work alone ran past the deadline */
#define CAP_FLAG_RESYNC 0x4

struct cap_event {
    uint64_t release_ticks;
    uint32_t target_ns;
    uint8_t flags;
};

struct rec_cap {
    char label[64];
    struct chunked events; /* struct cap_event */
};

/* One thread at one tick of the kernel sampler (src/record/kernel.c): its totals since it
 * started. */
struct kernel_sample {
    uint64_t ticks;
    int32_t tid;
    uint32_t flags; /* KERNEL_SAMPLE_* */
    uint64_t oncpu_ns, runnable_ns, runs; /* schedstat: on a CPU, waiting for one, timeslices */
    uint64_t context_switches, migrations, minor_faults, major_faults; /* procfs */
};
#define KERNEL_SAMPLE_FAULTS 0x1     /* minor_faults and major_faults are counted */
#define KERNEL_SAMPLE_SWITCHES 0x2   /* context_switches is counted */
#define KERNEL_SAMPLE_MIGRATIONS 0x4 /* migrations is counted */

#define REC_KERNEL_THREADS 256
struct rec_kernel_thread {
    int32_t tid;
    char name[16];
};

/* One DRM client of the app (a file descriptor of a /dev/dri node) at one tick: its usage stats
 * as the kernel's fdinfo gives them (Documentation/gpu/drm-usage-stats.rst). */
#define DRM_SAMPLE_ENGINES 8
#define DRM_SAMPLE_REGIONS 4
struct drm_sample {
    uint64_t ticks;
    uint64_t client_id;
    char driver[16];
    uint32_t engine_count, region_count;
    struct {
        char name[16];
        uint64_t busy_ns;
        uint64_t capacity;
    } engines[DRM_SAMPLE_ENGINES];
    struct {
        char name[16];
        uint64_t total_bytes, resident_bytes;
    } regions[DRM_SAMPLE_REGIONS];
};

/* The display as the kernel's KMS sees it (src/record/kms.c): each connected connector's CRTC,
 * its mode, VRR, and the CRTC's vblank counter at the sampler's first and latest tick, so
 * the real refresh can be measured against the mode's and the compositor's claim. */
#define REC_KMS_OUTPUTS 8
enum rec_kms_state {
    REC_KMS_UNKNOWN = 0,  /* not looked at (the sampler did not run) */
    REC_KMS_READ,         /* outputs[] as read */
    REC_KMS_NO_DEVICE,    /* why says what was missing */
    REC_KMS_UNAVAILABLE,  /* a device, but nothing readable: why */
};
#define KMS_UNKNOWN 2 /* vrr_capable, vrr_enabled: the driver has no such property */
struct rec_kms_output {
    char card[16];      /* "card0" */
    char connector[32]; /* "DP-1": type and number as the kernel names them */
    uint32_t crtc_id;
    int32_t width, height;
    uint32_t mode_refresh_mhz; /* from the mode's pixel clock and totals */
    uint8_t vrr_capable, vrr_enabled; /* 0, 1, or KMS_UNKNOWN */
    uint8_t vblanks;  /* the counter was read at two ticks at least */
    uint8_t reserved;
    uint64_t first_seq, last_seq; /* the CRTC's vblank counter at the first and latest tick */
    int64_t first_ns, last_ns;    /* when those vblanks happened, CLOCK_MONOTONIC */
};
struct rec_kms {
    uint32_t state; /* enum rec_kms_state */
    uint32_t count;
    char why[192];
    struct rec_kms_output outputs[REC_KMS_OUTPUTS];
};

/* Every thread of the app, sampled by one thread of ours every KERNEL_TICK_MS. */
/* Vulkan objects (src/record/objects.c): the names the app gives them (vkSetDebugUtilsObject-
 * NameEXT, vkDebugMarkerSetObjectNameEXT), latest last, and every pipeline creation with what
 * the driver said of it, so analysis can name what a frame compiled. */
#define OBJECT_NAME_SIZE 64
#define OBJECT_TYPE_PIPELINE 19 /* VK_OBJECT_TYPE_PIPELINE: analysis does not see Vulkan's headers */
struct object_name {
    uint64_t handle;
    uint32_t device_id;
    int32_t type; /* VkObjectType */
    char name[OBJECT_NAME_SIZE];
};
#define PIPELINE_CREATED_FEEDBACK 0x1  /* the driver gave creation feedback */
#define PIPELINE_CREATED_CACHE_HIT 0x2 /* it came from the app's pipeline cache */
struct pipeline_created {
    uint64_t end_ticks, duration_ticks; /* the create call's, shared by its pipelines */
    uint64_t driver_ns;                 /* the driver's own time for this pipeline */
    uint64_t handle;
    uint32_t device_id;
    uint32_t flags; /* PIPELINE_CREATED_* */
};
struct rec_objects {
    struct chunked names;     /* struct object_name */
    struct chunked pipelines; /* struct pipeline_created */
};

/* The wake-up chain of the thread that closes frames (sched_trace.c): its switches out and in
 * and its wake-ups, from the kernel's sched_switch and sched_waking tracepoints through perf,
 * where the kernel allows it (root, or CAP_PERFMON). */
/* PAUSED, RESUMED: FRAMESCOPE_WAKEUPS=auto turned the events off and on again (no other
 * fields); between them the thread's switches and wake-ups are unknown, not absent.
 * FOLLOWED, UNFOLLOWED: from this time on (until), tid's switches and wake-ups are recorded;
 * outside such a stretch they are unknown (a thread starts closing frames before the sampler's
 * next tick follows it). Recordings without FOLLOWED marks (before issue 36) followed the
 * thread of their first event from that event on. CPU_UNWATCHED, CPU_WATCHED: the CPU
 * numbered tid had no events open from this time (a CPU offline when they were opened and online since,
 * or one taken offline and back, which ends the kernel's events on it for good) until it had
 * again: every thread's switches and wake-ups are unknown meanwhile. Every kind from PAUSED
 * on is a mark, not an event of the thread. */
enum sched_event_kind {
    SCHED_EVENT_OUT = 1,
    SCHED_EVENT_IN,
    SCHED_EVENT_WOKEN,
    SCHED_EVENT_PAUSED,
    SCHED_EVENT_RESUMED,
    SCHED_EVENT_FOLLOWED,
    SCHED_EVENT_UNFOLLOWED,
    SCHED_EVENT_CPU_UNWATCHED,
    SCHED_EVENT_CPU_WATCHED,
    SCHED_EVENT_KIND_LAST = SCHED_EVENT_CPU_WATCHED,
};
enum sched_out_state { SCHED_OUT_RUNNABLE = 0, SCHED_OUT_SLEEP, SCHED_OUT_DISK, SCHED_OUT_OTHER };
/* WOKEN: the context the wake-up ran in. From an interrupt, the thread the interrupt found on
 * the CPU did not wake it: other_tid is 0 and other_comm names the interrupt. */
enum sched_wake_context { SCHED_WAKE_TASK = 0, SCHED_WAKE_HARDIRQ, SCHED_WAKE_SOFTIRQ,
                          SCHED_WAKE_NMI };
struct sched_event {
    uint64_t ticks;
    int32_t tid;       /* the thread traced */
    int32_t other_tid; /* OUT: the thread that ran next; IN: the one before; WOKEN: the waker
                        * (0: an interrupt, or the idle task) */
    uint8_t kind;      /* enum sched_event_kind */
    uint8_t state;     /* OUT: enum sched_out_state; WOKEN: enum sched_wake_context */
    uint8_t reserved[6];
    char other_comm[16]; /* OUT, IN: from the tracepoint; WOKEN: the waker's, from procfs */
};
enum rec_sched_state { REC_SCHED_UNKNOWN = 0, REC_SCHED_ON, REC_SCHED_OFF };
/* FRAMESCOPE_WAKEUPS=auto pauses the events while frames come faster than this a second. */
#define REC_SCHED_PAUSE_FPS 500

struct rec_kernel {
    uint32_t tick_ms;
    _Atomic uint32_t thread_count;
    struct rec_kernel_thread threads[REC_KERNEL_THREADS];
    char perf_why[192]; /* what of the threads' counts was not counted and why; "" when all */
    struct chunked samples; /* struct kernel_sample */
    _Atomic uint32_t drm_fds; /* DRM descriptors of the app seen so far */
    /* The most threads alive at once beyond REC_KERNEL_THREADS: never sampled, said. */
    _Atomic uint32_t unwatched_threads;
    struct chunked drm_samples; /* struct drm_sample */
    struct rec_kms kms;
    _Atomic uint32_t sched_state; /* enum rec_sched_state */
    _Atomic uint32_t sched_pauses; /* times FRAMESCOPE_WAKEUPS=auto paused it (fast frames) */
    char sched_why[224];          /* why the wake-up chain was not recorded */
    _Atomic uint64_t sched_lost;  /* events the kernel dropped (its ring was full) */
    _Atomic uint32_t sched_paused_ms; /* how long it was paused in all */
    uint32_t reserved;
    struct chunked sched_events;  /* struct sched_event */
};

/* The engine's own cost (layers/commands.c, layers/resources.c, src/record/engine.c): each
 * command buffer recording, command pool work, device memory, bind sites, descriptor pools,
 * and the gauges the kernel sampler reads with its tick. */
#define CMD_RECORDING_SECONDARY 0x1
#define CMD_RECORDING_ONE_TIME 0x2     /* ONE_TIME_SUBMIT */
#define CMD_RECORDING_SIMULTANEOUS 0x4 /* SIMULTANEOUS_USE */
#define CMD_RECORDING_FAILED 0x8       /* vkEndCommandBuffer returned an error */
struct cmd_recording {
    uint64_t begin_ticks, end_ticks; /* vkBeginCommandBuffer called, vkEndCommandBuffer returned */
    uint64_t cb, pool;
    uint32_t device_id;
    int32_t tid;
    uint32_t commands, draws; /* commands the layer saw recorded (draws among them) */
    uint32_t binds, redundant;
    uint32_t flags; /* CMD_RECORDING_* */
    uint32_t reserved;
};
enum pool_op_kind {
    POOL_OP_RESET_POOL = 1, /* vkResetCommandPool */
    POOL_OP_RESET_BUFFER,   /* vkResetCommandBuffer */
    POOL_OP_FREE,           /* vkFreeCommandBuffers */
    POOL_OP_TRIM,           /* vkTrimCommandPool */
};
struct pool_op {
    uint64_t begin_ticks, end_ticks;
    uint64_t pool;
    uint64_t cb; /* POOL_OP_RESET_BUFFER's */
    uint32_t device_id;
    int32_t tid;
    uint32_t kind;  /* enum pool_op_kind */
    uint32_t count; /* command buffers freed */
};
enum memory_event_kind { MEMORY_ALLOC = 1, MEMORY_FREE, MEMORY_ALLOC_FAILED };
struct memory_event {
    uint64_t ticks;
    uint64_t handle; /* VkDeviceMemory */
    uint64_t size;   /* MEMORY_ALLOC, MEMORY_ALLOC_FAILED: bytes asked for; FREE: 0 */
    uint32_t device_id;
    int32_t tid;
    uint8_t kind;    /* enum memory_event_kind */
    uint8_t type_index, heap_index;
    uint8_t dedicated; /* a VkMemoryDedicatedAllocateInfo named an image or buffer */
    int32_t result;    /* MEMORY_ALLOC_FAILED: the VkResult */
};
/* A device's memory heaps and types, as the driver gave them (at most 16 heaps, 32 types). */
#define MEMORY_HEAPS 16
#define MEMORY_TYPES 32
#define MEMORY_HEAP_DEVICE_LOCAL 0x1 /* VK_MEMORY_HEAP_DEVICE_LOCAL_BIT */
struct rec_memory_props {
    uint32_t device_id;
    uint32_t heap_count, type_count;
    uint32_t budget; /* VK_EXT_memory_budget is read for it */
    uint64_t heap_size[MEMORY_HEAPS];
    uint32_t heap_flags[MEMORY_HEAPS];
    uint32_t type_heap[MEMORY_TYPES];
    uint32_t type_flags[MEMORY_TYPES]; /* VkMemoryPropertyFlags */
};
/* VK_EXT_memory_budget at one sampler tick: each heap's budget and our process's usage. */
#define BUDGET_HEAPS 8
struct budget_sample {
    uint64_t ticks;
    uint32_t device_id, heap_count;
    uint64_t budget[BUDGET_HEAPS], usage[BUDGET_HEAPS];
};
/* The process at one sampler tick. */
struct gauge_sample {
    uint64_t ticks;
    uint64_t rss_bytes; /* resident set (/proc/self/statm); 0: not read */
    uint64_t descriptor_sets, descriptor_capacity; /* live sets, and maxSets, over live pools */
    uint32_t descriptor_pools;                     /* live pools */
    uint32_t reserved;
};
/* Where binds were recorded: under a debug label (the innermost) or, outside labels, under a
 * pipeline; binds and the redundant ones, summed at each submission of what recorded them. */
#define REC_BIND_SITES 512
enum bind_site_kind { BIND_SITE_LABEL = 1, BIND_SITE_PIPELINE, BIND_SITE_NONE };
struct bind_site {
    _Atomic uint64_t key; /* 0: free */
    _Atomic uint32_t ready; /* kind, handle and name are written */
    uint32_t kind;        /* enum bind_site_kind */
    uint32_t device_id;
    uint32_t reserved;
    uint64_t handle;      /* BIND_SITE_PIPELINE: the pipeline */
    char name[64];        /* BIND_SITE_LABEL: the label */
    _Atomic uint64_t binds[BIND_KINDS], redundant[BIND_KINDS];
};
/* A descriptor pool: sets allocated now against its maxSets. */
#define REC_DESCRIPTOR_POOLS 1024
struct descriptor_pool_entry {
    _Atomic uint64_t handle; /* 0: free slot; set once */
    uint32_t device_id;
    uint32_t max_sets;
    _Atomic int64_t live;    /* sets allocated and not freed (reset: 0) */
    _Atomic uint64_t peak, allocated, failures; /* failures: out of pool memory, fragmented */
    _Atomic uint32_t destroyed;
    uint32_t free_individual; /* FREE_DESCRIPTOR_SET_BIT */
};
#define REC_ENGINE_DEVICES 8
struct rec_engine {
    struct chunked recordings; /* struct cmd_recording */
    struct chunked pool_ops;   /* struct pool_op */
    struct chunked memory;     /* struct memory_event */
    struct chunked budgets;    /* struct budget_sample */
    struct chunked gauges;     /* struct gauge_sample */
    _Atomic uint32_t memory_props_count;
    _Atomic uint32_t descriptor_pool_count;
    _Atomic uint64_t sites_full;                /* binds charged to no site: the table was full */
    _Atomic uint64_t descriptor_pools_untracked; /* pools made once the table was full */
    _Atomic uint64_t untracked_recordings;      /* command buffers with no state (no memory) */
    struct rec_memory_props memory_props[REC_ENGINE_DEVICES];
    struct bind_site sites[REC_BIND_SITES];
    struct descriptor_pool_entry descriptor_pools[REC_DESCRIPTOR_POOLS];
};

#define REC_MAX_DEVICES 8 /* distinct device/driver pairs named in the summary */
#define REC_MAX_NOTES 24
#define REC_NOTE_SIZE 256
/* A note longer than a slot continues in the slots after it, each of those starting with
 * REC_NOTE_CONTINUES and holding the note's next bytes; note_count counts slots. The layout
 * is version 9's: a reader that does not join them shows the pieces as notes of their own. */
#define REC_NOTE_CONTINUES '\x01'
/* A note's bytes in all, with its NUL: our longest is about 400 (GPU timing's cost). */
#define REC_NOTE_MAX 1024
#define REC_MAX_OUTPUTS 16

/* Devices by name and driver; a program that creates one device a hundred times names it
 * once, with the count and the ids it had. */
struct rec_device {
    char name[256], driver[256];
    uint32_t first_id, last_id, count;
};

struct rec_output {
    char name[64];
    int32_t width, height;
    uint32_t refresh_mhz; /* 0: the compositor gave none */
    int32_t scale;
};

/* The machine the run was on, for the formats that name it (MangoHud's log): written once the
 * run has ended, by whoever saw it end there (the app at its exit, or framescope run), so a
 * report made elsewhere later says the same. Strings are as read, NUL-terminated. */
struct rec_system {
    char os[128];       /* PRETTY_NAME of /etc/os-release */
    char cpu[128];      /* the first "model name" of /proc/cpuinfo */
    char ram_kib[32];   /* MemTotal of /proc/meminfo */
    char kernel[128];   /* uname's release */
    char scheduler[64]; /* cpu0's cpufreq governor */
};

enum rec_kernel_state {
    REC_KERNEL_UNKNOWN = 0, /* no frame closed yet */
    REC_KERNEL_ON,          /* schedstat read at every frame close */
    REC_KERNEL_OFF,         /* FRAMESCOPE_KERNEL=off */
    REC_KERNEL_UNAVAILABLE, /* kernel_why says why */
};

struct rec_meta {
    _Atomic uint32_t enabled;    /* the Vulkan layer is in: summarise even with no frames */
    _Atomic uint32_t gpu_timing; /* GPU time was measured (FRAMESCOPE_GPU) */
    _Atomic uint32_t device_count;
    _Atomic uint32_t note_count;
    _Atomic uint32_t output_count;
    uint32_t reserved;
    struct rec_device devices[REC_MAX_DEVICES];
    char notes[REC_MAX_NOTES][REC_NOTE_SIZE]; /* slots: see REC_NOTE_CONTINUES */
    struct rec_output outputs[REC_MAX_OUTPUTS];
    _Atomic uint32_t system_known;
    _Atomic uint32_t kernel_state; /* enum rec_kernel_state */
    struct rec_system system;
    char kernel_why[192]; /* what is missing and why, when not REC_KERNEL_ON */
    struct rec_counters counters;
};

/* Lays out an empty arena of size bytes: for the app that makes its own and for an observer
 * that makes one to hand over. */
static inline void rec_header_init(struct rec_header *h, uint64_t size)
{
    for (unsigned i = 0; i < 8; i++)
        h->magic[i] = REC_MAGIC[i];
    h->version = REC_VERSION;
    h->header_size = (uint32_t)sizeof(*h);
    h->size = size;
    h->dir_capacity = REC_DIR_ENTRIES;
    h->stream_fd = -1;
    atomic_store(&h->used, (sizeof(*h) + REC_ALIGN - 1) & ~(uint64_t)(REC_ALIGN - 1));
}

#endif
