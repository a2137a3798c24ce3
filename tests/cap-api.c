/* An engine that uses the library's cap directly: fscope_cap_set_hz + fscope_cap_wait once a
 * frame, fscope_frame_mark at the end of each frame, the rate changed at run time. The summary
 * and capture it writes at exit are checked by test_cap.py. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "framescope.h"

static void busy_ms(double ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

int main(int argc, char **argv)
{
    int frames = argc > 1 ? atoi(argv[1]) : 200;
    if (fscope_cap_set_hz(-5) == 0 || fscope_cap_set_hz(1e9) == 0) {
        fprintf(stderr, "bad rates accepted\n");
        return 1;
    }
    fscope_cap_set_hz(100);
    for (int i = 0; i < frames; i++) {
        if (i == frames / 2)
            fscope_cap_set_hz(50); /* changed while running */
        FSCOPE_ZONE("frame_work");
        busy_ms(2);
        fscope_cap_wait();
        fscope_frame_mark();
    }
    return 0;
}
