/*
 * framescope-demo's Wayland window: one xdg_toplevel, dispatched on the display's default
 * queue the way an ordinary client does it. Mesa's WSI talks to the compositor on its own
 * queue, so nothing here waits on or steals its events.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wayland-client.h>

#include "demo.h"
#include "xdg-shell-client-protocol.h"

#include <vulkan/vulkan_wayland.h>

struct demo_window {
    struct wl_display *display;
    struct wl_registry *registry;
    struct wl_compositor *compositor;
    struct xdg_wm_base *wm_base;
    struct wl_surface *surface;
    struct xdg_surface *xdg_surface;
    struct xdg_toplevel *toplevel;
    struct wl_callback *frame_callback; /* asked for and not come yet */
    bool frame_done;                    /* the last one asked for came */
    bool configured;
    bool close_requested;
};

static void wm_base_ping(void *data, struct xdg_wm_base *wm_base, uint32_t serial)
{
    xdg_wm_base_pong(wm_base, serial);
}

static const struct xdg_wm_base_listener wm_base_listener = {
    .ping = wm_base_ping,
};

static void registry_global(void *data, struct wl_registry *registry, uint32_t name,
                            const char *interface, uint32_t version)
{
    struct demo_window *window = data;
    /*
     * Never above what is advertised. xdg_wm_base version 1 has every event we handle;
     * wl_compositor 4 lets the WSI use damage_buffer.
     */
    if (strcmp(interface, wl_compositor_interface.name) == 0 && !window->compositor) {
        window->compositor = wl_registry_bind(registry, name, &wl_compositor_interface,
                                              version < 4 ? version : 4);
    } else if (strcmp(interface, xdg_wm_base_interface.name) == 0 && !window->wm_base) {
        window->wm_base = wl_registry_bind(registry, name, &xdg_wm_base_interface, 1);
        xdg_wm_base_add_listener(window->wm_base, &wm_base_listener, window);
    }
}

static void registry_global_remove(void *data, struct wl_registry *registry, uint32_t name)
{
}

static const struct wl_registry_listener registry_listener = {
    .global = registry_global,
    .global_remove = registry_global_remove,
};

static void xdg_surface_configure(void *data, struct xdg_surface *xdg_surface, uint32_t serial)
{
    struct demo_window *window = data;
    /* The ack takes effect on the next commit, which the WSI makes at the next present. */
    xdg_surface_ack_configure(xdg_surface, serial);
    window->configured = true;
}

static const struct xdg_surface_listener xdg_surface_listener = {
    .configure = xdg_surface_configure,
};

static void toplevel_configure(void *data, struct xdg_toplevel *toplevel, int32_t width,
                               int32_t height, struct wl_array *states)
{
    /*
     * The size stays what --width and --height say: a toplevel that is neither maximised
     * nor fullscreen may choose its own, and tests rely on a fixed pixel count.
     */
}

static void toplevel_close(void *data, struct xdg_toplevel *toplevel)
{
    struct demo_window *window = data;
    window->close_requested = true;
}

static const struct xdg_toplevel_listener toplevel_listener = {
    .configure = toplevel_configure,
    .close = toplevel_close,
};

struct demo_window *demo_window_create(const char *title)
{
    struct demo_window *window = calloc(1, sizeof(*window));
    if (!window) {
        fprintf(stderr, DEMO_NAME ": out of memory\n");
        return NULL;
    }
    window->display = wl_display_connect(NULL);
    if (!window->display) {
        const char *name = getenv("WAYLAND_DISPLAY");
        fprintf(stderr, DEMO_NAME ": cannot connect to Wayland display '%s' (%s); "
                "try --output offscreen\n", name ? name : "wayland-0", strerror(errno));
        goto error;
    }
    window->registry = wl_display_get_registry(window->display);
    wl_registry_add_listener(window->registry, &registry_listener, window);
    if (wl_display_roundtrip(window->display) < 0) {
        fprintf(stderr, DEMO_NAME ": Wayland roundtrip failed: %s\n", strerror(errno));
        goto error;
    }
    if (!window->compositor || !window->wm_base) {
        fprintf(stderr, DEMO_NAME ": the compositor lacks %s\n",
                window->compositor ? "xdg_wm_base" : "wl_compositor");
        goto error;
    }

    window->surface = wl_compositor_create_surface(window->compositor);
    window->xdg_surface = xdg_wm_base_get_xdg_surface(window->wm_base, window->surface);
    xdg_surface_add_listener(window->xdg_surface, &xdg_surface_listener, window);
    window->toplevel = xdg_surface_get_toplevel(window->xdg_surface);
    xdg_toplevel_add_listener(window->toplevel, &toplevel_listener, window);
    xdg_toplevel_set_title(window->toplevel, title);
    xdg_toplevel_set_app_id(window->toplevel, title);
    /* xdg-shell: commit without a buffer, then wait for the first configure and ack it. */
    wl_surface_commit(window->surface);
    while (!window->configured) {
        if (wl_display_dispatch(window->display) < 0) {
            fprintf(stderr, DEMO_NAME ": Wayland dispatch failed: %s\n", strerror(errno));
            goto error;
        }
    }
    /* Carries the ack before any buffer: the swapchain's first present attaches one. */
    wl_surface_commit(window->surface);
    if (wl_display_flush(window->display) < 0 && errno != EAGAIN) {
        fprintf(stderr, DEMO_NAME ": Wayland flush failed: %s\n", strerror(errno));
        goto error;
    }
    return window;

error:
    demo_window_destroy(window);
    return NULL;
}

