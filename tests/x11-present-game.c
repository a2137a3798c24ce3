/* A game loop that presents to an X11 window the way Mesa's DRI3 WSI does in FIFO (PresentPixmap
 * with serials 1, 2, 3 ..., then a blocking wait for the frame to complete before the next
 * acquire), recorded through libframescope's frame log exactly as the layer records a
 * VkXcbSurfaceKHR swapchain: a frame closed at each present, the wait charged as an acquire,
 * and the window's presentation tracked by the X11 tracker on its own connection.
 *
 * This is what an X11 game on a real GPU driver does, which this machine cannot run: lavapipe
 * presents to X11 with PutImage, never through Present (test_x11.py's vkcube case). At exit the
 * library writes its summary and capture as for any profiled app (FRAMESCOPE_OUTPUT and
 * FRAMESCOPE_SUMMARY apply), or framescope run analyses the recording.
 *
 * On a server without Present it presents with CopyArea (as Mesa's software path does with
 * PutImage) and sleeps for its pacing.
 *
 * --move-to X,Y moves the window there after half the frames, as a player dragging it to
 * another monitor would.
 *
 * usage: x11-present-game [--frames N] [--at X,Y] [--size WxH] [--move-to X,Y] (DISPLAY set) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xcb/present.h>
#include <xcb/xcb.h>

#include "record/clock.h"
#include "record/frame.h"
#include "record/registry.h"
#include "util/config.h"

#define FIFO_PRESENT_MODE 2 /* VK_PRESENT_MODE_FIFO_KHR */
#define COPY_PACE_MS 16     /* without Present: a frame's wait for "the display" */

static const struct fscope_loc loc_acquire = { "vkAcquireNextImageKHR", __FILE__, __LINE__, 0, 0 };

static int usage(const char *why)
{
    fprintf(stderr, "x11-present-game: %s\nusage: x11-present-game [--frames N] [--at X,Y] "
            "[--size WxH] [--move-to X,Y]\n", why);
    return 2;
}

/* "A<sep>B", both whole numbers in [min, max]. */
static bool parse_pair(const char *text, char sep, long min, long max, long *a, long *b)
{
    char first[32];
    const char *at = strchr(text, sep);
    if (!at || (size_t)(at - text) >= sizeof(first))
        return false;
    memcpy(first, text, (size_t)(at - text));
    first[at - text] = 0;
    return fscope_config_parse_long(first, min, max, a) &&
           fscope_config_parse_long(at + 1, min, max, b);
}

/* Waits for the completion of the present with this serial on our own connection; false when
 * the connection broke. */
static bool wait_complete(xcb_connection_t *c, xcb_window_t window, uint32_t serial)
{
    xcb_generic_event_t *e;
    while ((e = xcb_wait_for_event(c))) {
        bool done = (e->response_type & 0x7f) == XCB_GE_GENERIC &&
                    ((xcb_ge_generic_event_t *)e)->event_type == XCB_PRESENT_COMPLETE_NOTIFY &&
                    ((xcb_present_complete_notify_event_t *)e)->window == window &&
                    ((xcb_present_complete_notify_event_t *)e)->serial == serial;
        free(e);
        if (done)
            return true;
    }
    return false;
}

