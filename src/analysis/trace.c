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
#include "frames.h"
#include "gpu_zones.h"
#include "hitches.h"
#include "report.h"
#include "zones.h"

/* VkObjectType values (analysis does not see Vulkan's headers). */
#define OBJECT_TYPE_COMMAND_BUFFER 6
#define OBJECT_TYPE_COMMAND_POOL 25

struct trace_writer {
    const struct recording *rec;
    struct emit *e;
    int pid;
    int64_t base_ns;
    bool first;
    uint64_t window_from; /* events before this tick are left out (0: none is) */
};

static bool in_window(const struct trace_writer *w, uint64_t ticks)
{
    return ticks >= w->window_from;
}

/* An event's opening: every one but the first follows a comma. */
static void event_open(struct trace_writer *w)
{
    emit_str(w->e, w->first ? "\n{" : ",\n{");
    w->first = false;
}

static void event_prefix(struct trace_writer *w, const char *ph, int tid, uint64_t ticks)
{
    struct emit *e = w->e;
    event_open(w);
    emit_str(e, "\"ph\":\"");
    emit_str(e, ph);
    emit_str(e, "\",\"pid\":");
    emit_i64(e, w->pid);
    emit_str(e, ",\"tid\":");
    emit_i64(e, tid);
    emit_str(e, ",\"ts\":");
    /* Microseconds as "%.3f" of (double)ns / 1000.0 wrote them. */
    emit_scaled(e, (double)(recording_mono_ns(w->rec, ticks) - w->base_ns), 3);
}

int trace_thread_replay(const struct recording *rec, const struct recording_thread *t,
                        trace_zone_fn fn, void *ctx)
{
    const struct fscope_event **stack = malloc(sizeof(*stack) * TRACE_MAX_DEPTH);
    if (!stack)
        return -ENOMEM;
    const struct fscope_event *events = t->events;
    unsigned depth = 0, overflow = 0;
    uint64_t last = 0;
    for (uint64_t i = 0; i < t->event_count; i++) {
        const struct fscope_event *e = &events[i];
        /* A ring wraps in order; a timestamp going backwards can only be a torn slot. */
        if (e->ticks < last)
            continue;
        last = e->ticks;
        const struct rec_loc *loc = e->loc ? recording_loc_find(rec, e->loc) : NULL;
        if (loc && (loc->flags & FSCOPE_LOC_INSTANT)) {
            fn(ctx, &(struct trace_zone_event){ TRACE_ZONE_INSTANT, e->ticks, loc->name, e,
                                                depth, false });
        } else if (e->loc) {
            if (depth >= TRACE_MAX_DEPTH) {
                overflow++;
                continue;
            }
            stack[depth] = e;
            fn(ctx, &(struct trace_zone_event){ TRACE_ZONE_BEGIN, e->ticks, loc ? loc->name : "?",
                                                e, depth, false });
            depth++;
        } else if (overflow) {
            overflow--;
        } else if (depth) {
            depth--;
            fn(ctx, &(struct trace_zone_event){ TRACE_ZONE_END, e->ticks, NULL, stack[depth],
                                                depth, false });
        }
        /* else: the end of a zone whose begin was overwritten; dropped. */
    }
    while (depth) {
        depth--;
        fn(ctx, &(struct trace_zone_event){ TRACE_ZONE_END, last, NULL, stack[depth], depth,
                                            true });
    }
    free(stack);
    return 0;
}

struct json_thread {
    struct trace_writer *w;
    int tid;
    bool dropped[TRACE_MAX_DEPTH]; /* the zone open at each depth began before the window */
};

