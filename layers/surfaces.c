/* Surfaces and swapchains: each surface's frame log, made with the surface so that
 * presentation tracking (set up on its own thread) is ready by the first present; its cap,
 * made with its first swapchain; and the swapchains frames are presented on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer.h"
#include "library.h"
#include "record/clock.h"
#include "record/meta.h"

static void surface_start_frames(struct surface_data *surface);

/* Registers a surface and starts its frame log (and, for Wayland, presentation tracking). */
static struct surface_data *surface_add(struct instance_data *inst, VkSurfaceKHR surface,
                                 enum surface_kind kind, void *wl_display, void *wl_surface,
                                 uint32_t x11_window)
{
    struct surface_data *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->surface = surface;
    s->instance = inst;
    s->kind = kind;
    s->wl_display = wl_display;
    s->wl_surface = wl_surface;
    s->x11_window = x11_window;
    if (!objects_surface_add(s)) {
        fscope_record_note("more than %d surfaces at once: later ones are not profiled",
                           MAX_SURFACES);
        free(s);
        return NULL;
    }
    surface_start_frames(s);
    return s;
}

static void surface_remove(VkSurfaceKHR surface)
{
    struct surface_data *s = surface_lookup(surface);
    if (!s)
        return;
    /* The app's display is still alive here: the last safe moment to tear Wayland down. */
    fscope_frame_log_untrack(s->frames);
    objects_surface_remove(s);
    /* The frame log lives on for the summary; the bookkeeping goes. A racing reader is an
     * app bug (using a surface while destroying it), so freeing here is safe. */
    free(s);
}

/* A surface's frame log is made with the surface, so that presentation tracking (whose set-up
 * runs on its own thread) is ready by the first present. */
