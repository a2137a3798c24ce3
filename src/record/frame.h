/* Frames: the interval between two presents of one surface (or two fscope_frame_mark() calls
 * of one thread), partitioned exactly into CPU work and blocks. */
#ifndef FSCOPE_FRAME_H
#define FSCOPE_FRAME_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"
#include "registry.h"

struct wl_display;
struct wl_surface;

#define FSCOPE_EXPORT __attribute__((visibility("default")))

/* Blocks a swapchain collects between two presents (acquires, present waits). */
#define FRAME_ORIGIN_SPANS 8

/* Where a present's frame came from, given at close. */
struct fscope_frame_origin {
    uint32_t swapchain_serial;
    uint32_t device_id;   /* the presenting device; 0: unknown (frames marked by the app) */
    int32_t present_mode; /* VkPresentModeKHR; -1: unknown */
    uint64_t swapchain_presents; /* this present's number on its swapchain, from 1; 0: unknown */
    /* Blocks charged to this swapchain from any thread since its last present (acquire,
     * present wait). */
    const struct fscope_block_span *spans;
    uint32_t span_count;
};

struct fscope_frame_log;

/* A log of frames for one surface, in the recording. label names it in reports. Never freed:
 * the recording keeps it. Returns NULL on allocation failure. */
FSCOPE_EXPORT struct fscope_frame_log *fscope_frame_log_create(const char *label);

/* Starts the first frame at now_ticks (when the surface's first swapchain is made), so that a
 * surface presented N times has N frames. Does nothing once the log has started. */
FSCOPE_EXPORT void fscope_frame_log_open(struct fscope_frame_log *log, uint64_t now_ticks);

/* Closes a frame at now_ticks on the calling thread: the frame runs from the previous close
 * of this log, and is charged the blocks this thread accumulated since. The first call only
 * opens the first frame. The caller serialises calls for one log (Vulkan's rules on a
 * swapchain do). Returns the frame, or NULL when none was closed. */
/* fscope_frame_mark() calls so far, all threads', and the time of the last: the layer's GPU
 * sampling takes a mark for a frame's end where the app presents nothing (layers/gpu.c). */
extern _Atomic uint64_t fscope_frame_marks;
extern _Atomic uint64_t fscope_frame_mark_ticks;

FSCOPE_EXPORT struct fscope_frame *fscope_frame_log_close(struct fscope_frame_log *log,
                                                          uint64_t now_ticks,
                                                          const struct fscope_frame_origin *origin);
/* The kind of surface the log presents to (set once, before the first close). */
FSCOPE_EXPORT void fscope_frame_log_set_surface(struct fscope_frame_log *log,
                                                enum frame_surface kind);

/* Starts presentation tracking of the log's Wayland surface: from now on each close asks the
 * compositor for feedback on the present that follows. Returns false (with why filled in and
 * kept for the summary) when it cannot be tracked. The display must outlive the tracking. */
FSCOPE_EXPORT bool fscope_frame_log_track_wayland(struct fscope_frame_log *log,
                                                  struct wl_display *display,
                                                  struct wl_surface *surface);
/* The same for an X11 window (VkXcbSurfaceKHR, VkXlibSurfaceKHR) on $DISPLAY, through the
 * Present extension (src/present/present-x11.h). */
FSCOPE_EXPORT bool fscope_frame_log_track_x11(struct fscope_frame_log *log, uint32_t window);
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
/* At exit: takes in finished feedback and brings every log's recorded tally up to date. */
void frame_logs_finish(void);
/* The compositor's outputs into the recording, learned on a connection of our own if no
 * tracker learned them yet (may block up to about two seconds: at exit only). */
void frame_logs_record_wl_outputs(void);

/* GPU spans, kept whole (not in a wrapping ring) so analysis can compute every frame's GPU
 * busy time. One log per queue; the caller serialises adds to one log. */
struct fscope_span_log;
FSCOPE_EXPORT struct fscope_span_log *fscope_span_log_create(void);
FSCOPE_EXPORT void fscope_span_log_add(struct fscope_span_log *log, uint32_t device_id,
                                       uint64_t begin_ticks, uint64_t end_ticks, uint32_t flags);

#endif
