/*
 * framescope-demo: the bundled Vulkan workload that `framescope run` profiles by default and
 * that tests and benchmarks drive into CPU-, GPU- and display-bound frames.
 *
 * demo-options.c  command line
 * demo-wayland.c  xdg_toplevel window and the VkSurfaceKHR on it
 * demo-vulkan.c   instance, device, pipeline, swapchain and offscreen images
 * demo-render.c   frame slots, recording and submission, worker threads
 * framescope-demo.c  main(): set-up, the frame loop, tear-down
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

enum demo_output {
    DEMO_OUTPUT_WAYLAND,
    DEMO_OUTPUT_OFFSCREEN,
};

struct demo_options {
    uint64_t frames;            /* 0: until SIGINT or SIGTERM */
    double cpu_ms;
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
    double stall_ms;
    uint32_t frames_in_flight;
    bool quiet;
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
};

/* with_surface enables VK_KHR_surface and VK_KHR_wayland_surface. */
bool demo_instance_init(struct demo_instance *instance, bool with_surface);
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
};

/*
 * The first physical device with a graphics queue family that can present to surface (when
 * surface is not VK_NULL_HANDLE) and, with a surface, VK_KHR_swapchain. Prints why not.
 */
bool demo_physical_device_pick(const struct demo_instance *instance, VkSurfaceKHR surface,
                               VkPhysicalDevice *ret_device, uint32_t *ret_family);

/*
 * Creates a device on demo_physical_device_pick()'s choice. submit2 enables the
 * synchronization2 feature and routes demo_gpu_submit() through vkQueueSubmit2.
 */
struct demo_gpu *demo_gpu_create(const struct demo_instance *instance, VkSurfaceKHR surface,
                                 bool submit2);
/* Accepts NULL and a half-built gpu. The caller makes sure the device is idle. */
void demo_gpu_destroy(struct demo_gpu *gpu);

/*
 * One batch on the gpu's queue. Any handle may be VK_NULL_HANDLE. The wait happens at the
 * colour-attachment-output stage, which is where a swapchain image is first touched.
 */
bool demo_gpu_submit(struct demo_gpu *gpu, VkCommandBuffer cmd, VkSemaphore wait,
                     VkSemaphore signal, VkFence fence);
/* Returns vkQueuePresentKHR's result untouched: the caller decides about OUT_OF_DATE. */
VkResult demo_gpu_present(struct demo_gpu *gpu, VkSwapchainKHR swapchain, uint32_t image_index,
                          VkSemaphore wait);
bool demo_gpu_wait_idle(struct demo_gpu *gpu);

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
/* Accepts NULL and a half-built renderer; joins the workers. The caller idles the GPU. */
void demo_renderer_destroy(struct demo_renderer *renderer);

/*
 * Waits until the GPU is done with the next frame slot. *ret_image_acquired is the semaphore
 * to hand to vkAcquireNextImageKHR for this frame; it is unsignalled.
 */
bool demo_renderer_wait_slot(struct demo_renderer *renderer, VkSemaphore *ret_image_acquired);

/*
 * Records and submits one frame into target, then moves to the next slot. wait and signal
 * may be VK_NULL_HANDLE (offscreen). The slot's fence is reset only here, so a frame given
 * up before this call leaves the slot ready.
 */
bool demo_renderer_submit_frame(struct demo_renderer *renderer,
                                const struct demo_render_target *target, VkSemaphore wait,
                                VkSemaphore signal, uint32_t frame);

/* vkCmdDraw calls recorded so far, across all threads. */
uint64_t demo_renderer_draw_count(const struct demo_renderer *renderer);

/* ---- demo-wayland.c ---- */

struct demo_window;

/* Connects to $WAYLAND_DISPLAY and maps nothing yet: an xdg_toplevel, acked and committed. */
struct demo_window *demo_window_create(const char *title);
/* Accepts NULL. Destroy every VkSurfaceKHR made on the window first. */
void demo_window_destroy(struct demo_window *window);
bool demo_window_create_surface(struct demo_window *window, VkInstance instance,
                                VkSurfaceKHR *ret_surface);
/* Dispatches what the compositor sent without blocking. False when the connection broke. */
bool demo_window_dispatch(struct demo_window *window);
bool demo_window_close_requested(const struct demo_window *window);
