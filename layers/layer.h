/* VK_LAYER_FRAMESCOPE: state shared by the loader plumbing (layer.c), GPU timing (gpu_*.c)
 * and the frame hooks (hooks.c). */
#ifndef FSCOPE_LAYER_H
#define FSCOPE_LAYER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VK_USE_PLATFORM_WAYLAND_KHR
#define VK_USE_PLATFORM_XCB_KHR
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "hook_list.h"
#include "record/cap.h"
#include "record/frame.h"
#include "record/registry.h"

#define LAYER_NAME "VK_LAYER_FRAMESCOPE"
#define LAYER_EXPORT __attribute__((visibility("default")))

#define MAX_INSTANCES 16
#define MAX_DEVICES 32
#define MAX_QUEUES 64
#define MAX_SURFACES 64
#define MAX_SWAPCHAINS 64
#define MAX_RENDER_PASSES 4096 /* render pass objects known per device (engines cache them) */
/* Submissions in flight per queue that carry timestamps: a queue starts with GPU_SLOTS_FIRST
 * and the reader thread adds as many again whenever half are in flight, up to GPU_SLOTS_MAX
 * (zink without kopper keeps hundreds in flight; a test storm keeps thousands). */
#define GPU_SLOTS_FIRST 64
#define GPU_SLOTS_MAX 8192 /* power of two: the size of a queue's two slot rings */
#define GPU_CHUNKS_MAX 16  /* 64, 64, 128, ... 4096 (8) doubling, with room for failed tries */

/* The loader's dispatch pointer: a dispatchable handle's first word. Instances share it
 * with their physical devices; devices with their queues and command buffers. */
static inline void *dispatch_key(const void *handle)
{
    return *(void *const *)handle;
}

/* A slot of a lock-free table (objects.c): the key (a handle) is stored beside the item so a lookup never
 * reads an item another thread may be freeing. 0 is no key. */
struct table_entry {
    _Atomic uint64_t key;
    void *_Atomic item;
};
void *table_find(struct table_entry *table, unsigned size, uint64_t key);
bool table_insert(struct table_entry *table, unsigned size, pthread_mutex_t *lock,
                  uint64_t key, void *item);
void table_remove(struct table_entry *table, unsigned size, pthread_mutex_t *lock, void *item);

#define INSTANCE_FUNCTIONS(X)                                                                  \
    X(GetInstanceProcAddr)                                                                     \
    X(DestroyInstance)                                                                         \
    X(EnumerateDeviceExtensionProperties)                                                      \
    X(GetPhysicalDeviceProperties)                                                             \
    X(GetPhysicalDeviceFeatures)                                                               \
    X(GetPhysicalDeviceMemoryProperties)                                                       \
    X(GetPhysicalDeviceMemoryProperties2)                                                      \
    X(GetPhysicalDeviceMemoryProperties2KHR)                                                   \
    X(GetPhysicalDeviceProperties2)                                                            \
    X(GetPhysicalDeviceFeatures2)                                                              \
    X(GetPhysicalDeviceFeatures2KHR)                                                           \
    X(GetPhysicalDeviceQueueFamilyProperties)                                                  \
    X(GetPhysicalDeviceCalibrateableTimeDomainsEXT)                                            \
    X(CreateWaylandSurfaceKHR)                                                                 \
    X(CreateHeadlessSurfaceEXT)                                                                \
    X(CreateXcbSurfaceKHR)                                                                     \
    X(CreateXlibSurfaceKHR)                                                                    \
    X(DestroySurfaceKHR)

/* VkXlibSurfaceCreateInfoKHR without Xlib's headers: Display * and an XID Window. */
typedef struct {
    VkStructureType sType;
    const void *pNext;
    VkFlags flags;
    void *dpy;
    unsigned long window;
} layer_xlib_surface_info;
typedef VkResult(VKAPI_PTR *PFN_vkCreateXlibSurfaceKHR)(VkInstance, const layer_xlib_surface_info *,
                                                        const VkAllocationCallbacks *,
                                                        VkSurfaceKHR *);

