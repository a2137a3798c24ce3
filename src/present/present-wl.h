/*
 * Wayland presentation-time tracker (wp_presentation), internal to libframescope.
 *
 * The Vulkan layer creates one tracker per (wl_display, wl_surface) pair it sees in
 * vkCreateWaylandSurfaceKHR, calls fscope_wl_tracker_request() right before each
 * vkQueuePresentKHR goes down the chain, and collects finished feedbacks with
 * fscope_wl_tracker_drain().  Nothing here needs Vulkan.
 *
 * Threads: each tracker owns one dispatch thread that first runs the set-up (so create
 * never blocks the app), then reads the app's connection cooperatively (prepare_read_queue
 * / poll / read_events or cancel_read) and dispatches only the tracker's private event
 * queue.  request, present_failed, drain and counts are meant for one presenting thread at
 * a time (the swapchain's external synchronisation gives that); they never take a lock
 * shared with the dispatch thread.
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

#include "present.h"

struct fscope_wl_tracker;


/* Exported from libframescope for the Vulkan layer. */
#pragma GCC visibility push(default)

/*
 * Creates a tracker for one surface on the app's display and returns at once: it only
 * allocates, creates our private wl_event_queue and the wl_proxy_create_wrapper()s of the
 * display and surface, records which socket the display's fd names (fstat st_dev/st_ino),
 * and starts the tracker's dispatch thread.  It makes no roundtrip and never waits on the
 * compositor, so it may run inside vkCreateWaylandSurfaceKHR or vkCreateSwapchainKHR.
 *
 * The set-up (binding wp_presentation and learning its clock_id, two roundtrips of at most
 * a second each, measuring the clock, priming the output cache) runs on the dispatch
 * thread, using only our queue and wrappers.  Until it has finished, request() answers
 * FSCOPE_WL_NOT_READY; if it fails, the tracker is dead and fscope_wl_tracker_why() says
 * why (no wp_presentation, no clock_id, no answer within a second, ...).
 *
 * Returns NULL (and writes a one-line reason into why, if why_len > 0) only for what can
 * be known at once: no display or surface, a connection already in error, out of memory,
 * no thread.  Never disturbs the app's connection: private queue, wrappers, roundtrips only
 * on our queue.  The caller keeps ownership of app_display and app_surface; both should
 * outlive the tracker (see fscope_wl_tracker_destroy() for a display that does not).
 *
 * sink (copied; may be NULL) is given the outputs when this tracker's set-up fills the
 * output cache (fscope_wl_outputs()); a cache already filled is not reported again.
 */
struct fscope_wl_tracker *fscope_wl_tracker_create(struct wl_display *app_display,
						   struct wl_surface *app_surface,
						   const struct fscope_present_sink *sink,
						   char *why, size_t why_len);

/*
 * Asks for feedback on the surface's next commit and tags it with present_id.  Call on
 * the presenting thread right before the present goes down the chain (the feedback binds
 * to the next commit, which Mesa's WSI makes inside vkQueuePresentKHR).  Takes no lock
 * shared with the dispatch thread apart from libwayland's own display mutex, allocates
 * nothing of ours and flushes nothing (the WSI's commit flushes).  The feedback's listener
 * is attached before the request is marshalled, so no event of it can ever be dispatched
 * without one.
 *
 * Returns FSCOPE_WL_REQUESTED (counted in `requested`); FSCOPE_WL_NOT_READY while the
 * set-up has not finished, and for good if it failed (counted in `not_ready` only: the
 * frame is simply untracked); FSCOPE_WL_REQUEST_FAILED, counted in `failed`, when a ready
 * tracker could not ask: it died later (the connection broke) or too many feedbacks are in
 * flight.  Accepts NULL (FSCOPE_WL_REQUEST_FAILED, counted nowhere).
 */
enum fscope_wl_request fscope_wl_tracker_request(struct fscope_wl_tracker *t, uint64_t present_id);

/*
 * The present that followed request(present_id) failed (VK_ERROR_OUT_OF_DATE_KHR, surface
 * lost, ...), so the WSI may not have committed and the feedback would bind to the NEXT
 * commit, i.e. describe a later frame.  Call on the presenting thread right after the
 * failed present, before the next request.  Marks that request orphaned: it moves from
 * `pending` to `orphaned` at once, and when its events arrive they produce no record.  Does
 * nothing when present_id has no feedback in flight (never requested, already finished:
 * then the present had committed after all and the record describes that commit).  No
 * lock, no allocation, no system call.  Accepts NULL.
 */
