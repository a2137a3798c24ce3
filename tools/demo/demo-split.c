/* framescope-demo --thread-split: acquire, submit and present, each on a thread of its own. */
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

/* ---- --thread-split ---- */

/* What the acquire thread hands on for one frame. */
struct split_frame {
    uint64_t frame;
    VkSwapchainKHR swapchain;
    uint32_t image_index;
    struct demo_render_target target;
    struct demo_frame_sync sync;    /* the submit thread fills in the gate */
};

/*
 * Three stages, each on its own thread and each in frame order: acquire (the main thread),
 * submit-then-wait-on-the-fence, present. Frame f lives in frames[f % depth] and uses
 * image_acquired[f % depth].
 */
struct split {
    struct demo *demo;
    uint32_t depth;             /* --frames-in-flight */
    VkSemaphore image_acquired[DEMO_MAX_FRAMES_IN_FLIGHT];
    pthread_t submit_thread, present_thread;
    bool submit_started, present_started;
    bool lock_ready;
    pthread_mutex_t lock;
    pthread_cond_t changed;     /* broadcast on every change below */
    /* Guarded by lock. */
    struct split_frame frames[DEMO_MAX_FRAMES_IN_FLIGHT];
    uint64_t posted;            /* frames acquired and handed to the submit thread */
    uint64_t submitted;         /* ... submitted and handed to the present thread */
    uint64_t retired;           /* ... whose fence the submit thread has waited on */
    uint64_t presented;
    bool stopping;              /* nothing more will be posted */
    bool failed;                /* the submit or present thread gave up */
    bool stale;                 /* a present answered OUT_OF_DATE or SUBOPTIMAL */
};

static void *split_submit_main(void *data)
{
    struct split *split = data;
    struct demo *demo = split->demo;

    pthread_mutex_lock(&split->lock);
    for (;;) {
        while (split->submitted == split->posted && !split->stopping)
            pthread_cond_wait(&split->changed, &split->lock);
        if (split->submitted == split->posted)
            break;
        struct split_frame job = split->frames[split->submitted % split->depth];
        pthread_mutex_unlock(&split->lock);

        bool ok = submit_frame(demo, &job.target, &job.sync, job.frame);

        pthread_mutex_lock(&split->lock);
        if (!ok) {
            split->failed = true;
            pthread_cond_broadcast(&split->changed);
            break;
        }
        split->frames[split->submitted % split->depth].sync = job.sync;
        split->submitted++;
        pthread_cond_broadcast(&split->changed);
        pthread_mutex_unlock(&split->lock);

        ok = demo_renderer_wait_submitted(demo->renderer);

        pthread_mutex_lock(&split->lock);
        if (!ok) {
            split->failed = true;
            pthread_cond_broadcast(&split->changed);
            break;
        }
        split->retired++;
        pthread_cond_broadcast(&split->changed);
    }
    pthread_mutex_unlock(&split->lock);
    return NULL;
}

static void *split_present_main(void *data)
{
    struct split *split = data;

    pthread_mutex_lock(&split->lock);
    for (;;) {
        while (split->presented == split->submitted && !split->failed &&
               !(split->stopping && split->submitted == split->posted))
            pthread_cond_wait(&split->changed, &split->lock);
        if (split->presented == split->submitted || split->failed)
            break;
        struct split_frame job = split->frames[split->presented % split->depth];
        pthread_mutex_unlock(&split->lock);

        bool ok = await_gate(split->demo, &job.sync);
        VkResult result = VK_SUCCESS;
        if (ok)
            result = demo_gpu_present(split->demo->gpu, job.swapchain, job.image_index,
                                      job.sync.render_done);

        pthread_mutex_lock(&split->lock);
        if (result == VK_ERROR_OUT_OF_DATE_KHR || result == VK_SUBOPTIMAL_KHR) {
            split->stale = true;
        } else if (!ok || !demo_vk_check(result, "vkQueuePresentKHR")) {
            split->failed = true;
            pthread_cond_broadcast(&split->changed);
            break;
        }
        split->presented++;
        pthread_cond_broadcast(&split->changed);
    }
    pthread_mutex_unlock(&split->lock);
    return NULL;
}

/* Waits until every posted frame is retired and presented. False once a stage has failed. */
bool split_drain(struct split *split)
{
    pthread_mutex_lock(&split->lock);
    while (!split->failed &&
           (split->retired != split->posted || split->presented != split->posted))
        pthread_cond_wait(&split->changed, &split->lock);
    bool ok = !split->failed;
    pthread_mutex_unlock(&split->lock);
    return ok;
}

/* Ends the submit and present threads once they have caught up, and joins them. */
static void split_stop(struct split *split)
{
    if (split->lock_ready) {
        pthread_mutex_lock(&split->lock);
        split->stopping = true;
        pthread_cond_broadcast(&split->changed);
        pthread_mutex_unlock(&split->lock);
    }
    if (split->submit_started)
        pthread_join(split->submit_thread, NULL);
    if (split->present_started)
        pthread_join(split->present_thread, NULL);
    split->submit_started = false;
    split->present_started = false;
}

