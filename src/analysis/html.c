#include "html.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "engine.h"
#include "frames.h"
#include "hitches.h"
#include "html_page.h"
#include "values.h"
#include "stats.h"
#include "zones.h"

/* The report's charts draw at most this many columns: one per pixel of a wide chart. Longer
 * runs put several frames in a column (their mean, and the slowest). */
#define REPORT_MAX_COLUMNS 2000

/* JSON has no NaN or infinity. */
static double finite_or_zero(double x)
{
    return isfinite(x) ? x : 0.0;
}

/* One chart column: frames_in_it consecutive frames of the primary surface. */
struct report_column {
    int64_t start_ns;            /* its first frame's start, from the capture origin */
    int64_t frame_max_ns, frame_min_ns; /* frame_min_ns: its shortest frame over 0 (0: none) */
    int64_t sum_ns[2 + FSCOPE_BLOCK_COUNT]; /* frame, cpu, blocks... */
    uint32_t frames_in_it;
    /* The gauges': the frames whose GPU busy is known (timed), their time and busy time, and
     * the largest share of a frame the CPU part and the GPU busy time took. */
    uint32_t gpu_timed_frames;
    int64_t gpu_timed_frame_ns, gpu_timed_busy_ns;
    double cpu_share_max, gpu_share_max;
};

enum { SUM_FRAME, SUM_CPU, SUM_BLOCKS };

static void write_column_series(FILE *f, const char *name, const struct report_column *columns,
                                size_t count, int sum_index)
{
    fprintf(f, "\"%s\": [", name);
    for (size_t c = 0; c < count; c++) {
        double value = sum_index < 0 ? (double)columns[c].frame_max_ns
                                     : (double)columns[c].sum_ns[sum_index] /
                                           (double)columns[c].frames_in_it;
        fprintf(f, "%s%.4f", c ? "," : "", value / 1e6);
    }
    fputc(']', f);
}

/* The primary surface's frames in at most REPORT_MAX_COLUMNS columns. NULL when out of
 * memory; *ret_count 0 and a non-NULL result for no frames. */
static struct report_column *report_columns(const struct formats_run *run, uint64_t origin,
                                            size_t *ret_count)
{
    const struct recording *rec = run->rec;
    *ret_count = 0;
    const struct recording_log *log = run->primary_log < rec->log_count
                                       ? &rec->logs[run->primary_log] : NULL;
    uint64_t frames = log ? log->frame_count : 0;
    uint64_t per_column = (frames + REPORT_MAX_COLUMNS - 1) / REPORT_MAX_COLUMNS;
    size_t count = per_column ? (size_t)((frames + per_column - 1) / per_column) : 0;
    struct report_column *columns = calloc(count ? count : 1, sizeof(*columns));
    struct frame_cursor c;
    bool open = frames && columns && frame_cursor_open(&c, rec, log);
    if (!columns || (frames && !open)) {
        free(columns);
        return NULL;
    }
    for (uint64_t i = 0; i < frames; i++) {
        const struct fscope_frame *fr = frame_at(&c, i);
        struct frame_budget_ns b;
        frame_budget(rec, fr, frame_extra_at(&c, i), log_evidence(run, run->primary_log),
                     &b);
        struct report_column *column = &columns[i / per_column];
        if (!column->frames_in_it)
            column->start_ns = ticks_ns(rec, fr->start_ticks - origin);
        column->frames_in_it++;
        if (b.frame > column->frame_max_ns)
            column->frame_max_ns = b.frame;
        if (b.frame > 0 && (!column->frame_min_ns || b.frame < column->frame_min_ns))
            column->frame_min_ns = b.frame;
        column->sum_ns[SUM_FRAME] = ns_sum(column->sum_ns[SUM_FRAME], b.frame);
        column->sum_ns[SUM_CPU] = ns_sum(column->sum_ns[SUM_CPU], b.cpu);
        for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++)
            column->sum_ns[SUM_BLOCKS + k] = ns_sum(column->sum_ns[SUM_BLOCKS + k], b.block[k]);
        double frame = b.frame > 0 ? (double)b.frame : 0.0;
        if (frame > 0 && (double)b.cpu / frame > column->cpu_share_max)
            column->cpu_share_max = (double)b.cpu / frame;
        if (b.gpu_timed) {
            column->gpu_timed_frames++;
            column->gpu_timed_frame_ns = ns_sum(column->gpu_timed_frame_ns, b.frame);
            column->gpu_timed_busy_ns = ns_sum(column->gpu_timed_busy_ns, b.gpu_busy);
            if (frame > 0 && (double)b.gpu_busy / frame > column->gpu_share_max)
                column->gpu_share_max = (double)b.gpu_busy / frame;
        }
    }
    if (open)
        frame_cursor_close(&c);
    *ret_count = count;
    return columns;
}

