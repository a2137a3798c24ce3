/*
 * framescope-demo: the bundled Vulkan workload that `framescope run` profiles by default and
 * that tests and benchmarks drive into CPU-, GPU- and display-bound frames.
 *
 * demo-options.c  command line
 * demo-wayland.c  xdg_toplevel window and the VkSurfaceKHR on it
 * demo-vulkan.c   instance, device, pipeline, swapchain and offscreen images
 * demo-render.c   frame slots, recording and submission, worker threads
 * demo-gate.c     host-signalled timeline semaphores (--host-delay-ms, --late-signal)
 * demo-draws.c    many small draws a frame, recorded on threads of their own (--draws)
 * framescope-demo.c  main(): set-up, the frame loops, tear-down
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#define DEMO_NAME "framescope-demo"
#define DEMO_MAX_FRAMES_IN_FLIGHT 8
#define DEMO_MAX_THREADS 64
#define DEMO_MAX_INSTANCES 16
/* --record-threads: more than an engine's usual recording threads, few enough to keep each
 * thread's pools in a fixed array. */
#define DEMO_MAX_RECORD_THREADS 16

enum demo_output {
    DEMO_OUTPUT_WAYLAND,
    DEMO_OUTPUT_OFFSCREEN,
};

#define DEMO_MAX_PASSES 4

/* --record-once: offscreen frame slots' command buffers recorded once. */
enum demo_record_once {
    DEMO_RECORD_ONCE_OFF,
    DEMO_RECORD_ONCE_SLOT,         /* no SIMULTANEOUS_USE: a slot's fence precedes each reuse */
    DEMO_RECORD_ONCE_SIMULTANEOUS, /* SIMULTANEOUS_USE, as vkcube records */
};

struct demo_options {
    uint64_t frames;            /* 0: until SIGINT or SIGTERM */
    double cpu_ms;
    double lock_wait_ms; /* --lock-wait-ms: each frame waits this long on a worker's mutex */
    bool cpu_hog;        /* --cpu-hog: a thread that spins for the whole run */
    uint32_t sleep_limit_hz; /* --sleep-limit: the app's own limiter; 0: none */
    bool frame_callback;     /* --frame-callback: paced by wl_surface.frame callbacks */
    uint32_t fault_mb;   /* --fault-mb: pages of a file dropped from the cache and read back */
    uint32_t gpu_iters;
    VkPresentModeKHR present_mode;
    enum demo_output output;
    uint32_t width, height;
    bool submit2;
    uint32_t threads;
    uint64_t recreate_every;    /* 0: never */
    uint32_t instances;
    uint32_t device_cycles;
    bool no_destroy;
    int64_t stall_at;           /* -1: no stall */
    int64_t fork_helper_at;     /* -1: no helper */
    double stall_ms;
    int64_t cpu_spike_at;       /* -1: none */
    double cpu_spike_ms;
    int64_t faults_at;          /* -1: none */
    int64_t alloc_at;           /* --alloc-at F:MB: -1 none */
    uint32_t alloc_mb;
    int64_t pass_spike_at;      /* --pass-spike F:N: -1 none */
    uint32_t pass_spike_iters;
    uint32_t faults_mb;         /* --faults-at F:MB, once */
    int64_t pipelines_at;       /* -1: none */
    uint32_t pipelines;
    uint32_t frames_in_flight;
    bool quiet;
    uint32_t api_version;       /* VK_API_VERSION_1_x; 0: the loader's, at most 1.3 */
    bool vk12_features;
    bool no_fence_wait;
    enum demo_record_once record_once;
    bool thread_split;
    bool serial;
    bool host_delay;
    double host_delay_ms;
    bool late_signal;
    uint32_t devices;
    uint32_t second_device_gpu_iters;
    bool disconnect_early;
    bool fork_child;
    int die_signal; /* 0: exit normally after --frames */
    bool self_timestamps;
    bool transfer_queue;
    uint32_t submits; /* --submits: each submission of the demo's becomes this many */
    /* --passes: each frame's work as named passes, each in a debug-utils label region */
    uint32_t pass_count;
    struct demo_pass {
        char name[32];
        uint32_t gpu_iters;
    } passes[DEMO_MAX_PASSES];
    /* --draws: that many small indexed draws a frame, recorded on record_threads threads */
    uint32_t draws;             /* 0: off */
    uint32_t record_threads;
    bool secondary;             /* into secondary command buffers, else primaries */
    bool redundant_binds;       /* every draw binds what is already bound */
    bool wide_binds;            /* two vertex buffers and two sets (one dynamic) a call */
    uint32_t leak_kb;           /* --leak-kb: device memory allocated a frame, kept; 0 off */
};