static void json_zone(void *ctx, const struct trace_zone_event *e)
{
    struct json_thread *j = ctx;
    struct trace_writer *w = j->w;
    switch (e->kind) {
    case TRACE_ZONE_INSTANT:
        if (!in_window(w, e->ticks))
            return;
        event_prefix(w, "i", j->tid, e->ticks);
        emit_str(w->e, ",\"s\":\"t\",\"name\":");
        emit_json_string(w->e, e->name);
        emit_char(w->e, '}');
        break;
    case TRACE_ZONE_BEGIN:
        j->dropped[e->depth] = !in_window(w, e->ticks);
        if (j->dropped[e->depth])
            return;
        event_prefix(w, "B", j->tid, e->ticks);
        emit_str(w->e, ",\"name\":");
        emit_json_string(w->e, e->name);
        emit_char(w->e, '}');
        break;
    case TRACE_ZONE_END:
        if (j->dropped[e->depth])
            return;
        event_prefix(w, "E", j->tid, e->ticks);
        emit_str(w->e, e->open_at_dump ? ",\"args\":{\"open_at_dump\":true}}" : "}");
        break;
    }
}

static int write_thread(struct trace_writer *w, const struct recording_thread *t)
{
    event_open(w);
    emit_printf(w->e, "\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\","
                "\"args\":{\"name\":", w->pid, t->tid);
    emit_json_string(w->e, t->name[0] ? t->name : "thread");
    emit_str(w->e, "}}");
    struct json_thread j = { .w = w, .tid = t->tid };
    return trace_thread_replay(w->rec, t, json_zone, &j);
}

/* Each hitch as an instant event on the track of the thread that closed its frame, at the
 * frame's end (its present call), named by its cause. */
static int write_hitches(struct trace_writer *w, const struct hitch_stats *hitches)
{
    struct sorter_cursor c;
    if (!hitches_open(&c, hitches))
        return hitches && hitches->count ? -ENOMEM : 0;
    uint64_t read = 0;
    for (const struct hitch *h; (h = sorter_next(&c)); read++) {
        if (!in_window(w, h->end_ticks))
            continue;
        char name[TRACE_HITCH_NAME_SIZE];
        event_prefix(w, "i", h->tid ? h->tid : w->pid, h->end_ticks);
        emit_str(w->e, ",\"s\":\"t\",\"name\":");
        emit_json_string(w->e, trace_hitch_name(h, name));
        emit_printf(w->e, ",\"args\":{\"frame\":%llu,\"surface\":%u,\"frame_ms\":%.3f,"
                    "\"median_ms\":%.3f}}", (unsigned long long)h->frame, h->log,
                    (double)h->frame_ns / 1e6, (double)h->median_ns / 1e6);
    }
    sorter_cursor_close(&c);
    return read == hitches->count ? 0 : -ENOMEM;
}

const char *trace_hitch_name(const struct hitch *h, char name[TRACE_HITCH_NAME_SIZE])
{
    snprintf(name, TRACE_HITCH_NAME_SIZE, "hitch +%.1f ms: %s",
             (double)(h->frame_ns - h->median_ns) / 1e6, hitch_cause_name(h->cause));
    return name;
}

/* The bytes of text that fit before end, keeping room for the NUL (what snprintf keeps). */
static char *put_text(char *at, const char *end, const char *text)
{
    size_t len = strlen(text);
    size_t room = (size_t)(end - at) - 1;
    if (len > room)
        len = room;
    memcpy(at, text, len);
    at[len] = '\0';
    return at + len;
}

/* The app's name for it, else prefix and its handle in hex ("command buffer 0x55d0..."), as
 * snprintf's "%s" and "%s0x%llx" would write them, cut to len alike: this runs for every
 * recording, where snprintf was most of trace.json's own time. */
static const char *object_label(const struct recording *rec, uint32_t device_id, int32_t type,
                                uint64_t handle, const char *prefix, char *buf, size_t len)
{
    const char *name = recording_object_name(rec, device_id, type, handle);
    const char *end = buf + len;
    if (name) {
        put_text(buf, end, name);
        return buf;
    }
    char hex[2 + 16 + 1] = "0x";
    unsigned digits = 1;
    while (digits < 16 && handle >> (4 * digits))
        digits++;
    for (unsigned k = 0; k < digits; k++)
        hex[2 + k] = "0123456789abcdef"[(handle >> (4 * (digits - 1 - k))) & 15];
    hex[2 + digits] = '\0';
    put_text(put_text(buf, end, prefix), end, hex);
    return buf;
}

