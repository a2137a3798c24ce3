/*
 * fscope-feedback-probe: a Wayland client that commits frames, each with a wp_presentation
 * feedback, and reports what became of every one of them.
 *
 * It is the reference answer for tests of the presentation tracker: run it against
 * fscope-test-compositor (or any compositor) and compare with what framescope reports.
 *
 * Output on stdout, one line per frame in commit order, then one tally line:
 *   ID presented TV_NS REFRESH_NS SEQ FLAGS
 *   ID discarded 0 0 0 0
 *   tally frames=N presented=P discarded=D pending=K discarded_pct=X
 *         interval_ns_mean=M interval_ns_min=A interval_ns_max=B clock_id=C
 * (the tally is one line). TV_NS is on the clock clock_id names; intervals are between
 * consecutive presented frames. With --print-output, each frame line gets a seventh field: the
 * wl_output name from the feedback's sync_output ("-" if none). wl_surface.enter and leave are
 * reported on stderr as "fscope-feedback-probe: enter NAME". Exit status: 0, 1 on failure (including feedbacks still
 * pending at the end), 2 on bad arguments, 3 when the compositor has no wp_presentation.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture-parse.h"
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <wayland-client.h>

#include "presentation-time-client-protocol.h"
#include "xdg-shell-client-protocol.h"

#define PROGRAM_NAME "fscope-feedback-probe"
#define MAX_BUFFERS 8
#define MAX_OUTPUTS 16
#define EXIT_USAGE 2
#define EXIT_NO_PRESENTATION 3
#define WAIT_MS 5000

enum frame_state {
	FRAME_PENDING,
	FRAME_PRESENTED,
	FRAME_DISCARDED,
};

struct probe;

struct output {
	struct wl_output *output;
	char name[32];
};

struct frame_record {
	struct probe *probe;
	enum frame_state state;
	const struct output *output;	/* from sync_output */
	uint64_t tv_ns;
	uint32_t refresh_ns;
	uint64_t seq;
	uint32_t flags;
};

struct shm_buffer {
	struct wl_buffer *buffer;
	bool busy;
};

struct probe {
	struct wl_display *display;
	struct wl_registry *registry;
	struct wl_compositor *compositor;
	struct wl_shm *shm;
	struct xdg_wm_base *wm_base;
	struct wp_presentation *presentation;
	uint32_t clock_id;
	struct output outputs[MAX_OUTPUTS];
	int output_count;

	struct wl_surface *surface;
	struct xdg_surface *xdg_surface;
	struct xdg_toplevel *toplevel;
	bool configured;
	uint32_t configure_serial;

	struct shm_buffer buffers[MAX_BUFFERS];
	int buffer_count;
	int32_t width, height;

	struct frame_record *frames;
	int frame_count;
	int requested, presented, discarded;
	bool frame_done;
};

struct probe_options {
	int frames;
	bool fifo;
	int32_t width, height;
	int buffers;
	int timeout_ms;
	bool print_output;
};

static uint64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Feedback */

static void feedback_handle_sync_output(void *data, struct wp_presentation_feedback *feedback,
					struct wl_output *output)
{
	struct frame_record *frame = data;

	frame->output = wl_output_get_user_data(output);
}

static void feedback_handle_presented(void *data, struct wp_presentation_feedback *feedback,
				      uint32_t tv_sec_hi, uint32_t tv_sec_lo, uint32_t tv_nsec,
				      uint32_t refresh, uint32_t seq_hi, uint32_t seq_lo,
				      uint32_t flags)
{
	struct frame_record *frame = data;
	uint64_t sec = ((uint64_t)tv_sec_hi << 32) | tv_sec_lo;

	frame->state = FRAME_PRESENTED;
	frame->tv_ns = sec * 1000000000ull + tv_nsec;
	frame->refresh_ns = refresh;
	frame->seq = ((uint64_t)seq_hi << 32) | seq_lo;
	frame->flags = flags;
	frame->probe->presented++;
	wp_presentation_feedback_destroy(feedback);
}

static void feedback_handle_discarded(void *data, struct wp_presentation_feedback *feedback)
{
	struct frame_record *frame = data;

	frame->state = FRAME_DISCARDED;
	frame->probe->discarded++;
	wp_presentation_feedback_destroy(feedback);
}

static const struct wp_presentation_feedback_listener feedback_listener = {
	.sync_output = feedback_handle_sync_output,
	.presented = feedback_handle_presented,
	.discarded = feedback_handle_discarded,
};