/* ---- demo-options.c ---- */

enum demo_parse_result {
    DEMO_PARSE_RUN,
    DEMO_PARSE_EXIT_SUCCESS,    /* --help was printed */
    DEMO_PARSE_EXIT_USAGE,      /* a one-line error was printed; exit with status 2 */
};

/* Fills *ret_options from argv. Prints --help to stdout, errors to stderr. */
enum demo_parse_result demo_options_parse(struct demo_options *ret_options, int argc, char **argv);

const char *demo_present_mode_name(VkPresentModeKHR mode);

/* ---- demo-vulkan.c ---- */

/* Prints "framescope-demo: <call> failed: <VkResult>" for a negative result; true if none. */
bool demo_vk_check(VkResult result, const char *call);
const char *demo_vk_result_name(VkResult result);

struct demo_instance {
    VkInstance handle;
    uint32_t api_version;       /* what the instance was created with */
    bool debug_utils;           /* VK_EXT_debug_utils is enabled on it */
};

/*
 * with_surface enables VK_KHR_surface and VK_KHR_wayland_surface. api_version is
 * VkApplicationInfo.apiVersion; 0 asks for the loader's own version, at most 1.3.
 */
bool demo_instance_init(struct demo_instance *instance, bool with_surface, uint32_t api_version);
/* Set before instances are made: whether they enable VK_EXT_debug_utils. */
enum demo_debug_utils {
    DEMO_DEBUG_UTILS_OFF,
    /* Labels and names where the instance offers the extension (--draws, --leak-kb). */
    DEMO_DEBUG_UTILS_IF_AVAILABLE,
    /* vkCreateInstance fails without it (--passes' labels, --pipelines-at's names). */
    DEMO_DEBUG_UTILS_REQUIRED,
};
extern enum demo_debug_utils demo_debug_utils;
void demo_instance_finish(struct demo_instance *instance);

/* One VkDevice with one graphics queue, shared by every thread that submits. */
struct demo_gpu {
    VkPhysicalDevice physical_device;
    VkPhysicalDeviceMemoryProperties memory_properties;
    VkDevice device;
    uint32_t queue_family;
    VkQueue queue;
    /* Vulkan requires external synchronisation of a queue; submit and present take this. */
    pthread_mutex_t queue_lock;
    PFN_vkQueueSubmit2 queue_submit2;   /* non-NULL when --submit2 is in effect */
    /* --transfer-queue: a queue of a family without graphics, fed an empty batch a frame. */
    uint32_t transfer_family;
    VkQueue transfer_queue;
    VkCommandPool transfer_pool;
    VkCommandBuffer transfer_cmd;
    VkFence transfer_fence;
    bool transfer_submitted;
    uint32_t extra_submits; /* --submits N: N - 1 submissions before each of ours */
    VkCommandPool extra_pool;
    VkCommandBuffer extra_cmd; /* empty, recorded once: what the extra submissions carry */
    /* Non-NULL when the instance has VK_EXT_debug_utils: see demo_gpu_name(). */
    PFN_vkSetDebugUtilsObjectNameEXT set_object_name;
};

/* What a device is created with, besides the queue and, with a surface, VK_KHR_swapchain. */
struct demo_gpu_config {
    /* Enables synchronization2 and routes demo_gpu_submit() through vkQueueSubmit2. */
    bool submit2;
    /*
     * Chains a VkPhysicalDeviceVulkan12Features with every feature off, the way most engines
     * fill it in; timeline_semaphore then turns on that struct's one member.
     */
    bool vk12_features;
    /* Needs Vulkan 1.2 on both the instance and the device. */
    bool timeline_semaphore;
    /* A second queue from the non-graphics family with the fewest timestamp bits. */
    bool transfer_queue;
    /* Empty submissions made before each of the demo's own (--submits N: N - 1). */
    uint32_t extra_submits;
};

