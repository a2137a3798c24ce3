#include "gpu_zones.h"

#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "trace.h"
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
    if (!t)
        return NULL;
    for (uint64_t i = 0; i < rec->gpu_zone_count; i++) {
        const struct gpu_zone_span *s = &rec->gpu_zones[i];
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
}

void gpu_zones_write_json(FILE *f, const struct recording *rec, uint64_t frames)
{
    unsigned n;
    struct gpu_zone_total *t = gpu_zones_totals(rec, &n);
    fprintf(f, "  \"gpu_zones\": {\"regions\": %llu, \"untimed\": {",
            (unsigned long long)rec->gpu_zone_count);
    static const char *const keys[GPU_ZONE_UNTIMED_COUNT] = {
        "secondary", "full", "unbalanced", "resubmitted", "names", "no_reset", "multiview",
        "simultaneous_use",
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
    fputs("]},\n", f);
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

void gpu_zones_write_trace(FILE *f, const struct recording *rec, int pid, int64_t base_ns,
                           bool *first)
{
    uint32_t named[REC_MAX_DEVICES + 1] = { 0 };
    for (uint64_t i = 0; i < rec->gpu_zone_count; i++) {
        const struct gpu_zone_span *s = &rec->gpu_zones[i];
        if (s->name >= rec->gpu_zone_name_count)
            continue;
        long long tid = GPU_ZONE_TID + (long long)s->device_id; /* any uint32_t */
        if (s->device_id <= REC_MAX_DEVICES && !named[s->device_id]) {
            named[s->device_id] = 1;
            fprintf(f, "%s\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%lld,\"name\":\"thread_name\","
                    "\"args\":{\"name\":\"gpu zones (device %u)\"}}", *first ? "" : ",", pid,
                    tid, s->device_id);
            *first = false;
        }
        double ts = (double)(recording_mono_ns(rec, s->begin) - base_ns) / 1000.0;
        double dur = recording_ns(rec, s->end - s->begin) / 1000.0;
        fprintf(f, "%s\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%lld,\"ts\":%.3f,\"dur\":%.3f,\"name\":",
                *first ? "" : ",", pid, tid, ts, dur);
        const char *path = rec->gpu_zone_names[s->name];
        const char *leaf = strrchr(path, '/');
        json_write_string(f, leaf ? leaf + 1 : path);
        fputs(",\"args\":{\"path\":", f);
        json_write_string(f, path);
        fputs("}}", f);
        *first = false;
    }
}