/* ---- report.html's gauges ----
 * Six graphs over the run. The shares of a frame and the pools are drawn up to their natural
 * ceiling (100% of the frame, the heap's budget, the pools' capacity), as an engine's own
 * profiler draws them: a graph that scales to what it holds draws 4% as full. The frame rate
 * and the resident set have no ceiling of their own (a 400 fps run drawn against a 60 Hz
 * refresh is a flat block; a 90 MiB process against 24 GiB of RAM a line at 0), so they are
 * drawn over the run's own range, with a margin, on axes the page's data states. */

/* An axis from about low to high in the unit's steps: widened by a tenth of the span (at
 * least a twentieth of high, so that a steady value is not drawn as all jitter), rounded out
 * to a step of 1, 2, 2.5 or 5 times a power of ten that cuts it into four to six, never
 * below 0. */
struct gauge_axis {
    double min, max, step;
};

static struct gauge_axis gauge_axis_around(double low, double high, double unit)
{
    low /= unit;
    high /= unit;
    double margin = fmax((high - low) / 10, fabs(high) / 20);
    if (!(margin > 0))
        margin = 1;
    double from = fmax(0, low - margin), to = high + margin;
    double raw = (to - from) / 4;
    double magnitude = pow(10, floor(log10(raw)));
    static const double multiples[] = { 1, 2, 2.5, 5, 10 };
    double step = 10 * magnitude;
    for (unsigned i = 0; i < sizeof(multiples) / sizeof(multiples[0]); i++) {
        if (multiples[i] * magnitude >= raw) {
            step = multiples[i] * magnitude;
            break;
        }
    }
    return (struct gauge_axis){ .min = floor(from / step) * step * unit,
                                .max = ceil(to / step) * step * unit, .step = step * unit };
}

static void write_gauge_axis(FILE *f, struct gauge_axis axis)
{
    fprintf(f, "\"axis\": {\"min\": %.12g, \"max\": %.12g, \"step\": %.12g}",
            finite_or_zero(axis.min), finite_or_zero(axis.max), finite_or_zero(axis.step));
}

/* A gauge's samples: at most three values at a time. */
#define GAUGE_VALUES 3
struct gauge_point {
    uint64_t ticks;
    double value[GAUGE_VALUES];
};

/* A gauge's points thinned as they come to at most REPORT_MAX_COLUMNS stretches of the time
 * they span: each the largest of every value in it (a graph is looked at for its spikes, which
 * a mean irons out), at the stretch's first sample. Two passes over the points: series_note
 * each (their span and count), series_begin, then series_add each again. */
struct gauge_series {
    uint64_t count, first, last;
    double low, high; /* the first value's range */
    double most[GAUGE_VALUES]; /* each value's largest */
    bool thin;
    double per_stretch;
    uint64_t stretch;
    size_t kept;
    struct gauge_point points[REPORT_MAX_COLUMNS];
};

static void series_init(struct gauge_series *s)
{
    s->count = s->last = s->kept = 0;
    s->first = UINT64_MAX;
    s->low = s->high = 0;
    memset(s->most, 0, sizeof(s->most));
}

static void series_note(struct gauge_series *s, const struct gauge_point *p)
{
    double v = p->value[0];
    s->low = s->count && s->low < v ? s->low : v;
    s->high = s->count && s->high > v ? s->high : v;
    s->first = p->ticks < s->first ? p->ticks : s->first;
    s->last = p->ticks > s->last ? p->ticks : s->last;
    for (unsigned k = 0; k < GAUGE_VALUES; k++)
        s->most[k] = s->count && s->most[k] > p->value[k] ? s->most[k] : p->value[k];
    s->count++;
}

