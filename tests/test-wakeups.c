/* The wake-up chain read through a window over the sorted sched events (issue 35): every
 * frame's chain as the synthetic recording built it, in any order a pass asks, with the
 * window holding only the events of about one frame, and with a window that holds fewer
 * than a frame's (a loading screen's frame holds more than any window keeps). */
#include <string.h>

#include "analysis/wakeups.h"
#include "check.h"
#include "synth-recording.h"

#define FRAMES 20000u /* 100,000 events: the sorter's runs go to its file */

/* What synth_recording built for a frame whose chain is known. */
static void expect_chain(uint64_t i, const struct wakeup_view *w)
{
    const int64_t ms = 1000000;
    bool hitch = i % 50 == 25;
    EXPECT(w->ran_tid == 300 && w->ran_ns == ms && !strcmp(w->ran_comm, "hog"),
           "frame %llu: ran %d '%s' for %lld ns", (unsigned long long)i, w->ran_tid, w->ran_comm,
           (long long)w->ran_ns);
    int64_t slept = (hitch ? 35 : 2) * ms;
    EXPECT(w->slept_ns == slept && w->waker_tid == 400 && !strcmp(w->waker_comm, "waker"),
           "frame %llu: slept %lld ns, woken by %d '%s'", (unsigned long long)i,
           (long long)w->slept_ns, w->waker_tid, w->waker_comm);
    EXPECT(w->io_wait_ns == (hitch ? slept : 0), "frame %llu: %lld ns of I/O wait",
           (unsigned long long)i, (long long)w->io_wait_ns);
    EXPECT(w->slept_by_ns[WAKER_OTHER_PROCESS] == slept && w->by_tid[WAKER_OTHER_PROCESS] == 400,
           "frame %llu: %lld ns woken by another process", (unsigned long long)i,
           (long long)w->slept_by_ns[WAKER_OTHER_PROCESS]);
}

static bool same(const struct wakeup_view *a, const struct wakeup_view *b)
{
    return memcmp(a, b, sizeof(*a)) == 0;
}

int main(void)
{
    struct recording *rec = synth_recording(FRAMES);
    CHECK(rec);
    CHECK(sorter_spilled(&rec->kernel.sched_events));
    struct fscope_frame *frames = malloc(FRAMES * sizeof(*frames));
    CHECK(frames);
    struct frame_cursor c;
    CHECK(frame_cursor_open(&c, rec, &rec->logs[0]));
    for (uint64_t i = 0; i < FRAMES; i++)
        frames[i] = *frame_at(&c, i);
    frame_cursor_close(&c);

    struct sched_index x;
    sched_index_build(rec, &x);
    CHECK(x.count == rec->kernel.sched_count - rec->kernel.sched_marks);
    struct wakeup_view *forward = calloc(FRAMES, sizeof(*forward));
    CHECK(forward);
    struct sched_window w;
    sched_window_open(&w, &x);
    uint64_t known = 0;
    size_t most_room = 0;
    for (uint64_t i = 0; i < FRAMES; i++) {
        frame_wakeups(rec, &w, &frames[i], &forward[i]);
        EXPECT(forward[i].known == (frame_wakeup_coverage(&x, &frames[i]) == WAKEUP_KNOWN),
               "frame %llu: known %d", (unsigned long long)i, forward[i].known);
        if (forward[i].known) {
            known++;
            expect_chain(i, &forward[i]);
        }
        most_room = w.room > most_room ? w.room : most_room;
    }
    sched_window_close(&w);
    /* The paused frames (4 of every 200) and the two whose thread's view is not whole. */
    printf("%llu of %u frames with their chain known; the window held %zu events at most\n",
           (unsigned long long)known, FRAMES, most_room);
    EXPECT(known >= FRAMES - FRAMES / 200 * 4 - 2, "only %llu frames known",
           (unsigned long long)known);
    /* About one frame's events (5), in room doubling from 64: never the run's. */
    EXPECT(most_room <= 128, "the window grew to %zu events", most_room);

    /* Backwards, and in a scrambled order: each frame that starts before the last one asked
     * about reads the events again from the first, with the same answer. */
    sched_window_open(&w, &x);
    unsigned asked = 0, differ = 0;
    for (uint64_t i = FRAMES - 1;; i -= 97) {
        struct wakeup_view v;
        frame_wakeups(rec, &w, &frames[i], &v);
        asked++;
        differ += !same(&v, &forward[i]);
        if (i < 97)
            break;
    }
    for (unsigned k = 0; k < 300; k++) {
        uint64_t i = test_random() % FRAMES;
        struct wakeup_view v;
        frame_wakeups(rec, &w, &frames[i], &v);
        asked++;
        differ += !same(&v, &forward[i]);
    }
    sched_window_close(&w);
    EXPECT(differ == 0, "%u of %u frames asked out of order read another chain", differ, asked);

    /* A window that keeps 1 event at most (a frame has about 5): every frame read through
     * as its events pass, the same chains; then backwards, each from the first again. */
    sched_window_open(&w, &x);
    w.most = 1;
    differ = 0;
    for (uint64_t i = 0; i < FRAMES; i++) {
        struct wakeup_view v;
        frame_wakeups(rec, &w, &frames[i], &v);
        differ += !same(&v, &forward[i]);
    }
    size_t small_room = w.room;
    for (uint64_t i = FRAMES - 1; i >= FRAMES - 300; i -= 7) {
        struct wakeup_view v;
        frame_wakeups(rec, &w, &frames[i], &v);
        differ += !same(&v, &forward[i]);
    }
    sched_window_close(&w);
    EXPECT(differ == 0, "%u frames read through a window of 1 event differ", differ);
    EXPECT(small_room <= 64, "a window of 1 event grew to %zu", small_room);

    /* Two windows of one index at once (a pass inside another's), each its own. */
    struct sched_window a, b;
    sched_window_open(&a, &x);
    sched_window_open(&b, &x);
    differ = 0;
    for (uint64_t i = 0; i < FRAMES / 2; i++) {
        struct wakeup_view va, vb;
        frame_wakeups(rec, &a, &frames[i], &va);
        frame_wakeups(rec, &b, &frames[FRAMES / 2 + i], &vb);
        differ += !same(&va, &forward[i]) + !same(&vb, &forward[FRAMES / 2 + i]);
    }
    sched_window_close(&a);
    sched_window_close(&b);
    EXPECT(differ == 0, "%u frames read through two windows at once differ", differ);

    sched_index_free(&x);
    free(forward);
    free(frames);
    recording_free(rec);
    return check_failures ? 1 : 0;
}
