/* A recording read back (src/record/format.h): every byte checked, everything copied out, so
 * analysis never touches the arena and a malformed or hostile recording is an error message,
 * never a crash. The model is what every analysis and output function takes.
 *
 * The reader's rule beyond the format's: a writer allocates every object once, so each range
 * the reader takes from the arena (an object the directory names, a chunk table, a chunk, a
 * zone tree, a ring) must be its own, aligned as the writer aligns it. A range read twice or
 * overlapping another (a directory or chunk-table entry naming something again) makes the
 * recording malformed ("... overlaps ..."): what a read copies, and so what analysis spends
 * and writes, is bounded by the recording's size, however its entries point. */
#ifndef FSCOPE_ANALYSIS_RECORDING_H
#define FSCOPE_ANALYSIS_RECORDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "record/format.h"
#include "sorter.h"
#include "util/system.h"

struct recording_early;

/* A chunk of a surface's frames as analysis keeps it: count frames packed in bytes (frames.h),
 * in memory at packed, or (packed NULL) at offset of the log's spill file. */
struct frame_chunk {
    void *packed;
    uint64_t offset, bytes;
    uint32_t count;
};

struct recording_log {
    char label[64];
    enum frame_surface surface;
    bool tracked;
    char untracked_why[192];
    bool have_counts; /* the tracker's own tally was recorded whole */
    struct frame_log_tracker_counts counts;
    uint64_t frame_count;
    /* The frames, packed, read through a cursor (frames.h): frame i is frame
     * (i + chunk_skip) % chunk_frames of chunk (i + chunk_skip) / chunk_frames. */
    uint32_t chunk_frames;
    uint64_t chunk_skip, chunk_count, chunk_capacity;
    struct frame_chunk *chunks;
    uint64_t first_start_ticks, last_end_ticks; /* of the first frame and of the last */
    /* Chunks packed beyond FRAME_STORE_MEMORY bytes go to an unnamed file on disk. */
    uint64_t memory_bytes, spill_bytes;
    bool spill_open, spill_failed;
    int spill_fd;
};

struct recording_cap {
    char label[64];
    uint64_t event_count;
    uint32_t last_target_ns; /* the latest event's target (every one has a target) */
    struct sorter events;    /* struct cap_event, as recorded (sorter_as_pushed) */
};

struct recording_thread {
    int state; /* SLOT_LIVE, SLOT_EXITED or SLOT_EXTERNAL */
    int tid;   /* external tracks: 1000000 + slot */
    char name[32];
    uint32_t node_count;
    struct zone_node *nodes;   /* [0] is the root */
    uint64_t event_count;      /* the ring's readable window, oldest first */
    struct fscope_event *events;
};

/* Which perf counters frames carry (struct rec_counters, checked). */
struct recording_counters {
    enum rec_counter_state state;
    unsigned count;
    char names[FRAME_COUNTERS][COUNTER_NAME_SIZE];
    enum counter_kind kinds[FRAME_COUNTERS];
    char why[256];
};

/* What the kernel sampler saw (src/record/kernel.c). */
struct recording_kernel {
    bool present;
    uint32_t tick_ms;
    unsigned thread_count;
    struct rec_kernel_thread threads[REC_KERNEL_THREADS];
    char perf_why[192];
    uint32_t unwatched_threads; /* the most threads at once the sampler could not follow */
    struct rec_kms kms; /* checked: count, state and flags in range, strings terminated */
    uint64_t sample_count;
    struct sorter samples; /* struct kernel_sample, as recorded: by tick, then thread */
    uint32_t drm_fds; /* DRM descriptors the app had open at most */
    uint64_t drm_sample_count;
    struct sorter drm_samples; /* struct drm_sample, as recorded: by tick, then client */
    enum rec_sched_state sched_state; /* the wake-up chain */
    char sched_why[224];
    uint64_t sched_lost;
    uint32_t sched_pauses, sched_paused_ms; /* FRAMESCOPE_WAKEUPS=auto paused it (fast frames) */
    uint64_t sched_marks; /* of sched_count: marks (PAUSED and later kinds), not threads' events */
    uint64_t sched_count;
    /* The threads' events (kinds before PAUSED), by time, ties in the order recorded (per CPU
     * ring, drained in turn): that order is kept in each copy's reserved bytes (sched_seq). */
    struct sorter sched_events;
    struct sched_event *sched_mark_list; /* the marks (sched_marks of them), as recorded */
    uint64_t sched_mark_room;
};
/* k's sorters made ready (the reader's, and a synthetic recording's): the samples kept as
 * recorded (sorter_as_pushed), the threads' sched events by time. */