/* Accepts NULL and a half-built split. Stops its threads; the caller idles the queue. */
void split_destroy(struct split *split)
{
    if (!split)
        return;
    split_stop(split);
    if (split->lock_ready) {
        pthread_cond_destroy(&split->changed);
        pthread_mutex_destroy(&split->lock);
    }
    for (uint32_t i = 0; i < split->depth; i++) {
        if (split->image_acquired[i])
            vkDestroySemaphore(split->demo->gpu->device, split->image_acquired[i], NULL);
    }
    free(split);
}

static struct split *split_create(struct demo *demo)
{
    struct split *split = calloc(1, sizeof(*split));
    if (!split) {
        fprintf(stderr, DEMO_NAME ": out of memory\n");
        return NULL;
    }
    split->demo = demo;
    split->depth = demo->options.frames_in_flight;
    for (uint32_t i = 0; i < split->depth; i++) {
        VkSemaphoreCreateInfo semaphore_info = {
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
        };
        if (!demo_vk_check(vkCreateSemaphore(demo->gpu->device, &semaphore_info, NULL,
                                             &split->image_acquired[i]),
                           "vkCreateSemaphore"))
            goto error;
    }
    if (pthread_mutex_init(&split->lock, NULL) != 0)
        goto error_threads;
    if (pthread_cond_init(&split->changed, NULL) != 0) {
        pthread_mutex_destroy(&split->lock);
        goto error_threads;
    }
    split->lock_ready = true;
    if (pthread_create(&split->submit_thread, NULL, split_submit_main, split) != 0)
        goto error_threads;
    split->submit_started = true;
    if (pthread_create(&split->present_thread, NULL, split_present_main, split) != 0)
        goto error_threads;
    split->present_started = true;
    return split;

error_threads:
    fprintf(stderr, DEMO_NAME ": cannot start the --thread-split threads\n");
error:
    split_destroy(split);
    return NULL;
}


/*
 * The acquire thread's side of --thread-split. A frame is acquired only once the previous
 * one has been presented, which keeps one image acquired at a time as a UINT64_MAX acquire
 * timeout requires (and keeps acquire and present, which both need the swapchain
 * externally synchronised, apart); and only once frame f - depth is retired, when its
 * semaphore and slot are free again.
 */
bool run_split_frames(struct demo *demo)
{
    const struct demo_options *options = &demo->options;
    struct split *split = split_create(demo);
    if (!split)
        return false;
    demo->split = split;

    bool ok = true;
    for (uint64_t frame = 0; !stop_requested && (options->frames == 0 ||
                                                 frame < options->frames); frame++) {
        bool closed;
        if (!dispatch_window(demo, &closed)) {
            ok = false;
            break;
        }
        if (closed)
            break;
        /* The game's part of frame f runs while the other threads finish frame f - 1. */
        run_cpu_load(options, frame);
        if (!leak_memory(demo, frame)) {
            ok = false;
            break;
        }

        pthread_mutex_lock(&split->lock);
        while (!split->failed &&
               !(split->presented >= frame && split->retired + split->depth > frame))
            pthread_cond_wait(&split->changed, &split->lock);
        bool failed = split->failed;
        if (split->stale)
            demo->swapchain_stale = true;
        split->stale = false;
        pthread_mutex_unlock(&split->lock);
        if (failed) {
            ok = false;
            break;
        }

        if (recreate_due(demo, frame))
            demo->swapchain_stale = true;
        if (demo->swapchain_stale && !recreate_swapchain(demo)) {
            ok = false;
            break;
        }
        VkSemaphore image_acquired = split->image_acquired[frame % split->depth];
        uint32_t image_index;
        if (!acquire_image(demo, image_acquired, VK_NULL_HANDLE, &image_index)) {
            ok = false;
            break;
        }

        struct split_frame entry = {
            .frame = frame,
            .swapchain = demo->targets->swapchain,
            .image_index = image_index,
            .target = render_target(demo->targets, image_index),
            .sync = {
                .image_acquired = image_acquired,
                .render_done = demo->targets->images[image_index].render_done,
            },
        };
        pthread_mutex_lock(&split->lock);
        split->frames[frame % split->depth] = entry;
        split->posted++;
        pthread_cond_broadcast(&split->changed);
        pthread_mutex_unlock(&split->lock);

        if (options->fork_child && frame + 1 == FORK_AFTER_FRAMES && !fork_child()) {
            ok = false;
            break;
        }
    }

    /* The semaphores stay until tear_down() has idled the queue. */
    split_stop(split);
    if (split->failed)
        ok = false;
    demo->frames_rendered = split->presented;
    return ok;
}
