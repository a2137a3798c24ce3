#include "html.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "engine.h"
#include "hitches.h"
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
    if (!columns)
        return NULL;
    for (uint64_t i = 0; i < frames; i++) {
        const struct fscope_frame *fr = &log->frames[i];
        struct frame_budget_ns b;
        frame_budget(rec, fr, log_evidence(run, run->primary_log), &b);
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

/* Thins points in place to at most REPORT_MAX_COLUMNS stretches of the time they span: each
 * the largest of every value in it (a graph is looked at for its spikes, which a mean irons
 * out), at the stretch's first sample. Returns how many are left. */
static size_t gauge_thin(struct gauge_point *points, size_t count)
{
    if (count <= REPORT_MAX_COLUMNS)
        return count;
    uint64_t first = UINT64_MAX, last = 0;
    for (size_t i = 0; i < count; i++) {
        first = points[i].ticks < first ? points[i].ticks : first;
        last = points[i].ticks > last ? points[i].ticks : last;
    }
    double per_stretch = ((double)(last - first) + 1.0) / REPORT_MAX_COLUMNS;
    size_t kept = 0;
    uint64_t stretch = UINT64_MAX;
    for (size_t i = 0; i < count; i++) {
        uint64_t at = (uint64_t)((double)(points[i].ticks - first) / per_stretch);
        if (kept && at == stretch) {
            struct gauge_point *into = &points[kept - 1];
            for (unsigned v = 0; v < GAUGE_VALUES; v++)
                if (points[i].value[v] > into->value[v])
                    into->value[v] = points[i].value[v];
            continue;
        }
        stretch = at;
        points[kept++] = points[i];
    }
    return kept;
}

/* "\"t\": [seconds from origin...], \"<key>\": [...]..." for points, thinned; keys name the
 * values (at most GAUGE_VALUES). */
static void write_gauge_points(FILE *f, const struct recording *rec, uint64_t origin,
                               struct gauge_point *points, size_t count,
                               const char *const *keys, unsigned values)
{
    count = gauge_thin(points, count);
    fputs("\"t\": [", f);
    for (size_t i = 0; i < count; i++)
        fprintf(f, "%s%.6f", i ? "," : "",
                (double)ticks_between_ns(rec, origin, points[i].ticks) / 1e9);
    fputc(']', f);
    for (unsigned v = 0; v < values; v++) {
        fprintf(f, ", \"%s\": [", keys[v]);
        for (size_t i = 0; i < count; i++)
            fprintf(f, "%s%.0f", i ? "," : "", finite_or_zero(points[i].value[v]));
        fputc(']', f);
    }
}

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The refresh rate the compositor gave for the primary surface's frames (the median of what
 * it claimed), 0 when it gave none. */
static double gauge_refresh_hz(const struct formats_run *run)
{
    const struct recording *rec = run->rec;
    if (run->primary_log >= rec->log_count)
        return 0;
    const struct recording_log *log = &rec->logs[run->primary_log];
    uint32_t *claimed = log->frame_count ? malloc(log->frame_count * sizeof(*claimed)) : NULL;
    size_t count = 0;
    for (uint64_t i = 0; claimed && i < log->frame_count; i++)
        if (log->frames[i].refresh_ns)
            claimed[count++] = log->frames[i].refresh_ns;
    double hz = 0;
    if (count) {
        qsort(claimed, count, sizeof(*claimed), compare_u32);
        hz = 1e9 / (double)claimed[count / 2];
    }
    free(claimed);
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
    size_t most = g->gauge_count;
    if (g->budget_count > most)
        most = g->budget_count;
    if (engine && engine->live_point_count > most)
        most = engine->live_point_count;
    struct gauge_point *points = malloc((most ? most : 1) * sizeof(*points));
    if (!points)
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
    size_t count = 0;
    double rss_low = 0, rss_high = 0;
    for (uint64_t i = 0; i < g->gauge_count; i++) {
        double bytes = (double)g->gauges[i].rss_bytes;
        if (!bytes)
            continue;
        rss_low = count && rss_low < bytes ? rss_low : bytes;
        rss_high = count && rss_high > bytes ? rss_high : bytes;
        points[count++] = (struct gauge_point){ g->gauges[i].ticks, { bytes } };
    }
    fputs("},\n\"rss\": {", f);
    /* The resident set's axis: the process's own range, in MiB steps (GiB past one). */
    if (count) {
        write_gauge_axis(f, gauge_axis_around(rss_low, rss_high,
                                              rss_high >= 1073741824.0 ? 1073741824.0
                                                                       : 1048576.0));
        fputs(", ", f);
    }
    static const char *const rss_keys[] = { "bytes" };
    write_gauge_points(f, rec, origin, points, count, rss_keys, 1);
    count = 0;
    bool descriptors = false;
    for (uint64_t i = 0; i < g->gauge_count; i++) {
        const struct gauge_sample *s = &g->gauges[i];
        descriptors |= s->descriptor_sets || s->descriptor_capacity;
        points[count++] = (struct gauge_point){ s->ticks, { (double)s->descriptor_sets,
                                                            (double)s->descriptor_capacity } };
    }
    fputs("},\n\"descriptors\": {", f);
    static const char *const descriptor_keys[] = { "sets", "capacity" };
    write_gauge_points(f, rec, origin, points, descriptors ? count : 0, descriptor_keys, 2);

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
    count = 0;
    for (uint64_t i = 0; engine && i < engine->live_point_count; i++)
        points[count++] = (struct gauge_point){ engine->live_points[i].ticks,
                                                { (double)engine->live_points[i].live_bytes } };
    static const char *const live_keys[] = { "live" };
    write_gauge_points(f, rec, origin, points, count, live_keys, 1);
    count = 0;
    for (uint64_t i = 0; heap && i < g->budget_count; i++) {
        const struct budget_sample *b = &g->budgets[i];
        if (b->device_id == heap->device_id && heap->heap < b->heap_count)
            points[count++] = (struct gauge_point){ b->ticks, { (double)b->budget[heap->heap],
                                                                (double)b->usage[heap->heap] } };
    }
    fputs(",\n\"budget\": {", f);
    static const char *const budget_keys[] = { "budget", "usage" };
    write_gauge_points(f, rec, origin, points, count, budget_keys, 2);
    fputs("}}}", f);
    free(points);
    return 0;
}

/* A hitch by where it is in the list, for sorting. */
struct hitch_ref {
    const struct hitch *hitch;
    uint64_t index;
};

/* The worse of two hitches comes first: the longer frame, then the larger excess, then the
 * earlier. */
static int compare_worst_first(const struct hitch *a, uint64_t a_index, const struct hitch *b,
                               uint64_t b_index)
{
    if (a->frame_ns != b->frame_ns)
        return a->frame_ns > b->frame_ns ? -1 : 1;
    int64_t a_excess = a->frame_ns - a->median_ns, b_excess = b->frame_ns - b->median_ns;
    if (a_excess != b_excess)
        return a_excess > b_excess ? -1 : 1;
    return a_index < b_index ? -1 : a_index > b_index;
}

/* By cause, then worst first within a cause. */
static int compare_hitch_refs(const void *a, const void *b)
{
    const struct hitch_ref *x = a, *y = b;
    if (x->hitch->cause != y->hitch->cause)
        return x->hitch->cause < y->hitch->cause ? -1 : 1;
    return compare_worst_first(x->hitch, x->index, y->hitch, y->index);
}

