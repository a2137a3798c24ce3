/* A frame loop for the wake-up chain's tests (tests/test_hitches.py): each frame sleeps on a
 * timer (clock_nanosleep) and is marked with fscope_frame_mark().
 *
 *   wakeup-app handoff SECONDS SLEEP_US   the main thread closes frames for SECONDS, then a
 *                                          second thread (wk-second) for SECONDS more
 *   wakeup-app timer SECONDS SLEEP_US     the main thread closes frames for SECONDS beside a
 *                                          spinning thread (wk-hog), both on one CPU (the
 *                                          first the process may use)
 *   wakeup-app sleep SECONDS SLEEP_US [CPU]  the main thread closes frames for SECONDS, moved
 *                                          back to CPU at each frame while it is online
 *
 * Prints the thread ids that closed frames, one line each. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "framescope.h"

static double seconds;
static long sleep_us;
static int home_cpu = -1; /* sleep: the CPU the frames go back to */
static atomic_bool done;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Frames for `seconds`, each asleep sleep_us on a relative timer. */
static void frames(void)
{
    printf("closing tid %d\n", (int)gettid());
    fflush(stdout);
    double end = now_s() + seconds;
    FSCOPE_FRAME_MARK();
    while (now_s() < end) {
        if (home_cpu >= 0 && sched_getcpu() != home_cpu) {
            /* Refused while the CPU is offline; the kernel's fallback then widened the
             * thread's affinity, which this narrows again once it is back. */
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(home_cpu, &one);
            sched_setaffinity(0, sizeof(one), &one);
        }
        struct timespec pause = { sleep_us / 1000000, (sleep_us % 1000000) * 1000 };
        clock_nanosleep(CLOCK_MONOTONIC, 0, &pause, NULL);
        FSCOPE_FRAME_MARK();
    }
}

static void *second_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "wk-second");
    frames();
    return NULL;
}

static void *hog_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "wk-hog");
    volatile unsigned long spins = 0;
    while (!atomic_load_explicit(&done, memory_order_relaxed))
        spins++;
    return NULL;
}

/* The first CPU this process may run on, for both threads. */
static bool pin_both(pthread_t other)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
        return false;
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed))
        cpu++;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0 &&
           pthread_setaffinity_np(other, sizeof(one), &one) == 0;
}

int main(int argc, char **argv)
{
    bool sleep_mode = argc >= 2 && strcmp(argv[1], "sleep") == 0;
    if (argc < 4 || argc > 4 + sleep_mode || (seconds = atof(argv[2])) <= 0 ||
        (sleep_us = atol(argv[3])) <= 0 ||
        (!sleep_mode && strcmp(argv[1], "handoff") != 0 && strcmp(argv[1], "timer") != 0)) {
        fprintf(stderr, "usage: wakeup-app handoff|timer SECONDS SLEEP_US\n"
                        "       wakeup-app sleep SECONDS SLEEP_US [CPU]\n");
        return 2;
    }
    if (sleep_mode) {
        home_cpu = argc == 5 ? atoi(argv[4]) : -1;
        frames();
        return 0;
    }
    pthread_t other;
    if (strcmp(argv[1], "handoff") == 0) {
        frames();
        if (pthread_create(&other, NULL, second_main, NULL) != 0)
            return 1;
        pthread_join(other, NULL);
        return 0;
    }
    if (pthread_create(&other, NULL, hog_main, NULL) != 0)
        return 1;
    bool pinned = pin_both(other);
    if (pinned)
        frames();
    atomic_store(&done, true);
    pthread_join(other, NULL);
    if (!pinned)
        fprintf(stderr, "wakeup-app: cannot pin the threads to one CPU\n");
    return pinned ? 0 : 1;
}