struct instance_dispatch {
#define X(name) PFN_vk##name name;
    INSTANCE_FUNCTIONS(X)
#undef X
};

struct instance_data {
    void *key;
    VkInstance instance;
    uint32_t api_version;
    /* VK_KHR_get_physical_device_properties2 enabled (by the app, or by us on a Vulkan 1.0
     * instance, hidden from it): what the device extensions GPU timing adds depend on. */
    bool properties2;
    bool properties2_ours;
    struct instance_dispatch vk;
};

/* Functions the layer calls down to but does not hook (GPU timing's own commands). */
#define DEVICE_CALLS(X)                                                                        \
    X(GetQueryPoolResults)                                                                     \
    X(CmdResetQueryPool)                                                                       \
    X(CmdCopyQueryPoolResults)                                                                 \
    X(CreateBuffer)                                                                            \
    X(DestroyBuffer)                                                                           \
    X(GetBufferMemoryRequirements)                                                             \
    X(BindBufferMemory)                                                                        \
    X(MapMemory)                                                                               \
    X(InvalidateMappedMemoryRanges)                                                            \
    X(CmdWriteTimestamp)                                                                       \
    X(GetCalibratedTimestampsEXT)                                                              \
    X(ResetQueryPool)                                                                          \
    X(ResetQueryPoolEXT)                                                                       \
    X(CreateSemaphore)                                                                         \
    X(DestroySemaphore)                                                                        \
    X(GetSemaphoreCounterValue)                                                                \
    X(GetSemaphoreCounterValueKHR)                                                             \
    X(CreateEvent)                                                                             \
    X(DestroyEvent)                                                                            \
    X(GetEventStatus)                                                                          \
    X(ResetEvent)                                                                              \
    X(CmdSetEvent)

/* The device dispatch table: every hook's call-down (hook_list.h) and every call of ours. */
#define DEVICE_FUNCTIONS(X)                                                                    \
    DEVICE_HOOKS(X)                                                                            \
    DEVICE_CALLS(X)

struct device_dispatch {
#define X(name) PFN_vk##name name;
    DEVICE_FUNCTIONS(X)
#undef X
};

#define GPU_SLOT_ZONE_BLOCKS 16 /* command buffers with GPU zones per timed submission */
struct zone_block;
struct zone_pool;

/* One timed submission's pair of queries and the two command buffers that write them, recorded
 * once: begin_cb goes in front of the app's first batch, end_cb behind its last. */
struct gpu_slot {
    VkCommandBuffer begin_cb, end_cb;
    VkQueryPool query_pool;
    uint32_t query; /* the begin timestamp's; the end's is the next */
    /* Without timeline semaphores: set by end_cb after its timestamp, polled by the reader. */
    VkEvent event;
    uint64_t value; /* the timeline value its submission signals (its sequence number + 1) */
    /* The GPU zones the submission carries (gpu_zones.c), read with it. */
    struct zone_block *zones[GPU_SLOT_ZONE_BLOCKS];
    uint32_t zone_gens[GPU_SLOT_ZONE_BLOCKS]; /* each block's generation when attached */
    bool zone_overlaps[GPU_SLOT_ZONE_BLOCKS]; /* a simultaneous-use run that may overlap */
    uint32_t zone_count;
    uint32_t laps;             /* FRAMESCOPE_TEST_FAULT=stale-read only */
    uint64_t fault_last[2];    /* FRAMESCOPE_TEST_FAULT=stale-read only */
    bool after_gap; /* the queue's submissions before it went untimed (gpu_submit.c, sampling) */
};

/* Slots made at once, with their command pool and query pool. */
struct gpu_chunk {
    VkCommandPool pool;
    VkQueryPool query_pool;
    uint32_t count;
    uint32_t taken; /* slots handed out for the first time (submitting thread only) */
    struct gpu_slot slots[];
};

/* Maps one queue family's timestamps onto CLOCK_MONOTONIC. */
struct gpu_calibration {
    bool calibrated;          /* from VK_EXT_calibrated_timestamps */
    bool anchored;            /* a mapping exists (calibrated or estimated) */
    uint64_t gpu_ticks;
    int64_t mono_ns;
    int64_t taken_mono_ns;
    uint64_t recalibrations;
};

