/*
 * test-present-wl: drives the Wayland presentation tracker the way a Vulkan app and
 * Mesa's WSI would, against a running compositor ($WAYLAND_DISPLAY, e.g. headless
 * Weston), and checks the answers.
 *
 *   (a) FIFO-like: one commit per frame callback         -> every frame presented
 *   (b) MAILBOX-like: commits as fast as buffers allow     -> some frames discarded
 *   (c) destroy with a feedback pending                    -> returns at once, app unharmed
 *   (d) a present that failed before its commit            -> its feedback is orphaned
 *   (e) the app disconnects its display before destroy     -> nothing touched, counts kept
 *   (f) a compositor that never answers (socketpair)      -> create returns at once, set-up
 *                                                             dies after 1 s and says why
 *   plus create/destroy cycles (some torn down mid set-up), and an app thread dispatching
 *   the default queue (or hammering it with roundtrips) the whole time.
 * On a compositor without wp_presentation it checks that the tracker dies in its set-up
 * and says why instead.
 *
 * usage: test-present-wl [TEST...]   (default: all; TEST is a name from the table in main,
 *                                     e.g. `silent orphaned disconnect` under valgrind)
 * Exit: 0 pass, 1 fail, 77 skip (no WAYLAND_DISPLAY, no connection, no xdg_wm_base/wl_shm).
 *
 * Manual mode `--compositor-dies`: sets up a tracker with a feedback pending, then waits
 * (up to 60 s) for the compositor to be killed and checks that destroy still returns.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <wayland-client.h>

#include "present-wl.h"
#include "xdg-shell-client-protocol.h"

#define WIDTH 64
#define HEIGHT 64
#define STRIDE (WIDTH * 4)
#define BUFFER_COUNT 3
#define FIFO_FRAMES 60
#define MAILBOX_FRAMES 400
#define FEEDBACK_WAIT_NS (3 * 1000000000LL)
/* The tracker's set-up gives up on a silent compositor after 1000 ms (SETUP_TIMEOUT_MS):
 * a create or destroy that waited on it would take at least that long. */
#define SETUP_TIMEOUT_NS 1000000000LL
#define NONBLOCKING_NS (SETUP_TIMEOUT_NS / 4)
#define MAX_RECORDS 1024

static int failures;
/* What fscope_wl_outputs() reported, to judge output_index and output_ambiguous. */
static struct fscope_output_info known_outputs[8];
static size_t known_output_count;

#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);    \
			fprintf(stderr, __VA_ARGS__);                                      \
			fprintf(stderr, "\n");                                             \
			failures++;                                                        \
		}                                                                          \
	} while (0)

struct buffer {
	struct wl_buffer *wl_buffer;
	uint32_t *pixels;
	bool busy;
};

struct app {
	struct wl_display *display;
	struct wl_compositor *compositor;
	struct wl_shm *shm;
	struct xdg_wm_base *wm_base;
	uint32_t presentation_name;
	bool has_output; /* the compositor advertises wl_output (we never bind it here) */

	struct wl_surface *surface;
	struct xdg_surface *xdg_surface;
	struct xdg_toplevel *toplevel;
	_Atomic bool configured;

	/* "WSI" side: its own queue, as Mesa's WSI has. */
	struct wl_event_queue *wsi_queue;
	struct wl_surface *wsi_surface;
	struct wl_shm *wsi_shm;
	struct buffer buffers[BUFFER_COUNT];
	void *pool_data;
	size_t pool_size;
	bool frame_done;

