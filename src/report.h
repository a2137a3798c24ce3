/* The summary printed at exit and the capture written to FRAMESCOPE_OUTPUT. */
#ifndef FSCOPE_REPORT_H
#define FSCOPE_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "frame.h"

#define FSCOPE_EXPORT __attribute__((visibility("default")))

/* Shares of the frame above which a cause is taken to hold the frame back. */
#define VERDICT_GPU_BUSY_SHARE 0.80
#define VERDICT_BLOCK_SHARE 0.20

/* Makes the summary print even with no frames (the Vulkan layer is present). */
FSCOPE_EXPORT void fscope_report_enable(void);
FSCOPE_EXPORT void fscope_report_set_device(const char *device, const char *driver);
/* Adds a caveat line to the summary (exact duplicates are kept once). */
FSCOPE_EXPORT void fscope_report_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Computes, prints the summary and writes the capture. Runs once per process; later calls
 * do nothing. Called by the layer's and the library's destructors. */
FSCOPE_EXPORT void fscope_report_finish(void);

struct frame_budget_ns {
    int64_t frame, cpu, gpu_busy;
    int64_t block[FSCOPE_BLOCK_COUNT];
};

/* Splits a frame into nanoseconds so that cpu + blocks == frame exactly. */
void frame_budget(const struct fscope_frame *f, struct frame_budget_ns *ret);
enum fscope_verdict frame_verdict(const struct frame_budget_ns *b);
const char *verdict_name(enum fscope_verdict v);

void report_init(void);

#endif