struct gpu_track;

struct queue_data {
    VkQueue queue;
    struct device_data *device;
    uint32_t family;
    bool timing; /* timestamps can be injected on this queue */
    /* Chunks of slots, added by the reader or by a submitting thread that found none free,
     * without a lock: each reserves its slots (slot_count) and an index (chunks_reserved),
     * makes the chunk and publishes it there; an index whose chunk failed stays NULL. */
    struct gpu_chunk *_Atomic chunks[GPU_CHUNKS_MAX];
    _Atomic uint32_t chunks_reserved;
    _Atomic uint32_t slot_count;
    uint32_t fresh_chunk; /* submitting thread: the chunk it takes never-used slots from */
    /* Slots read back and free again: pushed by the reader, popped by the submitting thread. */
    struct gpu_slot *free_ring[GPU_SLOTS_MAX];
    _Atomic uint64_t free_in, free_out;
    /* Slots in flight, in submission order: pushed by the submitting thread (slot_head) and
     * popped by the reader (slot_tail). The k-th submission signals value k + 1. */
    struct gpu_slot *flight[GPU_SLOTS_MAX];
    _Atomic uint64_t slot_head, slot_tail;
    VkSemaphore timeline; /* VK_NULL_HANDLE: each slot's event is the completion signal */
    /* Event path: vkResetEvent wants the event to itself, and a submitting thread may ask a
     * slot's event for its status (gpu_slot_complete). The reader waits for this flag; a
     * submitting thread only tries it and takes a busy flag as "not complete". */
    atomic_flag event_busy;
    /* Submitting thread: a timeline signal proves every earlier submission on the queue
     * finished too, so not every submission carries one (gpu_submit.c, signal_due). */
    uint64_t last_signal_ticks;
    uint64_t signal_gap_ticks; /* SIGNAL_GAP_NS in our ticks */
    uint32_t unsignalled;
    /* Submitting thread: a submission went untimed since the last timed one, so the next
     * span is flagged GPU_SPAN_AFTER_GAP (the analysis must not read the gap as idle). */
    bool sample_gap;
    /* Reader thread: a flagged slot could not be read, so the flag passes to the next span. */
    bool span_gap_carry;
    uint64_t valid_mask;
    struct gpu_calibration calibration; /* reader thread only */
    int64_t anchor_best_gap_ns;         /* uncalibrated re-anchoring, reader thread only */
    uint64_t anchor_best_ticks;
    int64_t anchor_best_mono_ns;
    uint64_t last_begin_ticks; /* reader thread: catches a stale read */
    bool have_last_begin;
    struct gpu_track *track; /* its row in the zone tree, its trace track and its span log */
    /* Scratch for rewritten submissions; grows, never shrinks. */
    void *scratch;
    size_t scratch_size;
};

