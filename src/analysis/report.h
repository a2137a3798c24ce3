/* Analysis of a recording: budget, verdict, presentation, cap accuracy, statistics, and every
 * output format (the summary, the capture's files). Pure: it reads only the recording it is
 * given (analysis/recording.h) and writes only to the files it is handed, so the app at exit
 * and `framescope run` / `framescope report` after it produce the same bytes. */
#ifndef FSCOPE_REPORT_H
#define FSCOPE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "recording.h"

enum fscope_verdict {
    FSCOPE_VERDICT_CPU,
    FSCOPE_VERDICT_GPU,
    FSCOPE_VERDICT_DISPLAY,
    FSCOPE_VERDICT_CAP,
    /* Waiting on fences the GPU answers late although it was mostly idle: submit, wait,
     * repeat, with no frame in flight. Neither more CPU nor more GPU speed alone fixes it. */
    FSCOPE_VERDICT_SYNC,
    FSCOPE_VERDICT_COUNT,
};

/* Shares of the frame above which a cause is taken to hold the frame back. */
#define VERDICT_GPU_BUSY_SHARE 0.80
#define VERDICT_BLOCK_SHARE 0.20
/* A surface's frames are paced by the display only when it throws away at most this share of
 * what it decided on, and the app presents no faster than this fraction of the shown cadence. */
#define DISPLAY_MAX_DISCARD_SHARE 0.05
#define DISPLAY_MIN_CADENCE_RATIO 0.85
/* A wait on the GPU in which the GPU was busy less than this share is CPU-GPU serialisation. */
#define SYNC_MAX_GPU_SHARE 0.50

/* The capture keeps the recording under this name; `framescope report` reads it back. */
#define REPORT_RECORDING_FILE "recording.fsr"

enum report_format {
    REPORT_TEXT,  /* the summary as printed at exit */
    REPORT_JSON,  /* summary.json */
    REPORT_CSV,   /* frames.csv */
    REPORT_ZONES, /* zones.csv */
    REPORT_TRACE, /* trace.json */
    REPORT_THREADS, /* threads.csv */
    REPORT_PRESENTMON,
    REPORT_MANGOHUD,
    REPORT_HTML,
    REPORT_FORMAT_COUNT,
};

struct report;

/* Analyses rec, filling its frames' GPU fields. rec must outlive the report. NULL when memory
 * ran out. */
struct report *report_create(struct recording *rec);
void report_destroy(struct report *r);
bool report_has_frames(const struct report *r);

/* Writes one format. Returns 0 or -errno. */
int report_write(FILE *f, const struct report *r, enum report_format format);
/* "json", "html", ... as --format takes them (any case). */
bool report_format_parse(const char *name, enum report_format *ret);
const char *report_format_name(enum report_format format);

/* Writes the capture into output_dir, all of it or nothing (capture_dir.h): the recording's
 * bytes and every format with a file. On success the summary (if any) gets the capture line,
 * on failure a line naming the error. Returns 0 or -errno. */
int report_write_capture(const struct report *r, const void *recording, size_t recording_len,
                         const char *output_dir, FILE *summary);
/* The summary's line for a capture written to dir. */
void report_write_capture_line(FILE *f, const char *dir);

enum report_summary { REPORT_SUMMARY_STDERR, REPORT_SUMMARY_OFF, REPORT_SUMMARY_PATH };

/* A run's end, the same in the app and in framescope run: the summary where asked (a file is
 * written whole, the capture line with it, or printed on err with the error), and the
 * capture when output_dir is set. err is where "stderr" goes (NULL: nowhere, as when the app
 * closed its stderr and no copy of it is left). Returns 0, or -errno of the capture (else of
 * the summary file) that failed; *ret_capture_error is the capture's alone. */
int report_deliver(const struct report *r, const void *recording, size_t recording_len,
                   enum report_summary where, const char *summary_path, const char *output_dir,
                   FILE *err, int *ret_capture_error);

/* Whether a surface's display paces its frames: evidence, not assumption. */
struct display_evidence {
    bool paces;          /* a block in present/acquire with the GPU idle is a display wait */
    bool confirmed;      /* by presentation feedback (else by the present mode alone) */
    double app_interval_ms, shown_interval_ms, discard_share;
    char why[224];
};
void display_evidence_compute(const struct recording *rec, const struct recording_log *log,
                              struct display_evidence *ret);

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
    /* The CPU part split by the kernel's view of the closing thread (kernel true only when
     * the frame has it): cpu_busy + cpu_starved + cpu_blocked == cpu exactly. The thread is
     * taken to sleep through its Vulkan blocks first, so sleep beyond them is blocking
     * outside Vulkan (a lock, another thread, I/O, a page fault). */
    bool kernel;
    int64_t cpu_busy, cpu_starved, cpu_blocked;
    int64_t oncpu, runnable, asleep; /* the whole frame's, as the kernel counted it */
};

/* Splits a frame into nanoseconds so that cpu + blocks == frame exactly, and splits its
 * blocks by GPU activity and by what the display evidence allows. */
void frame_budget(const struct recording *rec, const struct fscope_frame *f,
                  const struct display_evidence *ev, struct frame_budget_ns *ret);
enum fscope_verdict frame_verdict(const struct frame_budget_ns *b);
/* "name (tid N)" of a thread the recording knows, else "tid N". Returns buf. */
const char *report_thread_label(const struct recording *rec, int tid, char *buf, size_t len);
const char *verdict_name(enum fscope_verdict v);

/* Fills gpu_busy_ticks and block_gpu_ticks of every frame from the GPU spans of the frame's
 * device (of every device for frames marked by the app). */
void recording_compute_gpu_busy(struct recording *rec);
/* Every device with GPU spans, by id: its busy time (the union of its spans) and its span
 * count. Returns how many; *ret is malloc'd (NULL for none, or when memory ran out). */
struct device_gpu_total {
    uint32_t device_id;
    uint64_t busy_ticks, spans;
};
size_t device_gpu_totals(const struct recording *rec, struct device_gpu_total **ret);

/* Shared by the capture's writers (report.c, formats.c). */
/* VkPresentModeKHR values (analysis does not include Vulkan). */
enum { PRESENT_IMMEDIATE = 0, PRESENT_MAILBOX = 1, PRESENT_FIFO = 2, PRESENT_FIFO_RELAXED = 3 };
/* A block kind as frames.csv names its column, without _ms. */
const char *block_name(enum fscope_block kind);
/* Durations as nanoseconds, at most REPORT_NS_MAX: 2^53 ns (104 days) is as far as a double
 * holds every nanosecond, and no frame, wait or run is longer. A recording that claims more is
 * clamped there, so that arithmetic on a few of them cannot overflow; sums of many saturate
 * (ns_sum). */
#define REPORT_NS_MAX (INT64_C(1) << 53)
int64_t ticks_ns(const struct recording *rec, uint64_t ticks);
int64_t ns_sum(int64_t a, int64_t b);
/* ",ms" with six decimals: exact nanoseconds, so columns sum exactly; negative values too. */
void csv_write_ms(FILE *f, int64_t ns);
/* Where frames.csv's start_ms counts from: the first frame of any surface (0 with none). */
uint64_t frames_origin_ticks(const struct recording *rec);

#endif
