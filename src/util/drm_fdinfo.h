/* Parsing the kernel's DRM client usage stats (Documentation/gpu/drm-usage-stats.rst): the
 * text /proc/PID/fdinfo/FD holds for a file descriptor of a DRM device. Pure text in, numbers
 * out; the sampler (src/record/kernel.c) reads the app's own DRM descriptors with it. */
#ifndef FSCOPE_UTIL_DRM_FDINFO_H
#define FSCOPE_UTIL_DRM_FDINFO_H

#include <stdbool.h>
#include <stdint.h>

#define DRM_FDINFO_ENGINES 8
#define DRM_FDINFO_REGIONS 4
#define DRM_FDINFO_NAME 16

struct drm_fdinfo {
    char driver[DRM_FDINFO_NAME];
    uint64_t client_id;
    unsigned engine_count;
    struct {
        char name[DRM_FDINFO_NAME];
        uint64_t busy_ns;  /* drm-engine-<name>: time the engine spent on this client's work */
        uint32_t capacity; /* drm-engine-capacity-<name>: engines of that kind; 1 if not given */
    } engines[DRM_FDINFO_ENGINES];
    unsigned region_count;
    struct {
        char name[DRM_FDINFO_NAME];
        uint64_t total_bytes;    /* drm-total-<region> */
        uint64_t resident_bytes; /* drm-resident-<region> (or the older drm-memory-<region>) */
    } regions[DRM_FDINFO_REGIONS];
};

/* Parses text (NUL-terminated). False when it is not a DRM client's fdinfo (no drm-driver);
 * keys it does not know, values it cannot read and names too long are skipped. */
bool drm_fdinfo_parse(const char *text, struct drm_fdinfo *ret);

#endif