struct device_data {
    void *key;
    VkDevice device;
    VkPhysicalDevice physical;
    struct instance_data *instance;
    struct device_dispatch vk;
    PFN_vkSetDeviceLoaderData set_loader_data;
    double timestamp_period;
    uint32_t family_count;
    VkQueueFamilyProperties families[16];
    bool calibrated_timestamps; /* we can read DEVICE and CLOCK_MONOTONIC together */
    bool creation_feedback;     /* pipeline creation feedback may be chained (hooks.c) */
    bool cpu_device;            /* VK_PHYSICAL_DEVICE_TYPE_CPU (lavapipe): see gpu_zones.c */
    bool pipeline_stats;        /* FRAMESCOPE_PIPELINE_STATS: passes get statistics queries */
    /* Memory types' heaps (resources.c), and the query that reads the budget (NULL: none). */
    uint32_t memory_type_heap[32];
    uint32_t memory_type_count;
    PFN_vkGetPhysicalDeviceMemoryProperties2 memory_properties2;
    /* Queries are reset from the host when read back, not by a command in the submission
     * (vkCmdResetQueryPool in every submission cost most of the layer's GPU-timing overhead
     * on the H200). NULL: reset in the command buffer instead. */
    PFN_vkResetQueryPool reset_query_pool;
    /* Timeline semaphores enabled (by the app or by us): each queue's completion signal. */
    bool timeline_semaphores;
    PFN_vkGetSemaphoreCounterValue get_counter;
    PFN_vkWaitSemaphores wait_semaphores;
    /* Device extensions the app itself enabled, among those we may add: functions of the
     * others stay hidden from it. */
    bool app_calibrated_timestamps, app_host_query_reset, app_timeline_semaphore;
    uint32_t id; /* 1, 2, ...: names the device in reports and tags its GPU spans */
    struct zone_pool *_Atomic zones; /* GPU zones' queries, made at the first zone */
    /* Runs of command buffers that copy their zones out, in flight: the next run overwrites
     * the copy, so the reader looks every millisecond while there are any (gpu_reader.c). */
    _Atomic uint32_t zone_copies_in_flight;
    _Atomic bool zone_host_runs; /* a block read from the host was made: every submission looks */
    bool zones_failed;
    _Atomic bool lost;
    bool idle; /* idled at teardown: every slot complete (read after the reader stopped) */

    /* The reader thread: waits on our completion signals and reads timestamps back, so no app
     * call ever waits for the GPU on our behalf (lavapipe's vkGetQueryPoolResults idles the
     * whole device). It sleeps on reader_idle (a futex word, 1 while it sleeps there) when
     * nothing is in flight; a submit wakes it with one atomic exchange and, only then, one
     * futex wake: no lock is shared with the app's threads. */
    pthread_t reader;
    bool reader_started;
    _Atomic bool reader_stop;
    _Atomic int reader_idle;

    /* GPU timing is sampled by whole frames (gpu_sample.c, FRAMESCOPE_GPU_SAMPLE): a window of frames
     * is timed when the budget of timed submissions a second allows. Submitting threads read
     * sample_open and count sample_submits; the rest is decided at presents, or at
     * submissions while no present comes, under sample_lock taken only with trylock (a thread
     * that finds it taken leaves the decision to the holder and never waits). */
    _Atomic bool sample_open;
    _Atomic uint64_t sample_submits; /* since the last present */
    _Atomic uint64_t last_present_ticks;
    /* An app that presents nothing but marks its frames (fscope_frame_mark): each mark is a
     * frame's end for sampling, taken by the first submission after it. */
    _Atomic bool presents_seen;
    _Atomic uint64_t marks_seen;
    pthread_mutex_t sample_lock;
    double sample_tokens;        /* submissions the budget allows now */
    double sample_per_frame;     /* submissions a frame, smoothed */
    uint64_t sample_refill_ticks;
    uint64_t sample_until_ticks; /* presentless windows: timed until then */
    uint32_t sample_frames_left;
    /* What a timed frame costs here (FRAMESCOPE_GPU_SAMPLE=auto): the smoothed time between
     * presents for frames in a window and for frames outside one. */
    uint64_t sample_last_present;
    double sample_in_ns, sample_out_ns;
    uint32_t sample_since_window; /* frames presented since the last timed one */
    uint32_t sample_run_windows;  /* windows in a row with no frame between them */
    uint32_t sample_probe_left;   /* frames still kept untimed to measure the others */
    bool sample_started;          /* a presentless window was opened once */
    double sample_rate;          /* timed submissions a second allowed now */

    pthread_mutex_t lock; /* guards queues[] and swapchains[] membership, never held down-chain */
    struct table_entry queues[MAX_QUEUES];
    struct table_entry swapchains[MAX_SWAPCHAINS];
    /* What a classic render pass is, for its zone's name and to know whether labels inside
     * it may be timed (struct render_pass_info; guarded by lock like the tables above). A
     * pass the table had no room for sets render_passes_full: labels inside a pass not
     * found are then not timed, as it may be multiview. */
    struct table_entry render_passes[MAX_RENDER_PASSES];
    _Atomic bool render_passes_full;
};

