/*
 * Wayland presentation-time tracker.
 *
 * Threading model: one dispatch thread per tracker.  A game has one or two Wayland
 * surfaces, so a thread each is cheap, and it keeps every tracker independent: a tracker
 * never waits on another's teardown, and a surface on a second display needs nothing
 * special.  The dispatch thread is the only one that runs our listeners.
 *
 * Who writes what:
 *   presenting thread: requested, failed, slot FREE -> ARMED, ring tail.
 *   dispatch thread:   presented, discarded, lost, slot ARMED -> FREE, ring head,
 *                      clock offset (after create), the clock_id listener.
 * Each side publishes its counters and slot states under its own sequence counter, so
 * fscope_wl_tracker_counts() can take a snapshot in which
 * requested == presented + discarded + pending holds exactly, without a lock.
 */
#include "present-wl.h"
#include "present-wl-private.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <wayland-client.h>

#include "presentation-time-client-protocol.h"

/* Feedbacks in flight at once.  Weston discards a surface's pending feedback on the next
 * commit, so FIFO and MAILBOX keep two or three in flight; a compositor that holds
 * feedback for a hidden surface can accumulate more, hence the margin. */
#define SLOT_COUNT 256
/* Finished feedbacks not yet drained.  The layer drains every present. */
#define RING_SIZE 256
/* Setup roundtrips on the app's connection give up after this long. */
#define SETUP_TIMEOUT_MS 1000
/* Presentation clock offset re-measured at most this often (MONOTONIC vs RAW drift under
 * NTP slew is at most 500 ppm, so 0.5 ms/s worst case). */
#define CLOCK_REMEASURE_NS 1000000000
#define CLOCK_SAMPLES 5

_Static_assert((RING_SIZE & (RING_SIZE - 1)) == 0, "RING_SIZE must be a power of two");

enum slot_state {
	SLOT_FREE = 0,
	SLOT_ARMED,
};

struct feedback_slot {
	struct fscope_wl_tracker *tracker;
	/* Written by the presenting thread while FREE; read by teardown after the join. */
	struct wp_presentation_feedback *proxy;
	/* Written by the presenting thread while FREE, published by the ARMED store. */
	uint64_t present_id;
	uint32_t sync_outputs; /* dispatch thread only while ARMED */
	_Atomic uint32_t state;
};

/* A sequence counter with one writer: odd while the writer is mid-update. */
struct seq_writer {
	_Atomic uint32_t seq;
};

struct fscope_wl_tracker {
	struct wl_display *display;
	struct wl_event_queue *queue;
	struct wl_display *display_wrapper;
	struct wl_surface *surface_wrapper;
	struct wl_registry *registry;
	struct wp_presentation *presentation;
	uint32_t presentation_name;
	uint32_t presentation_version;

	/* Set during create; after that only the dispatch thread touches them. */
	bool have_clock_id;
	clockid_t clock_id;
	int64_t clock_offset_ns;      /* mono = clock + offset */
	int64_t clock_measured_mono_ns;

	int wake_fd;
	pthread_t thread;
	bool thread_started;
	_Atomic bool dead;

	/* Presenting-thread side. */
	alignas(64) struct seq_writer request_seq;
	_Atomic uint64_t requested;
	_Atomic uint64_t failed;
	uint32_t next_slot;
	_Atomic size_t ring_tail;

	/* Dispatch-thread side. */
	alignas(64) struct seq_writer finish_seq;
	_Atomic uint64_t presented;
	_Atomic uint64_t discarded;
	_Atomic uint64_t lost;
	_Atomic size_t ring_head;

	alignas(64) struct feedback_slot slots[SLOT_COUNT];
	struct fscope_present_feedback ring[RING_SIZE];
};

