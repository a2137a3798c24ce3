#include "cap.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <x86intrin.h>

#include "clock.h"
#include "recording.h"
#include "registry.h"

/* The recording's directory has room for this many. */
#define MAX_CAPS 64
/* The spin covers the sleep's lateness: the largest of the last 32 wake-ups plus 20 us, kept
 * within [100 us, 2 ms]. Measured on the 2-core CI VM with the timer slack at 1 ns, a 1 ms
 * absolute sleep wakes late by p50 25 us, p99 109 us, p99.9 638 us (slack 50 us: p50 68 us,
 * p99 188 us); a fixed spin would either burn the CPU or miss the rare late wake-up. */
#define SPIN_MIN_NS 100000
#define SPIN_MAX_NS 2000000
#define SPIN_PAD_NS 20000

static _Atomic unsigned cap_count;
static const struct fscope_loc loc_cap = { "cap", __FILE__, __LINE__, 0, 0 };

FSCOPE_EXPORT struct fscope_cap *fscope_cap_create(const char *label)
{
    if (atomic_fetch_add(&cap_count, 1) >= MAX_CAPS)
        return NULL;
    struct fscope_cap *cap = calloc(1, sizeof(*cap));
    uint64_t offset;
    struct rec_cap *rec = cap ? recording_object_new(sizeof(*rec), &offset) : NULL;
    if (!rec) {
        free(cap);
        return NULL;
    }
    cap->rec = rec;
    snprintf(rec->label, sizeof(rec->label), "%s", label);
    chunked_init(&rec->events, sizeof(struct cap_event));
    recording_publish(REC_OBJ_CAP, offset, sizeof(*rec));
    return cap;
}

FSCOPE_EXPORT int fscope_cap_target_hz(struct fscope_cap *cap, double hz)
{
    if (!cap || !isfinite(hz) || (hz != 0 && (hz < CAP_MIN_HZ || hz > CAP_MAX_HZ)))
        return -EINVAL;
    atomic_store(&cap->target_ns, hz == 0 ? 0 : (uint64_t)llround(1e9 / hz));
    return 0;
}

FSCOPE_EXPORT void fscope_cap_phase_lock(struct fscope_cap *cap, uint64_t vblank_ticks)
{
    if (cap)
        atomic_store_explicit(&cap->vblank_ticks, vblank_ticks, memory_order_relaxed);
}

/* Nudges the deadline toward the middle of a refresh interval of the locked output. */
static void phase_correct(struct fscope_cap *cap, uint64_t slice)
{
    uint64_t vblank = atomic_load_explicit(&cap->vblank_ticks, memory_order_relaxed);
    if (!vblank || !slice)
        return;
    int64_t since = (int64_t)(cap->deadline_ticks - vblank);
    int64_t offset = since % (int64_t)slice;
    if (offset < 0)
        offset += (int64_t)slice;
    int64_t error = offset - (int64_t)slice / 2;
    int64_t limit = (int64_t)slice / 8;
    int64_t correction = error > limit ? limit : error < -limit ? -limit : error;
    cap->deadline_ticks -= (uint64_t)correction;
}

static uint64_t spin_margin_ns(const struct fscope_cap *cap)
{
    uint64_t worst = 0;
    for (unsigned i = 0; i < 32; i++)
        if (cap->oversleep_ns[i] > worst)
            worst = cap->oversleep_ns[i];
    worst += SPIN_PAD_NS;
    return worst < SPIN_MIN_NS ? SPIN_MIN_NS : worst > SPIN_MAX_NS ? SPIN_MAX_NS : worst;
}

/* Sleeps until deadline minus the spin margin, then spins to the deadline. */
static void wait_until(struct fscope_cap *cap, uint64_t deadline)
{
    uint64_t margin = spin_margin_ns(cap);
    int64_t wake_ns = fscope_ticks_to_mono_ns(deadline) - (int64_t)margin;
    int64_t now_ns = fscope_ticks_to_mono_ns(fscope_now());
    if (wake_ns > now_ns) {
        int old_slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
        prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0);
        struct timespec ts = { .tv_sec = wake_ns / 1000000000, .tv_nsec = wake_ns % 1000000000 };
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        if (old_slack > 0)
            prctl(PR_SET_TIMERSLACK, (unsigned long)old_slack, 0, 0, 0);
        int64_t late = fscope_ticks_to_mono_ns(fscope_now()) - wake_ns;
        cap->oversleep_ns[cap->oversleep_next++ % 32] = late > 0 ? (uint64_t)late : 0;
    }
    while (fscope_now() < deadline)
        _mm_pause();
}

FSCOPE_EXPORT void fscope_cap_pace(struct fscope_cap *cap)
{
    if (!cap)
        return;
    uint64_t target = atomic_load_explicit(&cap->target_ns, memory_order_relaxed);
    if (!target) {
        cap->deadline_ticks = 0;
        cap->slice_ns_in_use = 0;
        return;
    }
    uint64_t start = fscope_block_begin(&loc_cap);
    uint64_t slice = fscope_ns_to_ticks((double)target);
    uint8_t flags = CAP_FLAG_CAPPED;
    if (!cap->deadline_ticks || target != cap->slice_ns_in_use) {
        /* First capped frame, or a new rate: the next deadline is one slice from the last
         * release (or from now). */
        uint64_t base = cap->last_release_ticks && cap->slice_ns_in_use ? cap->last_release_ticks
                                                                         : start;
        cap->deadline_ticks = base + slice;
        cap->slice_ns_in_use = target;
    }
    phase_correct(cap, slice);
    if (start > cap->deadline_ticks + CAP_RESYNC_SLICES * slice) {
        /* A stall (load screen): catching up would run a burst of uncapped frames. */
        cap->deadline_ticks = start;
        cap->resyncs++;
        flags |= CAP_FLAG_RESYNC;
    } else if (start >= cap->deadline_ticks) {
        cap->missed++;
        flags |= CAP_FLAG_MISSED;
    } else {
        wait_until(cap, cap->deadline_ticks);
    }
    uint64_t release = fscope_now();
    fscope_block_end(FSCOPE_BLOCK_CAP, start);
    fscope_thread_add_frame_flags(flags);
    /* Accumulate: the next deadline is one slice after this one, not after now. */
    cap->deadline_ticks += slice;
    cap->last_release_ticks = release;
    struct cap_event *e = chunked_next(&cap->rec->events);
    if (e) {
        e->release_ticks = release;
        e->target_ns = (uint32_t)target;
        e->flags = flags;
        chunked_publish(&cap->rec->events);
    }
}

/* The public API's cap: one per process, for engines that call fscope_cap_wait(). */
static struct fscope_cap *api_cap;
static pthread_once_t api_cap_once = PTHREAD_ONCE_INIT;

static void api_cap_init(void)
{
    api_cap = fscope_cap_create("fscope_cap_wait");
}

FSCOPE_EXPORT int fscope_cap_set_hz(double hz)
{
    pthread_once(&api_cap_once, api_cap_init);
    return api_cap ? fscope_cap_target_hz(api_cap, hz) : -ENOMEM;
}

FSCOPE_EXPORT void fscope_cap_wait(void)
{
    pthread_once(&api_cap_once, api_cap_init);
    fscope_cap_pace(api_cap);
}