	/* The app's own event thread. */
	pthread_t app_thread;
	bool app_thread_running;
	_Atomic bool app_thread_stop;
	_Atomic bool app_thread_roundtrips; /* hammer with roundtrips instead of dispatch */
	_Atomic uint64_t app_thread_iterations;
	_Atomic int app_thread_error;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL: test timed out (hang)\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

/* ---- listeners ---------------------------------------------------------------------- */

static void wm_base_ping(void *data, struct xdg_wm_base *wm_base, uint32_t serial)
{
	xdg_wm_base_pong(wm_base, serial);
}

static const struct xdg_wm_base_listener wm_base_listener = { .ping = wm_base_ping };

static void xdg_surface_configure(void *data, struct xdg_surface *xdg_surface, uint32_t serial)
{
	struct app *app = data;

	xdg_surface_ack_configure(xdg_surface, serial);
	atomic_store(&app->configured, true);
}

static const struct xdg_surface_listener xdg_surface_listener = {
	.configure = xdg_surface_configure,
};

static void toplevel_configure(void *data, struct xdg_toplevel *toplevel, int32_t width,
			       int32_t height, struct wl_array *states)
{
}

static void toplevel_close(void *data, struct xdg_toplevel *toplevel)
{
}

static void toplevel_configure_bounds(void *data, struct xdg_toplevel *toplevel, int32_t width,
				      int32_t height)
{
}

static void toplevel_wm_capabilities(void *data, struct xdg_toplevel *toplevel,
				     struct wl_array *capabilities)
{
}

static const struct xdg_toplevel_listener toplevel_listener = {
	.configure = toplevel_configure,
	.close = toplevel_close,
	.configure_bounds = toplevel_configure_bounds,
	.wm_capabilities = toplevel_wm_capabilities,
};

static void registry_global(void *data, struct wl_registry *registry, uint32_t name,
			    const char *interface, uint32_t version)
{
	struct app *app = data;

	if (strcmp(interface, wl_compositor_interface.name) == 0 && !app->compositor) {
		app->compositor = wl_registry_bind(registry, name, &wl_compositor_interface,
						   version < 4 ? version : 4);
	} else if (strcmp(interface, wl_shm_interface.name) == 0 && !app->shm) {
		app->shm = wl_registry_bind(registry, name, &wl_shm_interface, 1);
	} else if (strcmp(interface, xdg_wm_base_interface.name) == 0 && !app->wm_base) {
		uint32_t v = (uint32_t)xdg_wm_base_interface.version;

		app->wm_base = wl_registry_bind(registry, name, &xdg_wm_base_interface,
						version < v ? version : v);
		xdg_wm_base_add_listener(app->wm_base, &wm_base_listener, app);
	} else if (strcmp(interface, "wp_presentation") == 0) {
		app->presentation_name = name;
	} else if (strcmp(interface, wl_output_interface.name) == 0) {
		app->has_output = true;
	}
}

static void registry_global_remove(void *data, struct wl_registry *registry, uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = {
	.global = registry_global,
	.global_remove = registry_global_remove,
};

static void buffer_release(void *data, struct wl_buffer *wl_buffer)
{
	struct buffer *buffer = data;

	buffer->busy = false;
}

static const struct wl_buffer_listener buffer_listener = { .release = buffer_release };

static void frame_done(void *data, struct wl_callback *callback, uint32_t time)
{
	struct app *app = data;

	app->frame_done = true;
	wl_callback_destroy(callback);
}

static const struct wl_callback_listener frame_listener = { .done = frame_done };

/* ---- the app's event thread ------------------------------------------------------------ */

static void *app_thread_main(void *data)
{
	struct app *app = data;

	while (!atomic_load(&app->app_thread_stop)) {
		int r;

		if (atomic_load(&app->app_thread_roundtrips))
			r = wl_display_roundtrip(app->display);
		else
			r = wl_display_dispatch(app->display);
		if (r < 0) {
			atomic_store(&app->app_thread_error, errno ? errno : -1);
			break;
		}
		atomic_fetch_add(&app->app_thread_iterations, 1);
	}
	return NULL;
}

static void start_app_thread(struct app *app, bool roundtrips)
{
	atomic_store(&app->app_thread_stop, false);
	atomic_store(&app->app_thread_roundtrips, roundtrips);
	atomic_store(&app->app_thread_iterations, 0);
	if (pthread_create(&app->app_thread, NULL, app_thread_main, app) != 0) {
		CHECK(false, "pthread_create");
		return;
	}
	app->app_thread_running = true;
}

static void sync_ignore(void *data, struct wl_callback *callback, uint32_t serial)
{
	wl_callback_destroy(callback);
}

static const struct wl_callback_listener sync_ignore_listener = { .done = sync_ignore };

static void stop_app_thread(struct app *app)
{
	struct wl_callback *wake;

	if (!app->app_thread_running)
		return;
	atomic_store(&app->app_thread_stop, true);
	/* An event on the default queue makes wl_display_dispatch return. */
	wake = wl_display_sync(app->display);
	wl_callback_add_listener(wake, &sync_ignore_listener, NULL);
	wl_display_flush(app->display);
	pthread_join(app->app_thread, NULL);
	app->app_thread_running = false;
	CHECK(atomic_load(&app->app_thread_error) == 0, "app thread: display error %d",
	      atomic_load(&app->app_thread_error));
}

/* ---- window and buffers -------------------------------------------------------------- */

static bool create_window(struct app *app)
{
	struct wl_shm_pool *pool;
	int fd;

	app->surface = wl_compositor_create_surface(app->compositor);
	app->xdg_surface = xdg_wm_base_get_xdg_surface(app->wm_base, app->surface);
	xdg_surface_add_listener(app->xdg_surface, &xdg_surface_listener, app);
	app->toplevel = xdg_surface_get_toplevel(app->xdg_surface);
	xdg_toplevel_add_listener(app->toplevel, &toplevel_listener, app);
	xdg_toplevel_set_title(app->toplevel, "framescope test-present-wl");
	wl_surface_commit(app->surface);
	while (!atomic_load(&app->configured))
		if (wl_display_dispatch(app->display) < 0)
			return false;

	app->wsi_queue = wl_display_create_queue(app->display);
	app->wsi_surface = wl_proxy_create_wrapper(app->surface);
	app->wsi_shm = wl_proxy_create_wrapper(app->shm);
	if (!app->wsi_queue || !app->wsi_surface || !app->wsi_shm)
		return false;
	wl_proxy_set_queue((struct wl_proxy *)app->wsi_surface, app->wsi_queue);
	wl_proxy_set_queue((struct wl_proxy *)app->wsi_shm, app->wsi_queue);

	app->pool_size = (size_t)STRIDE * HEIGHT * BUFFER_COUNT;
	fd = memfd_create("test-present-wl", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)app->pool_size) < 0)
		return false;
	app->pool_data = mmap(NULL, app->pool_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (app->pool_data == MAP_FAILED)
		return false;
	pool = wl_shm_create_pool(app->wsi_shm, fd, (int32_t)app->pool_size);
	for (int i = 0; i < BUFFER_COUNT; i++) {
		struct buffer *b = &app->buffers[i];

		b->wl_buffer = wl_shm_pool_create_buffer(pool, i * STRIDE * HEIGHT, WIDTH, HEIGHT,
							 STRIDE, WL_SHM_FORMAT_XRGB8888);
		b->pixels = (uint32_t *)((char *)app->pool_data + (size_t)i * STRIDE * HEIGHT);
		wl_buffer_add_listener(b->wl_buffer, &buffer_listener, b);
	}
	wl_shm_pool_destroy(pool);
	close(fd);
	return wl_display_roundtrip_queue(app->display, app->wsi_queue) >= 0;
}

static struct buffer *acquire_buffer(struct app *app)
{
	for (;;) {
		for (int i = 0; i < BUFFER_COUNT; i++)
			if (!app->buffers[i].busy)
				return &app->buffers[i];
		if (wl_display_dispatch_queue(app->display, app->wsi_queue) < 0)
			return NULL;
	}
}

/* The WSI's part of a present: attach/damage/commit/flush, and for FIFO wait for the frame
 * callback.  request (may be NULL) runs right before the commit, as the layer's hook does. */
static bool commit_frame(struct app *app, bool fifo, struct fscope_wl_tracker *t, uint64_t id)
{
	struct buffer *b = acquire_buffer(app);

	if (!b)
		return false;
	for (int i = 0; i < WIDTH * HEIGHT; i++)
		b->pixels[i] = 0xff000000u | (uint32_t)(id * 0x010203u);
	if (fifo) {
		struct wl_callback *cb = wl_surface_frame(app->wsi_surface);

		app->frame_done = false;
		wl_callback_add_listener(cb, &frame_listener, app);
	}
	if (t)
		CHECK(fscope_wl_tracker_request(t, id) == FSCOPE_WL_REQUESTED, "request %llu failed",
		      (unsigned long long)id);
	wl_surface_attach(app->surface, b->wl_buffer, 0, 0);
	wl_surface_damage_buffer(app->surface, 0, 0, WIDTH, HEIGHT);
	wl_surface_commit(app->surface);
	b->busy = true;
	if (wl_display_flush(app->display) < 0 && errno != EAGAIN)
		return false;
	if (fifo) {
		while (!app->frame_done)
			if (wl_display_dispatch_queue(app->display, app->wsi_queue) < 0)
				return false;
	}
	return true;
}

/* One "vkQueuePresentKHR" through the layer. */
static bool present(struct app *app, struct fscope_wl_tracker *t, uint64_t id, bool fifo)
{
	return commit_frame(app, fifo, t, id);
}

/* ---- checks ------------------------------------------------------------------------- */

struct run {
	struct fscope_present_feedback records[MAX_RECORDS];
	size_t count;
	/* When each record was drained, for "presented shortly before we heard of it". */
	int64_t drained_at[MAX_RECORDS];
	size_t stale; /* presented records more than 1 s before their drain, or after it */
};

static void drain_all(struct fscope_wl_tracker *t, struct run *run)
{
	size_t n;

	do {
		n = fscope_wl_tracker_drain(t, run->records + run->count, MAX_RECORDS - run->count);
		for (size_t i = run->count; i < run->count + n; i++) {
			const struct fscope_present_feedback *r = &run->records[i];
			int64_t now = mono_ns();

			if (r->outcome == FSCOPE_PRESENT_PRESENTED &&
			    (r->presented_mono_ns > now || now - r->presented_mono_ns >= 1000000000)) {
				fprintf(stderr, "id %llu presented %lld ns before drain\n",
					(unsigned long long)r->present_id,
					(long long)(now - r->presented_mono_ns));
				run->stale++;
			}
			run->drained_at[i] = now;
		}
		run->count += n;
	} while (n > 0 && run->count < MAX_RECORDS);
}

static void wait_for_feedback(struct fscope_wl_tracker *t, struct run *run)
{
	int64_t deadline = mono_ns() + FEEDBACK_WAIT_NS;
	struct fscope_wl_counts c;

	for (;;) {
		drain_all(t, run);
		fscope_wl_tracker_counts(t, &c);
		if (c.pending == 0 || mono_ns() > deadline)
			break;
		sleep_ns(2000000); /* test only: the library itself never sleeps */
	}
	drain_all(t, run);
}

static int compare_id(const void *a, const void *b)
{
	const struct fscope_present_feedback *fa = a, *fb = b;

	return fa->present_id < fb->present_id ? -1 : fa->present_id > fb->present_id;
}

static void check_run(const char *label, struct fscope_wl_tracker *t, struct run *run,
		      uint64_t first_id, uint64_t frames, bool expect_all_presented,
		      size_t output_count)
{
	struct fscope_wl_counts c;
	int64_t prev = 0, min_iv = INT64_MAX, max_iv = 0, sum_iv = 0;
	uint64_t presented = 0, discarded = 0, intervals = 0, matched_output = 0, ambiguous = 0;
	int64_t min_latency = INT64_MAX;
	uint32_t refresh = 0, flags = 0;

	fscope_wl_tracker_counts(t, &c);
	printf("%s: requested %llu presented %llu discarded %llu pending %llu lost %llu "
	       "failed %llu\n",
	       label, (unsigned long long)c.requested, (unsigned long long)c.presented,
	       (unsigned long long)c.discarded, (unsigned long long)c.pending,
	       (unsigned long long)c.lost, (unsigned long long)c.failed);
	CHECK(c.requested == c.presented + c.discarded + c.pending, "%s: counts do not add up",
	      label);
	CHECK(c.pending == 0, "%s: %llu feedbacks never finished", label,
	      (unsigned long long)c.pending);
	CHECK(c.lost == 0 && c.failed == 0, "%s: lost %llu failed %llu", label,
	      (unsigned long long)c.lost, (unsigned long long)c.failed);
	CHECK(run->count == frames, "%s: drained %zu records for %llu frames", label, run->count,
	      (unsigned long long)frames);

	/* Latency from presentation to drain, before sorting reorders records. */
	for (size_t i = 0; i < run->count; i++)
		if (run->records[i].outcome == FSCOPE_PRESENT_PRESENTED &&
		    run->drained_at[i] - run->records[i].presented_mono_ns < min_latency)
			min_latency = run->drained_at[i] - run->records[i].presented_mono_ns;
	/* The last frame is drained within a 2 ms poll of its feedback, so at least one
	 * record is fresh; an unconverted MONOTONIC_RAW time would be off by the RAW/MONO
	 * gap (96 ms on the test machine). */
	CHECK(min_latency >= 0 && min_latency < 20000000,
	      "%s: freshest presentation %lld ns before its drain (clock conversion?)", label,
	      (long long)min_latency);
	qsort(run->records, run->count, sizeof(run->records[0]), compare_id);
	for (size_t i = 0; i < run->count; i++) {
		const struct fscope_present_feedback *r = &run->records[i];

		CHECK(r->present_id == first_id + i, "%s: record %zu has id %llu (missing or twice)",
		      label, i, (unsigned long long)r->present_id);
		if (r->outcome == FSCOPE_PRESENT_DISCARDED) {
			discarded++;
			CHECK(r->presented_mono_ns == 0 && r->output_index == -1,
			      "%s: discarded record with a time or output", label);
			continue;
		}
		CHECK(r->outcome == FSCOPE_PRESENT_PRESENTED, "%s: outcome %d", label, r->outcome);
		presented++;
		refresh = r->refresh_ns;
		flags = r->flags;
		if (prev != 0) {
			int64_t iv = r->presented_mono_ns - prev;

			CHECK(iv > 0, "%s: presentation time not increasing at id %llu (%lld ns)",
			      label, (unsigned long long)r->present_id, (long long)iv);
			if (iv < min_iv)
				min_iv = iv;
			if (iv > max_iv)
				max_iv = iv;
			sum_iv += iv;
			intervals++;
		}
		prev = r->presented_mono_ns;
		if (r->output_index >= 0)
			matched_output++;
		if (r->output_ambiguous)
			ambiguous++;
		if (output_count > 0 && r->refresh_ns != 0)
			CHECK(r->output_index >= 0 && (size_t)r->output_index < output_count,
			      "%s: refresh %u ns matched no output", label, r->refresh_ns);
		if (r->output_index >= 0 && (size_t)r->output_index < known_output_count) {
			uint32_t mhz = known_outputs[r->output_index].refresh_mhz;
			size_t same = 0;
			int64_t period = mhz ? (int64_t)(1000000000000ULL / mhz) : 0;

			for (size_t o = 0; o < known_output_count; o++)
				same += known_outputs[o].refresh_mhz == mhz;
			CHECK(period - r->refresh_ns < 2000 && r->refresh_ns - period < 2000,
			      "%s: refresh %u ns matched output %d at %u mHz", label, r->refresh_ns,
			      r->output_index, mhz);
			CHECK(r->output_ambiguous == (same > 1),
			      "%s: output_ambiguous %d but %zu outputs at %u mHz", label,
			      r->output_ambiguous, same, mhz);
		} else {
			CHECK(!r->output_ambiguous, "%s: ambiguous without an output", label);
		}
	}
	CHECK(presented == c.presented && discarded == c.discarded,
	      "%s: records say %llu/%llu, counters %llu/%llu", label,
	      (unsigned long long)presented, (unsigned long long)discarded,
	      (unsigned long long)c.presented, (unsigned long long)c.discarded);
	CHECK(presented > 0, "%s: nothing presented", label);
	CHECK(run->stale == 0, "%s: %zu presentation times not within 1 s before drain (clock?)",
	      label, run->stale);
	if (expect_all_presented)
		CHECK(presented == frames, "%s: %llu of %llu presented", label,
		      (unsigned long long)presented, (unsigned long long)frames);
	else
		CHECK(discarded > 0, "%s: nothing discarded", label);
	printf("%s: %llu presented, %llu discarded; interval min %.2f mean %.2f max %.2f ms; "
	       "claimed refresh %.3f ms, flags 0x%x, output matched %llu/%llu (%llu ambiguous)\n",
	       label, (unsigned long long)presented, (unsigned long long)discarded,
	       intervals ? min_iv / 1e6 : 0.0, intervals ? sum_iv / 1e6 / intervals : 0.0,
	       intervals ? max_iv / 1e6 : 0.0, refresh / 1e6, flags,
	       (unsigned long long)matched_output, (unsigned long long)presented,
	       (unsigned long long)ambiguous);
	printf("%s: freshest presentation %.2f ms before its drain\n", label, min_latency / 1e6);
}

/* Proves the app's connection is healthy: a roundtrip on the WSI queue, no error. */
static void check_connection(struct app *app, const char *label)
{
	CHECK(wl_display_roundtrip_queue(app->display, app->wsi_queue) >= 0 &&
		      wl_display_get_error(app->display) == 0,
	      "%s: app connection broken (error %d)", label, wl_display_get_error(app->display));
}

/* ---- tests -------------------------------------------------------------------------- */

static size_t test_outputs(const struct app *app)
{
	struct fscope_output_info outputs[8];
	size_t n = fscope_wl_outputs(outputs, 8);

	printf("outputs: %zu\n", n);
	for (size_t i = 0; i < n; i++)
		printf("  [%zu] name '%s' description '%s' %dx%d @ %u mHz scale %d\n", i,
		       outputs[i].name, outputs[i].description, outputs[i].width,
		       outputs[i].height, outputs[i].refresh_mhz, outputs[i].scale);
	if (app->has_output)
		CHECK(n > 0, "no outputs learned on the separate connection");
	fscope_wl_outputs_refresh();
	CHECK(fscope_wl_outputs(outputs, 8) == n, "refresh changed the output count");
	memcpy(known_outputs, outputs, n * sizeof(outputs[0]));
	known_output_count = n;
	return n;
}

/* Test only: the library itself never sleeps-polls. */
static bool wait_until_dead(struct fscope_wl_tracker *t, int64_t timeout_ns)
{
	for (int64_t deadline = mono_ns() + timeout_ns; mono_ns() < deadline;) {
		if (fscope_wl_tracker_dead(t))
			return true;
		sleep_ns(1000000);
	}
	return fscope_wl_tracker_dead(t);
}

static void test_no_presentation(struct app *app)
{
	struct wl_surface *surface = wl_compositor_create_surface(app->compositor);
	char why[256] = "";
	struct fscope_wl_tracker *t;
	struct fscope_wl_counts c;

	/* create cannot know yet: the set-up runs on the tracker's thread and dies there. */
	t = fscope_wl_tracker_create(app->display, surface, NULL, why, sizeof(why));
	CHECK(t != NULL, "create failed at once: %s", why);
	CHECK(wait_until_dead(t, 3 * SETUP_TIMEOUT_NS), "set-up did not fail");
	CHECK(fscope_wl_tracker_why(t, why, sizeof(why)) && strstr(why, "wp_presentation"),
	      "why does not name wp_presentation: '%s'", why);
	CHECK(!fscope_wl_tracker_ready(t), "ready without wp_presentation");
	CHECK(fscope_wl_tracker_request(t, 0) == FSCOPE_WL_NOT_READY,
	      "request on a tracker whose set-up failed is not 'not ready'");
	fscope_wl_tracker_destroy_with_counts(t, &c);
	CHECK(c.requested == 0 && c.not_ready == 1 && c.failed == 0, "counts %llu/%llu/%llu",
	      (unsigned long long)c.requested, (unsigned long long)c.not_ready,
	      (unsigned long long)c.failed);
	printf("no wp_presentation: tracker died in its set-up, why: %s\n", why);
	wl_surface_destroy(surface);
	CHECK(wl_display_roundtrip(app->display) >= 0 && wl_display_get_error(app->display) == 0,
	      "app connection broken after a failed create");
}

/* Creates a tracker and waits (test only) until its set-up on its own thread is done. */
static struct fscope_wl_tracker *create_tracker(struct app *app)
{
	char why[256] = "";
	struct fscope_wl_tracker *t = fscope_wl_tracker_create(app->display, app->surface, NULL,
								why, sizeof(why));

