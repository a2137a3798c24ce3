/*
 * Host-signalled timeline semaphores for framescope-demo: the first batch of every frame
 * waits on a value that only the CPU can provide.
 *
 * --host-delay-ms: a helper thread signals each value a fixed time after the submit that
 * waits on it returned, so the GPU sits idle waiting for the host.
 *
 * --late-signal: the submitting thread makes a second submit first and only then signals,
 * the way an engine signals "upload done" from the host. A layer that waits for the GPU
 * inside vkQueueSubmit deadlocks at that second submit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "demo.h"

/*
 * Signals the helper may have scheduled and not yet made. A present waits for its frame's
 * signal and a frame slot's fence cannot come back before it, so no more than frames in
 * flight (at most 8) are ever pending; a poster that finds the ring full waits anyway.
 */
#define MAX_PENDING_SIGNALS 32

struct pending_signal {
    uint64_t value;
    uint64_t deadline_ns;   /* CLOCK_MONOTONIC */
};

struct demo_gate {
    struct demo_gpu *gpu;
    enum demo_gate_mode mode;
    uint64_t delay_ns;
    VkSemaphore semaphore;
    uint64_t issued;            /* the last value demo_gate_next_value() handed out */
    bool released;

    /* Host delay only. The lock guards everything from ring on. */
    pthread_t helper;
    bool helper_started;
    bool lock_ready;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    struct pending_signal ring[MAX_PENDING_SIGNALS];
    uint32_t ring_head, ring_count;
    uint64_t signalled;         /* the last value vkSignalSemaphore has returned for */
    bool quit;
    bool helper_failed;
};

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool signal_value(struct demo_gate *gate, uint64_t value)
{
    VkSemaphoreSignalInfo signal_info = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
        .semaphore = gate->semaphore,
        .value = value,
    };
    return demo_vk_check(vkSignalSemaphore(gate->gpu->device, &signal_info),
                         "vkSignalSemaphore");
}

static void *helper_main(void *data)
{
    struct demo_gate *gate = data;
    bool failed = false;

    pthread_mutex_lock(&gate->lock);
    for (;;) {
        while (gate->ring_count == 0 && !gate->quit)
            pthread_cond_wait(&gate->changed, &gate->lock);
        /* Quitting still honours what is scheduled: the queue waits on every value. */
        if (gate->ring_count == 0)
            break;
        struct pending_signal next = gate->ring[gate->ring_head];
        pthread_mutex_unlock(&gate->lock);

        struct timespec until = {
            .tv_sec = (time_t)(next.deadline_ns / 1000000000u),
            .tv_nsec = (long)(next.deadline_ns % 1000000000u),
        };
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
            ;
        /* After a failure only the ring moves on; demo_gate_release() signals the rest. */
        if (!failed)
            failed = !signal_value(gate, next.value);

        pthread_mutex_lock(&gate->lock);
        gate->helper_failed = failed;
        if (!failed)
            gate->signalled = next.value;
        gate->ring_head = (gate->ring_head + 1) % MAX_PENDING_SIGNALS;
        gate->ring_count--;
        pthread_cond_broadcast(&gate->changed);
    }
    pthread_mutex_unlock(&gate->lock);
    return NULL;
}

static bool start_helper(struct demo_gate *gate)
{
    if (pthread_mutex_init(&gate->lock, NULL) != 0)
        goto error;
    if (pthread_cond_init(&gate->changed, NULL) != 0) {
        pthread_mutex_destroy(&gate->lock);
        goto error;
    }
    gate->lock_ready = true;
    if (pthread_create(&gate->helper, NULL, helper_main, gate) != 0)
        goto error;
    gate->helper_started = true;
    return true;

error:
    fprintf(stderr, DEMO_NAME ": cannot start the --host-delay-ms thread\n");
    return false;
}

