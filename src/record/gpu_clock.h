/* GPU timestamps to CLOCK_MONOTONIC, across a wrap of the queue family's valid bits.
 *
 * Measured on an NVIDIA H200: one queue family has timestampValidBits 32, which wraps every
 * ~4.3 s at 1 ns per tick; the mapping is re-anchored (re-calibrated) every second, so a
 * timestamp is always within half a wrap of its anchor and the signed difference is exact. */
#ifndef FSCOPE_GPU_CLOCK_H
#define FSCOPE_GPU_CLOCK_H

#include <stdint.h>

/* All ones in the low `bits` bits (64 for a full-width counter). */
static inline uint64_t gpu_valid_mask(uint32_t bits)
{
    return bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
}

/* Maps ts (masked) to CLOCK_MONOTONIC ns, given an anchor pair taken together. */
static inline int64_t gpu_ticks_to_mono_ns(uint64_t ts, uint64_t anchor_ticks, int64_t anchor_ns,
                                           uint64_t valid_mask, double ns_per_tick)
{
    uint64_t delta = (ts - anchor_ticks) & valid_mask;
    int64_t signed_delta = (int64_t)delta;
    if (valid_mask != UINT64_MAX && delta > valid_mask / 2)
        signed_delta = (int64_t)delta - (int64_t)(valid_mask + 1);
    return anchor_ns + (int64_t)((double)signed_delta * ns_per_tick);
}

#endif
