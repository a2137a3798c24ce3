/*
 * fscope-test-compositor: a tiny Wayland compositor used as a test fixture.
 *
 * Weston 10 headless cannot give outputs different refresh rates, and the bug we diagnose
 * ("paced at 240 Hz, shown on a 144 Hz output") needs exactly that. This compositor has any
 * number of outputs, each with its own vblank clock (a timerfd at its rate), and implements
 * wp_presentation with real semantics on them: content committed between two vblanks of the
 * surface's output is latched at the next one, and content replaced before that is discarded.
 *
 * It composites nothing: buffers are wl_shm (libwayland-server's own implementation, which
 * maps the client's pool and handles resize), held and released exactly as a compositor that
 * samples them at vblank would.
 *
 * Feedback rules (see print_usage):
 * - A commit that attaches a buffer is new content. If earlier content is still queued (not
 *   yet latched), that content is discarded: its feedbacks get `discarded`, its buffer is
 *   released.
 * - A commit with no attach joins the queued content if there is one (its feedbacks share the
 *   queued content's fate); else, if the surface shows a buffer, it is latched at the next
 *   vblank as an update of that buffer's state; else nothing can be shown and its feedbacks
 *   are discarded at once.
 * - Attaching NULL unmaps the surface at the next vblank; that commit's feedbacks are
 *   discarded then.
 * - Destroying the surface discards every feedback it still holds.
 * Content is latched at the first vblank after the commit was read, with that vblank's time and
 * seq, even when this process wakes up late (see output_advance). wl_surface.frame callbacks
 * fire at the next vblank of the frame clock's output whether or not the surface shows
 * anything, so that no client waits forever on an unmapped surface.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture-parse.h"
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <wayland-server.h>

#include "presentation-time-server-protocol.h"
#include "xdg-shell-server-protocol.h"

#define PROGRAM_NAME "fscope-test-compositor"
#define MAX_OUTPUTS 16
#define OUTPUT_NAME_MAX 32
#define COMPOSITOR_VERSION 4
#define OUTPUT_VERSION 4
#define PRESENTATION_VERSION 1
#define NSEC_PER_SEC 1000000000ull
#define EXIT_USAGE 2

enum frame_clock {
	FRAME_CLOCK_OUTPUT,	/* done at the vblank of the output the surface is on */
	FRAME_CLOCK_FASTEST,	/* done at the vblank of the fastest output, wherever it is shown */
};

struct output_config {
	char name[OUTPUT_NAME_MAX];
	int32_t width, height;
	uint32_t refresh_mhz;
};

struct options {
	struct output_config outputs[MAX_OUTPUTS];
	int output_count;
	const char *surface_output;
	enum frame_clock frame_clock;
	long move_after_ms;	/* -1: no timed move */
	const char *move_target;
	long late_at;		/* --late-at N:K: the Nth new buffer (1-based) is held ... */
	long late_vblanks;	/* ... K vblanks before it is latched; 0: never */
	bool presentation;
	const char *socket;
	bool verbose;
};

struct server;

struct output {
	struct server *server;
	int index;
	struct output_config config;
	int32_t x;		/* outputs are laid out left to right */
	uint64_t period_ns;
	int timer_fd;
	struct wl_event_source *timer_source;
	uint64_t seq;		/* last vblank handled; vblank n is at start_ns + n * period_ns */
	uint64_t vblank_ns;	/* CLOCK_MONOTONIC time of vblank `seq` */
	struct wl_global *global;
	struct wl_list resources;	/* wl_output resources, via wl_resource_get_link */

	uint64_t commits;	/* commits of surfaces shown here */
	uint64_t shown;		/* buffers latched */
	uint64_t dropped;	/* buffers never latched: replaced, or their surface destroyed */
	uint64_t presented;	/* feedbacks presented */
	uint64_t discarded;	/* feedbacks discarded */
	uint64_t late_vblanks;	/* vblanks that passed while we were busy: nothing latched */
};

struct server {
	struct wl_display *display;
	struct wl_event_loop *loop;
	struct options options;
	struct output outputs[MAX_OUTPUTS];
	int output_count;
	struct output *fastest;
	struct output *target;	/* where surfaces are shown; moved by SIGUSR1 or a timer */
	uint64_t start_ns;
	struct wl_list surfaces;	/* surface.link */
	uint32_t next_surface_id;
	struct wl_event_source *signal_sources[4];
	struct wl_event_source *move_timer;
	long buffers_latched;	/* new buffers that reached a vblank, for --late-at */
};

/* One per wl_buffer we have seen attached, found again through its destroy listener. */
struct buffer {
	struct wl_resource *resource;	/* NULL once the client destroyed it */
	struct wl_listener resource_destroy;
	int refs;		/* holders: a pending attach, queued or current content */
	int busy;		/* committed uses; wl_buffer.release when it drops to 0 */
	int32_t width, height;
};

/* Content committed but not yet latched by a vblank. */
struct content {
	bool valid;
	bool buffer_change;	/* false: a state-only update of the current buffer */
	struct buffer *buffer;	/* NULL with buffer_change: unmap */
	struct wl_list feedbacks;	/* wp_presentation_feedback resources */
};

enum xdg_role {
	XDG_ROLE_NONE,
	XDG_ROLE_TOPLEVEL,
	XDG_ROLE_POPUP,
};

struct xdg_surface;

struct surface {
	struct server *server;
	struct wl_resource *resource;
	struct wl_list link;
	uint32_t id;		/* for the log */
	struct output *output;
	bool entered;		/* wl_surface.enter sent for output */

	struct {
		bool attached;
		struct buffer *buffer;
		int32_t scale, transform;
		struct wl_list frame_callbacks;
		struct wl_list feedbacks;
	} pending;

	int32_t scale, transform;
	struct wl_list frame_callbacks;	/* committed, waiting for the frame clock */
	struct content queued;
	long held;		/* --late-at: vblanks its queued content still waits */
	bool holding;		/* its queued content is held (and its frame callbacks) */
	struct buffer *current;
	struct xdg_surface *xdg;
};

struct xdg_surface {
	struct server *server;
	struct wl_resource *resource;
	struct wl_resource *role_resource;	/* xdg_toplevel or xdg_popup */
	struct surface *surface;		/* NULL once the wl_surface is gone */
	enum xdg_role role;
	bool configure_sent;
	bool acked;
	uint32_t last_serial;
	int32_t popup_x, popup_y, popup_width, popup_height;
};

struct positioner {
	int32_t width, height;
	int32_t anchor_x, anchor_y;
	int32_t offset_x, offset_y;
};

