#include "wakeups.h"

#include <stdlib.h>
#include <string.h>

#include "work.h"

static int span_by_start(const void *a, const void *b)
{
    const struct sched_span *x = a, *y = b;
    return x->from < y->from ? -1 : x->from > y->from;
}

static int span_by_thread(const void *a, const void *b)
{
    const struct sched_span *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->from < y->from ? -1 : x->from > y->from;
}

/* Appends a span to *spans (growing it); false: out of memory. */
static bool span_add(struct sched_span **spans, size_t *count, size_t *cap, int tid,
                     uint64_t from)
{
    if (*count == *cap) {
        size_t grown = *cap ? 2 * *cap : 16;
        struct sched_span *more = realloc(*spans, grown * sizeof(**spans));
        if (!more)
            return false;
        *spans = more;
        *cap = grown;
    }
    (*spans)[(*count)++] = (struct sched_span){ .tid = tid, .from = from, .to = UINT64_MAX };
    return true;
}

/* Each thread's stretch in a recording without FOLLOWED marks: from its first event. */
static bool legacy_spans(struct sched_index *x, size_t *followed_cap)
{
    struct sorter_cursor c;
    if (!x->count || !sorter_cursor_open(&c, x->events))
        return true;
    bool ok = true;
    for (const struct sched_event *e; ok && (e = sorter_next(&c));) {
        bool seen = false;
        work_visited(1);
        for (size_t j = 0; j < x->followed_count && !seen; j++)
            seen = x->followed[j].tid == e->tid;
        if (!seen)
            ok = span_add(&x->followed, &x->followed_count, followed_cap, e->tid, e->ticks);
    }
    sorter_cursor_close(&c);
    return ok;
}

/* The stretches each thread was followed and the events paused, from the marks (by time).
 * A recording without FOLLOWED marks followed one thread from its first event on, and kept no
 * mark of it: each thread's stretch then starts at its first event (legacy). */
static bool spans_build(struct sched_index *x, const struct sched_event *marks,
                        size_t mark_count)
{
    size_t followed_cap = 0, paused_cap = 0, unwatched_cap = 0;
    bool paused = false;
    for (size_t k = 0; k < mark_count; k++) {
        const struct sched_event *m = &marks[k];
        if (m->kind == SCHED_EVENT_PAUSED && !paused) {
            if (!span_add(&x->paused, &x->paused_count, &paused_cap, 0, m->ticks))
                return false;
            paused = true;
        } else if (m->kind == SCHED_EVENT_RESUMED && paused) {
            x->paused[x->paused_count - 1].to = m->ticks;
            paused = false;
        } else if (m->kind == SCHED_EVENT_FOLLOWED) {
            x->legacy = false;
            if (!span_add(&x->followed, &x->followed_count, &followed_cap, m->tid, m->ticks))
                return false;
        } else if (m->kind == SCHED_EVENT_UNFOLLOWED) {
            for (size_t j = x->followed_count; j-- > 0;)
                if (x->followed[j].tid == m->tid) {
                    if (x->followed[j].to == UINT64_MAX)
                        x->followed[j].to = m->ticks;
                    break;
                }
        } else if (m->kind == SCHED_EVENT_CPU_UNWATCHED) {
            bool open = false; /* the CPU's stretch already open: one mark stands */
            for (size_t j = 0; j < x->unwatched_count && !open; j++)
                open = x->unwatched[j].tid == m->tid && x->unwatched[j].to == UINT64_MAX;
            if (!open && !span_add(&x->unwatched, &x->unwatched_count, &unwatched_cap, m->tid,
                                   m->ticks))
                return false;
        } else if (m->kind == SCHED_EVENT_CPU_WATCHED) {
            for (size_t j = 0; j < x->unwatched_count; j++)
                if (x->unwatched[j].tid == m->tid && x->unwatched[j].to == UINT64_MAX)
                    x->unwatched[j].to = m->ticks;
        }
    }
    /* Every CPU's stretches as one list apart from each other, for spans_meet. */
    if (x->unwatched_count) {
        qsort(x->unwatched, x->unwatched_count, sizeof(*x->unwatched), span_by_start);
        size_t merged = 0;
        for (size_t j = 0; j < x->unwatched_count; j++) {
            struct sched_span *last = merged ? &x->unwatched[merged - 1] : NULL;
            if (last && x->unwatched[j].from <= last->to) {
                if (x->unwatched[j].to > last->to)
                    last->to = x->unwatched[j].to;
            } else {
                x->unwatched[merged++] = x->unwatched[j];
            }
        }
        x->unwatched_count = merged;
    }
    if (x->legacy && !legacy_spans(x, &followed_cap))
        return false;
    if (x->followed_count)
        qsort(x->followed, x->followed_count, sizeof(*x->followed), span_by_thread);
    for (size_t j = 0; j < x->followed_count; j++)
        x->threads += j == 0 || x->followed[j].tid != x->followed[j - 1].tid;
    return true;
}

