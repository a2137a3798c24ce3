#include "trace_perfetto.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#ifdef FSCOPE_HAVE_ZLIB
#include <zlib.h>
#endif

#include "frames.h"
#include "hitches.h"
#include "proto.h"

/* Field numbers and values of Perfetto's protos (protos/perfetto/trace/...; the subset the
 * tests decode with is tests/perfetto/perfetto_subset.proto). */
enum {
    TRACE_PACKET = 1,
};
enum {
    PACKET_TIMESTAMP = 8,
    PACKET_SEQUENCE_ID = 10, /* trusted_packet_sequence_id */
    PACKET_TRACK_EVENT = 11,
    PACKET_INTERNED_DATA = 12,
    PACKET_SEQUENCE_FLAGS = 13,
    PACKET_COMPRESSED = 50, /* compressed_packets: deflate (zlib) of a Trace's packets */
    PACKET_TRACK_DESCRIPTOR = 60,
};
enum {
    SEQ_INCREMENTAL_STATE_CLEARED = 1,
    SEQ_NEEDS_INCREMENTAL_STATE = 2,
};
enum {
    EVENT_DEBUG_ANNOTATIONS = 4,
    EVENT_TYPE = 9,
    EVENT_NAME_IID = 10,
    EVENT_TRACK_UUID = 11,
    EVENT_COUNTER_VALUE = 30,
    EVENT_DOUBLE_COUNTER_VALUE = 44,
    EVENT_FLOW_IDS = 47,             /* fixed64 */
    EVENT_TERMINATING_FLOW_IDS = 48, /* fixed64 */
};
enum {
    TYPE_SLICE_BEGIN = 1,
    TYPE_SLICE_END = 2,
    TYPE_INSTANT = 3,
    TYPE_COUNTER = 4,
};
enum {
    ANNOTATION_UINT = 3,
    ANNOTATION_DOUBLE = 5,
    ANNOTATION_STRING = 6,
    ANNOTATION_NAME = 10,
};
enum {
    TRACK_UUID = 1,
    TRACK_NAME = 2,
    TRACK_PROCESS = 3,
    TRACK_THREAD = 4,
    TRACK_PARENT_UUID = 5,
    TRACK_COUNTER = 8,
};
enum {
    COUNTER_UNIT = 3,
    UNIT_TIME_NS = 1,
};
enum {
    PROCESS_PID = 1,
    PROCESS_NAME = 6,
    THREAD_PID = 1,
    THREAD_TID = 2,
    THREAD_NAME = 5,
    INTERNED_EVENT_NAMES = 2,
    EVENT_NAME_IID_FIELD = 1,
    EVENT_NAME_NAME = 2,
};

/* Every packet is on this one sequence: interned names hold across the whole file. */
#define SEQUENCE_ID 1
/* Packets compressed together: Perfetto wants each compressed_packets packet under 512 KB,
 * and deflate never grows data by more than a few bytes per 16 KiB block. */
#define BATCH_BYTES (448 * 1024)
/* Tracks the GPU zones of one device, or one thread's command buffer calls, are spread over
 * where intervals overlap without nesting (two queues' zones on one device). An interval that
 * fits none of this many is left out. */
#define MAX_LANES 16

/* Track uuids: a kind in the low 3 bits, an index above, so the common ones stay 1-2 bytes. */
enum track_kind {
    TRACK_KIND_PROCESS = 1,
    TRACK_KIND_THREAD = 2,  /* index: rec->threads */
    TRACK_KIND_FRAMES = 3,  /* index: rec->logs */
    TRACK_KIND_DYNAMIC = 4, /* counters, lanes: in the order they are made */
};

static uint64_t track_uuid(enum track_kind kind, uint64_t index)
{
    return index << 3 | kind;
}

struct interned {
    char *name;
    uint64_t iid; /* 0: slot free */
};

struct counter_track {
    char name[112];
    uint64_t uuid;
};

struct perfetto_writer {
    const struct recording *rec;
    FILE *f;
    struct proto_buf batch; /* packets since the last flush, each a Trace's field 1 */
    struct interned *names; /* open addressing, a power of two */
    size_t name_capacity, name_count;
    struct counter_track *counters;
    size_t counter_count, counter_capacity;
    uint64_t next_dynamic;
    bool failed; /* memory ran out */
    int error;
};