static void log_verbose(struct server *server, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void log_verbose(struct server *server, const char *fmt, ...)
{
	va_list args;
	uint64_t since_start_us;

	if (!server->options.verbose)
		return;
	since_start_us = (now_ns() - server->start_ns) / 1000;
	fprintf(stderr, "[%6" PRIu64 ".%03" PRIu64 "] ", since_start_us / 1000, since_start_us % 1000);
	va_start(args, fmt);
	vfprintf(stderr, fmt, args);
	va_end(args);
	fputc('\n', stderr);
}

/* Buffers */

static void buffer_maybe_free(struct buffer *buffer)
{
	if (buffer->refs == 0 && !buffer->resource)
		free(buffer);
}

static void buffer_handle_resource_destroy(struct wl_listener *listener, void *data)
{
	struct buffer *buffer = wl_container_of(listener, buffer, resource_destroy);

	wl_list_remove(&buffer->resource_destroy.link);
	buffer->resource = NULL;
	buffer_maybe_free(buffer);
}

static struct buffer *buffer_from_resource(struct wl_resource *resource)
{
	struct wl_listener *listener;
	struct buffer *buffer;
	struct wl_shm_buffer *shm_buffer;

	listener = wl_resource_get_destroy_listener(resource, buffer_handle_resource_destroy);
	if (listener)
		return wl_container_of(listener, buffer, resource_destroy);

	buffer = calloc(1, sizeof(*buffer));
	if (!buffer)
		return NULL;
	buffer->resource = resource;
	/* wl_shm is the only buffer factory we advertise, so this is never NULL in practice. */
	shm_buffer = wl_shm_buffer_get(resource);
	if (shm_buffer) {
		buffer->width = wl_shm_buffer_get_width(shm_buffer);
		buffer->height = wl_shm_buffer_get_height(shm_buffer);
	}
	buffer->resource_destroy.notify = buffer_handle_resource_destroy;
	wl_resource_add_destroy_listener(resource, &buffer->resource_destroy);
	return buffer;
}

/* A pending attach holds the buffer without making it busy: it was never committed. */
static void buffer_hold(struct buffer *buffer)
{
	buffer->refs++;
}

static void buffer_drop(struct buffer *buffer)
{
	buffer->refs--;
	buffer_maybe_free(buffer);
}

static void buffer_use(struct buffer *buffer)
{
	buffer->refs++;
	buffer->busy++;
}

static void buffer_unuse(struct buffer *buffer)
{
	buffer->busy--;
	if (buffer->busy == 0 && buffer->resource)
		wl_buffer_send_release(buffer->resource);
	buffer_drop(buffer);
}

/* Outputs and feedback */

static struct output *surface_frame_clock(struct surface *surface)
{
	struct server *server = surface->server;

	if (server->options.frame_clock == FRAME_CLOCK_FASTEST)
		return server->fastest;
	return surface->output;
}

static void feedback_handle_resource_destroy(struct wl_resource *resource)
{
	wl_list_remove(wl_resource_get_link(resource));
}

static void callback_handle_resource_destroy(struct wl_resource *resource)
{
	wl_list_remove(wl_resource_get_link(resource));
}

static void list_append(struct wl_list *dest, struct wl_list *src)
{
	wl_list_insert_list(dest->prev, src);
	wl_list_init(src);
}

static int feedbacks_discard(struct output *output, struct wl_list *feedbacks)
{
	struct wl_resource *feedback, *tmp;
	int count = 0;

	wl_resource_for_each_safe(feedback, tmp, feedbacks) {
		wp_presentation_feedback_send_discarded(feedback);
		wl_resource_destroy(feedback);
		count++;
	}
	output->discarded += (uint64_t)count;
	return count;
}

static int feedbacks_present(struct output *output, struct wl_list *feedbacks)
{
	const uint32_t flags = WP_PRESENTATION_FEEDBACK_KIND_VSYNC |
			       WP_PRESENTATION_FEEDBACK_KIND_HW_CLOCK |
			       WP_PRESENTATION_FEEDBACK_KIND_HW_COMPLETION;
	uint64_t sec = output->vblank_ns / NSEC_PER_SEC;
	uint32_t nsec = (uint32_t)(output->vblank_ns % NSEC_PER_SEC);
	struct wl_resource *feedback, *tmp, *output_resource;
	int count = 0;

	wl_resource_for_each_safe(feedback, tmp, feedbacks) {
		struct wl_client *client = wl_resource_get_client(feedback);

		wl_resource_for_each(output_resource, &output->resources) {
			if (wl_resource_get_client(output_resource) == client)
				wp_presentation_feedback_send_sync_output(feedback, output_resource);
		}
		wp_presentation_feedback_send_presented(feedback,
			(uint32_t)(sec >> 32), (uint32_t)sec, nsec, (uint32_t)output->period_ns,
			(uint32_t)(output->seq >> 32), (uint32_t)output->seq, flags);
		wl_resource_destroy(feedback);
		count++;
	}
	output->presented += (uint64_t)count;
	return count;
}

static void surface_send_enter_leave(struct surface *surface, struct output *output, bool enter)
{
	struct wl_client *client = wl_resource_get_client(surface->resource);
	struct wl_resource *output_resource;

	wl_resource_for_each(output_resource, &output->resources) {
		if (wl_resource_get_client(output_resource) != client)
			continue;
		if (enter)
			wl_surface_send_enter(surface->resource, output_resource);
		else
			wl_surface_send_leave(surface->resource, output_resource);
	}
}

/* Throws away content that was never latched. */
static void surface_drop_queued(struct surface *surface, const char *why)
{
	struct content *queued = &surface->queued;
	int discarded;

	if (!queued->valid)
		return;
	discarded = feedbacks_discard(surface->output, &queued->feedbacks);
	if (queued->buffer_change && queued->buffer) {
		surface->output->dropped++;
		buffer_unuse(queued->buffer);
	}
	queued->buffer = NULL;
	queued->valid = false;
	log_verbose(surface->server, "%s discard surface=%u reason=%s feedbacks=%d",
		    surface->output->config.name, surface->id, why, discarded);
}

/* The surface's output reached a vblank: queued content becomes what is shown. */
static void surface_latch(struct surface *surface)
{
	struct output *output = surface->output;
	struct content *queued = &surface->queued;
	int presented = 0, discarded = 0;

	if (!queued->valid)
		return;
	if (surface->held > 0) {
		surface->held--; /* a compositor that missed its deadline: shown later */
		return;
	}
	surface->holding = false;
	if (queued->buffer_change && queued->buffer &&
	    ++surface->server->buffers_latched == surface->server->options.late_at &&
	    surface->server->options.late_vblanks > 0) {
		surface->held = surface->server->options.late_vblanks - 1;
		surface->holding = true;
		log_verbose(surface->server, "%s vblank seq=%" PRIu64 " surface=%u held for %ld vblanks",
			    output->config.name, output->seq, surface->id,
			    surface->server->options.late_vblanks);
		return;
	}
	if (queued->buffer_change) {
		struct buffer *previous = surface->current;

		surface->current = queued->buffer;
		queued->buffer = NULL;
		/* Unused after the new one took over, so showing the same buffer again keeps it. */
		if (previous)
			buffer_unuse(previous);
		if (surface->current)
			output->shown++;
	}
	if (surface->current) {
		presented = feedbacks_present(output, &queued->feedbacks);
	} else {
		discarded = feedbacks_discard(output, &queued->feedbacks);
		if (surface->entered)
			surface_send_enter_leave(surface, output, false);
		surface->entered = false;
	}
	queued->valid = false;
	log_verbose(surface->server, "%s vblank seq=%" PRIu64 " surface=%u %s presented=%d discarded=%d",
		    output->config.name, output->seq, surface->id,
		    surface->current ? "shown" : "unmapped", presented, discarded);
}

static void surface_fire_frame_callbacks(struct surface *surface, struct output *clock)
{
	uint32_t time_ms = (uint32_t)(clock->vblank_ns / 1000000);
	struct wl_resource *callback, *tmp;

	wl_resource_for_each_safe(callback, tmp, &surface->frame_callbacks) {
		wl_callback_send_done(callback, time_ms);
		wl_resource_destroy(callback);
	}
}

/*
 * Handles the vblanks of output up to now_ns. The vblank count comes from the clock, not from
 * our wake-ups, and everything committed since the last vblank we handled is latched at the
 * vblank right after it, with that vblank's time and seq, even when we handle it late: a
 * display scans out on its own schedule, whatever the compositor was doing. Only a commit
 * that we read after a vblank we had not handled yet can miss it.
 */
static void output_advance(struct output *output, uint64_t now)
{
	struct server *server = output->server;
	uint64_t now_seq = (now - server->start_ns) / output->period_ns;
	struct surface *surface;

	if (now_seq <= output->seq)
		return;
	output->late_vblanks += now_seq - output->seq - 1;
	output->seq++;
	output->vblank_ns = server->start_ns + output->seq * output->period_ns;

	wl_list_for_each(surface, &server->surfaces, link) {
		if (surface->output == output)
			surface_latch(surface);
	}
	wl_list_for_each(surface, &server->surfaces, link) {
		/* Held content holds its frame callbacks too: a FIFO client then waits for it. */
		if (surface_frame_clock(surface) == output && !surface->holding)
			surface_fire_frame_callbacks(surface, output);
	}
	output->seq = now_seq;
	output->vblank_ns = server->start_ns + now_seq * output->period_ns;
}

/* Before a commit or a move changes anything, vblanks that already passed take effect. */
static void server_catch_up(struct server *server)
{
	uint64_t now = now_ns();

	for (int i = 0; i < server->output_count; i++)
		output_advance(&server->outputs[i], now);
}

static int output_handle_vblank(int fd, uint32_t mask, void *data)
{
	struct output *output = data;
	uint64_t expirations;

	/* Only drains the timer: output_advance counts vblanks from the clock. */
	if (read(fd, &expirations, sizeof(expirations)) != (ssize_t)sizeof(expirations))
		return 0;
	output_advance(output, now_ns());
	return 0;
}

static void surface_move(struct surface *surface, struct output *output)
{
	struct output *previous = surface->output;

	if (previous == output)
		return;
	if (surface->entered) {
		surface_send_enter_leave(surface, previous, false);
		surface_send_enter_leave(surface, output, true);
	}
	surface->output = output;
	log_verbose(surface->server, "move surface=%u from=%s to=%s",
		    surface->id, previous->config.name, output->config.name);
}

static void server_move_all(struct server *server, struct output *output)
{
	struct surface *surface;

	server_catch_up(server);
	server->target = output;
	wl_list_for_each(surface, &server->surfaces, link)
		surface_move(surface, output);
}

static void output_handle_release(struct wl_client *client, struct wl_resource *resource)
{
	wl_resource_destroy(resource);
}

static const struct wl_output_interface output_impl = {
	.release = output_handle_release,
};

static void output_handle_resource_destroy(struct wl_resource *resource)
{
	wl_list_remove(wl_resource_get_link(resource));
}

static void output_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	struct output *output = data;
	struct server *server = output->server;
	struct wl_resource *resource;
	struct surface *surface;
	char description[96];

	resource = wl_resource_create(client, &wl_output_interface, (int)version, id);
	if (!resource) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(resource, &output_impl, output, output_handle_resource_destroy);
	wl_list_insert(output->resources.prev, wl_resource_get_link(resource));

	/* 96 dpi, so clients that derive a scale from physical size leave it at 1. */
	wl_output_send_geometry(resource, output->x, 0,
				(int32_t)(output->config.width * 254 / 960),
				(int32_t)(output->config.height * 254 / 960),
				WL_OUTPUT_SUBPIXEL_UNKNOWN, "framescope", "test output",
				WL_OUTPUT_TRANSFORM_NORMAL);
	wl_output_send_mode(resource, WL_OUTPUT_MODE_CURRENT | WL_OUTPUT_MODE_PREFERRED,
			    output->config.width, output->config.height,
			    (int32_t)output->config.refresh_mhz);
	if (version >= WL_OUTPUT_SCALE_SINCE_VERSION)
		wl_output_send_scale(resource, 1);
	if (version >= WL_OUTPUT_NAME_SINCE_VERSION) {
		snprintf(description, sizeof(description), "framescope test output %dx%d@%u.%03u Hz",
			 output->config.width, output->config.height,
			 output->config.refresh_mhz / 1000, output->config.refresh_mhz % 1000);
		wl_output_send_name(resource, output->config.name);
		wl_output_send_description(resource, description);
	}
	if (version >= WL_OUTPUT_DONE_SINCE_VERSION)
		wl_output_send_done(resource);

	/* A surface already shown here learns about the new wl_output object too. */
	wl_list_for_each(surface, &server->surfaces, link) {
		if (surface->entered && surface->output == output &&
		    wl_resource_get_client(surface->resource) == client)
			wl_surface_send_enter(surface->resource, resource);
	}
}