static void series_begin(struct gauge_series *s)
{
    s->thin = s->count > REPORT_MAX_COLUMNS;
    s->per_stretch = ((double)(s->last - s->first) + 1.0) / REPORT_MAX_COLUMNS;
    s->kept = 0;
}

static void series_add(struct gauge_series *s, const struct gauge_point *p)
{
    uint64_t at = s->thin ? (uint64_t)((double)(p->ticks - s->first) / s->per_stretch) : 0;
    /* Points out of time order (a hostile recording) may make more stretches: the last
     * takes the rest. */
    if (s->kept && ((s->thin && at == s->stretch) || s->kept == REPORT_MAX_COLUMNS)) {
        struct gauge_point *into = &s->points[s->kept - 1];
        for (unsigned v = 0; v < GAUGE_VALUES; v++)
            if (p->value[v] > into->value[v])
                into->value[v] = p->value[v];
        return;
    }
    s->stretch = at;
    s->points[s->kept++] = *p;
}

/* "\"t\": [seconds from origin...], \"<key>\": [...]..." for a series' points; keys name the
 * values (at most GAUGE_VALUES). */
static void write_gauge_points(FILE *f, const struct recording *rec, uint64_t origin,
                               const struct gauge_series *s, const char *const *keys,
                               unsigned values)
{
    fputs("\"t\": [", f);
    for (size_t i = 0; i < s->kept; i++)
        fprintf(f, "%s%.6f", i ? "," : "",
                (double)ticks_between_ns(rec, origin, s->points[i].ticks) / 1e9);
    fputc(']', f);
    for (unsigned v = 0; v < values; v++) {
        fprintf(f, ", \"%s\": [", keys[v]);
        for (size_t i = 0; i < s->kept; i++)
            fprintf(f, "%s%.0f", i ? "," : "", finite_or_zero(s->points[i].value[v]));
        fputc(']', f);
    }
}

/* A gauge read from one of the recording's spools: point gives an item's point (false: the
 * item has none). Both passes of the series; false when they could not be read. */
static bool series_read(struct gauge_series *s, const struct sorter *from,
                        bool (*point)(const void *item, const void *ctx, struct gauge_point *ret),
                        const void *ctx)
{
    series_init(s);
    struct sorter_cursor c;
    struct gauge_point p;
    for (unsigned pass = 0; pass < 2; pass++) {
        if (!sorter_count(from) || !sorter_cursor_open(&c, from))
            return !sorter_count(from);
        for (const void *item; (item = sorter_next(&c));)
            if (point(item, ctx, &p)) {
                if (pass == 0)
                    series_note(s, &p);
                else
                    series_add(s, &p);
            }
        bool failed = c.failed;
        sorter_cursor_close(&c);
        if (failed)
            return false;
        if (pass == 0)
            series_begin(s);
    }
    return true;
}

static bool rss_point(const void *item, const void *ctx, struct gauge_point *ret)
{
    (void)ctx;
    const struct gauge_sample *g = item;
    *ret = (struct gauge_point){ g->ticks, { (double)g->rss_bytes } };
    return g->rss_bytes != 0; /* 0: not read */
}

static bool descriptor_point(const void *item, const void *ctx, struct gauge_point *ret)
{
    (void)ctx;
    const struct gauge_sample *g = item;
    *ret = (struct gauge_point){ g->ticks, { (double)g->descriptor_sets,
                                             (double)g->descriptor_capacity } };
    return true;
}

static bool live_point(const void *item, const void *ctx, struct gauge_point *ret)
{
    (void)ctx;
    const struct engine_live_point *p = item;
    *ret = (struct gauge_point){ p->ticks, { (double)p->live_bytes } };
    return true;
}

static bool budget_point(const void *item, const void *ctx, struct gauge_point *ret)
{
    const struct engine_heap *heap = ctx;
    const struct budget_sample *b = item;
    if (b->device_id != heap->device_id || heap->heap >= b->heap_count)
        return false;
    *ret = (struct gauge_point){ b->ticks, { (double)b->budget[heap->heap],
                                             (double)b->usage[heap->heap] } };
    return true;
}

/* The refresh rate the compositor gave for the primary surface's frames (the median of what
 * it claimed), 0 when it gave none. */