void recording_kernel_init(struct recording_kernel *k);
/* One more event of k's, as recorded (a mark or a thread's); false when memory ran out. */
bool recording_sched_add(struct recording_kernel *k, const struct sched_event *e);
/* The place an event took among those recorded, kept by recording_sched_add. */
uint64_t sched_seq(const struct sched_event *e);

/* A memory event with its place among those recorded: ties in time keep that order. */
struct memory_item {
    struct memory_event event;
    uint64_t seq;
};

/* The engine's own cost (format.h, struct rec_engine): every array checked, strings
 * terminated; sites and descriptor pools only those published. */
struct recording_engine {
    bool present;
    uint64_t recording_count, pool_op_count, memory_count, budget_count, gauge_count;
    struct sorter recordings; /* struct cmd_recording, in the order they ended (sorter.h) */
    struct sorter pool_ops;   /* struct pool_op, the same */
    struct sorter memory; /* struct memory_item, by time (recording_engine_init) */
    struct sorter budgets; /* struct budget_sample, as recorded (sorter_as_pushed) */
    struct sorter gauges;  /* struct gauge_sample, the same */
    unsigned memory_props_count;
    struct rec_memory_props memory_props[REC_ENGINE_DEVICES];
    unsigned site_count;
    struct bind_site *sites;
    unsigned descriptor_pool_count;
    struct descriptor_pool_entry *descriptor_pools;
    uint64_t sites_full, descriptor_pools_untracked;
};
/* g's sorters made ready for their items (the reader's, and a synthetic recording's). */
void recording_engine_init(struct recording_engine *g);
struct recording;
/* rec->spans, rec->gpu_zones and rec->pipelines made ready for theirs, the same. */
void recording_spans_init(struct recording *rec);
/* rec->spans's sorter as recording_spans_init makes it ready. */
void recording_span_sorter_init(struct sorter *spans);

/* A pipeline creation with its place among those recorded: ties in time keep that order. */
struct pipeline_item {
    struct pipeline_created pipeline;
    uint64_t seq;
};

struct recording {
    char app[64];
    int pid;
    enum rec_state state;
    int end_status; /* exit status + 1; 0 unknown */
    int end_signal;
    bool clock_tsc;
    uint64_t clock_base_ticks;
    int64_t clock_base_ns;
    double ns_per_tick;
    bool enabled, gpu_timing;
    unsigned device_count, note_count, output_count;
    struct rec_device devices[REC_MAX_DEVICES];
    char notes[REC_MAX_NOTES][REC_NOTE_MAX]; /* each whole, its slots joined */
    struct rec_output outputs[REC_MAX_OUTPUTS];
    struct rec_system system; /* all "" when not recorded */
    enum rec_kernel_state kernel_state;
    struct recording_kernel kernel;
    char kernel_why[192];
    struct recording_counters counters;
    unsigned log_count, cap_count, thread_count, loc_count;
    struct recording_log *logs;
    struct recording_cap *caps;
    struct recording_thread *threads;
    struct rec_loc *locs; /* sorted by address */
    uint64_t span_count;
    struct sorter spans; /* struct gpu_span, every span log's, by begin (recording_spans_init) */
    /* GPU zones: every device's, names checked against the table when used. */
    uint64_t gpu_zone_count;
    struct sorter gpu_zones; /* struct gpu_zone_span, by end (recording_spans_init) */
    unsigned gpu_zone_name_count;
    char (*gpu_zone_names)[GPU_ZONE_NAME_SIZE];
    uint64_t gpu_zones_untimed[GPU_ZONE_UNTIMED_COUNT];
    /* Pipeline statistics per pass (FRAMESCOPE_PIPELINE_STATS), every device's. */
    enum rec_pipeline_stats_state pipeline_stats;
    uint64_t pass_stats_skipped;
    uint64_t pass_stats_count;
    struct gpu_pass_stats *pass_stats;
    /* Vulkan objects: names as the app gave them (latest last), pipeline creations. */
    uint64_t object_name_count, pipeline_count;
    struct object_name *object_names;
    /* The names sorted by device, type and handle, then as recorded, for
     * recording_object_name (NULL: none, or no memory for it, and lookups walk the names). */
    const struct object_name **object_name_index;
    struct sorter pipelines; /* struct pipeline_item, by the end of their create call */
    struct recording_engine engine;
    /* Every device's GPU busy time and spans (recording_compute_gpu_busy, gpu_busy.h). */
    unsigned gpu_total_count;
    struct device_gpu_total *gpu_totals;
    /* Where the streamed chunks it holds were read from (recording_read_ended), for the
     * capture's packed recording; NULL when none were. */
    struct stream_source *stream;
    uint64_t items_dropped;  /* frames, spans and cap events the full arena refused */
    uint64_t alloc_failures; /* the arena refused an allocation */
    uint64_t locs_dropped;
};

