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
/* A surface's frames are paced by the display only when it throws away at most this share of
 * what it decided on, and the app presents no faster than this fraction of the shown cadence. */
#define DISPLAY_MAX_DISCARD_SHARE 0.05
#define DISPLAY_MIN_CADENCE_RATIO 0.85
/* A wait on the GPU in which the GPU was busy less than this share is CPU-GPU serialisation. */
#define SYNC_MAX_GPU_SHARE 0.50

/* Makes the summary print even with no frames (the Vulkan layer is present). */
FSCOPE_EXPORT void fscope_report_enable(void);
/* Names a device for the summary; id is the one its frames and GPU spans carry. */
FSCOPE_EXPORT void fscope_report_add_device(uint32_t id, const char *device, const char *driver);
/* Whether GPU time is measured at all (the layer's FRAMESCOPE_GPU); default on. */
FSCOPE_EXPORT void fscope_report_set_gpu_timing(bool on);
/* Adds a caveat line to the summary (exact duplicates are kept once). */
FSCOPE_EXPORT void fscope_report_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Computes, prints the summary and writes the capture. Runs once per process; later calls
 * do nothing. Called by the layer's and the library's destructors. */
FSCOPE_EXPORT void fscope_report_finish(void);

/* Whether a surface's display paces its frames: evidence, not assumption. */
struct display_evidence {
    bool paces;          /* a block in present/acquire with the GPU idle is a display wait */
    bool confirmed;      /* by presentation feedback (else by the present mode alone) */
    double app_interval_ms, shown_interval_ms, discard_share;
    char why[224];
};
void display_evidence_compute(struct fscope_frame_log *log, struct display_evidence *ret);

struct frame_budget_ns {
    int64_t frame, cpu, gpu_busy;
    int64_t block[FSCOPE_BLOCK_COUNT];
    /* Not in the partition: how the blocks split. */
    int64_t block_gpu[FSCOPE_BLOCK_COUNT]; /* part of each block the GPU was busy */
    int64_t display_wait;     /* acquire/present/present-wait, GPU idle, display pacing */
    int64_t present_overhead; /* the same time when no display paces the app */
    int64_t gpu_in_waits, gpu_idle_in_waits; /* of fence, semaphore and idle waits */
    int64_t other_wait[3];    /* fence, semaphore, idle waits of other threads */
    bool gpu_timed;
};

/* Splits a frame into nanoseconds so that cpu + blocks == frame exactly, and splits its
 * blocks by GPU activity and by what the display evidence allows. */
void frame_budget(const struct fscope_frame *f, const struct display_evidence *ev,
                  struct frame_budget_ns *ret);
enum fscope_verdict frame_verdict(const struct frame_budget_ns *b);
const char *verdict_name(enum fscope_verdict v);

void report_init(void);

/* Shared by the capture's writers (report.c, formats.c). */
/* VkPresentModeKHR values (analysis does not include Vulkan). */
enum { PRESENT_IMMEDIATE = 0, PRESENT_MAILBOX = 1, PRESENT_FIFO = 2, PRESENT_FIFO_RELAXED = 3 };
/* A block kind as frames.csv names its column, without _ms. */
const char *block_name(enum fscope_block kind);
int64_t ticks_ns(uint64_t ticks);
/* ",ms" with six decimals: exact nanoseconds, so columns sum exactly; negative values too. */
void csv_write_ms(FILE *f, int64_t ns);
/* Where frames.csv's start_ms counts from: the first frame of any surface (0 with none). */
uint64_t frames_origin_ticks(void);

#endif
