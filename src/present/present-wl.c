/*
 * Wayland presentation-time tracker.
 *
 * Threading model: one dispatch thread per tracker.  A game has one or two Wayland
 * surfaces, so a thread each is cheap, and it keeps every tracker independent: a tracker
 * never waits on another's teardown, and a surface on a second display needs nothing
 * special.  The dispatch thread is the only one that runs our listeners.  It first runs
 * the set-up (registry and clock_id roundtrips, clock measurement, output priming), so
 * that create costs the app no wait; request answers "not ready" until `ready` is stored.
 *
 * Who writes what:
 *   presenting thread: requested, failed, not_ready, orphaned, slot FREE -> ARMED and
 *                      ARMED -> ORPHANED, ring tail.
 *   dispatch thread:   presented, discarded, lost, slot ARMED -> FINISHING -> FREE and
 *                      ORPHANED -> FREE, ring head, everything the set-up learns (published
 *                      by the release store of `ready`), clock offset, why (before `dead`).
 * Each side publishes its counters and slot states under its own sequence counter, so
 * fscope_wl_tracker_counts() can take a snapshot in which
 * requested == presented + discarded + pending + orphaned holds exactly, without a lock.
 * ARMED and FINISHING both count as pending; ARMED -> ORPHANED and ARMED -> FINISHING race
 * (a failed present against a late commit), so both are compare-and-swaps.
 *
 * The app's display can be disconnected under us (wl_display_disconnect before
 * vkDestroySurfaceKHR).  libwayland then frees the display, and every proxy of ours still
 * points into it, so the only safe thing left is to touch nothing.  We remember which
 * socket the display's fd named at create (st_dev, st_ino) and check it whenever the
 * dispatch thread wakes and at teardown; a closed fd (EBADF) or one that now names another
 * file means the display is gone.  (A disconnect that lands between the check and the next
 * libwayland call cannot be seen; the check makes the window a few instructions wide
 * instead of the whole time from the disconnect to the teardown.)  poll() does not return
 * when another thread closes the fd it waits on (it holds its own reference to the file,
 * which also keeps the socket open until it returns), so teardown wakes the thread through
 * the eventfd, having set display_gone first.
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
#include <sys/stat.h>
#include <unistd.h>

#include <wayland-client.h>

#include "presentation-time-client-protocol.h"

#include "util/log.h"
#include "util/private_fd.h"

/* Feedbacks in flight at once.  Weston discards a surface's pending feedback on the next
 * commit, so FIFO and MAILBOX keep two or three in flight; a compositor that holds
 * feedback for a hidden surface can accumulate more, hence the margin. */
#define SLOT_COUNT 256
/* Finished feedbacks not yet drained.  The layer drains every present. */
#define RING_SIZE 256
/* Set-up roundtrips on the app's connection give up after this long. */
#define SETUP_TIMEOUT_MS 1000
/* After each wake the dispatch thread waits this long before it reads again, so what the
 * compositor sends meanwhile is handled in one wake.  It answers every commit (a discarded or
 * presented feedback, a buffer release), and waking for each message cost a fast app on a
 * busy 2-core machine a context switch of ours a frame (vkcube on lavapipe: 1,800 a second).
 * Nothing waits on us meanwhile: the app's own reads queue our events for us, its presents
 * only arm slots, and the records keep the compositor's times, not ours.  A wake itself is
 * what costs (on the project's VM about two thirds of the thread's time is the switch in and
 * out): at 4 ms the demo in MAILBOX paid 2.7 us of our CPU a frame, 260 wakes a second.  So
 * the wait is one 60 Hz refresh, cut short by the presenting thread when it has armed
 * BATCH_SLOTS since the wait began (an app presenting thousands of times a second: one
 * write of the eventfd per BATCH_SLOTS presents). */
#define BATCH_MS 16
#define BATCH_SLOTS (SLOT_COUNT / 4)
/* With no feedback in flight, how often it looks all the same (a present armed meanwhile). */
#define IDLE_MS 100
/* One line of reason, as the frame log keeps it. */
#define WHY_LEN 160

_Static_assert((RING_SIZE & (RING_SIZE - 1)) == 0, "RING_SIZE must be a power of two");