/* wl_region: kept only so that clients can use it; input and opaque regions change nothing. */

static void region_handle_destroy(struct wl_client *client, struct wl_resource *resource)
{
	wl_resource_destroy(resource);
}

static void region_handle_add(struct wl_client *client, struct wl_resource *resource,
			      int32_t x, int32_t y, int32_t width, int32_t height)
{
}

static void region_handle_subtract(struct wl_client *client, struct wl_resource *resource,
				   int32_t x, int32_t y, int32_t width, int32_t height)
{
}

static const struct wl_region_interface region_impl = {
	.destroy = region_handle_destroy,
	.add = region_handle_add,
	.subtract = region_handle_subtract,
};

/* wl_surface */

static void surface_handle_destroy(struct wl_client *client, struct wl_resource *resource)
{
	wl_resource_destroy(resource);
}

static void surface_handle_attach(struct wl_client *client, struct wl_resource *resource,
				  struct wl_resource *buffer_resource, int32_t x, int32_t y)
{
	struct surface *surface = wl_resource_get_user_data(resource);
	struct buffer *buffer = NULL;

	if (buffer_resource) {
		buffer = buffer_from_resource(buffer_resource);
		if (!buffer) {
			wl_client_post_no_memory(client);
			return;
		}
		buffer_hold(buffer);
	}
	if (surface->pending.buffer)
		buffer_drop(surface->pending.buffer);
	surface->pending.buffer = buffer;
	surface->pending.attached = true;
}

static void surface_handle_damage(struct wl_client *client, struct wl_resource *resource,
				  int32_t x, int32_t y, int32_t width, int32_t height)
{
}

static void surface_handle_frame(struct wl_client *client, struct wl_resource *resource,
				 uint32_t id)
{
	struct surface *surface = wl_resource_get_user_data(resource);
	struct wl_resource *callback;

	callback = wl_resource_create(client, &wl_callback_interface, 1, id);
	if (!callback) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(callback, NULL, NULL, callback_handle_resource_destroy);
	wl_list_insert(surface->pending.frame_callbacks.prev, wl_resource_get_link(callback));
}

static void surface_handle_set_region(struct wl_client *client, struct wl_resource *resource,
				      struct wl_resource *region)
{
}

static void xdg_surface_send_configure_now(struct xdg_surface *xdg);

static bool surface_check_xdg_commit(struct surface *surface)
{
	struct xdg_surface *xdg = surface->xdg;
	bool attaches_buffer = surface->pending.attached && surface->pending.buffer;

	if (!xdg || xdg->role == XDG_ROLE_NONE)
		return true;
	if (attaches_buffer && !xdg->acked) {
		wl_resource_post_error(xdg->resource, XDG_SURFACE_ERROR_UNCONFIGURED_BUFFER,
				       "buffer committed before the first configure was acked");
		return false;
	}
	return true;
}