	CHECK(t != NULL, "tracker_create: %s", why);
	if (!t)
		return NULL;
	for (int64_t deadline = mono_ns() + 3 * SETUP_TIMEOUT_NS;
	     !fscope_wl_tracker_ready(t) && !fscope_wl_tracker_dead(t) && mono_ns() < deadline;)
		sleep_ns(200000);
	if (!fscope_wl_tracker_ready(t)) {
		fscope_wl_tracker_why(t, why, sizeof(why));
		CHECK(false, "tracker never became ready: %s", why);
		fscope_wl_tracker_destroy(t);
		return NULL;
	}
	return t;
}

/* The app's own reads of its socket never wait for the tracker's thread. libwayland makes
 * every reader but the last wait until the last one has read, so a tracker that slept holding
 * a read intent made an app thread's wl_display_read_events wait until the compositor next
 * sent something and the tracker's thread got to run: on an idle surface, nothing comes, and
 * that read never returned. Here each read must return (SIGALRM fails the test after 5 s
 * rather than let it hang), idle and with a feedback in flight, while the tracker's thread
 * goes through its wakes (1 ms between reads). */
static void reads_free_alarm(int sig)
{
	static const char message[] = "FAIL: an app read waited on the tracker's thread (5 s)\n";

	(void)sig;
	(void)!write(2, message, sizeof(message) - 1);
	_exit(1);
}

static void test_reads_free(struct app *app)
{
	struct fscope_wl_tracker *t = create_tracker(app);
	struct fscope_wl_counts c;
	int reads = 0;

	if (!t)
		return;
	signal(SIGALRM, reads_free_alarm);
	for (int i = 0; i < 200; i++) {
		if (i == 100)
			CHECK(present(app, t, 5000, false), "reads-free: present failed");
		while (wl_display_prepare_read(app->display) != 0)
			wl_display_dispatch_pending(app->display);
		alarm(5);
		CHECK(wl_display_read_events(app->display) == 0, "reads-free: read failed");
		alarm(0);
		wl_display_dispatch_pending(app->display);
		reads++;
		sleep_ns(1000000); /* test only */
	}
	signal(SIGALRM, SIG_DFL);
	fscope_wl_tracker_destroy_with_counts(t, &c);
	CHECK(c.requested == 1 && c.requested == c.presented + c.discarded + c.pending,
	      "reads-free: counts %llu = %llu + %llu + %llu", (unsigned long long)c.requested,
	      (unsigned long long)c.presented, (unsigned long long)c.discarded,
	      (unsigned long long)c.pending);
	printf("reads-free: %d reads on the app's thread returned, idle and with a feedback in "
	       "flight\n", reads);
	check_connection(app, "reads-free");
}

static void test_paced(struct app *app, size_t output_count, bool stress)
{
	static struct run run;
	const char *label = stress ? "fifo+roundtrip-storm" : "fifo";
	struct fscope_wl_tracker *t = create_tracker(app);

	if (!t)
		return;
	memset(&run, 0, sizeof(run));
	start_app_thread(app, stress);
	for (uint64_t id = 0; id < FIFO_FRAMES; id++) {
		if (!present(app, t, id, true)) {
			CHECK(false, "%s: present %llu failed", label, (unsigned long long)id);
			break;
		}
		drain_all(t, &run);
	}
	wait_for_feedback(t, &run);
	check_run(label, t, &run, 0, FIFO_FRAMES, true, output_count);
	printf("%s: app thread ran %llu %s\n", label,
	       (unsigned long long)atomic_load(&app->app_thread_iterations),
	       stress ? "roundtrips" : "dispatches");
	stop_app_thread(app);
	fscope_wl_tracker_destroy(t);
	check_connection(app, label);
}

static void test_unpaced(struct app *app, size_t output_count)
{
	static struct run run;
	struct fscope_wl_tracker *t = create_tracker(app);
	int64_t start;

	if (!t)
		return;
	memset(&run, 0, sizeof(run));
	start_app_thread(app, false);
	start = mono_ns();
	for (uint64_t id = 1000; id < 1000 + MAILBOX_FRAMES; id++) {
		if (!present(app, t, id, false)) {
			CHECK(false, "mailbox: present %llu failed", (unsigned long long)id);
			break;
		}
		drain_all(t, &run);
	}
	printf("mailbox: %d commits in %.1f ms\n", MAILBOX_FRAMES, (mono_ns() - start) / 1e6);
	wait_for_feedback(t, &run);
	check_run("mailbox", t, &run, 1000, MAILBOX_FRAMES, false, output_count);
	stop_app_thread(app);
	fscope_wl_tracker_destroy(t);
	check_connection(app, "mailbox");
}

/* Nobody drains for a while: the ring overflows, the loss is counted, nothing blocks. */
static void test_overflow(struct app *app)
{
	static struct run run;
	struct fscope_wl_tracker *t = create_tracker(app);
	struct fscope_wl_counts c;

	if (!t)
		return;
	memset(&run, 0, sizeof(run));
	start_app_thread(app, false);
	for (uint64_t id = 0; id < MAILBOX_FRAMES; id++)
		if (!present(app, t, id, false))
			break;
	for (int64_t deadline = mono_ns() + FEEDBACK_WAIT_NS; mono_ns() < deadline;) {
		fscope_wl_tracker_counts(t, &c);
		if (c.pending == 0)
			break;
		sleep_ns(2000000);
	}
	drain_all(t, &run);
	fscope_wl_tracker_counts(t, &c);
	printf("overflow: requested %llu presented %llu discarded %llu pending %llu lost %llu; "
	       "drained %zu\n",
	       (unsigned long long)c.requested, (unsigned long long)c.presented,
	       (unsigned long long)c.discarded, (unsigned long long)c.pending,
	       (unsigned long long)c.lost, run.count);
	CHECK(c.requested == MAILBOX_FRAMES && c.pending == 0 &&
		      c.requested == c.presented + c.discarded + c.pending,
	      "overflow: counts do not add up");
	CHECK(c.lost > 0, "overflow: ring never overflowed (ring bigger than %d?)", MAILBOX_FRAMES);
	CHECK(run.count + c.lost == c.presented + c.discarded,
	      "overflow: drained %zu + lost %llu != finished %llu", run.count,
	      (unsigned long long)c.lost, (unsigned long long)(c.presented + c.discarded));
	/* Finishing order is not id order (a frame in the compositor's repaint is presented
	 * after later commits were already discarded), but no id may come twice. */
	qsort(run.records, run.count, sizeof(run.records[0]), compare_id);
	for (size_t i = 1; i < run.count; i++)
		CHECK(run.records[i].present_id != run.records[i - 1].present_id,
		      "overflow: id %llu drained twice",
		      (unsigned long long)run.records[i].present_id);
	stop_app_thread(app);
	fscope_wl_tracker_destroy(t);
	check_connection(app, "overflow");
}

/* Requests without commits: slots run out, requests fail (counted), and the one commit
 * that finally comes answers every armed feedback at once. */
static void test_slots_exhausted(struct app *app)
{
	static struct run run;
	struct fscope_wl_tracker *t = create_tracker(app);
	struct fscope_wl_counts c;
	uint64_t ok = 0, refused = 0;

	if (!t)
		return;
	memset(&run, 0, sizeof(run));
	start_app_thread(app, false);
	for (uint64_t id = 0; id < 300; id++) {
		if (fscope_wl_tracker_request(t, id) == FSCOPE_WL_REQUESTED)
			ok++;
		else
			refused++;
	}
	fscope_wl_tracker_counts(t, &c);
	CHECK(refused > 0 && c.failed == refused && c.requested == ok && c.pending == ok,
	      "slots: ok %llu refused %llu; counts requested %llu pending %llu failed %llu",
	      (unsigned long long)ok, (unsigned long long)refused,
	      (unsigned long long)c.requested, (unsigned long long)c.pending,
	      (unsigned long long)c.failed);
	/* One commit carries them all. */
	CHECK(commit_frame(app, true, NULL, 0), "slots: commit failed");
	wait_for_feedback(t, &run);
	fscope_wl_tracker_counts(t, &c);
	printf("slots: %llu accepted, %llu refused; after one commit: presented %llu discarded "
	       "%llu pending %llu lost %llu drained %zu\n",
	       (unsigned long long)ok, (unsigned long long)refused,
	       (unsigned long long)c.presented, (unsigned long long)c.discarded,
	       (unsigned long long)c.pending, (unsigned long long)c.lost, run.count);
	CHECK(c.pending == 0 && c.requested == c.presented + c.discarded,
	      "slots: counts do not add up");
	CHECK(run.count + c.lost == c.presented + c.discarded, "slots: records missing");
	for (size_t i = 1; i < run.count; i++)
		CHECK(run.records[i].outcome != FSCOPE_PRESENT_PRESENTED ||
			      run.records[i].presented_mono_ns == run.records[0].presented_mono_ns,
		      "slots: one commit, several presentation times");
	stop_app_thread(app);
	fscope_wl_tracker_destroy(t);
	check_connection(app, "slots");
}

static void test_destroy_pending(struct app *app)
{
	struct fscope_wl_tracker *t = create_tracker(app);
	struct fscope_wl_counts before, after;
	int64_t start, took;

	if (!t)
		return;
	start_app_thread(app, false);
	/* Let one frame through so the compositor is mid-cadence, then leave one pending. */
	present(app, t, 1, true);
	present(app, t, 2, false);
	fscope_wl_tracker_counts(t, &before);
	start = mono_ns();
	fscope_wl_tracker_destroy_with_counts(t, &after);
	took = mono_ns() - start;
	printf("destroy-pending: before destroy requested %llu pending %llu; final requested "
	       "%llu presented %llu discarded %llu pending(destroyed) %llu; destroy took %.3f ms\n",
	       (unsigned long long)before.requested, (unsigned long long)before.pending,
	       (unsigned long long)after.requested, (unsigned long long)after.presented,
	       (unsigned long long)after.discarded, (unsigned long long)after.pending,
	       took / 1e6);
	CHECK(after.requested == after.presented + after.discarded + after.pending,
	      "destroy-pending: counts do not add up");
	CHECK(after.pending >= 1, "destroy-pending: nothing was pending at teardown");
	CHECK(took < 100000000, "destroy-pending: destroy took %lld ns", (long long)took);
	/* The compositor now answers feedback ids we destroyed: libwayland must drop them
	 * without bothering the app.  Keep presenting for a few frames to make sure. */
	for (int i = 0; i < 5; i++)
		CHECK(commit_frame(app, true, NULL, 0), "destroy-pending: frame %d failed", i);
	stop_app_thread(app);
	check_connection(app, "destroy-pending");
}

static void test_cycles(struct app *app)
{
	int64_t start = mono_ns();

	for (int i = 0; i < 20; i++) {
		struct fscope_wl_tracker *t;

		if (i % 2) {
			t = create_tracker(app);
			if (!t)
				return;
			CHECK(fscope_wl_tracker_request(t, (uint64_t)i) == FSCOPE_WL_REQUESTED,
			      "cycle request");
		} else {
			/* Torn down in the middle of its set-up (or before it began). */
			char why[256];

			t = fscope_wl_tracker_create(app->display, app->surface, NULL, why,
						     sizeof(why));
			CHECK(t != NULL, "create: %s", why);
		}
		fscope_wl_tracker_destroy(t);
	}
	printf("cycles: 20 create/(request)/destroy in %.1f ms\n", (mono_ns() - start) / 1e6);
	check_connection(app, "cycles");
	fscope_wl_tracker_destroy(NULL);
	fscope_wl_tracker_present_failed(NULL, 0);
	CHECK(fscope_wl_tracker_request(NULL, 0) == FSCOPE_WL_REQUEST_FAILED &&
		      fscope_wl_tracker_drain(NULL, NULL, 0) == 0 && fscope_wl_tracker_dead(NULL) &&
		      !fscope_wl_tracker_ready(NULL) && fscope_wl_tracker_why(NULL, NULL, 0),
	      "NULL tracker");
}

static bool counts_add_up(const struct fscope_wl_counts *c)
{
	return c->requested == c->presented + c->discarded + c->pending + c->orphaned;
}

static void print_counts(const char *label, const struct fscope_wl_counts *c)
{
	printf("%s: requested %llu presented %llu discarded %llu pending %llu orphaned %llu "
	       "lost %llu failed %llu not_ready %llu display_gone %d\n",
	       label, (unsigned long long)c->requested, (unsigned long long)c->presented,
	       (unsigned long long)c->discarded, (unsigned long long)c->pending,
	       (unsigned long long)c->orphaned, (unsigned long long)c->lost,
	       (unsigned long long)c->failed, (unsigned long long)c->not_ready, c->display_gone);
}

/*
 * A compositor that never answers: the other end of a socketpair nobody reads.  create
 * must return at once (it used to run the set-up roundtrips itself, a second each), the
 * tracker answers "not ready" until its set-up gives up, then says why; a tracker torn
 * down while its set-up waits must not wait either.
 */
static void test_silent(void)
{
	struct wl_display *display;
	struct wl_registry *registry;
	struct wl_compositor *compositor;
	struct wl_surface *surface;
	struct fscope_wl_tracker *t;
	struct fscope_wl_counts c;
	char why[256] = "";
	int64_t start, took, destroy_took;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		CHECK(false, "socketpair: %s", strerror(errno));
		return;
	}
	display = wl_display_connect_to_fd(sv[0]); /* takes sv[0] */
	if (!display) {
		CHECK(false, "wl_display_connect_to_fd");
		close(sv[1]);
		return;
	}
	/* Proxies only: nothing on the other end will ever answer. */
	registry = wl_display_get_registry(display);
	compositor = wl_registry_bind(registry, 1, &wl_compositor_interface, 1);
	surface = wl_compositor_create_surface(compositor);