/* Flows: each vkQueueSubmit begin and the GPU submission span it sent, by the ring event. */
struct flow_end {
    const struct fscope_event *event;
    uint64_t ticks;
    uint64_t flow;
};

struct flows {
    struct flow_end *submits, *spans; /* both sorted by event address once matched */
    size_t submit_count, span_count, submit_capacity, span_capacity;
};

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static bool names_grow(struct perfetto_writer *w)
{
    size_t capacity = w->name_capacity ? 2 * w->name_capacity : 256;
    struct interned *names = calloc(capacity, sizeof(*names));
    if (!names)
        return false;
    for (size_t i = 0; i < w->name_capacity; i++) {
        if (!w->names[i].iid)
            continue;
        size_t at = hash_name(w->names[i].name) & (capacity - 1);
        while (names[at].iid)
            at = (at + 1) & (capacity - 1);
        names[at] = w->names[i];
    }
    free(w->names);
    w->names = names;
    w->name_capacity = capacity;
    return true;
}

/* The name's iid; *ret_new when this is its first use (the packet must carry it). 0 when
 * memory ran out. */
static uint64_t intern(struct perfetto_writer *w, const char *name, bool *ret_new)
{
    *ret_new = false;
    if (2 * (w->name_count + 1) > w->name_capacity && !names_grow(w))
        return 0;
    size_t at = hash_name(name) & (w->name_capacity - 1);
    while (w->names[at].iid) {
        if (strcmp(w->names[at].name, name) == 0)
            return w->names[at].iid;
        at = (at + 1) & (w->name_capacity - 1);
    }
    char *copy = strdup(name);
    if (!copy)
        return 0;
    w->names[at] = (struct interned){ copy, ++w->name_count };
    *ret_new = true;
    return w->name_count;
}

/* Deflate's level: 2 (measured on 1,000,000 frames of the demo, tests/bench/README.md): 3.6%
 * more bytes than 6 in 43% of its time, 3.7% fewer than 1 in the same time. The trace is on
 * the run's exit path. */
#define DEFLATE_LEVEL 2

/* Writes the batch out, compressed where zlib is, and empties it. */
static void batch_flush(struct perfetto_writer *w)
{
    struct proto_buf *b = &w->batch;
    if (b->failed)
        w->failed = true;
    if (w->error || w->failed || !b->len) {
        proto_buf_clear(b);
        return;
    }
#ifdef FSCOPE_HAVE_ZLIB
    uLongf packed_len = compressBound((uLong)b->len);
    unsigned char *packed = malloc(packed_len);
    struct proto_buf outer = { 0 };
    if (packed && compress2(packed, &packed_len, b->data, (uLong)b->len, DEFLATE_LEVEL) == Z_OK) {
        size_t packet = proto_begin(&outer, TRACE_PACKET);
        proto_bytes(&outer, PACKET_COMPRESSED, packed, packed_len);
        proto_end(&outer, packet);
    } else {
        outer.failed = true;
    }
    free(packed);
    if (outer.failed)
        w->failed = true;
    else if (fwrite(outer.data, 1, outer.len, w->f) != outer.len)
        w->error = errno ? -errno : -EIO;
    proto_buf_finish(&outer);
#else
    if (fwrite(b->data, 1, b->len, w->f) != b->len)
        w->error = errno ? -errno : -EIO;
#endif
    proto_buf_clear(b);
}

/* A packet on the sequence, at ticks (0: none, as for descriptors); its fields follow, up to
 * packet_end. */
static size_t packet_begin(struct perfetto_writer *w, uint64_t ticks, uint32_t flags)
{
    size_t mark = proto_begin(&w->batch, TRACE_PACKET);
    if (ticks)
        proto_varint(&w->batch, PACKET_TIMESTAMP, (uint64_t)recording_mono_ns(w->rec, ticks));
    proto_varint(&w->batch, PACKET_SEQUENCE_ID, SEQUENCE_ID);
    if (flags)
        proto_varint(&w->batch, PACKET_SEQUENCE_FLAGS, flags);
    return mark;
}

static void packet_end(struct perfetto_writer *w, size_t mark)
{
    proto_end(&w->batch, mark);
    if (w->batch.len >= BATCH_BYTES)
        batch_flush(w);
}

/* A track event's packet up to its TrackEvent's fields (its name interned); the caller adds
 * what else it has and calls event_end with the two marks. */
