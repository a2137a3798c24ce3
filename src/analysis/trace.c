/* Chrome Trace Event export of the flight recorder.
 *
 * Each thread's ring is replayed with a stack: an exit with nothing open is the orphaned end
 * of a zone whose begin the ring overwrote, and is dropped; zones still open at the end are
 * closed at the last moment the thread is known to have been in them. So every B has its E. */
#include "trace.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "engine.h"
#include "framescope.h"
#include "gpu_zones.h"
#include "hitches.h"
#include "report.h"
#include "zones.h"

#define TRACE_MAX_DEPTH 64

/* VkObjectType values (analysis does not see Vulkan's headers). */
#define OBJECT_TYPE_COMMAND_BUFFER 6
#define OBJECT_TYPE_COMMAND_POOL 25

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

/* The app's name for it, else prefix and its handle in hex ("command buffer 0x55d0..."). */
static const char *object_label(const struct recording *rec, uint32_t device_id, int32_t type,
                                uint64_t handle, const char *prefix, char *buf, size_t len)
{
    const char *name = recording_object_name(rec, device_id, type, handle);
    if (name)
        snprintf(buf, len, "%s", name);
    else
        snprintf(buf, len, "%s0x%llx", prefix, (unsigned long long)handle);
    return buf;
}

/* An "X" event up to its name; the caller writes its args and closes it. */
static void interval_prefix(struct trace_writer *w, int tid, uint64_t begin, uint64_t end,
                            const char *name)
{
    event_prefix(w, "X", tid, begin);
    double dur = (double)(recording_mono_ns(w->rec, end) - recording_mono_ns(w->rec, begin)) /
                 1000.0;
    fprintf(w->f, ",\"dur\":%.3f,\"name\":", dur);
    json_write_string(w->f, name);
}

/* Each command buffer recording, vkBeginCommandBuffer to vkEndCommandBuffer's return, and each
 * command pool call, on the track of the thread that made it. */
static void write_engine_intervals(struct trace_writer *w)
{
    const struct recording *rec = w->rec;
    const struct recording_engine *g = &rec->engine;
    char cb[OBJECT_NAME_SIZE + 32], pool[OBJECT_NAME_SIZE + 32], name[2 * OBJECT_NAME_SIZE + 64];
    for (uint64_t i = 0; i < g->recording_count; i++) {
        const struct cmd_recording *r = &g->recordings[i];
        object_label(rec, r->device_id, OBJECT_TYPE_COMMAND_BUFFER, r->cb, "command buffer ", cb,
                     sizeof(cb));
        snprintf(name, sizeof(name), "record %s", cb);
        interval_prefix(w, r->tid, r->begin_ticks, r->end_ticks, name);
        fprintf(w->f, ",\"args\":{\"commands\":%u,\"draws\":%u,\"binds\":%u,\"redundant\":%u,"
                "\"secondary\":%s,\"pool\":", r->commands, r->draws, r->binds, r->redundant,
                r->flags & CMD_RECORDING_SECONDARY ? "true" : "false");
        json_write_string(w->f, object_label(rec, r->device_id, OBJECT_TYPE_COMMAND_POOL, r->pool, "",
                                             pool, sizeof(pool)));
        if (r->flags & CMD_RECORDING_FAILED)
            fputs(",\"failed\":true", w->f);
        fputs("}}", w->f);
    }
    static const char *const calls[] = {
        [POOL_OP_RESET_POOL] = "vkResetCommandPool",
        [POOL_OP_RESET_BUFFER] = "vkResetCommandBuffer",
        [POOL_OP_FREE] = "vkFreeCommandBuffers",
        [POOL_OP_TRIM] = "vkTrimCommandPool",
    };
    for (uint64_t i = 0; i < g->pool_op_count; i++) {
        const struct pool_op *op = &g->pool_ops[i]; /* kind checked by the reader */
        object_label(rec, op->device_id, OBJECT_TYPE_COMMAND_POOL, op->pool, "", pool, sizeof(pool));
        bool buffer = op->kind == POOL_OP_RESET_BUFFER;
        if (buffer)
            object_label(rec, op->device_id, OBJECT_TYPE_COMMAND_BUFFER, op->cb, "", cb, sizeof(cb));
        /* Named by the object the call takes first: vkResetCommandBuffer's command buffer,
         * the others' pool. */
        snprintf(name, sizeof(name), "%s %s", calls[op->kind], buffer ? cb : pool);
        interval_prefix(w, op->tid, op->begin_ticks, op->end_ticks, name);
        fputs(",\"args\":{\"pool\":", w->f);
        json_write_string(w->f, pool);
        if (buffer) {
            fputs(",\"command_buffer\":", w->f);
            json_write_string(w->f, cb);
        }
        if (op->kind == POOL_OP_FREE)
            fprintf(w->f, ",\"count\":%u", op->count);
        fputs("}}", w->f);
    }
}

