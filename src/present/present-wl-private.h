/* Helpers shared by the Wayland tracker's files; not for other modules.  They call one
 * way: present-wl.c (the tracker) -> present-wl-outputs.c (the output cache) and
 * present-wl-clock.c -> present-wl-roundtrip.c (waits on a connection, and fscope_wl_why). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct wl_display;
struct wl_event_queue;

/*
 * What a wait on a Wayland connection watches besides the connection itself.  Set-up
 * waits run on a tracker's dispatch thread and must end at once when the tracker is torn
 * down (cancel_fd), and must never touch a display the app has disconnected (gone).
 */
struct fscope_wl_watch {
	int cancel_fd;          /* readable: stop waiting; -1 for none */
	/* Asked after every wake, before the display is touched again: true when the app has
	 * disconnected the display, so nothing may touch it (or its proxies) any more.  NULL:
	 * the display is ours and cannot go away under us. */
	bool (*gone)(void *data);
	void *data;
};

/*
 * Roundtrip on one queue only, giving up after timeout_ms: sends wl_display.sync through
 * display_wrapper (a wrapper of display whose queue is queue), flushes, and reads the
 * connection cooperatively (prepare_read_queue / poll / read_events or cancel_read,
 * always paired) while dispatching only queue.  watch may be NULL.  Returns 0,
 * -ETIMEDOUT, -EPIPE (the connection has an error), -ENOMEM, -ECANCELED (watch->cancel_fd
 * became readable; the read was cancelled and the callback destroyed), or -ENOTCONN
 * (watch->gone said the display is gone: from then on nothing was touched, the prepared
 * read and the sync callback are abandoned with the freed display).
 */
int fscope_wl_roundtrip_queue_timeout(struct wl_display *display,
				      struct wl_display *display_wrapper,
				      struct wl_event_queue *queue, int timeout_ms,
				      const struct fscope_wl_watch *watch);

/*
 * The compositor's presentation clock (wp_presentation.clock_id) against CLOCK_MONOTONIC.
 * Used by a tracker's dispatch thread only.
 */
struct fscope_wl_clock {
	clockid_t id;
	int64_t offset_ns;        /* mono = clock + offset */
	int64_t measured_mono_ns; /* when offset was measured; INT64_MAX: never re-measured */
};

/* Checks that clock->id can be read and measures its offset; false (why filled in) when it
 * cannot be read or related to CLOCK_MONOTONIC. */
bool fscope_wl_clock_prepare(struct fscope_wl_clock *clock, char *why, size_t why_len);

/* A time on the presentation clock as CLOCK_MONOTONIC ns; re-measures the offset when it
 * is over a second old (keeping the last one if that fails). */
int64_t fscope_wl_clock_to_mono_ns(struct fscope_wl_clock *clock, int64_t clock_ns);

/*
 * For a tracker's set-up: fills the output cache if it is empty and no other thread is
 * probing right now (that one fills it), giving up when cancel_fd becomes readable, and
 * gives sink (may be NULL) what it found.  Connects on our own socket; at most about two
 * seconds on a compositor that does not answer.
 */
struct fscope_present_sink;
void fscope_wl_outputs_prime(int cancel_fd, const struct fscope_present_sink *sink);

static inline int64_t fscope_wl_timespec_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static inline int64_t fscope_wl_mono_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return fscope_wl_timespec_ns(&ts);
}

/* snprintf into why if there is room; why may be NULL. */
void fscope_wl_why(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
