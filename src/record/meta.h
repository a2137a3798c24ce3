/* What the run is, beyond its frames: devices, caveats for the summary, the compositor's
 * outputs, and the switches analysis must know. Written into the recording's metadata object
 * (format.h, struct rec_meta) as it is learned, so a run killed mid-way still carries it. */
#ifndef FSCOPE_RECORD_META_H
#define FSCOPE_RECORD_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format.h"

#define FSCOPE_EXPORT __attribute__((visibility("default")))

/* Makes the summary print even with no frames (the Vulkan layer is present). */
FSCOPE_EXPORT void fscope_record_enable(void);
/* Names a device for the summary; id is the one its frames and GPU spans carry. */
FSCOPE_EXPORT void fscope_record_device(uint32_t id, const char *device, const char *driver);
/* Whether GPU time is measured at all (the layer's FRAMESCOPE_GPU); default on. */
FSCOPE_EXPORT void fscope_record_gpu_timing(bool on);
/* Adds a caveat line to the summary (exact duplicates are kept once; beyond REC_MAX_NOTES
 * notes, later ones are dropped). */
FSCOPE_EXPORT void fscope_record_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The compositor's outputs as last learned (replaces the previous list). */
void record_outputs(const struct rec_output *outputs, size_t count);

#endif
