/*
 * X11 presentation tracker (the Present extension), internal to libframescope: the same
 * records and tally as the Wayland tracker (present.h), for VkXcbSurfaceKHR and
 * VkXlibSurfaceKHR windows, on X servers and XWayland.
 *
 * The tracker opens its OWN xcb connection to $DISPLAY (never the app's, never its event
 * queue), selects PresentCompleteNotify on the app's window (windows are global on a server)
 * and matches each completion to the present that asked for it by serial: Mesa's X11 WSI
 * numbers a swapchain's presents 1, 2, 3 ... as their PresentPixmap serial, which is what the
 * frame log passes as serial. A completion whose serial no pending present has is counted as
 * unmatched (another driver's numbering, or a present made before tracking began). MODE_SKIP
 * is a discarded frame; COPY, FLIP and SUBOPTIMAL_COPY are shown at their UST (microseconds of
 * the server's CLOCK_MONOTONIC), with their MSC as seq and the refresh measured from
 * consecutive completions.
 *
 * The outputs come from RandR (1.3) on the same connection: each CRTC that shows something,
 * named by its output, with its mode's size and the refresh computed from the mode's timings
 * (0 where the server gives none, as Xvfb does), given to the creator's sink as the run's
 * outputs. A frame is
 * shown on the output whose CRTC overlaps the window most, as the server picks a CRTC for
 * Present; the window's place is read again when it is configured or reparented, when RandR
 * says the outputs changed, and after a second with no word (a window manager moves its
 * frame, not the window).
 *
 * Outcomes are counted as the frame log drains them: a finished record not yet drained is
 * still pending in the tally, so the tally and the frames agree whenever both are read.
 *
 * Its thread runs the set-up (connect, query Present and RandR, select input, with round
 * trips, so create never blocks the app) and then reads events. A server without Present, or a window
 * that is gone, makes it dead with a reason. A driver whose X11 presents do not go through
 * Present (Mesa's software path, lavapipe's, uses PutImage) gives no completion at all: after
 * NO_EVENTS_AFTER requests with none, the tracker stops asking and says so.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "present.h"

struct fscope_x11_tracker;

#pragma GCC visibility push(default)

/* display: the X display name (NULL: $DISPLAY). sink (copied; may be NULL) is given RandR's
 * outputs whenever they are read. NULL (why filled in) only for what is known at once: no
 * display name, out of memory, no thread. */
struct fscope_x11_tracker *fscope_x11_tracker_create(const char *display, uint32_t window,
						     const struct fscope_present_sink *sink,
						     char *why, size_t why_len);
enum fscope_wl_request fscope_x11_tracker_request(struct fscope_x11_tracker *t,
						  uint64_t present_id, uint64_t serial);
void fscope_x11_tracker_present_failed(struct fscope_x11_tracker *t, uint64_t present_id);
size_t fscope_x11_tracker_drain(struct fscope_x11_tracker *t,
				struct fscope_present_feedback *out, size_t max);
void fscope_x11_tracker_counts(const struct fscope_x11_tracker *t, struct fscope_wl_counts *ret);
/* Completions no pending present matched. */
uint64_t fscope_x11_tracker_unmatched(const struct fscope_x11_tracker *t);
bool fscope_x11_tracker_ready(const struct fscope_x11_tracker *t);
bool fscope_x11_tracker_why(const struct fscope_x11_tracker *t, char *buf, size_t len);
void fscope_x11_tracker_destroy_with_counts(struct fscope_x11_tracker *t,
					    struct fscope_wl_counts *ret);
/* The frame log's view of it. */
extern const struct fscope_present_ops fscope_x11_present_ops;

#pragma GCC visibility pop