/*
 * The first physical device with a graphics queue family that can present to surface (when
 * surface is not VK_NULL_HANDLE) and, with a surface, VK_KHR_swapchain. Prints why not.
 */
bool demo_physical_device_pick(const struct demo_instance *instance, VkSurfaceKHR surface,
                               VkPhysicalDevice *ret_device, uint32_t *ret_family);

/* Creates a device on demo_physical_device_pick()'s choice. Prints why not. */
struct demo_gpu *demo_gpu_create(const struct demo_instance *instance, VkSurfaceKHR surface,
                                 const struct demo_gpu_config *config);
/* Names handle with vkSetDebugUtilsObjectNameEXT; does nothing without VK_EXT_debug_utils. */
void demo_gpu_name(struct demo_gpu *gpu, VkObjectType type, uint64_t handle, const char *name);
/* --transfer-queue: waits for the last one, then submits one more empty batch there. */
bool demo_gpu_submit_transfer(struct demo_gpu *gpu);
/* Accepts NULL and a half-built gpu. The caller makes sure the device is idle. */
void demo_gpu_destroy(struct demo_gpu *gpu);

/* One batch on a queue. Every handle may be VK_NULL_HANDLE, which leaves it out. */
struct demo_batch {
    VkCommandBuffer cmd;        /* none: an empty batch */
    /* Submitted after cmd in the same batch: --draws' primaries. At most
     * DEMO_MAX_RECORD_THREADS. */
    const VkCommandBuffer *then_cmds;
    uint32_t then_cmd_count;
    /* Binary, waited at colour-attachment output: where a swapchain image is first touched. */
    VkSemaphore wait;
    /*
     * Timeline, waited at all-commands until it reaches timeline_wait_value. Not top-of-pipe:
     * as a wait's destination stage that blocks nothing.
     */
    VkSemaphore timeline_wait;
    uint64_t timeline_wait_value;
    VkSemaphore signal;         /* binary */
    VkFence fence;
};

bool demo_gpu_submit(struct demo_gpu *gpu, const struct demo_batch *batch);
/* Returns vkQueuePresentKHR's result untouched: the caller decides about OUT_OF_DATE. */
VkResult demo_gpu_present(struct demo_gpu *gpu, VkSwapchainKHR swapchain, uint32_t image_index,
                          VkSemaphore wait);
/* vkQueueWaitIdle. */
bool demo_gpu_wait_idle(struct demo_gpu *gpu);
/* vkDeviceWaitIdle: for callers that keep no fence to tell them what is still running. */
bool demo_gpu_wait_device_idle(struct demo_gpu *gpu);

/* The fullscreen-triangle pipeline and the two compatible render passes it is used with. */
struct demo_pipeline {
    VkFormat format;
    VkImageLayout final_layout;
    /* Clears and draws the whole image in one pass: UNDEFINED in, final_layout out. */
    VkRenderPass frame_pass;
    /* Clears and draws one band for a worker thread: COLOR_ATTACHMENT_OPTIMAL in and out. */
    VkRenderPass band_pass;
    VkPipelineLayout layout;
    VkPipeline pipeline;
};

struct demo_push_constants {
    uint32_t gpu_iters;
    uint32_t frame;
};

struct demo_pipeline *demo_pipeline_create(struct demo_gpu *gpu, VkFormat format,
                                           VkImageLayout final_layout);
/* One colour attachment of format in one subpass. Every pass made here is compatible with
 * every other of the same format, so they share framebuffers and pipelines. */
bool demo_render_pass_create(struct demo_gpu *gpu, VkFormat format, VkAttachmentLoadOp load_op,
                             VkImageLayout initial, VkImageLayout final, VkRenderPass *ret_pass);
void demo_pipeline_destroy(struct demo_gpu *gpu, struct demo_pipeline *pipeline);

