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

#include "demo.h"

/* Frames a --device-cycles device renders before it is destroyed. */
#define DEVICE_CYCLE_FRAMES 3
/* Out-of-date answers in a row from acquire before the demo gives up on the surface. */
#define MAX_ACQUIRE_RETRIES 8
/* --fork-child forks once this many frames are done: past start-up, well before the end. */
#define FORK_AFTER_FRAMES 10

/*
 * Provided by libframescope when framescope is in the process. Weak, so the demo needs no
 * link to it; default visibility, so -fvisibility=hidden cannot bind it to NULL at link time.
 */
void fscope_frame_mark(void) __attribute__((weak, visibility("default")));

static volatile sig_atomic_t stop_requested;

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

/* --fork-helper-at: a child that forks without exec and lives on past the demo, as crash
 * handlers' helpers do. It inherits every descriptor the process had at the fork, the
 * profiler's among them, and keeps what it inherited until its stdin closes. */
static void fork_helper(void)
{
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        char byte;
        while (read(STDIN_FILENO, &byte, 1) > 0)
            ;
        _exit(0);
    }
    if (child > 0)
        printf("helper %d\n", (int)child);
    else
        perror("framescope-demo: fork");
    fflush(stdout);
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

/* --lock-wait-ms: a worker takes the lock when asked and holds it for the time given; the
 * frame then waits for it, asleep in pthread_mutex_lock (no Vulkan call involved). */
static struct {
    pthread_mutex_t lock, state_lock;
    pthread_cond_t changed;
    uint64_t asked, taken;
    double hold_ms;
    bool started;
} lock_worker = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                  PTHREAD_COND_INITIALIZER, 0, 0, 0, false };

static void *lock_worker_main(void *arg)
{
    (void)arg;
    uint64_t done = 0;
    for (;;) {
        pthread_mutex_lock(&lock_worker.state_lock);
        while (lock_worker.asked == done)
            pthread_cond_wait(&lock_worker.changed, &lock_worker.state_lock);
        done = lock_worker.asked;
        pthread_mutex_lock(&lock_worker.lock);
        lock_worker.taken = done;
        pthread_cond_broadcast(&lock_worker.changed);
        pthread_mutex_unlock(&lock_worker.state_lock);
        sleep_ms(lock_worker.hold_ms);
        pthread_mutex_unlock(&lock_worker.lock);
    }
    return NULL;
}

static void wait_for_worker_lock(double ms)
{
    if (!lock_worker.started) {
        pthread_t thread;
        lock_worker.hold_ms = ms;
        lock_worker.started = pthread_create(&thread, NULL, lock_worker_main, NULL) == 0;
        if (!lock_worker.started)
            return;
        pthread_setname_np(thread, "demo-lock");
        pthread_detach(thread);
    }
    pthread_mutex_lock(&lock_worker.state_lock);
    uint64_t ask = ++lock_worker.asked;
    pthread_cond_broadcast(&lock_worker.changed);
    while (lock_worker.taken != ask)
        pthread_cond_wait(&lock_worker.changed, &lock_worker.state_lock);
    pthread_mutex_unlock(&lock_worker.state_lock);
    pthread_mutex_lock(&lock_worker.lock); /* asleep until the worker lets go */
    pthread_mutex_unlock(&lock_worker.lock);
}

static void *cpu_hog_main(void *arg)
{
    (void)arg;
    for (volatile uint64_t spins = 0;; spins++)
        ;
    return NULL;
}

/* --fault-mb and --faults-at: an unnamed file on disk, its pages dropped from the cache, mapped
 * and read back page by page. */
static void fault_in_file(const struct demo_options *options, uint32_t mb)
{
    static int fd = -2;
    size_t bytes = (size_t)mb << 20;
    if (fd == -2) {
        /* One file for --fault-mb and --faults-at: as large as the larger. */
        size_t size = (size_t)(options->fault_mb > options->faults_mb ? options->fault_mb
                                                                       : options->faults_mb) << 20;
        fd = open("/var/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
            fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        char block[65536];
        memset(block, 0x5a, sizeof(block));
        for (size_t done = 0; fd >= 0 && done < size; done += sizeof(block))
            if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block)) {
                close(fd);
                fd = -1;
            }
        if (fd >= 0)
            fdatasync(fd); /* written back, so the cache can drop it */
        if (fd < 0)
            fprintf(stderr, DEMO_NAME ": --fault-mb: cannot make the file: %s\n",
                    strerror(errno));
    }
    if (fd < 0)
        return;
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    volatile unsigned char *map = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return;
    unsigned sum = 0;
    for (size_t at = 0; at < bytes; at += 4096)
        sum += map[at];
    munmap((void *)map, bytes);
    (void)sum;
}

