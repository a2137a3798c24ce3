/* Frames: the interval between two presents of one surface (or two fscope_frame_mark() calls
 * of one thread), partitioned exactly into CPU work and blocks. */
#ifndef FSCOPE_FRAME_H
#define FSCOPE_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#include "registry.h"

struct wl_display;
struct wl_surface;

#define FSCOPE_EXPORT __attribute__((visibility("default")))

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

/* What kind of surface a frame log presents to: whether a display can pace it at all. */
enum frame_surface {
    FRAME_SURFACE_NONE = 0, /* frames marked by the app (fscope_frame_mark), no swapchain */
    FRAME_SURFACE_WAYLAND,
    FRAME_SURFACE_HEADLESS, /* VK_EXT_headless_surface: no display behind it */
    FRAME_SURFACE_OTHER,    /* XCB, Xlib, display: a display, but no presentation feedback */
};

/* Block intervals a frame keeps for the report (which part of each block the GPU was busy). */
#define FRAME_BLOCK_SPANS 8
/* Blocks a swapchain collects between two presents (acquires, present waits). */
#define FRAME_ORIGIN_SPANS 8

/* Where a present's frame came from, given at close. */
struct fscope_frame_origin {
    uint32_t swapchain_serial;
    uint32_t device_id;   /* the presenting device; 0: unknown (frames marked by the app) */
    int32_t present_mode; /* VkPresentModeKHR; -1: unknown */
    /* Blocks charged to this swapchain from any thread since its last present (acquire,
     * present wait). */
    const struct fscope_block_span *spans;
    uint32_t span_count;
};

/* What became of a frame's present, from the compositor's presentation feedback. */
enum frame_present_state {
    FRAME_PRESENT_UNTRACKED = 0, /* no feedback was asked for (not Wayland, tracker off) */
    FRAME_PRESENT_PENDING,       /* asked for, no answer (yet, or ever: torn down first) */
    FRAME_PRESENT_PRESENTED,
    FRAME_PRESENT_DISCARDED,
    FRAME_PRESENT_REQUEST_FAILED, /* the tracker could not ask */
    FRAME_PRESENT_CALL_FAILED,    /* vkQueuePresentKHR returned an error: nothing was shown */
};

struct fscope_frame {
    uint64_t index;
    uint64_t start_ticks;  /* the previous present call (or mark) */
    uint64_t end_ticks;    /* this present call (or mark) */
    uint64_t block_ticks[FSCOPE_BLOCK_COUNT]; /* the partition: never more than the frame */
    uint64_t counts[FSCOPE_COUNT_COUNT];
    /* Fence, semaphore and idle waits of threads other than the presenting one, ended during
     * this frame. Not in the partition: they overlap the presenting thread's time. */
    uint64_t other_wait_ticks[3];
    uint64_t block_span_start[FRAME_BLOCK_SPANS], block_span_end[FRAME_BLOCK_SPANS];
    uint8_t block_span_kind[FRAME_BLOCK_SPANS];
    uint8_t block_span_count;
    /* Filled at report time from the presenting device's GPU spans. */
    uint64_t gpu_busy_ticks;                      /* union of GPU spans inside the frame */
    uint64_t block_gpu_ticks[FSCOPE_BLOCK_COUNT]; /* part of each block the GPU was busy */
    uint32_t swapchain_serial;
    uint32_t device_id;
    int32_t present_mode;

    /* Presentation (Wayland surfaces with wp_presentation). */
    uint64_t present_return_ticks; /* when the present call returned */
    uint64_t presented_ticks;      /* when the compositor says it was shown */
    uint64_t present_seq;
    uint32_t refresh_ns;           /* as the compositor claims */
    uint8_t present_state;         /* enum frame_present_state */
    uint8_t present_flags;         /* FSCOPE_PRESENT_FLAG_* */
    int16_t output_index;          /* into fscope_wl_outputs(); -1 unknown */
    bool output_ambiguous;
    uint8_t cap_flags;             /* CAP_FLAG_* of the cap wait in this frame */
};

