/* What every presentation tracker gives the frame log (src/record/frame.c), whatever the window
 * system: one record per present that finished (shown or discarded), the tally that must add
 * up, and the answer a request gets. present-wl.h (Wayland, wp_presentation) and
 * present-x11.h (X11 and XWayland, the Present extension) implement it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum fscope_present_outcome {
	FSCOPE_PRESENT_PENDING = 0,
	FSCOPE_PRESENT_PRESENTED,
	FSCOPE_PRESENT_DISCARDED,
};

struct fscope_present_feedback {
	uint64_t present_id;          /* the id given to fscope_wl_tracker_request */
	enum fscope_present_outcome outcome;
	int64_t presented_mono_ns;    /* presentation time converted to CLOCK_MONOTONIC ns; 0 if discarded */
	uint32_t refresh_ns;          /* as the compositor claims (may be 0) */
	uint64_t seq;                 /* as given (may be 0) */
	uint32_t flags;               /* WP_PRESENTATION_FEEDBACK_KIND_* bits as given */
	int output_index;             /* index into the outputs the sink was last given, -1 if unknown */
	bool output_ambiguous;        /* true if output was matched by refresh and several outputs share it */
	uint32_t sync_outputs;        /* how many sync_output events preceded it (0 if discarded) */
	uint32_t output_refresh_mhz;  /* that output's current mode as cached, 0 if output unknown */
};

/* Mirrors WP_PRESENTATION_FEEDBACK_KIND_* so callers need not include the protocol header. */
enum fscope_present_flags {
	FSCOPE_PRESENT_FLAG_VSYNC = 0x1,
	FSCOPE_PRESENT_FLAG_HW_CLOCK = 0x2,
	FSCOPE_PRESENT_FLAG_HW_COMPLETION = 0x4,
	FSCOPE_PRESENT_FLAG_ZERO_COPY = 0x8,
};

/* The most outputs a tracker knows; the recording keeps as many (REC_MAX_OUTPUTS). */
#define FSCOPE_PRESENT_MAX_OUTPUTS 16

/* An output (monitor) of the window system, as a tracker learns it. */
struct fscope_output_info {
	char name[64];         /* wl_output v4 or xdg_output name; RandR's output name; else "" */
	char description[128]; /* wl_output v4 or xdg_output description, else "make model"; X11: "" */
	int32_t width, height; /* current mode, pixels */
	uint32_t refresh_mhz;  /* current mode; 0 if the window system gives none */
	int32_t scale;
};

/*
 * Where a tracker reports what it learns besides its records: callbacks its creator (the
 * frame log, src/record/frame.c) hands it, so that present/ calls nothing above it.  Called
 * on the tracker's own thread; a NULL callback is skipped.
 */
struct fscope_present_sink {
	/* The outputs as last learned, replacing the list given before (output_index indexes
	 * it). */
	void (*outputs)(void *ctx, const struct fscope_output_info *outputs, size_t count);
	void *ctx;
};

struct fscope_wl_counts {
	uint64_t requested;  /* feedbacks asked for (request returned FSCOPE_WL_REQUESTED) */
	uint64_t presented;
	uint64_t discarded;
	uint64_t pending;    /* asked for and not finished; after destroy: destroyed unfinished */
	uint64_t orphaned;   /* asked for, then its present failed (present_failed): no record */
	uint64_t lost;       /* finished but dropped because the drain ring was full */
	uint64_t failed;     /* request returned FSCOPE_WL_REQUEST_FAILED */
	uint64_t not_ready;  /* request returned FSCOPE_WL_NOT_READY (never in requested) */
	/* The app disconnected its wl_display before the tracker was destroyed: the feedbacks
	 * still pending stay counted as pending (their proxies were leaked, not destroyed). */
	bool display_gone;
};

/* What a tracker's request did (the names are the Wayland tracker's, which came first). */
enum fscope_wl_request {
	FSCOPE_WL_REQUESTED = 1,   /* feedback asked for; counted in `requested` */
	FSCOPE_WL_NOT_READY,       /* set-up not finished (or it failed): nothing asked; `not_ready` */
	FSCOPE_WL_REQUEST_FAILED,  /* could not ask (connection broke, slots full); `failed` */
};

/* A tracker behind the frame log: the Wayland and X11 trackers, the same way. serial is the
 * present's number on its swapchain, counting from 1 (X11 matches events by it). */
struct fscope_present_ops {
	enum fscope_wl_request (*request)(void *t, uint64_t present_id, uint64_t serial);
	void (*present_failed)(void *t, uint64_t present_id);
	size_t (*drain)(void *t, struct fscope_present_feedback *out, size_t max);
	void (*counts)(const void *t, struct fscope_wl_counts *ret);
	bool (*why)(const void *t, char *buf, size_t len);
	void (*destroy_with_counts)(void *t, struct fscope_wl_counts *ret);
};
