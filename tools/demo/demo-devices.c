/* framescope-demo: devices besides the one that draws the window (--device-cycles,
 * --devices 2), each rendering offscreen. */
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

/* ---- extra devices ---- */

/* Offscreen targets of frames_in_flight images on a device of its own. */
static bool offscreen_device_init(struct offscreen_device *device, const struct demo *demo,
                                  uint32_t gpu_iters)
{
    const struct demo_options *options = &demo->options;
    VkExtent2D extent = { options->width, options->height };
    struct demo_gpu_config config = {
        .submit2 = options->submit2,
        .vk12_features = options->vk12_features,
    };
    *device = (struct offscreen_device){ 0 };
    device->gpu = demo_gpu_create(&demo->instance, VK_NULL_HANDLE, &config);
    if (!device->gpu)
        return false;
    device->pipeline = demo_pipeline_create(device->gpu, VK_FORMAT_R8G8B8A8_UNORM,
                                            VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL);
    if (!device->pipeline)
        return false;
    device->targets = demo_targets_create_offscreen(device->gpu, device->pipeline, extent,
                                                    options->frames_in_flight);
    if (!device->targets)
        return false;
    device->renderer = demo_renderer_create(device->gpu, device->pipeline,
                                            options->frames_in_flight, 1, gpu_iters);
    return device->renderer != NULL;
}

/* Accepts a half-built device. False when the queue would not idle. */
bool offscreen_device_finish(struct offscreen_device *device)
{
    if (!device->gpu)
        return true;
    bool ok = demo_gpu_wait_idle(device->gpu);
    demo_renderer_destroy(device->renderer);
    demo_targets_destroy(device->gpu, device->targets);
    demo_pipeline_destroy(device->gpu, device->pipeline);
    demo_gpu_destroy(device->gpu);
    *device = (struct offscreen_device){ 0 };
    return ok;
}

/*
 * A whole device lifetime before the real one: create, render a few offscreen frames,
 * destroy. Drives the create/destroy paths of whatever layer is loaded.
 */
bool run_device_cycle(struct demo *demo)
{
    struct offscreen_device device;
    bool ok = offscreen_device_init(&device, demo, demo->options.gpu_iters);
    /* No --cpu-ms or --stall-at here: those shape the measured frames only. */
    for (uint64_t frame = 0; ok && frame < DEVICE_CYCLE_FRAMES; frame++)
        ok = render_offscreen(device.renderer, device.targets, frame);
    if (!offscreen_device_finish(&device))
        ok = false;
    return ok;
}

static void *second_device_main(void *data)
{
    struct second_device *second = data;
    struct offscreen_device *device = &second->device;
    /* main() stops it when the measured frames end, whatever ended them. */
    while (!atomic_load(&second->stop)) {
        if (!render_offscreen(device->renderer, device->targets, second->frames)) {
            second->failed = true;
            break;
        }
        second->frames++;
    }
    return NULL;
}

bool second_device_start(struct demo *demo)
{
    struct second_device *second = &demo->second;
    if (!offscreen_device_init(&second->device, demo, demo->options.second_device_gpu_iters))
        return false;
    atomic_init(&second->stop, false);
    if (pthread_create(&second->thread, NULL, second_device_main, second) != 0) {
        fprintf(stderr, DEMO_NAME ": cannot start the --devices 2 thread\n");
        return false;
    }
    second->started = true;
    return true;
}

/* Joins the second device's thread; its objects stay. False when it had failed. */
bool second_device_stop(struct second_device *second)
{
    if (!second->started)
        return true;
    atomic_store(&second->stop, true);
    pthread_join(second->thread, NULL);
    second->started = false;
    return !second->failed;
}
