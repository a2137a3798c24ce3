/* Helpers shared by present-wl.c and present-wl-outputs.c; not for other modules. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct wl_display;
struct wl_event_queue;

/*
 * Roundtrip on one queue only, giving up after timeout_ms: sends wl_display.sync through
 * display_wrapper (a wrapper of display whose queue is queue), flushes, and reads the
 * connection cooperatively (prepare_read_queue / poll / read_events or cancel_read,
 * always paired) while dispatching only queue.  Returns 0, -ETIMEDOUT, -EPIPE (the
 * connection has an error) or -ENOMEM.
 */
int fscope_wl_roundtrip_queue_timeout(struct wl_display *display,
				      struct wl_display *display_wrapper,
				      struct wl_event_queue *queue, int timeout_ms);

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