/* Reads a recording from len bytes (aligned to 8 at least, as a mapping is; another process
 * may be writing them: each object is copied once, then checked). Returns 0 and *ret (free
 * with recording_free), or -EINVAL (malformed: why says what, in a sentence) or -ENOMEM. */
int recording_read(const void *bytes, size_t len, struct recording **ret, char *why,
                   size_t why_len);
/* Reads the recording in fd from offset 0: a memfd or an arena's image (a version 9
 * capture), or a packed recording (a capture's since version 10), unpacked first. */
int recording_read_fd(int fd, struct recording **ret, char *why, size_t why_len);

/* Writes the arena in bytes (len of them; a live one is read once, range by range) to f
 * packed (format.h, REC_LAYOUT_PACKED): its header, then each range that is not all zeros,
 * compact (util/compact.h), the chunks of its arrays and the threads' rings as items; the
 * chunks rec read from the stream file (rec NULL: none) copied from there as they are.
 * Returns 0, -EINVAL when bytes hold no recording, or -errno. */
int recording_pack_write(FILE *f, const void *bytes, size_t len, const struct recording *rec);
/* Unpacks a packed recording of file_len bytes into a private anonymous mapping:
 * *ret_bytes, *ret_len (munmap them), the arena recording_read reads. Checks every range:
 * inside the arena, after the one before, decoding to its size; and the arena no longer than
 * a bounded multiple of the file. With defer_arrays, the arrays' chunks stay in the file (as
 * items; threads' rings are unpacked): the image's arrays say every chunk is streamed, for a
 * reader given the file as their stream file (recording_read_fd), which copies each out once.
 * Returns 0, -EINVAL (why says what) or -ENOMEM. */
int recording_unpack(const void *file, size_t file_len, bool defer_arrays, void **ret_bytes,
                     size_t *ret_len, char *why, size_t why_len);
void recording_free(struct recording *rec);

/* recording_read of an app's recording whose sealed chunks went to the stream file stream_fd
 * (src/record/stream.c; -1: none): each streamed chunk is decoded from there into the items
 * as the reader copies them out (never back into bytes), checked as the arena's are: claimed
 * once, its range in the file naming it and decoding to its size, each range read once. */
int recording_read_streamed(const void *bytes, size_t len, int stream_fd,
                            struct recording_early *early, struct recording **ret, char *why,
                            size_t why_len);
/* An ended run's recording read, as an observer (framescope run, framescoped) or the app at
 * its exit reads it: machine (the one the run ended on, as the caller described it: analysis
 * reads no machine; NULL: none) recorded, then recording_read_streamed. bytes is writable;
 * nothing else of it changes, so another reader (framescoped after the app's own exit) reads
 * the same recording. */
int recording_read_ended(void *bytes, size_t len, int stream_fd,
                         const struct system_description *machine,
                         struct recording_early *early, struct recording **ret, char *why,
                         size_t why_len);

/* The app's exit reads its own recording ahead (recording_early.c): each frame log's chunks,
 * the engine's arrays kept in sorters of their own, and the GPU spans, checked and taken as the stream
 * thread moves them to disk, so that at exit only the last few are. Whatever goes wrong ahead
 * (a chunk out of order, a malformed item, memory, the app closing a spill file) drops that
 * array's early items, and the exit reads them all from the stream file, as without it. */
/* NULL without memory. */
struct recording_early *recording_early_create(void);
/* Whether the array at field (its offset in an object of type type) is read ahead. */
bool recording_early_wants(uint32_t type, size_t field);
/* Chunk number chunk of the array at field of the object at directory entry entry (of type
 * type), its items (the bytes the stream file got for it: shape's chunk_items of its
 * item_size, a copy another process cannot change). live is the array itself, read again at
 * the exit for what was streamed. One thread at a time, each array's chunks in order. */
void recording_early_take(struct recording_early *early, uint32_t entry, uint32_t type,
                          size_t field, const struct chunked *shape,
                          const struct chunked *live, uint64_t chunk, const void *items);