struct trace_interval trace_engine_interval(const struct recording *rec,
                                            const struct cmd_recording *r,
                                            const struct pool_op *op,
                                            struct trace_engine_words *w)
{
    if (r) {
        object_label(rec, r->device_id, OBJECT_TYPE_COMMAND_BUFFER, r->cb, "command buffer ",
                     w->cb, sizeof(w->cb));
        put_text(put_text(w->name, w->name + sizeof(w->name), "record "),
                 w->name + sizeof(w->name), w->cb);
        object_label(rec, r->device_id, OBJECT_TYPE_COMMAND_POOL, r->pool, "", w->pool,
                     sizeof(w->pool));
        return (struct trace_interval){ r->tid, r->begin_ticks, r->end_ticks, w->name, w->pool,
                                        NULL, r, NULL };
    }
    static const char *const calls[] = {
        [POOL_OP_RESET_POOL] = "vkResetCommandPool",
        [POOL_OP_RESET_BUFFER] = "vkResetCommandBuffer",
        [POOL_OP_FREE] = "vkFreeCommandBuffers",
        [POOL_OP_TRIM] = "vkTrimCommandPool",
    };
    /* kind checked by the reader */
    object_label(rec, op->device_id, OBJECT_TYPE_COMMAND_POOL, op->pool, "", w->pool,
                 sizeof(w->pool));
    bool buffer = op->kind == POOL_OP_RESET_BUFFER;
    if (buffer)
        object_label(rec, op->device_id, OBJECT_TYPE_COMMAND_BUFFER, op->cb, "", w->cb,
                     sizeof(w->cb));
    /* Named by the object the call takes first: vkResetCommandBuffer's command buffer, the
     * others' pool. */
    char *end = w->name + sizeof(w->name);
    put_text(put_text(put_text(w->name, end, calls[op->kind]), end, " "), end,
             buffer ? w->cb : w->pool);
    return (struct trace_interval){ op->tid, op->begin_ticks, op->end_ticks, w->name, w->pool,
                                    buffer ? w->cb : NULL, NULL, op };
}

/* An interval's times and objects, without its names. */
static struct trace_interval engine_interval_unnamed(const struct cmd_recording *r,
                                                     const struct pool_op *op)
{
    if (r)
        return (struct trace_interval){ r->tid, r->begin_ticks, r->end_ticks, NULL, NULL, NULL,
                                        r, NULL };
    return (struct trace_interval){ op->tid, op->begin_ticks, op->end_ticks, NULL, NULL, NULL,
                                    NULL, op };
}

void trace_engine_intervals(const struct recording *rec, bool named, trace_interval_fn fn,
                            void *ctx)
{
    const struct recording_engine *g = &rec->engine;
    struct trace_engine_words words;
    struct sorter_cursor c;
    const struct cmd_recording *r;
    const struct pool_op *op;
    if (g->recording_count && sorter_cursor_open(&c, &g->recordings)) {
        while ((r = sorter_next(&c))) {
            struct trace_interval iv = named ? trace_engine_interval(rec, r, NULL, &words)
                                             : engine_interval_unnamed(r, NULL);
            fn(ctx, &iv);
        }
        sorter_cursor_close(&c);
    }
    if (g->pool_op_count && sorter_cursor_open(&c, &g->pool_ops)) {
        while ((op = sorter_next(&c))) {
            struct trace_interval iv = named ? trace_engine_interval(rec, NULL, op, &words)
                                             : engine_interval_unnamed(NULL, op);
            fn(ctx, &iv);
        }
        sorter_cursor_close(&c);
    }
}

/* An "X" event up to its name; the caller writes its args and closes it. */
static void interval_prefix(struct trace_writer *w, int tid, uint64_t begin, uint64_t end,
                            const char *name)
{
    event_prefix(w, "X", tid, begin);
    emit_str(w->e, ",\"dur\":");
    emit_scaled(w->e,
                (double)(recording_mono_ns(w->rec, end) - recording_mono_ns(w->rec, begin)), 3);
    emit_str(w->e, ",\"name\":");
    emit_json_string(w->e, name);
}

