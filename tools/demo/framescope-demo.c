/*
 * framescope-demo: set-up, the frame loop and tear-down. See demo.h for the other files and
 * --help for what each knob does.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demo.h"

/* Frames a --device-cycles device renders before it is destroyed. */
#define DEVICE_CYCLE_FRAMES 3
/* Out-of-date answers in a row from acquire before the demo gives up on the surface. */
#define MAX_ACQUIRE_RETRIES 8

/*
 * Provided by libframescope when framescope is in the process. Weak, so the demo needs no
 * link to it; default visibility, so -fvisibility=hidden cannot bind it to NULL at link time.
 */
void fscope_frame_mark(void) __attribute__((weak, visibility("default")));

static volatile sig_atomic_t stop_requested;

struct demo {
    struct demo_options options;
    struct demo_instance instance;
    struct demo_instance extra_instances[DEMO_MAX_INSTANCES];
    struct demo_gpu *extra_gpus[DEMO_MAX_INSTANCES];
    struct demo_window *window;
    VkSurfaceKHR surface;
    VkSurfaceFormatKHR surface_format;
    struct demo_gpu *gpu;
    struct demo_pipeline *pipeline;
    struct demo_targets *targets;
    struct demo_renderer *renderer;
    bool swapchain_stale;
    bool window_closed;         /* xdg_toplevel.close: ends the loop like SIGINT */
    void (*frame_mark)(void);
    void *framescope_library;   /* held so frame_mark stays mapped */
    uint64_t frames_rendered;
};

static void handle_stop_signal(int signo)
{
    stop_requested = 1;
}

static bool install_signal_handlers(void)
{
    /* No SA_RESTART: a blocking wait may return early, and the loop then sees the flag. */
    struct sigaction action = { .sa_handler = handle_stop_signal };
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGINT, &action, NULL) != 0 || sigaction(SIGTERM, &action, NULL) != 0) {
        fprintf(stderr, DEMO_NAME ": sigaction failed: %s\n", strerror(errno));
        return false;
    }
    return true;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The --cpu-ms load: spinning, not sleeping, so the time shows up as CPU work. */
static void burn_cpu(double ms)
{
    if (ms <= 0.0)
        return;
    uint64_t deadline = now_ns() + (uint64_t)(ms * 1e6);
    while (now_ns() < deadline)
        ;
}

static void sleep_ms(double ms)
{
    uint64_t deadline = now_ns() + (uint64_t)(ms * 1e6);
    struct timespec until = {
        .tv_sec = (time_t)(deadline / 1000000000u),
        .tv_nsec = (long)(deadline % 1000000000u),
    };
    /* A signal cuts the stall short only when it asks the demo to stop. */
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR &&
           !stop_requested)
        ;
}

/* The CPU side of a frame's load: --cpu-ms every frame, --stall-ms once. */
static void run_cpu_load(const struct demo_options *options, uint64_t frame)
{
    burn_cpu(options->cpu_ms);
    if ((int64_t)frame == options->stall_at)
        sleep_ms(options->stall_ms);
}

/*
 * The weak reference is non-NULL only when libframescope was there at start-up (linked or
 * preloaded). The Vulkan loader opens our layer with RTLD_LOCAL, which does not fill weak
 * references, so after vkCreateInstance has loaded the layers look for the library by name.
 */
static void resolve_frame_mark(struct demo *demo)
{
    if (fscope_frame_mark) {
        demo->frame_mark = fscope_frame_mark;
        return;
    }
    demo->framescope_library = dlopen("libframescope.so.0", RTLD_NOW | RTLD_NOLOAD);
    if (demo->framescope_library) {
        *(void **)&demo->frame_mark = dlsym(demo->framescope_library, "fscope_frame_mark");
        if (!demo->frame_mark) {
            dlclose(demo->framescope_library);
            demo->framescope_library = NULL;
        }
    }
}