struct event_marks {
    size_t packet, event;
};

static struct event_marks event_begin(struct perfetto_writer *w, uint64_t ticks, uint64_t track,
                                      unsigned type, const char *name)
{
    struct proto_buf *b = &w->batch;
    struct event_marks m;
    m.packet = packet_begin(w, ticks, SEQ_NEEDS_INCREMENTAL_STATE);
    bool new_name = false;
    uint64_t iid = name ? intern(w, name, &new_name) : 0;
    if (name && !iid)
        w->failed = true;
    if (new_name) {
        size_t interned = proto_begin(b, PACKET_INTERNED_DATA);
        size_t entry = proto_begin(b, INTERNED_EVENT_NAMES);
        proto_varint(b, EVENT_NAME_IID_FIELD, iid);
        proto_string(b, EVENT_NAME_NAME, name);
        proto_end(b, entry);
        proto_end(b, interned);
    }
    m.event = proto_begin(b, PACKET_TRACK_EVENT);
    proto_varint(b, EVENT_TYPE, type);
    proto_varint(b, EVENT_TRACK_UUID, track);
    if (iid)
        proto_varint(b, EVENT_NAME_IID, iid);
    return m;
}

static void event_end(struct perfetto_writer *w, struct event_marks m)
{
    proto_end(&w->batch, m.event);
    packet_end(w, m.packet);
}

static void event(struct perfetto_writer *w, uint64_t ticks, uint64_t track, unsigned type,
                  const char *name)
{
    event_end(w, event_begin(w, ticks, track, type, name));
}

static void annotation_double(struct perfetto_writer *w, const char *name, double value)
{
    size_t mark = proto_begin(&w->batch, EVENT_DEBUG_ANNOTATIONS);
    proto_string(&w->batch, ANNOTATION_NAME, name);
    proto_double(&w->batch, ANNOTATION_DOUBLE, value);
    proto_end(&w->batch, mark);
}

static void annotation_uint(struct perfetto_writer *w, const char *name, uint64_t value)
{
    size_t mark = proto_begin(&w->batch, EVENT_DEBUG_ANNOTATIONS);
    proto_string(&w->batch, ANNOTATION_NAME, name);
    proto_varint(&w->batch, ANNOTATION_UINT, value);
    proto_end(&w->batch, mark);
}

static void annotation_string(struct perfetto_writer *w, const char *name, const char *value)
{
    size_t mark = proto_begin(&w->batch, EVENT_DEBUG_ANNOTATIONS);
    proto_string(&w->batch, ANNOTATION_NAME, name);
    proto_string(&w->batch, ANNOTATION_STRING, value);
    proto_end(&w->batch, mark);
}

/* What a track is: slices and instants, or a counter of values or of nanoseconds. */
enum track_type {
    TRACK_SLICES,
    TRACK_VALUES,
    TRACK_NANOSECONDS,
};

/* A TrackDescriptor: parent 0 for none; a tid > 0 makes it the thread's own track. */
static void track_descriptor(struct perfetto_writer *w, uint64_t uuid, uint64_t parent,
                             const char *name, int tid, enum track_type type)
{
    struct proto_buf *b = &w->batch;
    size_t packet = packet_begin(w, 0, 0);
    size_t track = proto_begin(b, PACKET_TRACK_DESCRIPTOR);
    proto_varint(b, TRACK_UUID, uuid);
    if (parent)
        proto_varint(b, TRACK_PARENT_UUID, parent);
    if (tid > 0) {
        size_t thread = proto_begin(b, TRACK_THREAD);
        proto_varint(b, THREAD_PID, (uint64_t)(int64_t)w->rec->pid);
        proto_varint(b, THREAD_TID, (uint64_t)(int64_t)tid);
        proto_string(b, THREAD_NAME, name);
        proto_end(b, thread);
    } else {
        proto_string(b, TRACK_NAME, name);
    }
    if (type != TRACK_SLICES) {
        size_t descriptor = proto_begin(b, TRACK_COUNTER);
        if (type == TRACK_NANOSECONDS) /* else the name says it ("MiB", "fps") */
            proto_varint(b, COUNTER_UNIT, UNIT_TIME_NS);
        proto_end(b, descriptor);
    }
    proto_end(b, track);
    packet_end(w, packet);
}