static void json_interval(void *ctx, const struct trace_interval *iv)
{
    struct trace_writer *w = ctx;
    if (!in_window(w, iv->begin_ticks))
        return;
    interval_prefix(w, iv->tid, iv->begin_ticks, iv->end_ticks, iv->name);
    if (iv->recording) {
        const struct cmd_recording *r = iv->recording;
        emit_str(w->e, ",\"args\":{\"commands\":");
        emit_u64(w->e, r->commands);
        emit_str(w->e, ",\"draws\":");
        emit_u64(w->e, r->draws);
        emit_str(w->e, ",\"binds\":");
        emit_u64(w->e, r->binds);
        emit_str(w->e, ",\"redundant\":");
        emit_u64(w->e, r->redundant);
        emit_str(w->e, r->flags & CMD_RECORDING_SECONDARY ? ",\"secondary\":true,\"pool\":"
                                                          : ",\"secondary\":false,\"pool\":");
        emit_json_string(w->e, iv->pool);
        if (r->flags & CMD_RECORDING_FAILED)
            emit_str(w->e, ",\"failed\":true");
    } else {
        emit_str(w->e, ",\"args\":{\"pool\":");
        emit_json_string(w->e, iv->pool);
        if (iv->command_buffer) {
            emit_str(w->e, ",\"command_buffer\":");
            emit_json_string(w->e, iv->command_buffer);
        }
        if (iv->pool_op->kind == POOL_OP_FREE)
            emit_printf(w->e, ",\"count\":%u", iv->pool_op->count);
    }
    emit_str(w->e, "}}");
}

static double mib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

static void counter1(trace_counter_fn fn, void *ctx, uint64_t ticks, const char *name,
                     const char *key, double value)
{
    fn(ctx, &(struct trace_counter){ ticks, name, 1, { key }, { value }, false });
}

/* The process's gauges as the kernel sampler read them, and VK_EXT_memory_budget's heaps. */
static void gauge_counters(const struct recording *rec, trace_counter_fn fn, void *ctx)
{
    const struct recording_engine *g = &rec->engine;
    bool descriptors = false;
    struct sorter_cursor c;
    bool open = g->gauge_count && sorter_cursor_open(&c, &g->gauges);
    for (const struct gauge_sample *s; open && (s = sorter_next(&c));) {
        descriptors |= s->descriptor_sets || s->descriptor_capacity;
        if (s->rss_bytes) /* 0: not read */
            counter1(fn, ctx, s->ticks, "rss MiB", "rss", mib(s->rss_bytes));
    }
    if (open)
        sorter_cursor_close(&c);
    /* No pool ever made: a track of zeros would say the app has no room, not that it has none. */
    open = descriptors && sorter_cursor_open(&c, &g->gauges);
    for (const struct gauge_sample *s; open && (s = sorter_next(&c));)
        fn(ctx, &(struct trace_counter){ s->ticks, "descriptor sets", 2, { "sets", "capacity" },
                                         { (double)s->descriptor_sets,
                                           (double)s->descriptor_capacity }, true });
    if (open)
        sorter_cursor_close(&c);
    /* Heaps are named by their device only when budgets of two devices were read. */
    bool devices = false, first = true;
    uint32_t first_device = 0;
    open = g->budget_count && sorter_cursor_open(&c, &g->budgets);
    for (const struct budget_sample *b; open && (b = sorter_next(&c)); first = false) {
        first_device = first ? b->device_id : first_device;
        devices |= b->device_id != first_device;
    }
    if (open)
        sorter_cursor_close(&c);
    open = g->budget_count && sorter_cursor_open(&c, &g->budgets);
    for (const struct budget_sample *b; open && (b = sorter_next(&c));) {
        for (uint32_t k = 0; k < b->heap_count; k++) { /* at most BUDGET_HEAPS: checked */
            char device[32] = "", name[96];
            if (devices)
                snprintf(device, sizeof(device), "device %u ", b->device_id);
            snprintf(name, sizeof(name), "%sheap %u usage MiB", device, k);
            counter1(fn, ctx, b->ticks, name, "usage", mib(b->usage[k]));
            snprintf(name, sizeof(name), "%sheap %u budget MiB", device, k);
            counter1(fn, ctx, b->ticks, name, "budget", mib(b->budget[k]));
        }
    }
    if (open)
        sorter_cursor_close(&c);
}