/* The "hitch_groups" member: one group per cause, the group with the worst hitch first,
 * each with its count, its excess in all and its hitches (indices into "hitches") worst
 * first. A run with many hitches of one kind reads as one row, not as many alike. */
static int write_hitch_groups(FILE *f, const struct hitch_stats *hs)
{
    uint64_t count = hs ? hs->count : 0;
    struct hitch_ref *refs = malloc((count ? count : 1) * sizeof(*refs));
    if (!refs)
        return -ENOMEM;
    for (uint64_t i = 0; i < count; i++)
        refs[i] = (struct hitch_ref){ &hs->hitches[i], i };
    qsort(refs, count, sizeof(*refs), compare_hitch_refs);
    /* Where each cause's group begins in refs, and how many it holds. */
    uint64_t first[HITCH_CAUSE_COUNT] = { 0 }, in_group[HITCH_CAUSE_COUNT] = { 0 };
    for (uint64_t i = count; i-- > 0;) {
        first[refs[i].hitch->cause] = i;
        in_group[refs[i].hitch->cause]++;
    }
    unsigned order[HITCH_CAUSE_COUNT], groups = 0;
    for (unsigned c = 0; c < HITCH_CAUSE_COUNT; c++) {
        if (!in_group[c])
            continue;
        /* Insertion by the group's worst hitch: there are at most HITCH_CAUSE_COUNT. */
        const struct hitch_ref *worst = &refs[first[c]];
        unsigned at = groups++;
        while (at > 0) {
            const struct hitch_ref *before = &refs[first[order[at - 1]]];
            if (compare_worst_first(before->hitch, before->index, worst->hitch,
                                    worst->index) <= 0)
                break;
            order[at] = order[at - 1];
            at--;
        }
        order[at] = c;
    }
    fputs(",\n\"hitch_groups\": [", f);
    for (unsigned g = 0; g < groups; g++) {
        unsigned c = order[g];
        int64_t excess_ns = 0;
        for (uint64_t i = first[c]; i < first[c] + in_group[c]; i++)
            excess_ns = ns_sum(excess_ns, refs[i].hitch->frame_ns - refs[i].hitch->median_ns);
        fprintf(f, "%s{\"cause\": \"%s\", \"words\": ", g ? ",\n" : "",
                hitch_cause_name((enum hitch_cause)c));
        json_write_script_string(f, hitch_cause_words((enum hitch_cause)c));
        fprintf(f, ", \"count\": %llu, \"excess_ms\": %.3f, \"hitches\": [",
                (unsigned long long)in_group[c], (double)excess_ns / 1e6);
        for (uint64_t i = first[c]; i < first[c] + in_group[c]; i++)
            fprintf(f, "%s%llu", i > first[c] ? "," : "", (unsigned long long)refs[i].index);
        fputs("]}", f);
    }
    fputc(']', f);
    free(refs);
    return 0;
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
    for (uint64_t i = 0; i < frames; i++) {
        const struct fscope_frame *fr = &log->frames[i];
        if (!frame_shown(fr, origin))
            continue;
        if (last_shown && fr->presented_ticks > last_shown) {
            fprintf(f, "%s%.4f", first ? "" : ",",
                    recording_ns(rec, fr->presented_ticks - last_shown) / 1e6);
            first = false;
        }
        last_shown = fr->presented_ticks;
    }
    fputs("],\n\"hitches\": [", f);
    /* Every hitch, as the summary lists the worst: when, how long, and the evidence. */
    const struct hitch_stats *hs = run->hitches;
    for (uint64_t i = 0; hs && i < hs->count; i++) {
        const struct hitch *h = &hs->hitches[i];
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
            report_thread_label(rec, h->tid, thread, sizeof(thread));
        fprintf(f, "%s{\"frame\": %llu, \"at_s\": %.3f, \"frame_ms\": %.3f, \"excess_ms\": %.3f, "
                "\"cause\": \"%s\", \"evidence\": ", i ? ",\n" : "", (unsigned long long)h->frame,
                h->at_s, (double)h->frame_ns / 1e6, (double)(h->frame_ns - h->median_ns) / 1e6,
                hitch_cause_name(h->cause));
        json_write_script_string(f, parts);
        fputs(", \"thread\": ", f);
        json_write_script_string(f, thread);
        fputc('}', f);
    }
    fputc(']', f);
    int r = write_hitch_groups(f, hs);
    fputs(",\n\"zones_csv\": ", f);
    json_write_script_string(f, zones);
    /* With no frame, the gauges count from their first sample. */
    uint64_t gauge_origin = origin;
    const struct recording_engine *g = &rec->engine;
    if (!gauge_origin && g->gauge_count)
        gauge_origin = g->gauges[0].ticks;
    if (!gauge_origin && run->engine && run->engine->live_point_count)
        gauge_origin = run->engine->live_points[0].ticks;
    if (r == 0)
        r = write_gauges_data(f, run, gauge_origin, columns, column_count);
    fputs("}\n", f);
    free(columns);
    free(zones);
    return r;
}

/* The page around the data: plain SVG and DOM, no library and nothing fetched, so it opens
 * from a file on a machine without a network. It says "rendered" in #status (and sets
 * body[data-rendered]) when every part is drawn, and any error there instead. */
static const char report_page_head[] =
    "<!DOCTYPE html>\n"
    "<html lang=\"en\">\n"
    "<head>\n"
    "<meta charset=\"utf-8\">\n"
    "<title>framescope report</title>\n"
    "<style>\n"
    "body { font: 14px/1.45 sans-serif; color: #222; max-width: 1000px; margin: 1.5em auto;\n"
    "       padding: 0 1em; }\n"
    "h1 { font-size: 1.35em; margin-bottom: .2em; }\n"
    "h2 { font-size: 1.1em; margin: 1.8em 0 .4em; }\n"
    "h3 { font-size: 1em; margin: 1.2em 0 .3em; }\n"
    ".verdict { font-size: 1.1em; padding: .6em .9em; background: #f4f4f4;\n"
    "           border-left: 4px solid #c60; }\n"
    ".note { color: #666; font-size: .9em; }\n"
    "table { border-collapse: collapse; }\n"
    "th, td { padding: 2px 10px; border-bottom: 1px solid #e4e4e4; text-align: right; }\n"
    "th:first-child, td:first-child, th.text, td.text { text-align: left; }\n"
    "td.path { text-align: left; font-family: monospace; white-space: pre; }\n"
    "svg { display: block; border: 1px solid #ddd; background: #fff; }\n"
    "svg text { font-size: 11px; fill: #444; }\n"
    ".legend span { display: inline-block; margin-right: 1.2em; }\n"
    ".swatch { display: inline-block; width: .8em; height: .8em; margin-right: .3em;\n"
    "          vertical-align: -1px; }\n"
    "#status { color: #888; font-size: .85em; }\n"
    "details { margin: .2em 0 .5em 1em; }\n"
    "summary { cursor: pointer; color: #555; }\n"
    "</style>\n"
    "</head>\n"
    "<body>\n"
    "<p id=\"status\">rendering</p>\n"
    "<script>\n"
    "// Any error while rendering is shown here, so that a broken report says so.\n"
    "window.onerror = function (message, source, line) {\n"
    "    var text = 'error: ' + message + ' (line ' + line + ')';\n"
    "    document.getElementById('status').textContent = text;\n"
    "    document.body.dataset.error = 'yes';\n"
    "};\n"
    "</script>\n"
    "<noscript>This report draws its tables and charts with JavaScript.</noscript>\n"
    "<div id=\"report\"></div>\n"
    "<script type=\"application/json\" id=\"data\">\n";

