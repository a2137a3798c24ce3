/* What a zone costs, against what it costs to read the clock twice. Pinned to one core;
 * each figure is the minimum over several trials. Not a test: it prints what it measured. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "record/clock.h"
#include "framescope.h"

#define TRIALS 9
#define ITERATIONS 2000000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile uint64_t sink;

static double bench_clock(void)
{
    double t0 = now_s();
    for (int i = 0; i < ITERATIONS; i++) {
        uint64_t a = fscope_now();
        uint64_t b = fscope_now();
        sink += b - a;
    }
    return (now_s() - t0) * 1e9 / ITERATIONS;
}

static double bench_zone(const struct fscope_loc *loc)
{
    double t0 = now_s();
    for (int i = 0; i < ITERATIONS; i++) {
        fscope_zone_begin(loc);
        fscope_zone_end();
    }
    return (now_s() - t0) * 1e9 / ITERATIONS;
}

static double bench_empty(void)
{
    double t0 = now_s();
    for (int i = 0; i < ITERATIONS; i++)
        __asm__ volatile("" ::: "memory");
    return (now_s() - t0) * 1e9 / ITERATIONS;
}

int main(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    int pinned = sched_setaffinity(0, sizeof(set), &set) == 0;
    static const struct fscope_loc enabled = { "bench_enabled", __FILE__, __LINE__, 1, 0 };
    static const struct fscope_loc gated = { "bench_gated", __FILE__, __LINE__, 2, 0 };
    fscope_thread_name("bench");
    double clock_ns = 1e9, zone_ns = 1e9, gated_ns = 1e9, loop_ns = 1e9;
    for (int t = 0; t < TRIALS; t++) {
        double v;
        if ((v = bench_empty()) < loop_ns) loop_ns = v;
        if ((v = bench_clock()) < clock_ns) clock_ns = v;
        if ((v = bench_zone(&enabled)) < zone_ns) zone_ns = v;
        if ((v = bench_zone(&gated)) < gated_ns) gated_ns = v;
    }
    clock_ns -= loop_ns;
    zone_ns -= loop_ns;
    gated_ns -= loop_ns;
    printf("clock: %s\n", fscope_clock_describe());
    printf("pinned to cpu 0: %s; min of %d trials x %d iterations; loop overhead %.2f ns removed\n",
           pinned ? "yes" : "no", TRIALS, ITERATIONS, loop_ns);
    printf("two clock reads        %6.2f ns\n", clock_ns);
    printf("enabled zone           %6.2f ns   ratio to two clock reads %.2fx (goal <= 1.30x)\n",
           zone_ns, zone_ns / clock_ns);
    printf("zone gated off by level %5.2f ns   ratio to two clock reads %.2fx (reads no clock)\n",
           gated_ns, gated_ns / clock_ns);
    return 0;
}