static double gauge_refresh_hz(const struct formats_run *run)
{
    const struct recording *rec = run->rec;
    if (run->primary_log >= rec->log_count)
        return 0;
    const struct recording_log *log = &rec->logs[run->primary_log];
    struct values claimed;
    values_init_double(&claimed);
    struct frame_cursor c;
    if (frame_cursor_open(&c, rec, log)) {
        for (uint64_t i = 0; i < log->frame_count; i++) {
            const struct fscope_frame *fr = frame_at(&c, i);
            if (fr->refresh_ns)
                values_add(&claimed, fr->refresh_ns);
        }
        frame_cursor_close(&c);
    }
    double hz = 0;
    if (values_finish(&claimed) && values_count(&claimed))
        hz = 1e9 / values_median(&claimed);
    values_free(&claimed);
    return hz;
}

/* The heap the device memory gauge is drawn against: the one that held the most, a
 * device-local one, then one with a budget read, first among equals. NULL when none is known. */
static const struct engine_heap *gauge_heap(const struct engine_stats *engine)
{
    const struct engine_heap *best = NULL;
    for (unsigned i = 0; engine && i < engine->heap_count; i++) {
        const struct engine_heap *h = &engine->heaps[i];
        if (!best || h->peak_bytes > best->peak_bytes ||
            (h->peak_bytes == best->peak_bytes &&
             (h->device_local > best->device_local ||
              (h->device_local == best->device_local && h->budget_read > best->budget_read))))
            best = h;
    }
    return best;
}

