/*
 * The compositor's outputs, learned on a connection of our own.
 *
 * Binding wl_output on the app's connection would make the compositor send
 * wl_surface.enter/leave for our wl_output objects to the app, whose toolkit would meet
 * proxies it never created.  A separate connection to the same socket cannot confuse the
 * app.  We open the socket ourselves (secure_getenv, SOCK_CLOEXEC) and hand it to
 * wl_display_connect_to_fd(): wl_display_connect() would consume WAYLAND_SOCKET if it
 * were still set, stealing a descriptor meant for someone else.
 */
#include "present-wl.h"
#include "present-wl-private.h"
#include "util/private_fd.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <wayland-client.h>

#include "xdg-output-unstable-v1-client-protocol.h"

#define MAX_OUTPUTS FSCOPE_PRESENT_MAX_OUTPUTS
#define PROBE_TIMEOUT_MS 1000
/* wl_output v4 adds name and description (wayland 1.20). */
#define WL_OUTPUT_VERSION_MAX 4
/* Relative tolerance when matching a claimed refresh period against an output's mode:
 * mode refresh is in integer mHz (at most 1/60000 = 0.0017 % rounding at 60 Hz), and
 * 59.94 Hz vs 60 Hz differ by 0.1 %, so 0.01 % separates them. */
#define REFRESH_TOLERANCE_DIV 10000

struct probe_output {
	struct probe *probe;
	uint32_t global_name;
	uint32_t version;
	struct wl_output *output;
	struct zxdg_output_v1 *xdg_output;
	char make[48], model[48];
	struct fscope_output_info info;
};

struct probe {
	struct zxdg_output_manager_v1 *xdg_manager;
	struct probe_output outputs[MAX_OUTPUTS];
	size_t count;
	bool oom;
};

static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER; /* one probe at a time */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fscope_output_info cache[MAX_OUTPUTS];
static size_t cache_count;
static bool cache_valid;

static void copy_string(char *dst, size_t dst_len, const char *src)
{
	snprintf(dst, dst_len, "%s", src ? src : "");
}

/* ---- wl_output ---------------------------------------------------------------------- */

static void output_geometry(void *data, struct wl_output *wl_output, int32_t x, int32_t y,
			    int32_t physical_width, int32_t physical_height, int32_t subpixel,
			    const char *make, const char *model, int32_t transform)
{
	struct probe_output *po = data;

	copy_string(po->make, sizeof(po->make), make);
	copy_string(po->model, sizeof(po->model), model);
}

static void output_mode(void *data, struct wl_output *wl_output, uint32_t flags,
			int32_t width, int32_t height, int32_t refresh)
{
	struct probe_output *po = data;

	if (!(flags & WL_OUTPUT_MODE_CURRENT))
		return;
	po->info.width = width;
	po->info.height = height;
	po->info.refresh_mhz = refresh > 0 ? (uint32_t)refresh : 0;
}

static void output_done(void *data, struct wl_output *wl_output)
{
}

static void output_scale(void *data, struct wl_output *wl_output, int32_t factor)
{
	struct probe_output *po = data;

	po->info.scale = factor;
}

static void output_name(void *data, struct wl_output *wl_output, const char *name)
{
	struct probe_output *po = data;

	copy_string(po->info.name, sizeof(po->info.name), name);
}

static void output_description(void *data, struct wl_output *wl_output, const char *description)
{
	struct probe_output *po = data;

	copy_string(po->info.description, sizeof(po->info.description), description);
}

static const struct wl_output_listener output_listener = {
	.geometry = output_geometry,
	.mode = output_mode,
	.done = output_done,
	.scale = output_scale,
	.name = output_name,
	.description = output_description,
};

/* ---- xdg_output (names on compositors with wl_output < 4, e.g. Weston 10) ----------- */

static void xdg_output_logical_position(void *data, struct zxdg_output_v1 *xdg_output,
					int32_t x, int32_t y)
{
}

static void xdg_output_logical_size(void *data, struct zxdg_output_v1 *xdg_output,
				    int32_t width, int32_t height)
{
}

static void xdg_output_done(void *data, struct zxdg_output_v1 *xdg_output)
{
}

static void xdg_output_name(void *data, struct zxdg_output_v1 *xdg_output, const char *name)
{
	struct probe_output *po = data;

	if (po->info.name[0] == '\0')
		copy_string(po->info.name, sizeof(po->info.name), name);
}

static void xdg_output_description(void *data, struct zxdg_output_v1 *xdg_output,
				   const char *description)
{
	struct probe_output *po = data;

	if (po->info.description[0] == '\0')
		copy_string(po->info.description, sizeof(po->info.description), description);
}