/* The marks by time, ties as recorded. */
static int mark_by_time(const void *a, const void *b)
{
    const struct sched_event *x = a, *y = b;
    if (x->ticks != y->ticks)
        return x->ticks < y->ticks ? -1 : 1;
    return sched_seq(x) < sched_seq(y) ? -1 : sched_seq(x) > sched_seq(y);
}

void sched_index_build(const struct recording *rec, struct sched_index *ret)
{
    memset(ret, 0, sizeof(*ret));
    ret->legacy = true;
    const struct recording_kernel *k = &rec->kernel;
    ret->events = &k->sched_events;
    ret->count = sorter_count(&k->sched_events);
    size_t marks = k->sched_mark_list ? k->sched_marks : 0;
    struct sched_event *mark = marks ? malloc(marks * sizeof(*mark)) : NULL;
    if (marks && !mark) {
        sched_index_free(ret);
        return;
    }
    work_visited(marks);
    if (marks) {
        memcpy(mark, k->sched_mark_list, marks * sizeof(*mark));
        qsort(mark, marks, sizeof(*mark), mark_by_time);
    }
    bool built = spans_build(ret, mark, marks);
    free(mark);
    if (!built)
        sched_index_free(ret);
}

void sched_index_free(struct sched_index *x)
{
    free(x->followed);
    free(x->paused);
    free(x->unwatched);
    memset(x, 0, sizeof(*x));
}

/* Whether any of spans (by time, apart) meets [from, to]. */
static bool spans_meet(const struct sched_span *spans, size_t count, uint64_t from, uint64_t to)
{
    work_visited(1);
    size_t a = 0, b = count;
    while (a < b) { /* the first span that ends at or after from */
        size_t m = a + (b - a) / 2;
        if (spans[m].to < from)
            a = m + 1;
        else
            b = m;
    }
    return a < count && spans[a].from <= to;
}

/* Whether tid was followed over all of [from, to] (legacy: from its first event, which may
 * come inside the frame, as those versions read it). */
static bool followed_over(const struct sched_index *x, int tid, uint64_t from, uint64_t to)
{
    uint64_t since = x->legacy ? to : from;
    work_visited(1);
    size_t a = 0, b = x->followed_count;
    while (a < b) { /* the first span past (tid, since) */
        size_t m = a + (b - a) / 2;
        const struct sched_span *s = &x->followed[m];
        if (s->tid < tid || (s->tid == tid && s->from <= since))
            a = m + 1;
        else
            b = m;
    }
    return a > 0 && x->followed[a - 1].tid == tid && x->followed[a - 1].to >= to;
}

enum wakeup_coverage frame_wakeup_coverage(const struct sched_index *x,
                                           const struct fscope_frame *f)
{
    if (!f->kernel_valid || f->end_ticks <= f->start_ticks ||
        !followed_over(x, f->kernel_tid, f->start_ticks, f->end_ticks))
        return WAKEUP_NOT_FOLLOWED;
    if (spans_meet(x->paused, x->paused_count, f->start_ticks, f->end_ticks))
        return WAKEUP_PAUSED;
    if (spans_meet(x->unwatched, x->unwatched_count, f->start_ticks, f->end_ticks))
        return WAKEUP_UNWATCHED;
    return WAKEUP_KNOWN;
}