static void presentation_handle_clock_id(void *data, struct wp_presentation *presentation,
					 uint32_t clock_id)
{
	struct probe *probe = data;

	probe->clock_id = clock_id;
}

static const struct wp_presentation_listener presentation_listener = {
	.clock_id = presentation_handle_clock_id,
};

/* Shell */

static void wm_base_handle_ping(void *data, struct xdg_wm_base *wm_base, uint32_t serial)
{
	xdg_wm_base_pong(wm_base, serial);
}

static const struct xdg_wm_base_listener wm_base_listener = {
	.ping = wm_base_handle_ping,
};

static void xdg_surface_handle_configure(void *data, struct xdg_surface *xdg_surface,
					 uint32_t serial)
{
	struct probe *probe = data;

	probe->configured = true;
	probe->configure_serial = serial;
	xdg_surface_ack_configure(xdg_surface, serial);
}

static const struct xdg_surface_listener xdg_surface_listener = {
	.configure = xdg_surface_handle_configure,
};

static void toplevel_handle_configure(void *data, struct xdg_toplevel *toplevel,
				      int32_t width, int32_t height, struct wl_array *states)
{
}

static void toplevel_handle_close(void *data, struct xdg_toplevel *toplevel)
{
}

static const struct xdg_toplevel_listener toplevel_listener = {
	.configure = toplevel_handle_configure,
	.close = toplevel_handle_close,
};

static void output_handle_geometry(void *data, struct wl_output *wl_output, int32_t x,
				   int32_t y, int32_t physical_width, int32_t physical_height,
				   int32_t subpixel, const char *make, const char *model,
				   int32_t transform)
{
}

static void output_handle_mode(void *data, struct wl_output *wl_output, uint32_t flags,
			       int32_t width, int32_t height, int32_t refresh)
{
}

static void output_handle_done(void *data, struct wl_output *wl_output)
{
}

static void output_handle_scale(void *data, struct wl_output *wl_output, int32_t factor)
{
}

static void output_handle_name(void *data, struct wl_output *wl_output, const char *name)
{
	struct output *output = data;

	snprintf(output->name, sizeof(output->name), "%s", name);
}

static void output_handle_description(void *data, struct wl_output *wl_output,
				      const char *description)
{
}

static const struct wl_output_listener output_listener = {
	.geometry = output_handle_geometry,
	.mode = output_handle_mode,
	.done = output_handle_done,
	.scale = output_handle_scale,
	.name = output_handle_name,
	.description = output_handle_description,
};

static void registry_handle_global(void *data, struct wl_registry *registry, uint32_t name,
				   const char *interface, uint32_t version)
{
	struct probe *probe = data;

	if (strcmp(interface, wl_compositor_interface.name) == 0) {
		probe->compositor = wl_registry_bind(registry, name, &wl_compositor_interface,
						     version < 4 ? version : 4);
	} else if (strcmp(interface, wl_shm_interface.name) == 0) {
		probe->shm = wl_registry_bind(registry, name, &wl_shm_interface, 1);
	} else if (strcmp(interface, xdg_wm_base_interface.name) == 0) {
		probe->wm_base = wl_registry_bind(registry, name, &xdg_wm_base_interface, 1);
		xdg_wm_base_add_listener(probe->wm_base, &wm_base_listener, probe);
	} else if (strcmp(interface, wp_presentation_interface.name) == 0) {
		probe->presentation = wl_registry_bind(registry, name, &wp_presentation_interface, 1);
		wp_presentation_add_listener(probe->presentation, &presentation_listener, probe);
	} else if (strcmp(interface, wl_output_interface.name) == 0 &&
		   probe->output_count < MAX_OUTPUTS) {
		struct output *output = &probe->outputs[probe->output_count++];

		/* Outputs before v4 have no name; they print as "wl_output-N". */
		snprintf(output->name, sizeof(output->name), "wl_output-%u", name);
		output->output = wl_registry_bind(registry, name, &wl_output_interface,
						  version < 4 ? version : 4);
		wl_output_add_listener(output->output, &output_listener, output);
	}
}

