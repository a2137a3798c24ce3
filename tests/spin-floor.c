/* How often this machine takes the CPU away from a thread that never sleeps: the floor under
 * any spin-based limiter's accuracy (a VM's steal time shows up here). Prints per-second rates
 * of gaps between consecutive clock reads longer than 50 us and 200 us, over N seconds. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 5.0;
    long long t0 = now_ns(), last = t0, over50 = 0, over200 = 0, worst = 0;
    while (last - t0 < (long long)(seconds * 1e9)) {
        long long t = now_ns(), gap = t - last;
        over50 += gap > 50000;
        over200 += gap > 200000;
        if (gap > worst)
            worst = gap;
        last = t;
    }
    printf("%.2f %.2f %.1f\n", over50 / seconds, over200 / seconds, worst / 1e3);
    return 0;
}
