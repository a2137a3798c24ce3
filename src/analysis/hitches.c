#include "hitches.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "emit.h"
#include "frames.h"
#include "gpu_zones.h"
#include "held.h"
#include "values.h"
#include "work.h"

static const char *const cause_names[HITCH_CAUSE_COUNT] = {
    "cpu_work", "starved", "asleep", "cpu", "gpu", "display", "present", "sync", "cap",
    "unexplained",
};

static const char *const cause_words[HITCH_CAUSE_COUNT] = {
    "CPU work",
    "starved (runnable, no CPU: other work ran)",
    "asleep outside Vulkan (a lock, I/O, a page fault, another thread)",
    "the CPU part (not split: no kernel view of the frame)",
    "waiting for the GPU",
    "waiting for the display",
    "in acquire/present with the GPU idle (compositor or driver)",
    "fence/semaphore waits with the GPU idle",
    "the frame cap",
    "unexplained",
};

const char *hitch_cause_name(enum hitch_cause c)
{
    return c < HITCH_CAUSE_COUNT ? cause_names[c] : "?";
}

const char *hitch_cause_words(enum hitch_cause c)
{
    return c < HITCH_CAUSE_COUNT ? cause_words[c] : "?";
}

/* A frame's parts, a partition of it (struct frame_budget_ns says how each is measured). */
static void frame_parts(const struct frame_budget_ns *b, int64_t p[HITCH_CAUSE_COUNT])
{
    memset(p, 0, HITCH_CAUSE_COUNT * sizeof(*p));
    if (b->kernel) {
        p[HITCH_CPU_WORK] = b->cpu_busy;
        p[HITCH_STARVED] = b->cpu_starved;
        p[HITCH_ASLEEP] = b->cpu_blocked;
    } else {
        p[HITCH_CPU] = b->cpu;
    }
    for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++)
        if (k != FSCOPE_BLOCK_CAP)
            p[HITCH_GPU] += b->block_gpu[k];
    p[HITCH_DISPLAY] = b->display_wait;
    p[HITCH_PRESENT] = b->present_overhead;
    /* Without the frame's GPU time (not timed, or sampled out) a wait is a wait on the GPU,
     * as the verdict takes it: it cannot be split into GPU work and synchronisation. */
    p[b->gpu_timed ? HITCH_SYNC : HITCH_GPU] += b->gpu_idle_in_waits;
    p[HITCH_CAP] = b->block[FSCOPE_BLOCK_CAP];
}

/* The neighbours of frame i among n: up to HITCH_WINDOW, centred where the log allows. */
static void window_of(uint64_t i, uint64_t n, uint64_t *ret_lo, uint64_t *ret_hi)
{
    int64_t lo = (int64_t)i - HITCH_WINDOW / 2, hi = (int64_t)i + HITCH_WINDOW / 2;
    if (lo < 0) {
        hi -= lo;
        lo = 0;
    }
    if (hi >= (int64_t)n) {
        lo -= hi - (int64_t)n + 1;
        hi = (int64_t)n - 1;
    }
    *ret_lo = lo < 0 ? 0 : (uint64_t)lo;
    *ret_hi = (uint64_t)hi;
}

/* What the hitch pass keeps of a frame while a window may hold it: the last HITCH_RING frames,
 * frame i at [i % HITCH_RING] (a window spans HITCH_WINDOW + 1 frames). */
#define HITCH_RING 64
_Static_assert(HITCH_RING > 2 * HITCH_WINDOW + 1, "the ring holds every frame a window does");
/* A judged frame looks back 3 frames more than its window for late ones. */
_Static_assert(HITCH_RING > HITCH_WINDOW + 3, "the ring holds the frames before a window");
struct ring_frame {
    int64_t time;
    uint64_t start_ticks, end_ticks;
    bool timed; /* its GPU time is known */
    int late;   /* refreshes it was shown late, -1 not judged (late_refreshes) */
    int64_t parts[HITCH_CAUSE_COUNT];
};

/* The frames' times of a window, kept sorted as it slides forward (window_of's bounds only
 * grow): one insertion and one removal a frame, where sorting each frame's neighbours again
 * was a tenth of the analysis. */
struct sorted_window {
    int64_t v[HITCH_WINDOW + 1];
    unsigned count;
    uint64_t lo, end; /* the frames [lo, end) it holds */
};

