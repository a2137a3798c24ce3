/* What the wake-up chain's perf events (src/record/sched_trace.c) cost a context switch, by how
 * they are opened. Two threads on one CPU hand a turn back and forth through a futex, so
 * every round trip is two switches and two wake-ups; the events follow thread A (the traced
 * one) or a thread that sleeps throughout (what everyone else's switches pay):
 *   none      no events
 *   cpu-wide  sched_switch and sched_waking on every CPU, filtered to the thread (what
 *             sched_trace.c opens)
 *   per-task  sched_switch attached to the thread, with its context-switch records (for when
 *             it runs again), and sched_waking on every CPU, filtered
 *   per-task-no-cs  the same without the context-switch records
 * Prints microseconds a round trip for each, and each against none, from one run (a
 * benchmark: needs root or CAP_PERFMON and tracefs; exits 77 without them). */
#include <linux/futex.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUND_TRIPS 40000
#define RING_PAGES 64
#define MAX_EVENTS 130

static _Atomic int turn;
static _Atomic int sleeper_tid;

struct events {
    int fd[MAX_EVENTS];
    void *ring[MAX_EVENTS];
    size_t size;
    int count;
};

static void wait_while(int v)
{
    while (atomic_load(&turn) == v)
        syscall(SYS_futex, &turn, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void hand_over(int v)
{
    atomic_store(&turn, v);
    syscall(SYS_futex, &turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *thread_b(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUND_TRIPS; i++) {
        wait_while(0);
        hand_over(0);
    }
    return NULL;
}

static void *sleeper(void *arg)
{
    (void)arg;
    atomic_store(&sleeper_tid, (int)gettid());
    for (;;)
        pause();
    return NULL;
}

static int tracepoint_id(const char *name)
{
    char path[128];
    snprintf(path, sizeof(path), "/sys/kernel/tracing/events/sched/%s/id", name);
    FILE *f = fopen(path, "r");
    int id = -1;
    if (f) {
        if (fscanf(f, "%d", &id) != 1)
            id = -1;
        fclose(f);
    }
    return id;
}

static bool add(struct events *e, int id, int tid, int cpu, bool switches, const char *filter)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.size = sizeof(attr);
    attr.config = (unsigned)id;
    attr.sample_period = 1;
    attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
    attr.disabled = 1;
    attr.wakeup_events = 1000000;
    attr.context_switch = switches;
    attr.sample_id_all = switches;
    int fd = (int)syscall(SYS_perf_event_open, &attr, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return false;
    e->size = (size_t)(1 + RING_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    void *ring = mmap(NULL, e->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ring == MAP_FAILED || (filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) != 0)) {
        close(fd);
        return false;
    }
    e->fd[e->count] = fd;
    e->ring[e->count++] = ring;
    return true;
}

/* Everything written so far counts as read, so the kernel always has room to copy. */
static void drain(struct events *e)
{
    for (int i = 0; i < e->count; i++) {
        struct perf_event_mmap_page *meta = e->ring[i];
        __atomic_store_n(&meta->data_tail, __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE),
                         __ATOMIC_RELEASE);
    }
}

static void close_all(struct events *e)
{
    for (int i = 0; i < e->count; i++) {
        munmap(e->ring[i], e->size);
        close(e->fd[i]);
    }
    e->count = 0;
}

/* Opens mode's events on thread tid; false where the kernel refused. */
static bool open_mode(struct events *e, const char *mode, int tid)
{
    int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    int sw = tracepoint_id("sched_switch"), wk = tracepoint_id("sched_waking");
    if (sw < 0 || wk < 0 || cpus * 2 + 1 > MAX_EVENTS)
        return false;
    char sw_filter[64], wk_filter[32];
    snprintf(sw_filter, sizeof(sw_filter), "prev_pid == %d || next_pid == %d", tid, tid);
    snprintf(wk_filter, sizeof(wk_filter), "pid == %d", tid);
    bool ok = true;
    if (!strcmp(mode, "cpu-wide")) {
        for (int c = 0; ok && c < cpus; c++)
            ok = add(e, sw, -1, c, false, sw_filter) && add(e, wk, -1, c, false, wk_filter);
    } else if (!strncmp(mode, "per-task", 8)) {
        ok = add(e, sw, tid, -1, !strcmp(mode, "per-task"), NULL);
        for (int c = 0; ok && c < cpus; c++)
            ok = add(e, wk, -1, c, false, wk_filter);
    }
    for (int i = 0; ok && i < e->count; i++)
        ioctl(e->fd[i], PERF_EVENT_IOC_ENABLE, 0);
    if (!ok)
        close_all(e);
    return ok;
}

/* Microseconds a round trip with mode's events on the traced thread (A, or the sleeper). */
static double measure(const char *mode, bool trace_sleeper)
{
    struct events e = { .count = 0 };
    int traced = trace_sleeper ? atomic_load(&sleeper_tid) : (int)gettid();
    if (!open_mode(&e, mode, traced))
        return -1;
    atomic_store(&turn, 0);
    pthread_t b;
    pthread_create(&b, NULL, thread_b, NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < ROUND_TRIPS; i++) {
        hand_over(1);
        wait_while(1);
        if (i % 256 == 0)
            drain(&e);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(b, NULL);
    close_all(&e);
    return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
           ROUND_TRIPS / 1e3;
}

int main(void)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    sched_setaffinity(0, sizeof(one), &one); /* inherited by the threads made below */
    pthread_t s;
    pthread_create(&s, NULL, sleeper, NULL);
    while (!atomic_load(&sleeper_tid))
        usleep(1000);
    static const char *const modes[] = { "none", "cpu-wide", "per-task", "per-task-no-cs" };
    double base[2] = { 0, 0 };
    printf("round trip of two threads on one CPU (2 switches, 2 wake-ups), %d of them:\n",
           ROUND_TRIPS);
    for (int who = 0; who < 2; who++) {
        printf("%s:\n", who ? "events on a sleeping thread (what other threads pay)"
                            : "events on one of the two threads");
        for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
            /* The best of three: the machine's noise only ever adds. */
            double best = -1;
            for (int k = 0; k < 3; k++) {
                double us = measure(modes[m], who == 1);
                if (us >= 0 && (best < 0 || us < best))
                    best = us;
            }
            if (best < 0) {
                printf("  %-15s not permitted here (root or CAP_PERFMON, and tracefs)\n",
                       modes[m]);
                if (m == 1)
                    return 77;
                continue;
            }
            if (m == 0)
                base[who] = best;
            printf("  %-15s %6.2f us   %+6.2f us against none\n", modes[m], best,
                   best - base[who]);
        }
    }
    return 0;
}