static uint64_t dynamic_track(struct perfetto_writer *w, uint64_t parent, const char *name,
                              enum track_type type)
{
    uint64_t uuid = track_uuid(TRACK_KIND_DYNAMIC, w->next_dynamic++);
    track_descriptor(w, uuid, parent, name, 0, type);
    return uuid;
}

static uint64_t process_track(void)
{
    return track_uuid(TRACK_KIND_PROCESS, 0);
}

/* The track of the recording's thread tid, else the process's. */
static uint64_t thread_track(const struct recording *rec, int tid)
{
    for (unsigned i = 0; tid && i < rec->thread_count; i++)
        if (rec->threads[i].tid == tid && rec->threads[i].state != SLOT_EXTERNAL)
            return track_uuid(TRACK_KIND_THREAD, i);
    return process_track();
}

static void header(struct perfetto_writer *w)
{
    const struct recording *rec = w->rec;
    struct proto_buf *b = &w->batch;
    /* The sequence starts clean: every interned name is in this file. */
    size_t packet = packet_begin(w, 0, SEQ_INCREMENTAL_STATE_CLEARED);
    size_t track = proto_begin(b, PACKET_TRACK_DESCRIPTOR);
    proto_varint(b, TRACK_UUID, process_track());
    size_t process = proto_begin(b, TRACK_PROCESS);
    proto_varint(b, PROCESS_PID, (uint64_t)(int64_t)rec->pid);
    proto_string(b, PROCESS_NAME, rec->app);
    proto_end(b, process);
    proto_end(b, track);
    packet_end(w, packet);
    for (unsigned i = 0; i < rec->thread_count; i++) {
        const struct recording_thread *t = &rec->threads[i];
        const char *name = t->name[0] ? t->name : "thread";
        /* An external track (a GPU queue's) is no thread of the process. */
        bool external = t->state == SLOT_EXTERNAL;
        track_descriptor(w, track_uuid(TRACK_KIND_THREAD, i), process_track(), name,
                         external ? 0 : t->tid, TRACK_SLICES);
    }
}

/* The flows: the GPU spans (BEGINs of "submission" on the queues' tracks) matched to the
 * vkQueueSubmit calls that sent them. The recording does not say which call sent a span, so
 * it is inferred: from the last span back, each takes the latest call not yet taken that
 * began before it. Exact when every submission was timed (FRAMESCOPE_GPU_SAMPLE=all) on one
 * queue, however far the CPU runs ahead; with sampled timing a span may take an untimed call
 * that followed its own. */
static bool flow_add(struct flow_end **array, size_t *count, size_t *capacity,
                     const struct trace_zone_event *e)
{
    if (*count == *capacity) {
        size_t grown = *capacity ? 2 * *capacity : 1024;
        struct flow_end *a = realloc(*array, grown * sizeof(*a));
        if (!a)
            return false;
        *array = a;
        *capacity = grown;
    }
    (*array)[(*count)++] = (struct flow_end){ e->begin, e->ticks, 0 };
    return true;
}

struct flow_scan {
    struct flows *flows;
    bool external, failed;
};

static void flow_collect(void *ctx, const struct trace_zone_event *e)
{
    struct flow_scan *s = ctx;
    if (e->kind != TRACE_ZONE_BEGIN)
        return;
    struct flows *f = s->flows;
    bool ok = true;
    if (s->external && strcmp(e->name, "submission") == 0)
        ok = flow_add(&f->spans, &f->span_count, &f->span_capacity, e);
    else if (!s->external && strncmp(e->name, "vkQueueSubmit", 13) == 0)
        ok = flow_add(&f->submits, &f->submit_count, &f->submit_capacity, e);
    s->failed |= !ok;
}

static int by_ticks(const void *a, const void *b)
{
    const struct flow_end *x = a, *y = b;
    return x->ticks < y->ticks ? -1 : x->ticks > y->ticks;
}

static int by_event(const void *a, const void *b)
{
    const struct flow_end *x = a, *y = b;
    return x->event < y->event ? -1 : x->event > y->event;
}