	start = mono_ns();
	t = fscope_wl_tracker_create(display, surface, NULL, why, sizeof(why));
	took = mono_ns() - start;
	CHECK(t != NULL, "create on a silent compositor: %s", why);
	if (!t)
		goto out;
	CHECK(took < NONBLOCKING_NS, "create blocked %.3f ms on a silent compositor", took / 1e6);
	CHECK(fscope_wl_tracker_request(t, 0) == FSCOPE_WL_NOT_READY, "request before set-up");
	CHECK(fscope_wl_tracker_why(t, why, sizeof(why)) && strstr(why, "set up"),
	      "why during set-up: '%s'", why);
	fscope_wl_tracker_counts(t, &c);
	CHECK(c.not_ready == 1 && c.requested == 0 && c.failed == 0 && c.pending == 0,
	      "counts during set-up");
	CHECK(wait_until_dead(t, 3 * SETUP_TIMEOUT_NS), "set-up never gave up");
	CHECK(fscope_wl_tracker_why(t, why, sizeof(why)) &&
		      strstr(why, "did not answer within 1000 ms"),
	      "why after the set-up timed out: '%s'", why);
	CHECK(fscope_wl_tracker_request(t, 1) == FSCOPE_WL_NOT_READY, "request after set-up died");
	fscope_wl_tracker_destroy_with_counts(t, &c);
	print_counts("silent", &c);
	CHECK(c.not_ready == 2 && c.requested == 0 && c.failed == 0 && counts_add_up(&c),
	      "silent: counts");
	printf("silent: create took %.3f ms; set-up died: %s\n", took / 1e6, why);

