#include "wakeups.h"

#include <stdlib.h>
#include <string.h>

#include "work.h"

static int sched_by_time(const void *a, const void *b)
{
    const struct sched_event *x = *(const struct sched_event *const *)a;
    const struct sched_event *y = *(const struct sched_event *const *)b;
    return x->ticks < y->ticks ? -1 : x->ticks > y->ticks;
}

static int first_by_tid(const void *a, const void *b)
{
    const struct sched_first *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->ticks < y->ticks ? -1 : x->ticks > y->ticks;
}

void sched_index_build(const struct recording *rec, struct sched_index *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->events = rec->kernel.sched_count
                      ? malloc(rec->kernel.sched_count * sizeof(*ret->events)) : NULL;
    ret->marks = rec->kernel.sched_marks
                     ? malloc(rec->kernel.sched_marks * sizeof(*ret->marks)) : NULL;
    ret->firsts = rec->kernel.sched_count
                      ? malloc(rec->kernel.sched_count * sizeof(*ret->firsts)) : NULL;
    if (!ret->events || !ret->firsts || (rec->kernel.sched_marks && !ret->marks)) {
        sched_index_free(ret);
        return;
    }
    work_visited(rec->kernel.sched_count);
    for (uint64_t i = 0; i < rec->kernel.sched_count; i++) {
        const struct sched_event *e = &rec->kernel.sched_events[i];
        if (e->kind == SCHED_EVENT_PAUSED || e->kind == SCHED_EVENT_RESUMED) {
            ret->marks[ret->mark_count++] = e;
        } else {
            ret->firsts[ret->count] = (struct sched_first){ e->tid, e->ticks };
            ret->events[ret->count++] = e;
        }
    }
    qsort(ret->events, ret->count, sizeof(*ret->events), sched_by_time);
    if (ret->mark_count)
        qsort(ret->marks, ret->mark_count, sizeof(*ret->marks), sched_by_time);
    /* Each thread's earliest event, the first of its run once sorted by thread and time. */
    qsort(ret->firsts, ret->count, sizeof(*ret->firsts), first_by_tid);
    for (size_t k = 0; k < ret->count; k++)
        if (!ret->first_count || ret->firsts[ret->first_count - 1].tid != ret->firsts[k].tid)
            ret->firsts[ret->first_count++] = ret->firsts[k];
}

void sched_index_free(struct sched_index *x)
{
    free(x->events);
    free(x->marks);
    free(x->firsts);
    memset(x, 0, sizeof(*x));
}

/* Whether the events were paused at any time in [from, to]: a mark inside it (turned off or
 * on there: part of it unknown), or the last mark before it a pause. */
static bool sched_paused_within(const struct sched_index *x, uint64_t from, uint64_t to)
{
    work_visited(1);
    size_t lo = 0, hi = x->mark_count; /* the first mark at or after from */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->marks[mid]->ticks < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < x->mark_count && x->marks[lo]->ticks <= to)
        return true;
    return lo > 0 && x->marks[lo - 1]->kind == SCHED_EVENT_PAUSED;
}

/* Whether thread tid was traced by ticks: an event of it at or before then. */
static bool sched_traced_by(const struct sched_index *x, int tid, uint64_t ticks)
{
    work_visited(1);
    size_t lo = 0, hi = x->first_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->firsts[mid].tid < tid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < x->first_count && x->firsts[lo].tid == tid && x->firsts[lo].ticks <= ticks;
}

void frame_wakeups(const struct recording *rec, const struct sched_index *x,
                   const struct fscope_frame *f, struct wakeup_view *ret)
{
    memset(ret, 0, sizeof(*ret));
    if (!x->count || !f->kernel_valid || f->end_ticks <= f->start_ticks ||
        sched_paused_within(x, f->start_ticks, f->end_ticks))
        return;
    int tid = f->kernel_tid;
    /* Known: the thread was traced around this frame (an event of it before its end). */
    ret->known = sched_traced_by(x, tid, f->end_ticks);
    if (!ret->known)
        return;
    work_visited(1);
    size_t a = 0, b = x->count;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (x->events[m]->ticks < f->start_ticks)
            a = m + 1;
        else
            b = m;
    }
    struct { int tid; char comm[16]; int64_t ns; } ran[8];
    unsigned ran_count = 0;
    for (size_t k = a; k < x->count && x->events[k]->ticks < f->end_ticks; k++) {
        const struct sched_event *out = x->events[k];
        work_visited(1);
        if (out->tid != tid || out->kind != SCHED_EVENT_OUT)
            continue;
        /* Until it ran again (or was woken, for a sleep), within the frame. */
        uint64_t until = f->end_ticks;
        const struct sched_event *waker = NULL;
        for (size_t j = k + 1; j < x->count && x->events[j]->ticks < f->end_ticks; j++) {
            const struct sched_event *e = x->events[j];
            work_visited(1);
            if (e->tid != tid)
                continue;
            if (e->kind == SCHED_EVENT_WOKEN && out->state != SCHED_OUT_RUNNABLE) {
                waker = e;
                until = e->ticks;
                break;
            }
            if (e->kind == SCHED_EVENT_IN || e->kind == SCHED_EVENT_OUT) {
                until = e->ticks;
                break;
            }
        }
        int64_t ns = ticks_ns(rec, until - out->ticks);
        if (out->state == SCHED_OUT_RUNNABLE) {
            unsigned c = 0;
            while (c < ran_count && ran[c].tid != out->other_tid)
                c++;
            if (c == ran_count && ran_count < 8) {
                ran[c].tid = out->other_tid;
                memcpy(ran[c].comm, out->other_comm, sizeof(ran[c].comm));
                ran[c].ns = 0;
                ran_count++;
            }
            if (c < ran_count)
                ran[c].ns += ns;
        } else if (out->state == SCHED_OUT_DISK) {
            ret->io_wait_ns += ns;
        }
        if (out->state != SCHED_OUT_RUNNABLE && waker && ns > ret->slept_ns) {
            ret->slept_ns = ns;
            ret->waker_tid = waker->other_tid;
            memcpy(ret->waker_comm, waker->other_comm, sizeof(ret->waker_comm));
        }
    }
    for (unsigned c = 0; c < ran_count; c++)
        if (ran[c].ns > ret->ran_ns) {
            ret->ran_ns = ran[c].ns;
            ret->ran_tid = ran[c].tid;
            memcpy(ret->ran_comm, ran[c].comm, sizeof(ret->ran_comm));
        }
}