/* The "gauges" member of the report's data: the frames' (by column), then the samples'. */
static int write_gauges_data(FILE *f, const struct formats_run *run, uint64_t origin,
                             const struct report_column *columns, size_t column_count)
{
    const struct recording *rec = run->rec;
    const struct recording_engine *g = &rec->engine;
    const struct engine_stats *engine = run->engine;
    struct gauge_series *series = malloc(sizeof(*series));
    if (!series)
        return -ENOMEM;

    /* MemTotal, in KiB as /proc/meminfo gives it. */
    char *end;
    unsigned long long ram_kib = strtoull(rec->system.ram_kib, &end, 10);
    if (end == rec->system.ram_kib)
        ram_kib = 0;
    fprintf(f, ",\n\"gauges\": {\"refresh_hz\": %.3f, \"ram_bytes\": %llu,\n",
            finite_or_zero(gauge_refresh_hz(run)), ram_kib * 1024ull);
    /* The frames' by column: seconds from the origin, as the columns' start (ms) is. */
    fputs("\"frames\": {\"start_s\": [", f);
    for (size_t c = 0; c < column_count; c++)
        fprintf(f, "%s%.6f", c ? "," : "", (double)columns[c].start_ns / 1e9);
    const struct report_column *last = column_count ? &columns[column_count - 1] : NULL;
    fprintf(f, "], \"end_s\": %.6f",
            last ? (double)ns_sum(last->start_ns, last->sum_ns[SUM_FRAME]) / 1e9 : 0.0);
    /* fps: the column's frames over their time; fps_low: its slowest frame's. */
    fputs(",\n\"fps\": [", f);
    for (size_t c = 0; c < column_count; c++) {
        int64_t ns = columns[c].sum_ns[SUM_FRAME];
        fprintf(f, "%s%.3f", c ? "," : "",
                ns > 0 ? 1e9 * (double)columns[c].frames_in_it / (double)ns : 0.0);
    }
    fputs("],\n\"fps_low\": [", f);
    for (size_t c = 0; c < column_count; c++) {
        int64_t ns = columns[c].frame_max_ns;
        fprintf(f, "%s%.3f", c ? "," : "", ns > 0 ? 1e9 / (double)ns : 0.0);
    }
    fputs("],\n\"cpu_pct\": [", f);
    for (size_t c = 0; c < column_count; c++) {
        int64_t ns = columns[c].sum_ns[SUM_FRAME];
        fprintf(f, "%s%.3f", c ? "," : "",
                ns > 0 ? 100.0 * (double)columns[c].sum_ns[SUM_CPU] / (double)ns : 0.0);
    }
    fputs("],\n\"cpu_pct_max\": [", f);
    for (size_t c = 0; c < column_count; c++)
        fprintf(f, "%s%.3f", c ? "," : "", 100.0 * columns[c].cpu_share_max);
    /* null: no frame of the column had its GPU work timed. */
    fputs("],\n\"gpu_pct\": [", f);
    for (size_t c = 0; c < column_count; c++) {
        int64_t ns = columns[c].gpu_timed_frame_ns;
        if (columns[c].gpu_timed_frames && ns > 0)
            fprintf(f, "%s%.3f", c ? "," : "",
                    100.0 * (double)columns[c].gpu_timed_busy_ns / (double)ns);
        else
            fputs(c ? ",null" : "null", f);
    }
    fputs("],\n\"gpu_pct_max\": [", f);
    for (size_t c = 0; c < column_count; c++) {
        if (columns[c].gpu_timed_frames)
            fprintf(f, "%s%.3f", c ? "," : "", 100.0 * columns[c].gpu_share_max);
        else
            fputs(c ? ",null" : "null", f);
    }
    /* The frame rate's axis: from the slowest frame's rate to the fastest's, every frame's
     * (a column's rate, its mean or its slowest frame's, lies between the two). */
    int64_t longest_ns = 0, shortest_ns = 0;
    for (size_t c = 0; c < column_count; c++) {
        if (columns[c].frame_max_ns > longest_ns)
            longest_ns = columns[c].frame_max_ns;
        if (columns[c].frame_min_ns && (!shortest_ns || columns[c].frame_min_ns < shortest_ns))
            shortest_ns = columns[c].frame_min_ns;
    }
    fputs("],\n", f);
    if (longest_ns > 0 && shortest_ns > 0)
        write_gauge_axis(f, gauge_axis_around(1e9 / (double)longest_ns,
                                              1e9 / (double)shortest_ns, 1));
    else
        fputs("\"axis\": null", f);

    /* The kernel sampler's: resident set (0: not read) and descriptor sets. */
    int e = series_read(series, &g->gauges, rss_point, NULL) ? 0 : -EIO;
    fputs("},\n\"rss\": {", f);
    /* The resident set's axis: the process's own range, in MiB steps (GiB past one). */
    if (series->count) {
        write_gauge_axis(f, gauge_axis_around(series->low, series->high,
                                              series->high >= 1073741824.0 ? 1073741824.0
                                                                           : 1048576.0));
        fputs(", ", f);
    }
    static const char *const rss_keys[] = { "bytes" };
    write_gauge_points(f, rec, origin, series, rss_keys, 1);
    if (!series_read(series, &g->gauges, descriptor_point, NULL))
        e = -EIO;
    /* No pool ever made: a track of zeros would say the app has no room, not that it has none. */
    if (!(series->most[0] > 0 || series->most[1] > 0))
        series->kept = 0;
    fputs("},\n\"descriptors\": {", f);
    static const char *const descriptor_keys[] = { "sets", "capacity" };
    write_gauge_points(f, rec, origin, series, descriptor_keys, 2);

    /* Device memory: live allocations (every heap's), and the chosen heap's budget. */
    const struct engine_heap *heap = gauge_heap(engine);
    unsigned heaps_used = 0;
    for (unsigned i = 0; engine && i < engine->heap_count; i++)
        heaps_used += engine->heaps[i].allocations > 0;
    fputs("},\n\"memory\": {", f);
    if (heap)
        fprintf(f, "\"device\": %u, \"heap\": %u, \"device_local\": %s, \"heap_size\": %llu, ",
                heap->device_id, heap->heap, heap->device_local ? "true" : "false",
                (unsigned long long)heap->size);
    fprintf(f, "\"all_heaps\": %s, ", heaps_used > 1 ? "true" : "false");
    series_init(series);
    if (engine && !series_read(series, &engine->live_points, live_point, NULL))
        e = -EIO;
    static const char *const live_keys[] = { "live" };
    write_gauge_points(f, rec, origin, series, live_keys, 1);
    series_init(series);
    if (heap && !series_read(series, &g->budgets, budget_point, heap))
        e = -EIO;
    fputs(",\n\"budget\": {", f);
    static const char *const budget_keys[] = { "budget", "usage" };
    write_gauge_points(f, rec, origin, series, budget_keys, 2);
    fputs("}}}", f);
    free(series);
    return e;
}

/* A hitch by where it is in the list, for sorting into its group. */
struct hitch_ref {
    uint64_t index;
    int64_t frame_ns, excess_ns;
    unsigned rank; /* where its group is written */
};

/* The worse of two hitches comes first: the longer frame, then the larger excess, then the
 * earlier. */