	/* Torn down while the set-up waits for its first answer. */
	t = fscope_wl_tracker_create(display, surface, NULL, why, sizeof(why));
	CHECK(t != NULL, "second create: %s", why);
	sleep_ns(NONBLOCKING_NS / 25); /* test only: let the set-up start waiting */
	start = mono_ns();
	fscope_wl_tracker_destroy(t);
	destroy_took = mono_ns() - start;
	CHECK(destroy_took < NONBLOCKING_NS, "destroy during set-up took %.3f ms",
	      destroy_took / 1e6);
	printf("silent: destroy during set-up took %.3f ms\n", destroy_took / 1e6);
out:
	wl_surface_destroy(surface);
	wl_compositor_destroy(compositor);
	wl_registry_destroy(registry);
	wl_display_disconnect(display);
	close(sv[1]);
}

/*
 * A present that fails before the WSI commits (VK_ERROR_OUT_OF_DATE_KHR): its feedback
 * would bind to the next commit and describe the next frame.  request(1), no commit,
 * present_failed(1), request(2), commit: only id 2 may get a record, and the orphan is
 * counted as such.
 */
static void test_orphaned(struct app *app)
{
	static struct run run;
	struct fscope_wl_tracker *t = create_tracker(app);
	struct fscope_wl_counts c;
	bool saw[4] = { false };

	if (!t)
		return;
	memset(&run, 0, sizeof(run));
	start_app_thread(app, false);
	CHECK(fscope_wl_tracker_request(t, 1) == FSCOPE_WL_REQUESTED, "orphaned: request 1");
	fscope_wl_tracker_present_failed(t, 1);
	fscope_wl_tracker_present_failed(t, 99); /* never requested: nothing happens */
	fscope_wl_tracker_counts(t, &c);
	CHECK(c.requested == 1 && c.pending == 0 && c.orphaned == 1 && counts_add_up(&c),
	      "orphaned: counts right after present_failed");
	/* The next present's commit carries both feedbacks. */
	CHECK(commit_frame(app, true, t, 2), "orphaned: present 2");
	wait_for_feedback(t, &run);
	/* And one more, so that every event of that commit has surely been dispatched. */
	CHECK(commit_frame(app, true, t, 3), "orphaned: present 3");
	wait_for_feedback(t, &run);
	/* Finished already: the present had committed after all; nothing to orphan. */
	fscope_wl_tracker_present_failed(t, 2);
	fscope_wl_tracker_counts(t, &c);
	print_counts("orphaned", &c);
	CHECK(c.requested == 3 && c.orphaned == 1 && c.pending == 0 &&
		      c.presented + c.discarded == 2 && counts_add_up(&c),
	      "orphaned: counts after the commits");
	for (size_t i = 0; i < run.count; i++) {
		uint64_t id = run.records[i].present_id;

		CHECK(id == 2 || id == 3, "orphaned: record for id %llu", (unsigned long long)id);
		if (id < 4) {
			CHECK(!saw[id], "orphaned: id %llu twice", (unsigned long long)id);
			saw[id] = true;
		}
	}
	CHECK(run.count == 2 && saw[2] && saw[3] && !saw[1], "orphaned: %zu records", run.count);
	stop_app_thread(app);
	fscope_wl_tracker_destroy(t);
	check_connection(app, "orphaned");
}