void fscope_wl_why(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	if (!why || why_len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
}

static void seq_begin(struct seq_writer *w)
{
	uint32_t seq = atomic_load_explicit(&w->seq, memory_order_relaxed);

	atomic_store_explicit(&w->seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static void seq_end(struct seq_writer *w)
{
	uint32_t seq = atomic_load_explicit(&w->seq, memory_order_relaxed);

	atomic_store_explicit(&w->seq, seq + 1, memory_order_release);
}

static void counter_add(_Atomic uint64_t *counter, uint64_t n)
{
	/* Single writer per counter: a load and a store, no locked instruction. */
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* ---- setup roundtrip -------------------------------------------------------------- */

static void sync_done(void *data, struct wl_callback *callback, uint32_t serial)
{
	bool *done = data;

	*done = true;
}

static const struct wl_callback_listener sync_listener = {
	.done = sync_done,
};

static int flush_until(struct wl_display *display, int64_t deadline_ns)
{
	while (wl_display_flush(display) < 0) {
		struct pollfd pfd = { .fd = wl_display_get_fd(display), .events = POLLOUT };
		int64_t left_ns;
		int r;

		if (errno != EAGAIN)
			return -EPIPE;
		left_ns = deadline_ns - fscope_wl_mono_ns();
		if (left_ns <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)((left_ns + 999999) / 1000000));
		if (r == 0)
			return -ETIMEDOUT;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

int fscope_wl_roundtrip_queue_timeout(struct wl_display *display,
				      struct wl_display *display_wrapper,
				      struct wl_event_queue *queue, int timeout_ms)
{
	int64_t deadline_ns = fscope_wl_mono_ns() + (int64_t)timeout_ms * 1000000;
	struct wl_callback *callback;
	bool done = false;
	int ret = 0;

	callback = wl_display_sync(display_wrapper);
	if (!callback)
		return -ENOMEM;
	wl_callback_add_listener(callback, &sync_listener, &done);

	while (!done) {
		struct pollfd pfd = { .fd = wl_display_get_fd(display), .events = POLLIN };
		int64_t left_ns;
		int r;

		if (wl_display_prepare_read_queue(display, queue) != 0) {
			if (wl_display_dispatch_queue_pending(display, queue) < 0) {
				ret = -EPIPE;
				break;
			}
			continue;
		}
		ret = flush_until(display, deadline_ns);
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
		r = poll(&pfd, 1, (int)((left_ns + 999999) / 1000000));
		if (r <= 0) {
			wl_display_cancel_read(display);
			if (r < 0 && errno == EINTR)
				continue;
			if (r == 0)
				continue; /* the deadline check above ends it */
			ret = -EPIPE;
			break;
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

/* ---- clock ------------------------------------------------------------------------ */

/*
 * Offset such that mono = other + offset, from the tightest of a few back-to-back
 * other/mono/other samples.  Returns false if either clock cannot be read.
 */
static bool measure_clock_offset(clockid_t other, int64_t *ret_offset_ns, int64_t *ret_mono_ns)
{
	int64_t best_width = INT64_MAX, best_offset = 0, best_mono = 0;

	for (int i = 0; i < CLOCK_SAMPLES; i++) {
		struct timespec a, m, b;
		int64_t width;

		if (clock_gettime(other, &a) != 0 || clock_gettime(CLOCK_MONOTONIC, &m) != 0 ||
		    clock_gettime(other, &b) != 0)
			return false;
		width = fscope_wl_timespec_ns(&b) - fscope_wl_timespec_ns(&a);
		if (width < 0)
			continue; /* the other clock stepped backwards (REALTIME); sample again */
		if (width < best_width) {
			best_width = width;
			best_mono = fscope_wl_timespec_ns(&m);
			best_offset = best_mono - (fscope_wl_timespec_ns(&a) + width / 2);
		}
	}
	if (best_width == INT64_MAX)
		return false;
	*ret_offset_ns = best_offset;
	*ret_mono_ns = best_mono;
	return true;
}

/* Dispatch thread (or create, before it starts). */
static bool clock_prepare(struct fscope_wl_tracker *t, char *why, size_t why_len)
{
	struct timespec ts;

	if (clock_gettime(t->clock_id, &ts) != 0) {
		fscope_wl_why(why, why_len, "presentation clock id %d cannot be read: %s",
			      (int)t->clock_id, strerror(errno));
		return false;
	}
	if (t->clock_id == CLOCK_MONOTONIC) {
		t->clock_offset_ns = 0;
		t->clock_measured_mono_ns = INT64_MAX; /* never re-measured */
		return true;
	}
	if (!measure_clock_offset(t->clock_id, &t->clock_offset_ns, &t->clock_measured_mono_ns)) {
		fscope_wl_why(why, why_len,
			      "cannot relate presentation clock id %d to CLOCK_MONOTONIC",
			      (int)t->clock_id);
		return false;
	}
	return true;
}

static int64_t presentation_to_mono_ns(struct fscope_wl_tracker *t, int64_t clock_ns)
{
	if (t->clock_id != CLOCK_MONOTONIC) {
		int64_t now = fscope_wl_mono_ns();

		if (now - t->clock_measured_mono_ns >= CLOCK_REMEASURE_NS) {
			int64_t offset, mono;

			/* On failure keep the last offset; it was good a second ago. */
			if (measure_clock_offset(t->clock_id, &offset, &mono)) {
				t->clock_offset_ns = offset;
				t->clock_measured_mono_ns = mono;
			}
		}
	}
	return clock_ns + t->clock_offset_ns;
}

/* ---- wp_presentation and its feedback ---------------------------------------------- */

static void presentation_clock_id(void *data, struct wp_presentation *presentation,
				  uint32_t clk_id)
{
	struct fscope_wl_tracker *t = data;

	/* Sent once, on bind, during create.  Should a compositor send it again, follow it,
	 * and stop the tracker if the new clock cannot be read. */
	if (t->have_clock_id && t->clock_id == (clockid_t)clk_id)
		return;
	t->clock_id = (clockid_t)clk_id;
	t->have_clock_id = true;
	if (t->thread_started && !clock_prepare(t, NULL, 0))
		atomic_store(&t->dead, true);
}

static const struct wp_presentation_listener presentation_listener = {
	.clock_id = presentation_clock_id,
};

static void ring_push(struct fscope_wl_tracker *t, const struct fscope_present_feedback *rec,
		      bool *ret_lost)
{
	size_t head = atomic_load_explicit(&t->ring_head, memory_order_relaxed);
	size_t tail = atomic_load_explicit(&t->ring_tail, memory_order_acquire);

	if (head - tail >= RING_SIZE) {
		*ret_lost = true;
		return;
	}
	t->ring[head & (RING_SIZE - 1)] = *rec;
	atomic_store_explicit(&t->ring_head, head + 1, memory_order_release);
	*ret_lost = false;
}

static void feedback_finish(struct feedback_slot *slot, struct wp_presentation_feedback *proxy,
			    const struct fscope_present_feedback *rec)
{
	struct fscope_wl_tracker *t = slot->tracker;
	bool lost;

	/* The compositor destroys the object after this event; drop our proxy. */
	wp_presentation_feedback_destroy(proxy);

	/* Record first, so that when counts show it finished, drain can return it. */
	ring_push(t, rec, &lost);

	seq_begin(&t->finish_seq);
	if (rec->outcome == FSCOPE_PRESENT_PRESENTED)
		counter_add(&t->presented, 1);
	else
		counter_add(&t->discarded, 1);
	if (lost)
		counter_add(&t->lost, 1);
	atomic_store_explicit(&slot->state, SLOT_FREE, memory_order_release);
	seq_end(&t->finish_seq);
}

static void feedback_sync_output(void *data, struct wp_presentation_feedback *feedback,
				 struct wl_output *output)
{
	struct feedback_slot *slot = data;

	/* The wl_output belongs to the app (or to nobody); we cannot name it, only count. */
	slot->sync_outputs++;
}

static void feedback_presented(void *data, struct wp_presentation_feedback *feedback,
			       uint32_t tv_sec_hi, uint32_t tv_sec_lo, uint32_t tv_nsec,
			       uint32_t refresh, uint32_t seq_hi, uint32_t seq_lo, uint32_t flags)
{
	struct feedback_slot *slot = data;
	struct fscope_wl_tracker *t = slot->tracker;
	uint64_t tv_sec = ((uint64_t)tv_sec_hi << 32) | tv_sec_lo;
	struct fscope_present_feedback rec = {
		.outcome = FSCOPE_PRESENT_PRESENTED,
		.refresh_ns = refresh,
		.seq = ((uint64_t)seq_hi << 32) | seq_lo,
		.flags = flags,
		.output_index = -1,
	};

	/* Pairs with the release store of ARMED in request. */
	(void)atomic_load_explicit(&slot->state, memory_order_acquire);
	rec.present_id = slot->present_id;
	rec.sync_outputs = slot->sync_outputs;
	rec.presented_mono_ns =
		presentation_to_mono_ns(t, (int64_t)(tv_sec * 1000000000 + tv_nsec));
	if (refresh != 0)
		rec.output_index = fscope_wl_outputs_match_refresh(refresh, &rec.output_ambiguous);
	feedback_finish(slot, feedback, &rec);
}

static void feedback_discarded(void *data, struct wp_presentation_feedback *feedback)
{
	struct feedback_slot *slot = data;
	struct fscope_present_feedback rec = {
		.outcome = FSCOPE_PRESENT_DISCARDED,
		.output_index = -1,
	};

	(void)atomic_load_explicit(&slot->state, memory_order_acquire);
	rec.present_id = slot->present_id;
	feedback_finish(slot, feedback, &rec);
}

static const struct wp_presentation_feedback_listener feedback_listener = {
	.sync_output = feedback_sync_output,
	.presented = feedback_presented,
	.discarded = feedback_discarded,
};

/* ---- registry ----------------------------------------------------------------------- */

static void registry_global(void *data, struct wl_registry *registry, uint32_t name,
			    const char *interface, uint32_t version)
{
	struct fscope_wl_tracker *t = data;

	if (t->presentation_name == 0 && strcmp(interface, wp_presentation_interface.name) == 0) {
		t->presentation_name = name;
		t->presentation_version = version;
	}
}

static void registry_global_remove(void *data, struct wl_registry *registry, uint32_t name)
{
	/* Outputs come and go; wp_presentation never does on compositors we know.  If it
	 * did, our bound object stays valid (the compositor keeps the resource). */
}

static const struct wl_registry_listener registry_listener = {
	.global = registry_global,
	.global_remove = registry_global_remove,
};

/* ---- dispatch thread ---------------------------------------------------------------- */

static void *dispatch_thread(void *data)
{
	struct fscope_wl_tracker *t = data;
	struct wl_display *display = t->display;
	struct wl_event_queue *queue = t->queue;
	struct pollfd fds[2] = {
		{ .fd = wl_display_get_fd(display), .events = POLLIN },
		{ .fd = t->wake_fd, .events = POLLIN },
	};

	for (;;) {
		int r;

		while (wl_display_prepare_read_queue(display, queue) != 0) {
			if (wl_display_dispatch_queue_pending(display, queue) < 0)
				goto dead;
		}
		/* No flush: our only requests are feedbacks, and the WSI's commit that
		 * follows each one flushes. */
		r = poll(fds, 2, -1);
		if (r < 0) {
			wl_display_cancel_read(display);
			if (errno == EINTR || errno == EAGAIN)
				continue;
			goto dead;
		}
		if (fds[1].revents) {
			wl_display_cancel_read(display);
			return NULL;
		}
		if (fds[0].revents & POLLNVAL) {
			wl_display_cancel_read(display);
			goto dead;
		}
		if (fds[0].revents & (POLLIN | POLLERR | POLLHUP)) {
			/* On hangup this reads EOF and sets the display error. */
			if (wl_display_read_events(display) < 0)
				goto dead;
		} else {
			wl_display_cancel_read(display);
		}
		if (wl_display_dispatch_queue_pending(display, queue) < 0)
			goto dead;
	}

dead:
	/* The app's connection is broken (or was closed under us).  Stop; destroy will
	 * still join and free.  Feedbacks in flight stay pending. */
	atomic_store(&t->dead, true);
	return NULL;
}

static bool start_thread(struct fscope_wl_tracker *t, char *why, size_t why_len)
{
	sigset_t all, old;
	int err;

	/* Our thread must never take the app's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* Set before, so the thread sees it (clock_id listener). */
	t->thread_started = true;
	err = pthread_create(&t->thread, NULL, dispatch_thread, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0) {
		t->thread_started = false;
		fscope_wl_why(why, why_len, "cannot start the dispatch thread: %s", strerror(err));
		return false;
	}
	pthread_setname_np(t->thread, "fscope-wl");
	return true;
}

/* ---- public ------------------------------------------------------------------------- */

static uint64_t count_armed(const struct fscope_wl_tracker *t)
{
	uint64_t armed = 0;

	for (size_t i = 0; i < SLOT_COUNT; i++)
		armed += atomic_load_explicit(&t->slots[i].state, memory_order_relaxed) ==
			 SLOT_ARMED;
	return armed;
}

/* Stops the thread and frees everything.  Accepts a half-built tracker. */
static void tracker_teardown(struct fscope_wl_tracker *t, struct fscope_wl_counts *ret)
{
	uint64_t pending = 0;
	bool sent_destroy = false;

	if (t->thread_started) {
		uint64_t one = 1;
		ssize_t n;

		do {
			n = write(t->wake_fd, &one, sizeof(one));
		} while (n < 0 && errno == EINTR);
		/* The eventfd starts at 0 and is written once, so it cannot be full. */
		pthread_join(t->thread, NULL);
		t->thread_started = false;
	}

	if (ret)
		fscope_wl_tracker_counts(t, ret);

	/* Nothing dispatches our queue any more: destroy every proxy on it, then the
	 * queue.  Late events for these ids are dropped by libwayland (zombies), and
	 * events already queued are freed with the queue. */
	for (size_t i = 0; i < SLOT_COUNT; i++) {
		struct feedback_slot *slot = &t->slots[i];

		if (atomic_load_explicit(&slot->state, memory_order_acquire) != SLOT_ARMED)
			continue;
		wp_presentation_feedback_destroy(slot->proxy);
		slot->proxy = NULL;
		pending++;
	}
	if (ret)
		ret->pending = pending;
	if (t->presentation) {
		wp_presentation_destroy(t->presentation);
		sent_destroy = true;
	}
	if (t->registry)
		wl_registry_destroy(t->registry);
	if (t->surface_wrapper)
		wl_proxy_wrapper_destroy(t->surface_wrapper);
	if (t->display_wrapper)
		wl_proxy_wrapper_destroy(t->display_wrapper);
	/* Send wp_presentation.destroy now if the socket takes it; never wait. */
	if (sent_destroy)
		wl_display_flush(t->display);
	if (t->queue)
		wl_event_queue_destroy(t->queue);
	if (t->wake_fd >= 0)
		close(t->wake_fd);
	free(t);
}

struct fscope_wl_tracker *fscope_wl_tracker_create(struct wl_display *app_display,
						   struct wl_surface *app_surface,
						   char *why, size_t why_len)
{
	struct fscope_wl_tracker *t;
	uint32_t version;
	int r;

	if (!app_display || !app_surface) {
		fscope_wl_why(why, why_len, "no Wayland display or surface");
		return NULL;
	}
	if (wl_display_get_error(app_display) != 0) {
		fscope_wl_why(why, why_len, "the app's Wayland connection already has an error");
		return NULL;
	}

	t = calloc(1, sizeof(*t));
	if (!t) {
		fscope_wl_why(why, why_len, "out of memory");
		return NULL;
	}
	t->display = app_display;
	for (size_t i = 0; i < SLOT_COUNT; i++)
		t->slots[i].tracker = t;

	t->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->wake_fd < 0) {
		fscope_wl_why(why, why_len, "eventfd: %s", strerror(errno));
		goto error;
	}

	t->queue = wl_display_create_queue(app_display);
	if (!t->queue)
		goto error_oom;
	t->display_wrapper = wl_proxy_create_wrapper(app_display);
	if (!t->display_wrapper)
		goto error_oom;
	wl_proxy_set_queue((struct wl_proxy *)t->display_wrapper, t->queue);
	t->surface_wrapper = wl_proxy_create_wrapper(app_surface);
	if (!t->surface_wrapper)
		goto error_oom;
	wl_proxy_set_queue((struct wl_proxy *)t->surface_wrapper, t->queue);

	t->registry = wl_display_get_registry(t->display_wrapper);
	if (!t->registry)
		goto error_oom;
	wl_registry_add_listener(t->registry, &registry_listener, t);
	r = fscope_wl_roundtrip_queue_timeout(app_display, t->display_wrapper, t->queue,
					      SETUP_TIMEOUT_MS);
	if (r < 0)
		goto error_roundtrip;
	if (t->presentation_name == 0) {
		fscope_wl_why(why, why_len, "the compositor does not offer wp_presentation");
		goto error;
	}

	version = t->presentation_version;
	if (version > (uint32_t)wp_presentation_interface.version)
		version = (uint32_t)wp_presentation_interface.version;
	t->presentation = wl_registry_bind(t->registry, t->presentation_name,
					   &wp_presentation_interface, version);
	if (!t->presentation)
		goto error_oom;
	wp_presentation_add_listener(t->presentation, &presentation_listener, t);
	r = fscope_wl_roundtrip_queue_timeout(app_display, t->display_wrapper, t->queue,
					      SETUP_TIMEOUT_MS);
	if (r < 0)
		goto error_roundtrip;
	if (!t->have_clock_id) {
		fscope_wl_why(why, why_len, "the compositor sent no wp_presentation.clock_id");
		goto error;
	}
	if (!clock_prepare(t, why, why_len))
		goto error;

	/* Prime the output cache here, where blocking is acceptable, so the dispatch
	 * thread only ever reads it. */
	fscope_wl_outputs(NULL, 0);

	if (!start_thread(t, why, why_len))
		goto error;
	return t;

error_roundtrip:
	if (r == -ETIMEDOUT)
		fscope_wl_why(why, why_len, "the compositor did not answer within %d ms",
			      SETUP_TIMEOUT_MS);
	else if (r == -ENOMEM)
		fscope_wl_why(why, why_len, "out of memory");
	else
		fscope_wl_why(why, why_len, "the app's Wayland connection failed (error %d)",
			      wl_display_get_error(app_display));
	goto error;
error_oom:
	fscope_wl_why(why, why_len, "out of memory");
error:
	tracker_teardown(t, NULL);
	return NULL;
}

bool fscope_wl_tracker_request(struct fscope_wl_tracker *t, uint64_t present_id)
{
	struct wp_presentation_feedback *proxy;
	struct feedback_slot *slot = NULL;
	uint32_t index = 0;

	if (!t)
		return false;
	if (atomic_load_explicit(&t->dead, memory_order_relaxed))
		goto fail;

	for (uint32_t i = 0; i < SLOT_COUNT; i++) {
		index = (t->next_slot + i) % SLOT_COUNT;
		if (atomic_load_explicit(&t->slots[index].state, memory_order_acquire) ==
		    SLOT_FREE) {
			slot = &t->slots[index];
			break;
		}
	}
	if (!slot)
		goto fail;

	/* Arm before the request goes out, so a finish can never precede the arming.
	 * (It could not anyway: a feedback finishes only after the commit that follows
	 * this call, on this thread.  For the same reason an event cannot be dispatched
	 * between the constructor and add_listener below.) */
	slot->present_id = present_id;
	slot->sync_outputs = 0;
	slot->proxy = NULL;
	seq_begin(&t->request_seq);
	counter_add(&t->requested, 1);
	atomic_store_explicit(&slot->state, SLOT_ARMED, memory_order_release);
	seq_end(&t->request_seq);

	/* The feedback inherits our queue from t->presentation. */
	proxy = wp_presentation_feedback(t->presentation, t->surface_wrapper);
	if (!proxy) {
		seq_begin(&t->request_seq);
		atomic_store_explicit(&t->requested,
				      atomic_load_explicit(&t->requested, memory_order_relaxed) - 1,
				      memory_order_relaxed);
		atomic_store_explicit(&slot->state, SLOT_FREE, memory_order_release);
		seq_end(&t->request_seq);
		goto fail;
	}
	slot->proxy = proxy;
	wp_presentation_feedback_add_listener(proxy, &feedback_listener, slot);
	t->next_slot = (index + 1) % SLOT_COUNT;
	return true;

fail:
	counter_add(&t->failed, 1);
	return false;
}

size_t fscope_wl_tracker_drain(struct fscope_wl_tracker *t, struct fscope_present_feedback *out,
			       size_t max)
{
	size_t tail, head, n;

	if (!t || !out)
		return 0;
	tail = atomic_load_explicit(&t->ring_tail, memory_order_relaxed);
	head = atomic_load_explicit(&t->ring_head, memory_order_acquire);
	n = head - tail;
	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		out[i] = t->ring[(tail + i) & (RING_SIZE - 1)];
	atomic_store_explicit(&t->ring_tail, tail + n, memory_order_release);
	return n;
}

void fscope_wl_tracker_counts(const struct fscope_wl_tracker *t, struct fscope_wl_counts *ret)
{
	/* Our cast-away of const touches only atomics read with loads. */
	struct fscope_wl_tracker *mt = (struct fscope_wl_tracker *)t;
	struct fscope_wl_counts c;
	unsigned spins = 0;

	if (!ret)
		return;
	if (!t) {
		*ret = (struct fscope_wl_counts){ 0 };
		return;
	}
	for (;;) {
		uint32_t r1 = atomic_load_explicit(&mt->request_seq.seq, memory_order_acquire);
		uint32_t f1 = atomic_load_explicit(&mt->finish_seq.seq, memory_order_acquire);
		uint32_t r2, f2;

		if (((r1 | f1) & 1) == 0) {
			c.requested = atomic_load_explicit(&mt->requested, memory_order_relaxed);
			c.failed = atomic_load_explicit(&mt->failed, memory_order_relaxed);
			c.presented = atomic_load_explicit(&mt->presented, memory_order_relaxed);
			c.discarded = atomic_load_explicit(&mt->discarded, memory_order_relaxed);
			c.lost = atomic_load_explicit(&mt->lost, memory_order_relaxed);
			c.pending = count_armed(t);
			atomic_thread_fence(memory_order_acquire);
			r2 = atomic_load_explicit(&mt->request_seq.seq, memory_order_relaxed);
			f2 = atomic_load_explicit(&mt->finish_seq.seq, memory_order_relaxed);
			if (r1 == r2 && f1 == f2)
				break;
		}
		/* A writer is mid-update (a few stores); if it was preempted there, let it
		 * run rather than burn our slice. */
		if (++spins > 64)
			sched_yield();
	}
	*ret = c;
}

bool fscope_wl_tracker_dead(const struct fscope_wl_tracker *t)
{
	if (!t)
		return true;
	return atomic_load_explicit(&((struct fscope_wl_tracker *)t)->dead, memory_order_relaxed);
}

void fscope_wl_tracker_destroy_with_counts(struct fscope_wl_tracker *t,
					   struct fscope_wl_counts *ret)
{
	if (!t)
		return;
	tracker_teardown(t, ret);
}

void fscope_wl_tracker_destroy(struct fscope_wl_tracker *t)
{
	fscope_wl_tracker_destroy_with_counts(t, NULL);
}