/* Per frame, at its start, so that each value holds over the frame it describes: its rate,
 * its CPU part and its GPU busy time as frames.csv gives them (GPU busy only for a frame whose
 * submissions were timed). */
static void frame_counters(const struct recording *rec, unsigned primary_log, trace_counter_fn fn,
                           void *ctx)
{
    for (unsigned l = 0; l < rec->log_count; l++) {
        const struct recording_log *log = &rec->logs[l];
        char fps[48], cpu[48], gpu[48], surface[24] = "";
        if (l != primary_log)
            snprintf(surface, sizeof(surface), " surface %u", l);
        snprintf(fps, sizeof(fps), "fps%s", surface);
        snprintf(cpu, sizeof(cpu), "cpu ms%s", surface);
        snprintf(gpu, sizeof(gpu), "gpu busy ms%s", surface);
        struct frame_cursor c;
        if (!frame_cursor_open(&c, rec, log))
            continue; /* no memory: this surface's counters are left out */
        for (uint64_t i = 0; i < log->frame_count; i++) {
            const struct fscope_frame *fr = frame_at(&c, i);
            struct frame_budget_ns b;
            /* The evidence only splits blocks: not used. */
            frame_budget(rec, fr, frame_extra_at(&c, i), NULL, &b);
            if (b.frame > 0)
                fn(ctx, &(struct trace_counter){ fr->start_ticks, fps, 1, { "fps" },
                                                 { 1e9 / (double)b.frame }, false, false, 0,
                                                 b.frame });
            fn(ctx, &(struct trace_counter){ fr->start_ticks, cpu, 1, { "cpu" },
                                             { (double)b.cpu / 1e6 }, false, true, b.cpu, 0 });
            if (b.gpu_timed)
                fn(ctx, &(struct trace_counter){ fr->start_ticks, gpu, 1, { "busy" },
                                                 { (double)b.gpu_busy / 1e6 }, false, true,
                                                 b.gpu_busy, 0 });
        }
        frame_cursor_close(&c);
    }
}

void trace_counters(const struct recording *rec, const struct trace_run *run, trace_counter_fn fn,
                    void *ctx)
{
    gauge_counters(rec, fn, ctx);
    const struct engine_stats *engine = run ? run->engine : NULL;
    struct sorter_cursor c;
    bool open = engine && engine->live_point_count && sorter_cursor_open(&c, &engine->live_points);
    for (const struct engine_live_point *p; open && (p = sorter_next(&c));)
        counter1(fn, ctx, p->ticks, "device memory MiB", "live", mib(p->live_bytes));
    if (open)
        sorter_cursor_close(&c);
    if (run && run->frame_counters)
        frame_counters(rec, run->primary_log, fn, ctx);
}

/* One sample of a counter track of the app's process. */
static void json_counter(void *ctx, const struct trace_counter *c)
{
    struct trace_writer *w = ctx;
    if (!in_window(w, c->ticks))
        return;
    event_prefix(w, "C", w->pid, c->ticks);
    emit_str(w->e, ",\"name\":");
    emit_json_string(w->e, c->name);
    emit_str(w->e, ",\"args\":{");
    for (unsigned k = 0; k < c->count; k++) {
        double value = isfinite(c->values[k]) ? c->values[k] : 0.0;
        emit_str(w->e, k ? ",\"" : "\"");
        emit_str(w->e, c->keys[k]);
        emit_str(w->e, "\":");
        if (c->integer)
            emit_u64(w->e, (unsigned long long)value);
        else if (c->duration && k == 0 && value == (double)c->ns / 1e6)
            emit_scaled(w->e, (double)c->ns, 6); /* "%.6f" of value, without printf */
        else
            emit_decimal(w->e, value, 6);
    }
    emit_str(w->e, "}}");
}

