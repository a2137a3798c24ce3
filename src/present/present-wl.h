/*
 * Wayland presentation-time tracker (wp_presentation), internal to libframescope.
 *
 * The Vulkan layer creates one tracker per (wl_display, wl_surface) pair it sees in
 * vkCreateWaylandSurfaceKHR, calls fscope_wl_tracker_request() right before each
 * vkQueuePresentKHR goes down the chain, and collects finished feedbacks with
 * fscope_wl_tracker_drain().  Nothing here needs Vulkan.
 *
 * Threads: each tracker owns one dispatch thread that reads the app's connection
 * cooperatively (prepare_read_queue / poll / read_events or cancel_read) and dispatches
 * only the tracker's private event queue.  request, drain and counts are meant for one
 * presenting thread at a time (the swapchain's external synchronisation gives that);
 * they never take a lock shared with the dispatch thread.
 *
 * Outputs are learned on a separate connection to the same compositor, never by binding
 * wl_output on the app's connection.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wl_display;
struct wl_surface;

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
	int output_index;             /* index into fscope_wl_outputs() list, -1 if unknown */
	bool output_ambiguous;        /* true if output was matched by refresh and several outputs share it */
	uint32_t sync_outputs;        /* how many sync_output events preceded it (0 if discarded) */
};

/* Mirrors WP_PRESENTATION_FEEDBACK_KIND_* so callers need not include the protocol header. */
enum fscope_present_flags {
	FSCOPE_PRESENT_FLAG_VSYNC = 0x1,
	FSCOPE_PRESENT_FLAG_HW_CLOCK = 0x2,
	FSCOPE_PRESENT_FLAG_HW_COMPLETION = 0x4,
	FSCOPE_PRESENT_FLAG_ZERO_COPY = 0x8,
};

struct fscope_wl_tracker;

/* Exported from libframescope for the Vulkan layer. */
#pragma GCC visibility push(default)

/*
 * Creates a tracker for one surface on the app's display.  Returns NULL (and writes a
 * one-line reason into why, if why_len > 0) when presentation feedback cannot be
 * tracked, e.g. the compositor has no wp_presentation, its clock cannot be read, or it
 * does not answer within a second.  Never disturbs the app's connection: private
 * wl_event_queue, wl_proxy_create_wrapper of display and surface, roundtrips only on
 * our queue.  The caller keeps ownership of app_display and app_surface; both must
 * outlive the tracker.  Also primes the output cache (fscope_wl_outputs()).
 */
struct fscope_wl_tracker *fscope_wl_tracker_create(struct wl_display *app_display,
						   struct wl_surface *app_surface,
						   char *why, size_t why_len);

/*
 * Asks for feedback on the surface's next commit and tags it with present_id.  Call on
 * the presenting thread right before the present goes down the chain (the feedback binds
 * to the next commit, which Mesa's WSI makes inside vkQueuePresentKHR).  Takes no lock
 * shared with the dispatch thread apart from libwayland's own display mutex, allocates
 * nothing of ours and flushes nothing (the WSI's commit flushes).  Returns false, and
 * counts it in `failed`, when the feedback could not be requested: tracker dead (the
 * connection broke) or too many feedbacks in flight.  Accepts NULL (returns false).
 */
bool fscope_wl_tracker_request(struct fscope_wl_tracker *t, uint64_t present_id);

/*
 * Moves up to max finished feedbacks, in the order they finished, into out and returns
 * how many.  Single-consumer side of a lock-free ring filled by the dispatch thread; when
 * the ring is full the dispatch thread drops the record and counts it in `lost` (the
 * feedback is still counted as presented or discarded).  Accepts NULL (returns 0).
 */
size_t fscope_wl_tracker_drain(struct fscope_wl_tracker *t,
			       struct fscope_present_feedback *out, size_t max);

struct fscope_wl_counts {
	uint64_t requested;  /* feedbacks asked for (request returned true) */
	uint64_t presented;
	uint64_t discarded;
	uint64_t pending;    /* asked for and not finished; after destroy: destroyed unfinished */
	uint64_t lost;       /* finished but dropped because the drain ring was full */
	uint64_t failed;     /* request returned false */
};

/*
 * A consistent snapshot: requested == presented + discarded + pending always holds in
 * it, whatever the dispatch thread is doing.  Accepts NULL (all zero).
 */
void fscope_wl_tracker_counts(const struct fscope_wl_tracker *t, struct fscope_wl_counts *ret);

/*
 * True once the tracker has stopped for good (the app's connection reported an error or
 * the compositor went away); requests then fail.  Accepts NULL (true).
 */
bool fscope_wl_tracker_dead(const struct fscope_wl_tracker *t);

/*
 * Tears down while the app's display is alive (vkDestroySwapchainKHR/vkDestroySurfaceKHR),
 * never at exit.  Feedbacks still pending are destroyed client-side (their late events
 * are dropped by libwayland as zombie events) and counted as pending.  Makes no roundtrip,
 * so it cannot hang even if the compositor is gone or stuck.  Accepts NULL.
 */
void fscope_wl_tracker_destroy(struct fscope_wl_tracker *t);

/* Same, and writes the final counts (pending = destroyed unfinished) into ret if not NULL. */
void fscope_wl_tracker_destroy_with_counts(struct fscope_wl_tracker *t,
					   struct fscope_wl_counts *ret);

struct fscope_output_info {
	char name[64];         /* wl_output v4 or xdg_output name, else "" */
	char description[128]; /* wl_output v4 or xdg_output description, else "make model" */
	int32_t width, height; /* current mode, pixels */
	uint32_t refresh_mhz;  /* current mode; 0 if the compositor gives none */
	int32_t scale;
};

/*
 * Outputs the compositor has, learned on a SEPARATE connection to $WAYLAND_DISPLAY (our
 * own socket, read with secure_getenv; WAYLAND_SOCKET is never touched), never by binding
 * wl_output on the app's connection (that would leak our objects into the app's
 * wl_surface.enter events).  Cached after the first success; refreshed on demand by
 * fscope_wl_outputs_refresh().  Returns the count written (0 when unknown).  Thread-safe;
 * the first call may block up to about a second on a compositor that does not answer.
 */
size_t fscope_wl_outputs(struct fscope_output_info *out, size_t max);
void fscope_wl_outputs_refresh(void);

/*
 * Module-internal (used by the tracker's dispatch thread): index of the cached output
 * whose current refresh matches refresh_ns, or -1 (refresh 0, nothing cached, no match).
 * Never connects; *ret_ambiguous is set true when several outputs match.
 */
int fscope_wl_outputs_match_refresh(uint32_t refresh_ns, bool *ret_ambiguous);

#pragma GCC visibility pop
