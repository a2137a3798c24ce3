#include "threads.h"

#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "trace.h"

/* Threads shown in the summary; summary.json and threads.csv have them all. */
#define THREADS_IN_SUMMARY 5

struct thread_total {
    int tid;
    const char *name;
    uint64_t first_ticks, last_ticks;
    struct kernel_sample first, last;
};

static const char *thread_name(const struct recording *rec, int tid)
{
    for (unsigned i = 0; i < rec->kernel.thread_count; i++)
        if (rec->kernel.threads[i].tid == tid)
            return rec->kernel.threads[i].name;
    return "";
}

/* First and last sample of each thread, in the order threads were first seen. */
static struct thread_total *totals(const struct recording *rec, unsigned *ret_count)
{
    const struct recording_kernel *k = &rec->kernel;
    struct thread_total *t = calloc(k->sample_count ? k->sample_count : 1, sizeof(*t));
    unsigned n = 0;
    for (uint64_t i = 0; t && i < k->sample_count; i++) {
        const struct kernel_sample *s = &k->samples[i];
        struct thread_total *found = NULL;
        for (unsigned j = n; j-- > 0 && !found;)
            if (t[j].tid == s->tid)
                found = &t[j];
        if (!found) {
            found = &t[n++];
            found->tid = s->tid;
            found->name = thread_name(rec, s->tid);
            found->first = *s;
        }
        found->last = *s;
    }
    *ret_count = n;
    return t;
}

static uint64_t delta(uint64_t from, uint64_t to)
{
    return to > from ? to - from : 0;
}

static int by_oncpu(const void *a, const void *b)
{
    const struct thread_total *x = a, *y = b;
    uint64_t dx = delta(x->first.oncpu_ns, x->last.oncpu_ns);
    uint64_t dy = delta(y->first.oncpu_ns, y->last.oncpu_ns);
    return dx < dy ? 1 : dx > dy ? -1 : x->tid - y->tid;
}

void threads_write_text(FILE *f, const struct recording *rec)
{
    unsigned n;
    struct thread_total *t = totals(rec, &n);
    if (!t)
        return;
    qsort(t, n, sizeof(*t), by_oncpu);
    for (unsigned i = 0; i < n && i < THREADS_IN_SUMMARY; i++) {
        double span_ns = recording_ns(rec, delta(t[i].first.ticks, t[i].last.ticks));
        uint64_t oncpu = delta(t[i].first.oncpu_ns, t[i].last.oncpu_ns);
        uint64_t runnable = delta(t[i].first.runnable_ns, t[i].last.runnable_ns);
        if (span_ns <= 0)
            continue;
        fprintf(f, "  threads     %s (tid %d): on CPU %.1f%%, starved %.1f%% of %.3f s; %llu runs",
                t[i].name, t[i].tid, 100.0 * (double)oncpu / span_ns,
                100.0 * (double)runnable / span_ns, span_ns / 1e9,
                (unsigned long long)delta(t[i].first.runs, t[i].last.runs));
        if (t[i].last.flags & KERNEL_SAMPLE_SWITCHES)
            fprintf(f, ", %llu context switches, %llu migrations",
                    (unsigned long long)delta(t[i].first.context_switches,
                                              t[i].last.context_switches),
                    (unsigned long long)delta(t[i].first.migrations, t[i].last.migrations));
        if (t[i].last.flags & KERNEL_SAMPLE_FAULTS)
            fprintf(f, ", %llu page faults (%llu major)",
                    (unsigned long long)delta(t[i].first.minor_faults, t[i].last.minor_faults),
                    (unsigned long long)delta(t[i].first.major_faults, t[i].last.major_faults));
        fputc('\n', f);
    }
    if (rec->kernel.present && rec->kernel.perf_why[0])
        fprintf(f, "  threads     %s\n", rec->kernel.perf_why);
    free(t);
}