void fscope_wl_tracker_present_failed(struct fscope_wl_tracker *t, uint64_t present_id);

/*
 * Moves up to max finished feedbacks, in the order they finished, into out and returns
 * how many.  Single-consumer side of a lock-free ring filled by the dispatch thread; when
 * the ring is full the dispatch thread drops the record and counts it in `lost` (the
 * feedback is still counted as presented or discarded).  Orphaned feedbacks never appear.
 * Accepts NULL (returns 0).
 */
size_t fscope_wl_tracker_drain(struct fscope_wl_tracker *t,
			       struct fscope_present_feedback *out, size_t max);


/*
 * A consistent snapshot: requested == presented + discarded + pending + orphaned always
 * holds in it, whatever the dispatch thread is doing.  Accepts NULL (all zero).
 */
void fscope_wl_tracker_counts(const struct fscope_wl_tracker *t, struct fscope_wl_counts *ret);

/*
 * True once the set-up has finished and while the tracker is not dead: requests are being
 * made.  Accepts NULL (false).
 */
bool fscope_wl_tracker_ready(const struct fscope_wl_tracker *t);

/*
 * True once the tracker has stopped for good: its set-up failed, the app's connection
 * reported an error, the compositor went away, or the app disconnected the display.
 * Requests then fail (or stay not ready, if it never was).  Accepts NULL (true).
 */
bool fscope_wl_tracker_dead(const struct fscope_wl_tracker *t);

/*
 * When the tracker is not tracking, writes a one-line reason into buf (if len > 0) and
 * returns true: still being set up, why its set-up failed, why it stopped, or that the app
 * disconnected its display (checked afresh on every call: fstat of the display's fd).
 * While it is ready and the display is the one it was created on, writes "" and returns
 * false.  Thread-safe, never blocks.  Accepts NULL (true, "no tracker").
 */
bool fscope_wl_tracker_why(const struct fscope_wl_tracker *t, char *buf, size_t len);

/*
 * Tears down (vkDestroySurfaceKHR/vkDestroySwapchainKHR), never at exit.  Stops the
 * dispatch thread, whether still setting up or running (set-up waits are cancelled at
 * once), then destroys our objects.  Feedbacks still pending (and orphaned ones) are
 * destroyed client-side (their late events are dropped by libwayland as zombie events);
 * pending ones are counted as pending.  Makes no roundtrip, so it cannot hang even if the
 * compositor is gone or stuck.
 *
 * If the app already called wl_display_disconnect() (its fd is closed, or the number now
 * names another file), nothing touches the display again: the dispatch thread is told to
 * exit before it is woken, every proxy, wrapper and the queue are leaked (their display is
 * freed; destroying them would lock freed memory), and the counts keep those feedbacks as
 * pending with display_gone set.  Accepts NULL.
 */
void fscope_wl_tracker_destroy(struct fscope_wl_tracker *t);

/* Same, and writes the final counts (pending = destroyed unfinished) into ret if not NULL. */
void fscope_wl_tracker_destroy_with_counts(struct fscope_wl_tracker *t,
					   struct fscope_wl_counts *ret);

/*
 * Outputs the compositor has, learned on a SEPARATE connection to $WAYLAND_DISPLAY (our
 * own socket, read with secure_getenv; WAYLAND_SOCKET is never touched), never by binding
 * wl_output on the app's connection (that would leak our objects into the app's
 * wl_surface.enter events).  Cached after the first success; refreshed on demand by
 * fscope_wl_outputs_refresh().  Returns the count written (0 when unknown).  Thread-safe;
 * the first call may block up to about two seconds on a compositor that does not answer,
 * so call it from a report, not from a Vulkan call (a tracker's dispatch thread primes the
 * cache during its set-up).  Reports through no sink: the caller has the list.
 */
size_t fscope_wl_outputs(struct fscope_output_info *out, size_t max);
void fscope_wl_outputs_refresh(void);

/*
 * Module-internal (used by the tracker's dispatch thread): index of the cached output
 * whose current refresh matches refresh_ns, or -1 (refresh 0, nothing cached, no match).
 * Never connects; *ret_ambiguous is set true when several outputs match, and
 * *ret_refresh_mhz to the matched output's mode (0 when -1 is returned).
 */
int fscope_wl_outputs_match_refresh(uint32_t refresh_ns, bool *ret_ambiguous,
				    uint32_t *ret_refresh_mhz);

/* The frame log's view of it. */
extern const struct fscope_present_ops fscope_wl_present_ops;

#pragma GCC visibility pop