struct render_pass_info {
    uint32_t colors; /* color attachments of the first subpass */
    bool depth;      /* the first subpass has a depth/stencil attachment */
    bool multiview;  /* some subpass has a view mask: a timestamp inside takes one query a view */
    char name[48];   /* the app's name for it ("" none): its zone's name */
    uint32_t subpasses; /* a later subpass may execute secondaries: no statistics query */
};

enum surface_kind { SURFACE_WAYLAND, SURFACE_HEADLESS, SURFACE_OTHER, SURFACE_X11 };

struct surface_data {
    VkSurfaceKHR surface;
    struct instance_data *instance;
    enum surface_kind kind;
    char label[64];
    void *wl_display;
    void *wl_surface;
    uint32_t x11_window; /* SURFACE_X11: the app's window (XIDs are global on the server) */
    struct fscope_frame_log *frames;
    struct fscope_cap *cap; /* FRAMESCOPE_CAP; NULL when off */
    uint32_t swapchains_created;
};

struct swapchain_data {
    VkSwapchainKHR swapchain;
    struct surface_data *surface;
    uint32_t serial;
    uint32_t device_id;
    int32_t present_mode;
    uint64_t presents;
    /* Blocks charged to this swapchain's next frame from any thread (acquire, present wait).
     * The app externally synchronises a swapchain's acquire, present and present wait, so
     * these need no lock. */
    struct fscope_block_span pending[FRAME_ORIGIN_SPANS];
    uint32_t pending_count;
};

/* Global statistics for the summary's GPU caveats. */
struct gpu_stats {
    _Atomic uint64_t measured;
    _Atomic uint64_t unmeasured_no_slot;
    _Atomic uint64_t unmeasured_unreadable;
    _Atomic uint64_t unmeasured_unsupported;
    _Atomic uint64_t unsampled;           /* left untimed by FRAMESCOPE_GPU_SAMPLE's budget */
    _Atomic uint64_t sample_windows;      /* windows of timed frames opened */
    _Atomic uint64_t sample_probes;       /* auto: untimed probes between windows in a row */
    _Atomic uint64_t sample_in_ns, sample_out_ns; /* auto: the last smoothed frame times */
    _Atomic uint64_t sample_rate;         /* auto: the last rate set */
    _Atomic uint64_t zones_sampled_out;   /* recordings whose zones were left out (sampling) */
    _Atomic uint64_t zones_dark_timed;    /* timed submissions that carried such a recording */
    _Atomic uint64_t slots_grown;         /* chunks added while the app ran */
    _Atomic uint64_t slots_grown_on_app;  /* of which by a submitting thread that found none */
    _Atomic uint64_t reader_wakes;        /* read passes of the reader threads */
    _Atomic uint64_t reader_woken;        /* of its sleeps, ended by a submit */
    _Atomic uint64_t in_flight_at_teardown;
    _Atomic uint64_t clamped;
    _Atomic uint64_t backwards; /* a span began before the previous one on its queue */
    _Atomic uint64_t device_lost;
    _Atomic uint64_t estimated_queues;
    _Atomic uint64_t calibrated_queues;
};
extern struct gpu_stats gpu_stats;

/* FRAMESCOPE_GPU_SAMPLE: timed submissions a second when not all. 240 times every frame of a
 * 120 fps game submitting twice a frame. auto starts there, and goes past it only once the
 * cost is measured (GPU_SAMPLE_COST_SHARE). */
#define GPU_SAMPLE_DEFAULT 240
/* auto: timed frames may cost at most this share of the app's time (a timed frame's extra
 * time against an untimed one's, measured as it runs), with one window a second at least and
 * no other ceiling: where timing costs less, every frame is timed but the probes
 * (gpu_sample.c). Under the 0.5% that the H200 at 1080p and ~5,000 fps allows
 * (tests/bench/README.md). */
#define GPU_SAMPLE_COST_SHARE 0.004
#define GPU_SAMPLE_MAX 1000000