static bool app_connect(struct app *app)
{
	struct wl_registry *registry;

	app->display = wl_display_connect(NULL);
	if (!app->display)
		return false;
	registry = wl_display_get_registry(app->display);
	wl_registry_add_listener(registry, &registry_listener, app);
	return wl_display_roundtrip(app->display) >= 0 && app->compositor;
}

/*
 * The app calls wl_display_disconnect() before vkDestroySurfaceKHR, where the tracker is
 * torn down.  Each on a connection of its own (the test's main one stays up):
 *   - a feedback still pending, so the compositor writes to the socket our dispatch thread
 *     polls: the thread must stop without touching the freed display;
 *   - nothing pending, and the fd number reused for another file before the teardown:
 *     the teardown must see that the fd names another file.
 * Either way destroy touches nothing of the dead display and keeps the counts.  Run under
 * valgrind or ASan to see no invalid access.
 */
static void test_disconnect(void)
{
	static struct app gone_app, reused_app;
	static struct run run;
	struct fscope_wl_tracker *t;
	struct fscope_wl_counts c;
	char why[256] = "";
	int fd, reuse_fd;

	/* 1: the dispatch thread notices. */
	if (!app_connect(&gone_app) || !create_window(&gone_app)) {
		CHECK(false, "disconnect: second connection");
		return;
	}
	t = create_tracker(&gone_app);
	if (!t)
		return;
	memset(&run, 0, sizeof(run));
	for (uint64_t id = 0; id < 3; id++) {
		CHECK(present(&gone_app, t, id, true), "disconnect: present %llu",
		      (unsigned long long)id);
		drain_all(t, &run);
	}
	wait_for_feedback(t, &run);
	CHECK(run.count == 3, "disconnect: %zu records before the disconnect", run.count);
	CHECK(present(&gone_app, t, 3, false), "disconnect: present 3");
	wl_display_disconnect(gone_app.display); /* its objects and ours are left behind */
	CHECK(wait_until_dead(t, FEEDBACK_WAIT_NS),
	      "disconnect: the dispatch thread did not notice the display was gone");
	CHECK(fscope_wl_tracker_why(t, why, sizeof(why)) && strstr(why, "disconnected"),
	      "disconnect: why '%s'", why);
	CHECK(fscope_wl_tracker_request(t, 4) == FSCOPE_WL_REQUEST_FAILED,
	      "disconnect: request after the disconnect");
	fscope_wl_tracker_destroy_with_counts(t, &c);
	print_counts("disconnect (thread noticed)", &c);
	CHECK(c.display_gone, "disconnect: display_gone not set");
	CHECK(counts_add_up(&c) && c.requested == 4 && c.failed == 1 &&
		      c.presented + c.discarded == 3 && c.pending == 1,
	      "disconnect: counts");
	printf("disconnect: %s\n", why);

	/* 2: the teardown notices; the fd number now names another file. */
	if (!app_connect(&reused_app) || !create_window(&reused_app)) {
		CHECK(false, "disconnect: third connection");
		return;
	}
	t = create_tracker(&reused_app);
	if (!t)
		return;
	memset(&run, 0, sizeof(run));
	for (uint64_t id = 0; id < 2; id++)
		CHECK(present(&reused_app, t, id, true), "disconnect: present %llu",
		      (unsigned long long)id);
	wait_for_feedback(t, &run);
	fd = wl_display_get_fd(reused_app.display);
	wl_display_disconnect(reused_app.display);
	reuse_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	printf("disconnect: display fd %d closed, /dev/null opened as %d\n", fd, reuse_fd);
	CHECK(fscope_wl_tracker_why(t, why, sizeof(why)) && strstr(why, "disconnected"),
	      "disconnect (fd reused): why '%s'", why);
	fscope_wl_tracker_destroy_with_counts(t, &c);
	print_counts("disconnect (fd reused)", &c);
	CHECK(c.display_gone && counts_add_up(&c) && c.requested == 2 && c.pending == 0,
	      "disconnect (fd reused): counts");
	if (reuse_fd >= 0)
		close(reuse_fd);
}

