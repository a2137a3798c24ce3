/* The display from the kernel (libdrm's KMS interface), read by the kernel sampler's thread:
 * once at its start, every connected connector of every /dev/dri/card* node with its CRTC,
 * mode and VRR properties; at every tick, each CRTC's vblank counter, so that the refresh the
 * hardware really runs at is measured over the run. Only reads: no master, no mode set. A
 * machine without a DRM device (or a build without libdrm) records why. */
#ifndef FSCOPE_RECORD_KMS_H
#define FSCOPE_RECORD_KMS_H

#include "format.h"

struct kms;

/* Looks at the devices and fills rec; NULL when there is nothing to read at each tick. */
struct kms *kms_open(struct rec_kms *rec);
/* Reads each CRTC's vblank counter into rec. */
void kms_tick(struct kms *k, struct rec_kms *rec);
void kms_close(struct kms *k);

#endif