static struct demo_render_target render_target(const struct demo_targets *targets,
                                               uint32_t index)
{
    return (struct demo_render_target){
        .image = targets->images[index].image,
        .framebuffer = targets->images[index].framebuffer,
        .extent = targets->extent,
    };
}

/* The old swapchain's images may still be on the queue: wait, then retire them. */
static bool recreate_swapchain(struct demo *demo)
{
    if (!demo_gpu_wait_idle(demo->gpu))
        return false;
    VkExtent2D extent = { demo->options.width, demo->options.height };
    struct demo_targets *fresh = demo_targets_create_swapchain(
        demo->gpu, demo->pipeline, demo->surface, demo->surface_format, extent,
        demo->options.present_mode, demo->targets->swapchain);
    if (!fresh)
        return false;
    demo_targets_destroy(demo->gpu, demo->targets);
    demo->targets = fresh;
    demo->swapchain_stale = false;
    return true;
}

/* Acquires the next swapchain image, recreating the swapchain while it is out of date. */
static bool acquire_image(struct demo *demo, VkSemaphore image_acquired,
                          uint32_t *ret_image_index)
{
    for (int attempt = 0; attempt < MAX_ACQUIRE_RETRIES; attempt++) {
        VkResult result = vkAcquireNextImageKHR(demo->gpu->device, demo->targets->swapchain,
                                                UINT64_MAX, image_acquired, VK_NULL_HANDLE,
                                                ret_image_index);
        if (result == VK_SUCCESS)
            return true;
        if (result == VK_SUBOPTIMAL_KHR) {
            /* The semaphore will be signalled: use the image, recreate after presenting. */
            demo->swapchain_stale = true;
            return true;
        }
        if (result != VK_ERROR_OUT_OF_DATE_KHR)
            return demo_vk_check(result, "vkAcquireNextImageKHR");
        if (!recreate_swapchain(demo))
            return false;
    }
    fprintf(stderr, DEMO_NAME ": vkAcquireNextImageKHR kept returning "
            "VK_ERROR_OUT_OF_DATE_KHR after %d swapchain recreations\n", MAX_ACQUIRE_RETRIES);
    return false;
}

static bool run_wayland_frame(struct demo *demo, uint64_t frame)
{
    const struct demo_options *options = &demo->options;

    if (!demo_window_dispatch(demo->window))
        return false;
    if (demo_window_close_requested(demo->window)) {
        demo->window_closed = true;
        return true;
    }

    VkSemaphore image_acquired;
    if (!demo_renderer_wait_slot(demo->renderer, &image_acquired))
        return false;
    if (options->recreate_every > 0 && frame > 0 && frame % options->recreate_every == 0)
        demo->swapchain_stale = true;
    if (demo->swapchain_stale && !recreate_swapchain(demo))
        return false;

    uint32_t image_index;
    if (!acquire_image(demo, image_acquired, &image_index))
        return false;

    run_cpu_load(options, frame);

    struct demo_render_target target = render_target(demo->targets, image_index);
    VkSemaphore render_done = demo->targets->images[image_index].render_done;
    if (!demo_renderer_submit_frame(demo->renderer, &target, image_acquired, render_done,
                                    (uint32_t)frame))
        return false;

    VkResult result = demo_gpu_present(demo->gpu, demo->targets->swapchain, image_index,
                                       render_done);
    if (result == VK_ERROR_OUT_OF_DATE_KHR || result == VK_SUBOPTIMAL_KHR)
        demo->swapchain_stale = true;
    else if (!demo_vk_check(result, "vkQueuePresentKHR"))
        return false;
    return true;
}

/* load may be NULL: no CPU work, no stall. */
static bool run_offscreen_frame(struct demo_renderer *renderer,
                                const struct demo_targets *targets,
                                const struct demo_options *load, uint64_t frame)
{
    VkSemaphore unused;
    if (!demo_renderer_wait_slot(renderer, &unused))
        return false;
    if (load)
        run_cpu_load(load, frame);

    /* One image per frame slot: the slot's fence guards its image too. */
    uint32_t image_index = (uint32_t)(frame % targets->image_count);
    struct demo_render_target target = render_target(targets, image_index);
    return demo_renderer_submit_frame(renderer, &target, VK_NULL_HANDLE, VK_NULL_HANDLE,
                                      (uint32_t)frame);
}