static const char report_page_tail[] =
    "</script>\n"
    "<script>\n"
    "(function () {\n"
    "    'use strict';\n"
    "    var data = JSON.parse(document.getElementById('data').textContent);\n"
    "    var report = document.getElementById('report');\n"
    "    var SVG_NS = 'http://www.w3.org/2000/svg';\n"
    "    var PARTS = ['cpu', 'acquire', 'present', 'present_wait', 'fence', 'semaphore', 'idle',\n"
    "                 'cap'];\n"
    "    var GPU_COLOR = '#6a3d9a';\n"
    "    var COLORS = {\n"
    "        cpu: '#4c78a8', acquire: '#f58518', present: '#e45756', present_wait: '#eeca3b',\n"
    "        fence: '#72b7b2', semaphore: '#54a24b', idle: '#b279a2', cap: '#9d755d'\n"
    "    };\n"
    "\n"
    "    function add(parent, tag, text, className) {\n"
    "        var node = document.createElement(tag);\n"
    "        if (text !== undefined)\n"
    "            node.textContent = text;\n"
    "        if (className)\n"
    "            node.className = className;\n"
    "        parent.appendChild(node);\n"
    "        return node;\n"
    "    }\n"
    "\n"
    "    function svgAdd(parent, tag, attributes, text) {\n"
    "        var node = document.createElementNS(SVG_NS, tag);\n"
    "        for (var name in attributes)\n"
    "            node.setAttribute(name, attributes[name]);\n"
    "        if (text !== undefined)\n"
    "            node.textContent = text;\n"
    "        parent.appendChild(node);\n"
    "        return node;\n"
    "    }\n"
    "\n"
    "    function fixed(x, digits) {\n"
    "        return Number(x).toFixed(digits);\n"
    "    }\n"
    "\n"
    "    // A round step that cuts range into about four: 1, 2, 2.5 or 5 times a power of ten.\n"
    "    function tickStep(range) {\n"
    "        var raw = range > 0 ? range / 4 : 1;\n"
    "        var magnitude = Math.pow(10, Math.floor(Math.log10(raw)));\n"
    "        var multiples = [1, 2, 2.5, 5, 10];\n"
    "        for (var i = 0; i < multiples.length; i++) {\n"
    "            if (multiples[i] * magnitude >= raw)\n"
    "                return multiples[i] * magnitude;\n"
    "        }\n"
    "        return 10 * magnitude;\n"
    "    }\n"
    "\n"
    "    function tickLabel(value) {\n"
    "        return String(Number(value.toFixed(6)));\n"
    "    }\n"
    "\n"
    "    // Runs can hold more values than a function call takes arguments.\n"
    "    function maximum(values) {\n"
    "        return values.reduce(function (most, v) { return v > most ? v : most; }, 0);\n"
    "    }\n"
    "\n"
    "    function minimum(values) {\n"
    "        return values.reduce(function (least, v) {\n"
    "            return v < least ? v : least;\n"
    "        }, Infinity);\n"
    "    }\n"
    "\n"
    "    // items: [label, colour] pairs; parent: the report when not given.\n"
    "    function legend(items, parent) {\n"
    "        var box = add(parent || report, 'p', undefined, 'legend');\n"
    "        items.forEach(function (item) {\n"
    "            var entry = add(box, 'span');\n"
    "            add(entry, 'span', undefined, 'swatch').style.background = item[1];\n"
    "            entry.appendChild(document.createTextNode(item[0]));\n"
    "        });\n"
    "    }\n"
    "\n"
    "    // An empty chart with axes from about xMin to xMax and 0 to yMax, widened to round\n"
    "    // ticks; returns its scales. options, all optional: parent (the report), heading\n"
    "    // ('h2'), xExact (the x axis from xMin to xMax, not widened), yTicks (a fixed scale:\n"
    "    // these ticks, the first at the bottom and the last at the top, yMax unused), yFormat\n"
    "    // (how a y tick reads) and id (the svg's data-chart). The svg states its x axis in\n"
    "    // data-x-min, data-x-max and data-x-label, so that a reader can see they line up.\n"
    "    function chart(title, xMin, xMax, yMax, xLabel, yLabel, options) {\n"
    "        options = options || {};\n"
    "        var parent = options.parent || report;\n"
    "        add(parent, options.heading || 'h2', title);\n"
    "        var width = 960, height = 260, left = 55, right = 12, top = 10, bottom = 38;\n"
    "        var plotWidth = width - left - right, plotHeight = height - top - bottom;\n"
    "        var xStep = tickStep(xMax - xMin), yStep = tickStep(yMax);\n"
    "        if (!options.xExact) {\n"
    "            xMin = Math.floor(xMin / xStep) * xStep;\n"
    "            xMax = Math.max(xMin + xStep, Math.ceil(xMax / xStep) * xStep);\n"
    "        }\n"
    "        var yTicks = options.yTicks;\n"
    "        if (!yTicks) {\n"
    "            yMax = Math.max(yStep, Math.ceil(yMax / yStep) * yStep);\n"
    "            yTicks = [];\n"
    "            for (var yValue = 0; yValue <= yMax + yStep / 2; yValue += yStep)\n"
    "                yTicks.push(yValue);\n"
    "        }\n"
    "        var yMin = yTicks[0];\n"
    "        yMax = yTicks[yTicks.length - 1];\n"
    "        var yFormat = options.yFormat || tickLabel;\n"
    "        var svg = svgAdd(parent, 'svg', {\n"
    "            width: width, height: height, viewBox: '0 0 ' + width + ' ' + height,\n"
    "            'data-x-min': xMin, 'data-x-max': xMax, 'data-x-label': xLabel\n"
    "        });\n"
    "        if (options.id)\n"
    "            svg.setAttribute('data-chart', options.id);\n"
    "        var scale = {\n"
    "            svg: svg,\n"
    "            x: function (v) { return left + plotWidth * (v - xMin) / (xMax - xMin); },\n"
    "            y: function (v) {\n"
    "                var inside = Math.max(yMin, Math.min(v, yMax));\n"
    "                return top + plotHeight - plotHeight * (inside - yMin) / (yMax - yMin);\n"
    "            },\n"
    "            bottom: top + plotHeight,\n"
    "            left: left,\n"
    "            right: width - right\n"
    "        };\n"
    "        yTicks.forEach(function (yValue) {\n"
    "            svgAdd(svg, 'line', { x1: left, x2: width - right, y1: scale.y(yValue),\n"
    "                                  y2: scale.y(yValue), stroke: '#eee' });\n"
    "            svgAdd(svg, 'text', { x: left - 5, y: scale.y(yValue) + 4,\n"
    "                                  'text-anchor': 'end' }, yFormat(yValue));\n"
    "        });\n"
    "        var xFirst = Math.ceil(xMin / xStep - 1e-9) * xStep;\n"
    "        for (var xValue = xFirst; xValue <= xMax + xStep * 1e-6; xValue += xStep) {\n"
    "            svgAdd(svg, 'text', { x: scale.x(xValue), y: scale.bottom + 14,\n"
    "                                  'text-anchor': 'middle' }, tickLabel(xValue));\n"
    "        }\n"
    "        svgAdd(svg, 'path', { stroke: '#888', fill: 'none',\n"
    "                              d: 'M' + left + ' ' + top + 'V' + scale.bottom + 'H' +\n"
    "                                 (width - right) });\n"
    "        svgAdd(svg, 'text', { x: left + plotWidth / 2, y: height - 5,\n"
    "                              'text-anchor': 'middle' }, xLabel);\n"
    "        var middle = top + plotHeight / 2;\n"
    "        svgAdd(svg, 'text', { x: 14, y: middle, 'text-anchor': 'middle',\n"
    "                              transform: 'rotate(-90 14 ' + middle + ')' }, yLabel);\n"
    "        return scale;\n"
    "    }\n"
    "\n"
    "    function renderSummary() {\n"
    "        add(report, 'h1', 'framescope: ' + data.app + ' (pid ' + data.pid + ')');\n"
    "        var driver = data.driver ? ', driver ' + data.driver : '';\n"
    "        add(report, 'p', data.device + driver, 'note');\n"
    "        if (!data.frames) {\n"
    "            add(report, 'p', 'No frames: nothing was presented and no frame was marked.',\n"
    "                'verdict');\n"
    "            return;\n"
    "        }\n"
    "        add(report, 'p', data.verdict + '-bound: ' + data.reason, 'verdict');\n"
    "        var f = data.frame_ms, b = data.budget_ms;\n"
    "        var shares = Object.keys(data.shares).map(function (v) {\n"
    "            return v + ' ' + fixed(100 * data.shares[v], 1) + '%';\n"
    "        });\n"
    "        var blocks = PARTS.slice(1).map(function (part) {\n"
    "            return part + ' ' + fixed(b[part], 3);\n"
    "        });\n"
    "        var rows = [\n"
    "            ['frames', data.frames + ' in ' + fixed(data.duration_s, 3) + ' s, ' +\n"
    "                       fixed(data.fps, 1) + ' fps'],\n"
    "            ['frame time', 'mean ' + fixed(f.mean, 3) + ', p50 ' + fixed(f.p50, 3) +\n"
    "                           ', p95 ' + fixed(f.p95, 3) + ', p99 ' + fixed(f.p99, 3) +\n"
    "                           ', max ' + fixed(f.max, 3) + ' ms'],\n"
    "            ['low fps', '1% ' + fixed(data.low_fps['1%'], 1) + ', 0.1% ' +\n"
    "                        fixed(data.low_fps['0.1%'], 1)],\n"
    "            ['budget per frame', 'cpu ' + fixed(b.cpu, 3) + ' | blocked: ' +\n"
    "                                 blocks.join(', ') + ' | gpu busy ' +\n"
    "                                 (data.gpu_timed ? fixed(b.gpu_busy, 3) : 'not timed') +\n"
    "                                 ' ms'],\n"
    "            ['frames by verdict', shares.join(', ')]\n"
    "        ];\n"
    "        var table = add(report, 'table');\n"
    "        rows.forEach(function (row) {\n"
    "            var tr = add(table, 'tr');\n"
    "            add(tr, 'th', row[0]);\n"
    "            add(tr, 'td', row[1], 'text');\n"
    "        });\n"
    "        if (data.surfaces > 1)\n"
    "            add(report, 'p', 'The charts show surface \"' + data.surface + '\", the one ' +\n"
    "                'with the most frames of ' + data.surfaces + '.', 'note');\n"
    "    }\n"
    "\n"
    "    // The run's time, shared by every chart over it so that they line up: from the first\n"
    "    // frame (or the first sample, before it) to the last frame's end or the last sample.\n"
    "    var TIME_LABEL = 'time since the first frame (s)';\n"
    "    function timeRange() {\n"
    "        var g = data.gauges, low = 0, high = g.frames.end_s;\n"
    "        [g.rss.t, g.descriptors.t, g.memory.t, g.memory.budget.t].forEach(function (t) {\n"
    "            if (t.length) {\n"
    "                low = Math.min(low, minimum(t));\n"
    "                high = Math.max(high, maximum(t));\n"
    "            }\n"
    "        });\n"
    "        return [low, high > low ? high : low + 1];\n"
    "    }\n"
    "    var TIME = timeRange();\n"
    "\n"
    "    // A chart over the run's time; options as chart()'s.\n"
    "    function timeChart(title, yMax, yLabel, options) {\n"
    "        options = options || {};\n"
    "        options.xExact = true;\n"
    "        return chart(title, TIME[0], TIME[1], yMax, TIME_LABEL, yLabel, options);\n"
    "    }\n"
    "\n"
    "    // Where column i ends, in seconds: where the next begins; the last, where the frames\n"
    "    // end.\n"
    "    function columnEnd(i) {\n"
    "        var columns = data.columns;\n"
    "        return i + 1 < columns.start.length ? columns.start[i + 1] / 1000\n"
    "                                            : data.gauges.frames.end_s;\n"
    "    }\n"
    "\n"
    "    function columnsNote(columns) {\n"
    "        var most = maximum(columns.frames_per_column);\n"
    "        if (most > 1)\n"
    "            add(report, 'p', 'Up to ' + most + ' consecutive frames per column.', 'note');\n"
    "    }\n"
    "\n"
    "    function renderFrameTimes() {\n"
    "        var columns = data.columns, count = columns.start.length;\n"
    "        if (!count)\n"
    "            return;\n"
    "        var end = columnEnd(count - 1);\n"
    "        var yMax = maximum(columns.frame_max) * 1.05;\n"
    "        var scale = timeChart('Frame time', yMax, 'ms', { id: 'frame-time' });\n"
    "        var grouped = maximum(columns.frames_per_column) > 1;\n"
    "        var series = grouped ? [['frame_max', '#c33', 'slowest frame of the column'],\n"
    "                                ['frame_mean', '#4c78a8', 'mean of the column']]\n"
    "                             : [['frame_max', '#4c78a8', 'frame time']];\n"
    "        series.forEach(function (entry) {\n"
    "            var points = columns[entry[0]].map(function (ms, i) {\n"
    "                var x = scale.x(columns.start[i] / 1000);\n"
    "                return fixed(x, 1) + ',' + fixed(scale.y(ms), 1);\n"
    "            });\n"
    "            svgAdd(scale.svg, 'polyline', { points: points.join(' '), fill: 'none',\n"
    "                                            stroke: entry[1], 'stroke-width': 1 });\n"
    "        });\n"
    "        [['p50', data.frame_ms.p50], ['p99', data.frame_ms.p99]].forEach(function (line) {\n"
    "            var y = scale.y(line[1]);\n"
    "            svgAdd(scale.svg, 'line', { x1: scale.x(0), x2: scale.x(end),\n"
    "                                        y1: y, y2: y,\n"
    "                                        stroke: '#999', 'stroke-dasharray': '4 3' });\n"
    "            svgAdd(scale.svg, 'text', { x: scale.x(end) - 4, y: y - 3,\n"
    "                                        'text-anchor': 'end' }, line[0]);\n"
    "        });\n"
    "        legend(series.map(function (entry) { return [entry[2], entry[1]]; }));\n"
    "        columnsNote(columns);\n"
    "    }\n"
    "\n"
    "    // The frame split into the CPU part and its waits, stacked (they add up to the frame),\n"
    "    // with the GPU busy time drawn over them as a line: it overlaps them rather than adding\n"
    "    // to them, and a GPU-bound run shows it at the top of the stack.\n"
    "    function renderBudget() {\n"
    "        var columns = data.columns, count = columns.start.length;\n"
    "        if (!count)\n"
    "            return;\n"
    "        var gpu = columns.gpu_busy.filter(function (v) { return v !== null; });\n"
    "        var yMax = Math.max(maximum(columns.frame_mean), maximum(gpu)) * 1.05;\n"
    "        var scale = timeChart('Where each frame went (cpu + blocks = frame; GPU busy ' +\n"
    "                              'over them)', yMax, 'ms per frame', { id: 'budget' });\n"
    "        var below = columns.start.map(function () { return 0; });\n"
    "        PARTS.forEach(function (part) {\n"
    "            var values = columns.budget[part];\n"
    "            var top = values.map(function (v, i) { return below[i] + v; });\n"
    "            if (!values.some(function (v) { return v > 0; }))\n"
    "                return;\n"
    "            var path = '';\n"
    "            for (var i = 0; i < count; i++)\n"
    "                path += (i ? 'L' : 'M') + fixed(scale.x(columns.start[i] / 1000), 1) + ' ' +\n"
    "                        fixed(scale.y(top[i]), 1) + 'H' + fixed(scale.x(columnEnd(i)), 1);\n"
    "            for (var j = count - 1; j >= 0; j--)\n"
    "                path += 'L' + fixed(scale.x(columnEnd(j)), 1) + ' ' +\n"
    "                        fixed(scale.y(below[j]), 1) + 'H' +\n"
    "                        fixed(scale.x(columns.start[j] / 1000), 1);\n"
    "            svgAdd(scale.svg, 'path', { d: path + 'Z', fill: COLORS[part] });\n"
    "            below = top;\n"
    "        });\n"
    "        var items = PARTS.map(function (part) { return [part, COLORS[part]]; });\n"
    "        if (gpu.length) {\n"
    "            // Steps like the stack's, broken where a column had no GPU-timed frame.\n"
    "            var line = '', drawing = false;\n"
    "            columns.gpu_busy.forEach(function (ms, i) {\n"
    "                if (ms === null) {\n"
    "                    drawing = false;\n"
    "                    return;\n"
    "                }\n"
    "                var y = fixed(scale.y(ms), 1);\n"
    "                line += (drawing ? 'L' : 'M') + fixed(scale.x(columns.start[i] / 1000), 1) +\n"
    "                        ' ' + y + 'H' + fixed(scale.x(columnEnd(i)), 1);\n"
    "                drawing = true;\n"
    "            });\n"
    "            svgAdd(scale.svg, 'path', { d: line, fill: 'none', stroke: GPU_COLOR,\n"
    "                                        'stroke-width': 2, 'data-series': 'gpu_busy' });\n"
    "            items.push(['GPU busy', GPU_COLOR]);\n"
    "        }\n"
    "        legend(items);\n"
    "        if (!gpu.length)\n"
    "            add(report, 'p', 'The GPU\\'s work was not timed in this run: no GPU busy ' +\n"
    "                'line.', 'note');\n"
    "        columnsNote(columns);\n"
    "    }\n"
    "\n"
    "    function renderHistogram() {\n"
    "        var intervals = data.presented_intervals_ms;\n"
    "        if (!intervals.length) {\n"
    "            add(report, 'h2', 'Presented intervals');\n"
    "            add(report, 'p', 'No two frames were shown with presentation feedback: ' +\n"
    "                'nothing to draw.', 'note');\n"
    "            return;\n"
    "        }\n"
    "        var longest = maximum(intervals);\n"
    "        var steps = [0.1, 0.25, 0.5, 1, 2, 2.5, 5, 10, 20, 25, 50, 100, 250, 500, 1000];\n"
    "        var width = steps[steps.length - 1];\n"
    "        for (var s = 0; s < steps.length; s++) {\n"
    "            if (longest / steps[s] <= 60) {\n"
    "                width = steps[s];\n"
    "                break;\n"
    "            }\n"
    "        }\n"
    "        var bins = [];\n"
    "        for (var b = 0; b <= Math.floor(longest / width); b++)\n"
    "            bins.push(0);\n"
    "        intervals.forEach(function (ms) { bins[Math.floor(ms / width)]++; });\n"
    "        var first = Math.floor(minimum(intervals) / width);\n"
    "        var scale = chart('Presented intervals (' + intervals.length + ', ' + width +\n"
    "                          ' ms bins)', first * width, bins.length * width, maximum(bins),\n"
    "                          'time between two frames shown (ms)', 'frames');\n"
    "        bins.forEach(function (n, i) {\n"
    "            if (!n)\n"
    "                return;\n"
    "            var x = scale.x(i * width), y = scale.y(n);\n"
    "            var barWidth = Math.max(1, scale.x((i + 1) * width) - x - 1);\n"
    "            svgAdd(scale.svg, 'rect', { x: x + 0.5, y: y, width: barWidth,\n"
    "                                        height: scale.bottom - y, fill: '#4c78a8' });\n"
    "        });\n"
    "    }\n"
    "\n"
    "    // The gauges' colours: the CPU's and the GPU's are the budget chart's, and no other\n"
    "    // gauge shares them or a block's, so a colour means one thing on the whole page.\n"
    "    var GAUGE_COLORS = {\n"
    "        fps: '#555', cpu: COLORS.cpu, gpu: GPU_COLOR, rss: '#bc7a00', memory: '#2a9d8f',\n"
    "        descriptors: '#8c564b'\n"
    "    };\n"
    "    var GIB = 1073741824, MIB = 1048576;\n"
    "\n"
    "    function bytesText(bytes) {\n"
    "        return bytes >= GIB ? fixed(bytes / GIB, 1) + ' GiB'\n"
    "                            : fixed(bytes / MIB, 1) + ' MiB';\n"
    "    }\n"
    "\n"
    "    // The unit a byte gauge's axis counts in: [divisor, name].\n"
    "    function bytesUnit(ceiling) {\n"
    "        return ceiling >= GIB ? [GIB, 'GiB'] : [MIB, 'MiB'];\n"
    "    }\n"
    "\n"
    "    // Three significant digits: a quarter of a ceiling is rarely round.\n"
    "    function gaugeTick(value) {\n"
    "        return String(Number(value.toPrecision(3)));\n"
    "    }\n"
    "\n"
    "    // One gauge in its own box (#gauge-<id>, data-floor and data-ceiling in the series'\n"
    "    // unit): a graph over the run's time from 0 to its ceiling, in quarters, that never\n"
    "    // scales to what it holds; or, given an axis, over that range in its steps (the run's\n"
    "    // own range, for what has no ceiling). What passes the ceiling is drawn at it, and a\n"
    "    // note says how far it went (data-over). The first series is filled to the floor, so\n"
    "    // that a reading near it still shows. spec: id, title, ceiling, ceilingLine (false: a\n"
    "    // series draws it), axis ({min, max, step}, in place of the ceiling), marks ([value,\n"
    "    // label] lines across), unit, divisor (values over it give the axis's unit), text (a\n"
    "    // value as the note gives it), note, empty (a sentence: nothing to draw), series:\n"
    "    // [{t, v, label, color, fill, dash}], v with nulls where unknown.\n"
    "    function gauge(section, spec) {\n"
    "        var box = add(section, 'div', undefined, 'gauge');\n"
    "        box.id = 'gauge-' + spec.id;\n"
    "        if (spec.empty) {\n"
    "            box.dataset.state = 'empty';\n"
    "            add(box, 'h3', spec.title);\n"
    "            add(box, 'p', spec.empty, 'note');\n"
    "            return;\n"
    "        }\n"
    "        box.dataset.state = 'drawn';\n"
    "        var divisor = spec.divisor || 1;\n"
    "        var most = 0;\n"
    "        spec.series.forEach(function (s) {\n"
    "            most = Math.max(most, maximum(s.v) / divisor);\n"
    "        });\n"
    "        var ticks;\n"
    "        if (spec.axis) {\n"
    "            ticks = [];\n"
    "            var steps = Math.round((spec.axis.max - spec.axis.min) / spec.axis.step);\n"
    "            for (var k = 0; k <= steps; k++)\n"
    "                ticks.push((spec.axis.min + k * spec.axis.step) / divisor);\n"
    "            box.dataset.floor = spec.axis.min;\n"
    "            box.dataset.ceiling = spec.axis.max;\n"
    "        } else {\n"
    "            var top = spec.ceiling / divisor;\n"
    "            if (!(top > 0))\n"
    "                top = most > 0 ? most : 1;\n"
    "            ticks = [0, 1, 2, 3, 4].map(function (quarter) { return top * quarter / 4; });\n"
    "            box.dataset.floor = 0;\n"
    "            box.dataset.ceiling = top * divisor;\n"
    "        }\n"
    "        var ceiling = ticks[ticks.length - 1];\n"
    "        var scale = timeChart(spec.title, 0, spec.unit,\n"
    "                              { parent: box, heading: 'h3', yTicks: ticks,\n"
    "                                yFormat: gaugeTick, id: 'gauge-' + spec.id });\n"
    "        spec.series.forEach(function (s) {\n"
    "            var runs = [], points = [];\n"
    "            s.t.forEach(function (t, i) {\n"
    "                if (s.v[i] === null) {\n"
    "                    if (points.length)\n"
    "                        runs.push(points);\n"
    "                    points = [];\n"
    "                    return;\n"
    "                }\n"
    "                points.push([fixed(scale.x(t), 1), fixed(scale.y(s.v[i] / divisor), 1)]);\n"
    "            });\n"
    "            if (points.length)\n"
    "                runs.push(points);\n"
    "            runs.forEach(function (run) {\n"
    "                var text = run.map(function (point) { return point.join(','); }).join(' ');\n"
    "                if (s.fill) {\n"
    "                    var floor = fixed(scale.bottom, 1);\n"
    "                    var down = run[run.length - 1][0] + ',' + floor;\n"
    "                    svgAdd(scale.svg, 'polygon', {\n"
    "                        points: run[0][0] + ',' + floor + ' ' + text + ' ' + down,\n"
    "                        fill: s.color, 'fill-opacity': 0.25\n"
    "                    });\n"
    "                }\n"
    "                if (run.length === 1) {\n"
    "                    svgAdd(scale.svg, 'circle', { cx: run[0][0], cy: run[0][1], r: 2,\n"
    "                                                  fill: s.color });\n"
    "                    return;\n"
    "                }\n"
    "                var line = { points: text, fill: 'none', stroke: s.color,\n"
    "                             'stroke-width': 1.5 };\n"
    "                if (s.dash)\n"
    "                    line['stroke-dasharray'] = '5 3';\n"
    "                svgAdd(scale.svg, 'polyline', line);\n"
    "            });\n"
    "        });\n"
    "        var marks = (spec.marks || []).slice();\n"
    "        if (!spec.axis && spec.ceilingLine !== false)\n"
    "            marks.push([ceiling * divisor, '']);\n"
    "        marks.forEach(function (mark) {\n"
    "            var value = mark[0] / divisor;\n"
    "            if (value < ticks[0] || value > ceiling)\n"
    "                return;\n"
    "            var y = scale.y(value);\n"
    "            svgAdd(scale.svg, 'line', { x1: scale.left, x2: scale.right, y1: y, y2: y,\n"
    "                                        stroke: '#999', 'stroke-dasharray': '4 3' });\n"
    "            if (mark[1])\n"
    "                svgAdd(scale.svg, 'text', { x: scale.right - 4, y: y - 3,\n"
    "                                            'text-anchor': 'end' }, mark[1]);\n"
    "        });\n"
    "        legend(spec.series.map(function (s) { return [s.label, s.color]; }), box);\n"
    "        if (most > ceiling) {\n"
    "            box.dataset.over = 'yes';\n"
    "            add(box, 'p', 'Past the ceiling, drawn at it: up to ' +\n"
    "                spec.text(most * divisor) + '.', 'note');\n"
    "        }\n"
    "        if (spec.note)\n"
    "            add(box, 'p', spec.note, 'note');\n"
    "    }\n"
    "\n"
    "    function frameGauges(g) {\n"
    "        var f = g.frames;\n"
    "        var none = 'No frames: nothing was presented and no frame was marked.';\n"
    "        if (!f.start_s.length)\n"
    "            return [{ id: 'fps', title: 'Frame rate', empty: none },\n"
    "                    { id: 'cpu', title: 'CPU part of each frame', empty: none },\n"
    "                    { id: 'gpu', title: 'GPU busy in each frame', empty: none }];\n"
    "        // A column of several frames draws its slowest (busiest) one: a graph is looked at\n"
    "        // for its spikes, which a mean irons out.\n"
    "        var most = maximum(data.columns.frames_per_column);\n"
    "        var up = ' of up to ' + most + ' frames)';\n"
    "        var which = most > 1 ? ' (each point the slowest' + up : '';\n"
    "        var busiest = most > 1 ? ' (each point the busiest' + up : '';\n"
    "        var fps = { id: 'fps', unit: 'fps',\n"
    "                    text: function (v) { return fixed(v, 0) + ' fps'; },\n"
    "                    series: [{ t: f.start_s, v: most > 1 ? f.fps_low : f.fps,\n"
    "                               color: GAUGE_COLORS.fps, fill: true,\n"
    "                               label: 'frame rate' + which }] };\n"
    "        // No ceiling of its own: a refresh rate is one for a run that waits for the display\n"
    "        // and none for one that does not (a 400 fps run is a flat block against 60 Hz).\n"
    "        // The axis is the run's range, its slowest frame's rate to its fastest's, and the\n"
    "        // refresh a dashed line where it falls inside.\n"
    "        var hz = String(Number(g.refresh_hz.toFixed(2)));\n"
    "        var refresh = g.refresh_hz > 0 ? '; the display refreshes at ' + hz + ' Hz' : '';\n"
    "        if (f.axis) {\n"
    "            fps.axis = f.axis;\n"
    "            fps.title = 'Frame rate, on the run\\'s own range (' + gaugeTick(f.axis.min) +\n"
    "                        ' to ' + gaugeTick(f.axis.max) + ' fps, from its slowest ' +\n"
    "                        'frame to its fastest' + refresh + ')';\n"
    "            if (g.refresh_hz > 0)\n"
    "                fps.marks = [[g.refresh_hz, hz + ' Hz refresh']];\n"
    "        } else {\n"
    "            var fastest = maximum(f.fps), step = tickStep(fastest / 2.5);\n"
    "            fps.ceiling = Math.max(step, Math.ceil(fastest / step) * step);\n"
    "            fps.title = 'Frame rate, of ' + fps.ceiling + ' fps (the most seen, rounded ' +\n"
    "                        'up)';\n"
    "        }\n"
    "        var cpu = { id: 'cpu', unit: '% of the frame', ceiling: 100,\n"
    "                    title: 'CPU part of each frame (outside waits in Vulkan), of 100%',\n"
    "                    series: [{ t: f.start_s, v: most > 1 ? f.cpu_pct_max : f.cpu_pct,\n"
    "                               color: GAUGE_COLORS.cpu, fill: true,\n"
    "                               label: 'CPU part' + busiest }] };\n"
    "        var gpu = { id: 'gpu', unit: '% of the frame', ceiling: 100,\n"
    "                    title: 'GPU busy in each frame, of 100%',\n"
    "                    series: [{ t: f.start_s, v: most > 1 ? f.gpu_pct_max : f.gpu_pct,\n"
    "                               color: GAUGE_COLORS.gpu, fill: true,\n"
    "                               label: 'GPU busy' + busiest }] };\n"
    "        if (!f.gpu_pct.some(function (v) { return v !== null; }))\n"
    "            gpu.empty = 'The GPU\\'s work was not timed in this run.';\n"
    "        cpu.text = gpu.text = function (v) { return fixed(v, 1) + '%'; };\n"
    "        return [fps, cpu, gpu];\n"
    "    }\n"
    "\n"
    "    function rssGauge(g) {\n"
    "        var rss = { id: 'rss', title: 'RSS' };\n"
    "        if (!g.rss.t.length) {\n"
    "            rss.empty = 'The resident set was not read (the kernel sampler did not run).';\n"
    "            return rss;\n"
    "        }\n"
    "        // No ceiling of its own either: against the machine's RAM, a process's line sits\n"
    "        // at 0. The axis is the process's own range, lowest to highest sample.\n"
    "        var peak = maximum(g.rss.bytes), axis = g.rss.axis;\n"
    "        rss.axis = axis;\n"
    "        rss.text = bytesText;\n"
    "        rss.title = 'RSS, on the process\\'s own range (' + bytesText(axis.min) + ' to ' +\n"
    "                    bytesText(axis.max) + ')';\n"
    "        var unit = bytesUnit(axis.max);\n"
    "        rss.divisor = unit[0];\n"
    "        rss.unit = unit[1];\n"
    "        var ram = g.ram_bytes > 0 ? ', ' + fixed(100 * peak / g.ram_bytes, 1) +\n"
    "                                    '% of the ' + bytesText(g.ram_bytes) + ' RAM' : '';\n"
    "        rss.series = [{ t: g.rss.t, v: g.rss.bytes, color: GAUGE_COLORS.rss, fill: true,\n"
    "                        label: 'resident set (lowest ' + bytesText(minimum(g.rss.bytes)) +\n"
    "                               ', peak ' + bytesText(peak) + ram + ')' }];\n"
    "        return rss;\n"
    "    }\n"
    "\n"
    "    function memoryGauge(g) {\n"
    "        var m = g.memory, budget = m.budget;\n"
    "        var memory = { id: 'memory', title: 'Device memory' };\n"
    "        if (!m.t.length && !budget.t.length) {\n"
    "            memory.empty = 'The app allocated no device memory (vkAllocateMemory).';\n"
    "            return memory;\n"
    "        }\n"
    "        var heap = m.heap !== undefined ? 'device ' + m.device + ' heap ' + m.heap : '';\n"
    "        var peak = Math.max(maximum(m.live), maximum(budget.usage));\n"
    "        memory.series = [];\n"
    "        if (m.t.length)\n"
    "            memory.series.push({ t: m.t, v: m.live, color: GAUGE_COLORS.memory, fill: true,\n"
    "                                 label: 'allocated and not freed' +\n"
    "                                        (m.all_heaps ? ', every heap' : '') + ' (peak ' +\n"
    "                                        bytesText(maximum(m.live)) + ')' });\n"
    "        if (budget.t.length) {\n"
    "            memory.ceiling = maximum(budget.budget);\n"
    "            memory.title = 'Device memory, of ' + bytesText(memory.ceiling) + ' budget (' +\n"
    "                           heap + ')';\n"
    "            memory.ceilingLine = false;\n"
    "            memory.series.push({ t: budget.t, v: budget.usage, color: GAUGE_COLORS.memory,\n"
    "                                 dash: true, label: 'usage (VK_EXT_memory_budget)' });\n"
    "            memory.series.push({ t: budget.t, v: budget.budget, color: '#999', dash: true,\n"
    "                                 label: 'budget' });\n"
    "        } else if (m.heap_size > 0) {\n"
    "            memory.ceiling = m.heap_size;\n"
    "            memory.title = 'Device memory, of the ' + bytesText(m.heap_size) + ' heap (' +\n"
    "                           heap + (m.device_local ? ', device-local' : '') +\n"
    "                           '; no budget was read)';\n"
    "        } else {\n"
    "            memory.ceiling = peak;\n"
    "            memory.title = 'Device memory, of its peak ' + bytesText(peak) +\n"
    "                           ' (no heap size or budget known)';\n"
    "        }\n"
    "        if (m.all_heaps && heap)\n"
    "            memory.note = 'Allocations count every heap; the ceiling is ' + heap + '\\'s.';\n"
    "        var unit = bytesUnit(memory.ceiling);\n"
    "        memory.text = bytesText;\n"
    "        memory.divisor = unit[0];\n"
    "        memory.unit = unit[1];\n"
    "        return memory;\n"
    "    }\n"
    "\n"
    "    function descriptorGauge(g) {\n"
    "        var d = g.descriptors, sets = { id: 'descriptors', title: 'Descriptor sets' };\n"
    "        if (!d.t.length) {\n"
    "            sets.empty = 'No descriptor pool was live while the sampler ran.';\n"
    "            return sets;\n"
    "        }\n"
    "        sets.ceiling = maximum(d.capacity);\n"
    "        sets.title = 'Descriptor sets, of ' + sets.ceiling + ' (the most the live pools ' +\n"
    "                     'held room for)';\n"
    "        sets.ceilingLine = false;\n"
    "        sets.unit = 'sets';\n"
    "        sets.text = function (n) { return n + ' sets'; };\n"
    "        sets.series = [\n"
    "            { t: d.t, v: d.sets, color: GAUGE_COLORS.descriptors, fill: true,\n"
    "              label: 'sets allocated (peak ' + maximum(d.sets) + ')' },\n"
    "            { t: d.t, v: d.capacity, color: '#999', dash: true,\n"
    "              label: 'capacity (maxSets of the live pools)' }\n"
    "        ];\n"
    "        return sets;\n"
    "    }\n"
    "\n"
    "    function renderGauges() {\n"
    "        var g = data.gauges;\n"
    "        var section = add(report, 'section');\n"
    "        section.id = 'gauges';\n"
    "        add(section, 'h2', 'Gauges');\n"
    "        add(section, 'p', 'The frame rate and the RSS have no natural ceiling: each is ' +\n"
    "            'drawn over the run\\'s own range, named in its title, and its axis does not ' +\n"
    "            'start at 0. The others are drawn up to their natural ceiling, named in the ' +\n"
    "            'title, whatever they hold: the space above a line is headroom. What passes ' +\n"
    "            'a ceiling is drawn at it, and a note under the graph says how far it went.',\n"
    "            'note');\n"
    "        var specs = frameGauges(g).concat([rssGauge(g), memoryGauge(g),\n"
    "                                           descriptorGauge(g)]);\n"
    "        specs.forEach(function (spec) { gauge(section, spec); });\n"
    "    }\n"
    "\n"
    "    // RFC 4180 fields: quoted fields may hold commas and doubled quotes.\n"
    "    function parseCsv(text) {\n"
    "        var rows = [], row = [], field = '', quoted = false;\n"
    "        for (var i = 0; i < text.length; i++) {\n"
    "            var c = text[i];\n"
    "            if (quoted && c === '\"' && text[i + 1] === '\"') {\n"
    "                field += '\"';\n"
    "                i++;\n"
    "            } else if (c === '\"') {\n"
    "                quoted = !quoted;\n"
    "            } else if (!quoted && c === ',') {\n"
    "                row.push(field);\n"
    "                field = '';\n"
    "            } else if (!quoted && c === '\\n') {\n"
    "                row.push(field);\n"
    "                rows.push(row);\n"
    "                row = [];\n"
    "                field = '';\n"
    "            } else {\n"
    "                field += c;\n"
    "            }\n"
    "        }\n"
    "        if (field !== '' || row.length) {\n"
    "            row.push(field);\n"
    "            rows.push(row);\n"
    "        }\n"
    "        return rows;\n"
    "    }\n"
    "\n"
    "    function renderHitches() {\n"
    "        add(report, 'h2', 'Hitches');\n"
    "        if (!data.hitches.length) {\n"
    "            add(report, 'p', 'No hitches: no frame was twice the median of its neighbours '\n"
    "                + 'and 4 ms over it.', 'note');\n"
    "            return;\n"
    "        }\n"
    "        var groups = data.hitch_groups;\n"
    "        add(report, 'p', data.hitches.length + ' hitches, one row per cause, the cause ' +\n"
    "            'with the longest frame first; open a row for its hitches, the worst first.',\n"
    "            'note');\n"
    "        var table = add(report, 'table');\n"
    "        table.id = 'hitch-groups';\n"
    "        var head = add(table, 'tr');\n"
    "        var words = { cause: true, where: true, thread: true, evidence: true };\n"
    "        ['cause', 'hitches', 'worst frame (ms)', 'over its neighbours (ms)', 'where',\n"
    "         'thread', 'evidence'].forEach(function (name) {\n"
    "            add(head, 'th', name, words[name] ? 'text' : undefined);\n"
    "        });\n"
    "        groups.forEach(function (group) {\n"
    "            var worst = data.hitches[group.hitches[0]];\n"
    "            var tr = add(table, 'tr', undefined, 'hitch-group');\n"
    "            tr.dataset.cause = group.cause;\n"
    "            tr.dataset.count = group.count;\n"
    "            add(tr, 'td', group.words, 'text');\n"
    "            add(tr, 'td', String(group.count));\n"
    "            add(tr, 'td', worst.frame_ms.toFixed(1));\n"
    "            add(tr, 'td', '+' + worst.excess_ms.toFixed(1));\n"
    "            add(tr, 'td', 'frame ' + worst.frame + ' at ' + worst.at_s.toFixed(3) + ' s',\n"
    "                'text');\n"
    "            add(tr, 'td', worst.thread, 'text');\n"
    "            add(tr, 'td', worst.evidence, 'text');\n"
    "            if (group.count > 1)\n"
    "                hitchList(add(add(table, 'tr'), 'td', undefined, 'text'), group);\n"
    "        });\n"
    "    }\n"
    "\n"
    "    // A group's hitches, worst first, folded away: at most HITCH_LIST of them, as the\n"
    "    // summary lists the worst few; summary.json and trace.json hold every one.\n"
    "    var HITCH_LIST = 50;\n"
    "    function hitchList(cell, group) {\n"
    "        cell.colSpan = 7;\n"
    "        var details = add(cell, 'details');\n"
    "        var shown = group.hitches.slice(0, HITCH_LIST);\n"
    "        add(details, 'summary', (shown.length < group.count ? 'the ' + shown.length +\n"
    "                                 ' worst of ' : 'all ') + group.count + ' ' + group.words +\n"
    "                                ' hitches');\n"
    "        var table = add(details, 'table');\n"
    "        var head = add(table, 'tr');\n"
    "        ['frame', 'at (s)', 'frame (ms)', 'over its neighbours (ms)', 'thread',\n"
    "         'evidence'].forEach(function (name) {\n"
    "            var text = name === 'thread' || name === 'evidence';\n"
    "            add(head, 'th', name, text ? 'text' : undefined);\n"
    "        });\n"
    "        shown.forEach(function (index) {\n"
    "            var h = data.hitches[index], tr = add(table, 'tr');\n"
    "            add(tr, 'td', String(h.frame));\n"
    "            add(tr, 'td', h.at_s.toFixed(3));\n"
    "            add(tr, 'td', h.frame_ms.toFixed(1));\n"
    "            add(tr, 'td', '+' + h.excess_ms.toFixed(1));\n"
    "            add(tr, 'td', h.thread, 'text');\n"
    "            add(tr, 'td', h.evidence, 'text');\n"
    "        });\n"
    "        if (shown.length < group.count)\n"
    "            add(details, 'p', (group.count - shown.length) + ' more, not listed: ' +\n"
    "                'summary.json and trace.json hold every hitch.', 'note');\n"
    "    }\n"
    "\n"
    "    function renderZones() {\n"
    "        add(report, 'h2', 'Zones');\n"
    "        var rows = parseCsv(data.zones_csv);\n"
    "        var header = rows.shift() || [];\n"
    "        if (!rows.length) {\n"
    "            add(report, 'p', 'No zones were recorded.', 'note');\n"
    "            return;\n"
    "        }\n"
    "        var at = {};\n"
    "        header.forEach(function (name, i) { at[name] = i; });\n"
    "        var shown = ['thread', 'path', 'calls', 'inclusive_ms', 'exclusive_ms', 'mean_ms',\n"
    "                     'max_ms'];\n"
    "        var table = add(report, 'table');\n"
    "        var head = add(table, 'tr');\n"
    "        shown.forEach(function (name) {\n"
    "            add(head, 'th', name, name === 'path' ? 'text' : undefined);\n"
    "        });\n"
    "        rows.forEach(function (row) {\n"
    "            var tr = add(table, 'tr');\n"
    "            shown.forEach(function (name) {\n"
    "                var value = row[at[name]];\n"
    "                if (name === 'path') {\n"
    "                    var depth = value.split('/').length - 1;\n"
    "                    var label = '  '.repeat(depth) + value.split('/').pop();\n"
    "                    add(tr, 'td', label, 'path').title = value;\n"
    "                } else if (name === 'thread') {\n"
    "                    // Threads share names (five called after the game): the id tells them\n"
    "                    // apart.\n"
    "                    var id = row[at['thread_id']];\n"
    "                    add(tr, 'td', id ? value + ' (tid ' + id + ')' : value, 'text');\n"
    "                } else {\n"
    "                    add(tr, 'td', value);\n"
    "                }\n"
    "            });\n"
    "        });\n"
    "    }\n"
    "\n"
    "    renderSummary();\n"
    "    renderFrameTimes();\n"
    "    renderBudget();\n"
    "    renderHistogram();\n"
    "    renderGauges();\n"
    "    renderHitches();\n"
    "    renderZones();\n"
    "    document.getElementById('status').textContent = 'rendered';\n"
    "    document.body.dataset.rendered = 'yes';\n"
    "})();\n"
    "</script>\n"
    "</body>\n"
    "</html>\n";

int html_write_report(FILE *f, const void *arg)
{
    fputs(report_page_head, f);
    int r = write_report_data(f, arg);
    fputs(report_page_tail, f);
    return r;
}