static void surface_handle_commit(struct wl_client *client, struct wl_resource *resource)
{
	struct surface *surface = wl_resource_get_user_data(resource);
	struct content *queued = &surface->queued;
	struct output *output = surface->output;
	struct buffer *buffer;
	bool attached;
	int feedbacks = (int)wl_list_length(&surface->pending.feedbacks);
	int discarded = 0;

	if (!surface_check_xdg_commit(surface))
		return;
	server_catch_up(surface->server);

	attached = surface->pending.attached;
	buffer = surface->pending.buffer;
	surface->pending.attached = false;
	surface->pending.buffer = NULL;
	surface->scale = surface->pending.scale;
	surface->transform = surface->pending.transform;
	list_append(&surface->frame_callbacks, &surface->pending.frame_callbacks);
	output->commits++;

	if (attached) {
		/* A buffer destroyed between attach and commit leaves nothing to show. */
		if (buffer && !buffer->resource) {
			buffer_drop(buffer);
			buffer = NULL;
		}
		if (buffer) {
			buffer_use(buffer);
			buffer_drop(buffer);
		}
		surface_drop_queued(surface, "replaced");
		queued->valid = true;
		queued->buffer_change = true;
		queued->buffer = buffer;
		list_append(&queued->feedbacks, &surface->pending.feedbacks);
		if (buffer && !surface->entered) {
			surface_send_enter_leave(surface, output, true);
			surface->entered = true;
		}
	} else if (queued->valid) {
		list_append(&queued->feedbacks, &surface->pending.feedbacks);
	} else if (surface->current) {
		queued->valid = true;
		queued->buffer_change = false;
		queued->buffer = NULL;
		list_append(&queued->feedbacks, &surface->pending.feedbacks);
	} else {
		discarded = feedbacks_discard(output, &surface->pending.feedbacks);
	}

	log_verbose(surface->server, "%s commit surface=%u %s%dx%d feedbacks=%d%s",
		    output->config.name, surface->id,
		    !attached ? "no-attach " : buffer ? "buffer=" : "null-buffer ",
		    buffer ? buffer->width : 0, buffer ? buffer->height : 0, feedbacks,
		    discarded ? " (discarded: nothing shown)" : "");

	if (surface->xdg && surface->xdg->role != XDG_ROLE_NONE && !surface->xdg->configure_sent)
		xdg_surface_send_configure_now(surface->xdg);
}

static void surface_handle_set_buffer_transform(struct wl_client *client,
						struct wl_resource *resource, int32_t transform)
{
	struct surface *surface = wl_resource_get_user_data(resource);

	if (transform < WL_OUTPUT_TRANSFORM_NORMAL || transform > WL_OUTPUT_TRANSFORM_FLIPPED_270) {
		wl_resource_post_error(resource, WL_SURFACE_ERROR_INVALID_TRANSFORM,
				       "invalid buffer transform %d", transform);
		return;
	}
	surface->pending.transform = transform;
}

static void surface_handle_set_buffer_scale(struct wl_client *client,
					    struct wl_resource *resource, int32_t scale)
{
	struct surface *surface = wl_resource_get_user_data(resource);

	if (scale < 1) {
		wl_resource_post_error(resource, WL_SURFACE_ERROR_INVALID_SCALE,
				       "invalid buffer scale %d", scale);
		return;
	}
	surface->pending.scale = scale;
}

static void surface_handle_offset(struct wl_client *client, struct wl_resource *resource,
				  int32_t x, int32_t y)
{
}

static const struct wl_surface_interface surface_impl = {
	.destroy = surface_handle_destroy,
	.attach = surface_handle_attach,
	.damage = surface_handle_damage,
	.frame = surface_handle_frame,
	.set_opaque_region = surface_handle_set_region,
	.set_input_region = surface_handle_set_region,
	.commit = surface_handle_commit,
	.set_buffer_transform = surface_handle_set_buffer_transform,
	.set_buffer_scale = surface_handle_set_buffer_scale,
	.damage_buffer = surface_handle_damage,
	.offset = surface_handle_offset,	/* wl_surface v5; we advertise v4 */
};

static void surface_handle_resource_destroy(struct wl_resource *resource)
{
	struct surface *surface = wl_resource_get_user_data(resource);
	struct wl_resource *callback, *tmp;
	int discarded;

	/* Every feedback ends in presented or discarded, even when its surface goes away. */
	discarded = feedbacks_discard(surface->output, &surface->pending.feedbacks);
	discarded += wl_list_length(&surface->queued.feedbacks);
	surface_drop_queued(surface, "surface destroyed");
	if (surface->current)
		buffer_unuse(surface->current);
	if (surface->pending.buffer)
		buffer_drop(surface->pending.buffer);
	wl_resource_for_each_safe(callback, tmp, &surface->pending.frame_callbacks)
		wl_resource_destroy(callback);
	wl_resource_for_each_safe(callback, tmp, &surface->frame_callbacks)
		wl_resource_destroy(callback);
	if (surface->xdg)
		surface->xdg->surface = NULL;
	log_verbose(surface->server, "%s destroy surface=%u discarded=%d",
		    surface->output->config.name, surface->id, discarded);
	wl_list_remove(&surface->link);
	free(surface);
}

/* wl_compositor */

static void compositor_handle_create_surface(struct wl_client *client,
					     struct wl_resource *resource, uint32_t id)
{
	struct server *server = wl_resource_get_user_data(resource);
	struct surface *surface;

	surface = calloc(1, sizeof(*surface));
	if (!surface) {
		wl_client_post_no_memory(client);
		return;
	}
	surface->resource = wl_resource_create(client, &wl_surface_interface,
					       wl_resource_get_version(resource), id);
	if (!surface->resource) {
		free(surface);
		wl_client_post_no_memory(client);
		return;
	}
	surface->server = server;
	surface->id = ++server->next_surface_id;
	surface->output = server->target;
	surface->scale = surface->pending.scale = 1;
	surface->transform = surface->pending.transform = WL_OUTPUT_TRANSFORM_NORMAL;
	wl_list_init(&surface->pending.frame_callbacks);
	wl_list_init(&surface->pending.feedbacks);
	wl_list_init(&surface->frame_callbacks);
	wl_list_init(&surface->queued.feedbacks);
	wl_list_insert(server->surfaces.prev, &surface->link);
	wl_resource_set_implementation(surface->resource, &surface_impl, surface,
				       surface_handle_resource_destroy);
}

static void compositor_handle_create_region(struct wl_client *client,
					    struct wl_resource *resource, uint32_t id)
{
	struct wl_resource *region;

	region = wl_resource_create(client, &wl_region_interface, 1, id);
	if (!region) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(region, &region_impl, NULL, NULL);
}

static const struct wl_compositor_interface compositor_impl = {
	.create_surface = compositor_handle_create_surface,
	.create_region = compositor_handle_create_region,
};

static void compositor_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	struct wl_resource *resource;

	resource = wl_resource_create(client, &wl_compositor_interface, (int)version, id);
	if (!resource) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(resource, &compositor_impl, data, NULL);
}

/* wp_presentation */

static void presentation_handle_destroy(struct wl_client *client, struct wl_resource *resource)
{
	wl_resource_destroy(resource);
}

static void presentation_handle_feedback(struct wl_client *client, struct wl_resource *resource,
					 struct wl_resource *surface_resource, uint32_t id)
{
	struct surface *surface = wl_resource_get_user_data(surface_resource);
	struct wl_resource *feedback;

	feedback = wl_resource_create(client, &wp_presentation_feedback_interface,
				      wl_resource_get_version(resource), id);
	if (!feedback) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(feedback, NULL, NULL, feedback_handle_resource_destroy);
	wl_list_insert(surface->pending.feedbacks.prev, wl_resource_get_link(feedback));
}

static const struct wp_presentation_interface presentation_impl = {
	.destroy = presentation_handle_destroy,
	.feedback = presentation_handle_feedback,
};

static void presentation_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	struct wl_resource *resource;

	resource = wl_resource_create(client, &wp_presentation_interface, (int)version, id);
	if (!resource) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(resource, &presentation_impl, data, NULL);
	wp_presentation_send_clock_id(resource, CLOCK_MONOTONIC);
}

/* xdg_positioner: only size, anchor rectangle and offset matter, for the popup's geometry. */