struct layer_config {
    bool gpu_timing;
    bool gpu_zones;    /* label regions and render passes timed (gpu_zones.c) */
    bool gpu_zones_host; /* FRAMESCOPE_GPU_ZONES=host: read from the host on CPU devices too */
    bool pipeline_stats; /* FRAMESCOPE_PIPELINE_STATS: and their pipeline statistics */
    uint32_t gpu_sample_rate; /* timed submissions a second (FRAMESCOPE_GPU_SAMPLE); 0: all */
    bool gpu_sample_auto;     /* the rate is a ceiling, lowered to what the device affords */
    bool presentation; /* Wayland presentation feedback */
    enum { CAP_OFF, CAP_FIXED, CAP_AUTO } cap_mode;
    double cap_hz;
    bool fault_skip_query_reset; /* test only: makes our injected commands invalid */
    bool fault_no_calibration;   /* test only: map GPU time without calibrated timestamps */
    bool fault_no_timeline;      /* test only: use the event completion signal */
    bool fault_stale_read;       /* test only: hand back a slot's previous lap every other lap,
                                  * with resets in the command buffer: the stale check must fire */
};
/* config.c: the configuration, read once at the first instance (layer_config_read). */
extern struct layer_config layer_config;
void layer_config_read(void);

/* objects.c: the per-object tables, and their lookups (lock-free, any thread). */
struct instance_data *instance_lookup(const void *dispatchable);
struct device_data *device_lookup(const void *dispatchable);
struct queue_data *queue_lookup(struct device_data *dev, VkQueue queue);
struct surface_data *surface_lookup(VkSurfaceKHR surface);
struct swapchain_data *swapchain_lookup(struct device_data *dev, VkSwapchainKHR swapchain);
/* Registration, by the plumbing: false when the table is full (or the key is there). */
bool objects_instance_add(struct instance_data *inst);
void objects_instance_remove(struct instance_data *inst);
bool objects_device_add(struct device_data *dev);
void objects_device_remove(struct device_data *dev);
/* The device in slot index (0 .. MAX_DEVICES - 1), NULL when none: for walks over them all. */
struct device_data *objects_device_at(unsigned index);
bool objects_surface_add(struct surface_data *surface);
void objects_surface_remove(struct surface_data *surface);
/* Takes inst's surfaces out of the table (the app never destroyed them) into ret; their count. */
unsigned objects_surfaces_take(const struct instance_data *inst,
                               struct surface_data *ret[MAX_SURFACES]);

/* surfaces.c: surfaces, their frame logs and caps, swapchains. */
/* Tears down the surfaces of inst the app never destroyed. */
void surfaces_instance_finish(struct instance_data *inst);

/* GPU timing (gpu_slots.c: queues; gpu_reader.c: the reader; gpu_submit.c: submission;
 * gpu_sample.c: sampling; gpu_stats.c: the summary's notes). gpu.h has what they share. */
void gpu_queue_init(struct device_data *dev, struct queue_data *q);
/* The app named the queue: its GPU track takes the name ("gpu <name>"). */
void gpu_queue_named(struct queue_data *q, const char *name);
void gpu_queue_finish(struct device_data *dev, struct queue_data *q);
/* Starts and stops the device's reader thread. stop waits for our own submissions (bounded)
 * and reads them back before it returns. */
void gpu_reader_start(struct device_data *dev);
void gpu_reader_stop(struct device_data *dev);
/* Stops a device's reader at exit, waiting at most a moment for it. */
void gpu_reader_stop_at_exit(struct device_data *dev);
/* A submission as the app made it, through vkQueueSubmit (submits) or vkQueueSubmit2 or
 * its KHR alias (submits2, and the call-down submit2): one view of both, read through the
 * inline accessors below, so one body times either (gpu_submit) with no copy of its own. */
struct gpu_submission {
    uint32_t count;
    const VkSubmitInfo *submits;   /* vkQueueSubmit's */
    const VkSubmitInfo2 *submits2; /* vkQueueSubmit2's */
    /* vkQueueSubmit2's call-down (core or KHR), NULL for vkQueueSubmit: which of the two this
     * is (never the arrays, which may be NULL when count is 0). */
    PFN_vkQueueSubmit2 submit2;
    VkFence fence;
};