static const struct zxdg_output_v1_listener xdg_output_listener = {
	.logical_position = xdg_output_logical_position,
	.logical_size = xdg_output_logical_size,
	.done = xdg_output_done,
	.name = xdg_output_name,
	.description = xdg_output_description,
};

/* ---- registry ----------------------------------------------------------------------- */

static void registry_global(void *data, struct wl_registry *registry, uint32_t name,
			    const char *interface, uint32_t version)
{
	struct probe *probe = data;

	if (strcmp(interface, wl_output_interface.name) == 0) {
		struct probe_output *po;
		uint32_t bind_version = version;

		if (probe->count >= MAX_OUTPUTS)
			return;
		if (bind_version > WL_OUTPUT_VERSION_MAX)
			bind_version = WL_OUTPUT_VERSION_MAX;
		if (bind_version > (uint32_t)wl_output_interface.version)
			bind_version = (uint32_t)wl_output_interface.version;
		po = &probe->outputs[probe->count];
		po->probe = probe;
		po->global_name = name;
		po->version = bind_version;
		po->info.scale = 1;
		po->output = wl_registry_bind(registry, name, &wl_output_interface, bind_version);
		if (!po->output) {
			probe->oom = true;
			return;
		}
		wl_output_add_listener(po->output, &output_listener, po);
		probe->count++;
	} else if (strcmp(interface, zxdg_output_manager_v1_interface.name) == 0 &&
		   !probe->xdg_manager) {
		uint32_t bind_version = version;

		if (bind_version > (uint32_t)zxdg_output_manager_v1_interface.version)
			bind_version = (uint32_t)zxdg_output_manager_v1_interface.version;
		probe->xdg_manager = wl_registry_bind(registry, name,
						      &zxdg_output_manager_v1_interface,
						      bind_version);
		if (!probe->xdg_manager)
			probe->oom = true;
	}
}