struct demo_gate *demo_gate_create(struct demo_gpu *gpu, enum demo_gate_mode mode,
                                   double delay_ms)
{
    struct demo_gate *gate = calloc(1, sizeof(*gate));
    if (!gate) {
        fprintf(stderr, DEMO_NAME ": out of memory\n");
        return NULL;
    }
    gate->gpu = gpu;
    gate->mode = mode;
    gate->delay_ns = (uint64_t)(delay_ms * 1e6);

    VkSemaphoreTypeCreateInfo type_info = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
        .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
        .initialValue = 0,
    };
    VkSemaphoreCreateInfo semaphore_info = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
        .pNext = &type_info,
    };
    if (!demo_vk_check(vkCreateSemaphore(gpu->device, &semaphore_info, NULL,
                                         &gate->semaphore),
                       "vkCreateSemaphore"))
        goto error;
    if (mode == DEMO_GATE_HOST_DELAY && !start_helper(gate))
        goto error;
    return gate;

error:
    demo_gate_destroy(gate);
    return NULL;
}

void demo_gate_release(struct demo_gate *gate)
{
    if (!gate || gate->released)
        return;
    gate->released = true;
    if (gate->helper_started) {
        pthread_mutex_lock(&gate->lock);
        gate->quit = true;
        pthread_cond_broadcast(&gate->changed);
        pthread_mutex_unlock(&gate->lock);
        pthread_join(gate->helper, NULL);
        gate->helper_started = false;
    }
    if (!gate->semaphore)
        return;
    uint64_t reached = 0;
    if (!demo_vk_check(vkGetSemaphoreCounterValue(gate->gpu->device, gate->semaphore,
                                                  &reached),
                       "vkGetSemaphoreCounterValue"))
        return;
    if (reached < gate->issued)
        signal_value(gate, gate->issued);
}

void demo_gate_destroy(struct demo_gate *gate)
{
    if (!gate)
        return;
    demo_gate_release(gate);
    if (gate->lock_ready) {
        pthread_cond_destroy(&gate->changed);
        pthread_mutex_destroy(&gate->lock);
    }
    if (gate->semaphore)
        vkDestroySemaphore(gate->gpu->device, gate->semaphore, NULL);
    free(gate);
}

VkSemaphore demo_gate_semaphore(const struct demo_gate *gate)
{
    return gate->semaphore;
}

uint64_t demo_gate_next_value(struct demo_gate *gate)
{
    return ++gate->issued;
}

bool demo_gate_after_submit(struct demo_gate *gate, uint64_t value)
{
    if (gate->mode == DEMO_GATE_LATE_SIGNAL) {
        /* An empty batch: still a vkQueueSubmit, made while the frame's wait is unmet. */
        if (!demo_gpu_submit(gate->gpu, &(struct demo_batch){ 0 }))
            return false;
        return signal_value(gate, value);
    }

    uint64_t deadline_ns = monotonic_ns() + gate->delay_ns;
    pthread_mutex_lock(&gate->lock);
    while (gate->ring_count == MAX_PENDING_SIGNALS)
        pthread_cond_wait(&gate->changed, &gate->lock);
    uint32_t tail = (gate->ring_head + gate->ring_count) % MAX_PENDING_SIGNALS;
    gate->ring[tail] = (struct pending_signal){ .value = value, .deadline_ns = deadline_ns };
    gate->ring_count++;
    bool helper_failed = gate->helper_failed;
    pthread_cond_broadcast(&gate->changed);
    pthread_mutex_unlock(&gate->lock);
    return !helper_failed;
}

bool demo_gate_wait_signalled(struct demo_gate *gate, uint64_t value)
{
    /* demo_gate_after_submit() has signalled it already, before the frame went on. */
    if (gate->mode == DEMO_GATE_LATE_SIGNAL)
        return true;
    /*
     * The helper's own record rather than vkWaitSemaphores: the host is what the frame
     * waits for, and no Vulkan call on this thread should blur that. (Also, with its
     * synchronization validation on, the Khronos layer 1.3.239 stalled 10 s in a
     * vkWaitSemaphores that raced this vkSignalSemaphore; lavapipe, Debian 12.)
     */
    pthread_mutex_lock(&gate->lock);
    while (gate->signalled < value && !gate->helper_failed)
        pthread_cond_wait(&gate->changed, &gate->lock);
    bool ok = gate->signalled >= value;
    pthread_mutex_unlock(&gate->lock);
    if (!ok)
        fprintf(stderr, DEMO_NAME ": the --host-delay-ms thread stopped signalling\n");
    return ok;
}