static inline const void *gpu_submission_chain(const struct gpu_submission *sub, uint32_t i)
{
    return sub->submit2 ? sub->submits2[i].pNext : sub->submits[i].pNext;
}

static inline uint32_t gpu_submission_cb_count(const struct gpu_submission *sub, uint32_t i)
{
    return sub->submit2 ? sub->submits2[i].commandBufferInfoCount
                         : sub->submits[i].commandBufferCount;
}

static inline VkCommandBuffer gpu_submission_cb(const struct gpu_submission *sub, uint32_t i,
                                                uint32_t k)
{
    return sub->submit2 ? sub->submits2[i].pCommandBufferInfos[k].commandBuffer
                         : sub->submits[i].pCommandBuffers[k];
}

/* The app's own batches, of either type. */
static inline const void *gpu_submission_batches(const struct gpu_submission *sub)
{
    return sub->submit2 ? (const void *)sub->submits2 : (const void *)sub->submits;
}

/* Calls the submission down with batches: its own, or a rewritten copy of the same type. */
static inline VkResult gpu_submission_down(struct device_data *dev, VkQueue queue,
                                           const struct gpu_submission *sub, const void *batches)
{
    return sub->submit2 ? sub->submit2(queue, sub->count, batches, sub->fence)
                         : dev->vk.QueueSubmit(queue, sub->count, batches, sub->fence);
}

VkResult gpu_submit(struct device_data *dev, struct queue_data *q,
                    const struct gpu_submission *sub);
void gpu_device_lost(struct device_data *dev, const char *where);
/* Whether the submission that took slot (signalling value) on q is complete by our own
 * signal: one counter or event read, from any thread. False when unsure. */
bool gpu_slot_complete(struct queue_data *q, const struct gpu_slot *slot, uint64_t value);
void gpu_report_notes(void);
/* A present on dev at now: closes or opens a window of timed frames (FRAMESCOPE_GPU_SAMPLE). */
void gpu_sample_presented(struct device_data *dev, uint64_t now);
void gpu_sample_init(struct device_data *dev);
/* Whether what is recorded now on dev will likely be submitted in a window of timed frames:
 * GPU zones are left out of command buffers recorded again outside them (a timestamp costs
 * the device even where nothing reads it). Relaxed loads; never waits. */
bool gpu_sample_may_time(struct device_data *dev);

/* One hooked device-level entry point (hook_list.h): the hook handed out for its name, and
 * where its call-down sits in the device dispatch table. layer.c hands a hook out only where
 * that call-down exists, so no hook ever calls a NULL. */