enum slot_state {
	SLOT_FREE = 0,
	SLOT_ARMED,     /* in flight, counted pending */
	SLOT_FINISHING, /* its last event is being handled; still counted pending */
	SLOT_ORPHANED,  /* its present failed: counted orphaned; events make no record */
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
	struct fscope_present_sink sink; /* the creator's, for the outputs the set-up learns */
	struct wl_event_queue *queue;
	struct wl_display *display_wrapper;
	struct wl_surface *surface_wrapper;
	/* Which socket the display's fd named at create: if the fd no longer names it, the
	 * app has disconnected the display. */
	int display_fd;
	dev_t display_dev;
	ino_t display_ino;
	/* The count of requests at which the presenting thread wakes the dispatch thread from
	 * its batch wait (set by that thread before each wait; UINT64_MAX: no wake). */
	_Atomic uint64_t wake_at;
	/* Set by teardown (before the wake) or by the dispatch thread; once true nothing
	 * touches display or any proxy of ours again. */
	_Atomic bool display_gone;

	/* Set-up results: the dispatch thread writes them before the release store of
	 * `ready`; the presenting thread reads presentation only after an acquire of it. */
	struct wl_registry *registry;
	struct wp_presentation *presentation;
	uint32_t presentation_name;
	uint32_t presentation_version;
	_Atomic bool ready;

	/* Dispatch thread only. */
	bool have_clock_id;
	bool clock_ready;             /* clock prepared once; later clock_ids re-prepare */
	struct fscope_wl_clock clock; /* its id is the compositor's clock_id */

	int wake_fd;
	/* Set by teardown before it writes wake_fd; a write without it is a present's. */
	_Atomic bool stopping;
	/* The dispatch thread is in its IDLE_MS sleep: the present that arms the first slot
	 * after it wakes it (once), so that a burst of presents does not fill the slots
	 * meanwhile. */
	_Atomic bool idle;
	pthread_t thread;
	bool thread_started;
	/* why is written once, before the release store of dead (by the dispatch thread, or
	 * by create before the thread exists), and read after an acquire load of it. */
	_Atomic bool dead;
	char why[WHY_LEN];

