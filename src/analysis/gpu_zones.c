#include "gpu_zones.h"

#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "emit.h"
#include "work.h"
#include "zones.h"

#define GPU_ZONE_TID 2000000

static const char *const untimed_names[GPU_ZONE_UNTIMED_COUNT] = {
    [GPU_ZONE_UNTIMED_SECONDARY] = "in secondary command buffers",
    [GPU_ZONE_UNTIMED_FULL] = "beyond the queries available",
    [GPU_ZONE_UNTIMED_UNBALANCED] = "begun and ended in different command buffers",
    [GPU_ZONE_UNTIMED_RESUBMITTED] = "in command buffers submitted again before read",
    [GPU_ZONE_UNTIMED_NAMES] = "beyond the name table",
    [GPU_ZONE_UNTIMED_NO_RESET] = ("where no query reset could be recorded (a transfer-only "
                                   "queue, or a first zone inside a resumed pass)"),
    [GPU_ZONE_UNTIMED_MULTIVIEW] = "labels inside multiview passes",
    [GPU_ZONE_UNTIMED_SIMULTANEOUS] = "in simultaneous-use runs that may overlap another",
    [GPU_ZONE_UNTIMED_UNSTAMPED] = ("passes begun unstamped (a CPU device) in command buffers "
                                    "not first in their submission"),
};

static int by_total(const void *a, const void *b)
{
    const struct gpu_zone_total *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns < y->total_ns ? 1 : -1;
    return strcmp(x->path, y->path);
}

struct gpu_zone_total *gpu_zones_totals(const struct recording *rec, unsigned *ret_count)
{
    unsigned names = rec->gpu_zone_name_count;
    *ret_count = 0;
    if (!names || !rec->gpu_zone_count)
        return NULL;
    struct gpu_zone_total *t = calloc(names, sizeof(*t));
    struct sorter_cursor c;
    if (!t || !sorter_cursor_open(&c, &rec->gpu_zones)) {
        free(t);
        return NULL;
    }
    const struct gpu_zone_span *s;
    while ((s = sorter_next(&c))) {
        if (s->name >= names)
            continue; /* a name published after its span was copied: ignored */
        struct gpu_zone_total *z = &t[s->name];
        double span_ns = recording_ns(rec, s->end - s->begin);
        int64_t ns = span_ns < (double)REPORT_NS_MAX ? (int64_t)span_ns : REPORT_NS_MAX;
        z->count++;
        z->total_ns = ns_sum(z->total_ns, ns);
        if (ns > z->max_ns)
            z->max_ns = ns;
        z->depth = s->depth;
        z->kind = s->kind;
    }
    sorter_cursor_close(&c);
    for (unsigned i = 0; i < names; i++)
        t[i].path = rec->gpu_zone_names[i];
    /* A path's children: the paths one level below it. */
    for (unsigned i = 0; i < names; i++) {
        const char *slash = strrchr(t[i].path, '/');
        if (!slash || !t[i].count)
            continue;
        size_t parent_len = (size_t)(slash - t[i].path);
        for (unsigned p = 0; p < names; p++)
            if (strlen(t[p].path) == parent_len && strncmp(t[p].path, t[i].path, parent_len) == 0)
                t[p].children_ns = ns_sum(t[p].children_ns, t[i].total_ns);
    }
    unsigned n = 0;
    for (unsigned i = 0; i < names; i++)
        if (t[i].count)
            t[n++] = t[i];
    qsort(t, n, sizeof(*t), by_total);
    *ret_count = n;
    return t;
}

static uint64_t untimed_total(const struct recording *rec)
{
    uint64_t sum = 0;
    for (unsigned k = 0; k < GPU_ZONE_UNTIMED_COUNT; k++)
        sum += rec->gpu_zones_untimed[k];
    return sum;
}

/* ---- pipeline statistics per pass ---- */

static const char *const stat_keys[PIPELINE_STATS] = {
    "ia_vertices", "ia_primitives", "vs_invocations", "clipping_invocations",
    "clipping_primitives", "fs_invocations", "cs_invocations",
};
static const char *const stat_names[PIPELINE_STATS] = {
    "vertices in", "primitives in", "vertex shader runs", "primitives into clipping",
    "primitives out of clipping", "fragment shader runs", "compute shader runs",
};

struct pass_stats_total {
    uint16_t name;
    uint64_t count;
    uint64_t values[PIPELINE_STATS];
};

