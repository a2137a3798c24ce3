#include "threads.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "emit.h"
#include "frames.h"
#include "keep.h"

/* Threads shown in the summary; summary.json and threads.csv have them all. */
#define THREADS_IN_SUMMARY 5
/* The sampler's tick in a recording that does not give it (src/record/kernel.h). */
#define KERNEL_TICK_DEFAULT_MS 100

/* A thread's first sample and its latest one (copies: the samples are read through a
 * cursor). */
struct thread_total {
    int tid;
    const char *name;
    struct kernel_sample first, last;
};

/* Threads by tid (open addressing): a long run with threads coming and going has thousands,
 * and every sample looks its thread up. */
struct thread_table {
    struct thread_total *threads; /* in the order first seen */
    unsigned count, capacity;
    unsigned *slots; /* index + 1 into threads; 0: free */
    unsigned slot_mask;
};

static const char *thread_name(const struct recording *rec, int tid)
{
    for (unsigned i = 0; i < rec->kernel.thread_count; i++)
        if (rec->kernel.threads[i].tid == tid)
            return rec->kernel.threads[i].name;
    return "";
}

static unsigned *table_slot(const struct thread_table *t, int tid)
{
    unsigned i = ((unsigned)tid * 2654435761u) & t->slot_mask;
    while (t->slots[i] && t->threads[t->slots[i] - 1].tid != tid)
        i = (i + 1) & t->slot_mask;
    return &t->slots[i];
}

/* The entry of s's thread, made (first = s) when new; NULL when memory ran out. */
static struct thread_total *table_get(struct thread_table *t, const struct recording *rec,
                                      const struct kernel_sample *s)
{
    if (2 * (t->count + 1) > t->slot_mask + 1 || t->count == t->capacity) {
        unsigned capacity = t->capacity ? 2 * t->capacity : 64;
        struct thread_total *threads = realloc(t->threads, capacity * sizeof(*threads));
        unsigned *slots = calloc(2 * capacity, sizeof(*slots));
        if (threads)
            t->threads = threads;
        if (!threads || !slots) {
            free(slots);
            return NULL;
        }
        free(t->slots);
        t->slots = slots;
        t->slot_mask = 2 * capacity - 1;
        t->capacity = capacity;
        for (unsigned i = 0; i < t->count; i++)
            *table_slot(t, t->threads[i].tid) = i + 1;
    }
    unsigned *slot = table_slot(t, s->tid);
    if (!*slot) {
        t->threads[t->count] = (struct thread_total){ s->tid, thread_name(rec, s->tid), *s, *s };
        *slot = ++t->count;
    }
    return &t->threads[*slot - 1];
}

static void table_free(struct thread_table *t)
{
    free(t->threads);
    free(t->slots);
}

/* Every thread's first and last sample. False when memory ran out or a read failed. */
static bool totals(const struct recording *rec, struct thread_table *ret)
{
    memset(ret, 0, sizeof(*ret));
    struct sorter_cursor c;
    if (!rec->kernel.sample_count)
        return true;
    if (!sorter_cursor_open(&c, &rec->kernel.samples))
        return false;
    bool ok = true;
    for (const struct kernel_sample *s; ok && (s = sorter_next(&c));) {
        struct thread_total *t = table_get(ret, rec, s);
        if (t)
            t->last = *s;
        ok = t != NULL;
    }
    ok = ok && !c.failed;
    sorter_cursor_close(&c);
    return ok;
}

static uint64_t delta(uint64_t from, uint64_t to)
{
    return to > from ? to - from : 0;
}

/* What a thread did between two of its samples (counters that went back count 0). */
struct thread_delta {
    uint64_t ticks, oncpu_ns, runnable_ns, runs;
    uint64_t context_switches, migrations, minor_faults, major_faults;
    uint32_t flags; /* the later sample's: which counts are there */
};

static void thread_delta(const struct kernel_sample *from, const struct kernel_sample *to,
                         struct thread_delta *ret)
{
    *ret = (struct thread_delta){
        .ticks = delta(from->ticks, to->ticks),
        .oncpu_ns = delta(from->oncpu_ns, to->oncpu_ns),
        .runnable_ns = delta(from->runnable_ns, to->runnable_ns),
        .runs = delta(from->runs, to->runs),
        .context_switches = delta(from->context_switches, to->context_switches),
        .migrations = delta(from->migrations, to->migrations),
        .minor_faults = delta(from->minor_faults, to->minor_faults),
        .major_faults = delta(from->major_faults, to->major_faults),
        .flags = to->flags,
    };
}