static int flows_match(const struct recording *rec, struct flows *f)
{
    for (unsigned i = 0; i < rec->thread_count; i++) {
        struct flow_scan s = { f, rec->threads[i].state == SLOT_EXTERNAL, false };
        int e = trace_thread_replay(rec, &rec->threads[i], flow_collect, &s);
        if (e || s.failed)
            return e ? e : -ENOMEM;
    }
    if (!f->span_count || !f->submit_count)
        return 0;
    qsort(f->spans, f->span_count, sizeof(*f->spans), by_ticks);
    qsort(f->submits, f->submit_count, sizeof(*f->submits), by_ticks);
    size_t next = f->submit_count; /* calls below this one are not taken */
    uint64_t flow = 0;
    for (size_t i = f->span_count; i-- > 0;) {
        while (next > 0 && f->submits[next - 1].ticks > f->spans[i].ticks)
            next--;
        if (!next)
            break;
        f->spans[i].flow = f->submits[--next].flow = ++flow;
    }
    qsort(f->spans, f->span_count, sizeof(*f->spans), by_event);
    qsort(f->submits, f->submit_count, sizeof(*f->submits), by_event);
    return 0;
}

static uint64_t flow_of(const struct flow_end *array, size_t count,
                        const struct fscope_event *event)
{
    const struct flow_end key = { event, 0, 0 };
    const struct flow_end *found = count ? bsearch(&key, array, count, sizeof(*array), by_event)
                                         : NULL;
    return found ? found->flow : 0;
}

static void flows_finish(struct flows *f)
{
    free(f->submits);
    free(f->spans);
}

struct thread_ctx {
    struct perfetto_writer *w;
    const struct flows *flows;
    uint64_t track;
    bool external;
};

static void zone_event(void *ctx, const struct trace_zone_event *e)
{
    struct thread_ctx *t = ctx;
    struct perfetto_writer *w = t->w;
    if (e->kind == TRACE_ZONE_END) {
        struct event_marks m = event_begin(w, e->ticks, t->track, TYPE_SLICE_END, NULL);
        if (e->open_at_dump)
            annotation_uint(w, "open_at_dump", 1);
        event_end(w, m);
        return;
    }
    bool instant = e->kind == TRACE_ZONE_INSTANT;
    struct event_marks m = event_begin(w, e->ticks, t->track,
                                       instant ? TYPE_INSTANT : TYPE_SLICE_BEGIN, e->name);
    uint64_t flow = instant ? 0
                    : t->external ? flow_of(t->flows->spans, t->flows->span_count, e->begin)
                                  : flow_of(t->flows->submits, t->flows->submit_count, e->begin);
    if (flow)
        proto_fixed64(&w->batch, t->external ? EVENT_TERMINATING_FLOW_IDS : EVENT_FLOW_IDS,
                      flow);
    event_end(w, m);
}

/* Intervals on tracks of their own, each on the first lane it nests in. */
struct interval {
    uint64_t group; /* a device or a thread id */
    uint64_t begin, end;
    const char *name;
    const char *path; /* a GPU zone's, else NULL */
};

struct lanes {
    uint64_t tracks[MAX_LANES];
    unsigned count;
    uint64_t ends[MAX_LANES][TRACE_MAX_DEPTH];
    unsigned depth[MAX_LANES];
    uint64_t dropped;
};

static void lanes_close(struct perfetto_writer *w, struct lanes *l, unsigned lane, uint64_t upto)
{
    while (l->depth[lane] && l->ends[lane][l->depth[lane] - 1] <= upto) {
        l->depth[lane]--;
        event(w, l->ends[lane][l->depth[lane]], l->tracks[lane], TYPE_SLICE_END, NULL);
    }
}

/* The lane the interval goes on (a new one made by make_track when none fits), with ends
 * before its begin closed; -1 when MAX_LANES are taken. */
static int lanes_place(struct perfetto_writer *w, struct lanes *l, const struct interval *iv,
                       uint64_t parent, const char *base)
{
    for (unsigned k = 0; k < MAX_LANES; k++) {
        if (k == l->count) {
            char name[160];
            if (k)
                snprintf(name, sizeof(name), "%s lane %u", base, k + 1);
            else
                snprintf(name, sizeof(name), "%s", base);
            l->tracks[k] = dynamic_track(w, parent, name, TRACK_SLICES);
            l->depth[k] = 0;
            l->count++;
        }
        lanes_close(w, l, k, iv->begin);
        unsigned d = l->depth[k];
        if (d < TRACE_MAX_DEPTH && (d == 0 || l->ends[k][d - 1] >= iv->end)) {
            l->ends[k][l->depth[k]++] = iv->end;
            return (int)k;
        }
    }
    l->dropped++;
    return -1;
}