static void positioner_handle_destroy(struct wl_client *client, struct wl_resource *resource)
{
	wl_resource_destroy(resource);
}

static void positioner_handle_set_size(struct wl_client *client, struct wl_resource *resource,
				       int32_t width, int32_t height)
{
	struct positioner *positioner = wl_resource_get_user_data(resource);

	if (width <= 0 || height <= 0) {
		wl_resource_post_error(resource, XDG_POSITIONER_ERROR_INVALID_INPUT,
				       "positioner size must be positive");
		return;
	}
	positioner->width = width;
	positioner->height = height;
}

static void positioner_handle_set_anchor_rect(struct wl_client *client,
					      struct wl_resource *resource,
					      int32_t x, int32_t y, int32_t width, int32_t height)
{
	struct positioner *positioner = wl_resource_get_user_data(resource);

	if (width < 0 || height < 0) {
		wl_resource_post_error(resource, XDG_POSITIONER_ERROR_INVALID_INPUT,
				       "anchor rectangle size must not be negative");
		return;
	}
	positioner->anchor_x = x;
	positioner->anchor_y = y;
}

static void positioner_handle_set_anchor(struct wl_client *client, struct wl_resource *resource,
					 uint32_t anchor)
{
}

static void positioner_handle_set_gravity(struct wl_client *client, struct wl_resource *resource,
					  uint32_t gravity)
{
}

static void positioner_handle_set_constraint_adjustment(struct wl_client *client,
							struct wl_resource *resource,
							uint32_t constraint_adjustment)
{
}

static void positioner_handle_set_offset(struct wl_client *client, struct wl_resource *resource,
					 int32_t x, int32_t y)
{
	struct positioner *positioner = wl_resource_get_user_data(resource);

	positioner->offset_x = x;
	positioner->offset_y = y;
}

static void positioner_handle_set_reactive(struct wl_client *client, struct wl_resource *resource)
{
}

static void positioner_handle_set_parent_size(struct wl_client *client,
					      struct wl_resource *resource,
					      int32_t parent_width, int32_t parent_height)
{
}

static void positioner_handle_set_parent_configure(struct wl_client *client,
						   struct wl_resource *resource, uint32_t serial)
{
}

static const struct xdg_positioner_interface positioner_impl = {
	.destroy = positioner_handle_destroy,
	.set_size = positioner_handle_set_size,
	.set_anchor_rect = positioner_handle_set_anchor_rect,
	.set_anchor = positioner_handle_set_anchor,
	.set_gravity = positioner_handle_set_gravity,
	.set_constraint_adjustment = positioner_handle_set_constraint_adjustment,
	.set_offset = positioner_handle_set_offset,
	.set_reactive = positioner_handle_set_reactive,
	.set_parent_size = positioner_handle_set_parent_size,
	.set_parent_configure = positioner_handle_set_parent_configure,
};

static void positioner_handle_resource_destroy(struct wl_resource *resource)
{
	free(wl_resource_get_user_data(resource));
}

/* xdg_surface, xdg_toplevel, xdg_popup */

static void xdg_surface_send_configure_now(struct xdg_surface *xdg)
{
	uint32_t serial = wl_display_next_serial(xdg->server->display);
	int version = wl_resource_get_version(xdg->role_resource);
	struct wl_array empty;

	wl_array_init(&empty);
	if (xdg->role == XDG_ROLE_TOPLEVEL) {
		if (!xdg->configure_sent && version >= XDG_TOPLEVEL_WM_CAPABILITIES_SINCE_VERSION)
			xdg_toplevel_send_wm_capabilities(xdg->role_resource, &empty);
		if (version >= XDG_TOPLEVEL_CONFIGURE_BOUNDS_SINCE_VERSION && xdg->surface)
			xdg_toplevel_send_configure_bounds(xdg->role_resource,
							   xdg->surface->output->config.width,
							   xdg->surface->output->config.height);
		/* 0x0: the client picks its own size. */
		xdg_toplevel_send_configure(xdg->role_resource, 0, 0, &empty);
	} else {
		xdg_popup_send_configure(xdg->role_resource, xdg->popup_x, xdg->popup_y,
					 xdg->popup_width, xdg->popup_height);
	}
	xdg_surface_send_configure(xdg->resource, serial);
	xdg->last_serial = serial;
	xdg->configure_sent = true;
	wl_array_release(&empty);
}

/* Destroying the role object leaves an xdg_surface that may take a role again. */
static void xdg_role_handle_resource_destroy(struct wl_resource *resource)
{
	struct xdg_surface *xdg = wl_resource_get_user_data(resource);

	if (!xdg)
		return;
	xdg->role_resource = NULL;
	xdg->role = XDG_ROLE_NONE;
	xdg->configure_sent = false;
	xdg->acked = false;
}

static void toplevel_handle_destroy(struct wl_client *client, struct wl_resource *resource)
{
	wl_resource_destroy(resource);
}

static void toplevel_handle_set_parent(struct wl_client *client, struct wl_resource *resource,
				       struct wl_resource *parent)
{
}

static void toplevel_handle_set_title(struct wl_client *client, struct wl_resource *resource,
				      const char *title)
{
	struct xdg_surface *xdg = wl_resource_get_user_data(resource);

	if (xdg && xdg->surface)
		log_verbose(xdg->server, "title surface=%u \"%s\"", xdg->surface->id, title);
}

static void toplevel_handle_set_app_id(struct wl_client *client, struct wl_resource *resource,
				       const char *app_id)
{
}

static void toplevel_handle_show_window_menu(struct wl_client *client,
					     struct wl_resource *resource,
					     struct wl_resource *seat, uint32_t serial,
					     int32_t x, int32_t y)
{
}

static void toplevel_handle_move(struct wl_client *client, struct wl_resource *resource,
				 struct wl_resource *seat, uint32_t serial)
{
}

static void toplevel_handle_resize(struct wl_client *client, struct wl_resource *resource,
				   struct wl_resource *seat, uint32_t serial, uint32_t edges)
{
}

static void toplevel_handle_set_size_hint(struct wl_client *client, struct wl_resource *resource,
					  int32_t width, int32_t height)
{
}

static void toplevel_handle_request(struct wl_client *client, struct wl_resource *resource)
{
}

static void toplevel_handle_set_fullscreen(struct wl_client *client,
					   struct wl_resource *resource,
					   struct wl_resource *output)
{
}

static const struct xdg_toplevel_interface toplevel_impl = {
	.destroy = toplevel_handle_destroy,
	.set_parent = toplevel_handle_set_parent,
	.set_title = toplevel_handle_set_title,
	.set_app_id = toplevel_handle_set_app_id,
	.show_window_menu = toplevel_handle_show_window_menu,
	.move = toplevel_handle_move,
	.resize = toplevel_handle_resize,
	.set_max_size = toplevel_handle_set_size_hint,
	.set_min_size = toplevel_handle_set_size_hint,
	.set_maximized = toplevel_handle_request,
	.unset_maximized = toplevel_handle_request,
	.set_fullscreen = toplevel_handle_set_fullscreen,
	.unset_fullscreen = toplevel_handle_request,
	.set_minimized = toplevel_handle_request,
};

static void popup_handle_destroy(struct wl_client *client, struct wl_resource *resource)
{
	wl_resource_destroy(resource);
}

static void popup_handle_grab(struct wl_client *client, struct wl_resource *resource,
			      struct wl_resource *seat, uint32_t serial)
{
}

static void popup_place(struct xdg_surface *xdg, const struct positioner *positioner)
{
	xdg->popup_x = positioner->anchor_x + positioner->offset_x;
	xdg->popup_y = positioner->anchor_y + positioner->offset_y;
	xdg->popup_width = positioner->width;
	xdg->popup_height = positioner->height;
}