static int by_oncpu(const void *a, const void *b)
{
    const struct thread_total *x = a, *y = b;
    uint64_t dx = delta(x->first.oncpu_ns, x->last.oncpu_ns);
    uint64_t dy = delta(y->first.oncpu_ns, y->last.oncpu_ns);
    return dx < dy ? 1 : dx > dy ? -1 : (x->tid > y->tid) - (x->tid < y->tid);
}

void threads_write_text(FILE *f, const struct recording *rec)
{
    struct thread_table table;
    if (totals(rec, &table) && table.count) {
        qsort(table.threads, table.count, sizeof(*table.threads), by_oncpu);
        for (unsigned i = 0; i < table.count && i < THREADS_IN_SUMMARY; i++) {
            const struct thread_total *t = &table.threads[i];
            struct thread_delta d;
            thread_delta(&t->first, &t->last, &d);
            double span_ns = recording_ns(rec, d.ticks);
            if (span_ns <= 0)
                continue;
            fprintf(f, "  threads     %s (tid %d): on CPU %.1f%%, starved %.1f%% of %.3f s; "
                    "%llu runs", t->name, t->tid, 100.0 * (double)d.oncpu_ns / span_ns,
                    100.0 * (double)d.runnable_ns / span_ns, span_ns / 1e9,
                    (unsigned long long)d.runs);
            if (d.flags & KERNEL_SAMPLE_SWITCHES)
                fprintf(f, ", %llu context switches", (unsigned long long)d.context_switches);
            if (d.flags & KERNEL_SAMPLE_MIGRATIONS)
                fprintf(f, ", %llu migrations", (unsigned long long)d.migrations);
            if (d.flags & KERNEL_SAMPLE_FAULTS)
                fprintf(f, ", %llu page faults (%llu major)", (unsigned long long)d.minor_faults,
                        (unsigned long long)d.major_faults);
            fputc('\n', f);
        }
    }
    if (rec->kernel.present && rec->kernel.perf_why[0])
        fprintf(f, "  threads     %s\n", rec->kernel.perf_why);
    if (rec->kernel.present && rec->kernel.unwatched_threads)
        fprintf(f, "  threads     up to %u threads alive at once were not sampled: the sampler "
                "follows %d at a time\n", rec->kernel.unwatched_threads, REC_KERNEL_THREADS);
    table_free(&table);
}

void threads_write_json(FILE *f, const struct recording *rec)
{
    struct thread_table table;
    bool all = totals(rec, &table);
    fputs("  \"threads\": [", f);
    for (unsigned i = 0; all && i < table.count; i++) {
        const struct thread_total *t = &table.threads[i];
        struct thread_delta d;
        thread_delta(&t->first, &t->last, &d);
        fprintf(f, "%s{\"tid\": %d, \"name\": ", i ? ", " : "", t->tid);
        json_write_string(f, t->name);
        fprintf(f, ", \"seconds\": %.6f, \"oncpu_ms\": %.6f, \"runnable_ms\": %.6f, "
                "\"runs\": %llu", recording_ns(rec, d.ticks) / 1e9, (double)d.oncpu_ns / 1e6,
                (double)d.runnable_ns / 1e6, (unsigned long long)d.runs);
        if (d.flags & KERNEL_SAMPLE_SWITCHES)
            fprintf(f, ", \"context_switches\": %llu", (unsigned long long)d.context_switches);
        if (d.flags & KERNEL_SAMPLE_MIGRATIONS)
            fprintf(f, ", \"migrations\": %llu", (unsigned long long)d.migrations);
        if (d.flags & KERNEL_SAMPLE_FAULTS)
            fprintf(f, ", \"minor_faults\": %llu, \"major_faults\": %llu",
                    (unsigned long long)d.minor_faults, (unsigned long long)d.major_faults);
        fputc('}', f);
    }
    fputs("],\n  \"threads_perf\": ", f);
    json_write_string(f, rec->kernel.perf_why);
    fprintf(f, ",\n  \"threads_unsampled\": %u,\n", rec->kernel.unwatched_threads);
    table_free(&table);
}

