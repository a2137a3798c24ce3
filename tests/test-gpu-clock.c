/* GPU timestamp mapping across the wrap of a 32-bit queue family (the H200 has one; lavapipe's
 * 64-bit counter never shows it), and at full 64-bit width. */
#include <stdio.h>
#include <stdlib.h>

#include "record/gpu_clock.h"

#include "check.h"

int main(void)
{
    uint64_t mask32 = gpu_valid_mask(32);
    CHECK(mask32 == 0xffffffffu);
    CHECK(gpu_valid_mask(64) == UINT64_MAX);
    int64_t anchor_ns = 5000000000;

    /* Anchor 1 ms before the wrap; a timestamp 2 ms later has wrapped to a small value. */
    uint64_t anchor = 0xffffffffu - 1000000;
    uint64_t after_wrap = (anchor + 2000000) & mask32;
    CHECK(after_wrap < anchor);
    CHECK(gpu_ticks_to_mono_ns(after_wrap, anchor, anchor_ns, mask32, 1.0) == anchor_ns + 2000000);

    /* A timestamp taken before the anchor (the calibration was refreshed after it was written). */
    uint64_t before = anchor - 3000000;
    CHECK(gpu_ticks_to_mono_ns(before, anchor, anchor_ns, mask32, 1.0) == anchor_ns - 3000000);

    /* Anchored just after a wrap, a timestamp from just before it. */
    uint64_t anchor2 = 500;
    uint64_t late = 0xffffffffu - 499; /* 1000 ticks before anchor2 */
    CHECK(gpu_ticks_to_mono_ns(late, anchor2, anchor_ns, mask32, 1.0) == anchor_ns - 1000);

    /* Upper garbage bits beyond the valid ones are ignored. */
    CHECK(gpu_ticks_to_mono_ns(after_wrap | UINT64_C(0xabcd00000000), anchor, anchor_ns, mask32,
                               1.0) == anchor_ns + 2000000);

    /* A period other than 1 ns per tick, and a full-width counter. */
    CHECK(gpu_ticks_to_mono_ns(1000 + 400, 1000, anchor_ns, UINT64_MAX, 2.5) == anchor_ns + 1000);
    CHECK(gpu_ticks_to_mono_ns(1000 - 400, 1000, anchor_ns, UINT64_MAX, 2.5) == anchor_ns - 1000);

    /* Every offset within half a wrap either side of the anchor maps back exactly. */
    for (int64_t d = -2000000000; d <= 2000000000; d += 99999989) {
        uint64_t ts = (anchor + (uint64_t)d) & mask32;
        CHECK(gpu_ticks_to_mono_ns(ts, anchor, anchor_ns, mask32, 1.0) == anchor_ns + d);
    }
    printf("ok\n");
    return 0;
}