static int by_group_begin(const void *a, const void *b)
{
    const struct interval *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end; /* the outer one first */
}

/* Intervals sorted as lanes take them: by group, then begin, the outer one first; then by name
 * (the same pointers for the same path), so that equal ones need no order. */
static int interval_order(const void *a, const void *b)
{
    int order = by_group_begin(a, b);
    if (order)
        return order;
    const struct interval *x = a, *y = b;
    return x->path != y->path ? (x->path < y->path ? -1 : 1) : 0;
}

static void gpu_zones(struct perfetto_writer *w)
{
    const struct recording *rec = w->rec;
    if (!rec->gpu_zone_count)
        return;
    struct sorter all;
    sorter_init(&all, sizeof(struct interval), interval_order, 0);
    struct lanes *l = calloc(1, sizeof(*l)); /* no lanes until a zone has a name */
    struct sorter_cursor c;
    bool ok = l && sorter_cursor_open(&c, &rec->gpu_zones);
    if (ok) {
        const struct gpu_zone_span *s;
        while ((s = sorter_next(&c))) {
            if (s->name >= rec->gpu_zone_name_count)
                continue;
            const char *path = rec->gpu_zone_names[s->name];
            const char *leaf = strrchr(path, '/');
            struct interval iv = { s->device_id, s->begin, s->end, leaf ? leaf + 1 : path, path };
            sorter_push(&all, &iv);
        }
        ok = !c.failed;
        sorter_cursor_close(&c);
    }
    if (!ok || !sorter_finish(&all) || !sorter_cursor_open(&c, &all)) {
        w->failed = true;
        goto done;
    }
    const struct interval *iv;
    uint64_t group = 0;
    bool first = true;
    while ((iv = sorter_next(&c))) {
        if (first || iv->group != group) {
            for (unsigned k = 0; !first && k < l->count; k++)
                lanes_close(w, l, k, UINT64_MAX);
            l->count = 0;
        }
        first = false;
        group = iv->group;
        char base[48];
        snprintf(base, sizeof(base), "gpu zones (device %llu)", (unsigned long long)iv->group);
        int lane = lanes_place(w, l, iv, process_track(), base);
        if (lane < 0)
            continue;
        struct event_marks m = event_begin(w, iv->begin, l->tracks[lane], TYPE_SLICE_BEGIN,
                                           iv->name);
        annotation_string(w, "path", iv->path);
        event_end(w, m);
    }
    w->failed |= c.failed;
    sorter_cursor_close(&c);
    for (unsigned k = 0; k < l->count; k++)
        lanes_close(w, l, k, UINT64_MAX);
done:
    sorter_free(&all);
    free(l);
}

/* Command buffer calls, on a "command buffers" track under their thread (they may overlap the
 * thread's zones without nesting: recording is app code), placed in lanes in the order they
 * began: sorted with bounded memory, each named again as it is written. */
struct engine_slice {
    uint64_t group, begin, end; /* a thread id, then as struct interval */
    uint64_t is_op;             /* u.op, else u.r */
    union {
        struct cmd_recording r;
        struct pool_op op;
    } u;
};

static int engine_slice_order(const void *a, const void *b)
{
    const struct engine_slice *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1; /* the outer one first */
    return memcmp(&x->is_op, &y->is_op, sizeof(*x) - offsetof(struct engine_slice, is_op));
}

struct engine_ctx {
    struct sorter slices;
};

static void engine_collect(void *ctx, const struct trace_interval *iv)
{
    struct engine_ctx *c = ctx;
    struct engine_slice slice;
    memset(&slice, 0, sizeof(slice));
    slice.group = (uint64_t)(uint32_t)iv->tid;
    slice.begin = iv->begin_ticks;
    slice.end = iv->end_ticks;
    slice.is_op = iv->pool_op != NULL;
    if (iv->pool_op)
        slice.u.op = *iv->pool_op;
    else
        slice.u.r = *iv->recording;
    sorter_push(&c->slices, &slice); /* a failure is the sorter's, said at its finish */
}