/* Where x is, or would go, among the window's values. */
static unsigned window_find(const struct sorted_window *w, int64_t x)
{
    unsigned lo = 0, hi = w->count;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (w->v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Moves the window to the frames [lo, hi] of the ring. */
static void window_slide(struct sorted_window *w, const struct ring_frame *ring, uint64_t lo,
                         uint64_t hi)
{
    for (; w->lo < lo; w->lo++) {
        unsigned at = window_find(w, ring[w->lo % HITCH_RING].time);
        memmove(&w->v[at], &w->v[at + 1], (w->count - at - 1) * sizeof(w->v[0]));
        w->count--;
    }
    for (; w->end <= hi; w->end++) {
        int64_t time = ring[w->end % HITCH_RING].time;
        unsigned at = window_find(w, time);
        memmove(&w->v[at + 1], &w->v[at], (w->count - at) * sizeof(w->v[0]));
        w->v[at] = time;
        w->count++;
    }
}

/* The median of the window's values less one of them equal to x (the frame itself): what
 * stats_median_i64 gives for its neighbours. */
static int64_t window_median_without(const struct sorted_window *w, int64_t x)
{
    unsigned skip = window_find(w, x), m = w->count - 1;
    if (!m)
        return 0;
#define AT(k) w->v[(k) < skip ? (k) : (k) + 1]
    int64_t median = m % 2 ? AT(m / 2) : AT(m / 2 - 1) + (AT(m / 2) - AT(m / 2 - 1)) / 2;
#undef AT
    return median;
}

#define ZONE_GROWTH_NAMES 64

/* Which GPU zone grew in hitch h's frame against the same zone in its GPU-timed neighbours
 * lo..hi (in the ring: whether each one's GPU time is known). A zone's value in a frame is the time of
 * its spans that ended inside the frame. */
static void zone_growth(const struct recording *rec, const struct ring_frame *ring, uint64_t lo, uint64_t hi,
                        struct zone_window *zones, uint32_t device_id, struct hitch *h)
{
    h->zone = -1;
    if (!rec->gpu_zone_count || !ring[h->frame % HITCH_RING].timed)
        return;
    uint64_t n = hi - lo + 1;
    uint16_t names[ZONE_GROWTH_NAMES];
    unsigned name_count = 0;
    int64_t *sums = calloc(ZONE_GROWTH_NAMES * n, sizeof(*sums));
    int64_t *scratch = malloc(n * sizeof(*scratch));
    if (!sums || !scratch)
        goto out;
    uint64_t from = ring[lo % HITCH_RING].start_ticks, to = ring[hi % HITCH_RING].end_ticks;
    size_t count;
    const struct gpu_zone_span *ended = zone_window_ended(zones, device_id, from, to, &count);
    work_visited(1);
    uint64_t j = lo;
    for (size_t k = 0; k < count; k++) {
        const struct gpu_zone_span *s = &ended[k];
        work_visited(1);
        while (j < hi && ring[j % HITCH_RING].end_ticks < s->end)
            j++;
        const struct ring_frame *fj = &ring[j % HITCH_RING];
        if (s->end <= fj->start_ticks || s->end > fj->end_ticks)
            continue;
        unsigned c = 0;
        while (c < name_count && names[c] != s->name)
            c++;
        if (c == name_count) {
            if (name_count == ZONE_GROWTH_NAMES)
                continue;
            names[name_count++] = s->name;
        }
        double ns = recording_ns(rec, s->end - s->begin);
        sums[c * n + (j - lo)] += ns < 1e15 ? (int64_t)ns : (int64_t)1e15;
    }
    int64_t excess = h->frame_ns - h->median_ns;
    int64_t growth[ZONE_GROWTH_NAMES], median[ZONE_GROWTH_NAMES], mine[ZONE_GROWTH_NAMES];
    int best = -1;
    for (unsigned c = 0; c < name_count; c++) {
        size_t m = 0;
        for (uint64_t f = lo; f <= hi; f++)
            if (f != h->frame && ring[f % HITCH_RING].timed)
                scratch[m++] = sums[c * n + (f - lo)];
        growth[c] = 0;
        if (m < 3)
            continue;
        median[c] = stats_median_i64(scratch, m);
        mine[c] = sums[c * n + (h->frame - lo)];
        growth[c] = mine[c] - median[c];
        if (growth[c] > 0 && growth[c] * 10 >= excess && (best < 0 || growth[c] > growth[best]))
            best = (int)c;
    }
    /* Nested zones grow together: name the deepest one below it that holds nine tenths of
     * its growth. */
    for (bool moved = best >= 0; moved;) {
        moved = false;
        const char *path = rec->gpu_zone_names[names[best]];
        size_t len = strlen(path);
        for (unsigned c = 0; c < name_count && !moved; c++) {
            const char *other = rec->gpu_zone_names[names[c]];
            if (strncmp(other, path, len) == 0 && other[len] == '/' &&
                growth[c] * 10 >= growth[best] * 9) {
                best = (int)c;
                moved = true;
            }
        }
    }
    if (best >= 0) {
        h->zone = names[best];
        h->zone_ns = mine[best];
        h->zone_median_ns = median[best];
    }
out:
    free(sums);
    free(scratch);
}

/* Splits hitch h's excess over the parts that grew against their neighbours' medians. */
static void split_excess(struct hitch *h, const struct ring_frame *ring, uint64_t lo,
                         uint64_t hi, int64_t *scratch)
{
    int64_t excess = h->frame_ns - h->median_ns, grown[HITCH_CAUSE_COUNT] = { 0 }, sum = 0;
    for (unsigned c = 0; c < HITCH_UNEXPLAINED; c++) {
        size_t m = 0;
        for (uint64_t j = lo; j <= hi; j++)
            if (j != h->frame)
                scratch[m++] = ring[j % HITCH_RING].parts[c];
        int64_t d = ring[h->frame % HITCH_RING].parts[c] - (m ? stats_median_i64(scratch, m) : 0);
        grown[c] = d > 0 ? d : 0;
        sum += grown[c];
    }
    memset(h->part_ns, 0, sizeof(h->part_ns));
    if (sum * 2 < excess) {
        h->part_ns[HITCH_UNEXPLAINED] = excess;
        h->cause = HITCH_UNEXPLAINED;
        return;
    }
    int64_t given = 0;
    unsigned largest = 0;
    for (unsigned c = 0; c < HITCH_UNEXPLAINED; c++) {
        h->part_ns[c] = (int64_t)((double)excess * (double)grown[c] / (double)sum);
        given += h->part_ns[c];
        if (grown[c] > grown[largest])
            largest = c;
    }
    h->part_ns[largest] += excess - given; /* rounding: the parts sum to the excess exactly */
    h->cause = (enum hitch_cause)largest;
}

/* What the hitches of every log look up, indexed once per run: the wake-up chain's
 * stretches. */
struct hitch_indexes {
    struct sched_index sched;
};

static void hitch_indexes_build(const struct recording *rec, struct hitch_indexes *ret)
{
    memset(ret, 0, sizeof(*ret));
    sched_index_build(rec, &ret->sched);
}

static void hitch_indexes_free(struct hitch_indexes *x)
{
    sched_index_free(&x->sched);
}

/* One pass's pipelines by end (rec->pipelines): from the frame asked about on, read on as
 * frames come later; a frame that starts before the last one read them again from the
 * first. */
struct pipeline_window {
    const struct sorter *pipelines;
    struct sorter_cursor cursor;
    bool open, ended;
    uint64_t from;
    struct held held; /* struct pipeline_item: [first, count) end after from */
};

static void pipeline_window_close(struct pipeline_window *w)
{
    if (w->open)
        sorter_cursor_close(&w->cursor);
    held_free(&w->held);
    memset(w, 0, sizeof(*w));
}

/* Holds the pipelines that end after from, up to the first that ends after to; false where
 * they could not be read. */
static bool pipeline_window_reach(struct pipeline_window *w, uint64_t from, uint64_t to)
{
    if (from < w->from || !w->open) {
        if (w->open)
            sorter_cursor_close(&w->cursor);
        w->open = sorter_cursor_open(&w->cursor, w->pipelines);
        w->ended = !w->open;
        w->held.first = w->held.count = 0;
        if (!w->open)
            return false;
    }
    w->from = from;
    const struct pipeline_item *held = (const struct pipeline_item *)w->held.items;
    while (w->held.first < w->held.count && held[w->held.first].pipeline.end_ticks <= from)
        w->held.first++;
    while (!w->ended && (w->held.first == w->held.count ||
                         held[w->held.count - 1].pipeline.end_ticks <= to)) {
        const struct pipeline_item *p = sorter_next(&w->cursor);
        work_visited(1);
        if (!p) {
            w->ended = true;
            return !w->cursor.failed;
        }
        if (p->pipeline.end_ticks <= from)
            continue;
        if (!held_push(&w->held, p, sizeof(*p)))
            return false;
        held = (const struct pipeline_item *)w->held.items;
    }
    return true;
}

/* The slowest pipeline created in the frame (its create call ended in it). */
static void slowest_pipeline(const struct recording *rec, struct pipeline_window *w,
                             const struct fscope_frame *f, struct hitch *h)
{
    if (!rec->pipeline_count || !pipeline_window_reach(w, f->start_ticks, f->end_ticks))
        return;
    const struct pipeline_item *held = (const struct pipeline_item *)w->held.items;
    const struct pipeline_item *best = NULL;
    int64_t best_ns = 0;
    for (size_t i = w->held.first; i < w->held.count && held[i].pipeline.end_ticks <= f->end_ticks;
         i++) {
        const struct pipeline_created *p = &held[i].pipeline;
        work_visited(1);
        int64_t ns = (p->flags & PIPELINE_CREATED_FEEDBACK) && p->driver_ns < (uint64_t)INT64_MAX
                         ? (int64_t)p->driver_ns
                         : ticks_ns(rec, p->duration_ticks);
        if (!best || ns > best_ns || (ns == best_ns && held[i].seq < best->seq)) {
            best = &held[i];
            best_ns = ns;
        }
    }
    if (!best)
        return;
    h->slowest_ns = best_ns;
    h->slowest_cache_hit = best->pipeline.flags & PIPELINE_CREATED_CACHE_HIT;
    const char *name = recording_object_name(rec, best->pipeline.device_id, OBJECT_TYPE_PIPELINE,
                                             best->pipeline.handle);
    snprintf(h->slowest_name, sizeof(h->slowest_name), "%s", name ? name : "");
}

static void keep_worst(struct hitch_stats *s, const struct hitch *h)
{
    int64_t excess = h->frame_ns - h->median_ns;
    unsigned at = s->worst_count;
    while (at > 0 && s->worst[at - 1].frame_ns - s->worst[at - 1].median_ns < excess)
        at--;
    if (at >= HITCH_WORST)
        return;
    unsigned last = s->worst_count < HITCH_WORST ? s->worst_count : HITCH_WORST - 1;
    memmove(&s->worst[at + 1], &s->worst[at], (last - at) * sizeof(*h));
    s->worst[at] = *h;
    if (s->worst_count < HITCH_WORST)
        s->worst_count++;
}

/* PresentMon 2's animation error over the shown frames of every log: each shown frame's
 * |time between its showing and the last shown one's - time between their starts|. */
struct animation {
    struct values errors; /* ms */
    double sum;
    bool have_prev;                   /* of this log */
    uint64_t prev_presented, prev_start; /* the frame shown before */
};

static void animation_add(const struct recording *rec, struct animation *a,
                          const struct fscope_frame *f)
{
    if (f->present_state != FRAME_PRESENT_PRESENTED || !f->presented_ticks)
        return;
    if (a->have_prev && f->presented_ticks > a->prev_presented && f->start_ticks > a->prev_start) {
        double shown = recording_ns(rec, f->presented_ticks - a->prev_presented);
        double simulated = recording_ns(rec, f->start_ticks - a->prev_start);
        double err = fabs(shown - simulated) / 1e6;
        values_add(&a->errors, err);
        a->sum += err;
    }
    a->have_prev = true;
    a->prev_presented = f->presented_ticks;
    a->prev_start = f->start_ticks;
}

static void animation_end(struct animation *a, struct hitch_stats *s)
{
    uint64_t n = values_count(&a->errors);
    uint64_t ranks[2] = { stats_rank((size_t)n, 0.95), stats_rank((size_t)n, 0.99) };
    double at[2];
    if (n && values_finish(&a->errors) && values_at(&a->errors, ranks, 2, at)) {
        s->animation_samples = n;
        s->animation_error_ms[0] = a->sum / (double)n;
        s->animation_error_ms[1] = at[0];
        s->animation_error_ms[2] = at[1];
    }
    values_free(&a->errors);
}

/* One surface's hitch pass: its frames in order, each judged once the window around it is in
 * the ring. */
struct hitch_pass {
    const struct recording *rec;
    unsigned l;
    uint64_t n, origin;
    const struct hitch_indexes *x;
    struct hitch_stats *s;
    struct ring_frame ring[HITCH_RING];
    struct sorted_window window;
    struct frame_cursor *frames; /* the pass's: a frame judged is at most a window behind */
    struct zone_window zones; /* each device's GPU zones ended in a hitch's window */
    struct pipeline_window pipelines; /* those created from the last hitch's frame on */
    struct sched_window wakes; /* the threads' events from the last hitch's frame on */
    int64_t scratch[HITCH_WINDOW];
};

/* Judges frame i (its window lo..hi in the ring). False when memory ran out. */
static bool judge(struct hitch_pass *p, uint64_t i, uint64_t lo, uint64_t hi)
{
    const struct recording *rec = p->rec;
    struct hitch_stats *s = p->s;
    int64_t time = p->ring[i % HITCH_RING].time;
    window_slide(&p->window, p->ring, lo, hi);
    int64_t median = window_median_without(&p->window, time);
    s->frames_judged++;
    if ((double)time < HITCH_RATIO * (double)median ||
        (double)(time - median) < HITCH_FLOOR_MS * 1e6)
        return true;
    const struct fscope_frame *f = frame_at(p->frames, i);
    struct hitch h = {
        .log = p->l,
        .frame = i,
        .end_ticks = f->end_ticks,
        .at_s = recording_ns(rec, f->start_ticks - p->origin) / 1e9,
        .frame_ns = time,
        .median_ns = median,
        .tid = f->kernel_valid ? f->kernel_tid : 0,
    };
    h.pipelines = f->counts[FSCOPE_COUNT_PIPELINES];
    h.shaders = f->counts[FSCOPE_COUNT_SHADERS];
    h.memory_calls = f->counts[FSCOPE_COUNT_MEMORY_CALLS];
    h.pipeline_ns = ticks_ns(rec, f->counts[FSCOPE_COUNT_PIPELINE_TICKS]);
    h.shader_ns = ticks_ns(rec, f->counts[FSCOPE_COUNT_SHADER_TICKS]);
    h.memory_ns = ticks_ns(rec, f->counts[FSCOPE_COUNT_MEMORY_TICKS]);
    h.swapchain_ns = ticks_ns(rec, f->counts[FSCOPE_COUNT_SWAPCHAIN_TICKS]);
    h.submit_ns = ticks_ns(rec, f->counts[FSCOPE_COUNT_SUBMIT_TICKS]);
    h.pipelines_reported = f->counts[FSCOPE_COUNT_PIPELINES_FEEDBACK];
    h.pipeline_cache_hits = f->counts[FSCOPE_COUNT_PIPELINE_CACHE_HITS];
    h.pipeline_driver_ns = f->counts[FSCOPE_COUNT_PIPELINE_DRIVER_NS] < (uint64_t)INT64_MAX
                               ? (int64_t)f->counts[FSCOPE_COUNT_PIPELINE_DRIVER_NS]
                               : INT64_MAX;
    if (f->kernel_valid) {
        h.kernel = true;
        h.major_faults = f->kernel_major_faults;
        h.block_reads = f->kernel_block_reads;
        h.preempted = f->kernel_preempted;
    }
    split_excess(&h, p->ring, lo, hi, p->scratch);
    frame_wakeups(rec, &p->wakes, f, &h.wake);
    slowest_pipeline(rec, &p->pipelines, f, &h);
    h.late_refreshes = 0;
    for (uint64_t j = i >= 3 ? i - 3 : 0; j <= i; j++)
        if (p->ring[j % HITCH_RING].late > 0) {
            h.late_frame = j;
            h.late_refreshes = p->ring[j % HITCH_RING].late;
        }
    zone_growth(rec, p->ring, lo, hi, &p->zones, f->device_id, &h);
    if (!sorter_push(&s->hitches, &h))
        return false;
    s->count++;
    s->excess_ns += h.frame_ns - h.median_ns;
    for (unsigned c = 0; c < HITCH_CAUSE_COUNT; c++)
        s->cause_ns[c] += h.part_ns[c];
    keep_worst(s, &h);
    return true;
}

static void log_hitches(const struct recording *rec, unsigned l, const struct display_evidence *ev,
                        uint64_t origin, const struct hitch_indexes *x,
                        struct animation *animation, struct hitch_stats *s)
{
    const struct recording_log *log = &rec->logs[l];
    uint64_t n = log->frame_count;
    struct hitch_pass *p = calloc(1, sizeof(*p));
    struct frame_cursor frames;
    if (!p || !frame_cursor_open(&frames, rec, log)) {
        free(p);
        return;
    }
    *p = (struct hitch_pass){ .rec = rec, .l = l, .n = n, .origin = origin, .x = x, .s = s,
                              .frames = &frames };
    zone_window_init(&p->zones, rec);
    p->pipelines.pipelines = &rec->pipelines;
    sched_window_open(&p->wakes, &x->sched);
    /* Too few neighbours to call any frame a spike: none is judged. */
    bool judging = n >= 9;
    uint64_t next = 0; /* the next frame to judge */
    for (uint64_t i = 0; i < n; i++) {
        const struct fscope_frame *f = frame_at(&frames, i);
        s->late_shown += f->present_state == FRAME_PRESENT_PRESENTED && f->presented_ticks;
        if (rec->kernel.sched_state == REC_SCHED_ON)
            s->wake_coverage[frame_wakeup_coverage(&x->sched, f)]++;
        animation_add(rec, animation, f);
        const struct frame_extra *fx = frame_extra_at(&frames, i);
        int late = fx && fx->late_judged ? fx->late_refreshes : -1;
        if (late >= 0) {
            s->late_judged++;
            s->late_frames += late > 0;
            s->late_refreshes += (uint64_t)late;
        }
        if (!judging)
            continue;
        struct frame_budget_ns b;
        frame_budget(rec, f, fx, ev, &b);
        struct ring_frame *r = &p->ring[i % HITCH_RING];
        r->late = late;
        r->time = b.frame;
        r->start_ticks = f->start_ticks;
        r->end_ticks = f->end_ticks;
        r->timed = b.gpu_timed;
        frame_parts(&b, r->parts);
        /* Every frame whose window ends here. */
        for (; judging && next < n; next++) {
            uint64_t lo, hi;
            window_of(next, n, &lo, &hi);
            if (hi > i)
                break;
            judging = judge(p, next, lo, hi);
        }
    }
    frame_cursor_close(&frames);
    zone_window_free(&p->zones);
    pipeline_window_close(&p->pipelines);
    sched_window_close(&p->wakes);
    free(p);
}

void hitches_compute(const struct recording *rec, const struct display_evidence *ev,
                     struct hitch_stats *ret)
{
    memset(ret, 0, sizeof(*ret));
    sorter_init(&ret->hitches, sizeof(struct hitch), sorter_as_pushed, 0);
    uint64_t origin = UINT64_MAX;
    for (unsigned l = 0; l < rec->log_count; l++)
        if (rec->logs[l].frame_count && rec->logs[l].first_start_ticks < origin)
            origin = rec->logs[l].first_start_ticks;
    struct hitch_indexes x;
    hitch_indexes_build(rec, &x);
    struct animation animation = { .have_prev = false };
    values_init_double(&animation.errors);
    for (unsigned l = 0; l < rec->log_count; l++) {
        animation.have_prev = false;
        log_hitches(rec, l, ev ? &ev[l] : NULL, origin, &x, &animation, ret);
    }
    if (rec->kernel.sched_state == REC_SCHED_ON)
        ret->wake_threads = x.sched.threads;
    for (unsigned l = 0; l < rec->log_count; l++)
        ret->wake_frames += rec->logs[l].frame_count;
    hitch_indexes_free(&x);
    animation_end(&animation, ret);
    sorter_finish(&ret->hitches);
}

void hitches_free(struct hitch_stats *s)
{
    sorter_free(&s->hitches);
}

bool hitches_open(struct sorter_cursor *c, const struct hitch_stats *s)
{
    if (!s || !s->count) {
        memset(c, 0, sizeof(*c));
        return false;
    }
    return sorter_cursor_open(c, &s->hitches);
}

/* "CPU work +79.1 ms, asleep outside Vulkan +3.0 ms": the parts of a hitch's excess of at
 * least a tenth of it, largest first. */
static void parts_text(const struct hitch *h, char *buf, size_t len)
{
    int64_t excess = h->frame_ns - h->median_ns;
    bool used[HITCH_CAUSE_COUNT] = { false };
    size_t at = 0;
    buf[0] = '\0';
    for (;;) {
        int best = -1;
        for (unsigned c = 0; c < HITCH_CAUSE_COUNT; c++)
            if (!used[c] && h->part_ns[c] * 10 >= excess && h->part_ns[c] > 0 &&
                (best < 0 || h->part_ns[c] > h->part_ns[best]))
                best = (int)c;
        if (best < 0 || at >= len)
            break;
        used[best] = true;
        int w = snprintf(buf + at, len - at, "%s%s +%.1f ms", at ? ", " : "",
                         cause_words[best], (double)h->part_ns[best] / 1e6);
        if (w < 0)
            break;
        at += (size_t)w;
    }
}

/* "; in the frame, the app's threads spent 79.0 ms creating 14 pipelines, ...; its thread
 * took 212 page faults from disk, ...": what of the hitches' evidence the frame holds (calls
 * of 0.1 ms at least, kernel counts above 0), else "". */
static void evidence_text(const struct recording *rec, const struct hitch *h, char *buf,
                          size_t len)
{
    char items[5][160];
    int64_t ns[5] = { h->pipeline_ns, h->shader_ns, h->memory_ns, h->swapchain_ns, h->submit_ns };
    int w0 = snprintf(items[0], sizeof(items[0]), "creating %llu pipeline%s",
                      (unsigned long long)h->pipelines, h->pipelines == 1 ? "" : "s");
    if (h->pipelines_reported && w0 > 0 && (size_t)w0 < sizeof(items[0]))
        snprintf(items[0] + w0, sizeof(items[0]) - (size_t)w0, " (%llu of %llu from the "
                 "pipeline cache, the driver's own time %.1f ms)",
                 (unsigned long long)h->pipeline_cache_hits,
                 (unsigned long long)h->pipelines_reported, (double)h->pipeline_driver_ns / 1e6);
    snprintf(items[1], sizeof(items[1]), "creating %llu shader module%s",
             (unsigned long long)h->shaders, h->shaders == 1 ? "" : "s");
    snprintf(items[2], sizeof(items[2]), "in %llu device-memory allocations or frees",
             (unsigned long long)h->memory_calls);
    snprintf(items[3], sizeof(items[3]), "creating a swapchain");
    snprintf(items[4], sizeof(items[4]), "inside queue submissions (the driver's work)");
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < 5 && at < len; i++) {
        if (ns[i] < 100000)
            continue;
        int w = snprintf(buf + at, len - at, "%s%.1f ms %s",
                         at ? ", " : "; in the frame, the app's threads spent ",
                         (double)ns[i] / 1e6, items[i]);
        at = w < 0 ? len : at + (size_t)w;
        if (i == 0 && h->slowest_name[0] && at < len) {
            w = snprintf(buf + at, len - at, " (the slowest '%s', %.1f ms)", h->slowest_name,
                         (double)h->slowest_ns / 1e6);
            at = w < 0 ? len : at + (size_t)w;
        }
    }
    uint64_t counts[3] = { h->major_faults, h->block_reads, h->preempted };
    static const char *const what[3][2] = { { "page fault read from disk",
                                              "page faults read from disk" },
                                            { "block read", "block reads" },
                                            { "preemption", "preemptions" } };
    bool first = true;
    for (size_t i = 0; i < 3 && at < len; i++) {
        if (!counts[i])
            continue;
        int w = snprintf(buf + at, len - at, "%s%llu %s", first ? "; its thread took " : ", ",
                         (unsigned long long)counts[i], what[i][counts[i] != 1]);
        at = w < 0 ? len : at + (size_t)w;
        first = false;
    }
    if (h->wake.ran_tid && h->wake.ran_ns >= 100000 && at < len) {
        int w = snprintf(buf + at, len - at, "; while it was runnable, %s (tid %d) ran %.1f ms "
                         "in its place", h->wake.ran_comm[0] ? h->wake.ran_comm : "?",
                         h->wake.ran_tid, (double)h->wake.ran_ns / 1e6);
        at = w < 0 ? len : at + (size_t)w;
    }
    if (h->wake.io_wait_ns >= 100000 && at < len) {
        int w = snprintf(buf + at, len - at, "; %.1f ms of it waiting on I/O (uninterruptible "
                         "sleep)", (double)h->wake.io_wait_ns / 1e6);
        at = w < 0 ? len : at + (size_t)w;
    }
    if (h->wake.slept_ns >= 100000 && h->wake.waker_tid == 0 && at < len) {
        /* An interrupt (a timer's, a device's), named by the context the wake-up ran in. */
        int w = snprintf(buf + at, len - at, "; woken by %s after %.1f ms asleep",
                         h->wake.waker_comm[0] ? h->wake.waker_comm : "the kernel",
                         (double)h->wake.slept_ns / 1e6);
        at = w < 0 ? len : at + (size_t)w;
    } else if (h->wake.slept_ns >= 100000 && at < len) {
        int w = snprintf(buf + at, len - at, "; woken by %s (tid %d) after %.1f ms asleep",
                         h->wake.waker_comm[0] ? h->wake.waker_comm : "a thread since gone",
                         h->wake.waker_tid, (double)h->wake.slept_ns / 1e6);
        at = w < 0 ? len : at + (size_t)w;
    }
    if (h->late_refreshes > 0 && at < len) {
        char which[48] = "it was";
        if (h->late_frame != h->frame)
            snprintf(which, sizeof(which), "frame %llu was", (unsigned long long)h->late_frame);
        int w = snprintf(buf + at, len - at, "; %s shown %d refresh%s late although ready",
                         which, h->late_refreshes, h->late_refreshes == 1 ? "" : "es");
        at = w < 0 ? len : at + (size_t)w;
    }
    if (h->zone >= 0 && at < len) {
        int w = snprintf(buf + at, len - at, "; on the GPU, zone %s took %.1f ms against its "
                         "median %.1f", rec->gpu_zone_names[h->zone], (double)h->zone_ns / 1e6,
                         (double)h->zone_median_ns / 1e6);
        at = w < 0 ? len : at + (size_t)w;
    }
}

void hitches_write_text(FILE *f, const struct recording *rec, const struct hitch_stats *s)
{
    if (!s->frames_judged)
        return;
    if (!s->count) {
        fprintf(f, "  hitches     none in %llu frames (a hitch: %.0fx the median of the %d "
                "frames around it and %.0f ms over it)\n", (unsigned long long)s->frames_judged,
                HITCH_RATIO, HITCH_WINDOW, HITCH_FLOOR_MS);
    } else {
        fprintf(f, "  hitches     %llu in %llu frames, %.1f ms over their neighbours in all (a "
                "hitch: %.0fx the median of the %d frames around it and %.0f ms over it); "
                "by cause:", (unsigned long long)s->count,
                (unsigned long long)s->frames_judged, (double)s->excess_ns / 1e6, HITCH_RATIO,
                HITCH_WINDOW, HITCH_FLOOR_MS);
        for (unsigned c = 0; c < HITCH_CAUSE_COUNT; c++)
            if (s->cause_ns[c] > 0)
                fprintf(f, " %s %.0f%%", cause_names[c],
                        100.0 * (double)s->cause_ns[c] / (double)s->excess_ns);
        fputc('\n', f);
    }
    for (unsigned i = 0; i < s->worst_count; i++) {
        const struct hitch *h = &s->worst[i];
        char parts[512], thread[80] = "", label[64];
        parts_text(h, parts, sizeof(parts));
        if (h->tid)
            snprintf(thread, sizeof(thread), "; thread %s",
                     recording_thread_label(rec, h->tid, label, sizeof(label)));
        char evidence[1024];
        evidence_text(rec, h, evidence, sizeof(evidence));
        fprintf(f, "  hitch       frame %llu%s at %.3f s: %.1f ms, +%.1f ms over %.1f: %s%s%s\n",
                (unsigned long long)h->frame, rec->log_count > 1 ? " (its surface's)" : "",
                h->at_s, (double)h->frame_ns / 1e6, (double)(h->frame_ns - h->median_ns) / 1e6,
                (double)h->median_ns / 1e6, parts, thread, evidence);
    }
    if (rec->kernel.present && rec->kernel.sched_state == REC_SCHED_OFF)
        fprintf(f, "  wake-ups    %s\n", rec->kernel.sched_why);
    else if (rec->kernel.sched_state == REC_SCHED_ON) {
        fprintf(f, "  wake-ups    recorded (sched_switch, sched_waking): %llu events of the %s "
                "closing frames, %llu lost; the chain known for %llu of %llu frames",
                (unsigned long long)(rec->kernel.sched_count - rec->kernel.sched_marks),
                s->wake_threads > 1 ? "threads" : "thread",
                (unsigned long long)rec->kernel.sched_lost,
                (unsigned long long)s->wake_coverage[WAKEUP_KNOWN],
                (unsigned long long)s->wake_frames);
        /* Never "recorded" for frames it was not: how many are unknown, and why. */
        static const char *const unknown_words[WAKEUP_COVERAGE_COUNT] = {
            [WAKEUP_NOT_FOLLOWED] = "with their thread not followed at the time",
            [WAKEUP_PAUSED] = "paused",
            [WAKEUP_UNWATCHED] = "with a CPU whose events were gone (CPU hotplug)",
        };
        uint64_t unknown = s->wake_frames - s->wake_coverage[WAKEUP_KNOWN];
        const char *sep = "; unknown: ";
        for (unsigned c = WAKEUP_KNOWN + 1; unknown && c < WAKEUP_COVERAGE_COUNT; c++)
            if (s->wake_coverage[c]) {
                fprintf(f, "%s%llu %s", sep, (unsigned long long)s->wake_coverage[c],
                        unknown_words[c]);
                sep = ", ";
            }
        if (rec->kernel.sched_pauses)
            fprintf(f, "; paused %u time%s, %.1f s in all, while frames came more than %d a "
                    "second (the kernel's cost of the events is per frame; "
                    "FRAMESCOPE_WAKEUPS=on keeps them on)", rec->kernel.sched_pauses,
                    rec->kernel.sched_pauses == 1 ? "" : "s",
                    (double)rec->kernel.sched_paused_ms / 1e3, REC_SCHED_PAUSE_FPS);
        fputc('\n', f);
    }
    /* The denominator said with it: beside hundreds of frames presented, "0 of 15" reads as
     * a count of something else unless it says which frames it judged. */
    if (s->late_judged)
        fprintf(f, "  late        %llu of %llu frames judged were shown one or more refreshes "
                "after they were ready (%llu refresh%s in all); judged: shown after another "
                "shown frame and GPU-timed, %llu of %llu frames shown\n",
                (unsigned long long)s->late_frames, (unsigned long long)s->late_judged,
                (unsigned long long)s->late_refreshes, s->late_refreshes == 1 ? "" : "es",
                (unsigned long long)s->late_judged, (unsigned long long)s->late_shown);
    else
        fprintf(f, "  late        not judged: none of %llu frames shown was both GPU-timed and "
                "shown after another shown frame\n", (unsigned long long)s->late_shown);
    if (s->animation_samples)
        fprintf(f, "  animation   error (shown against simulated time, PresentMon's): mean %.3f  "
                "p95 %.3f  p99 %.3f ms over %llu shown frames\n", s->animation_error_ms[0],
                s->animation_error_ms[1], s->animation_error_ms[2],
                (unsigned long long)s->animation_samples);
    else
        fprintf(f, "  animation   error unknown: no frame's presentation time was reported\n");
}

static void hitch_json(FILE *f, const struct recording *rec, const struct hitch *h)
{
    char thread[96] = "";
    if (h->tid)
        recording_thread_label(rec, h->tid, thread, sizeof(thread));
    fprintf(f, "{\"frame\": %llu, \"surface\": %u, \"at_s\": %.6f, \"frame_ms\": %.6f, "
            "\"median_ms\": %.6f, \"excess_ms\": %.6f, \"cause\": \"%s\", \"thread\": ",
            (unsigned long long)h->frame, h->log, h->at_s, (double)h->frame_ns / 1e6,
            (double)h->median_ns / 1e6, (double)(h->frame_ns - h->median_ns) / 1e6,
            cause_names[h->cause]);
    json_write_string(f, thread);
    fputs(", \"parts_ms\": {", f);
    for (unsigned c = 0; c < HITCH_CAUSE_COUNT; c++)
        fprintf(f, "%s\"%s\": %.6f", c ? ", " : "", cause_names[c], (double)h->part_ns[c] / 1e6);
    fprintf(f, "}, \"evidence\": {\"pipelines\": %llu, \"pipeline_ms\": %.6f, "
            "\"shader_modules\": %llu, \"shader_module_ms\": %.6f, \"memory_calls\": %llu, "
            "\"memory_ms\": %.6f, \"swapchain_ms\": %.6f, \"submit_ms\": %.6f, "
            "\"pipelines_reported\": %llu, \"pipeline_cache_hits\": %llu, "
            "\"pipeline_driver_ms\": %.6f",
            (unsigned long long)h->pipelines,
            (double)h->pipeline_ns / 1e6, (unsigned long long)h->shaders,
            (double)h->shader_ns / 1e6, (unsigned long long)h->memory_calls,
            (double)h->memory_ns / 1e6, (double)h->swapchain_ns / 1e6, (double)h->submit_ns / 1e6,
            (unsigned long long)h->pipelines_reported, (unsigned long long)h->pipeline_cache_hits,
            (double)h->pipeline_driver_ns / 1e6);
    /* The kernel's counts, or null where the frame had no kernel view (never a false 0). */
    if (h->kernel)
        fprintf(f, ", \"major_faults\": %llu, \"block_reads\": %llu, \"preempted\": %llu",
                (unsigned long long)h->major_faults, (unsigned long long)h->block_reads,
                (unsigned long long)h->preempted);
    else
        fputs(", \"major_faults\": null, \"block_reads\": null, \"preempted\": null", f);
    if (h->slowest_ns) {
        fputs(", \"slowest_pipeline\": {\"name\": ", f);
        json_write_string(f, h->slowest_name);
        fprintf(f, ", \"ms\": %.6f, \"cache_hit\": %s}", (double)h->slowest_ns / 1e6,
                h->slowest_cache_hit ? "true" : "false");
    } else {
        fputs(", \"slowest_pipeline\": null", f);
    }
    if (!h->wake.known) {
        fputs(", \"ran_instead\": null, \"woken_by\": null, \"io_wait_ms\": null", f);
    } else {
        fprintf(f, ", \"io_wait_ms\": %.6f", (double)h->wake.io_wait_ns / 1e6);
        fputs(", \"ran_instead\": ", f);
        if (h->wake.ran_tid) {
            fputs("{\"thread\": ", f);
            json_write_string(f, h->wake.ran_comm);
            fprintf(f, ", \"tid\": %d, \"ms\": %.6f}", h->wake.ran_tid,
                    (double)h->wake.ran_ns / 1e6);
        } else {
            fputs("{\"thread\": \"\", \"tid\": 0, \"ms\": 0}", f);
        }
        fputs(", \"woken_by\": ", f);
        if (h->wake.slept_ns) {
            fputs("{\"thread\": ", f);
            json_write_string(f, h->wake.waker_comm);
            fprintf(f, ", \"tid\": %d, \"asleep_ms\": %.6f}", h->wake.waker_tid,
                    (double)h->wake.slept_ns / 1e6);
        } else {
            fputs("{\"thread\": \"\", \"tid\": 0, \"asleep_ms\": 0}", f);
        }
    }
    if (h->late_refreshes > 0)
        fprintf(f, ", \"late\": {\"frame\": %llu, \"refreshes\": %d}",
                (unsigned long long)h->late_frame, h->late_refreshes);
    else
        fputs(", \"late\": null", f);
    if (h->zone >= 0) {
        fputs(", \"gpu_zone\": {\"path\": ", f);
        json_write_string(f, rec->gpu_zone_names[h->zone]);
        fprintf(f, ", \"ms\": %.6f, \"median_ms\": %.6f}}}", (double)h->zone_ns / 1e6,
                (double)h->zone_median_ns / 1e6);
    } else {
        fputs(", \"gpu_zone\": null}}", f);
    }
}

int hitches_write_json(FILE *f, const struct recording *rec, const struct hitch_stats *s)
{
    int e = 0;
    fprintf(f, "  \"hitches\": {\"definition\": {\"ratio\": %.1f, \"window\": %d, \"floor_ms\": "
            "%.1f}, \"frames_judged\": %llu, \"count\": %llu, \"excess_ms\": %.6f, "
            "\"causes_ms\": {", HITCH_RATIO, HITCH_WINDOW, HITCH_FLOOR_MS,
            (unsigned long long)s->frames_judged, (unsigned long long)s->count,
            (double)s->excess_ns / 1e6);
    for (unsigned c = 0; c < HITCH_CAUSE_COUNT; c++)
        fprintf(f, "%s\"%s\": %.6f", c ? ", " : "", cause_names[c], (double)s->cause_ns[c] / 1e6);
    fputs("},\n    \"worst\": [", f);
    for (unsigned i = 0; i < s->worst_count; i++) {
        if (i)
            fputs(", ", f);
        hitch_json(f, rec, &s->worst[i]);
    }
    fputs("],\n    \"all\": [", f);
    struct sorter_cursor c;
    uint64_t written = 0;
    if (hitches_open(&c, s)) {
        for (const struct hitch *h; (h = sorter_next(&c)); written++) {
            if (written)
                fputs(", ", f);
            hitch_json(f, rec, h);
        }
        sorter_cursor_close(&c);
    }
    if (written != s->count)
        e = -ENOMEM; /* the spool could not be read back whole */
    fprintf(f, "],\n    \"late\": {\"frames_shown\": %llu, \"frames_judged\": %llu, "
            "\"late_frames\": %llu, \"refreshes\": %llu}", (unsigned long long)s->late_shown,
            (unsigned long long)s->late_judged,
            (unsigned long long)s->late_frames, (unsigned long long)s->late_refreshes);
    static const char *const states[] = { "unknown", "on", "off" };
    fprintf(f, ",\n    \"wakeups\": {\"state\": \"%s\", \"why\": ",
            states[rec->kernel.sched_state <= REC_SCHED_OFF ? rec->kernel.sched_state : 0]);
    json_write_string(f, rec->kernel.sched_why);
    fprintf(f, ", \"events\": %llu, \"lost\": %llu, \"pauses\": %u, \"paused_s\": %.3f, "
            "\"threads\": %u, \"frames\": %llu, \"frames_known\": %llu, \"unknown\": "
            "{\"not_followed\": %llu, \"paused\": %llu, \"cpu_unwatched\": %llu}}",
            (unsigned long long)(rec->kernel.sched_count - rec->kernel.sched_marks),
            (unsigned long long)rec->kernel.sched_lost, rec->kernel.sched_pauses,
            (double)rec->kernel.sched_paused_ms / 1e3, s->wake_threads,
            (unsigned long long)s->wake_frames,
            (unsigned long long)s->wake_coverage[WAKEUP_KNOWN],
            (unsigned long long)s->wake_coverage[WAKEUP_NOT_FOLLOWED],
            (unsigned long long)s->wake_coverage[WAKEUP_PAUSED],
            (unsigned long long)s->wake_coverage[WAKEUP_UNWATCHED]);
    fprintf(f, ",\n    \"animation_error_ms\": {\"samples\": %llu, \"mean\": %.6f, \"p95\": "
            "%.6f, \"p99\": %.6f}},\n", (unsigned long long)s->animation_samples,
            s->animation_error_ms[0], s->animation_error_ms[1], s->animation_error_ms[2]);
    return e;
}
