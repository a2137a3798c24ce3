/*
 * framescope-demo: set-up, the frame loop and tear-down. See demo.h for the other files and
 * --help for what each knob does.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "demo-app.h"


/*
 * Provided by libframescope when framescope is in the process. Weak, so the demo needs no
 * link to it; default visibility, so -fvisibility=hidden cannot bind it to NULL at link time.
 */
void fscope_frame_mark(void) __attribute__((weak, visibility("default")));

volatile sig_atomic_t stop_requested;


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

struct demo_render_target render_target(const struct demo_targets *targets,
                                        uint32_t index)
{
    return (struct demo_render_target){
        .image = targets->images[index].image,
        .framebuffer = targets->images[index].framebuffer,
        .extent = targets->extent,
    };
}


/*
 * The old swapchain's images may still be on the queue: wait, then retire them. Only the
 * thread that acquires calls this.
 */
bool recreate_swapchain(struct demo *demo)
{
    /* The submit and present threads still hold frames of the old swapchain. */
    if (demo->split && !split_drain(demo->split))
        return false;
    /* --no-fence-wait keeps no fence that could tell what is still running. */
    bool idle = demo->options.no_fence_wait ? demo_gpu_wait_device_idle(demo->gpu)
                                            : demo_gpu_wait_idle(demo->gpu);
    if (!idle)
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
    return !demo->options.no_fence_wait ||
           demo_renderer_record_images(demo->renderer, fresh,
                                       VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT);
}

/*
 * Acquires the next swapchain image, recreating the swapchain while it is out of date.
 * Either image_acquired or acquire_fence is VK_NULL_HANDLE.
 */