/* Each pass path's statistics summed over the run, in name order; NULL when none. */
static struct pass_stats_total *pass_stats_totals(const struct recording *rec, unsigned *ret_n)
{
    *ret_n = 0;
    if (!rec->pass_stats_count || !rec->gpu_zone_name_count)
        return NULL;
    struct pass_stats_total *t = calloc(rec->gpu_zone_name_count, sizeof(*t));
    if (!t)
        return NULL;
    for (uint64_t i = 0; i < rec->pass_stats_count; i++) {
        const struct gpu_pass_stats *s = &rec->pass_stats[i];
        if (s->name >= rec->gpu_zone_name_count)
            continue;
        struct pass_stats_total *x = &t[s->name];
        x->count++;
        for (unsigned k = 0; k < PIPELINE_STATS; k++)
            x->values[k] += s->values[k];
    }
    unsigned n = 0;
    for (unsigned i = 0; i < rec->gpu_zone_name_count; i++)
        if (t[i].count) {
            t[n] = t[i];
            t[n++].name = (uint16_t)i;
        }
    *ret_n = n;
    return t;
}

static const char *pipeline_stats_state(const struct recording *rec)
{
    return rec->pipeline_stats == REC_PIPELINE_STATS_ON ? "on"
           : rec->pipeline_stats == REC_PIPELINE_STATS_UNSUPPORTED ? "unsupported" : "off";
}

static void pipeline_stats_write_text(FILE *f, const struct recording *rec)
{
    if (rec->pipeline_stats == REC_PIPELINE_STATS_OFF)
        return;
    if (rec->pipeline_stats == REC_PIPELINE_STATS_UNSUPPORTED) {
        fputs("  pipeline    statistics not read: no device offers pipelineStatisticsQuery\n", f);
        return;
    }
    unsigned n;
    struct pass_stats_total *t = pass_stats_totals(rec, &n);
    /* Per run of the pass: exact whatever share of frames GPU timing sampled. */
    for (unsigned i = 0; i < n && i < 6; i++) {
        fprintf(f, "  pipeline    %s:", rec->gpu_zone_names[t[i].name]);
        for (unsigned k = 0; k < PIPELINE_STATS; k++)
            if (t[i].values[k] || k == PIPELINE_STAT_IA_VERTICES)
                fprintf(f, "%s %.0f %s", k ? "," : "",
                        (double)t[i].values[k] / (double)t[i].count, stat_names[k]);
        fprintf(f, " per run (%llu runs measured)\n", (unsigned long long)t[i].count);
    }
    if (!n)
        fputs("  pipeline    statistics on, but no pass was measured\n", f);
    if (rec->pass_stats_skipped)
        fprintf(f, "  pipeline    %llu passes without statistics (secondary command buffers, "
                "several subpasses, multiview, or inside the app's own statistics query)\n",
                (unsigned long long)rec->pass_stats_skipped);
    free(t);
}

static void pipeline_stats_write_json(FILE *f, const struct recording *rec, uint64_t frames)
{
    unsigned n;
    struct pass_stats_total *t = pass_stats_totals(rec, &n);
    fprintf(f, "\"pipeline_stats\": {\"state\": \"%s\", \"skipped\": %llu, \"passes\": [",
            pipeline_stats_state(rec), (unsigned long long)rec->pass_stats_skipped);
    for (unsigned i = 0; i < n; i++) {
        fputs(i ? ", {\"path\": " : "{\"path\": ", f);
        json_write_string(f, rec->gpu_zone_names[t[i].name]);
        fprintf(f, ", \"measured\": %llu, \"total\": {", (unsigned long long)t[i].count);
        for (unsigned k = 0; k < PIPELINE_STATS; k++)
            fprintf(f, "%s\"%s\": %llu", k ? ", " : "", stat_keys[k],
                    (unsigned long long)t[i].values[k]);
        fputs("}, \"per_run\": {", f);
        for (unsigned k = 0; k < PIPELINE_STATS; k++)
            fprintf(f, "%s\"%s\": %.6f", k ? ", " : "", stat_keys[k],
                    (double)t[i].values[k] / (double)t[i].count);
        fputs("}, \"per_frame\": {", f);
        for (unsigned k = 0; k < PIPELINE_STATS; k++)
            fprintf(f, "%s\"%s\": %.6f", k ? ", " : "", stat_keys[k],
                    frames ? (double)t[i].values[k] / (double)frames : 0.0);
        fputs("}}", f);
    }
    fputs("]}", f);
    free(t);
}

