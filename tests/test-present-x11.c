/* The X11 presentation tracker (src/present/present-x11.c) against a real X server (Xvfb,
 * started by tests/test_x11.py), driven by a client that presents the way Mesa's DRI3 WSI
 * does: PresentPixmap on its window with serials 1, 2, 3 ... Checks that every present is
 * matched to its completion by serial, shown or skipped, that the tally adds up exactly, that
 * presentation times and MSCs move forward, and that a present replaced before its target MSC
 * is reported discarded.
 *
 * usage: test-present-x11 (DISPLAY set) */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xcb/present.h>
#include <xcb/xcb.h>

#include "present/present-x11.h"
#include "check.h"

#define PRESENTS 60


/* The tracker's sink: how many outputs it last reported (on its thread; a record naming one
 * is drained after it). */
static _Atomic size_t sink_output_count;
static _Atomic unsigned sink_calls;

static void sink_outputs(void *ctx, const struct fscope_output_info *outputs, size_t count)
{
    (void)ctx;
    (void)outputs;
    atomic_store(&sink_output_count, count);
    atomic_fetch_add(&sink_calls, 1);
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

/* Waits until the tracker has finished records for want presents (or 5 s), keeping them. */
static size_t drain_until(struct fscope_x11_tracker *t, struct fscope_present_feedback *out,
                          size_t have, size_t want)
{
    for (int i = 0; i < 500 && have < want; i++) {
        have += fscope_x11_tracker_drain(t, out + have, want - have);
        if (have < want)
            sleep_ms(10);
    }
    return have;
}

static uint64_t current_msc(xcb_connection_t *c, xcb_window_t w)
{
    /* NotifyMSC with target 0 completes at the next vblank with the current MSC. */
    uint32_t eid = xcb_generate_id(c);
    xcb_present_select_input(c, eid, w, XCB_PRESENT_EVENT_MASK_COMPLETE_NOTIFY);
    xcb_present_notify_msc(c, w, 0xfeed, 0, 0, 0);
    xcb_flush(c);
    uint64_t msc = 0;
    xcb_generic_event_t *e;
    while (!msc && (e = xcb_wait_for_event(c))) {
        if ((e->response_type & 0x7f) == XCB_GE_GENERIC &&
            ((xcb_ge_generic_event_t *)e)->event_type == XCB_PRESENT_COMPLETE_NOTIFY) {
            xcb_present_complete_notify_event_t *cn = (void *)e;
            if (cn->kind == XCB_PRESENT_COMPLETE_KIND_NOTIFY_MSC)
                msc = cn->msc;
        }
        free(e);
    }
    xcb_present_select_input(c, eid, w, 0);
    return msc;
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    xcb_connection_t *c = xcb_connect(NULL, NULL);
    if (xcb_connection_has_error(c)) {
        fprintf(stderr, "no X display (%s: xcb error %d)\n", getenv("DISPLAY") ? getenv("DISPLAY") : "unset", xcb_connection_has_error(c));
        return 77;
    }
    xcb_screen_t *screen = xcb_setup_roots_iterator(xcb_get_setup(c)).data;
    xcb_window_t w = xcb_generate_id(c);
    xcb_create_window(c, XCB_COPY_FROM_PARENT, w, screen->root, 0, 0, 64, 64, 0,
                      XCB_WINDOW_CLASS_INPUT_OUTPUT, screen->root_visual, 0, NULL);
    xcb_map_window(c, w);
    xcb_pixmap_t pixmap = xcb_generate_id(c);
    xcb_create_pixmap(c, screen->root_depth, pixmap, w, 64, 64);
    xcb_flush(c);

    char why[192];
    /* A window that does not exist: the tracker stops with the reason, asks nothing. */
    struct fscope_x11_tracker *bad = fscope_x11_tracker_create(NULL, 0x7fffff0, NULL, why,
                                                               sizeof(why));
    EXPECT(bad, "create: %s", why);
    for (int i = 0; i < 300 && bad && fscope_x11_tracker_why(bad, why, sizeof(why)) &&
                    strstr(why, "being set up");
         i++)
        sleep_ms(10);
    EXPECT(bad && fscope_x11_tracker_why(bad, why, sizeof(why)) &&
              strstr(why, "PresentSelectInput on window 0x7fffff0 failed"),
          "a missing window: '%s'", why);
    EXPECT(fscope_x11_tracker_request(bad, 0, 1) == FSCOPE_WL_NOT_READY, "asked on a dead tracker");
    fscope_x11_tracker_destroy_with_counts(bad, NULL);

    const struct fscope_present_sink sink = { .outputs = sink_outputs };
    struct fscope_x11_tracker *t = fscope_x11_tracker_create(NULL, w, &sink, why, sizeof(why));
    EXPECT(t, "create: %s", why);
    if (!t)
        return 1;
    for (int i = 0; i < 300 && !fscope_x11_tracker_ready(t); i++)
        sleep_ms(10);
    EXPECT(fscope_x11_tracker_ready(t), "not ready after 3 s");

    /* Shown presents: serials 1..PRESENTS, one per refresh or so. */
    struct fscope_present_feedback fb[PRESENTS + 2];
    for (uint32_t serial = 1; serial <= PRESENTS; serial++) {
        EXPECT(fscope_x11_tracker_request(t, serial - 1, serial) == FSCOPE_WL_REQUESTED,
              "request %u", serial);
        xcb_present_pixmap(c, w, pixmap, serial, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL);
        xcb_flush(c);
        sleep_ms(5);
    }
    size_t n = drain_until(t, fb, 0, PRESENTS);
    EXPECT(n == PRESENTS, "%zu records of %d presents", n, PRESENTS);
    /* Completions come in the server's order (a present replaced in its vblank is skipped when
     * its successor arrives): put them in present order, each exactly once. */
    struct fscope_present_feedback by_id[PRESENTS];
    bool seen[PRESENTS] = { false };
    for (size_t i = 0; i < n; i++) {
        uint64_t id = fb[i].present_id;
        EXPECT(id < PRESENTS && !seen[id], "record %zu: present %llu again or unknown", i,
              (unsigned long long)id);
        if (id < PRESENTS) {
            seen[id] = true;
            by_id[id] = fb[i];
        }
    }
    unsigned shown = 0;
    int64_t last_ns = 0;
    uint64_t last_msc = 0;
    for (size_t i = 0; i < PRESENTS; i++) {
        if (!seen[i] || by_id[i].outcome != FSCOPE_PRESENT_PRESENTED)
            continue;
        shown++;
        /* The output a frame was shown on is one the sink was given. */
        EXPECT(by_id[i].output_index < (int)atomic_load(&sink_output_count),
              "shown present %zu on output %d of the %zu given to the sink (%u calls)", i,
              by_id[i].output_index, atomic_load(&sink_output_count), atomic_load(&sink_calls));
        EXPECT(by_id[i].presented_mono_ns >= last_ns && by_id[i].seq > last_msc,
              "shown present %zu not after the one shown before it", i);
        last_ns = by_id[i].presented_mono_ns;
        last_msc = by_id[i].seq;
    }
    EXPECT(shown > 0, "nothing shown");
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    EXPECT(last_ns <= now_ns && last_ns > now_ns - 10 * 1000000000ll,
          "presentation time %lld not on this machine's CLOCK_MONOTONIC (now %lld)",
          (long long)last_ns, (long long)now_ns);

    /* Two presents for one future MSC: the first is replaced before it is shown (SKIP). */
    uint64_t msc = current_msc(c, w);
    EXPECT(msc > 0, "no MSC");
    for (uint32_t k = 0; k < 2; k++) {
        uint32_t serial = PRESENTS + 1 + k;
        fscope_x11_tracker_request(t, serial - 1, serial);
        xcb_present_pixmap(c, w, pixmap, serial, 0, 0, 0, 0, 0, 0, 0, 0, msc + 5, 0, 0, 0, NULL);
    }
    xcb_flush(c);
    size_t m = drain_until(t, fb, 0, 2);
    /* One of the two is skipped (discarded) and the other shown at the target or later, each
     * reported as the server said; the records come in the order the server sends its
     * notifies, and on a loaded machine Xvfb sent the shown one's first (outcomes 1 2). */
    size_t shown_at = m == 2 && fb[1].outcome == FSCOPE_PRESENT_PRESENTED ? 1 : 0;
    EXPECT(m == 2 && fb[shown_at].outcome == FSCOPE_PRESENT_PRESENTED &&
              fb[1 - shown_at].outcome == FSCOPE_PRESENT_DISCARDED &&
              fb[shown_at].seq >= msc + 5 && fb[0].present_id != fb[1].present_id &&
              fb[0].present_id >= PRESENTS && fb[0].present_id <= PRESENTS + 1 &&
              fb[1].present_id >= PRESENTS && fb[1].present_id <= PRESENTS + 1,
          "replaced present: %zu records, outcomes %d %d (ids %llu %llu), msc %llu (target "
          "%llu)", m, m > 0 ? (int)fb[0].outcome : -1, m > 1 ? (int)fb[1].outcome : -1,
          m > 0 ? (unsigned long long)fb[0].present_id : 0ull,
          m > 1 ? (unsigned long long)fb[1].present_id : 0ull,
          m > 1 ? (unsigned long long)fb[shown_at].seq : 0ull, (unsigned long long)msc + 5);

    /* A completion nobody asked about (a serial never requested) is counted, not matched. */
    xcb_present_pixmap(c, w, pixmap, 9999, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL);
    xcb_flush(c);
    for (int i = 0; i < 300 && !fscope_x11_tracker_unmatched(t); i++)
        sleep_ms(10);
    EXPECT(fscope_x11_tracker_unmatched(t) == 1, "unmatched %llu",
          (unsigned long long)fscope_x11_tracker_unmatched(t));

    struct fscope_wl_counts counts;
    fscope_x11_tracker_destroy_with_counts(t, &counts);
    EXPECT(counts.requested == PRESENTS + 2 &&
              counts.requested == counts.presented + counts.discarded + counts.pending +
                                      counts.orphaned &&
              counts.discarded >= 1 && counts.pending == 0,
          "requested %llu = presented %llu + discarded %llu + pending %llu + orphaned %llu",
          (unsigned long long)counts.requested, (unsigned long long)counts.presented,
          (unsigned long long)counts.discarded, (unsigned long long)counts.pending,
          (unsigned long long)counts.orphaned);
    printf("%d presents matched by serial: %u shown, then a replaced one discarded; requested "
           "%llu = presented %llu + discarded %llu; one unmatched completion counted\n",
           PRESENTS, shown, (unsigned long long)counts.requested,
           (unsigned long long)counts.presented, (unsigned long long)counts.discarded);
    xcb_disconnect(c);
    return check_failures ? 1 : 0;
}
