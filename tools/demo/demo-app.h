/* framescope-demo's main program, in parts (tools/demo/framescope-demo.c, demo-load.c,
 * demo-split.c, demo-devices.c): what they share. */
#ifndef FSCOPE_DEMO_APP_H
#define FSCOPE_DEMO_APP_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "demo.h"

/* Frames a --device-cycles device renders before it is destroyed. */
#define DEVICE_CYCLE_FRAMES 3
/* Out-of-date answers in a row from acquire before the demo gives up on the surface. */
#define MAX_ACQUIRE_RETRIES 8
/* --fork-child forks once this many frames are done: past start-up, well before the end. */
#define FORK_AFTER_FRAMES 10

/* A device with what it takes to render offscreen frames: --device-cycles, --devices 2. */
struct offscreen_device {
    struct demo_gpu *gpu;
    struct demo_pipeline *pipeline;
    struct demo_targets *targets;
    struct demo_renderer *renderer;
};

/* --devices 2: the second device and the thread that renders on it. */
struct second_device {
    struct offscreen_device device;
    pthread_t thread;
    bool started;
    atomic_bool stop;
    /* Written by the thread, read after it is joined. */
    uint64_t frames;
    bool failed;
};

struct split;

struct demo {
    struct demo_options options;
    struct demo_instance instance;
    struct demo_instance extra_instances[DEMO_MAX_INSTANCES];
    struct demo_gpu *extra_gpus[DEMO_MAX_INSTANCES];
    struct demo_window *window;
    int64_t next_deadline_ns; /* --sleep-limit: the next frame's deadline, CLOCK_MONOTONIC */
    VkSurfaceKHR surface;
    VkSurfaceFormatKHR surface_format;
    struct demo_gpu *gpu;
    struct demo_pipeline *pipeline;
    struct demo_targets *targets;
    struct demo_renderer *renderer;
    struct demo_draws *draws;   /* --draws */
    struct demo_gate *gate;     /* --host-delay-ms, --late-signal */
    VkFence acquire_fence;      /* --no-fence-wait */
    struct split *split;        /* --thread-split */
    struct second_device second;
    bool swapchain_stale;
    bool window_closed;         /* xdg_toplevel.close: ends the loop like SIGINT */
    void (*frame_mark)(void);
    void *framescope_library;   /* held so frame_mark stays mapped */
    uint64_t frames_rendered;
    /* --leak-kb: one allocation a frame, freed at tear-down */
    VkDeviceMemory *leaks;
    uint64_t leak_count, leak_capacity;
};

/* Set by SIGINT and SIGTERM (framescope-demo.c): the frame loops end. */
extern volatile sig_atomic_t stop_requested;

/* ---- the options' load on the CPU, memory and process (demo-load.c) ---- */

uint64_t now_ns(void);
/* The CPU side of a frame's load: --cpu-ms, --lock-wait-ms and --fault-mb every frame,
 * --stall-ms once. */
void run_cpu_load(const struct demo_options *options, uint64_t frame);
/* --alloc-at: a level's buffers allocated mid-run, on the render thread: host-visible memory,
 * every page written (as an upload would), then freed. */
void allocate_memory(struct demo *demo, uint64_t frame);
/* --leak-kb: device memory that is allocated every frame and never given back until the
 * end, as a leaking streamer's. Device-local where there is such memory: what a profiler
 * reports as the device's live memory. */
bool leak_memory(struct demo *demo, uint64_t frame);
/* --pipelines-at: a level's materials compiled mid-run, on the render thread. */
void create_pipelines(struct demo *demo, uint64_t frame, VkFormat format,
                      VkImageLayout layout);
/* --fork-child: what a launcher or an engine's crash reporter does in the middle of a run. */
bool fork_child(void);

/* ---- --thread-split (demo-split.c) ---- */

/* Waits until every posted frame is retired and presented. False once a stage has failed. */
bool split_drain(struct split *split);
/* Accepts NULL and a half-built split. Stops its threads; the caller idles the queue. */
void split_destroy(struct split *split);
/*
 * The acquire thread's side of --thread-split. A frame is acquired only once the previous
 * one has been presented, which keeps one image acquired at a time as a UINT64_MAX acquire
 * timeout requires (and keeps acquire and present, which both need the swapchain
 * externally synchronised, apart); and only once frame f - depth is retired, when its
 * semaphore and slot are free again.
 */
bool run_split_frames(struct demo *demo);

/* ---- extra devices: --device-cycles, --devices 2 (demo-devices.c) ---- */

/* Accepts a half-built device. False when the queue would not idle. */
bool offscreen_device_finish(struct offscreen_device *device);
/*
 * A whole device lifetime before the real one: create, render a few offscreen frames,
 * destroy. Drives the create/destroy paths of whatever layer is loaded.
 */
bool run_device_cycle(struct demo *demo);
bool second_device_start(struct demo *demo);
/* Joins the second device's thread; its objects stay. False when it had failed. */
bool second_device_stop(struct second_device *second);

/* ---- the frame loop (framescope-demo.c) ---- */

struct demo_render_target render_target(const struct demo_targets *targets,
                                        uint32_t index);
/*
 * The old swapchain's images may still be on the queue: wait, then retire them. Only the
 * thread that acquires calls this.
 */
bool recreate_swapchain(struct demo *demo);
/*
 * Acquires the next swapchain image, recreating the swapchain while it is out of date.
 * Either image_acquired or acquire_fence is VK_NULL_HANDLE.
 */
bool acquire_image(struct demo *demo, VkSemaphore image_acquired, VkFence acquire_fence,
                   uint32_t *ret_image_index);
/*
 * A present may only wait on a semaphore whose signal depends on nothing that is still
 * unsignalled, so a gated frame is presented only once the host has opened its gate.
 */
bool await_gate(struct demo *demo, const struct demo_frame_sync *sync);
/* Submits one frame on the main device and does what the gate wants right after that. */
bool submit_frame(struct demo *demo, const struct demo_render_target *target,
                  struct demo_frame_sync *sync, uint64_t frame);
/* Dispatches Wayland events; *ret_closed when the compositor asked the window to close. */
bool dispatch_window(struct demo *demo, bool *ret_closed);
bool recreate_due(const struct demo *demo, uint64_t frame);
/* One frame slot's wait and submit, with no load and no gate: extra devices only. */
bool render_offscreen(struct demo_renderer *renderer, const struct demo_targets *targets,
                      uint64_t frame);

#endif
