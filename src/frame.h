/* Frames: the interval between two presents of one surface (or two fscope_frame_mark() calls
 * of one thread), partitioned exactly into CPU work and blocks. */
#ifndef FSCOPE_FRAME_H
#define FSCOPE_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#include "registry.h"

#define FSCOPE_EXPORT __attribute__((visibility("default")))

enum fscope_verdict {
    FSCOPE_VERDICT_CPU,
    FSCOPE_VERDICT_GPU,
    FSCOPE_VERDICT_DISPLAY,
    FSCOPE_VERDICT_CAP,
    FSCOPE_VERDICT_COUNT,
};

struct fscope_frame {
    uint64_t start_ticks;  /* the previous present call (or mark) */
    uint64_t end_ticks;    /* this present call (or mark) */
    uint64_t block_ticks[FSCOPE_BLOCK_COUNT];
    uint64_t counts[FSCOPE_COUNT_COUNT];
    uint64_t gpu_busy_ticks; /* union of GPU spans inside the frame; filled at report time */
    uint32_t swapchain_serial;
};

struct fscope_frame_log;

/* A log of frames for one surface. label names it in reports. Never freed: reports read it
 * at exit. Returns NULL on allocation failure. */
FSCOPE_EXPORT struct fscope_frame_log *fscope_frame_log_create(const char *label);

/* Starts the first frame at now_ticks (when the surface's first swapchain is made), so that a
 * surface presented N times has N frames. Does nothing once the log has started. */
FSCOPE_EXPORT void fscope_frame_log_open(struct fscope_frame_log *log, uint64_t now_ticks);

/* Closes a frame at now_ticks on the calling thread: the frame runs from the previous close
 * of this log, and is charged the blocks this thread accumulated since. The first call only
 * opens the first frame. The caller serialises calls for one log (Vulkan's rules on a
 * swapchain do). Returns the frame, or NULL when none was closed. */
FSCOPE_EXPORT struct fscope_frame *fscope_frame_log_close(struct fscope_frame_log *log,
                                                          uint64_t now_ticks,
                                                          uint32_t swapchain_serial);

FSCOPE_EXPORT uint64_t fscope_frame_log_count(const struct fscope_frame_log *log);

/* GPU spans, kept whole (not in a wrapping ring) so every frame's GPU busy can be computed
 * at the end. One log per queue; the caller serialises adds to one log. */
struct fscope_span_log;
FSCOPE_EXPORT struct fscope_span_log *fscope_span_log_create(void);
FSCOPE_EXPORT void fscope_span_log_add(struct fscope_span_log *log, uint64_t begin_ticks,
                                       uint64_t end_ticks);

/* Iteration for reports (not thread-safe against writers of the same log). */
unsigned frame_logs_count(void);
struct fscope_frame_log *frame_log_at(unsigned index);
const char *frame_log_label(const struct fscope_frame_log *log);
struct fscope_frame *frame_log_frame(struct fscope_frame_log *log, uint64_t index);
/* Fills gpu_busy_ticks of every frame of every log from all span logs. */
void frames_compute_gpu_busy(void);

#endif