bool acquire_image(struct demo *demo, VkSemaphore image_acquired, VkFence acquire_fence,
                   uint32_t *ret_image_index)
{
    for (int attempt = 0; attempt < MAX_ACQUIRE_RETRIES; attempt++) {
        VkResult result = vkAcquireNextImageKHR(demo->gpu->device, demo->targets->swapchain,
                                                UINT64_MAX, image_acquired, acquire_fence,
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

/* Gives the frame's first batch the next gate value to wait on, when there is a gate. */
static void gate_frame(struct demo *demo, struct demo_frame_sync *sync)
{
    if (!demo->gate)
        return;
    sync->gate = demo_gate_semaphore(demo->gate);
    sync->gate_value = demo_gate_next_value(demo->gate);
}

static bool gate_after_submit(struct demo *demo, const struct demo_frame_sync *sync)
{
    return !demo->gate || demo_gate_after_submit(demo->gate, sync->gate_value);
}

/*
 * A present may only wait on a semaphore whose signal depends on nothing that is still
 * unsignalled, so a gated frame is presented only once the host has opened its gate.
 */
bool await_gate(struct demo *demo, const struct demo_frame_sync *sync)
{
    return !sync->gate || demo_gate_wait_signalled(demo->gate, sync->gate_value);
}

/* Submits one frame on the main device and does what the gate wants right after that. */
bool submit_frame(struct demo *demo, const struct demo_render_target *target,
                  struct demo_frame_sync *sync, uint64_t frame)
{
    gate_frame(demo, sync);
    return demo_renderer_submit_frame(demo->renderer, target, sync, (uint32_t)frame) &&
           gate_after_submit(demo, sync);
}

/* An out-of-date or suboptimal present marks the swapchain for recreation; else checks. */
static bool present_frame(struct demo *demo, uint32_t image_index,
                          const struct demo_frame_sync *sync)
{
    if (!await_gate(demo, sync))
        return false;
    VkResult result = demo_gpu_present(demo->gpu, demo->targets->swapchain, image_index,
                                       sync->render_done);
    if (result == VK_ERROR_OUT_OF_DATE_KHR || result == VK_SUBOPTIMAL_KHR)
        demo->swapchain_stale = true;
    else if (!demo_vk_check(result, "vkQueuePresentKHR"))
        return false;
    return true;
}

/* Dispatches Wayland events; *ret_closed when the compositor asked the window to close. */
bool dispatch_window(struct demo *demo, bool *ret_closed)
{
    if (!demo_window_dispatch(demo->window))
        return false;
    *ret_closed = demo_window_close_requested(demo->window);
    demo->window_closed = *ret_closed;
    return true;
}

bool recreate_due(const struct demo *demo, uint64_t frame)
{
    uint64_t every = demo->options.recreate_every;
    return every > 0 && frame > 0 && frame % every == 0;
}

static bool run_wayland_frame(struct demo *demo, uint64_t frame)
{
    const struct demo_options *options = &demo->options;

    bool closed;
    if (!dispatch_window(demo, &closed))
        return false;
    if (closed)
        return true;

    VkSemaphore image_acquired;
    if (!demo_renderer_wait_slot(demo->renderer, &image_acquired))
        return false;
    if (recreate_due(demo, frame))
        demo->swapchain_stale = true;
    if (demo->swapchain_stale && !recreate_swapchain(demo))
        return false;

    uint32_t image_index;
    if (!acquire_image(demo, image_acquired, VK_NULL_HANDLE, &image_index))
        return false;

    run_cpu_load(options, frame);
    allocate_memory(demo, frame);
    create_pipelines(demo, frame, demo->surface_format.format, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR);
    if (!leak_memory(demo, frame))
        return false;

    struct demo_render_target target = render_target(demo->targets, image_index);
    struct demo_frame_sync sync = {
        .image_acquired = image_acquired,
        .render_done = demo->targets->images[image_index].render_done,
    };
    if (!submit_frame(demo, &target, &sync, frame))
        return false;
    if (options->serial && !demo_renderer_wait_submitted(demo->renderer))
        return false;
    if (options->frame_callback && !demo_window_request_frame(demo->window))
        return false;
    if (!present_frame(demo, image_index, &sync))
        return false;
    return !options->frame_callback || demo_window_wait_frame(demo->window);
}

/*
 * --no-fence-wait: the acquire fence is the only throttle. Once it has signalled, the image
 * is free and its recording may be submitted again: no semaphore between the two.
 */
static bool run_no_fence_wait_frame(struct demo *demo, uint64_t frame)
{
    bool closed;
    if (!dispatch_window(demo, &closed))
        return false;
    if (closed)
        return true;

    if (recreate_due(demo, frame))
        demo->swapchain_stale = true;
    if (demo->swapchain_stale && !recreate_swapchain(demo))
        return false;

    uint32_t image_index;
    if (!acquire_image(demo, VK_NULL_HANDLE, demo->acquire_fence, &image_index))
        return false;
    if (!demo_vk_check(vkWaitForFences(demo->gpu->device, 1, &demo->acquire_fence, VK_TRUE,
                                       UINT64_MAX),
                       "vkWaitForFences") ||
        !demo_vk_check(vkResetFences(demo->gpu->device, 1, &demo->acquire_fence),
                       "vkResetFences"))
        return false;

    run_cpu_load(&demo->options, frame);
    allocate_memory(demo, frame);
    create_pipelines(demo, frame, demo->surface_format.format, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR);
    if (!leak_memory(demo, frame))
        return false;

    struct demo_frame_sync sync = {
        .render_done = demo->targets->images[image_index].render_done,
    };
    gate_frame(demo, &sync);
    if (!demo_renderer_submit_image(demo->renderer, image_index, &sync) ||
        !gate_after_submit(demo, &sync))
        return false;
    return present_frame(demo, image_index, &sync);
}

/* One frame slot's wait and submit, with no load and no gate: extra devices only. */
bool render_offscreen(struct demo_renderer *renderer, const struct demo_targets *targets,
                      uint64_t frame)
{
    VkSemaphore unused;
    if (!demo_renderer_wait_slot(renderer, &unused))
        return false;
    /* One image per frame slot: the slot's fence guards its image too. */
    uint32_t image_index = (uint32_t)(frame % targets->image_count);
    struct demo_render_target target = render_target(targets, image_index);
    struct demo_frame_sync sync = { 0 };
    return demo_renderer_submit_frame(renderer, &target, &sync, (uint32_t)frame);
}

static bool run_offscreen_frame(struct demo *demo, uint64_t frame)
{
    VkSemaphore unused;
    if (!demo_renderer_wait_slot(demo->renderer, &unused))
        return false;
    run_cpu_load(&demo->options, frame);
    allocate_memory(demo, frame);
    create_pipelines(demo, frame, VK_FORMAT_R8G8B8A8_UNORM,
                     VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
    if (!leak_memory(demo, frame))
        return false;

    uint32_t image_index = (uint32_t)(frame % demo->targets->image_count);
    if (demo->options.record_once) {
        /* The slot's fence guards its image and the image's recording. */
        if (!demo_renderer_submit_recorded(demo->renderer, image_index))
            return false;
    } else {
        struct demo_render_target target = render_target(demo->targets, image_index);
        struct demo_frame_sync sync = { 0 };
        if (!submit_frame(demo, &target, &sync, frame))
            return false;
    }
    return !demo->options.serial || demo_renderer_wait_submitted(demo->renderer);
}

/* *usage_error: the failure was the command line's (exit status 2), not Vulkan's. */
static bool set_up(struct demo *demo, bool *usage_error)
{
    const struct demo_options *options = &demo->options;
    bool wayland = options->output == DEMO_OUTPUT_WAYLAND;

    if (wayland && !(demo->window = demo_window_create(DEMO_NAME)))
        return false;
    if (options->pass_count > 0 || options->pipelines_at >= 0)
        demo_debug_utils = DEMO_DEBUG_UTILS_REQUIRED;
    else if (options->draws || options->leak_kb)
        demo_debug_utils = DEMO_DEBUG_UTILS_IF_AVAILABLE;
    if (!demo_instance_init(&demo->instance, wayland, options->api_version))
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
    struct demo_gpu_config extra_config = { .vk12_features = options->vk12_features };
    for (uint32_t i = 1; i < options->instances; i++) {
        if (!demo_instance_init(&demo->extra_instances[i], false, options->api_version))
            return false;
        demo->extra_gpus[i] = demo_gpu_create(&demo->extra_instances[i], VK_NULL_HANDLE,
                                              &extra_config);
        if (!demo->extra_gpus[i])
            return false;
    }

    for (uint32_t cycle = 0; cycle < options->device_cycles && !stop_requested; cycle++) {
        if (!run_device_cycle(demo))
            return false;
    }

    struct demo_gpu_config config = {
        .submit2 = options->submit2,
        .vk12_features = options->vk12_features,
        .timeline_semaphore = options->host_delay || options->late_signal,
        .transfer_queue = options->transfer_queue,
        .extra_submits = options->submits - 1,
    };
    demo->gpu = demo_gpu_create(&demo->instance, demo->surface, &config);
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
    if (!demo->renderer)
        return false;
    if (options->pass_count &&
        !demo_renderer_set_passes(demo->renderer, demo->instance.handle, options->passes,
                                  options->pass_count))
        return false;
    demo_renderer_set_pass_spike(demo->renderer, options->pass_spike_at, options->pass_spike_iters);
    if (options->draws || options->leak_kb) {
        /* For a profiler that reports by name; no name without VK_EXT_debug_utils. */
        demo_gpu_name(demo->gpu, VK_OBJECT_TYPE_QUEUE, (uint64_t)(uintptr_t)demo->gpu->queue,
                      "demo queue");
        demo_gpu_name(demo->gpu, VK_OBJECT_TYPE_RENDER_PASS,
                      (uint64_t)(uintptr_t)demo->pipeline->frame_pass, "frame pass");
    }
    if (options->draws) {
        struct demo_draws_config draws_config = {
            .draws = options->draws,
            .threads = options->record_threads,
            .frames_in_flight = options->frames_in_flight,
            .secondary = options->secondary,
            .redundant_binds = options->redundant_binds,
            .wide_binds = options->wide_binds,
        };
        demo->draws = demo_draws_create(demo->gpu, &demo->instance, demo->pipeline,
                                        &draws_config);
        if (!demo->draws)
            return false;
        demo_renderer_set_draws(demo->renderer, demo->draws);
    }
    if (options->self_timestamps && !demo_renderer_enable_self_timestamps(demo->renderer))
        return false;

    if (options->host_delay || options->late_signal) {
        demo->gate = demo_gate_create(demo->gpu, options->host_delay ? DEMO_GATE_HOST_DELAY
                                                                     : DEMO_GATE_LATE_SIGNAL,
                                      options->host_delay_ms);
        if (!demo->gate)
            return false;
    }
    if (options->no_fence_wait) {
        VkFenceCreateInfo fence_info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
        if (!demo_vk_check(vkCreateFence(demo->gpu->device, &fence_info, NULL,
                                         &demo->acquire_fence),
                           "vkCreateFence") ||
            !demo_renderer_record_images(demo->renderer, demo->targets,
                                         VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT))
            return false;
    }
    if (options->record_once &&
        !demo_renderer_record_images(demo->renderer, demo->targets,
                                     options->record_once == DEMO_RECORD_ONCE_SIMULTANEOUS
                                         ? VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT
                                         : 0))
        return false;
    /* Last, so that it renders only while the measured frames do. */
    return options->devices < 2 || second_device_start(demo);
}

/* --sleep-limit: the app's own limiter, to the next deadline on its timer; one missed by
 * more than a period starts the count again (no burst to catch up). */
static void sleep_limit(struct demo *demo)
{
    int64_t period = 1000000000 / demo->options.sleep_limit_hz;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    demo->next_deadline_ns += period;
    if (demo->next_deadline_ns < now_ns - period || demo->next_deadline_ns > now_ns + period)
        demo->next_deadline_ns = now_ns + period;
    const struct timespec until = { demo->next_deadline_ns / 1000000000,
                                    demo->next_deadline_ns % 1000000000 };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR &&
           !stop_requested)
        ;
}

static bool run_frames(struct demo *demo)
{
    const struct demo_options *options = &demo->options;
    if (options->thread_split)
        return run_split_frames(demo);

    for (uint64_t frame = 0; !stop_requested && (options->frames == 0 ||
                                                 frame < options->frames); frame++) {
        if (options->output == DEMO_OUTPUT_WAYLAND) {
            bool ok = options->no_fence_wait ? run_no_fence_wait_frame(demo, frame)
                                             : run_wayland_frame(demo, frame);
            if (!ok)
                return false;
            if (demo->window_closed)    /* that frame never started */
                break;
        } else {
            if (!run_offscreen_frame(demo, frame))
                return false;
            if (demo->frame_mark)
                demo->frame_mark();
        }
        demo->frames_rendered++;
        if (options->sleep_limit_hz)
            sleep_limit(demo);
        if (options->transfer_queue && !demo_gpu_submit_transfer(demo->gpu))
            return false;
        if (options->fork_child && demo->frames_rendered == FORK_AFTER_FRAMES && !fork_child())
            return false;
    }
    return true;
}

/* Destroys everything set_up() made, in reverse; accepts a half-built demo. */
static void tear_down(struct demo *demo)
{
    second_device_stop(&demo->second);
    /* Every frame's wait on the gate has to be met before the queue can go idle. */
    demo_gate_release(demo->gate);
    if (demo->gpu) {
        /* Failing to idle leaves nothing better to do than to destroy anyway. */
        if (demo->options.no_fence_wait)
            demo_gpu_wait_device_idle(demo->gpu);
        else
            demo_gpu_wait_idle(demo->gpu);
        split_destroy(demo->split);
        if (demo->acquire_fence)
            vkDestroyFence(demo->gpu->device, demo->acquire_fence, NULL);
        demo_gate_destroy(demo->gate);
        demo_renderer_destroy(demo->renderer);
        demo_draws_destroy(demo->draws);
        for (uint64_t i = 0; i < demo->leak_count; i++)
            vkFreeMemory(demo->gpu->device, demo->leaks[i], NULL);
        demo_targets_destroy(demo->gpu, demo->targets);
        /* Right after the swapchain: an order some applications use at exit. */
        if (demo->options.disconnect_early)
            demo_window_disconnect(demo->window);
        demo_pipeline_destroy(demo->gpu, demo->pipeline);
        demo_gpu_destroy(demo->gpu);
    }
    free(demo->leaks);
    offscreen_device_finish(&demo->second.device);
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

/* --die: ends the process as a killed or crashed game ends, with the signal's default action
 * and no clean-up. Says first how many frames were presented, for the test to compare. Not
 * instrumented: in a sanitizer build the invalid write must be a crash, not a report. */
__attribute__((no_sanitize_undefined, no_sanitize_address))
static void die(int signo, uint64_t frames)
{
    fprintf(stderr, DEMO_NAME ": presented %" PRIu64 " frames; dying of %s\n", frames,
            strsignal(signo));
    signal(signo, SIG_DFL);
    if (signo == SIGSEGV) {
        volatile int *nowhere = NULL;
        *nowhere = 1; /* a real crash, not a raised signal */
    }
    raise(signo);
}

static void print_draws_stats(const struct demo_options *options, const struct demo_draws *draws)
{
    struct demo_draws_stats stats;
    demo_draws_get_stats(draws, &stats);
    printf(DEMO_NAME ": draws %" PRIu32 " per frame on %" PRIu32 " threads (%s), binds per "
           "frame: vertex %" PRIu64 " index %" PRIu64 " sets %" PRIu64 " pipeline %" PRIu64
           ", redundant vertex %" PRIu64 " index %" PRIu64 " sets %" PRIu64 " pipeline %"
           PRIu64 "; recording %.1f ns per command (median of recordings %.1f)\n",
           options->draws, options->record_threads, options->secondary ? "secondary" : "primary",
           stats.binds[DEMO_BIND_VERTEX], stats.binds[DEMO_BIND_INDEX],
           stats.binds[DEMO_BIND_SETS], stats.binds[DEMO_BIND_PIPELINE],
           stats.redundant[DEMO_BIND_VERTEX], stats.redundant[DEMO_BIND_INDEX],
           stats.redundant[DEMO_BIND_SETS], stats.redundant[DEMO_BIND_PIPELINE],
           stats.ns_per_command, stats.ns_per_command_median);
    fflush(stdout);
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
    if (ok && demo.options.die_signal)
        die(demo.options.die_signal, demo.frames_rendered);
    double seconds = (double)(now_ns() - start_ns) / 1e9;
    /* The second device renders for exactly as long as the measured frames. */
    if (!second_device_stop(&demo.second)) {
        fprintf(stderr, DEMO_NAME ": the second device stopped rendering\n");
        ok = false;
    }

    if (ok && !demo.options.quiet) {
        printf(DEMO_NAME ": %" PRIu64 " frames, %.3f s, %.1f fps, %" PRIu64 " draws\n",
               demo.frames_rendered, seconds,
               seconds > 0.0 ? (double)demo.frames_rendered / seconds : 0.0,
               demo.renderer ? demo_renderer_draw_count(demo.renderer) : 0);
        if (demo.second.device.renderer)
            printf(DEMO_NAME ": second device: %" PRIu64 " frames, %" PRIu64 " draws\n",
                   demo.second.frames, demo_renderer_draw_count(demo.second.device.renderer));
        fflush(stdout);
    }
    if (ok && demo.options.self_timestamps) {
        uint64_t timed;
        double mean = demo_renderer_self_gpu_ms(demo.renderer, &timed);
        /* Printed even with --quiet: it is what the option is for. */
        printf(DEMO_NAME ": own GPU timestamps: mean %.6f ms per frame over %" PRIu64
               " frames\n", mean, timed);
        fflush(stdout);
    }
    /* Both printed even with --quiet, like the line above: tests read them. */
    if (ok && demo.draws)
        print_draws_stats(&demo.options, demo.draws);
    if (ok && demo.options.leak_kb) {
        printf(DEMO_NAME ": leaked %" PRIu32 " KiB a frame, %" PRIu64 " allocations\n",
               demo.options.leak_kb, demo.leak_count);
        fflush(stdout);
    }

    if (ok && demo.options.no_destroy) {
        /*
         * Leaks every Vulkan object on purpose, like a game that just exits. Only the
         * queues are drained, so no frame is cut off mid-flight.
         */
        demo_gate_release(demo.gate);
        demo_gpu_wait_idle(demo.gpu);
        if (demo.second.device.gpu)
            demo_gpu_wait_idle(demo.second.device.gpu);
        return EXIT_SUCCESS;
    }
    tear_down(&demo);
    if (usage_error)
        return 2;
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