static void engine_intervals(struct perfetto_writer *w)
{
    struct engine_ctx c;
    sorter_init(&c.slices, sizeof(struct engine_slice), engine_slice_order, 0);
    trace_engine_intervals(w->rec, false, engine_collect, &c);
    struct sorter_cursor cursor;
    struct lanes *l = calloc(1, sizeof(*l));
    if (!l || !sorter_finish(&c.slices) || !sorter_cursor_open(&cursor, &c.slices)) {
        w->failed = true;
        goto done;
    }
    const struct engine_slice *x;
    uint64_t group = 0;
    bool first = true;
    struct trace_engine_words words;
    while ((x = sorter_next(&cursor))) {
        if (first || x->group != group) {
            for (unsigned k = 0; !first && k < l->count; k++)
                lanes_close(w, l, k, UINT64_MAX);
            l->count = 0;
        }
        first = false;
        group = x->group;
        struct trace_interval iv = trace_engine_interval(w->rec, x->is_op ? NULL : &x->u.r,
                                                         x->is_op ? &x->u.op : NULL, &words);
        struct interval at = { x->group, x->begin, x->end, iv.name, NULL };
        int lane = lanes_place(w, l, &at, thread_track(w->rec, (int)x->group), "command buffers");
        if (lane >= 0)
            event(w, x->begin, l->tracks[lane], TYPE_SLICE_BEGIN, iv.name);
    }
    w->failed |= cursor.failed;
    sorter_cursor_close(&cursor);
    for (unsigned k = 0; k < l->count; k++)
        lanes_close(w, l, k, UINT64_MAX);
done:
    sorter_free(&c.slices);
    free(l);
}

static void hitches(struct perfetto_writer *w, const struct hitch_stats *stats)
{
    struct sorter_cursor c;
    if (!hitches_open(&c, stats)) {
        w->failed = w->failed || (stats && stats->count);
        return;
    }
    uint64_t read = 0;
    for (const struct hitch *h; (h = sorter_next(&c)); read++) {
        char name[TRACE_HITCH_NAME_SIZE];
        /* As trace.json: the main thread's when the closing thread is unknown. */
        int tid = h->tid ? h->tid : w->rec->pid;
        struct event_marks m = event_begin(w, h->end_ticks, thread_track(w->rec, tid),
                                           TYPE_INSTANT, trace_hitch_name(h, name));
        annotation_uint(w, "frame", h->frame);
        annotation_uint(w, "surface", h->log);
        annotation_double(w, "frame_ms", (double)h->frame_ns / 1e6);
        annotation_double(w, "median_ms", (double)h->median_ns / 1e6);
        event_end(w, m);
    }
    sorter_cursor_close(&c);
    w->failed = w->failed || read != stats->count;
}

/* The counter track of that name, made on first use. 0 when memory ran out. */
static uint64_t counter_track(struct perfetto_writer *w, const char *name, enum track_type type)
{
    for (size_t i = 0; i < w->counter_count; i++)
        if (strcmp(w->counters[i].name, name) == 0)
            return w->counters[i].uuid;
    if (w->counter_count == w->counter_capacity) {
        size_t grown = w->counter_capacity ? 2 * w->counter_capacity : 16;
        struct counter_track *a = realloc(w->counters, grown * sizeof(*a));
        if (!a) {
            w->failed = true;
            return 0;
        }
        w->counters = a;
        w->counter_capacity = grown;
    }
    struct counter_track *t = &w->counters[w->counter_count++];
    snprintf(t->name, sizeof(t->name), "%s", name);
    t->uuid = dynamic_track(w, process_track(), t->name, type);
    return t->uuid;
}

static void counter_value(struct perfetto_writer *w, uint64_t ticks, const char *name,
                          double value)
{
    uint64_t track = counter_track(w, name, TRACK_VALUES);
    if (!track)
        return;
    struct event_marks m = event_begin(w, ticks, track, TYPE_COUNTER, NULL);
    proto_double(&w->batch, EVENT_DOUBLE_COUNTER_VALUE, isfinite(value) ? value : 0.0);
    event_end(w, m);
}

/* A duration as whole nanoseconds: a varint of a few bytes where a double takes eight that
 * deflate cannot shrink (the demo's four per-frame counters took 45 of 155 bytes a frame as
 * doubles). */
static void counter_ns(struct perfetto_writer *w, uint64_t ticks, const char *name, int64_t ns)
{
    uint64_t track = counter_track(w, name, TRACK_NANOSECONDS);
    if (!track)
        return;
    struct event_marks m = event_begin(w, ticks, track, TYPE_COUNTER, NULL);
    proto_varint(&w->batch, EVENT_COUNTER_VALUE, (uint64_t)ns);
    event_end(w, m);
}