/* The CPU side of a frame's load: --cpu-ms, --lock-wait-ms and --fault-mb every frame,
 * --stall-ms once. */
static void run_cpu_load(const struct demo_options *options, uint64_t frame)
{
    if (options->fault_mb)
        fault_in_file(options, options->fault_mb);
    if ((int64_t)frame == options->faults_at)
        fault_in_file(options, options->faults_mb);
    static bool hog_started;
    if (options->cpu_hog && !hog_started) {
        pthread_t thread;
        hog_started = pthread_create(&thread, NULL, cpu_hog_main, NULL) == 0;
        if (hog_started) {
            pthread_setname_np(thread, "demo-cpu-hog");
            pthread_detach(thread);
        }
    }
    burn_cpu(options->cpu_ms);
    if (options->lock_wait_ms > 0)
        wait_for_worker_lock(options->lock_wait_ms);
    if ((int64_t)frame == options->stall_at)
        sleep_ms(options->stall_ms);
    if ((int64_t)frame == options->fork_helper_at)
        fork_helper();
    if ((int64_t)frame == options->cpu_spike_at)
        burn_cpu(options->cpu_spike_ms);
}

/* --alloc-at: a level's buffers allocated mid-run, on the render thread: host-visible memory,
 * every page written (as an upload would), then freed. */
static void allocate_memory(struct demo *demo, uint64_t frame)
{
    if ((int64_t)frame != demo->options.alloc_at)
        return;
    const VkPhysicalDeviceMemoryProperties *props = &demo->gpu->memory_properties;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < props->memoryTypeCount && type == UINT32_MAX; i++)
        if (props->memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
            type = i;
    if (type == UINT32_MAX)
        return;
    VkDeviceSize size = (VkDeviceSize)demo->options.alloc_mb << 20;
    VkMemoryAllocateInfo info = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = size,
        .memoryTypeIndex = type,
    };
    VkDeviceMemory memory;
    if (vkAllocateMemory(demo->gpu->device, &info, NULL, &memory) != VK_SUCCESS) {
        fprintf(stderr, DEMO_NAME ": --alloc-at: vkAllocateMemory of %u MiB failed\n",
                demo->options.alloc_mb);
        return;
    }
    void *map;
    if (vkMapMemory(demo->gpu->device, memory, 0, size, 0, &map) == VK_SUCCESS) {
        for (VkDeviceSize at = 0; at < size; at += 4096)
            ((volatile unsigned char *)map)[at] = 1;
        vkUnmapMemory(demo->gpu->device, memory);
    }
    vkFreeMemory(demo->gpu->device, memory, NULL);
}

/* --leak-kb: device memory that is allocated every frame and never given back until the
 * end, as a leaking streamer's. Device-local where there is such memory: what a profiler
 * reports as the device's live memory. */
static bool leak_memory(struct demo *demo, uint64_t frame)
{
    if (!demo->options.leak_kb)
        return true;
    if (demo->leak_count == demo->leak_capacity) {
        uint64_t capacity = demo->leak_capacity ? 2 * demo->leak_capacity : 64;
        VkDeviceMemory *leaks = realloc(demo->leaks, capacity * sizeof(*leaks));
        if (!leaks) {
            fprintf(stderr, DEMO_NAME ": out of memory\n");
            return false;
        }
        demo->leaks = leaks;
        demo->leak_capacity = capacity;
    }
    const VkPhysicalDeviceMemoryProperties *props = &demo->gpu->memory_properties;
    /* Memory that no resource is bound to may be of any type. */
    uint32_t type = 0;
    for (uint32_t i = 0; i < props->memoryTypeCount; i++) {
        if (props->memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) {
            type = i;
            break;
        }
    }
    VkMemoryAllocateInfo info = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = (VkDeviceSize)demo->options.leak_kb << 10,
        .memoryTypeIndex = type,
    };
    VkDeviceMemory memory;
    if (!demo_vk_check(vkAllocateMemory(demo->gpu->device, &info, NULL, &memory),
                       "vkAllocateMemory (--leak-kb)"))
        return false;
    demo->leaks[demo->leak_count++] = memory;
    char name[32];
    snprintf(name, sizeof(name), "leak %" PRIu64, frame);
    demo_gpu_name(demo->gpu, VK_OBJECT_TYPE_DEVICE_MEMORY, (uint64_t)(uintptr_t)memory, name);
    return true;
}