static void registry_global_remove(void *data, struct wl_registry *registry, uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = {
	.global = registry_global,
	.global_remove = registry_global_remove,
};

/* ---- probe -------------------------------------------------------------------------- */

static struct wl_display *connect_own(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	const char *name = secure_getenv("WAYLAND_DISPLAY");
	int n, fd;

	/* Same default as libwayland. */
	if (!name || name[0] == '\0')
		name = "wayland-0";
	if (name[0] == '/') {
		n = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", name);
	} else {
		const char *runtime_dir = secure_getenv("XDG_RUNTIME_DIR");

		if (!runtime_dir || runtime_dir[0] == '\0')
			return NULL;
		n = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", runtime_dir, name);
	}
	if (n < 0 || (size_t)n >= sizeof(addr.sun_path))
		return NULL;

	/* libwayland owns and closes it: moved out of the app's range, not held. */
	fd = fscope_fd_move_high(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (fd < 0)
		return NULL;
	if (connect(fd, (struct sockaddr *)&addr,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1)) < 0) {
		close(fd);
		return NULL;
	}
	/* Takes the fd, and closes it on failure. */
	return wl_display_connect_to_fd(fd);
}

/* Fills out/ret_count from a fresh connection; false when the compositor cannot be asked
 * (or cancel_fd, if not -1, became readable). */
static bool probe_outputs(struct fscope_output_info *out, size_t *ret_count, int cancel_fd)
{
	/* Our own connection: it cannot be disconnected under us, only cancelled. */
	const struct fscope_wl_watch watch = { .cancel_fd = cancel_fd };
	struct wl_display *display;
	struct wl_event_queue *queue = NULL;
	struct wl_display *wrapper = NULL;
	struct wl_registry *registry = NULL;
	struct probe *probe;
	bool ok = false;

	/* Heap, not stack: this can run on a game thread with a small stack. */
	probe = calloc(1, sizeof(*probe));
	if (!probe)
		return false;
	display = connect_own();
	if (!display)
		goto out_probe;
	queue = wl_display_create_queue(display);
	if (!queue)
		goto out_display;
	wrapper = wl_proxy_create_wrapper(display);
	if (!wrapper)
		goto out_queue;
	wl_proxy_set_queue((struct wl_proxy *)wrapper, queue);
	registry = wl_display_get_registry(wrapper);
	if (!registry)
		goto out_wrapper;
	wl_registry_add_listener(registry, &registry_listener, probe);

	/* First roundtrip: globals (outputs are bound as they are announced). */
	if (fscope_wl_roundtrip_queue_timeout(display, wrapper, queue, PROBE_TIMEOUT_MS, &watch) < 0)
		goto out_objects;
	if (probe->xdg_manager) {
		for (size_t i = 0; i < probe->count; i++) {
			struct probe_output *po = &probe->outputs[i];

			po->xdg_output = zxdg_output_manager_v1_get_xdg_output(probe->xdg_manager,
									       po->output);
			if (po->xdg_output)
				zxdg_output_v1_add_listener(po->xdg_output, &xdg_output_listener,
							    po);
		}
	}
	/* Second: everything the binds and get_xdg_output produced. */
	if (fscope_wl_roundtrip_queue_timeout(display, wrapper, queue, PROBE_TIMEOUT_MS, &watch) < 0)
		goto out_objects;
	if (probe->oom)
		goto out_objects;

	for (size_t i = 0; i < probe->count; i++) {
		struct probe_output *po = &probe->outputs[i];

		out[i] = po->info;
		if (out[i].description[0] == '\0' && po->make[0] != '\0')
			snprintf(out[i].description, sizeof(out[i].description), "%s %s", po->make,
				 po->model);
	}
	*ret_count = probe->count;
	ok = true;

out_objects:
	for (size_t i = 0; i < probe->count; i++) {
		struct probe_output *po = &probe->outputs[i];

		if (po->xdg_output)
			zxdg_output_v1_destroy(po->xdg_output);
		if (po->version >= WL_OUTPUT_RELEASE_SINCE_VERSION)
			wl_output_release(po->output);
		else
			wl_output_destroy(po->output);
	}
	if (probe->xdg_manager)
		zxdg_output_manager_v1_destroy(probe->xdg_manager);
	wl_registry_destroy(registry);
	/* Disconnecting is enough for the compositor; flushing the releases is courtesy. */
	wl_display_flush(display);
out_wrapper:
	wl_proxy_wrapper_destroy(wrapper);
out_queue:
	wl_event_queue_destroy(queue);
out_display:
	wl_display_disconnect(display);
out_probe:
	free(probe);
	return ok;
}

/* Called with probe_lock held. */
static void probe_into_cache_locked(int cancel_fd, const struct fscope_present_sink *sink)
{
	struct fscope_output_info found[MAX_OUTPUTS];
	size_t count = 0;

	if (probe_outputs(found, &count, cancel_fd)) {
		pthread_mutex_lock(&cache_lock);
		memcpy(cache, found, count * sizeof(found[0]));
		cache_count = count;
		cache_valid = true;
		pthread_mutex_unlock(&cache_lock);
		/* The recording names them too: analysis may run in another process. */
		if (sink && sink->outputs)
			sink->outputs(sink->ctx, found, count);
	}
}

static void probe_into_cache(void)
{
	pthread_mutex_lock(&probe_lock);
	probe_into_cache_locked(-1, NULL);
	pthread_mutex_unlock(&probe_lock);
}

static bool cache_is_valid(void)
{
	bool valid;

	pthread_mutex_lock(&cache_lock);
	valid = cache_valid;
	pthread_mutex_unlock(&cache_lock);
	return valid;
}

void fscope_wl_outputs_prime(int cancel_fd, const struct fscope_present_sink *sink)
{
	/* A thread already probing fills the cache; waiting for it could not be cancelled. */
	if (cache_is_valid() || pthread_mutex_trylock(&probe_lock) != 0)
		return;
	if (!cache_is_valid())
		probe_into_cache_locked(cancel_fd, sink);
	pthread_mutex_unlock(&probe_lock);
}

size_t fscope_wl_outputs(struct fscope_output_info *out, size_t max)
{
	size_t n;

	if (!cache_is_valid())
		probe_into_cache();

	pthread_mutex_lock(&cache_lock);
	n = cache_count < max ? cache_count : max;
	if (out && n > 0)
		memcpy(out, cache, n * sizeof(cache[0]));
	pthread_mutex_unlock(&cache_lock);
	return out ? n : 0;
}

void fscope_wl_outputs_refresh(void)
{
	probe_into_cache();
}

int fscope_wl_outputs_match_refresh(uint32_t refresh_ns, bool *ret_ambiguous,
				    uint32_t *ret_refresh_mhz)
{
	int found = -1;
	unsigned matches = 0;

	*ret_ambiguous = false;
	*ret_refresh_mhz = 0;
	if (refresh_ns == 0)
		return -1;
	pthread_mutex_lock(&cache_lock);
	for (size_t i = 0; i < cache_count; i++) {
		int64_t period_ns, diff;

		if (cache[i].refresh_mhz == 0)
			continue;
		period_ns = (int64_t)(1000000000000ULL / cache[i].refresh_mhz);
		diff = period_ns - (int64_t)refresh_ns;
		if (diff < 0)
			diff = -diff;
		if (diff <= period_ns / REFRESH_TOLERANCE_DIV + 2) {
			if (found < 0) {
				found = (int)i;
				*ret_refresh_mhz = cache[i].refresh_mhz;
			}
			matches++;
		}
	}
	pthread_mutex_unlock(&cache_lock);
	*ret_ambiguous = matches > 1;
	return found;
}