struct layer_hook {
    const char *name;
    PFN_vkVoidFunction hook;
    size_t call_down;    /* offset in struct device_dispatch */
    bool instance_chain; /* call-down resolved through the instance chain (debug utils) */
};
struct layer_hook_table {
    const struct layer_hook *rows;
    unsigned count;
};
#define LAYER_HOOK_ROW(fn)                                                                     \
    {"vk" #fn, (PFN_vkVoidFunction)framescope_##fn, offsetof(struct device_dispatch, fn), false},
#define LAYER_HOOK_ROW_INSTANCE_CHAIN(fn)                                                      \
    {"vk" #fn, (PFN_vkVoidFunction)framescope_##fn, offsetof(struct device_dispatch, fn), true},
#define LAYER_HOOK_TABLE(rows) {rows, sizeof(rows) / sizeof(rows[0])}

/* An instance-level hook (hook_list.h's INSTANCE_HOOKS), handed out for its name. */
struct layer_instance_hook {
    const char *name;
    PFN_vkVoidFunction hook;
};
struct layer_instance_hook_table {
    const struct layer_instance_hook *rows;
    unsigned count;
};
#define LAYER_INSTANCE_HOOK_ROW(fn) {"vk" #fn, (PFN_vkVoidFunction)framescope_##fn},

/* surfaces.c: INSTANCE_HOOKS and SWAPCHAIN_HOOKS */
extern const struct layer_instance_hook_table surfaces_instance_hook_table;
extern const struct layer_hook_table surfaces_hook_table;

/* hooks.c: FRAME_HOOKS and INSTANCE_CHAIN_HOOKS */
extern const struct layer_hook_table hooks_table;

/* commands.c: COMMAND_HOOKS; commands_recorded.c: RECORDED_COMMAND_HOOKS */
extern const struct layer_hook_table commands_hook_table;
extern const struct layer_hook_table commands_recorded_hook_table;
void commands_report_notes(void);
/* A submission on the calling thread (collector c) charges what cb recorded to its frame. */
void commands_submitted(struct fscope_collector *c, VkCommandBuffer cb);
/* Commands hooks.c sees first: a render pass begun (counted as one), a label opened or
 * closed (where binds are charged), any other command. */
void commands_pass_counted(VkCommandBuffer cb);
void commands_label_begin(VkCommandBuffer cb, const char *name);
void commands_label_end(VkCommandBuffer cb);
void commands_counted(VkCommandBuffer cb);

/* resources.c: RESOURCE_HOOKS */
extern const struct layer_hook_table resources_hook_table;
/* Records the device's heaps and starts reading its memory budget where it has one. */
void resources_device_init(struct device_data *dev);
/* Stops reading its budget (waits for a read in progress on the sampler thread). */
void resources_device_finish(struct device_data *dev);

/* gpu_zones.c */
void zones_cb_allocated(struct device_data *dev, VkCommandPool pool, VkCommandBuffer cb,
                        bool primary, uint32_t family);
void zones_cb_freed(VkCommandBuffer cb);
void zones_pool_destroyed(struct device_data *dev, VkCommandPool pool);
void zones_cb_begin(VkCommandBuffer cb, const VkCommandBufferBeginInfo *info);
void zones_cb_end(VkCommandBuffer cb);
void zones_label_begin(VkCommandBuffer cb, const char *name);
void zones_label_end(VkCommandBuffer cb);
void zones_pass_begin(VkCommandBuffer cb, VkRect2D area, uint32_t colors, bool depth,
                      uint32_t view_mask, VkRenderingFlags flags, const char *pass_name,
                      bool secondary_contents);
/* The app began (or ended) a pipeline statistics query of its own in cb: no pass of ours
 * gets one while it is active. */
void zones_app_stats_query(VkCommandBuffer cb, bool begin);
void zones_pass_ending(VkCommandBuffer cb); /* before the driver ends the pass */
void zones_pass_end(VkCommandBuffer cb);
/* A timed submission carries cb's zones (before it goes down); an untimed one counts them. */
/* first: cb is the first command buffer of its submission, right behind the span's begin. */
void zones_attach(struct queue_data *q, struct gpu_slot *slot, VkCommandBuffer cb, bool first);
/* A run in a submission not timed; count: counted as untimed (not a sampled-out one). */
void zones_untimed_submit(VkCommandBuffer cb, bool count);
/* The submission did not go down after all: its zones are let go unread. */
void zones_detach(struct device_data *dev, struct gpu_slot *slot);
/* Reader thread: the slot's zones, once its completion signal says it finished. */
/* span_begin: the submission's begin timestamp, NULL where it could not be read. */
void zones_read(struct device_data *dev, struct queue_data *q, struct gpu_slot *slot,
                const uint64_t *span_begin,
                int64_t (*to_mono)(const struct queue_data *q, uint64_t ts));
/* Reader thread, each pass (last: the final one, which reads or counts every run left): the
 * runs of blocks read from the host that were not read yet when their slot was. */
void zones_read_deferred(struct device_data *dev, bool last,
                         int64_t (*to_mono)(const struct queue_data *q, uint64_t ts));
/* The device is being destroyed (the app idled it): every block's last run read. Before the
 * reader stops. */
void zones_device_finish_runs(struct device_data *dev);
/* After the reader stopped, before the device goes. */
void zones_device_destroy(struct device_data *dev);

#endif