static void registry_handle_global_remove(void *data, struct wl_registry *registry,
					  uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = {
	.global = registry_handle_global,
	.global_remove = registry_handle_global_remove,
};

/* Reported on stderr, so that tests of surface moves can see them. */
static void surface_handle_enter(void *data, struct wl_surface *surface, struct wl_output *output)
{
	const struct output *entered = wl_output_get_user_data(output);

	fprintf(stderr, PROGRAM_NAME ": enter %s\n", entered ? entered->name : "?");
}

static void surface_handle_leave(void *data, struct wl_surface *surface, struct wl_output *output)
{
	const struct output *left = wl_output_get_user_data(output);

	fprintf(stderr, PROGRAM_NAME ": leave %s\n", left ? left->name : "?");
}

static const struct wl_surface_listener surface_listener = {
	.enter = surface_handle_enter,
	.leave = surface_handle_leave,
};

/* Buffers */

static void buffer_handle_release(void *data, struct wl_buffer *wl_buffer)
{
	struct shm_buffer *buffer = data;

	buffer->busy = false;
}

static const struct wl_buffer_listener buffer_listener = {
	.release = buffer_handle_release,
};

static bool create_buffers(struct probe *probe, int count)
{
	int32_t stride = probe->width * 4;
	size_t buffer_size = (size_t)stride * (size_t)probe->height;
	size_t pool_size = buffer_size * (size_t)count;
	struct wl_shm_pool *pool;
	uint32_t *pixels;
	int fd;

	fd = memfd_create("fscope-feedback-probe", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)pool_size) < 0) {
		fprintf(stderr, PROGRAM_NAME ": shm pool: %s\n", strerror(errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	pixels = mmap(NULL, pool_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (pixels == MAP_FAILED) {
		fprintf(stderr, PROGRAM_NAME ": mmap: %s\n", strerror(errno));
		close(fd);
		return false;
	}
	/* A different shade per buffer, so a screenshot would show which one is up. */
	for (int i = 0; i < count; i++) {
		for (size_t p = 0; p < buffer_size / 4; p++)
			pixels[(size_t)i * buffer_size / 4 + p] = 0xff202020u + (uint32_t)i * 0x202020u;
	}
	munmap(pixels, pool_size);

	pool = wl_shm_create_pool(probe->shm, fd, (int32_t)pool_size);
	for (int i = 0; i < count; i++) {
		probe->buffers[i].buffer = wl_shm_pool_create_buffer(pool,
			(int32_t)((size_t)i * buffer_size), probe->width, probe->height, stride,
			WL_SHM_FORMAT_XRGB8888);
		wl_buffer_add_listener(probe->buffers[i].buffer, &buffer_listener,
				       &probe->buffers[i]);
	}
	probe->buffer_count = count;
	wl_shm_pool_destroy(pool);
	close(fd);
	return true;
}

/*
 * Reads and dispatches events for up to timeout_ms (0: only what is already there).
 * Returns -1 when the connection failed, else 0.
 */
static int dispatch_events(struct wl_display *display, int timeout_ms)
{
	struct pollfd pollfd = { .fd = wl_display_get_fd(display), .events = POLLIN };
	int ready;

	while (wl_display_prepare_read(display) != 0) {
		if (wl_display_dispatch_pending(display) < 0)
			return -1;
	}
	if (wl_display_flush(display) < 0) {
		if (errno != EAGAIN) {
			wl_display_cancel_read(display);
			return -1;
		}
		pollfd.events |= POLLOUT;
	}
	ready = poll(&pollfd, 1, timeout_ms);
	if (ready <= 0 || !(pollfd.revents & (POLLIN | POLLERR | POLLHUP))) {
		wl_display_cancel_read(display);
		if (ready < 0 && errno != EINTR)
			return -1;
		return wl_display_dispatch_pending(display) < 0 ? -1 : 0;
	}
	if (wl_display_read_events(display) < 0)
		return -1;
	return wl_display_dispatch_pending(display) < 0 ? -1 : 0;
}

static void report_connection_error(struct wl_display *display)
{
	const struct wl_interface *interface = NULL;
	uint32_t object_id = 0;
	int error = wl_display_get_error(display);

	if (error == EPROTO) {
		uint32_t code = wl_display_get_protocol_error(display, &interface, &object_id);

		fprintf(stderr, PROGRAM_NAME ": protocol error %u on %s@%u\n", code,
			interface ? interface->name : "?", object_id);
	} else {
		fprintf(stderr, PROGRAM_NAME ": connection lost: %s\n", strerror(error ? error : EPIPE));
	}
}

/* Dispatches until *flag is true; false on timeout or a broken connection. */
static bool wait_for_flag(struct probe *probe, const bool *flag, const char *what)
{
	uint64_t deadline = monotonic_ms() + WAIT_MS;

	while (!*flag) {
		uint64_t now = monotonic_ms();

		if (now >= deadline) {
			fprintf(stderr, PROGRAM_NAME ": timed out waiting for %s\n", what);
			return false;
		}
		if (dispatch_events(probe->display, (int)(deadline - now)) < 0) {
			report_connection_error(probe->display);
			return false;
		}
	}
	return true;
}

static struct shm_buffer *find_free_buffer(struct probe *probe)
{
	for (int i = 0; i < probe->buffer_count; i++) {
		if (!probe->buffers[i].busy)
			return &probe->buffers[i];
	}
	return NULL;
}

static struct shm_buffer *wait_for_free_buffer(struct probe *probe)
{
	uint64_t deadline = monotonic_ms() + WAIT_MS;
	struct shm_buffer *buffer;

	while (!(buffer = find_free_buffer(probe))) {
		uint64_t now = monotonic_ms();

		if (now >= deadline) {
			fprintf(stderr, PROGRAM_NAME ": timed out waiting for a buffer release\n");
			return NULL;
		}
		if (dispatch_events(probe->display, (int)(deadline - now)) < 0) {
			report_connection_error(probe->display);
			return NULL;
		}
	}
	return buffer;
}

static void frame_handle_done(void *data, struct wl_callback *callback, uint32_t time_ms)
{
	struct probe *probe = data;

	probe->frame_done = true;
	wl_callback_destroy(callback);
}

static const struct wl_callback_listener frame_listener = {
	.done = frame_handle_done,
};

static bool commit_frame(struct probe *probe, const struct probe_options *options, int index)
{
	struct shm_buffer *buffer = wait_for_free_buffer(probe);
	struct wp_presentation_feedback *feedback;

	if (!buffer)
		return false;
	if (options->fifo) {
		struct wl_callback *callback = wl_surface_frame(probe->surface);

		wl_callback_add_listener(callback, &frame_listener, probe);
		probe->frame_done = false;
	}
	probe->frames[index] = (struct frame_record){ .probe = probe, .state = FRAME_PENDING };
	feedback = wp_presentation_feedback(probe->presentation, probe->surface);
	wp_presentation_feedback_add_listener(feedback, &feedback_listener, &probe->frames[index]);
	wl_surface_attach(probe->surface, buffer->buffer, 0, 0);
	if (wl_surface_get_version(probe->surface) >= WL_SURFACE_DAMAGE_BUFFER_SINCE_VERSION)
		wl_surface_damage_buffer(probe->surface, 0, 0, probe->width, probe->height);
	else
		wl_surface_damage(probe->surface, 0, 0, probe->width, probe->height);
	wl_surface_commit(probe->surface);
	buffer->busy = true;
	probe->requested++;

	if (options->fifo)
		return wait_for_flag(probe, &probe->frame_done, "a frame callback");
	if (dispatch_events(probe->display, 0) < 0) {
		report_connection_error(probe->display);
		return false;
	}
	return true;
}

static bool wait_for_feedbacks(struct probe *probe, int timeout_ms)
{
	uint64_t deadline = monotonic_ms() + (uint64_t)timeout_ms;

	while (probe->presented + probe->discarded < probe->requested) {
		uint64_t now = monotonic_ms();

		if (now >= deadline)
			return true;	/* the tally reports what is still pending */
		if (dispatch_events(probe->display, (int)(deadline - now)) < 0) {
			report_connection_error(probe->display);
			return false;
		}
	}
	return true;
}

static void print_output_field(const struct frame_record *frame, bool print_output)
{
	if (print_output)
		printf(" %s", frame->output ? frame->output->name : "-");
	putchar('\n');
}

static void print_report(const struct probe *probe, bool print_output)
{
	uint64_t interval_sum = 0, interval_min = UINT64_MAX, interval_max = 0, previous_tv = 0;
	int intervals = 0, pending = probe->requested - probe->presented - probe->discarded;

	for (int i = 0; i < probe->requested; i++) {
		const struct frame_record *frame = &probe->frames[i];

		switch (frame->state) {
		case FRAME_PRESENTED:
			printf("%d presented %" PRIu64 " %" PRIu32 " %" PRIu64 " %" PRIu32, i,
			       frame->tv_ns, frame->refresh_ns, frame->seq, frame->flags);
			print_output_field(frame, print_output);
			if (previous_tv) {
				uint64_t interval = frame->tv_ns - previous_tv;

				interval_sum += interval;
				interval_min = interval < interval_min ? interval : interval_min;
				interval_max = interval > interval_max ? interval : interval_max;
				intervals++;
			}
			previous_tv = frame->tv_ns;
			break;
		case FRAME_DISCARDED:
			printf("%d discarded 0 0 0 0", i);
			print_output_field(frame, print_output);
			break;
		case FRAME_PENDING:
			printf("%d pending 0 0 0 0", i);
			print_output_field(frame, print_output);
			break;
		}
	}
	printf("tally frames=%d presented=%d discarded=%d pending=%d discarded_pct=%.1f "
	       "interval_ns_mean=%" PRIu64 " interval_ns_min=%" PRIu64 " interval_ns_max=%" PRIu64
	       " clock_id=%" PRIu32 "\n",
	       probe->requested, probe->presented, probe->discarded, pending,
	       probe->requested ? 100.0 * probe->discarded / probe->requested : 0.0,
	       intervals ? interval_sum / (uint64_t)intervals : 0,
	       intervals ? interval_min : 0, interval_max, probe->clock_id);
	fflush(stdout);
}

static void print_usage(FILE *stream)
{
	fprintf(stream,
"usage: " PROGRAM_NAME " [options]\n"
"Commits frames with wp_presentation feedback on $WAYLAND_DISPLAY and prints each\n"
"frame's fate: ID presented|discarded TV_NS REFRESH_NS SEQ FLAGS, then a tally line.\n"
"\n"
"  --frames N        frames to commit (default 300)\n"
"  --fifo            wait for each frame's wl_surface.frame callback before the next;\n"
"                    without it, commit as fast as buffers are released\n"
"  --size WxH        buffer size (default 64x64)\n"
"  --buffers N       buffers in the swap ring, 2..%d (default 4)\n"
"  --timeout-ms MS   how long to wait for the last feedbacks (default 2000)\n"
"  --print-output    add a 7th field: the output named by sync_output\n"
"\n"
"Exit status: 0; 1 on failure or feedbacks left pending; 2 bad arguments;\n"
"3 no wp_presentation.\n", MAX_BUFFERS);
}

static bool parse_options(int argc, char **argv, struct probe_options *options)
{
	enum { OPT_FRAMES = 256, OPT_FIFO, OPT_SIZE, OPT_BUFFERS, OPT_TIMEOUT_MS, OPT_PRINT_OUTPUT,
	       OPT_HELP };
	static const struct option long_options[] = {
		{ "frames", required_argument, NULL, OPT_FRAMES },
		{ "fifo", no_argument, NULL, OPT_FIFO },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "buffers", required_argument, NULL, OPT_BUFFERS },
		{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT_MS },
		{ "print-output", no_argument, NULL, OPT_PRINT_OUTPUT },
		{ "help", no_argument, NULL, OPT_HELP },
		{ 0 },
	};
	int option;
	long value;

	*options = (struct probe_options){
		.frames = 300, .width = 64, .height = 64, .buffers = 4, .timeout_ms = 2000,
	};
	opterr = 0;
	while ((option = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
		switch (option) {
		case OPT_FRAMES:
			if (!fixture_parse_long(optarg, 1, 1000000, &value)) {
				fprintf(stderr, PROGRAM_NAME ": bad --frames '%s': expected 1..1000000\n",
					optarg);
				return false;
			}
			options->frames = (int)value;
			break;
		case OPT_FIFO:
			options->fifo = true;
			break;
		case OPT_SIZE: {
			long width, height;
			char *x = strchr(optarg, 'x');

			if (!x) {
				fprintf(stderr, PROGRAM_NAME ": bad --size '%s': expected WxH\n", optarg);
				return false;
			}
			*x = '\0';
			if (!fixture_parse_long(optarg, 1, 4096, &width) || !fixture_parse_long(x + 1, 1, 4096, &height)) {
				fprintf(stderr, PROGRAM_NAME ": bad --size: expected WxH, 1..4096 each\n");
				return false;
			}
			options->width = (int32_t)width;
			options->height = (int32_t)height;
			break;
		}
		case OPT_BUFFERS:
			if (!fixture_parse_long(optarg, 2, MAX_BUFFERS, &value)) {
				fprintf(stderr, PROGRAM_NAME ": bad --buffers '%s': expected 2..%d\n",
					optarg, MAX_BUFFERS);
				return false;
			}
			options->buffers = (int)value;
			break;
		case OPT_TIMEOUT_MS:
			if (!fixture_parse_long(optarg, 0, INT_MAX, &value)) {
				fprintf(stderr, PROGRAM_NAME ": bad --timeout-ms '%s'\n", optarg);
				return false;
			}
			options->timeout_ms = (int)value;
			break;
		case OPT_PRINT_OUTPUT:
			options->print_output = true;
			break;
		case OPT_HELP:
			print_usage(stdout);
			exit(0);
		default:
			fprintf(stderr, PROGRAM_NAME ": bad option '%s' (see --help)\n",
				argv[optind - 1]);
			return false;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROGRAM_NAME ": unexpected argument '%s'\n", argv[optind]);
		return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	struct probe_options options;
	struct probe probe = { 0 };
	int status = 1;

	if (!parse_options(argc, argv, &options))
		return EXIT_USAGE;
	probe.width = options.width;
	probe.height = options.height;
	probe.frames = calloc((size_t)options.frames, sizeof(*probe.frames));
	if (!probe.frames) {
		fprintf(stderr, PROGRAM_NAME ": out of memory\n");
		return 1;
	}
	probe.frame_count = options.frames;

	probe.display = wl_display_connect(NULL);
	if (!probe.display) {
		fprintf(stderr, PROGRAM_NAME ": cannot connect to the Wayland display: %s\n",
			strerror(errno));
		goto error_frames;
	}
	probe.registry = wl_display_get_registry(probe.display);
	wl_registry_add_listener(probe.registry, &registry_listener, &probe);
	/* Globals, then the events sent on bind (clock_id, shm formats). */
	if (wl_display_roundtrip(probe.display) < 0 || wl_display_roundtrip(probe.display) < 0) {
		report_connection_error(probe.display);
		goto error_display;
	}
	if (!probe.compositor || !probe.shm || !probe.wm_base) {
		fprintf(stderr, PROGRAM_NAME ": compositor lacks wl_compositor, wl_shm or xdg_wm_base\n");
		goto error_display;
	}
	if (!probe.presentation) {
		fprintf(stderr, PROGRAM_NAME ": compositor has no wp_presentation\n");
		status = EXIT_NO_PRESENTATION;
		goto error_display;
	}

	probe.surface = wl_compositor_create_surface(probe.compositor);
	wl_surface_add_listener(probe.surface, &surface_listener, &probe);
	probe.xdg_surface = xdg_wm_base_get_xdg_surface(probe.wm_base, probe.surface);
	xdg_surface_add_listener(probe.xdg_surface, &xdg_surface_listener, &probe);
	probe.toplevel = xdg_surface_get_toplevel(probe.xdg_surface);
	xdg_toplevel_add_listener(probe.toplevel, &toplevel_listener, &probe);
	xdg_toplevel_set_title(probe.toplevel, PROGRAM_NAME);
	wl_surface_commit(probe.surface);
	if (!wait_for_flag(&probe, &probe.configured, "the first configure") ||
	    !create_buffers(&probe, options.buffers))
		goto error_surface;

	for (int i = 0; i < options.frames; i++) {
		if (!commit_frame(&probe, &options, i))
			goto error_report;
	}
	if (!wait_for_feedbacks(&probe, options.timeout_ms))
		goto error_report;
	status = probe.presented + probe.discarded == probe.requested ? 0 : 1;

error_report:
	print_report(&probe, options.print_output);
error_surface:
	for (int i = 0; i < probe.buffer_count; i++)
		wl_buffer_destroy(probe.buffers[i].buffer);
	xdg_toplevel_destroy(probe.toplevel);
	xdg_surface_destroy(probe.xdg_surface);
	wl_surface_destroy(probe.surface);
error_display:
	if (probe.presentation)
		wp_presentation_destroy(probe.presentation);
	if (probe.wm_base)
		xdg_wm_base_destroy(probe.wm_base);
	if (probe.shm)
		wl_shm_destroy(probe.shm);
	if (probe.compositor)
		wl_compositor_destroy(probe.compositor);
	for (int i = 0; i < probe.output_count; i++) {
		if (wl_output_get_version(probe.outputs[i].output) >= WL_OUTPUT_RELEASE_SINCE_VERSION)
			wl_output_release(probe.outputs[i].output);
		else
			wl_output_destroy(probe.outputs[i].output);
	}
	wl_registry_destroy(probe.registry);
	wl_display_roundtrip(probe.display);
	wl_display_disconnect(probe.display);
error_frames:
	free(probe.frames);
	return status;
}