/*
 * A whole device lifetime before the real one: create, render a few offscreen frames,
 * destroy. Drives the create/destroy paths of whatever layer is loaded.
 */
static bool run_device_cycle(struct demo *demo)
{
    const struct demo_options *options = &demo->options;
    struct demo_pipeline *pipeline = NULL;
    struct demo_targets *targets = NULL;
    struct demo_renderer *renderer = NULL;
    VkExtent2D extent = { options->width, options->height };
    bool ok = false;

    struct demo_gpu *gpu = demo_gpu_create(&demo->instance, VK_NULL_HANDLE, options->submit2);
    if (!gpu)
        return false;
    pipeline = demo_pipeline_create(gpu, VK_FORMAT_R8G8B8A8_UNORM,
                                    VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
    if (!pipeline)
        goto out;
    targets = demo_targets_create_offscreen(gpu, pipeline, extent, options->frames_in_flight);
    if (!targets)
        goto out;
    renderer = demo_renderer_create(gpu, pipeline, options->frames_in_flight, 1,
                                    options->gpu_iters);
    if (!renderer)
        goto out;
    /* No --cpu-ms or --stall-at here: those shape the measured frames only. */
    for (uint64_t frame = 0; frame < DEVICE_CYCLE_FRAMES; frame++) {
        if (!run_offscreen_frame(renderer, targets, NULL, frame))
            goto out;
    }
    ok = true;
out:
    if (!demo_gpu_wait_idle(gpu))
        ok = false;
    demo_renderer_destroy(renderer);
    demo_targets_destroy(gpu, targets);
    demo_pipeline_destroy(gpu, pipeline);
    demo_gpu_destroy(gpu);
    return ok;
}

/* *usage_error: the failure was the command line's (exit status 2), not Vulkan's. */
static bool set_up(struct demo *demo, bool *usage_error)
{
    const struct demo_options *options = &demo->options;
    bool wayland = options->output == DEMO_OUTPUT_WAYLAND;

    if (wayland && !(demo->window = demo_window_create(DEMO_NAME)))
        return false;
    if (!demo_instance_init(&demo->instance, wayland))
        return false;
    resolve_frame_mark(demo);
    if (wayland) {
        if (!demo_window_create_surface(demo->window, demo->instance.handle, &demo->surface))
            return false;
        /* Before any device work, so an unusable --present-mode fails fast. */
        VkPhysicalDevice physical_device;
        uint32_t queue_family;
        if (!demo_physical_device_pick(&demo->instance, demo->surface, &physical_device,
                                       &queue_family))
            return false;
        if (!demo_surface_supports_present_mode(physical_device, demo->surface,
                                                options->present_mode)) {
            *usage_error = true;
            return false;
        }
    }

    /* Instances that only exist, each with a device, around the rendering one. */
    for (uint32_t i = 1; i < options->instances; i++) {
        if (!demo_instance_init(&demo->extra_instances[i], false))
            return false;
        demo->extra_gpus[i] = demo_gpu_create(&demo->extra_instances[i], VK_NULL_HANDLE,
                                              false);
        if (!demo->extra_gpus[i])
            return false;
    }

    for (uint32_t cycle = 0; cycle < options->device_cycles && !stop_requested; cycle++) {
        if (!run_device_cycle(demo))
            return false;
    }

    demo->gpu = demo_gpu_create(&demo->instance, demo->surface, options->submit2);
    if (!demo->gpu)
        return false;
    VkExtent2D extent = { options->width, options->height };
    if (wayland) {
        if (!demo_surface_choose_format(demo->gpu, demo->surface, &demo->surface_format))
            return false;
        demo->pipeline = demo_pipeline_create(demo->gpu, demo->surface_format.format,
                                              VK_IMAGE_LAYOUT_PRESENT_SRC_KHR);
        if (!demo->pipeline)
            return false;
        demo->targets = demo_targets_create_swapchain(demo->gpu, demo->pipeline, demo->surface,
                                                      demo->surface_format, extent,
                                                      options->present_mode, VK_NULL_HANDLE);
    } else {
        demo->pipeline = demo_pipeline_create(demo->gpu, VK_FORMAT_R8G8B8A8_UNORM,
                                              VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
        if (!demo->pipeline)
            return false;
        demo->targets = demo_targets_create_offscreen(demo->gpu, demo->pipeline, extent,
                                                      options->frames_in_flight);
    }
    if (!demo->targets)
        return false;
    demo->renderer = demo_renderer_create(demo->gpu, demo->pipeline, options->frames_in_flight,
                                          options->threads, options->gpu_iters);
    return demo->renderer != NULL;
}

static bool run_frames(struct demo *demo)
{
    const struct demo_options *options = &demo->options;
    for (uint64_t frame = 0; !stop_requested && (options->frames == 0 ||
                                                 frame < options->frames); frame++) {
        if (options->output == DEMO_OUTPUT_WAYLAND) {
            if (!run_wayland_frame(demo, frame))
                return false;
            if (demo->window_closed)    /* that frame never started */
                break;
        } else {
            if (!run_offscreen_frame(demo->renderer, demo->targets, options, frame))
                return false;
            if (demo->frame_mark)
                demo->frame_mark();
        }
        demo->frames_rendered++;
    }
    return true;
}

/* Destroys everything set_up() made, in reverse; accepts a half-built demo. */
static void tear_down(struct demo *demo)
{
    if (demo->gpu) {
        /* Failing to idle leaves nothing better to do than to destroy anyway. */
        demo_gpu_wait_idle(demo->gpu);
        demo_renderer_destroy(demo->renderer);
        demo_targets_destroy(demo->gpu, demo->targets);
        demo_pipeline_destroy(demo->gpu, demo->pipeline);
        demo_gpu_destroy(demo->gpu);
    }
    for (uint32_t i = DEMO_MAX_INSTANCES; i-- > 1;) {
        demo_gpu_destroy(demo->extra_gpus[i]);
        demo_instance_finish(&demo->extra_instances[i]);
    }
    if (demo->surface)
        vkDestroySurfaceKHR(demo->instance.handle, demo->surface, NULL);
    demo_instance_finish(&demo->instance);
    demo_window_destroy(demo->window);
    if (demo->framescope_library)
        dlclose(demo->framescope_library);
}

int main(int argc, char **argv)
{
    static struct demo demo;

    switch (demo_options_parse(&demo.options, argc, argv)) {
    case DEMO_PARSE_RUN:
        break;
    case DEMO_PARSE_EXIT_SUCCESS:
        return EXIT_SUCCESS;
    case DEMO_PARSE_EXIT_USAGE:
        return 2;
    }
    if (!install_signal_handlers())
        return EXIT_FAILURE;

    bool usage_error = false;
    bool ok = set_up(&demo, &usage_error);
    uint64_t start_ns = now_ns();
    if (ok)
        ok = run_frames(&demo);
    double seconds = (double)(now_ns() - start_ns) / 1e9;

    if (ok && !demo.options.quiet) {
        printf(DEMO_NAME ": %" PRIu64 " frames, %.3f s, %.1f fps, %" PRIu64 " draws\n",
               demo.frames_rendered, seconds,
               seconds > 0.0 ? (double)demo.frames_rendered / seconds : 0.0,
               demo.renderer ? demo_renderer_draw_count(demo.renderer) : 0);
        fflush(stdout);
    }

    if (ok && demo.options.no_destroy) {
        /*
         * Leaks every Vulkan object on purpose, like a game that just exits. Only the
         * queue is drained, so no frame is cut off mid-flight.
         */
        demo_gpu_wait_idle(demo.gpu);
        return EXIT_SUCCESS;
    }
    tear_down(&demo);
    if (usage_error)
        return 2;
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