void gpu_zones_write_text(FILE *f, const struct recording *rec, uint64_t frames)
{
    unsigned n;
    struct gpu_zone_total *t = gpu_zones_totals(rec, &n);
    if (n) {
        /* Per frame; a run with no frames (compute, offscreen tools) gets its totals. */
        fputs("  gpu zones  ", f);
        unsigned shown = n < 6 ? n : 6;
        for (unsigned i = 0; i < shown; i++)
            fprintf(f, "%s %s %.3f", i ? "," : "", t[i].path,
                    (double)t[i].total_ns / 1e6 / (double)(frames ? frames : 1));
        fprintf(f, " ms %s (GPU time by label and pass; %u of %u paths shown, "
                "%llu regions timed)\n", frames ? "per frame" : "in all (no frames)", shown, n,
                (unsigned long long)rec->gpu_zone_count);
    }
    free(t);
    if (untimed_total(rec)) {
        fputs("  gpu zones   not timed:", f);
        bool first = true;
        for (unsigned k = 0; k < GPU_ZONE_UNTIMED_COUNT; k++)
            if (rec->gpu_zones_untimed[k]) {
                fprintf(f, "%s %llu %s", first ? "" : ",",
                        (unsigned long long)rec->gpu_zones_untimed[k], untimed_names[k]);
                first = false;
            }
        fputc('\n', f);
    }
    pipeline_stats_write_text(f, rec);
}

void gpu_zones_write_json(FILE *f, const struct recording *rec, uint64_t frames)
{
    unsigned n;
    struct gpu_zone_total *t = gpu_zones_totals(rec, &n);
    fprintf(f, "  \"gpu_zones\": {\"regions\": %llu, \"untimed\": {",
            (unsigned long long)rec->gpu_zone_count);
    static const char *const keys[GPU_ZONE_UNTIMED_COUNT] = {
        "secondary", "full", "unbalanced", "resubmitted", "names", "no_reset", "multiview",
        "simultaneous_use", "unstamped",
    };
    for (unsigned k = 0; k < GPU_ZONE_UNTIMED_COUNT; k++)
        fprintf(f, "%s\"%s\": %llu", k ? ", " : "", keys[k],
                (unsigned long long)rec->gpu_zones_untimed[k]);
    fputs("}, \"zones\": [", f);
    for (unsigned i = 0; i < n; i++) {
        fputs(i ? ", {\"path\": " : "{\"path\": ", f);
        json_write_string(f, t[i].path);
        fprintf(f, ", \"kind\": \"%s\", \"depth\": %u, \"count\": %llu, \"total_ms\": %.6f, "
                "\"exclusive_ms\": %.6f, \"per_frame_ms\": %.6f, \"max_ms\": %.6f}",
                t[i].kind == GPU_ZONE_PASS ? "pass" : "label", t[i].depth,
                (unsigned long long)t[i].count, (double)t[i].total_ns / 1e6,
                (double)(t[i].total_ns - t[i].children_ns) / 1e6,
                frames ? (double)t[i].total_ns / 1e6 / (double)frames : 0.0,
                (double)t[i].max_ns / 1e6);
    }
    fputs("], ", f);
    pipeline_stats_write_json(f, rec, frames);
    fputs("},\n", f);
    free(t);
}

void gpu_zones_write_csv(FILE *f, const struct recording *rec)
{
    unsigned n;
    struct gpu_zone_total *t = gpu_zones_totals(rec, &n);
    for (unsigned i = 0; i < n; i++) {
        fprintf(f, "%d,", GPU_ZONE_TID);
        csv_quoted(f, "gpu zones");
        fputc(',', f);
        csv_quoted(f, t[i].path);
        fprintf(f, ",0,%llu,%.6f,%.6f,%.6f,%.6f\n", (unsigned long long)t[i].count,
                (double)t[i].total_ns / 1e6, (double)(t[i].total_ns - t[i].children_ns) / 1e6,
                (double)t[i].total_ns / 1e6 / (double)t[i].count, (double)t[i].max_ns / 1e6);
    }
    free(t);
}