static int compositor_dies(struct app *app)
{
	struct fscope_wl_tracker *t = create_tracker(app);
	struct fscope_wl_counts c;
	int64_t start, took;

	if (!t)
		return 1;
	start_app_thread(app, false);
	present(app, t, 1, false);
	printf("compositor-dies: tracker up, one feedback pending; kill the compositor now\n");
	fflush(stdout);
	while (!fscope_wl_tracker_dead(t) && atomic_load(&app->app_thread_error) == 0)
		sleep_ns(10000000);
	printf("compositor-dies: tracker dead %d, app thread error %d\n", fscope_wl_tracker_dead(t),
	       atomic_load(&app->app_thread_error));
	CHECK(fscope_wl_tracker_request(t, 2) != FSCOPE_WL_REQUESTED,
	      "request on a dead connection succeeded");
	start = mono_ns();
	fscope_wl_tracker_destroy_with_counts(t, &c);
	took = mono_ns() - start;
	printf("compositor-dies: destroy took %.3f ms; requested %llu presented %llu discarded "
	       "%llu pending %llu failed %llu\n",
	       took / 1e6, (unsigned long long)c.requested, (unsigned long long)c.presented,
	       (unsigned long long)c.discarded, (unsigned long long)c.pending,
	       (unsigned long long)c.failed);
	CHECK(c.requested == c.presented + c.discarded + c.pending, "counts do not add up");
	CHECK(took < 100000000, "destroy took %lld ns", (long long)took);
	pthread_join(app->app_thread, NULL);
	return failures ? 1 : 0;
}