void threads_write_json(FILE *f, const struct recording *rec)
{
    unsigned n;
    struct thread_total *t = totals(rec, &n);
    fputs("  \"threads\": [", f);
    for (unsigned i = 0; t && i < n; i++) {
        fprintf(f, "%s{\"tid\": %d, \"name\": ", i ? ", " : "", t[i].tid);
        json_write_string(f, t[i].name);
        fprintf(f, ", \"seconds\": %.6f, \"oncpu_ms\": %.6f, \"runnable_ms\": %.6f, "
                "\"runs\": %llu", recording_ns(rec, delta(t[i].first.ticks, t[i].last.ticks)) / 1e9,
                (double)delta(t[i].first.oncpu_ns, t[i].last.oncpu_ns) / 1e6,
                (double)delta(t[i].first.runnable_ns, t[i].last.runnable_ns) / 1e6,
                (unsigned long long)delta(t[i].first.runs, t[i].last.runs));
        if (t[i].last.flags & KERNEL_SAMPLE_SWITCHES)
            fprintf(f, ", \"context_switches\": %llu, \"migrations\": %llu",
                    (unsigned long long)delta(t[i].first.context_switches,
                                              t[i].last.context_switches),
                    (unsigned long long)delta(t[i].first.migrations, t[i].last.migrations));
        if (t[i].last.flags & KERNEL_SAMPLE_FAULTS)
            fprintf(f, ", \"minor_faults\": %llu, \"major_faults\": %llu",
                    (unsigned long long)delta(t[i].first.minor_faults, t[i].last.minor_faults),
                    (unsigned long long)delta(t[i].first.major_faults, t[i].last.major_faults));
        fputc('}', f);
    }
    fputs("],\n  \"threads_perf\": ", f);
    json_write_string(f, rec->kernel.perf_why);
    fputs(",\n", f);
    free(t);
}

int threads_write_csv(FILE *f, const void *arg)
{
    const struct recording *rec = arg;
    const struct recording_kernel *k = &rec->kernel;
    fputs("thread_id,thread,start_ms,end_ms,oncpu_ms,runnable_ms,asleep_ms,runs,"
          "context_switches,migrations,minor_faults,major_faults\n", f);
    uint64_t origin = frames_origin_ticks(rec);
    /* Each sample against the same thread's previous one. */
    for (uint64_t i = 0; i < k->sample_count; i++) {
        const struct kernel_sample *s = &k->samples[i], *prev = NULL;
        for (uint64_t j = i; j-- > 0 && !prev;)
            if (k->samples[j].tid == s->tid)
                prev = &k->samples[j];
        if (!prev || s->ticks <= prev->ticks)
            continue;
        int64_t span = ticks_ns(rec, s->ticks - prev->ticks);
        int64_t oncpu = (int64_t)delta(prev->oncpu_ns, s->oncpu_ns);
        int64_t runnable = (int64_t)delta(prev->runnable_ns, s->runnable_ns);
        int64_t asleep = span - oncpu - runnable;
        fprintf(f, "%d,", s->tid);
        /* Names are the program's own: no commas or quotes in CSV. */
        for (const char *c = thread_name(rec, s->tid); *c; c++)
            fputc(*c == ',' || *c == '"' ? ' ' : *c, f);
        int64_t start = prev->ticks > origin ? ticks_ns(rec, prev->ticks - origin)
                                              : -ticks_ns(rec, origin - prev->ticks);
        csv_write_ms(f, start);
        csv_write_ms(f, start + span);
        csv_write_ms(f, oncpu);
        csv_write_ms(f, runnable);
        csv_write_ms(f, asleep > 0 ? asleep : 0);
        fprintf(f, ",%llu", (unsigned long long)delta(prev->runs, s->runs));
        if (s->flags & KERNEL_SAMPLE_SWITCHES)
            fprintf(f, ",%llu,%llu", (unsigned long long)delta(prev->context_switches,
                                                                s->context_switches),
                    (unsigned long long)delta(prev->migrations, s->migrations));
        else
            fputs(",,", f);
        if (s->flags & KERNEL_SAMPLE_FAULTS)
            fprintf(f, ",%llu,%llu\n", (unsigned long long)delta(prev->minor_faults,
                                                                  s->minor_faults),
                    (unsigned long long)delta(prev->major_faults, s->major_faults));
        else
            fputs(",,\n", f);
    }
    return 0;
}

/* ---- the GPU as the kernel's DRM usage stats give it ---- */

struct drm_client {
    const struct drm_sample *first, *last;
    uint64_t max_resident[DRM_SAMPLE_REGIONS];
};

/* First and last sample of each client (several clients when the app opens several). */
static unsigned drm_clients(const struct recording *rec, struct drm_client *ret, unsigned max)
{
    const struct recording_kernel *k = &rec->kernel;
    unsigned n = 0;
    for (uint64_t i = 0; i < k->drm_sample_count; i++) {
        const struct drm_sample *d = &k->drm_samples[i];
        struct drm_client *c = NULL;
        for (unsigned j = 0; j < n && !c; j++)
            if (ret[j].first->client_id == d->client_id)
                c = &ret[j];
        if (!c) {
            if (n == max)
                continue;
            c = &ret[n++];
            memset(c, 0, sizeof(*c));
            c->first = d;
        }
        c->last = d;
        for (unsigned r = 0; r < d->region_count; r++)
            if (d->regions[r].resident_bytes > c->max_resident[r])
                c->max_resident[r] = d->regions[r].resident_bytes;
    }
    return n;
}

static const char no_drm[] = "the app opened no DRM device (/dev/dri): the kernel has no GPU "
                             "usage to show (software rendering, a GPU driven outside DRM such "
                             "as NVIDIA's /dev/nvidia*, or no DRM device here)";