int threads_write_csv(FILE *f, const struct recording *rec, const struct frame_keep *keep)
{
    fputs("thread_id,thread,start_ms,end_ms,oncpu_ms,runnable_ms,asleep_ms,runs,"
          "context_switches,migrations,minor_faults,major_faults\n", f);
    uint64_t origin = frames_origin_ticks(rec);
    struct thread_table table = { 0 };
    int e = 0;
    /* Each sample against the same thread's previous one. */
    struct sorter_cursor c;
    bool open = rec->kernel.sample_count && sorter_cursor_open(&c, &rec->kernel.samples);
    if (rec->kernel.sample_count && !open)
        e = -ENOMEM;
    for (const struct kernel_sample *s; open && (s = sorter_next(&c));) {
        struct thread_total *t = table_get(&table, rec, s);
        if (!t) {
            e = -ENOMEM;
            break;
        }
        const struct kernel_sample previous = t->last, *prev = &previous;
        t->last = *s;
        if (s->ticks <= prev->ticks)
            continue; /* its first sample (or a torn one) */
        if (!keep_time(keep, prev->ticks, s->ticks))
            continue;
        struct thread_delta d;
        thread_delta(prev, s, &d);
        /* The kernel's counts as the recording has them: anything, so clamped as spans are. */
        int64_t span = ticks_ns(rec, d.ticks);
        int64_t oncpu = d.oncpu_ns < (uint64_t)REPORT_NS_MAX ? (int64_t)d.oncpu_ns : REPORT_NS_MAX;
        int64_t runnable = d.runnable_ns < (uint64_t)REPORT_NS_MAX ? (int64_t)d.runnable_ns
                                                                    : REPORT_NS_MAX;
        int64_t asleep = span - oncpu - runnable;
        fprintf(f, "%d,", s->tid);
        /* Names are the program's own: no commas or quotes in CSV. */
        for (const char *ch = t->name; *ch; ch++)
            fputc(*ch == ',' || *ch == '"' ? ' ' : *ch, f);
        int64_t start = prev->ticks > origin ? ticks_ns(rec, prev->ticks - origin)
                                              : -ticks_ns(rec, origin - prev->ticks);
        csv_write_ms(f, start);
        csv_write_ms(f, start + span);
        csv_write_ms(f, oncpu);
        csv_write_ms(f, runnable);
        csv_write_ms(f, asleep > 0 ? asleep : 0);
        fprintf(f, ",%llu", (unsigned long long)d.runs);
        if (d.flags & KERNEL_SAMPLE_SWITCHES)
            fprintf(f, ",%llu", (unsigned long long)d.context_switches);
        else
            fputc(',', f);
        if (d.flags & KERNEL_SAMPLE_MIGRATIONS)
            fprintf(f, ",%llu", (unsigned long long)d.migrations);
        else
            fputc(',', f);
        if (d.flags & KERNEL_SAMPLE_FAULTS)
            fprintf(f, ",%llu,%llu\n", (unsigned long long)d.minor_faults,
                    (unsigned long long)d.major_faults);
        else
            fputs(",,\n", f);
    }
    if (open && c.failed)
        e = -EIO;
    if (open)
        sorter_cursor_close(&c);
    table_free(&table);
    return e;
}

/* Appends a point; false when memory ran out. */
static bool process_cpu_push(struct process_cpu_point **points, size_t *count, size_t *capacity,
                             uint64_t ticks, uint64_t oncpu_ns)
{
    if (*count == *capacity) {
        size_t grown = *capacity ? 2 * *capacity : 256;
        struct process_cpu_point *more = realloc(*points, grown * sizeof(**points));
        if (!more)
            return false;
        *points = more;
        *capacity = grown;
    }
    (*points)[(*count)++] = (struct process_cpu_point){ ticks, oncpu_ns };
    return true;
}