/* One sample of a counter track of the app's process. */
static void write_counter(struct trace_writer *w, uint64_t ticks, const char *name,
                          const char *key, double value)
{
    event_prefix(w, "C", w->pid, ticks);
    fputs(",\"name\":", w->f);
    json_write_string(w->f, name);
    fprintf(w->f, ",\"args\":{\"%s\":%.6f}}", key, isfinite(value) ? value : 0.0);
}

static double mib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

/* The process's gauges as the kernel sampler read them, and VK_EXT_memory_budget's heaps. */
static void write_gauge_counters(struct trace_writer *w)
{
    const struct recording_engine *g = &w->rec->engine;
    bool descriptors = false;
    for (uint64_t i = 0; i < g->gauge_count; i++) {
        const struct gauge_sample *s = &g->gauges[i];
        descriptors |= s->descriptor_sets || s->descriptor_capacity;
        if (s->rss_bytes) /* 0: not read */
            write_counter(w, s->ticks, "rss MiB", "rss", mib(s->rss_bytes));
    }
    /* No pool ever made: a track of zeros would say the app has no room, not that it has none. */
    for (uint64_t i = 0; descriptors && i < g->gauge_count; i++) {
        const struct gauge_sample *s = &g->gauges[i];
        event_prefix(w, "C", w->pid, s->ticks);
        fprintf(w->f, ",\"name\":\"descriptor sets\",\"args\":{\"sets\":%llu,\"capacity\":%llu}}",
                (unsigned long long)s->descriptor_sets,
                (unsigned long long)s->descriptor_capacity);
    }
    /* Heaps are named by their device only when budgets of two devices were read. */
    bool devices = false;
    for (uint64_t i = 1; i < g->budget_count; i++)
        devices |= g->budgets[i].device_id != g->budgets[0].device_id;
    for (uint64_t i = 0; i < g->budget_count; i++) {
        const struct budget_sample *b = &g->budgets[i];
        for (uint32_t k = 0; k < b->heap_count; k++) { /* at most BUDGET_HEAPS: checked */
            char device[32] = "", name[96];
            if (devices)
                snprintf(device, sizeof(device), "device %u ", b->device_id);
            snprintf(name, sizeof(name), "%sheap %u usage MiB", device, k);
            write_counter(w, b->ticks, name, "usage", mib(b->usage[k]));
            snprintf(name, sizeof(name), "%sheap %u budget MiB", device, k);
            write_counter(w, b->ticks, name, "budget", mib(b->budget[k]));
        }
    }
}

/* Per frame, at its start, so that each value holds over the frame it describes: its rate,
 * its CPU part and its GPU busy time as frames.csv gives them (GPU busy only for a frame whose
 * submissions were timed). */
static void write_frame_counters(struct trace_writer *w, unsigned primary_log)
{
    const struct recording *rec = w->rec;
    for (unsigned l = 0; l < rec->log_count; l++) {
        const struct recording_log *log = &rec->logs[l];
        char fps[48], cpu[48], gpu[48], surface[24] = "";
        if (l != primary_log)
            snprintf(surface, sizeof(surface), " surface %u", l);
        snprintf(fps, sizeof(fps), "fps%s", surface);
        snprintf(cpu, sizeof(cpu), "cpu ms%s", surface);
        snprintf(gpu, sizeof(gpu), "gpu busy ms%s", surface);
        for (uint64_t i = 0; i < log->frame_count; i++) {
            const struct fscope_frame *fr = &log->frames[i];
            struct frame_budget_ns b;
            frame_budget(rec, fr, NULL, &b); /* the evidence only splits blocks: not used */
            if (b.frame > 0)
                write_counter(w, fr->start_ticks, fps, "fps", 1e9 / (double)b.frame);
            write_counter(w, fr->start_ticks, cpu, "cpu", (double)b.cpu / 1e6);
            if (b.gpu_timed)
                write_counter(w, fr->start_ticks, gpu, "busy", (double)b.gpu_busy / 1e6);
        }
    }
}

int trace_write_run(FILE *f, const struct recording *rec, const struct trace_run *run)
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
    write_hitches(&w, run ? run->hitches : NULL);
    write_engine_intervals(&w);
    write_gauge_counters(&w);
    const struct engine_stats *engine = run ? run->engine : NULL;
    for (uint64_t i = 0; engine && i < engine->live_point_count; i++)
        write_counter(&w, engine->live_points[i].ticks, "device memory MiB", "live",
                      mib(engine->live_points[i].live_bytes));
    if (run && run->frame_counters)
        write_frame_counters(&w, run->primary_log);
    fputs("\n]}\n", f);
    free(stack);
    return 0;
}

int trace_write(FILE *f, const struct recording *rec, const struct hitch_stats *hitches)
{
    const struct trace_run run = { .hitches = hitches };
    return trace_write_run(f, rec, &run);
}