static void popup_handle_reposition(struct wl_client *client, struct wl_resource *resource,
				    struct wl_resource *positioner_resource, uint32_t token)
{
	struct xdg_surface *xdg = wl_resource_get_user_data(resource);

	if (!xdg)
		return;
	popup_place(xdg, wl_resource_get_user_data(positioner_resource));
	xdg_popup_send_repositioned(resource, token);
	xdg_surface_send_configure_now(xdg);
}

static const struct xdg_popup_interface popup_impl = {
	.destroy = popup_handle_destroy,
	.grab = popup_handle_grab,
	.reposition = popup_handle_reposition,
};

static void xdg_surface_handle_destroy(struct wl_client *client, struct wl_resource *resource)
{
	wl_resource_destroy(resource);
}

static bool xdg_surface_can_take_role(struct xdg_surface *xdg)
{
	if (xdg->role != XDG_ROLE_NONE) {
		wl_resource_post_error(xdg->resource, XDG_SURFACE_ERROR_ALREADY_CONSTRUCTED,
				       "xdg_surface already has a role object");
		return false;
	}
	return true;
}

static void xdg_surface_handle_get_toplevel(struct wl_client *client,
					    struct wl_resource *resource, uint32_t id)
{
	struct xdg_surface *xdg = wl_resource_get_user_data(resource);
	struct wl_resource *toplevel;

	if (!xdg_surface_can_take_role(xdg))
		return;
	toplevel = wl_resource_create(client, &xdg_toplevel_interface,
				      wl_resource_get_version(resource), id);
	if (!toplevel) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(toplevel, &toplevel_impl, xdg,
				       xdg_role_handle_resource_destroy);
	xdg->role_resource = toplevel;
	xdg->role = XDG_ROLE_TOPLEVEL;
}

static void xdg_surface_handle_get_popup(struct wl_client *client, struct wl_resource *resource,
					 uint32_t id, struct wl_resource *parent,
					 struct wl_resource *positioner_resource)
{
	struct xdg_surface *xdg = wl_resource_get_user_data(resource);
	struct wl_resource *popup;

	if (!xdg_surface_can_take_role(xdg))
		return;
	popup = wl_resource_create(client, &xdg_popup_interface,
				   wl_resource_get_version(resource), id);
	if (!popup) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(popup, &popup_impl, xdg, xdg_role_handle_resource_destroy);
	popup_place(xdg, wl_resource_get_user_data(positioner_resource));
	xdg->role_resource = popup;
	xdg->role = XDG_ROLE_POPUP;
}

static void xdg_surface_handle_set_window_geometry(struct wl_client *client,
						   struct wl_resource *resource,
						   int32_t x, int32_t y,
						   int32_t width, int32_t height)
{
}

static void xdg_surface_handle_ack_configure(struct wl_client *client,
					     struct wl_resource *resource, uint32_t serial)
{
	struct xdg_surface *xdg = wl_resource_get_user_data(resource);

	if (!xdg->configure_sent || serial > xdg->last_serial) {
		wl_resource_post_error(resource, XDG_SURFACE_ERROR_INVALID_SERIAL,
				       "ack_configure of serial %u that was never sent", serial);
		return;
	}
	xdg->acked = true;
}

static const struct xdg_surface_interface xdg_surface_impl = {
	.destroy = xdg_surface_handle_destroy,
	.get_toplevel = xdg_surface_handle_get_toplevel,
	.get_popup = xdg_surface_handle_get_popup,
	.set_window_geometry = xdg_surface_handle_set_window_geometry,
	.ack_configure = xdg_surface_handle_ack_configure,
};

static void xdg_surface_handle_resource_destroy(struct wl_resource *resource)
{
	struct xdg_surface *xdg = wl_resource_get_user_data(resource);

	if (xdg->role_resource)
		wl_resource_set_user_data(xdg->role_resource, NULL);
	if (xdg->surface)
		xdg->surface->xdg = NULL;
	free(xdg);
}

/* xdg_wm_base */

static void wm_base_handle_destroy(struct wl_client *client, struct wl_resource *resource)
{
	wl_resource_destroy(resource);
}

static void wm_base_handle_create_positioner(struct wl_client *client,
					     struct wl_resource *resource, uint32_t id)
{
	struct positioner *positioner;
	struct wl_resource *positioner_resource;

	positioner = calloc(1, sizeof(*positioner));
	if (!positioner) {
		wl_client_post_no_memory(client);
		return;
	}
	positioner_resource = wl_resource_create(client, &xdg_positioner_interface,
						 wl_resource_get_version(resource), id);
	if (!positioner_resource) {
		free(positioner);
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(positioner_resource, &positioner_impl, positioner,
				       positioner_handle_resource_destroy);
}

static void wm_base_handle_get_xdg_surface(struct wl_client *client,
					   struct wl_resource *resource, uint32_t id,
					   struct wl_resource *surface_resource)
{
	struct server *server = wl_resource_get_user_data(resource);
	struct surface *surface = wl_resource_get_user_data(surface_resource);
	struct xdg_surface *xdg;