size_t threads_process_cpu(const struct recording *rec, struct process_cpu_point **ret)
{
    *ret = NULL;
    const struct recording_kernel *k = &rec->kernel;
    /* A tick reads its threads within moments of each other, and ticks are tick_ms apart: a
     * sample more than half a tick after the first of its tick starts the next one. */
    int64_t half_tick_ns = (int64_t)(k->tick_ms ? k->tick_ms : KERNEL_TICK_DEFAULT_MS) * 500000;
    struct thread_table table = { 0 };
    struct process_cpu_point *points = NULL;
    size_t count = 0, capacity = 0;
    uint64_t oncpu = 0, tick_ticks = 0, previous_ticks = 0;
    struct sorter_cursor c;
    if (!k->sample_count || !sorter_cursor_open(&c, &k->samples))
        return 0;
    bool first = true;
    for (const struct kernel_sample *s; (s = sorter_next(&c));) {
        if (first) {
            tick_ticks = s->ticks;
        } else if (s->ticks < tick_ticks || ticks_ns(rec, s->ticks - tick_ticks) > half_tick_ns) {
            if (!process_cpu_push(&points, &count, &capacity, previous_ticks, oncpu))
                goto error;
            tick_ticks = s->ticks;
        }
        first = false;
        previous_ticks = s->ticks;
        struct thread_total *t = table_get(&table, rec, s);
        if (!t)
            goto error;
        /* Each thread from its first sample on, as threads_write_json counts it. */
        oncpu += delta(t->last.oncpu_ns, s->oncpu_ns);
        t->last = *s;
    }
    if (c.failed || !process_cpu_push(&points, &count, &capacity, previous_ticks, oncpu))
        goto error;
    sorter_cursor_close(&c);
    table_free(&table);
    *ret = points;
    return count;
error:
    sorter_cursor_close(&c);
    table_free(&table);
    free(points);
    return 0;
}

/* ---- the GPU as the kernel's DRM usage stats give it ---- */

struct drm_client {
    struct drm_sample first, last; /* copies: the samples are read through a cursor */
    uint64_t max_resident[DRM_SAMPLE_REGIONS];
};

/* First and last sample of each client (several clients when the app opens several). */
static unsigned drm_clients(const struct recording *rec, struct drm_client *ret, unsigned max)
{
    const struct recording_kernel *k = &rec->kernel;
    unsigned n = 0;
    struct sorter_cursor cursor;
    if (!k->drm_sample_count || !sorter_cursor_open(&cursor, &k->drm_samples))
        return 0;
    for (const struct drm_sample *d; (d = sorter_next(&cursor));) {
        struct drm_client *c = NULL;
        for (unsigned j = 0; j < n && !c; j++)
            if (ret[j].first.client_id == d->client_id)
                c = &ret[j];
        if (!c) {
            if (n == max)
                continue;
            c = &ret[n++];
            memset(c, 0, sizeof(*c));
            c->first = *d;
        }
        c->last = *d;
        for (unsigned r = 0; r < d->region_count; r++)
            if (d->regions[r].resident_bytes > c->max_resident[r])
                c->max_resident[r] = d->regions[r].resident_bytes;
    }
    bool failed = cursor.failed;
    sorter_cursor_close(&cursor);
    return failed ? 0 : n;
}

static const char no_drm[] = "the app opened no DRM device (/dev/dri): the kernel has no GPU "
                             "usage to show (software rendering, a GPU driven outside DRM such "
                             "as NVIDIA's /dev/nvidia*, or no DRM device here)";

/* The GPU busy share the layer's timestamps measured over the frames inside [from, to]: the
 * same stretch a DRM client's engine time covers. < 0 when GPU time was not measured. */
static double timestamp_busy(const struct recording *rec, uint64_t from, uint64_t to)
{
    if (!rec->gpu_timing)
        return -1;
    uint64_t busy = 0, span = 0;
    for (unsigned l = 0; l < rec->log_count; l++) {
        struct frame_cursor c;
        if (!frame_cursor_open(&c, rec, &rec->logs[l]))
            continue;
        for (uint64_t i = 0; i < rec->logs[l].frame_count; i++) {
            const struct fscope_frame *fr = frame_at(&c, i);
            if (fr->start_ticks >= from && fr->end_ticks <= to && !fr->gpu_unsampled) {
                busy += fr->gpu_busy_ticks;
                span += fr->end_ticks - fr->start_ticks;
            }
        }
        frame_cursor_close(&c);
    }
    return span ? (double)busy / (double)span : -1;
}

/* A region whose residency fell by more than a tenth from its peak while the client's
 * allocations did not shrink: the kernel evicted it (VRAM over-committed). */