/* --pipelines-at: a level's materials compiled mid-run, on the render thread. */
static void create_pipelines(struct demo *demo, uint64_t frame, VkFormat format,
                             VkImageLayout layout)
{
    if ((int64_t)frame != demo->options.pipelines_at)
        return;
    for (uint32_t i = 0; i < demo->options.pipelines; i++) {
        struct demo_pipeline *p = demo_pipeline_create(demo->gpu, format, layout);
        if (!p)
            continue;
        /* Each named "material N" as an engine names its materials' pipelines. */
        char name[32];
        snprintf(name, sizeof(name), "material %u", i);
        demo_gpu_name(demo->gpu, VK_OBJECT_TYPE_PIPELINE, (uint64_t)(uintptr_t)p->pipeline,
                      name);
        demo_pipeline_destroy(demo->gpu, p);
    }
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

static bool split_drain(struct split *split);

/*
 * The old swapchain's images may still be on the queue: wait, then retire them. Only the
 * thread that acquires calls this.
 */
static bool recreate_swapchain(struct demo *demo)
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
    return !demo->options.no_fence_wait || demo_renderer_record_images(demo->renderer, fresh);
}

/*
 * Acquires the next swapchain image, recreating the swapchain while it is out of date.
 * Either image_acquired or acquire_fence is VK_NULL_HANDLE.
 */
static bool acquire_image(struct demo *demo, VkSemaphore image_acquired, VkFence acquire_fence,
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
static bool await_gate(struct demo *demo, const struct demo_frame_sync *sync)
{
    return !sync->gate || demo_gate_wait_signalled(demo->gate, sync->gate_value);
}

/* Submits one frame on the main device and does what the gate wants right after that. */
static bool submit_frame(struct demo *demo, const struct demo_render_target *target,
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
static bool dispatch_window(struct demo *demo, bool *ret_closed)
{
    if (!demo_window_dispatch(demo->window))
        return false;
    *ret_closed = demo_window_close_requested(demo->window);
    demo->window_closed = *ret_closed;
    return true;
}

static bool recreate_due(const struct demo *demo, uint64_t frame)
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
    return present_frame(demo, image_index, &sync);
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
static bool render_offscreen(struct demo_renderer *renderer, const struct demo_targets *targets,
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
    struct demo_render_target target = render_target(demo->targets, image_index);
    struct demo_frame_sync sync = { 0 };
    if (!submit_frame(demo, &target, &sync, frame))
        return false;
    return !demo->options.serial || demo_renderer_wait_submitted(demo->renderer);
}

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
static bool split_drain(struct split *split)
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
static void split_destroy(struct split *split)
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

static bool fork_child(void);

/*
 * The acquire thread's side of --thread-split. A frame is acquired only once the previous
 * one has been presented, which keeps one image acquired at a time as a UINT64_MAX acquire
 * timeout requires (and keeps acquire and present, which both need the swapchain
 * externally synchronised, apart); and only once frame f - depth is retired, when its
 * semaphore and slot are free again.
 */
static bool run_split_frames(struct demo *demo)
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
static bool offscreen_device_finish(struct offscreen_device *device)
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
static bool run_device_cycle(struct demo *demo)
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

static bool second_device_start(struct demo *demo)
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
static bool second_device_stop(struct second_device *second)
{
    if (!second->started)
        return true;
    atomic_store(&second->stop, true);
    pthread_join(second->thread, NULL);
    second->started = false;
    return !second->failed;
}

/* --fork-child: what a launcher or an engine's crash reporter does in the middle of a run. */
static bool fork_child(void)
{
    /* Output still buffered here would be written twice: once more by the child's exit. */
    fflush(NULL);
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, DEMO_NAME ": fork failed: %s\n", strerror(errno));
        return false;
    }
    if (child == 0)
        exit(EXIT_SUCCESS);     /* on purpose not _exit: atexit handlers and destructors run */

    int status;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, DEMO_NAME ": waitpid failed: %s\n", strerror(errno));
            return false;
        }
    }
    if (WIFSIGNALED(status)) {
        fprintf(stderr, DEMO_NAME ": the forked child died of signal %d\n", WTERMSIG(status));
        return false;
    }
    if (WEXITSTATUS(status) != 0) {
        fprintf(stderr, DEMO_NAME ": the forked child exited with status %d\n",
                WEXITSTATUS(status));
        return false;
    }
    return true;
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
            !demo_renderer_record_images(demo->renderer, demo->targets))
            return false;
    }
    /* Last, so that it renders only while the measured frames do. */
    return options->devices < 2 || second_device_start(demo);
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