	if (surface->xdg) {
		wl_resource_post_error(resource, XDG_WM_BASE_ERROR_ROLE,
				       "wl_surface already has an xdg_surface");
		return;
	}
	xdg = calloc(1, sizeof(*xdg));
	if (!xdg) {
		wl_client_post_no_memory(client);
		return;
	}
	xdg->resource = wl_resource_create(client, &xdg_surface_interface,
					   wl_resource_get_version(resource), id);
	if (!xdg->resource) {
		free(xdg);
		wl_client_post_no_memory(client);
		return;
	}
	xdg->server = server;
	xdg->surface = surface;
	surface->xdg = xdg;
	wl_resource_set_implementation(xdg->resource, &xdg_surface_impl, xdg,
				       xdg_surface_handle_resource_destroy);
}

static void wm_base_handle_pong(struct wl_client *client, struct wl_resource *resource,
				uint32_t serial)
{
	log_verbose(wl_resource_get_user_data(resource), "pong serial=%u", serial);
}

static const struct xdg_wm_base_interface wm_base_impl = {
	.destroy = wm_base_handle_destroy,
	.create_positioner = wm_base_handle_create_positioner,
	.get_xdg_surface = wm_base_handle_get_xdg_surface,
	.pong = wm_base_handle_pong,
};

static void wm_base_bind(struct wl_client *client, void *data, uint32_t version, uint32_t id)
{
	struct server *server = data;
	struct wl_resource *resource;

	resource = wl_resource_create(client, &xdg_wm_base_interface, (int)version, id);
	if (!resource) {
		wl_client_post_no_memory(client);
		return;
	}
	wl_resource_set_implementation(resource, &wm_base_impl, server, NULL);
	/* One ping per client, so that clients exercise their pong path. */
	xdg_wm_base_send_ping(resource, wl_display_next_serial(server->display));
}

/* Signals and timers */

static int handle_terminate(int signal_number, void *data)
{
	struct server *server = data;

	wl_display_terminate(server->display);
	return 0;
}

static int handle_move_signal(int signal_number, void *data)
{
	struct server *server = data;

	server_move_all(server, &server->outputs[(server->target->index + 1) % server->output_count]);
	return 0;
}

static struct output *server_find_output(struct server *server, const char *name)
{
	for (int i = 0; i < server->output_count; i++) {
		if (strcmp(server->outputs[i].config.name, name) == 0)
			return &server->outputs[i];
	}
	return NULL;
}

static int handle_move_timer(void *data)
{
	struct server *server = data;

	server_move_all(server, server_find_output(server, server->options.move_target));
	return 0;
}

/* Command line */

static void print_usage(FILE *stream)
{
	fprintf(stream,
"usage: " PROGRAM_NAME " --socket NAME [options]\n"
"A Wayland compositor for tests: outputs with their own refresh rates, real\n"
"wp_presentation feedback, no pixels composited.\n"
"\n"
"  --socket NAME                 listen on $XDG_RUNTIME_DIR/NAME (required)\n"
"  --output NAME:WxH@HZ          add an output, repeatable (e.g. DP-1:1920x1080@240,\n"
"                                HZ may have decimals); default HEADLESS-1:1280x720@60\n"
"  --surface-output NAME         output new surfaces are shown on (default: the first)\n"
"  --frame-clock output|fastest  fire wl_surface.frame at the vblanks of the surface's\n"
"                                output (default) or of the fastest output\n"
"  --move-after-ms MS:NAME       move every surface to output NAME MS ms after start\n"
"  --late-at N:K                 hold the Nth new buffer (1-based, of all surfaces) K\n"
"                                vblanks more before it is shown, with the surface's\n"
"                                frame callbacks (a compositor missing its deadline)\n"
"  --no-presentation             do not advertise wp_presentation\n"
"  --verbose                     log commits, vblanks, presents and discards to stderr\n"
"  --help                        show this help\n"
"\n"
"Prints \"ready\" on stdout once listening. SIGUSR1 moves every surface to the next\n"
"output. SIGTERM or SIGINT exits with status 0 after one tally line on stderr.\n"
"Feedback: a commit with a buffer is presented at the next vblank of the surface's\n"
"output, or discarded if another buffer is committed first; a commit without a buffer\n"
"shares the fate of the content it updates (discarded at once if nothing is shown).\n"
"Bad arguments exit with status 2.\n");
}

static bool usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static bool usage_error(const char *fmt, ...)
{
	va_list args;

	fputs(PROGRAM_NAME ": ", stderr);
	va_start(args, fmt);
	vfprintf(stderr, fmt, args);
	va_end(args);
	fputc('\n', stderr);
	return false;
}

static bool parse_output(const char *text, struct output_config *ret_config)
{
	struct output_config config = { 0 };
	const char *colon = strchr(text, ':');
	char size[64], *x, *at, *end;
	long width, height;
	double hz;
	size_t name_length;

	if (!colon)
		return false;
	name_length = (size_t)(colon - text);
	if (name_length == 0 || name_length >= sizeof(config.name))
		return false;
	for (size_t i = 0; i < name_length; i++) {
		if (text[i] <= ' ' || text[i] > '~')
			return false;
	}
	memcpy(config.name, text, name_length);

	if (strlen(colon + 1) >= sizeof(size))
		return false;
	strcpy(size, colon + 1);
	x = strchr(size, 'x');
	at = strchr(size, '@');
	if (!x || !at || at < x)
		return false;
	*x = *at = '\0';
	if (!fixture_parse_long(size, 1, 16384, &width) || !fixture_parse_long(x + 1, 1, 16384, &height))
		return false;
	errno = 0;
	hz = strtod(at + 1, &end);
	if (errno || end == at + 1 || *end || !(hz >= 1.0 && hz <= 1000.0))
		return false;
	config.width = (int32_t)width;
	config.height = (int32_t)height;
	config.refresh_mhz = (uint32_t)llround(hz * 1000.0);
	*ret_config = config;
	return true;
}

static bool parse_options(int argc, char **argv, struct options *options)
{
	enum {
		OPT_SOCKET = 256, OPT_OUTPUT, OPT_SURFACE_OUTPUT, OPT_FRAME_CLOCK,
		OPT_MOVE_AFTER_MS, OPT_NO_PRESENTATION, OPT_VERBOSE, OPT_HELP, OPT_LATE_AT,
	};
	static const struct option long_options[] = {
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "output", required_argument, NULL, OPT_OUTPUT },
		{ "surface-output", required_argument, NULL, OPT_SURFACE_OUTPUT },
		{ "frame-clock", required_argument, NULL, OPT_FRAME_CLOCK },
		{ "move-after-ms", required_argument, NULL, OPT_MOVE_AFTER_MS },
		{ "late-at", required_argument, NULL, OPT_LATE_AT },
		{ "no-presentation", no_argument, NULL, OPT_NO_PRESENTATION },
		{ "verbose", no_argument, NULL, OPT_VERBOSE },
		{ "help", no_argument, NULL, OPT_HELP },
		{ 0 },
	};
	int option;