/* snprintf(buf, size, "%.*s%s%s", head_len, head, middle, tail), without printf: every
 * counter event names its track, four a frame (snprintf was 6% of the Perfetto trace's time
 * on 100,000 frames: perf, the 2-core VM, 2026-12-06). */
static void name_join(char *buf, size_t size, const char *head, size_t head_len,
                      const char *middle, const char *tail)
{
    size_t len = 0;
    for (size_t i = 0; i < head_len && head[i] && len + 1 < size; i++)
        buf[len++] = head[i];
    for (const char *p = middle; *p && len + 1 < size; p++)
        buf[len++] = *p;
    for (const char *p = tail; *p && len + 1 < size; p++)
        buf[len++] = *p;
    buf[len] = '\0';
}

/* A counter with one value is the track of its name; with several, one track per value,
 * "name key", as Perfetto names trace.json's. A duration's track is named without its " ms"
 * ("cpu", "gpu busy surface 1"), its values in nanoseconds. */
static void counter_event(void *ctx, const struct trace_counter *c)
{
    struct perfetto_writer *w = ctx;
    char name[112];
    if (c->duration) {
        const char *ms = strstr(c->name, " ms");
        size_t head = ms ? (size_t)(ms - c->name) : strlen(c->name);
        name_join(name, sizeof(name), c->name, head, ms ? ms + 3 : "", "");
        counter_ns(w, c->ticks, name, c->ns);
        return;
    }
    for (unsigned k = 0; k < c->count; k++) {
        if (c->count > 1)
            name_join(name, sizeof(name), c->name, SIZE_MAX, " ", c->keys[k]);
        else
            name_join(name, sizeof(name), c->name, SIZE_MAX, "", "");
        counter_value(w, c->ticks, name, c->values[k]);
    }
    if (c->frame_ns) {
        name_join(name, sizeof(name), "frame time", SIZE_MAX, c->name + strlen("fps"), "");
        counter_ns(w, c->ticks, name, c->frame_ns);
    }
}

/* Every frame as an instant at its present, on its surface's "frames" track. */
static void frames(struct perfetto_writer *w, unsigned primary_log)
{
    const struct recording *rec = w->rec;
    for (unsigned l = 0; l < rec->log_count; l++) {
        const struct recording_log *log = &rec->logs[l];
        if (!log->frame_count)
            continue;
        char name[48] = "frames";
        if (l != primary_log)
            snprintf(name, sizeof(name), "frames surface %u", l);
        uint64_t track = track_uuid(TRACK_KIND_FRAMES, l);
        track_descriptor(w, track, process_track(), name, 0, TRACK_SLICES);
        struct frame_cursor c;
        if (!frame_cursor_open(&c, rec, log)) {
            w->failed = true;
            return;
        }
        for (uint64_t i = 0; i < log->frame_count; i++)
            event(w, frame_at(&c, i)->end_ticks, track, TYPE_INSTANT, "frame");
        frame_cursor_close(&c);
    }
}

int trace_perfetto_write(FILE *f, const struct recording *rec, const struct trace_run *run)
{
    struct perfetto_writer w = { .rec = rec, .f = f };
    struct flows flows = { 0 };
    int e = flows_match(rec, &flows);
    if (e)
        goto done;
    header(&w);
    for (unsigned i = 0; i < rec->thread_count && !w.error; i++) {
        const struct recording_thread *t = &rec->threads[i];
        struct thread_ctx ctx = { &w, &flows, track_uuid(TRACK_KIND_THREAD, i),
                                  t->state == SLOT_EXTERNAL };
        e = trace_thread_replay(rec, t, zone_event, &ctx);
        if (e)
            goto done;
    }
    gpu_zones(&w);
    hitches(&w, run ? run->hitches : NULL);
    engine_intervals(&w);
    trace_counters(rec, run, counter_event, &w);
    if (run && run->frame_counters)
        frames(&w, run->primary_log);
    batch_flush(&w);
    e = w.error ? w.error : w.failed ? -ENOMEM : 0;
done:
    flows_finish(&flows);
    for (size_t i = 0; i < w.name_capacity; i++)
        free(w.names[i].name);
    free(w.names);
    free(w.counters);
    proto_buf_finish(&w.batch);
    return e;
}