/* Destroys what is still there and disconnects; every pointer is left NULL. */
static void release_connection(struct demo_window *window)
{
    if (window->frame_callback)
        wl_callback_destroy(window->frame_callback);
    window->frame_callback = NULL;
    if (window->toplevel)
        xdg_toplevel_destroy(window->toplevel);
    if (window->xdg_surface)
        xdg_surface_destroy(window->xdg_surface);
    if (window->surface)
        wl_surface_destroy(window->surface);
    if (window->wm_base)
        xdg_wm_base_destroy(window->wm_base);
    if (window->compositor)
        wl_compositor_destroy(window->compositor);
    if (window->registry)
        wl_registry_destroy(window->registry);
    window->toplevel = NULL;
    window->xdg_surface = NULL;
    window->surface = NULL;
    window->wm_base = NULL;
    window->compositor = NULL;
    window->registry = NULL;
    if (window->display) {
        wl_display_flush(window->display);
        wl_display_disconnect(window->display);
        window->display = NULL;
    }
}

void demo_window_disconnect(struct demo_window *window)
{
    /* Proxies must go before their display: disconnecting frees what they point to. */
    release_connection(window);
}

void demo_window_destroy(struct demo_window *window)
{
    if (!window)
        return;
    release_connection(window);
    free(window);
}

bool demo_window_create_surface(struct demo_window *window, VkInstance instance,
                                VkSurfaceKHR *ret_surface)
{
    VkWaylandSurfaceCreateInfoKHR create_info = {
        .sType = VK_STRUCTURE_TYPE_WAYLAND_SURFACE_CREATE_INFO_KHR,
        .display = window->display,
        .surface = window->surface,
    };
    return demo_vk_check(vkCreateWaylandSurfaceKHR(instance, &create_info, NULL, ret_surface),
                         "vkCreateWaylandSurfaceKHR");
}

/* Dispatches what is queued, then reads and dispatches what arrives within timeout_ms (0:
 * only what is there already; -1: until something comes, unless *done is true once the
 * queued events are dispatched). False: the connection is lost. */
static bool dispatch_within(struct demo_window *window, int timeout_ms, const bool *done)
{
    struct wl_display *display = window->display;

    /* prepare_read fails while events are queued: dispatch those first. */
    while (wl_display_prepare_read(display) != 0) {
        if (wl_display_dispatch_pending(display) < 0)
            goto error;
    }
    if (done && *done) {
        wl_display_cancel_read(display);
        return true;
    }
    if (wl_display_flush(display) < 0 && errno != EAGAIN) {
        wl_display_cancel_read(display);
        goto error;
    }
    struct pollfd pollfd = { .fd = wl_display_get_fd(display), .events = POLLIN };
    if (poll(&pollfd, 1, timeout_ms) < 0 && errno != EINTR) {
        wl_display_cancel_read(display);
        goto error;
    }
    if (pollfd.revents & POLLIN) {
        if (wl_display_read_events(display) < 0)
            goto error;
    } else {
        wl_display_cancel_read(display);
    }
    if (wl_display_dispatch_pending(display) < 0)
        goto error;
    return true;

error:
    fprintf(stderr, DEMO_NAME ": lost the Wayland connection: %s\n", strerror(errno));
    return false;
}

bool demo_window_dispatch(struct demo_window *window)
{
    return dispatch_within(window, 0, NULL);
}

static void frame_done(void *data, struct wl_callback *callback, uint32_t time)
{
    struct demo_window *window = data;
    wl_callback_destroy(callback);
    if (window->frame_callback == callback) {
        window->frame_callback = NULL;
        window->frame_done = true;
    }
}

static const struct wl_callback_listener frame_listener = { .done = frame_done };

bool demo_window_request_frame(struct demo_window *window)
{
    if (window->frame_callback)
        return true; /* the last one has not come: wait for that */
    window->frame_done = false;
    window->frame_callback = wl_surface_frame(window->surface);
    if (!window->frame_callback) {
        fprintf(stderr, DEMO_NAME ": wl_surface.frame failed\n");
        return false;
    }
    wl_callback_add_listener(window->frame_callback, &frame_listener, window);
    return true;
}

bool demo_window_wait_frame(struct demo_window *window)
{
    /* The callback may be queued already: dispatch_within dispatches that first, and waits
     * only while it has not come. */
    while (!window->frame_done && !window->close_requested)
        if (!dispatch_within(window, -1, &window->frame_done))
            return false;
    return true;
}

bool demo_window_close_requested(const struct demo_window *window)
{
    return window->close_requested;
}