	*options = (struct options){
		.frame_clock = FRAME_CLOCK_OUTPUT,
		.move_after_ms = -1,
		.presentation = true,
	};
	opterr = 0;
	while ((option = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
		switch (option) {
		case OPT_SOCKET:
			if (!*optarg || strchr(optarg, '/'))
				return usage_error("bad --socket '%s': expected a file name", optarg);
			options->socket = optarg;
			break;
		case OPT_OUTPUT:
			if (options->output_count == MAX_OUTPUTS)
				return usage_error("too many --output (at most %d)", MAX_OUTPUTS);
			if (!parse_output(optarg, &options->outputs[options->output_count]))
				return usage_error("bad --output '%s': expected NAME:WIDTHxHEIGHT@HZ, "
						   "e.g. DP-1:1920x1080@144 (size 1..16384, 1..1000 Hz)",
						   optarg);
			for (int i = 0; i < options->output_count; i++) {
				if (strcmp(options->outputs[i].name,
					   options->outputs[options->output_count].name) == 0)
					return usage_error("bad --output '%s': output name used twice",
							   optarg);
			}
			options->output_count++;
			break;
		case OPT_SURFACE_OUTPUT:
			options->surface_output = optarg;
			break;
		case OPT_FRAME_CLOCK:
			if (strcmp(optarg, "output") == 0)
				options->frame_clock = FRAME_CLOCK_OUTPUT;
			else if (strcmp(optarg, "fastest") == 0)
				options->frame_clock = FRAME_CLOCK_FASTEST;
			else
				return usage_error("bad --frame-clock '%s': expected output or fastest",
						   optarg);
			break;
		case OPT_MOVE_AFTER_MS: {
			const char *colon = strchr(optarg, ':');
			char ms[32];

			if (!colon || (size_t)(colon - optarg) >= sizeof(ms) || !colon[1])
				return usage_error("bad --move-after-ms '%s': expected MS:NAME", optarg);
			memcpy(ms, optarg, (size_t)(colon - optarg));
			ms[colon - optarg] = '\0';
			if (!fixture_parse_long(ms, 0, INT_MAX, &options->move_after_ms))
				return usage_error("bad --move-after-ms '%s': MS must be 0..%d",
						   optarg, INT_MAX);
			options->move_target = colon + 1;
			break;
		}
		case OPT_LATE_AT: {
			const char *colon = strchr(optarg, ':');
			char n[32];

			if (!colon || (size_t)(colon - optarg) >= sizeof(n) || !colon[1])
				return usage_error("bad --late-at '%s': expected N:K", optarg);
			memcpy(n, optarg, (size_t)(colon - optarg));
			n[colon - optarg] = '\0';
			if (!fixture_parse_long(n, 1, INT_MAX, &options->late_at) ||
			    !fixture_parse_long(colon + 1, 1, 1000, &options->late_vblanks))
				return usage_error("bad --late-at '%s': N must be 1..%d, K 1..1000",
						   optarg, INT_MAX);
			break;
		}
		case OPT_NO_PRESENTATION:
			options->presentation = false;
			break;
		case OPT_VERBOSE:
			options->verbose = true;
			break;
		case OPT_HELP:
			print_usage(stdout);
			exit(0);
		default:
			if (optopt)
				return usage_error("option '%s' needs a value (see --help)",
						   argv[optind - 1]);
			return usage_error("unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s' (see --help)", argv[optind]);
	if (!options->socket)
		return usage_error("--socket NAME is required (see --help)");
	if (options->output_count == 0) {
		options->outputs[0] = (struct output_config){
			.name = "HEADLESS-1", .width = 1280, .height = 720, .refresh_mhz = 60000,
		};
		options->output_count = 1;
	}
	return true;
}

static bool options_check_output_name(const struct options *options, const char *option,
				      const char *name)
{
	for (int i = 0; i < options->output_count; i++) {
		if (strcmp(options->outputs[i].name, name) == 0)
			return true;
	}
	return usage_error("bad %s: no output named '%s'", option, name);
}

/* Setup and teardown */

static bool output_init(struct server *server, int index, const struct output_config *config,
			int32_t x)
{
	struct output *output = &server->outputs[index];
	struct itimerspec spec;
	uint64_t first_vblank_ns;

	*output = (struct output){
		.server = server,
		.index = index,
		.config = *config,
		.x = x,
		.timer_fd = -1,
		.vblank_ns = server->start_ns,
		.period_ns = (1000000000000ull + config->refresh_mhz / 2) / config->refresh_mhz,
	};
	wl_list_init(&output->resources);

	output->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (output->timer_fd < 0) {
		fprintf(stderr, PROGRAM_NAME ": timerfd_create: %s\n", strerror(errno));
		return false;
	}
	/* Every output starts its vblanks at start_ns, so vblank n is at start_ns + n * period. */
	first_vblank_ns = server->start_ns + output->period_ns;
	spec.it_value.tv_sec = (time_t)(first_vblank_ns / NSEC_PER_SEC);
	spec.it_value.tv_nsec = (long)(first_vblank_ns % NSEC_PER_SEC);
	spec.it_interval.tv_sec = (time_t)(output->period_ns / NSEC_PER_SEC);
	spec.it_interval.tv_nsec = (long)(output->period_ns % NSEC_PER_SEC);
	if (timerfd_settime(output->timer_fd, TFD_TIMER_ABSTIME, &spec, NULL) < 0) {
		fprintf(stderr, PROGRAM_NAME ": timerfd_settime: %s\n", strerror(errno));
		return false;
	}
	output->timer_source = wl_event_loop_add_fd(server->loop, output->timer_fd,
						    WL_EVENT_READABLE, output_handle_vblank, output);
	output->global = wl_global_create(server->display, &wl_output_interface, OUTPUT_VERSION,
					  output, output_bind);
	if (!output->timer_source || !output->global) {
		fprintf(stderr, PROGRAM_NAME ": cannot create output %s\n", config->name);
		return false;
	}
	return true;
}

static void output_finish(struct output *output)
{
	if (output->timer_source)
		wl_event_source_remove(output->timer_source);
	if (output->timer_fd >= 0)
		close(output->timer_fd);
}

static void print_tally(struct server *server)
{
	fputs(PROGRAM_NAME ": tally", stderr);
	for (int i = 0; i < server->output_count; i++) {
		struct output *output = &server->outputs[i];

		fprintf(stderr, "%s %s commits=%" PRIu64 " shown=%" PRIu64 " dropped=%" PRIu64
			" presented=%" PRIu64 " discarded=%" PRIu64 " vblanks=%" PRIu64
			" late_vblanks=%" PRIu64,
			i ? ";" : "", output->config.name, output->commits, output->shown,
			output->dropped, output->presented, output->discarded, output->seq,
			output->late_vblanks);
	}
	fputc('\n', stderr);
}

int main(int argc, char **argv)
{
	static const int signals[] = { SIGTERM, SIGINT, SIGUSR1 };
	struct server server = { 0 };
	int32_t x = 0;
	int status = 1;

	if (!parse_options(argc, argv, &server.options))
		return EXIT_USAGE;
	if (server.options.surface_output &&
	    !options_check_output_name(&server.options, "--surface-output",
				       server.options.surface_output))
		return EXIT_USAGE;
	if (server.options.move_target &&
	    !options_check_output_name(&server.options, "--move-after-ms",
				       server.options.move_target))
		return EXIT_USAGE;
	if (!getenv("XDG_RUNTIME_DIR")) {
		fprintf(stderr, PROGRAM_NAME ": XDG_RUNTIME_DIR is not set\n");
		return 1;
	}

	signal(SIGPIPE, SIG_IGN);
	wl_list_init(&server.surfaces);
	server.display = wl_display_create();
	if (!server.display) {
		fprintf(stderr, PROGRAM_NAME ": cannot create the display\n");
		return 1;
	}
	server.loop = wl_display_get_event_loop(server.display);
	server.start_ns = now_ns();

	for (int i = 0; i < server.options.output_count; i++) {
		const struct output_config *config = &server.options.outputs[i];

		server.output_count = i + 1;
		if (!output_init(&server, i, config, x))
			goto error_outputs;
		x += config->width;
		if (!server.fastest || config->refresh_mhz > server.fastest->config.refresh_mhz)
			server.fastest = &server.outputs[i];
	}
	server.target = server.options.surface_output ?
		server_find_output(&server, server.options.surface_output) : &server.outputs[0];

	if (!wl_global_create(server.display, &wl_compositor_interface, COMPOSITOR_VERSION,
			      &server, compositor_bind) ||
	    wl_display_init_shm(server.display) != 0 ||
	    !wl_global_create(server.display, &xdg_wm_base_interface,
			      xdg_wm_base_interface.version, &server, wm_base_bind) ||
	    (server.options.presentation &&
	     !wl_global_create(server.display, &wp_presentation_interface, PRESENTATION_VERSION,
			       &server, presentation_bind))) {
		fprintf(stderr, PROGRAM_NAME ": cannot create the globals\n");
		goto error_outputs;
	}

	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
		server.signal_sources[i] = wl_event_loop_add_signal(server.loop, signals[i],
			signals[i] == SIGUSR1 ? handle_move_signal : handle_terminate, &server);
		if (!server.signal_sources[i]) {
			fprintf(stderr, PROGRAM_NAME ": cannot watch signal %d\n", signals[i]);
			goto error_signals;
		}
	}
	if (server.options.move_after_ms >= 0) {
		server.move_timer = wl_event_loop_add_timer(server.loop, handle_move_timer, &server);
		if (!server.move_timer) {
			fprintf(stderr, PROGRAM_NAME ": cannot create the move timer\n");
			goto error_signals;
		}
		/* A timer armed with 0 is disarmed; 1 ms is as soon as it gets. */
		wl_event_source_timer_update(server.move_timer,
					     server.options.move_after_ms > 0 ?
					     (int)server.options.move_after_ms : 1);
	}

	if (wl_display_add_socket(server.display, server.options.socket) != 0) {
		fprintf(stderr, PROGRAM_NAME ": cannot listen on %s/%s: %s\n",
			getenv("XDG_RUNTIME_DIR"), server.options.socket, strerror(errno));
		goto error_signals;
	}
	printf("ready\n");
	fflush(stdout);

	wl_display_run(server.display);

	/* Clients go first, so that their surfaces' last feedbacks are counted as discarded. */
	wl_display_destroy_clients(server.display);
	print_tally(&server);
	status = 0;

error_signals:
	if (server.move_timer)
		wl_event_source_remove(server.move_timer);
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
		if (server.signal_sources[i])
			wl_event_source_remove(server.signal_sources[i]);
	}
error_outputs:
	for (int i = 0; i < server.output_count; i++)
		output_finish(&server.outputs[i]);
	wl_display_destroy(server.display);
	return status;
}