static int compare_worst_first(const struct hitch_ref *a, const struct hitch_ref *b)
{
    if (a->frame_ns != b->frame_ns)
        return a->frame_ns > b->frame_ns ? -1 : 1;
    if (a->excess_ns != b->excess_ns)
        return a->excess_ns > b->excess_ns ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* By group, then worst first within a group. */
static int compare_hitch_refs(const void *a, const void *b)
{
    const struct hitch_ref *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return compare_worst_first(x, y);
}

/* Pushes every hitch to sorted with its group's rank (rank NULL: 0), or, with sorted NULL,
 * counts each cause's hitches, their excess and the worst of them. Returns the hitches read
 * (fewer than hs->count: no memory). */
static uint64_t hitch_refs(const struct hitch_stats *hs, const unsigned *rank,
                           struct sorter *sorted, uint64_t *in_group, int64_t *excess,
                           struct hitch_ref *worst)
{
    struct sorter_cursor c;
    uint64_t count = 0;
    if (!hitches_open(&c, hs))
        return 0;
    for (const struct hitch *h; (h = sorter_next(&c)); count++) {
        unsigned cause = h->cause < HITCH_CAUSE_COUNT ? h->cause : HITCH_UNEXPLAINED;
        struct hitch_ref r = { count, h->frame_ns, h->frame_ns - h->median_ns,
                               rank ? rank[cause] : 0 };
        if (sorted) {
            if (!sorter_push(sorted, &r))
                break;
            continue;
        }
        if (!in_group[cause]++ || compare_worst_first(&r, &worst[cause]) < 0)
            worst[cause] = r;
        excess[cause] = ns_sum(excess[cause], r.excess_ns);
    }
    sorter_cursor_close(&c);
    return count;
}

/* The "hitch_groups" member: one group per cause, the group with the worst hitch first,
 * each with its count, its excess in all and its hitches (indices into "hitches") worst
 * first. A run with many hitches of one kind reads as one row, not as many alike. Two passes
 * over the hitches: the groups, then every hitch through a sorter into its group's place. */
static int write_hitch_groups(FILE *f, const struct hitch_stats *hs)
{
    uint64_t count = hs ? hs->count : 0;
    uint64_t in_group[HITCH_CAUSE_COUNT] = { 0 };
    int64_t excess_ns[HITCH_CAUSE_COUNT] = { 0 };
    struct hitch_ref worst[HITCH_CAUSE_COUNT];
    if (hitch_refs(hs, NULL, NULL, in_group, excess_ns, worst) != count)
        return -ENOMEM;
    unsigned order[HITCH_CAUSE_COUNT], rank[HITCH_CAUSE_COUNT] = { 0 }, groups = 0;
    for (unsigned c = 0; c < HITCH_CAUSE_COUNT; c++) {
        if (!in_group[c])
            continue;
        /* Insertion by the group's worst hitch: there are at most HITCH_CAUSE_COUNT. */
        unsigned at = groups++;
        while (at > 0 && compare_worst_first(&worst[order[at - 1]], &worst[c]) > 0) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = c;
    }
    for (unsigned g = 0; g < groups; g++)
        rank[order[g]] = g;
    struct sorter sorted;
    sorter_init(&sorted, sizeof(struct hitch_ref), compare_hitch_refs, 0);
    struct sorter_cursor c;
    bool ok = hitch_refs(hs, rank, &sorted, NULL, NULL, NULL) == count &&
              sorter_finish(&sorted) && (!count || sorter_cursor_open(&c, &sorted));
    if (!ok) {
        sorter_free(&sorted);
        return -ENOMEM;
    }
    fputs(",\n\"hitch_groups\": [", f);
    for (unsigned g = 0; g < groups; g++) {
        unsigned cause = order[g];
        fprintf(f, "%s{\"cause\": \"%s\", \"words\": ", g ? ",\n" : "",
                hitch_cause_name((enum hitch_cause)cause));
        json_write_script_string(f, hitch_cause_words((enum hitch_cause)cause));
        fprintf(f, ", \"count\": %llu, \"excess_ms\": %.3f, \"hitches\": [",
                (unsigned long long)in_group[cause], (double)excess_ns[cause] / 1e6);
        for (uint64_t i = 0; i < in_group[cause]; i++) {
            const struct hitch_ref *r = sorter_next(&c);
            if (!r) {
                ok = false;
                break;
            }
            fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)r->index);
        }
        fputs("]}", f);
    }
    fputc(']', f);
    if (count)
        sorter_cursor_close(&c);
    sorter_free(&sorted);
    return ok ? 0 : -ENOMEM;
}

