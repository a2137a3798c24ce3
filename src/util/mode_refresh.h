/* A display mode's refresh from its timings, the same for a KMS mode (src/record/kms.c) and a
 * RandR mode (src/present/present-x11.c): exact where a mode's nominal rate is rounded
 * (59.94 Hz, not 60). */
#ifndef FSCOPE_UTIL_MODE_REFRESH_H
#define FSCOPE_UTIL_MODE_REFRESH_H

#include <stdbool.h>
#include <stdint.h>

/* In mHz; 0 when the mode has no timings (Xvfb's). An interlaced mode shows two fields a
 * frame; a double-scanned one draws each line twice. */
static inline uint32_t fscope_mode_refresh_mhz(uint64_t pixel_clock_hz, uint32_t htotal,
                                               uint32_t vtotal, bool interlace, bool doublescan)
{
    uint64_t dots = (uint64_t)htotal * vtotal;
    if (!dots || !pixel_clock_hz)
        return 0;
    uint64_t mhz = pixel_clock_hz * 1000 / dots;
    if (interlace)
        mhz *= 2;
    if (doublescan)
        mhz /= 2;
    return (uint32_t)mhz;
}

#endif