static bool evicted(const struct drm_client *c, unsigned r)
{
    const struct drm_sample *d = &c->last;
    return strstr(d->regions[r].name, "vram") && c->max_resident[r] &&
           d->regions[r].resident_bytes < c->max_resident[r] - c->max_resident[r] / 10 &&
           d->regions[r].total_bytes >= c->first.regions[r].total_bytes;
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
        double span_ns = recording_ns(rec, c->last.ticks - c->first.ticks);
        fprintf(f, "  drm         %s client %llu over %.3f s:", c->last.driver,
                (unsigned long long)c->last.client_id, span_ns / 1e9);
        double busiest = -1;
        for (unsigned e = 0; e < c->last.engine_count && span_ns > 0; e++) {
            uint64_t from = e < c->first.engine_count ? c->first.engines[e].busy_ns : 0;
            double busy = (double)(c->last.engines[e].busy_ns - from) /
                          (span_ns * (double)(c->last.engines[e].capacity ? c->last.engines[e].capacity : 1));
            fprintf(f, " %s busy %.1f%%", c->last.engines[e].name, 100.0 * busy);
            if (busy > busiest)
                busiest = busy;
        }
        double stamped = timestamp_busy(rec, c->first.ticks, c->last.ticks);
        if (stamped >= 0)
            fprintf(f, " (timestamps: GPU busy %.1f%%)", 100.0 * stamped);
        for (unsigned r = 0; r < c->last.region_count; r++)
            fprintf(f, "; %s resident %.1f of %.1f MiB", c->last.regions[r].name,
                    (double)c->last.regions[r].resident_bytes / 1048576.0,
                    (double)c->last.regions[r].total_bytes / 1048576.0);
        fputc('\n', f);
        if (stamped >= 0 && busiest >= 0 && (busiest - stamped > 0.15 || stamped - busiest > 0.15))
            fprintf(f, "  diagnosis   GPU busy disagrees: the kernel counts %.1f%% on this "
                    "client's busiest engine, the layer's timestamps %.1f%% (work on queues or "
                    "devices not timed, another API on the same descriptor, or engine time "
                    "the driver reports differently)\n", 100.0 * busiest, 100.0 * stamped);
        for (unsigned r = 0; r < c->last.region_count; r++)
            if (evicted(c, r))
                fprintf(f, "  diagnosis   %s over-committed: resident fell from %.1f to %.1f MiB "
                        "while the client's allocations stayed at %.1f MiB\n",
                        c->last.regions[r].name, (double)c->max_resident[r] / 1048576.0,
                        (double)c->last.regions[r].resident_bytes / 1048576.0,
                        (double)c->last.regions[r].total_bytes / 1048576.0);
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
        double span_ns = recording_ns(rec, c->last.ticks - c->first.ticks);
        fprintf(f, "%s{\"client_id\": %llu, \"driver\": ", i ? ", " : "",
                (unsigned long long)c->last.client_id);
        json_write_string(f, c->last.driver);
        fprintf(f, ", \"seconds\": %.6f, \"timestamp_busy\": ", span_ns / 1e9);
        double stamped = timestamp_busy(rec, c->first.ticks, c->last.ticks);
        if (stamped >= 0)
            fprintf(f, "%.6f", stamped);
        else
            fputs("null", f);
        fputs(", \"engines\": [", f);
        for (unsigned e = 0; e < c->last.engine_count; e++) {
            uint64_t from = e < c->first.engine_count ? c->first.engines[e].busy_ns : 0;
            fprintf(f, "%s{\"name\": ", e ? ", " : "");
            json_write_string(f, c->last.engines[e].name);
            fprintf(f, ", \"busy_ms\": %.6f, \"capacity\": %llu}",
                    (double)(c->last.engines[e].busy_ns - from) / 1e6,
                    (unsigned long long)c->last.engines[e].capacity);
        }
        fputs("], \"regions\": [", f);
        for (unsigned r = 0; r < c->last.region_count; r++) {
            fprintf(f, "%s{\"name\": ", r ? ", " : "");
            json_write_string(f, c->last.regions[r].name);
            fprintf(f, ", \"total_bytes\": %llu, \"resident_bytes\": %llu, "
                    "\"max_resident_bytes\": %llu, \"evicted\": %s}",
                    (unsigned long long)c->last.regions[r].total_bytes,
                    (unsigned long long)c->last.regions[r].resident_bytes,
                    (unsigned long long)c->max_resident[r], evicted(c, r) ? "true" : "false");
        }
        fputs("]}", f);
    }
    fputs("]},\n", f);
}
