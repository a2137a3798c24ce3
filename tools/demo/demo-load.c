/* framescope-demo: the load the options add to a frame or a run, on the CPU, in memory and
 * in the process: --cpu-ms and its kin, --alloc-mb, --leak-kb, --pipelines-at, forks. */
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

uint64_t now_ns(void)
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
void run_cpu_load(const struct demo_options *options, uint64_t frame)
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
void allocate_memory(struct demo *demo, uint64_t frame)
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
bool leak_memory(struct demo *demo, uint64_t frame)
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
void create_pipelines(struct demo *demo, uint64_t frame, VkFormat format,
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

/* --fork-child: what a launcher or an engine's crash reporter does in the middle of a run. */
bool fork_child(void)
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