/* The latest moment anything of the trace happened at: where its window ends. */
static void span_note(uint64_t ticks, uint64_t *first, uint64_t *last)
{
    if (ticks && ticks < *first)
        *first = ticks;
    if (ticks > *last)
        *last = ticks;
}

static void counter_span(void *ctx, const struct trace_counter *c)
{
    uint64_t *range = ctx;
    span_note(c->ticks, &range[0], &range[1]);
}

static void interval_span(void *ctx, const struct trace_interval *iv)
{
    uint64_t *range = ctx;
    span_note(iv->begin_ticks, &range[0], &range[1]);
    span_note(iv->end_ticks, &range[0], &range[1]);
}

bool trace_time_range(const struct recording *rec, const struct trace_run *run,
                      uint64_t *ret_first, uint64_t *ret_last)
{
    uint64_t range[2] = { UINT64_MAX, 0 };
    for (unsigned i = 0; i < rec->thread_count; i++) {
        const struct recording_thread *t = &rec->threads[i];
        if (t->event_count) {
            span_note(t->events[0].ticks, &range[0], &range[1]);
            span_note(t->events[t->event_count - 1].ticks, &range[0], &range[1]);
        }
    }
    struct sorter_cursor c;
    if (rec->gpu_zone_count && sorter_cursor_open(&c, &rec->gpu_zones)) {
        const struct gpu_zone_span *z;
        while ((z = sorter_next(&c))) {
            span_note(z->begin, &range[0], &range[1]);
            span_note(z->end, &range[0], &range[1]);
        }
        sorter_cursor_close(&c);
    }
    if (run && hitches_open(&c, run->hitches)) {
        for (const struct hitch *h; (h = sorter_next(&c));)
            span_note(h->end_ticks, &range[0], &range[1]);
        sorter_cursor_close(&c);
    }
    trace_engine_intervals(rec, false, interval_span, range);
    trace_counters(rec, run, counter_span, range);
    if (range[1] == 0)
        return false;
    *ret_first = range[0];
    *ret_last = range[1];
    return true;
}

int trace_write_run(FILE *f, const struct recording *rec, const struct trace_run *run)
{
    struct emit out;
    struct trace_writer w = { .rec = rec, .e = &out, .pid = rec->pid, .first = true };
    uint64_t first, last;
    int64_t window_ns = run ? run->window_ns : 0;
    bool windowed = false;
    if (window_ns > 0 && trace_time_range(rec, run, &first, &last) &&
        recording_ns(rec, last - first) > (double)window_ns) {
        windowed = true;
        w.window_from = last - (uint64_t)((double)window_ns / rec->ns_per_tick);
    }
    char clock[160];
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":", f);
    json_write_string(f, recording_clock_describe(rec, clock, sizeof(clock)));
    fputs(",\"timestamps\":\"CLOCK_MONOTONIC microseconds\"", f);
    if (windowed)
        fprintf(f, ",\"window\":\"the last %.0f s of the run only: events before %.3f us left "
                "out; trace.perfetto-trace holds them all\"", (double)window_ns / 1e9,
                (double)recording_mono_ns(rec, w.window_from) / 1000.0);
    fputs("},\"traceEvents\":[", f);
    emit_init(&out, f);
    for (unsigned i = 0; i < rec->thread_count; i++) {
        int e = write_thread(&w, &rec->threads[i]);
        if (e) {
            emit_flush(&out);
            return e;
        }
    }
    gpu_zones_write_trace(&out, rec, w.pid, w.base_ns, w.window_from, &w.first);
    int e = write_hitches(&w, run ? run->hitches : NULL);
    trace_engine_intervals(rec, true, json_interval, &w);
    trace_counters(rec, run, json_counter, &w);
    emit_str(&out, "\n]}\n");
    emit_flush(&out);
    return e;
}

int trace_write(FILE *f, const struct recording *rec, const struct hitch_stats *hitches)
{
    const struct trace_run run = { .hitches = hitches };
    return trace_write_run(f, rec, &run);
}