static void surface_start_frames(struct surface_data *surface)
{
    static _Atomic unsigned surfaces_seen;
    static const char *const kind_names[] = { "wayland", "headless", "non-wayland", "x11" };
    snprintf(surface->label, sizeof(surface->label), "%s surface %u", kind_names[surface->kind],
             atomic_fetch_add(&surfaces_seen, 1));
    surface->frames = fscope_frame_log_create(surface->label);
    if (!surface->frames)
        return;
    switch (surface->kind) {
    case SURFACE_WAYLAND:
        fscope_frame_log_set_surface(surface->frames, FRAME_SURFACE_WAYLAND);
        if (!layer_config.presentation)
            fscope_frame_log_untrackable(surface->frames, "off (FRAMESCOPE_PRESENT=off)");
        else
            fscope_frame_log_track_wayland(surface->frames, surface->wl_display,
                                           surface->wl_surface);
        break;
    case SURFACE_HEADLESS:
        fscope_frame_log_set_surface(surface->frames, FRAME_SURFACE_HEADLESS);
        fscope_frame_log_untrackable(surface->frames, "a headless surface (VK_EXT_headless_"
                                     "surface): no display shows its frames");
        break;
    case SURFACE_OTHER:
        fscope_frame_log_set_surface(surface->frames, FRAME_SURFACE_OTHER);
        fscope_frame_log_untrackable(surface->frames, "neither a Wayland nor an X11 surface "
                                     "(a display surface): frames are timed at present");
        break;
    case SURFACE_X11:
        fscope_frame_log_set_surface(surface->frames, FRAME_SURFACE_X11);
        if (!layer_config.presentation)
            fscope_frame_log_untrackable(surface->frames, "off (FRAMESCOPE_PRESENT=off)");
        else
            fscope_frame_log_track_x11(surface->frames, surface->x11_window);
        break;
    }
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateWaylandSurfaceKHR(
    VkInstance instance, const VkWaylandSurfaceCreateInfoKHR *info,
    const VkAllocationCallbacks *alloc, VkSurfaceKHR *ret)
{
    struct instance_data *inst = instance_lookup(instance);
    VkResult r = inst->vk.CreateWaylandSurfaceKHR(instance, info, alloc, ret);
    if (r == VK_SUCCESS)
        surface_add(inst, *ret, SURFACE_WAYLAND, info->display, info->surface, 0);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateHeadlessSurfaceEXT(
    VkInstance instance, const VkHeadlessSurfaceCreateInfoEXT *info,
    const VkAllocationCallbacks *alloc, VkSurfaceKHR *ret)
{
    struct instance_data *inst = instance_lookup(instance);
    VkResult r = inst->vk.CreateHeadlessSurfaceEXT(instance, info, alloc, ret);
    if (r == VK_SUCCESS)
        surface_add(inst, *ret, SURFACE_HEADLESS, NULL, NULL, 0);
    return r;
}

/* X11 windows (Proton/Wine and native games under X or XWayland): the tracker opens its own
 * connection to $DISPLAY and follows the window by its XID. */
static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateXcbSurfaceKHR(
    VkInstance instance, const VkXcbSurfaceCreateInfoKHR *info,
    const VkAllocationCallbacks *alloc, VkSurfaceKHR *ret)
{
    struct instance_data *inst = instance_lookup(instance);
    VkResult r = inst->vk.CreateXcbSurfaceKHR(instance, info, alloc, ret);
    if (r == VK_SUCCESS)
        surface_add(inst, *ret, SURFACE_X11, NULL, NULL, info->window);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateXlibSurfaceKHR(
    VkInstance instance, const layer_xlib_surface_info *info, const VkAllocationCallbacks *alloc,
    VkSurfaceKHR *ret)
{
    struct instance_data *inst = instance_lookup(instance);
    VkResult r = inst->vk.CreateXlibSurfaceKHR(instance, info, alloc, ret);
    if (r == VK_SUCCESS)
        surface_add(inst, *ret, SURFACE_X11, NULL, NULL, (uint32_t)info->window);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL framescope_DestroySurfaceKHR(VkInstance instance,
                                                              VkSurfaceKHR surface,
                                                              const VkAllocationCallbacks *alloc)
{
    struct instance_data *inst = instance_lookup(instance);
    surface_remove(surface);
    inst->vk.DestroySurfaceKHR(instance, surface, alloc);
}

/* Policy for a surface's first swapchain: its frames start, and its cap is made. */
static void surface_first_swapchain(struct surface_data *surface)
{
    fscope_frame_log_open(surface->frames, fscope_now());
    if (layer_config.cap_mode == CAP_OFF || surface->cap)
        return;
    const char *label = surface->label;
    char cap_label[96];
    if (layer_config.cap_mode == CAP_AUTO)
        snprintf(cap_label, sizeof(cap_label), "FRAMESCOPE_CAP=auto on %s", label);
    else
        snprintf(cap_label, sizeof(cap_label), "FRAMESCOPE_CAP=%g on %s", layer_config.cap_hz,
                 label);
    surface->cap = fscope_cap_create(cap_label);
    if (layer_config.cap_mode == CAP_FIXED)
        fscope_cap_target_hz(surface->cap, layer_config.cap_hz);
    else if (!layer_config.presentation || surface->kind != SURFACE_WAYLAND)
        fscope_record_note("FRAMESCOPE_CAP=auto needs presentation feedback to learn the "
                           "output's refresh; %s has none, so it is not capped", label);
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateSwapchainKHR(
    VkDevice device, const VkSwapchainCreateInfoKHR *info, const VkAllocationCallbacks *alloc,
    VkSwapchainKHR *ret)
{
    struct device_data *dev = device_lookup(device);
    uint64_t start = fscope_now();
    VkResult r = dev->vk.CreateSwapchainKHR(device, info, alloc, ret);
    struct fscope_collector *c = fscope_thread_collector();
    if (c)
        fscope_collector_count(c, FSCOPE_COUNT_SWAPCHAIN_TICKS, fscope_now() - start);
    if (r != VK_SUCCESS)
        return r;
    struct surface_data *surface = surface_lookup(info->surface);
    if (!surface) /* XCB, Xlib, display: not hooked, learned here */
        surface = surface_add(dev->instance, info->surface, SURFACE_OTHER, NULL, NULL, 0);
    if (!surface || !surface->frames)
        return r;
    surface_first_swapchain(surface);
    struct swapchain_data *sc = calloc(1, sizeof(*sc));
    if (!sc)
        return r;
    sc->swapchain = *ret;
    sc->surface = surface;
    sc->serial = surface->swapchains_created++;
    sc->present_mode = (int32_t)info->presentMode;
    sc->device_id = dev->id;
    if (!table_insert(dev->swapchains, MAX_SWAPCHAINS, &dev->lock, (uint64_t)*ret, sc)) {
        fscope_record_note("more than %d swapchains on one device: later ones are not "
                           "profiled", MAX_SWAPCHAINS);
        free(sc);
    }
    return r;
}

static VKAPI_ATTR void VKAPI_CALL framescope_DestroySwapchainKHR(
    VkDevice device, VkSwapchainKHR swapchain, const VkAllocationCallbacks *alloc)
{
    struct device_data *dev = device_lookup(device);
    struct swapchain_data *sc = swapchain ? swapchain_lookup(dev, swapchain) : NULL;
    if (sc) {
        fscope_frame_log_drain(sc->surface->frames);
        table_remove(dev->swapchains, MAX_SWAPCHAINS, &dev->lock, sc);
        free(sc);
    }
    dev->vk.DestroySwapchainKHR(device, swapchain, alloc);
}

void surfaces_instance_finish(struct instance_data *inst)
{
    /* Surfaces the app never destroyed: taken out under the lock, torn down outside it (the
     * teardown joins a thread and calls libwayland). */
    struct surface_data *orphans[MAX_SURFACES];
    unsigned orphan_count = objects_surfaces_take(inst, orphans);
    for (unsigned i = 0; i < orphan_count; i++) {
        fscope_frame_log_untrack(orphans[i]->frames);
        free(orphans[i]);
    }
}

static const struct layer_instance_hook instance_rows[] = {
    INSTANCE_HOOKS(LAYER_INSTANCE_HOOK_ROW)
};
const struct layer_instance_hook_table surfaces_instance_hook_table =
    LAYER_HOOK_TABLE(instance_rows);

static const struct layer_hook rows[] = {
    SWAPCHAIN_HOOKS(LAYER_HOOK_ROW)
};
const struct layer_hook_table surfaces_hook_table = LAYER_HOOK_TABLE(rows);