int main(int argc, char **argv)
{
    long frames = 240, x = 0, y = 0, width = 320, height = 240, move_x = 0, move_y = 0;
    bool move = false;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--frames") && v) {
            if (!fscope_config_parse_long(v, 1, 1000000, &frames))
                return usage("--frames takes a whole number from 1 to 1000000");
        } else if (!strcmp(argv[i], "--at") && v) {
            if (!parse_pair(v, ',', -32768, 32767, &x, &y))
                return usage("--at takes X,Y");
        } else if (!strcmp(argv[i], "--move-to") && v) {
            if (!parse_pair(v, ',', -32768, 32767, &move_x, &move_y))
                return usage("--move-to takes X,Y");
            move = true;
        } else if (!strcmp(argv[i], "--size") && v) {
            if (!parse_pair(v, 'x', 1, 4096, &width, &height))
                return usage("--size takes WxH, each from 1 to 4096");
        } else {
            return usage("unknown argument");
        }
        i++;
    }

    xcb_connection_t *c = xcb_connect(NULL, NULL);
    if (xcb_connection_has_error(c))
        return usage("cannot connect to $DISPLAY");
    const xcb_query_extension_reply_t *ext = xcb_get_extension_data(c, &xcb_present_id);
    bool has_present = ext && ext->present;
    if (!has_present)
        fprintf(stderr, "x11-present-game: the X server has no Present extension: presenting "
                "with CopyArea, paced by a %d ms sleep\n", COPY_PACE_MS);
    xcb_screen_t *screen = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
    xcb_window_t window = xcb_generate_id(c);
    /* override-redirect: placed where asked, whatever window manager runs. */
    uint32_t values[] = { screen->black_pixel, 1 };
    xcb_create_window(c, XCB_COPY_FROM_PARENT, window, screen->root, (int16_t)x, (int16_t)y,
                      (uint16_t)width, (uint16_t)height, 0, XCB_WINDOW_CLASS_INPUT_OUTPUT,
                      screen->root_visual, XCB_CW_BACK_PIXEL | XCB_CW_OVERRIDE_REDIRECT, values);
    xcb_pixmap_t pixmap = xcb_generate_id(c);
    xcb_create_pixmap(c, screen->root_depth, pixmap, window, (uint16_t)width, (uint16_t)height);
    xcb_gcontext_t gc = xcb_generate_id(c);
    xcb_create_gc(c, gc, pixmap, 0, NULL);
    if (has_present)
        xcb_present_select_input(c, xcb_generate_id(c), window,
                                 XCB_PRESENT_EVENT_MASK_COMPLETE_NOTIFY);
    xcb_map_window(c, window);
    xcb_flush(c);

    /* As the layer does at vkCreateXcbSurfaceKHR and vkCreateSwapchainKHR. */
    struct fscope_frame_log *log = fscope_frame_log_create("x11 surface 0");
    if (!log)
        return usage("out of memory");
    fscope_frame_log_set_surface(log, FRAME_SURFACE_X11);
    fscope_frame_log_track_x11(log, window);
    fscope_frame_log_open(log, fscope_now());

    int status = 0;
    for (long n = 1; n <= frames; n++) {
        if (move && n == frames / 2 + 1) {
            uint32_t at[] = { (uint32_t)move_x, (uint32_t)move_y };
            xcb_configure_window(c, window, XCB_CONFIG_WINDOW_X | XCB_CONFIG_WINDOW_Y, at);
        }
        const struct fscope_frame_origin origin = {
            .swapchain_serial = 1,
            .present_mode = FIFO_PRESENT_MODE,
            .swapchain_presents = (uint64_t)n,
        };
        struct fscope_frame *frame = fscope_frame_log_close(log, fscope_now(), &origin);
        if (has_present)
            xcb_present_pixmap(c, window, pixmap, (uint32_t)n, 0, 0, 0, 0, 0, 0, 0,
                               XCB_PRESENT_OPTION_NONE, 0, 0, 0, 0, NULL);
        else
            xcb_copy_area(c, pixmap, window, gc, 0, 0, 0, 0, (uint16_t)width, (uint16_t)height);
        xcb_flush(c);
        fscope_frame_log_presented(log, frame, fscope_now(), xcb_connection_has_error(c) != 0);
        /* FIFO with every image in flight: the next acquire waits for this one to be shown. */
        uint64_t start = fscope_block_begin(&loc_acquire);
        bool ok;
        if (has_present) {
            ok = wait_complete(c, window, (uint32_t)n);
        } else {
            struct timespec pace = { 0, COPY_PACE_MS * 1000000L };
            nanosleep(&pace, NULL);
            ok = !xcb_connection_has_error(c);
        }
        fscope_block_end(FSCOPE_BLOCK_ACQUIRE, start);
        if (!ok) {
            fprintf(stderr, "x11-present-game: the connection to the X server broke\n");
            status = 1;
            break;
        }
    }
    fscope_frame_log_untrack(log);
    xcb_disconnect(c);
    return status;
}