/* The presentation tracker's own tally for a surface, to check the frames' against. */
struct frame_log_tracker_counts {
    uint64_t requested, presented, discarded, pending, lost, failed;
    uint64_t orphaned; /* requested for presents that then failed: never counted as shown */
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
                                                          const struct fscope_frame_origin *origin);
/* The kind of surface the log presents to (set once, before the first close). */
FSCOPE_EXPORT void fscope_frame_log_set_surface(struct fscope_frame_log *log,
                                                enum frame_surface kind);
enum frame_surface frame_log_surface(const struct fscope_frame_log *log);

FSCOPE_EXPORT uint64_t fscope_frame_log_count(const struct fscope_frame_log *log);

/* Starts presentation tracking of the log's Wayland surface: from now on each close asks the
 * compositor for feedback on the present that follows. Returns false (with why filled in and
 * kept for the summary) when it cannot be tracked. The display must outlive the tracking. */
FSCOPE_EXPORT bool fscope_frame_log_track_wayland(struct fscope_frame_log *log,
                                                  struct wl_display *display,
                                                  struct wl_surface *surface);
/* Records that presentation of this surface cannot be known, and why. */
FSCOPE_EXPORT void fscope_frame_log_untrackable(struct fscope_frame_log *log, const char *why);
/* After the present call returned: stamps frame (may be NULL) and takes in finished feedback.
 * call_failed: the present returned an error, so nothing was committed for this frame. */
FSCOPE_EXPORT void fscope_frame_log_presented(struct fscope_frame_log *log,
                                              struct fscope_frame *frame, uint64_t now_ticks,
                                              bool call_failed);
/* The refresh in Hz of the output the surface's frames are being shown on (the latest
 * presented frame's), or 0 while unknown. For a cap that paces to that output. */
FSCOPE_EXPORT double fscope_frame_log_shown_refresh_hz(struct fscope_frame_log *log);
/* When the latest presented frame was shown, in ticks; 0 while none. */
FSCOPE_EXPORT uint64_t fscope_frame_log_last_shown_ticks(struct fscope_frame_log *log);

/* Takes in finished feedback only (swapchain teardown, exit). */
FSCOPE_EXPORT void fscope_frame_log_drain(struct fscope_frame_log *log);
/* Stops tracking while the app's display is alive (surface teardown); keeps the final tally. */
FSCOPE_EXPORT void fscope_frame_log_untrack(struct fscope_frame_log *log);

/* For reports. */
bool frame_log_tracked(const struct fscope_frame_log *log);
const char *frame_log_untracked_why(const struct fscope_frame_log *log);
bool frame_log_tracker_counts(struct fscope_frame_log *log, struct frame_log_tracker_counts *ret);

/* GPU spans, kept whole (not in a wrapping ring) so every frame's GPU busy can be computed
 * at the end. One log per queue; the caller serialises adds to one log. */
struct fscope_span_log;
FSCOPE_EXPORT struct fscope_span_log *fscope_span_log_create(void);
FSCOPE_EXPORT void fscope_span_log_add(struct fscope_span_log *log, uint32_t device_id,
                                       uint64_t begin_ticks, uint64_t end_ticks);

/* Iteration for reports (not thread-safe against writers of the same log). */
unsigned frame_logs_count(void);
struct fscope_frame_log *frame_log_at(unsigned index);
const char *frame_log_label(const struct fscope_frame_log *log);
struct fscope_frame *frame_log_frame(struct fscope_frame_log *log, uint64_t index);
/* Fills gpu_busy_ticks and block_gpu_ticks of every frame of every log from the span logs of
 * the frame's device (of every device for frames marked by the app). */
void frames_compute_gpu_busy(void);
/* Total GPU busy time (union of its spans) and span count of one device, for reports. */
void frames_device_gpu_totals(uint32_t device_id, uint64_t *ret_busy_ticks, uint64_t *ret_spans);

#endif