/* A region whose residency fell by more than a tenth from its peak while the client's
 * allocations did not shrink: the kernel evicted it (VRAM over-committed). */
static bool evicted(const struct drm_client *c, unsigned r)
{
    const struct drm_sample *d = c->last;
    return strstr(d->regions[r].name, "vram") && c->max_resident[r] &&
           d->regions[r].resident_bytes < c->max_resident[r] - c->max_resident[r] / 10 &&
           d->regions[r].total_bytes >= c->first->regions[r].total_bytes;
}

void drm_write_text(FILE *f, const struct recording *rec)
{
    if (!rec->kernel.present)
        return;
    struct drm_client clients[8];
    unsigned n = drm_clients(rec, clients, 8);
    if (!rec->kernel.drm_fds || !n) {
        fprintf(f, "  drm         %s\n", rec->kernel.drm_fds ? "the app's DRM descriptors give "
                "no usage stats (a kernel or driver without drm-usage-stats)" : no_drm);
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        const struct drm_client *c = &clients[i];
        double span_ns = recording_ns(rec, c->last->ticks - c->first->ticks);
        fprintf(f, "  drm         %s client %llu over %.3f s:", c->last->driver,
                (unsigned long long)c->last->client_id, span_ns / 1e9);
        for (unsigned e = 0; e < c->last->engine_count && span_ns > 0; e++) {
            uint64_t from = e < c->first->engine_count ? c->first->engines[e].busy_ns : 0;
            double busy = (double)(c->last->engines[e].busy_ns - from) /
                          (span_ns * (double)(c->last->engines[e].capacity ? c->last->engines[e].capacity : 1));
            fprintf(f, " %s busy %.1f%%", c->last->engines[e].name, 100.0 * busy);
        }
        for (unsigned r = 0; r < c->last->region_count; r++)
            fprintf(f, "; %s resident %.1f of %.1f MiB", c->last->regions[r].name,
                    (double)c->last->regions[r].resident_bytes / 1048576.0,
                    (double)c->last->regions[r].total_bytes / 1048576.0);
        fputc('\n', f);
        for (unsigned r = 0; r < c->last->region_count; r++)
            if (evicted(c, r))
                fprintf(f, "  diagnosis   %s over-committed: resident fell from %.1f to %.1f MiB "
                        "while the client's allocations stayed at %.1f MiB\n",
                        c->last->regions[r].name, (double)c->max_resident[r] / 1048576.0,
                        (double)c->last->regions[r].resident_bytes / 1048576.0,
                        (double)c->last->regions[r].total_bytes / 1048576.0);
    }
}

void drm_write_json(FILE *f, const struct recording *rec)
{
    struct drm_client clients[8];
    unsigned n = rec->kernel.present ? drm_clients(rec, clients, 8) : 0;
    fputs("  \"drm\": {\"why\": ", f);
    json_write_string(f, rec->kernel.present && !n ? no_drm : "");
    fputs(", \"clients\": [", f);
    for (unsigned i = 0; i < n; i++) {
        const struct drm_client *c = &clients[i];
        double span_ns = recording_ns(rec, c->last->ticks - c->first->ticks);
        fprintf(f, "%s{\"client_id\": %llu, \"driver\": ", i ? ", " : "",
                (unsigned long long)c->last->client_id);
        json_write_string(f, c->last->driver);
        fprintf(f, ", \"seconds\": %.6f, \"engines\": [", span_ns / 1e9);
        for (unsigned e = 0; e < c->last->engine_count; e++) {
            uint64_t from = e < c->first->engine_count ? c->first->engines[e].busy_ns : 0;
            fprintf(f, "%s{\"name\": ", e ? ", " : "");
            json_write_string(f, c->last->engines[e].name);
            fprintf(f, ", \"busy_ms\": %.6f, \"capacity\": %llu}",
                    (double)(c->last->engines[e].busy_ns - from) / 1e6,
                    (unsigned long long)c->last->engines[e].capacity);
        }
        fputs("], \"regions\": [", f);
        for (unsigned r = 0; r < c->last->region_count; r++) {
            fprintf(f, "%s{\"name\": ", r ? ", " : "");
            json_write_string(f, c->last->regions[r].name);
            fprintf(f, ", \"total_bytes\": %llu, \"resident_bytes\": %llu, "
                    "\"max_resident_bytes\": %llu, \"evicted\": %s}",
                    (unsigned long long)c->last->regions[r].total_bytes,
                    (unsigned long long)c->last->regions[r].resident_bytes,
                    (unsigned long long)c->max_resident[r], evicted(c, r) ? "true" : "false");
        }
        fputs("]}", f);
    }
    fputs("]},\n", f);
}