struct demo_image {
    VkImage image;
    VkDeviceMemory memory;      /* offscreen images only; the swapchain owns its memory */
    VkImageView view;
    VkFramebuffer framebuffer;
    /*
     * Swapchain images only. One per image, not per frame slot: the present that waits on it
     * is over once the image comes back from vkAcquireNextImageKHR, which no fence tells.
     */
    VkSemaphore render_done;
};

/* The images frames are rendered into: a swapchain's, or plain offscreen ones. */
struct demo_targets {
    VkSwapchainKHR swapchain;   /* VK_NULL_HANDLE for offscreen */
    VkExtent2D extent;
    uint32_t image_count;
    struct demo_image *images;
};

/* Picks the surface format the swapchain and the pipeline share. */
bool demo_surface_choose_format(struct demo_gpu *gpu, VkSurfaceKHR surface,
                                VkSurfaceFormatKHR *ret_format);
/* Prints what the surface offers and returns false when mode is not among it. */
bool demo_surface_supports_present_mode(VkPhysicalDevice physical_device, VkSurfaceKHR surface,
                                        VkPresentModeKHR mode);

/* old may be VK_NULL_HANDLE; it is passed as oldSwapchain and stays the caller's to destroy. */
struct demo_targets *demo_targets_create_swapchain(struct demo_gpu *gpu,
                                                   const struct demo_pipeline *pipeline,
                                                   VkSurfaceKHR surface,
                                                   VkSurfaceFormatKHR format,
                                                   VkExtent2D extent,
                                                   VkPresentModeKHR present_mode,
                                                   VkSwapchainKHR old);
struct demo_targets *demo_targets_create_offscreen(struct demo_gpu *gpu,
                                                   const struct demo_pipeline *pipeline,
                                                   VkExtent2D extent, uint32_t image_count);
/* Accepts NULL and half-built targets. The caller makes sure the GPU no longer uses them. */
void demo_targets_destroy(struct demo_gpu *gpu, struct demo_targets *targets);

/* ---- demo-render.c ---- */

struct demo_renderer;

struct demo_render_target {
    VkImage image;
    VkFramebuffer framebuffer;
    VkExtent2D extent;
};

/*
 * Frame slots (fence, acquire semaphore, command buffers) and, when threads > 1, that many
 * worker threads that each record and submit one band of every frame.
 */
struct demo_renderer *demo_renderer_create(struct demo_gpu *gpu,
                                           const struct demo_pipeline *pipeline,
                                           uint32_t frames_in_flight, uint32_t threads,
                                           uint32_t gpu_iters);
/* Writes a timestamp before and after each single-thread frame's render pass; read back when
 * the frame's slot is waited on. False (printed why) when the queue has no timestamps. */
bool demo_renderer_enable_self_timestamps(struct demo_renderer *renderer);
/* Mean GPU time of the frames timed so far, in ms; *ret_frames says how many. */
double demo_renderer_self_gpu_ms(struct demo_renderer *renderer, uint64_t *ret_frames);
/* Records each frame as these passes, each in a label region named after it (single-thread
 * frames; needs an instance made with demo_debug_utils). False (printed why) without the
 * label functions. */
bool demo_renderer_set_passes(struct demo_renderer *renderer, VkInstance instance,
                              const struct demo_pass *passes, uint32_t count);
struct demo_draws;
/* Adds draws' recordings to every single-thread frame (--draws); the caller keeps draws and
 * destroys it after the renderer. */
void demo_renderer_set_draws(struct demo_renderer *renderer, struct demo_draws *draws);
/* In frame `at` (the frame number given at submission), the first pass runs `iters`
 * iterations instead of its own: a GPU spike in one pass. */
void demo_renderer_set_pass_spike(struct demo_renderer *renderer, int64_t at, uint32_t iters);
/* Accepts NULL and a half-built renderer; joins the workers. The caller idles the GPU. */
void demo_renderer_destroy(struct demo_renderer *renderer);

/*
 * Waits until the GPU is done with the next frame slot. *ret_image_acquired is the semaphore
 * to hand to vkAcquireNextImageKHR for this frame; it is unsignalled.
 */
bool demo_renderer_wait_slot(struct demo_renderer *renderer, VkSemaphore *ret_image_acquired);

