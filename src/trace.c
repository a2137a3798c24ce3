/* Chrome Trace Event export of the flight recorder.
 *
 * Each thread's ring is replayed with a stack: an exit with nothing open is the orphaned end
 * of a zone whose begin the ring overwrote, and is dropped; zones still open at the end are
 * closed at the last moment the thread is known to have been in them. So every B has its E. */
#include "trace.h"

#include "capture_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "framescope.h"
#include "registry.h"

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
    FILE *f;
    int pid;
    int64_t base_ns;
    bool first;
};

static void event_prefix(struct trace_writer *w, const char *ph, int tid, uint64_t ticks)
{
    double us = (double)(fscope_ticks_to_mono_ns(ticks) - w->base_ns) / 1000.0;
    fprintf(w->f, "%s\n{\"ph\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f", w->first ? "" : ",",
            ph, w->pid, tid, us);
    w->first = false;
}

static void write_thread(struct trace_writer *w, struct fscope_collector *c, int tid,
                         struct fscope_event *events, const struct fscope_event **stack)
{
    uint64_t lost;
    uint64_t count = registry_ring_snapshot(c, events, &lost);

    fprintf(w->f, "%s\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\","
            "\"args\":{\"name\":", w->first ? "" : ",", w->pid, tid);
    json_write_string(w->f, c->name[0] ? c->name : "thread");
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
        if (e->loc && (e->loc->flags & FSCOPE_LOC_INSTANT)) {
            event_prefix(w, "i", tid, e->ticks);
            fputs(",\"s\":\"t\",\"name\":", w->f);
            json_write_string(w->f, e->loc->name);
            fputc('}', w->f);
        } else if (e->loc) {
            if (depth >= FSCOPE_MAX_DEPTH) {
                overflow++;
                continue;
            }
            stack[depth++] = &events[i];
            event_prefix(w, "B", tid, e->ticks);
            fputs(",\"name\":", w->f);
            json_write_string(w->f, e->loc->name);
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
    (void)lost;
}

int trace_write(FILE *f)
{
    uint32_t capacity = registry_ring_events();
    struct fscope_event *events = malloc(sizeof(*events) * capacity);
    const struct fscope_event **stack = malloc(sizeof(*stack) * FSCOPE_MAX_DEPTH);
    if (!events || !stack) {
        free(events);
        free(stack);
        return -ENOMEM;
    }
    struct trace_writer w = { .f = f, .pid = (int)getpid(), .first = true };
    w.base_ns = 0;
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":", f);
    json_write_string(f, fscope_clock_describe());
    fputs(",\"timestamps\":\"CLOCK_MONOTONIC microseconds\"},\"traceEvents\":[", f);
    unsigned n = registry_slot_count();
    for (unsigned i = 0; i < n; i++) {
        struct fscope_collector *c = registry_slot(i);
        int state = atomic_load_explicit(&c->state, memory_order_acquire);
        if (state == SLOT_LIVE || state == SLOT_EXITED)
            write_thread(&w, c, c->tid, events, stack);
        else if (state == SLOT_EXTERNAL)
            write_thread(&w, c, 1000000 + (int)i, events, stack); /* its own track */
    }
    fputs("\n]}\n", f);
    free(events);
    free(stack);
    return 0;
}

static int trace_writer(FILE *f, const void *arg)
{
    (void)arg;
    return trace_write(f);
}

FSCOPE_EXPORT int fscope_trace_dump(const char *path)
{
    if (!path || !*path)
        return -EINVAL;
    /* An exclusive, unpredictable temporary name beside path, renamed when complete. */
    return capture_write_file(path, trace_writer, NULL);
}