static bool app_thread(const struct recording *rec, int tid)
{
    if (tid == rec->pid)
        return true;
    for (unsigned i = 0; i < rec->kernel.thread_count; i++)
        if (rec->kernel.threads[i].tid == tid)
            return true;
    return false;
}

/* A frame's sleeps by one kind of waker: the first four wakers apart, more added to the
 * fourth (the most of it is what is named). */
struct waker_sum {
    int tid;
    char comm[16];
    int64_t ns;
};

static void waker_add(struct waker_sum by[][4], enum waker_kind kind,
                      const struct sched_event *waker, int64_t ns)
{
    unsigned c = 0;
    while (c < 3 && by[kind][c].ns && (by[kind][c].tid != waker->other_tid ||
                                       memcmp(by[kind][c].comm, waker->other_comm, 16)))
        c++;
    if (!by[kind][c].ns) {
        by[kind][c].tid = waker->other_tid;
        memcpy(by[kind][c].comm, waker->other_comm, sizeof(by[kind][c].comm));
    }
    by[kind][c].ns += ns;
}

void sched_window_open(struct sched_window *w, const struct sched_index *x)
{
    memset(w, 0, sizeof(*w));
    w->x = x;
    w->most = SCHED_WINDOW_MOST;
}

void sched_window_close(struct sched_window *w)
{
    if (w->open)
        sorter_cursor_close(&w->cursor);
    free(w->events);
    memset(w, 0, sizeof(*w));
}

/* One frame's chain as its closing thread's events come, in time order: each time it was
 * switched out (pending) lasts until its next event that ends it, within the frame. */
struct chain {
    const struct recording *rec;
    int tid;
    uint64_t end;
    bool pending;
    struct sched_event out; /* its last switch out, not yet ended */
    struct { int tid; char comm[16]; int64_t ns; } ran[8];
    unsigned ran_count;
    struct waker_sum by[WAKER_KIND_COUNT][4];
    struct wakeup_view *ret;
};

/* The pending switch out ended at until: woken by waker (NULL: it ran again, or the frame
 * ended first). */
static void chain_settle(struct chain *c, uint64_t until, const struct sched_event *waker)
{
    const struct sched_event *out = &c->out;
    struct wakeup_view *ret = c->ret;
    c->pending = false;
    int64_t ns = ticks_ns(c->rec, until - out->ticks);
    if (out->state == SCHED_OUT_RUNNABLE) {
        unsigned k = 0;
        while (k < c->ran_count && c->ran[k].tid != out->other_tid)
            k++;
        if (k == c->ran_count && c->ran_count < 8) {
            c->ran[k].tid = out->other_tid;
            memcpy(c->ran[k].comm, out->other_comm, sizeof(c->ran[k].comm));
            c->ran[k].ns = 0;
            c->ran_count++;
        }
        if (k < c->ran_count)
            c->ran[k].ns += ns;
    } else if (out->state == SCHED_OUT_DISK) {
        ret->io_wait_ns += ns;
    }
    if (out->state != SCHED_OUT_RUNNABLE && waker) {
        enum waker_kind kind = !waker->other_tid ? WAKER_KERNEL
                               : app_thread(c->rec, waker->other_tid) ? WAKER_APP_THREAD
                                                                      : WAKER_OTHER_PROCESS;
        waker_add(c->by, kind, waker, ns);
        if (ns > ret->slept_ns) {
            ret->slept_ns = ns;
            ret->waker_tid = waker->other_tid;
            memcpy(ret->waker_comm, waker->other_comm, sizeof(ret->waker_comm));
        }
    }
}

/* An event of the frame (before its end, in time order). A switch out ends at the thread's
 * next switch in or out, or, from a sleep, at its wake-up. */
static void chain_event(struct chain *c, const struct sched_event *e)
{
    work_visited(1);
    if (e->tid != c->tid)
        return;
    if (c->pending) {
        if (e->kind == SCHED_EVENT_WOKEN && c->out.state != SCHED_OUT_RUNNABLE)
            chain_settle(c, e->ticks, e);
        else if (e->kind == SCHED_EVENT_IN || e->kind == SCHED_EVENT_OUT)
            chain_settle(c, e->ticks, NULL);
    }
    if (e->kind == SCHED_EVENT_OUT) {
        c->out = *e;
        c->pending = true;
    }
}