/* What a frame's batches wait on and signal besides the slot's fence. */
struct demo_frame_sync {
    VkSemaphore image_acquired; /* binary, waited by the first batch; or VK_NULL_HANDLE */
    VkSemaphore render_done;    /* binary, signalled by the last batch; or VK_NULL_HANDLE */
    VkSemaphore gate;           /* timeline, waited by the first batch; or VK_NULL_HANDLE */
    uint64_t gate_value;
};

/*
 * Records and submits one frame into target, then moves to the next slot. The slot's fence
 * is reset only here, so a frame given up before this call leaves the slot ready.
 */
bool demo_renderer_submit_frame(struct demo_renderer *renderer,
                                const struct demo_render_target *target,
                                const struct demo_frame_sync *sync, uint32_t frame);

/*
 * Waits until the GPU has run the frame demo_renderer_submit_frame() submitted last: that
 * submission's own fence, right after it, rather than the slot's fence a lap later.
 */
bool demo_renderer_wait_submitted(struct demo_renderer *renderer);

/*
 * --no-fence-wait and --record-once: one command buffer per image of targets, recorded once
 * with usage (--no-fence-wait: SIMULTANEOUS_USE, since nothing tells when an earlier
 * submission of it is over). Frees the previous recording, so the caller idles the device
 * first.
 */
bool demo_renderer_record_images(struct demo_renderer *renderer,
                                 const struct demo_targets *targets,
                                 VkCommandBufferUsageFlags usage);
/* --record-once: submits image_index's recording with the current frame slot's fence (waited
 * on by demo_renderer_wait_slot first), then moves to the next slot. */
bool demo_renderer_submit_recorded(struct demo_renderer *renderer, uint32_t image_index);
/* Submits image_index's recording with sync and no fence. */
bool demo_renderer_submit_image(struct demo_renderer *renderer, uint32_t image_index,
                                const struct demo_frame_sync *sync);

/* vkCmdDraw and --draws' vkCmdDrawIndexed calls recorded so far, across all threads. */
uint64_t demo_renderer_draw_count(const struct demo_renderer *renderer);

/* ---- demo-draws.c ---- */

/*
 * --draws: every frame, N small indexed draws recorded by T threads (the caller's and T - 1
 * workers), each into its own command buffer from its own pool per frame slot, inside a
 * VK_EXT_debug_utils label region "cubes" when the instance has the extension. They draw
 * over the frame in a render pass instance of their own that loads what the frame drew.
 */
struct demo_draws_config {
    uint32_t draws;
    uint32_t threads;           /* 1..DEMO_MAX_RECORD_THREADS, at most draws */
    uint32_t frames_in_flight;
    bool secondary;
    bool redundant_binds;
    /* Each draw binds two vertex buffers in one call and two descriptor sets in one call: the
     * mesh's set and a set with a dynamic uniform buffer at the mesh's offset (the same two
     * sets in every draw, so only the dynamic offset tells them apart). */
    bool wide_binds;
};

/* Prints why not. pipeline gives the format, the final layout and the frame's framebuffers'
 * render pass, which the draws' own pass is compatible with. */
struct demo_draws *demo_draws_create(struct demo_gpu *gpu, const struct demo_instance *instance,
                                     const struct demo_pipeline *pipeline,
                                     const struct demo_draws_config *config);
/* Accepts NULL and a half-built one; joins the workers. The caller idles the GPU. */
void demo_draws_destroy(struct demo_draws *draws);

/*
 * Records slot's command buffers for target on every recording thread and returns once all
 * are done. The GPU must be done with slot's previous frame.
 */
bool demo_draws_record(struct demo_draws *draws, uint32_t slot,
                       const struct demo_render_target *target);
/* --secondary: into cmd, a render pass instance on target that executes slot's recordings.
 * Primaries: nothing; the caller submits demo_draws_primaries() after cmd. */
void demo_draws_execute(struct demo_draws *draws, VkCommandBuffer cmd, uint32_t slot,
                        const struct demo_render_target *target);
/* Primaries: slot's command buffers, in order; --secondary: none (*ret_count 0). */
const VkCommandBuffer *demo_draws_primaries(const struct demo_draws *draws, uint32_t slot,
                                            uint32_t *ret_count);

