/* The kernel sampler's tick (src/record/kernel.c): every thread's schedstat read in one
 * io_uring submission against the same reads one pread at a time, for 8, 32 and 128 threads.
 * Prints the cost of a tick each way and their ratio, from one run (a benchmark). */
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 128
#define TICKS 2000

static pthread_barrier_t started;
static int tids[MAX_THREADS];

static void *sleeper(void *arg)
{
    tids[(long)arg] = gettid();
    pthread_barrier_wait(&started);
    pause();
    return NULL;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(void)
{
    pthread_barrier_init(&started, NULL, MAX_THREADS + 1);
    for (long i = 0; i < MAX_THREADS; i++) {
        pthread_t t;
        pthread_create(&t, NULL, sleeper, (void *)i);
    }
    pthread_barrier_wait(&started);
    int fds[MAX_THREADS];
    static char bufs[MAX_THREADS][96];
    for (int i = 0; i < MAX_THREADS; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tids[i]);
        fds[i] = open(path, O_RDONLY | O_CLOEXEC);
        if (fds[i] < 0) {
            perror(path);
            return 1;
        }
    }
    struct io_uring ring;
    if (io_uring_queue_init(MAX_THREADS, &ring, 0) != 0) {
        puts("io_uring unavailable: skipped");
        return 77;
    }
    printf("%8s %16s %16s %8s\n", "threads", "pread us/tick", "io_uring us/tick", "ratio");
    for (int n = 8; n <= MAX_THREADS; n *= 4) {
        double best_plain = 1e18, best_ring = 1e18;
        for (int trial = 0; trial < 5; trial++) {
            double t0 = now_ns();
            for (int tick = 0; tick < TICKS; tick++)
                for (int i = 0; i < n; i++)
                    if (pread(fds[i], bufs[i], sizeof(bufs[i]) - 1, 0) <= 0)
                        return 1;
            double t1 = now_ns();
            for (int tick = 0; tick < TICKS; tick++) {
                for (int i = 0; i < n; i++)
                    io_uring_prep_read(io_uring_get_sqe(&ring), fds[i], bufs[i],
                                       sizeof(bufs[i]) - 1, 0);
                io_uring_submit_and_wait(&ring, n);
                struct io_uring_cqe *cqe;
                for (int i = 0; i < n; i++) {
                    io_uring_wait_cqe(&ring, &cqe);
                    if (cqe->res <= 0)
                        return 1;
                    io_uring_cqe_seen(&ring, cqe);
                }
            }
            double t2 = now_ns();
            if ((t1 - t0) / TICKS < best_plain)
                best_plain = (t1 - t0) / TICKS;
            if ((t2 - t1) / TICKS < best_ring)
                best_ring = (t2 - t1) / TICKS;
        }
        printf("%8d %16.1f %16.1f %8.2f\n", n, best_plain / 1e3, best_ring / 1e3,
               best_ring / best_plain);
    }
    return 0;
}