	/* Presenting-thread side. */
	alignas(64) struct seq_writer request_seq;
	_Atomic uint64_t requested;
	_Atomic uint64_t failed;
	_Atomic uint64_t not_ready;
	_Atomic uint64_t orphaned;
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

/* ---- the app's display: still the one we were created on? -------------------------- */

/* True while display_fd still names the socket it named at create.  Only a closed fd or
 * another file counts as gone: any other fstat failure is no proof, and believing the
 * display gone when it is not would abandon a prepared read and hang the app's reads. */
static bool display_fd_same(const struct fscope_wl_tracker *t)
{
	struct stat st;

	if (fstat(t->display_fd, &st) == 0)
		return st.st_dev == t->display_dev && st.st_ino == t->display_ino;
	return errno != EBADF;
}

static bool display_gone(struct fscope_wl_tracker *t)
{
	if (atomic_load_explicit(&t->display_gone, memory_order_acquire))
		return true;
	if (display_fd_same(t))
		return false;
	atomic_store_explicit(&t->display_gone, true, memory_order_release);
	return true;
}

static bool watch_display_gone(void *data)
{
	return display_gone(data);
}

#define WHY_DISPLAY_GONE "the app disconnected its Wayland display before destroying the surface"

/* Dispatch thread (or create before it starts): the tracker stops for good, saying why. */
static void tracker_stop(struct fscope_wl_tracker *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void tracker_stop(struct fscope_wl_tracker *t, const char *fmt, ...)
{
	va_list ap;

	if (atomic_load_explicit(&t->dead, memory_order_relaxed))
		return; /* the first reason stands */
	va_start(ap, fmt);
	vsnprintf(t->why, sizeof(t->why), fmt, ap);
	va_end(ap);
	atomic_store_explicit(&t->dead, true, memory_order_release);
}

/* ---- wp_presentation and its feedback ---------------------------------------------- */

static void presentation_clock_id(void *data, struct wp_presentation *presentation,
				  uint32_t clk_id)
{
	struct fscope_wl_tracker *t = data;
	char why[WHY_LEN];

	/* Sent once, on bind, during the set-up.  Should a compositor send it again, follow
	 * it, and stop the tracker if the new clock cannot be read. */
	if (t->have_clock_id && t->clock.id == (clockid_t)clk_id)
		return;
	t->clock.id = (clockid_t)clk_id;
	t->have_clock_id = true;
	if (t->clock_ready && !fscope_wl_clock_prepare(&t->clock, why, sizeof(why)))
		tracker_stop(t, "%s", why);
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
	uint32_t expected = SLOT_ARMED;
	bool lost;

	/* The compositor destroys the object after this event; drop our proxy. */
	wp_presentation_feedback_destroy(proxy);

	if (!atomic_compare_exchange_strong_explicit(&slot->state, &expected, SLOT_FINISHING,
						     memory_order_acquire,
						     memory_order_acquire)) {
		/* ORPHANED: its present failed, so this commit was a later frame's.  Already
		 * counted (orphaned); only the slot comes back. */
		atomic_store_explicit(&slot->state, SLOT_FREE, memory_order_release);
		return;
	}

	/* Record and count in one section: a reader that counts, then drains until the ring
	 * is empty (frame.c at teardown and exit), sees each record in both or neither. */
	seq_begin(&t->finish_seq);
	ring_push(t, rec, &lost);
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
		fscope_wl_clock_to_mono_ns(&t->clock, (int64_t)(tv_sec * 1000000000 + tv_nsec));
	if (refresh != 0)
		rec.output_index = fscope_wl_outputs_match_refresh(refresh, &rec.output_ambiguous,
								   &rec.output_refresh_mhz);
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

/* Stops the tracker for a failed set-up roundtrip, saying why in words. */
static void setup_roundtrip_failed(struct fscope_wl_tracker *t, int r)
{
	if (r == -ENOTCONN)
		tracker_stop(t, WHY_DISPLAY_GONE);
	else if (r == -ECANCELED)
		tracker_stop(t, "the surface was destroyed before presentation tracking was set up");
	else if (r == -ETIMEDOUT)
		tracker_stop(t, "the compositor did not answer within %d ms", SETUP_TIMEOUT_MS);
	else if (r == -ENOMEM)
		tracker_stop(t, "out of memory");
	else
		tracker_stop(t, "the app's Wayland connection failed (error %d)",
			     wl_display_get_error(t->display));
}

/* Everything create used to wait for, on our thread.  True when ready. */
static bool setup(struct fscope_wl_tracker *t)
{
	const struct fscope_wl_watch watch = {
		.cancel_fd = t->wake_fd,
		.gone = watch_display_gone,
		.data = t,
	};
	char why[WHY_LEN];
	uint32_t version;
	int r;

	if (display_gone(t)) {
		tracker_stop(t, WHY_DISPLAY_GONE);
		return false;
	}
	t->registry = wl_display_get_registry(t->display_wrapper);
	if (!t->registry) {
		tracker_stop(t, "out of memory");
		return false;
	}
	wl_registry_add_listener(t->registry, &registry_listener, t);
	r = fscope_wl_roundtrip_queue_timeout(t->display, t->display_wrapper, t->queue,
					      SETUP_TIMEOUT_MS, &watch);
	if (r < 0) {
		setup_roundtrip_failed(t, r);
		return false;
	}
	if (t->presentation_name == 0) {
		tracker_stop(t, "the compositor does not offer wp_presentation");
		return false;
	}

	version = t->presentation_version;
	if (version > (uint32_t)wp_presentation_interface.version)
		version = (uint32_t)wp_presentation_interface.version;
	t->presentation = wl_registry_bind(t->registry, t->presentation_name,
					   &wp_presentation_interface, version);
	if (!t->presentation) {
		tracker_stop(t, "out of memory");
		return false;
	}
	wp_presentation_add_listener(t->presentation, &presentation_listener, t);
	r = fscope_wl_roundtrip_queue_timeout(t->display, t->display_wrapper, t->queue,
					      SETUP_TIMEOUT_MS, &watch);
	if (r < 0) {
		setup_roundtrip_failed(t, r);
		return false;
	}
	if (!t->have_clock_id) {
		tracker_stop(t, "the compositor sent no wp_presentation.clock_id");
		return false;
	}
	if (!fscope_wl_clock_prepare(&t->clock, why, sizeof(why))) {
		tracker_stop(t, "%s", why);
		return false;
	}
	t->clock_ready = true;

	/* Ready before the outputs are known: the first frames matter more than their output
	 * (records made before the cache fills say output -1, with the claimed refresh). */
	atomic_store_explicit(&t->ready, true, memory_order_release);

	/* So that this thread only ever reads the cache afterwards.  Teardown cancels it. */
	fscope_wl_outputs_prime(t->wake_fd, &t->sink);
	return true;
}

static uint64_t count_pending(const struct fscope_wl_tracker *t);

static void *dispatch_thread(void *data)
{
	struct fscope_wl_tracker *t = data;
	struct wl_display *display = t->display;
	struct wl_event_queue *queue = t->queue;
	struct pollfd fds[2] = {
		{ .fd = t->display_fd, .events = POLLIN },
		{ .fd = t->wake_fd, .events = POLLIN },
	};

	if (!setup(t)) {
		fscope_log(FSCOPE_LOG_INFO, "presentation tracking is off for a surface: %s", t->why);
		return NULL;
	}
	fscope_log(FSCOPE_LOG_INFO, "presentation tracking is on for a surface (the compositor "
		   "offers wp_presentation version %u, clock id %d)", t->presentation_version,
		   (int)t->clock.id);

	for (;;) {
		struct pollfd socket_fd = fds[0];
		int r;

		/* What the app's own reads of the socket queued for us since the last wake. */
		if (wl_display_dispatch_queue_pending(display, queue) < 0)
			goto broken;
		/* What is still in the socket (an app that reads it seldom), read as one more
		 * reader for an instant: never across a wait, since libwayland makes every
		 * reader but the last wait for the last one's read, and an intent of ours held
		 * through a sleep made the app's own reads wait for our thread to be
		 * scheduled. An app thread that reads it first leaves nothing: libwayland
		 * takes EAGAIN as no events. On hangup this reads EOF and sets the display
		 * error. */
		r = poll(&socket_fd, 1, 0);
		if (display_gone(t)) {
			tracker_stop(t, WHY_DISPLAY_GONE);
			return NULL;
		}
		if (r < 0 && errno != EINTR && errno != EAGAIN)
			goto broken;
		if (r > 0 && (socket_fd.revents & POLLNVAL))
			goto broken;
		if (r > 0 && (socket_fd.revents & (POLLIN | POLLERR | POLLHUP)) &&
		    wl_display_prepare_read_queue(display, queue) == 0 &&
		    wl_display_read_events(display) < 0)
			goto broken;
		if (wl_display_dispatch_queue_pending(display, queue) < 0)
			goto broken;
		/* One wake per BATCH_MS while feedbacks are in flight, or sooner when presents arm
		 * BATCH_SLOTS more (the presenting thread wakes us then); with none, until a
		 * present arms one (it wakes us: the flag is set before the last look at the
		 * slots, and the present looks at the flag after arming, each behind a full
		 * fence) or IDLE_MS. Teardown wakes it at any time. */
		bool idle = count_pending(t) == 0;
		if (idle) {
			atomic_store(&t->idle, true);
			atomic_thread_fence(memory_order_seq_cst);
			idle = count_pending(t) == 0;
		}
		if (!idle)
			atomic_store(&t->wake_at, atomic_load_explicit(&t->requested,
								       memory_order_relaxed) + BATCH_SLOTS);
		r = poll(&fds[1], 1, idle ? IDLE_MS : BATCH_MS);
		atomic_store(&t->idle, false);
		if (display_gone(t)) {
			tracker_stop(t, WHY_DISPLAY_GONE);
			return NULL;
		}
		if (r > 0) {
			uint64_t count;
			if (read(t->wake_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
				goto broken;
			if (atomic_load(&t->stopping)) {
				/* What the app's reads queued for us meanwhile is handled, as it
				 * would have been without the wait. */
				wl_display_dispatch_queue_pending(display, queue);
				return NULL;
			}
		}
	}

broken:
	/* The app's connection is broken.  Stop; destroy will still join and free.
	 * Feedbacks in flight stay pending. */
	tracker_stop(t, "the app's Wayland connection failed (error %d)",
		     wl_display_get_error(display));
	return NULL;
}

static bool start_thread(struct fscope_wl_tracker *t, char *why, size_t why_len)
{
	sigset_t all, old;
	int err;

	/* Our thread must never take the app's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t->thread, NULL, dispatch_thread, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0) {
		fscope_wl_why(why, why_len, "cannot start the dispatch thread: %s", strerror(err));
		return false;
	}
	t->thread_started = true;
	pthread_setname_np(t->thread, "fscope-wl");
	return true;
}

/* ---- public ------------------------------------------------------------------------- */

static uint64_t count_pending(const struct fscope_wl_tracker *t)
{
	uint64_t pending = 0;

	for (size_t i = 0; i < SLOT_COUNT; i++) {
		uint32_t state = atomic_load_explicit(&t->slots[i].state, memory_order_relaxed);

		pending += state == SLOT_ARMED || state == SLOT_FINISHING;
	}
	return pending;
}

/* Stops the thread and frees everything.  Accepts a half-built tracker. */
static void tracker_teardown(struct fscope_wl_tracker *t, struct fscope_wl_counts *ret)
{
	bool gone;

	/* Decide before the wake, so that the thread reads the flag before it could touch
	 * a display that is no more. */
	if (t->display_fd >= 0)
		(void)display_gone(t);
	if (t->thread_started) {
		uint64_t one = 1;
		ssize_t n;

		atomic_store(&t->stopping, true);
		do {
			n = write(t->wake_fd, &one, sizeof(one));
		} while (n < 0 && errno == EINTR);
		/* Presents write it at most once per wait and the thread reads it each wake,
		 * so it is far from full. */
		pthread_join(t->thread, NULL);
		t->thread_started = false;
	}
	gone = atomic_load_explicit(&t->display_gone, memory_order_acquire);

	if (ret) {
		fscope_wl_tracker_counts(t, ret);
		ret->display_gone = gone;
	}
	if (gone) {
		/* Every call below would lock the freed display: leak instead.  Feedbacks in
		 * flight stay counted as pending. */
		goto out;
	}

	/* Nothing dispatches our queue any more: destroy every proxy on it, then the
	 * queue.  Late events for these ids are dropped by libwayland (zombies), and
	 * events already queued are freed with the queue. */
	for (size_t i = 0; i < SLOT_COUNT; i++) {
		struct feedback_slot *slot = &t->slots[i];
		uint32_t state = atomic_load_explicit(&slot->state, memory_order_acquire);

		if (state == SLOT_FREE || !slot->proxy)
			continue;
		wp_presentation_feedback_destroy(slot->proxy);
		slot->proxy = NULL;
	}
	if (t->presentation)
		wp_presentation_destroy(t->presentation);
	if (t->registry)
		wl_registry_destroy(t->registry);
	if (t->surface_wrapper)
		wl_proxy_wrapper_destroy(t->surface_wrapper);
	if (t->display_wrapper)
		wl_proxy_wrapper_destroy(t->display_wrapper);
	/* Send wp_presentation.destroy now if the socket takes it; never wait. */
	if (t->presentation)
		wl_display_flush(t->display);
	if (t->queue)
		wl_event_queue_destroy(t->queue);
out:
	fscope_fd_close(t->wake_fd);
	free(t);
}

struct fscope_wl_tracker *fscope_wl_tracker_create(struct wl_display *app_display,
						   struct wl_surface *app_surface,
						   const struct fscope_present_sink *sink,
						   char *why, size_t why_len)
{
	struct fscope_wl_tracker *t;
	struct stat st;

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
	if (sink)
		t->sink = *sink;
	t->wake_fd = -1;
	atomic_init(&t->wake_at, UINT64_MAX);
	t->display_fd = -1;
	for (size_t i = 0; i < SLOT_COUNT; i++)
		t->slots[i].tracker = t;

	if (fstat(wl_display_get_fd(app_display), &st) != 0) {
		fscope_wl_why(why, why_len, "the app's Wayland socket cannot be examined: %s",
			      strerror(errno));
		goto error;
	}
	t->display_fd = wl_display_get_fd(app_display);
	t->display_dev = st.st_dev;
	t->display_ino = st.st_ino;

	t->wake_fd = fscope_fd_high(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
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

	if (!start_thread(t, why, why_len))
		goto error;
	return t;

error_oom:
	fscope_wl_why(why, why_len, "out of memory");
error:
	tracker_teardown(t, NULL);
	return NULL;
}

enum fscope_wl_request fscope_wl_tracker_request(struct fscope_wl_tracker *t, uint64_t present_id)
{
	struct wp_presentation_feedback *proxy;
	struct feedback_slot *slot = NULL;
	uint32_t index = 0;

	if (!t)
		return FSCOPE_WL_REQUEST_FAILED;
	/* Acquire: pairs with the set-up's release, publishing t->presentation. */
	if (!atomic_load_explicit(&t->ready, memory_order_acquire)) {
		seq_begin(&t->request_seq);
		counter_add(&t->not_ready, 1);
		seq_end(&t->request_seq);
		return FSCOPE_WL_NOT_READY;
	}
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

	/*
	 * The proxy exists, with its listener, before the request that names it is
	 * marshalled: the compositor cannot know the id before that, so no event of it can
	 * be queued, let alone dispatched, while it has no listener (libwayland would drop
	 * such an event silently and the slot would stay pending forever).  The generated
	 * constructor (wp_presentation_feedback()) would create and send in one step and
	 * leave a window before add_listener in which another app thread could flush the
	 * request and commit the surface.  wl_proxy_create takes our queue from
	 * t->presentation.
	 */
	proxy = (struct wp_presentation_feedback *)wl_proxy_create(
		(struct wl_proxy *)t->presentation, &wp_presentation_feedback_interface);
	if (!proxy)
		goto fail;
	wp_presentation_feedback_add_listener(proxy, &feedback_listener, slot);
	slot->present_id = present_id;
	slot->sync_outputs = 0;
	slot->proxy = proxy;

	/* Arm before the request goes out, so a finish can never precede the arming. */
	seq_begin(&t->request_seq);
	counter_add(&t->requested, 1);
	atomic_store_explicit(&slot->state, SLOT_ARMED, memory_order_release);
	seq_end(&t->request_seq);
	uint64_t requested = atomic_load_explicit(&t->requested, memory_order_relaxed);

	/* wp_presentation.feedback(surface, new_id): with no interface given, libwayland
	 * marshals our existing proxy's id as the new_id. */
	wl_proxy_marshal_flags((struct wl_proxy *)t->presentation, WP_PRESENTATION_FEEDBACK, NULL,
			       wl_proxy_get_version((struct wl_proxy *)t->presentation), 0,
			       t->surface_wrapper, proxy);
	t->next_slot = (index + 1) % SLOT_COUNT;
	/* The first in flight after a quiet spell: the dispatch thread may be in its long
	 * sleep (see dispatch_thread); one write on this thread then.  While presents keep
	 * feedbacks in flight, one write per BATCH_SLOTS of them, so that a fast app never
	 * runs out of slots during the thread's batch wait. */
	atomic_thread_fence(memory_order_seq_cst);
	uint64_t wake_at = atomic_load_explicit(&t->wake_at, memory_order_relaxed);
	if ((atomic_load_explicit(&t->idle, memory_order_relaxed) &&
	     atomic_exchange(&t->idle, false)) ||
	    (requested >= wake_at &&
	     atomic_compare_exchange_strong(&t->wake_at, &wake_at, UINT64_MAX))) {
		uint64_t one = 1;
		(void)!write(t->wake_fd, &one, sizeof(one));
	}
	return FSCOPE_WL_REQUESTED;

fail:
	seq_begin(&t->request_seq);
	counter_add(&t->failed, 1);
	seq_end(&t->request_seq);
	return FSCOPE_WL_REQUEST_FAILED;
}

void fscope_wl_tracker_present_failed(struct fscope_wl_tracker *t, uint64_t present_id)
{
	if (!t)
		return;
	/* Newest first: the failed present is almost always the latest request.  Only this
	 * thread writes present_id, so reading it here needs no ordering. */
	for (uint32_t i = 1; i <= SLOT_COUNT; i++) {
		struct feedback_slot *slot = &t->slots[(t->next_slot + SLOT_COUNT - i) % SLOT_COUNT];
		uint32_t expected = SLOT_ARMED;
		bool orphaned;

		if (atomic_load_explicit(&slot->state, memory_order_relaxed) != SLOT_ARMED ||
		    slot->present_id != present_id)
			continue;
		seq_begin(&t->request_seq);
		/* Loses to the dispatch thread only if the feedback is already finishing: the
		 * present had committed after all, and the record describes that commit. */
		orphaned = atomic_compare_exchange_strong_explicit(
			&slot->state, &expected, SLOT_ORPHANED, memory_order_acq_rel,
			memory_order_relaxed);
		if (orphaned)
			counter_add(&t->orphaned, 1);
		seq_end(&t->request_seq);
		return;
	}
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
	struct fscope_wl_counts c = { 0 };
	unsigned spins = 0;

	if (!ret)
		return;
	if (!t) {
		*ret = c;
		return;
	}
	for (;;) {
		uint32_t r1 = atomic_load_explicit(&mt->request_seq.seq, memory_order_acquire);
		uint32_t f1 = atomic_load_explicit(&mt->finish_seq.seq, memory_order_acquire);
		uint32_t r2, f2;

		if (((r1 | f1) & 1) == 0) {
			c.requested = atomic_load_explicit(&mt->requested, memory_order_relaxed);
			c.failed = atomic_load_explicit(&mt->failed, memory_order_relaxed);
			c.not_ready = atomic_load_explicit(&mt->not_ready, memory_order_relaxed);
			c.orphaned = atomic_load_explicit(&mt->orphaned, memory_order_relaxed);
			c.presented = atomic_load_explicit(&mt->presented, memory_order_relaxed);
			c.discarded = atomic_load_explicit(&mt->discarded, memory_order_relaxed);
			c.lost = atomic_load_explicit(&mt->lost, memory_order_relaxed);
			c.pending = count_pending(t);
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
	c.display_gone = atomic_load_explicit(&mt->display_gone, memory_order_relaxed);
	*ret = c;
}

bool fscope_wl_tracker_ready(const struct fscope_wl_tracker *t)
{
	struct fscope_wl_tracker *mt = (struct fscope_wl_tracker *)t;

	return t && atomic_load_explicit(&mt->ready, memory_order_acquire) &&
	       !atomic_load_explicit(&mt->dead, memory_order_relaxed);
}

bool fscope_wl_tracker_dead(const struct fscope_wl_tracker *t)
{
	if (!t)
		return true;
	return atomic_load_explicit(&((struct fscope_wl_tracker *)t)->dead, memory_order_acquire);
}

bool fscope_wl_tracker_why(const struct fscope_wl_tracker *t, char *buf, size_t len)
{
	struct fscope_wl_tracker *mt = (struct fscope_wl_tracker *)t;

	if (!t) {
		fscope_wl_why(buf, len, "no tracker");
		return true;
	}
	/* Acquire: pairs with tracker_stop's release, so why is complete. */
	if (atomic_load_explicit(&mt->dead, memory_order_acquire)) {
		fscope_wl_why(buf, len, "%s", t->why);
		return true;
	}
	if (atomic_load_explicit(&mt->display_gone, memory_order_acquire) || !display_fd_same(t)) {
		fscope_wl_why(buf, len, WHY_DISPLAY_GONE);
		return true;
	}
	if (!atomic_load_explicit(&mt->ready, memory_order_acquire)) {
		fscope_wl_why(buf, len, "presentation tracking was still being set up "
			      "(binding wp_presentation on the app's connection)");
		return true;
	}
	fscope_wl_why(buf, len, "%s", "");
	return false;
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

/* ---- the frame log's interface ---- */

static enum fscope_wl_request ops_request(void *t, uint64_t present_id, uint64_t serial)
{
	(void)serial; /* feedback binds to the next commit: no serial to match */
	return fscope_wl_tracker_request(t, present_id);
}

static void ops_present_failed(void *t, uint64_t present_id)
{
	fscope_wl_tracker_present_failed(t, present_id);
}

static size_t ops_drain(void *t, struct fscope_present_feedback *out, size_t max)
{
	return fscope_wl_tracker_drain(t, out, max);
}

static void ops_counts(const void *t, struct fscope_wl_counts *ret)
{
	fscope_wl_tracker_counts(t, ret);
}

static bool ops_why(const void *t, char *buf, size_t len)
{
	return fscope_wl_tracker_why(t, buf, len);
}

static void ops_destroy(void *t, struct fscope_wl_counts *ret)
{
	fscope_wl_tracker_destroy_with_counts(t, ret);
}

const struct fscope_present_ops fscope_wl_present_ops = {
	ops_request, ops_present_failed, ops_drain, ops_counts, ops_why, ops_destroy,
};
