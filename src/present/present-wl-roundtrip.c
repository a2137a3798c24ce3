/*
 * Waits on a Wayland connection, shared by a tracker's set-up (on the app's connection) and
 * the output probe (on our own): a roundtrip on one queue that gives up after a deadline,
 * when the tracker is torn down, or when the app disconnects its display.  The bottom of
 * present-wl*: it calls nothing of theirs.
 */
#include "present-wl-private.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include <wayland-client.h>

void fscope_wl_why(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (!why || why_len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

static void sync_done(void *data, struct wl_callback *callback, uint32_t serial)
{
	bool *done = data;

	*done = true;
}

static const struct wl_callback_listener sync_listener = {
	.done = sync_done,
};

/* Checked after every wake of a wait: 0 to go on, -ENOTCONN (display gone: touch
 * nothing), -ECANCELED (cancel_fd readable). */
static int watch_check(const struct fscope_wl_watch *watch, const struct pollfd *cancel_pfd)
{
	if (!watch)
		return 0;
	if (watch->gone && watch->gone(watch->data))
		return -ENOTCONN;
	if (cancel_pfd->fd >= 0 && cancel_pfd->revents)
		return -ECANCELED;
	return 0;
}

static int flush_until(struct wl_display *display, int fd, int64_t deadline_ns,
		       const struct fscope_wl_watch *watch)
{
	while (wl_display_flush(display) < 0) {
		struct pollfd pfds[2] = {
			{ .fd = fd, .events = POLLOUT },
			{ .fd = watch ? watch->cancel_fd : -1, .events = POLLIN },
		};
		int64_t left_ns;
		int r;

		if (errno != EAGAIN)
			return -EPIPE;
		left_ns = deadline_ns - fscope_wl_mono_ns();
		if (left_ns <= 0)
			return -ETIMEDOUT;
		r = poll(pfds, 2, (int)((left_ns + 999999) / 1000000));
		if (r < 0 && errno != EINTR)
			return -errno;
		r = watch_check(watch, &pfds[1]);
		if (r < 0)
			return r;
	}
	return 0;
}

int fscope_wl_roundtrip_queue_timeout(struct wl_display *display,
				      struct wl_display *display_wrapper,
				      struct wl_event_queue *queue, int timeout_ms,
				      const struct fscope_wl_watch *watch)
{
	int64_t deadline_ns = fscope_wl_mono_ns() + (int64_t)timeout_ms * 1000000;
	struct wl_callback *callback;
	bool done = false;
	int fd, ret = 0;

	if (watch && watch->gone && watch->gone(watch->data))
		return -ENOTCONN;
	fd = wl_display_get_fd(display);
	callback = wl_display_sync(display_wrapper);
	if (!callback)
		return -ENOMEM;
	wl_callback_add_listener(callback, &sync_listener, &done);

	while (!done) {
		struct pollfd pfds[2] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = watch ? watch->cancel_fd : -1, .events = POLLIN },
		};
		int64_t left_ns;
		int r;

		if (wl_display_prepare_read_queue(display, queue) != 0) {
			if (wl_display_dispatch_queue_pending(display, queue) < 0) {
				ret = -EPIPE;
				break;
			}
			continue;
		}
		ret = flush_until(display, fd, deadline_ns, watch);
		if (ret == -ENOTCONN)
			return ret; /* the read and the callback go with the freed display */
		if (ret < 0) {
			wl_display_cancel_read(display);
			break;
		}
		left_ns = deadline_ns - fscope_wl_mono_ns();
		if (left_ns <= 0) {
			wl_display_cancel_read(display);
			ret = -ETIMEDOUT;
			break;
		}
		r = poll(pfds, 2, (int)((left_ns + 999999) / 1000000));
		ret = watch_check(watch, &pfds[1]);
		if (ret == -ENOTCONN)
			return ret;
		if (ret < 0 || r <= 0) {
			wl_display_cancel_read(display);
			if (ret < 0)
				break;
			if (r < 0 && errno != EINTR) {
				ret = -EPIPE;
				break;
			}
			continue; /* EINTR, or the deadline check above ends it */
		}
		if (!(pfds[0].revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL))) {
			wl_display_cancel_read(display);
			continue;
		}
		if (wl_display_read_events(display) < 0) {
			ret = -EPIPE;
			break;
		}
		if (wl_display_dispatch_queue_pending(display, queue) < 0) {
			ret = -EPIPE;
			break;
		}
	}
	/* Destroying it before done arrives is fine: libwayland drops the late event. */
	wl_callback_destroy(callback);
	return ret;
}