static int write_report_data(FILE *f, const struct formats_run *run)
{
    const struct recording *rec = run->rec;
    uint64_t origin = frames_origin_ticks(rec);
    size_t column_count;
    struct report_column *columns = report_columns(run, origin, &column_count);
    char *zones = NULL;
    size_t zones_len = 0;
    FILE *zones_file = open_memstream(&zones, &zones_len);
    if (zones_file) {
        zones_write_csv(zones_file, rec);
        if (fclose(zones_file) != 0) {
            free(zones);
            zones = NULL;
        }
    }
    if (!columns || !zones) {
        free(columns);
        free(zones);
        return -ENOMEM;
    }

    fputs("{\"app\": ", f);
    json_write_script_string(f, run->app);
    fprintf(f, ", \"pid\": %d, \"device\": ", run->pid);
    json_write_script_string(f, run->device);
    fputs(", \"driver\": ", f);
    json_write_script_string(f, run->driver);
    fprintf(f, ",\n\"frames\": %llu, \"duration_s\": %.6f, \"fps\": %.3f, ",
            (unsigned long long)run->frames, finite_or_zero(run->duration_s),
            finite_or_zero(run->fps));
    fprintf(f, "\"frame_ms\": {\"mean\": %.6f, \"p50\": %.6f, \"p95\": %.6f, \"p99\": %.6f, "
            "\"max\": %.6f}, \"low_fps\": {\"1%%\": %.3f, \"0.1%%\": %.3f},\n\"verdict\": ",
            run->frame_ms[0], run->frame_ms[1], run->frame_ms[2], run->frame_ms[3],
            run->frame_ms[4], finite_or_zero(run->low_fps[0]), finite_or_zero(run->low_fps[1]));
    json_write_script_string(f, run->verdict);
    fputs(", \"reason\": ", f);
    json_write_script_string(f, run->reason);
    fputs(", \"shares\": {", f);
    for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++)
        fprintf(f, "%s\"%s\": %.6f", v ? ", " : "", verdict_name((enum fscope_verdict)v),
                finite_or_zero(run->verdict_share[v]));
    fputs("},\n\"surface\": ", f);
    const struct recording_log *log = run->primary_log < rec->log_count
                                       ? &rec->logs[run->primary_log] : NULL;
    json_write_script_string(f, log ? log->label : "");
    fprintf(f, ", \"surfaces\": %u, \"gpu_timed\": %s,\n\"budget_ms\": {\"cpu\": %.6f, "
            "\"gpu_busy\": %.6f", rec->log_count, run->gpu_timed ? "true" : "false",
            run->budget_ms[0], run->budget_ms[1]);
    for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++)
        fprintf(f, ", \"%s\": %.6f", block_name(k), run->budget_ms[2 + k]);
    fputs("},\n\"columns\": {\"frames_per_column\": [", f);
    for (size_t c = 0; c < column_count; c++)
        fprintf(f, "%s%u", c ? "," : "", columns[c].frames_in_it);
    fputs("],\n\"start\": [", f);
    for (size_t c = 0; c < column_count; c++)
        fprintf(f, "%s%.3f", c ? "," : "", (double)columns[c].start_ns / 1e6);
    fputs("],\n", f);
    write_column_series(f, "frame_mean", columns, column_count, SUM_FRAME);
    fputs(",\n", f);
    write_column_series(f, "frame_max", columns, column_count, -1);
    fputs(",\n", f);
    /* The mean GPU busy time of the column's GPU-timed frames, as frames.csv gives each
     * frame's (null: none was timed), for "where each frame went". */
    fputs("\"gpu_busy\": [", f);
    for (size_t c = 0; c < column_count; c++) {
        if (columns[c].gpu_timed_frames)
            fprintf(f, "%s%.4f", c ? "," : "",
                    (double)columns[c].gpu_timed_busy_ns / columns[c].gpu_timed_frames / 1e6);
        else
            fputs(c ? ",null" : "null", f);
    }
    fputc(']', f);
    fputs(",\n\"budget\": {", f);
    write_column_series(f, "cpu", columns, column_count, SUM_CPU);
    for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++) {
        fputs(",\n", f);
        write_column_series(f, block_name(k), columns, column_count, SUM_BLOCKS + (int)k);
    }
    fputs("}},\n\"presented_intervals_ms\": [", f);
    uint64_t frames = log ? log->frame_count : 0;
    uint64_t last_shown = 0;
    bool first = true;
    struct frame_cursor shown;
    if (frames && !frame_cursor_open(&shown, rec, log))
        frames = 0;
    for (uint64_t i = 0; i < frames; i++) {
        const struct fscope_frame *fr = frame_at(&shown, i);
        if (!frame_shown(fr, origin))
            continue;
        /* An interval is kept with the frame that ends it (keep.h). */
        if (last_shown && fr->presented_ticks > last_shown &&
            keep_frame(run->keep, run->primary_log, i)) {
            fprintf(f, "%s%.4f", first ? "" : ",",
                    recording_ns(rec, fr->presented_ticks - last_shown) / 1e6);
            first = false;
        }
        last_shown = fr->presented_ticks;
    }
    if (frames)
        frame_cursor_close(&shown);
    fputs("],\n\"hitches\": [", f);
    /* Every hitch, as the summary lists the worst: when, how long, and the evidence. */
    const struct hitch_stats *hs = run->hitches;
    struct sorter_cursor hc;
    bool hitches_open_ok = hitches_open(&hc, hs);
    uint64_t i = 0;
    for (const struct hitch *h; hitches_open_ok && (h = sorter_next(&hc)); i++) {
        char parts[512] = "";
        size_t at = 0;
        for (unsigned c = 0; c < HITCH_CAUSE_COUNT && at < sizeof(parts); c++) {
            if (h->part_ns[c] <= 0)
                continue;
            int w = snprintf(parts + at, sizeof(parts) - at, "%s%s +%.1f ms", at ? ", " : "",
                             hitch_cause_words((enum hitch_cause)c), (double)h->part_ns[c] / 1e6);
            at = w < 0 ? sizeof(parts) : at + (size_t)w;
        }
        char thread[96] = "";
        if (h->tid)
            recording_thread_label(rec, h->tid, thread, sizeof(thread));
        fprintf(f, "%s{\"frame\": %llu, \"at_s\": %.3f, \"frame_ms\": %.3f, \"excess_ms\": %.3f, "
                "\"cause\": \"%s\", \"evidence\": ", i ? ",\n" : "", (unsigned long long)h->frame,
                h->at_s, (double)h->frame_ns / 1e6, (double)(h->frame_ns - h->median_ns) / 1e6,
                hitch_cause_name(h->cause));
        json_write_script_string(f, parts);
        fputs(", \"thread\": ", f);
        json_write_script_string(f, thread);
        fputc('}', f);
    }
    if (hitches_open_ok)
        sorter_cursor_close(&hc);
    fputc(']', f);
    int r = i == (hs ? hs->count : 0) ? write_hitch_groups(f, hs) : -ENOMEM;
    fputs(",\n\"zones_csv\": ", f);
    json_write_script_string(f, zones);
    /* With no frame, the gauges count from their first sample. */
    uint64_t gauge_origin = origin;
    const struct recording_engine *g = &rec->engine;
    struct sorter_cursor c;
    if (!gauge_origin && g->gauge_count && sorter_cursor_open(&c, &g->gauges)) {
        const struct gauge_sample *oldest = sorter_next(&c);
        gauge_origin = oldest ? oldest->ticks : 0;
        sorter_cursor_close(&c);
    }
    if (!gauge_origin && run->engine && run->engine->live_point_count &&
        sorter_cursor_open(&c, &run->engine->live_points)) {
        const struct engine_live_point *oldest = sorter_next(&c);
        gauge_origin = oldest ? oldest->ticks : 0;
        sorter_cursor_close(&c);
    }
    if (r == 0)
        r = write_gauges_data(f, run, gauge_origin, columns, column_count);
    fputs("}\n", f);
    free(columns);
    free(zones);
    return r;
}

int html_write_report(FILE *f, const void *arg)
{
    fputs(html_page_head, f);
    int r = write_report_data(f, arg);
    fputs(html_page_tail, f);
    return r;
}