/* framescope run's read-ahead (recording_follow.c): a thread of the observer's that follows
 * the stream file stream_fd as the command's stream thread writes it, finds each chunk's array
 * through the arena arena_fd (both the observer's own descriptors, kept open until
 * recording_follow_free) and hands it to recording_early_take. NULL where it cannot start (no
 * memory, no thread): the exit reads everything, as without it. recording_follow_finish,
 * once the command has ended, stops the thread and takes what was streamed since its last
 * pass, on the caller's thread, so that every chunk in the file is read ahead;
 * recording_follow_free, after early's exit read, unmaps the arena that early's arrays were
 * read in. */
struct recording_follow;
struct recording_follow *recording_follow_start(int arena_fd, int stream_fd,
                                                struct recording_early *early);
void recording_follow_finish(struct recording_follow *f);
void recording_follow_free(struct recording_follow *f);
/* For the reader: gives what was read ahead of the frame log at directory entry entry to log
 * (or of the array at field to sorter, made ready and still empty) when it is its first
 * chunks (at most usable of them, those its stream file holds), and returns how many chunks;
 * else drops it and returns 0. early may be NULL. */
uint64_t recording_early_adopt_frames(struct recording_early *early, uint32_t entry,
                                      const struct chunked *frames, uint64_t usable,
                                      struct recording_log *log);
uint64_t recording_early_adopt_sorted(struct recording_early *early, uint32_t entry,
                                      size_t field, const struct chunked *array,
                                      uint64_t usable, struct sorter *sorter);
/* For the reader, before it reads any span log: every span log's spans read ahead, given to
 * sorter (made ready, empty) when each log holds only chunks its stream file holds, then
 * adopted log by log through recording_early_adopt_sorted; else none. Whether it gave them. */
bool recording_early_adopt_shared(struct recording_early *early, struct sorter *sorter);
struct recording_early_counts {
    uint64_t frames_taken, frames_adopted; /* frames */
    uint64_t items_taken, items_adopted;   /* the sorters' items, spans among them */
    uint64_t spans_taken, spans_adopted;   /* GPU spans */
};
void recording_early_counts(const struct recording_early *early,
                            struct recording_early_counts *ret);
/* Accepts NULL. */
void recording_early_destroy(struct recording_early *early);
/* A machine's description as the recording keeps it. */
void recording_system_from(struct rec_system *ret, const struct system_description *machine);
/* Records the machine the run ended on into bytes (a recording, writable) unless it holds it
 * already. Returns 0 or -EINVAL (why says what). */
int recording_set_system(void *bytes, size_t len, const struct rec_system *sys, char *why,
                         size_t why_len);

/* The recording's clock: a duration in ticks as nanoseconds, and a time as CLOCK_MONOTONIC
 * nanoseconds. */
double recording_ns(const struct recording *rec, uint64_t ticks);
int64_t recording_mono_ns(const struct recording *rec, uint64_t ticks);
/* "tsc (invariant, 2.1000 GHz calibrated against CLOCK_MONOTONIC)" or the fallback's. */
const char *recording_clock_describe(const struct recording *rec, char *buf, size_t len);
/* The location recorded for an address the app used, or NULL when the table lacked it. */
const struct rec_loc *recording_loc_find(const struct recording *rec, const void *address);

/* Durations as nanoseconds, at most REPORT_NS_MAX: 2^53 ns (104 days) is as far as a double
 * holds every nanosecond, and no frame, wait or run is longer. A recording that claims more is
 * clamped there, so that arithmetic on a few of them cannot overflow; sums of many saturate
 * (ns_sum). */
#define REPORT_NS_MAX (INT64_C(1) << 53)
/* Rounded half away from zero, as llround (ns_per_tick is finite and positive: read so),
 * without its call: a frame's budget takes some twenty. */
static inline int64_t ticks_ns(const struct recording *rec, uint64_t ticks)
{
    if (!ticks)
        return 0;
    double ns = (double)ticks * rec->ns_per_tick;
    if (!(ns < (double)REPORT_NS_MAX))
        return REPORT_NS_MAX;
    int64_t whole = (int64_t)ns; /* exact below 2^53, as is what is left of ns */
    return whole + (ns - (double)whole >= 0.5);
}
int64_t ns_sum(int64_t a, int64_t b);
/* "name (tid N)" of a thread the recording knows, else "tid N". Returns buf. */
const char *recording_thread_label(const struct recording *rec, int tid, char *buf, size_t len);
/* The name the app last gave object handle of VkObjectType type on device device_id; NULL
 * when it gave none or cleared it (""). The one lookup of every output. */
const char *recording_object_name(const struct recording *rec, uint32_t device_id, int32_t type,
                                  uint64_t handle);
/* Where frames.csv's start_ms counts from: the first frame of any surface (0 with none). */
uint64_t frames_origin_ticks(const struct recording *rec);

#endif