static void chain_finish(struct chain *c)
{
    struct wakeup_view *ret = c->ret;
    if (c->pending)
        chain_settle(c, c->end, NULL);
    for (unsigned kind = 0; kind < WAKER_KIND_COUNT; kind++) {
        ret->slept_by_ns[kind] = 0;
        for (unsigned k = 0; k < 4; k++) {
            ret->slept_by_ns[kind] += c->by[kind][k].ns;
            if (c->by[kind][k].ns > c->by[kind][0].ns)
                c->by[kind][0] = c->by[kind][k];
        }
        ret->by_tid[kind] = c->by[kind][0].tid;
        memcpy(ret->by_comm[kind], c->by[kind][0].comm, sizeof(ret->by_comm[kind]));
    }
    for (unsigned k = 0; k < c->ran_count; k++)
        if (c->ran[k].ns > ret->ran_ns) {
            ret->ran_ns = c->ran[k].ns;
            ret->ran_tid = c->ran[k].tid;
            memcpy(ret->ran_comm, c->ran[k].comm, sizeof(ret->ran_comm));
        }
}

/* Keeps e in the window; false when memory ran out. */
static bool window_keep(struct sched_window *w, const struct sched_event *e)
{
    if (w->first && w->count == w->room) {
        memmove(w->events, w->events + w->first, (w->count - w->first) * sizeof(*w->events));
        w->count -= w->first;
        w->first = 0;
    }
    if (w->count == w->room) {
        size_t room = w->room ? 2 * w->room : 64;
        struct sched_event *more = realloc(w->events, room * sizeof(*more));
        if (!more)
            return false;
        w->events = more;
        w->room = room;
    }
    w->events[w->count++] = *e;
    return true;
}

/* Every event from..to through chain (c NULL: none wanted), the window kept holding those
 * from from on that it read, up to the first at or past to, and at most w->most: a frame
 * with more (a loading screen's) is read through without keeping them, and the window then
 * holds nothing before to. False where they could not be read (memory). */
static bool window_read(struct sched_window *w, uint64_t from, uint64_t to, struct chain *c)
{
    if (from < w->from || !w->open) { /* from the first event again */
        if (w->open)
            sorter_cursor_close(&w->cursor);
        w->open = sorter_cursor_open(&w->cursor, w->x->events);
        w->ended = !w->open;
        w->first = w->count = 0;
        if (!w->open)
            return false;
    }
    w->from = from;
    while (w->first < w->count && w->events[w->first].ticks < from)
        w->first++;
    for (size_t k = w->first; k < w->count && w->events[k].ticks < to; k++)
        if (c)
            chain_event(c, &w->events[k]);
    bool through = false; /* events of the frame read past and not kept */
    while (!w->ended && (w->first == w->count || w->events[w->count - 1].ticks < to)) {
        const struct sched_event *e = sorter_next(&w->cursor);
        work_visited(1);
        if (!e) {
            w->ended = true;
            break;
        }
        if (e->ticks < from)
            continue;
        if (e->ticks < to && c)
            chain_event(c, e);
        if (w->count - w->first >= w->most) {
            through = true; /* those kept are all before to, read already: let them go */
            w->first = w->count = 0;
        }
        if (through && e->ticks < to)
            continue;
        if (!window_keep(w, e))
            return false;
    }
    if (through)
        w->from = to; /* a frame that starts before it reads them again from the first */
    return !w->cursor.failed;
}

void frame_wakeups(const struct recording *rec, struct sched_window *w,
                   const struct fscope_frame *f, struct wakeup_view *ret)
{
    memset(ret, 0, sizeof(*ret));
    if (frame_wakeup_coverage(w->x, f) != WAKEUP_KNOWN)
        return;
    struct chain c = { .rec = rec, .tid = f->kernel_tid, .end = f->end_ticks, .ret = ret };
    if (!window_read(w, f->start_ticks, f->end_ticks, &c)) {
        memset(ret, 0, sizeof(*ret));
        return;
    }
    ret->known = true;
    chain_finish(&c);
}