enum demo_bind_kind {
    DEMO_BIND_VERTEX,
    DEMO_BIND_INDEX,
    DEMO_BIND_SETS,
    DEMO_BIND_PIPELINE,
    DEMO_BIND_KINDS,
};

/* What the draws' command buffers held, read when no recording runs. */
struct demo_draws_stats {
    uint64_t draws;                             /* vkCmdDrawIndexed calls, all frames */
    uint64_t binds[DEMO_BIND_KINDS];            /* per frame */
    uint64_t redundant[DEMO_BIND_KINDS];        /* per frame: binds of what was bound */
    /* CLOCK_MONOTONIC from vkBeginCommandBuffer to vkEndCommandBuffer returning, summed
     * over frames and threads, over the vkCmd* calls recorded in between. */
    double ns_per_command;
    /* The median over recordings (the first RECORD_SAMPLES of each thread) of each one's own
     * ns per command: what a benchmark compares, as a slow first frame or a preempted
     * recording moves it far less than the mean. */
    double ns_per_command_median;
};

void demo_draws_get_stats(const struct demo_draws *draws, struct demo_draws_stats *ret_stats);

/* ---- demo-wayland.c ---- */

struct demo_window;

/* Connects to $WAYLAND_DISPLAY and maps nothing yet: an xdg_toplevel, acked and committed. */
struct demo_window *demo_window_create(const char *title);
/* Accepts NULL. Destroy every VkSurfaceKHR made on the window first, or disconnect first. */
void demo_window_destroy(struct demo_window *window);
/*
 * --disconnect-early: destroys the window's Wayland objects and disconnects from the display
 * while the VkSurfaceKHR on it still exists. demo_window_destroy() then only frees.
 */
void demo_window_disconnect(struct demo_window *window);
bool demo_window_create_surface(struct demo_window *window, VkInstance instance,
                                VkSurfaceKHR *ret_surface);
/* Dispatches what the compositor sent without blocking. False when the connection broke. */
bool demo_window_dispatch(struct demo_window *window);
/* Asks for a frame callback of the window's surface: sent with the next commit (the present
 * that follows). */
bool demo_window_request_frame(struct demo_window *window);
/* Waits (in poll) until the callback asked for last has come, or the window was closed. */
bool demo_window_wait_frame(struct demo_window *window);
bool demo_window_close_requested(const struct demo_window *window);

/* ---- demo-gate.c ---- */

/*
 * A timeline semaphore that the first batch of every frame waits on and the host signals:
 * --host-delay-ms from a helper thread a while after the submit returned, --late-signal from
 * the submitting thread itself after it has made a second submit.
 */
struct demo_gate;

enum demo_gate_mode {
    DEMO_GATE_HOST_DELAY,
    DEMO_GATE_LATE_SIGNAL,
};

/* The gpu needs timeline_semaphore. delay_ms is for DEMO_GATE_HOST_DELAY only. */
struct demo_gate *demo_gate_create(struct demo_gpu *gpu, enum demo_gate_mode mode,
                                   double delay_ms);
/* Accepts NULL and a half-built gate; releases it first. The caller idles the queue. */
void demo_gate_destroy(struct demo_gate *gate);

VkSemaphore demo_gate_semaphore(const struct demo_gate *gate);
/* The value the next frame's first batch waits on. Only the submitting thread calls it. */
uint64_t demo_gate_next_value(struct demo_gate *gate);
/*
 * Right after the batch that waits on value went in, from the same thread. Host delay:
 * schedules the signal. Late signal: submits an empty batch, then signals.
 */
bool demo_gate_after_submit(struct demo_gate *gate, uint64_t value);
/*
 * Blocks until the host has signalled value. A present may only wait on a semaphore whose
 * signal depends on signals already made, so this comes before presenting a gated frame.
 */
bool demo_gate_wait_signalled(struct demo_gate *gate, uint64_t value);
/*
 * Stops the helper thread and signals every value handed out, so that the queue can drain
 * even after a frame failed between its submit and its signal. Idempotent.
 */
void demo_gate_release(struct demo_gate *gate);
