/* Chrome Trace Event export of the flight recorder.
 *
 * Each thread's ring is replayed with a stack: an exit with nothing open is the orphaned end
 * of a zone whose begin the ring overwrote, and is dropped; zones still open at the end are
 * closed at the last moment the thread is known to have been in them. So every B has its E. */
#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framescope.h"
#include "gpu_zones.h"
#include "hitches.h"
#include "zones.h"

#define TRACE_MAX_DEPTH 64

void json_write_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

struct trace_writer {
    const struct recording *rec;
    FILE *f;
    int pid;
    int64_t base_ns;
    bool first;
};

static void event_prefix(struct trace_writer *w, const char *ph, int tid, uint64_t ticks)
{
    double us = (double)(recording_mono_ns(w->rec, ticks) - w->base_ns) / 1000.0;
    fprintf(w->f, "%s\n{\"ph\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f", w->first ? "" : ",",
            ph, w->pid, tid, us);
    w->first = false;
}

static void write_thread(struct trace_writer *w, const struct recording_thread *t,
                         const struct fscope_event **stack)
{
    const struct fscope_event *events = t->events;
    uint64_t count = t->event_count;
    int tid = t->tid;

    fprintf(w->f, "%s\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\","
            "\"args\":{\"name\":", w->first ? "" : ",", w->pid, tid);
    json_write_string(w->f, t->name[0] ? t->name : "thread");
    fputs("}}", w->f);
    w->first = false;

    unsigned depth = 0, overflow = 0;
    uint64_t last = 0;
    for (uint64_t i = 0; i < count; i++) {
        const struct fscope_event *e = &events[i];
        /* A ring wraps in order; a timestamp going backwards can only be a torn slot. */
        if (e->ticks < last)
            continue;
        last = e->ticks;
        const struct rec_loc *loc = e->loc ? recording_loc_find(w->rec, e->loc) : NULL;
        if (loc && (loc->flags & FSCOPE_LOC_INSTANT)) {
            event_prefix(w, "i", tid, e->ticks);
            fputs(",\"s\":\"t\",\"name\":", w->f);
            json_write_string(w->f, loc->name);
            fputc('}', w->f);
        } else if (e->loc) {
            if (depth >= TRACE_MAX_DEPTH) {
                overflow++;
                continue;
            }
            stack[depth++] = &events[i];
            event_prefix(w, "B", tid, e->ticks);
            fputs(",\"name\":", w->f);
            json_write_string(w->f, loc ? loc->name : "?");
            fputc('}', w->f);
        } else if (overflow) {
            overflow--;
        } else if (depth) {
            depth--;
            event_prefix(w, "E", tid, e->ticks);
            fputc('}', w->f);
        }
        /* else: the end of a zone whose begin was overwritten; dropped. */
    }
    while (depth) {
        depth--;
        event_prefix(w, "E", tid, last);
        fputs(",\"args\":{\"open_at_dump\":true}}", w->f);
    }
}

/* Each hitch as an instant event on the track of the thread that closed its frame, at the
 * frame's end (its present call), named by its cause. */
static void write_hitches(struct trace_writer *w, const struct hitch_stats *hitches)
{
    for (uint64_t i = 0; hitches && i < hitches->count; i++) {
        const struct hitch *h = &hitches->hitches[i];
        int tid = h->tid ? h->tid : w->pid;
        event_prefix(w, "i", tid, h->end_ticks);
        fprintf(w->f, ",\"s\":\"t\",\"name\":\"hitch +%.1f ms: %s\",\"args\":{\"frame\":%llu,"
                "\"surface\":%u,\"frame_ms\":%.3f,\"median_ms\":%.3f}}",
                (double)(h->frame_ns - h->median_ns) / 1e6, hitch_cause_name(h->cause),
                (unsigned long long)h->frame, h->log, (double)h->frame_ns / 1e6,
                (double)h->median_ns / 1e6);
    }
}

int trace_write(FILE *f, const struct recording *rec, const struct hitch_stats *hitches)
{
    const struct fscope_event **stack = malloc(sizeof(*stack) * TRACE_MAX_DEPTH);
    if (!stack)
        return -ENOMEM;
    struct trace_writer w = { .rec = rec, .f = f, .pid = rec->pid, .first = true };
    char clock[160];
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":", f);
    json_write_string(f, recording_clock_describe(rec, clock, sizeof(clock)));
    fputs(",\"timestamps\":\"CLOCK_MONOTONIC microseconds\"},\"traceEvents\":[", f);
    for (unsigned i = 0; i < rec->thread_count; i++)
        write_thread(&w, &rec->threads[i], stack);
    gpu_zones_write_trace(f, rec, w.pid, w.base_ns, &w.first);
    write_hitches(&w, hitches);
    fputs("\n]}\n", f);
    free(stack);
    return 0;
}