/* No names on the command line: every test. */
static bool selected(int argc, char **argv, const char *name)
{
	if (argc < 2)
		return true;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return true;
	return false;
}

int main(int argc, char **argv)
{
	static struct app app;
	size_t output_count;
	bool dies_mode = argc > 1 && strcmp(argv[1], "--compositor-dies") == 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!getenv("WAYLAND_DISPLAY")) {
		printf("SKIP: WAYLAND_DISPLAY is not set\n");
		return 77;
	}
	signal(SIGALRM, on_alarm);
	alarm(dies_mode ? 90 : 60);
	if (!app_connect(&app)) {
		printf("SKIP: cannot connect to %s, or no wl_compositor\n", getenv("WAYLAND_DISPLAY"));
		return 77;
	}
	if (app.presentation_name == 0) {
		test_no_presentation(&app);
		printf("%s\n", failures ? "FAILED" : "PASS (no wp_presentation)");
		return failures ? 1 : 0;
	}
	if (!app.shm || !app.wm_base) {
		printf("SKIP: compositor lacks wl_shm or xdg_wm_base\n");
		return 77;
	}
	if (!create_window(&app)) {
		printf("FAIL: cannot create the window\n");
		return 1;
	}
	if (dies_mode)
		return compositor_dies(&app);

	output_count = test_outputs(&app);
	if (selected(argc, argv, "silent"))
		test_silent();
	if (selected(argc, argv, "fifo"))
		test_paced(&app, output_count, false);
	if (selected(argc, argv, "fifo-storm"))
		test_paced(&app, output_count, true);
	if (selected(argc, argv, "mailbox"))
		test_unpaced(&app, output_count);
	if (selected(argc, argv, "overflow"))
		test_overflow(&app);
	if (selected(argc, argv, "slots"))
		test_slots_exhausted(&app);
	if (selected(argc, argv, "destroy-pending"))
		test_destroy_pending(&app);
	if (selected(argc, argv, "orphaned"))
		test_orphaned(&app);
	if (selected(argc, argv, "disconnect"))
		test_disconnect();
	if (selected(argc, argv, "cycles"))
		test_cycles(&app);
	if (selected(argc, argv, "reads-free"))
		test_reads_free(&app);

	printf("%s\n", failures ? "FAILED" : "PASS");
	return failures ? 1 : 0;
}