static int zone_begin_order(const void *a, const void *b)
{
    const struct gpu_zone_span *x = a, *y = b;
    if (x->device_id != y->device_id)
        return x->device_id < y->device_id ? -1 : 1;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

void gpu_zones_write_trace(struct emit *e, const struct recording *rec, int pid, int64_t base_ns,
                           uint64_t from_ticks, bool *first)
{
    uint32_t named[REC_MAX_DEVICES + 1] = { 0 };
    /* Each device's in order of begin, the outer first: as they nest. */
    struct sorter by_begin;
    sorter_init(&by_begin, sizeof(struct gpu_zone_span), zone_begin_order, 0);
    struct sorter_cursor c;
    if (!rec->gpu_zone_count || !sorter_cursor_open(&c, &rec->gpu_zones))
        return;
    const struct gpu_zone_span *s;
    while ((s = sorter_next(&c)))
        sorter_push(&by_begin, s);
    sorter_cursor_close(&c);
    if (!sorter_finish(&by_begin) || !sorter_cursor_open(&c, &by_begin)) {
        sorter_free(&by_begin);
        return;
    }
    while ((s = sorter_next(&c))) {
        if (s->name >= rec->gpu_zone_name_count || s->begin < from_ticks)
            continue;
        long long tid = GPU_ZONE_TID + (long long)s->device_id; /* any uint32_t */
        if (s->device_id <= REC_MAX_DEVICES && !named[s->device_id]) {
            named[s->device_id] = 1;
            emit_printf(e, "%s\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%lld,\"name\":\"thread_name\","
                        "\"args\":{\"name\":\"gpu zones (device %u)\"}}", *first ? "" : ",", pid,
                        tid, s->device_id);
            *first = false;
        }
        emit_str(e, *first ? "\n{\"ph\":\"X\",\"pid\":" : ",\n{\"ph\":\"X\",\"pid\":");
        emit_i64(e, pid);
        emit_str(e, ",\"tid\":");
        emit_i64(e, tid);
        /* Microseconds as "%.3f" of ns / 1000.0 wrote them. */
        emit_str(e, ",\"ts\":");
        emit_scaled(e, (double)(recording_mono_ns(rec, s->begin) - base_ns), 3);
        emit_str(e, ",\"dur\":");
        emit_scaled(e, recording_ns(rec, s->end - s->begin), 3);
        emit_str(e, ",\"name\":");
        const char *path = rec->gpu_zone_names[s->name];
        const char *leaf = strrchr(path, '/');
        emit_json_string(e, leaf ? leaf + 1 : path);
        emit_str(e, ",\"args\":{\"path\":");
        emit_json_string(e, path);
        emit_str(e, "}}");
        *first = false;
    }
    sorter_cursor_close(&c);
    sorter_free(&by_begin);
}

/* ---- the zones that ended in a window ---- */

void zone_window_init(struct zone_window *w, const struct recording *rec)
{
    memset(w, 0, sizeof(*w));
    w->rec = rec;
}

void zone_window_free(struct zone_window *w)
{
    held_devices_free(&w->devices);
    if (w->cursor)
        sorter_cursor_close(&w->c);
    memset(w, 0, sizeof(*w));
}

/* The pass from the first zone again; false when memory ran out. */
static bool window_restart(struct zone_window *w)
{
    const struct recording *rec = w->rec;
    zone_window_free(w);
    w->rec = rec;
    w->cursor = sorter_cursor_open(&w->c, &rec->gpu_zones);
    return w->cursor;
}

const struct gpu_zone_span *zone_window_ended(struct zone_window *w, uint32_t device_id,
                                              uint64_t from, uint64_t to, size_t *ret_count)
{
    *ret_count = 0;
    if (!w->rec->gpu_zone_count || w->failed)
        return NULL;
    if ((!w->cursor || from < w->from) && !window_restart(w)) {
        w->failed = true;
        return NULL;
    }
    w->from = from;
    for (size_t d = 0; d < w->devices.count; d++) {
        struct held *h = &w->devices.devices[d].items;
        const struct gpu_zone_span *zones = (const struct gpu_zone_span *)h->items;
        while (h->first < h->count && zones[h->first].end <= from)
            h->first++;
    }
    /* Every zone that ends by to is read; those that end by from are passed over. */
    while (!w->done && (!w->read_any || w->read_to <= to)) {
        const struct gpu_zone_span *z = sorter_next(&w->c);
        if (!z) {
            w->done = true;
            w->failed = w->c.failed;
            break;
        }
        work_visited(1);
        w->read_any = true;
        w->read_to = z->end;
        if (z->end <= from || z->name >= w->rec->gpu_zone_name_count || z->end <= z->begin)
            continue;
        struct held_device *zd = held_device(&w->devices, z->device_id, true);
        if (!zd || !held_push(&zd->items, z, sizeof(*z))) {
            w->failed = true;
            return NULL;
        }
    }
    struct held_device *zd = held_device(&w->devices, device_id, false);
    if (!zd)
        return NULL;
    const struct held *h = &zd->items;
    const struct gpu_zone_span *zones = (const struct gpu_zone_span *)h->items + h->first;
    size_t n = 0;
    while (h->first + n < h->count && zones[n].end <= to)
        n++;
    *ret_count = n;
    return zones;
}
