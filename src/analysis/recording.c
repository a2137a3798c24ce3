#include "recording.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/system.h"
#include "util/text.h"

struct reader {
    const unsigned char *bytes;
    size_t len;
    char *why;
    size_t why_len;
};

static int malformed(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int malformed(struct reader *r, const char *fmt, ...)
{
    if (r->why_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->why, r->why_len, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

/* Whether [offset, offset + size) lies inside the bytes. */
static bool inside(const struct reader *r, uint64_t offset, uint64_t size)
{
    return offset <= r->len && size <= r->len - offset;
}

/* Every string a recording holds was written by the app (thread, zone, label and device
 * names): it is made printable here, once, so that no output (summary, journal, report,
 * trace) carries a terminal escape or a forged line. */
static void copy_string(char *dst, size_t dst_len, const char *src, size_t src_len)
{
    fscope_text_printable(dst, dst_len, src, src_len);
}

/* The same, for a string copied in place with the struct that holds it. */
static void make_printable(char *s, size_t len)
{
    char raw[256];
    if (len > sizeof(raw))
        len = sizeof(raw);
    memcpy(raw, s, len);
    copy_string(s, len, raw, len);
}

/* Copies a chunked array's count items out into *ret (malloc'd; NULL for none). */
static int read_chunked(struct reader *r, struct recording *rec, const struct chunked *a,
                        uint32_t item_size,
                        const char *what, void **ret, uint64_t *ret_count)
{
    *ret = NULL;
    *ret_count = 0;
    rec->items_dropped += a->dropped; /* appends the full arena refused */
    uint64_t count = atomic_load_explicit(&a->count, memory_order_acquire);
    if (!count)
        return 0;
    uint64_t capacity = atomic_load_explicit(&a->table_capacity, memory_order_acquire);
    uint64_t table_offset = atomic_load_explicit(&a->table_offset, memory_order_acquire);
    uint64_t chunk_items = a->chunk_items;
    if (a->item_size != item_size)
        return malformed(r, "%s: items of %u bytes, expected %u", what, a->item_size, item_size);
    /* Items the writer published lie in distinct chunks of the arena: they fit in it. */
    if (chunk_items == 0 || count > r->len / item_size ||
        (uint64_t)chunk_items > r->len / item_size)
        return malformed(r, "%s: %llu items in chunks of %llu do not fit in the recording", what,
                         (unsigned long long)count, (unsigned long long)chunk_items);
    uint64_t chunks = (count + chunk_items - 1) / chunk_items;
    if (chunks > capacity || capacity > r->len / sizeof(uint64_t) ||
        !inside(r, table_offset, capacity * sizeof(uint64_t)))
        return malformed(r, "%s: its chunk table is outside the recording", what);
    /* Chunks still in the stream file (a recording read while its app runs, for a trace) are
     * not here: the items start after them. */
    uint64_t streamed = atomic_load_explicit(&a->streamed_chunks, memory_order_acquire);
    if (streamed > chunks)
        streamed = chunks;
    uint64_t skipped = streamed * chunk_items;
    if (skipped >= count) {
        *ret_count = 0;
        return 0;
    }
    count -= skipped;
    unsigned char *items = malloc(count * item_size);
    if (!items)
        return -ENOMEM;
    for (uint64_t c = streamed; c < chunks; c++) {
        uint64_t chunk_offset;
        memcpy(&chunk_offset, r->bytes + table_offset + c * sizeof(uint64_t), sizeof(chunk_offset));
        uint64_t first = c * chunk_items - skipped;
        uint64_t n = count - first < chunk_items ? count - first : chunk_items;
        if (!inside(r, chunk_offset, chunk_items * item_size) || chunk_offset == 0) {
            free(items);
            return malformed(r, "%s: chunk %llu is outside the recording", what,
                             (unsigned long long)c);
        }
        memcpy(items + first * item_size, r->bytes + chunk_offset, n * item_size);
    }
    *ret = items;
    *ret_count = count;
    return 0;
}

static int check_frame(struct reader *r, const struct recording_log *log, uint64_t i)
{
    const struct fscope_frame *f = &log->frames[i];
    bool ok = f->block_span_count <= FRAME_BLOCK_SPANS && f->present_state < FRAME_PRESENT_STATE_COUNT &&
              f->end_ticks >= f->start_ticks;
    for (unsigned s = 0; ok && s < f->block_span_count; s++)
        ok = f->block_span_kind[s] < FSCOPE_BLOCK_COUNT &&
             f->block_span_end[s] >= f->block_span_start[s];
    if (!ok)
        return malformed(r, "frame %llu of surface '%s' is malformed", (unsigned long long)i,
                         log->label);
    return 0;
}

static int read_frame_log(struct reader *r, struct recording *rec, const struct rec_frame_log *src)
{
    struct recording_log *log = &rec->logs[rec->log_count];
    memset(log, 0, sizeof(*log));
    copy_string(log->label, sizeof(log->label), src->label, sizeof(src->label));
    uint32_t surface = atomic_load(&src->surface);
    if (surface > FRAME_SURFACE_X11)
        return malformed(r, "surface '%s' has an unknown kind %u", log->label, surface);
    log->surface = (enum frame_surface)surface;
    log->tracked = atomic_load(&src->tracked) != 0;
    copy_string(log->untracked_why, sizeof(log->untracked_why), src->untracked_why,
                sizeof(src->untracked_why));
    uint32_t seq = atomic_load(&src->counts_seq);
    log->counts = src->counts;
    log->have_counts = atomic_load(&src->counts_valid) && !(seq & 1) &&
                       atomic_load(&src->counts_seq) == seq;
    void *frames;
    int e = read_chunked(r, rec, &src->frames, sizeof(struct fscope_frame), log->label, &frames,
                         &log->frame_count);
    if (e)
        return e;
    log->frames = frames;
    rec->log_count++;
    for (uint64_t i = 0; i < log->frame_count; i++) {
        log->frames[i].gpu_busy_ticks = 0;
        memset(log->frames[i].block_gpu_ticks, 0, sizeof(log->frames[i].block_gpu_ticks));
        if ((e = check_frame(r, log, i)))
            return e;
    }
    return 0;
}

static int read_gpu_zone_names(struct reader *r, struct recording *rec,
                               const struct rec_gpu_zone_names *src)
{
    if (rec->gpu_zone_names)
        return malformed(r, "two GPU zone name tables");
    uint32_t count = atomic_load(&src->count);
    if (count > GPU_ZONE_NAMES)
        return malformed(r, "%u GPU zone names, at most %u", count, GPU_ZONE_NAMES);
    rec->gpu_zone_names = calloc(count ? count : 1, sizeof(*rec->gpu_zone_names));
    if (!rec->gpu_zone_names)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++)
        copy_string(rec->gpu_zone_names[i], sizeof(rec->gpu_zone_names[i]), src->names[i],
                    sizeof(src->names[i]));
    rec->gpu_zone_name_count = count;
    for (unsigned k = 0; k < GPU_ZONE_UNTIMED_COUNT; k++)
        rec->gpu_zones_untimed[k] = atomic_load(&src->untimed[k]);
    return 0;
}

static int read_gpu_zones(struct reader *r, struct recording *rec, const struct rec_gpu_zones *src)
{
    void *spans;
    uint64_t count;
    int e = read_chunked(r, rec, &src->spans, sizeof(struct gpu_zone_span), "GPU zones", &spans,
                         &count);
    if (e || !count)
        return e;
    struct gpu_zone_span *all = realloc(rec->gpu_zones, (rec->gpu_zone_count + count) *
                                                            sizeof(*all));
    if (!all) {
        free(spans);
        return -ENOMEM;
    }
    memcpy(all + rec->gpu_zone_count, spans, count * sizeof(*all));
    free(spans);
    rec->gpu_zones = all;
    for (uint64_t i = rec->gpu_zone_count; i < rec->gpu_zone_count + count; i++)
        if (all[i].end < all[i].begin || all[i].kind > GPU_ZONE_PASS)
            return malformed(r, "a GPU zone ends before it begins, or has kind %u", all[i].kind);
    rec->gpu_zone_count += count;
    return 0;
}

static int read_spans(struct reader *r, struct recording *rec, const struct rec_span_log *src)
{
    void *spans;
    uint64_t count;
    int e = read_chunked(r, rec, &src->spans, sizeof(struct gpu_span), "GPU spans", &spans, &count);
    if (e || !count)
        return e;
    struct gpu_span *all = realloc(rec->spans, (rec->span_count + count) * sizeof(*all));
    if (!all) {
        free(spans);
        return -ENOMEM;
    }
    memcpy(all + rec->span_count, spans, count * sizeof(*all));
    free(spans);
    for (uint64_t i = rec->span_count; i < rec->span_count + count; i++) {
        if (all[i].end < all[i].begin) {
            rec->spans = all;
            return malformed(r, "a GPU span ends before it begins");
        }
        if (all[i].device_id > rec->max_device_id)
            rec->max_device_id = all[i].device_id;
    }
    rec->spans = all;
    rec->span_count += count;
    return 0;
}

static int read_cap(struct reader *r, struct recording *rec, const struct rec_cap *src)
{
    struct recording_cap *cap = &rec->caps[rec->cap_count];
    memset(cap, 0, sizeof(*cap));
    copy_string(cap->label, sizeof(cap->label), src->label, sizeof(src->label));
    void *events;
    int e = read_chunked(r, rec, &src->events, sizeof(struct cap_event), cap->label, &events,
                         &cap->event_count);
    if (e)
        return e;
    cap->events = events;
    rec->cap_count++;
    for (uint64_t i = 0; i < cap->event_count; i++)
        if (cap->events[i].target_ns == 0)
            return malformed(r, "cap '%s' has an event with no target", cap->label);
    return 0;
}

static int read_thread(struct reader *r, struct recording *rec, const struct rec_thread *src)
{
    int state = atomic_load(&src->state);
    if (state != SLOT_LIVE && state != SLOT_EXITED && state != SLOT_EXTERNAL)
        return 0; /* free or being claimed: nothing to show */
    struct recording_thread *t = &rec->threads[rec->thread_count];
    memset(t, 0, sizeof(*t));
    t->state = state;
    copy_string(t->name, sizeof(t->name), src->name, sizeof(src->name));
    t->tid = state == SLOT_EXTERNAL ? 1000000 + (int)src->slot : src->tid;
    uint32_t nodes = atomic_load_explicit(&src->node_count, memory_order_acquire);
    uint64_t ring_size = src->ring_mask + 1;
    if (nodes == 0 || nodes > src->node_capacity ||
        !inside(r, src->nodes_offset, (uint64_t)src->node_capacity * sizeof(struct zone_node)) ||
        src->ring_mask == UINT64_MAX || (src->ring_mask & ring_size) != 0 ||
        ring_size > r->len / sizeof(struct fscope_event) ||
        !inside(r, src->ring_offset, ring_size * sizeof(struct fscope_event)))
        return malformed(r, "thread '%s': its zone tree or ring is outside the recording", t->name);
    t->nodes = malloc(nodes * sizeof(*t->nodes));
    if (!t->nodes)
        return -ENOMEM;
    memcpy(t->nodes, r->bytes + src->nodes_offset, nodes * sizeof(*t->nodes));
    t->node_count = nodes;
    rec->thread_count++;
    /* Nodes are created after their parents: a parent always has a smaller index. */
    for (uint32_t i = 1; i < nodes; i++)
        if (t->nodes[i].parent >= i)
            return malformed(r, "thread '%s': zone %u has a parent after it", t->name, i);
    uint64_t head = atomic_load_explicit(&src->ring_head, memory_order_acquire);
    uint64_t first = head > ring_size ? head - ring_size : 0;
    t->event_count = head - first;
    t->events = malloc((t->event_count ? t->event_count : 1) * sizeof(*t->events));
    if (!t->events)
        return -ENOMEM;
    const struct fscope_event *ring = (const void *)(r->bytes + src->ring_offset);
    for (uint64_t i = first; i < head; i++)
        t->events[i - first] = ring[i & src->ring_mask];
    /* A thread still running (the app reading its own recording) may have overwritten the
     * oldest of them while we copied: those are not trustworthy, drop them. */
    uint64_t head_after = atomic_load_explicit(&src->ring_head, memory_order_acquire);
    uint64_t safe_first = head_after > ring_size ? head_after - ring_size : 0;
    uint64_t skip = safe_first > first ? safe_first - first : 0;
    if (skip > t->event_count)
        skip = t->event_count;
    if (skip) {
        memmove(t->events, t->events + skip, (t->event_count - skip) * sizeof(*t->events));
        t->event_count -= skip;
    }
    return 0;
}

static int loc_compare(const void *a, const void *b)
{
    uint64_t x = ((const struct rec_loc *)a)->address, y = ((const struct rec_loc *)b)->address;
    return x < y ? -1 : x > y;
}

static int read_locs(struct reader *r, struct recording *rec, const struct rec_locs *src)
{
    (void)r;
    free(rec->locs);
    rec->locs = calloc(REC_LOC_CAPACITY, sizeof(*rec->locs));
    if (!rec->locs)
        return -ENOMEM;
    rec->loc_count = 0;
    for (unsigned i = 0; i < REC_LOC_CAPACITY; i++) {
        const struct rec_loc *e = &src->entries[i];
        if (!atomic_load(&e->ready) || !atomic_load(&e->address))
            continue;
        struct rec_loc *l = &rec->locs[rec->loc_count++];
        atomic_store(&l->address, atomic_load(&e->address));
        l->line = e->line;
        l->level = e->level;
        l->flags = e->flags;
        copy_string(l->name, sizeof(l->name), e->name, sizeof(e->name));
    }
    qsort(rec->locs, rec->loc_count, sizeof(*rec->locs), loc_compare);
    rec->locs_dropped = atomic_load(&src->dropped);
    return 0;
}

static void read_meta(struct recording *rec, const struct rec_meta *m)
{
    rec->enabled = atomic_load(&m->enabled) != 0;
    rec->gpu_timing = atomic_load(&m->gpu_timing) != 0;
    rec->device_count = atomic_load(&m->device_count);
    if (rec->device_count > REC_MAX_DEVICES)
        rec->device_count = REC_MAX_DEVICES;
    for (unsigned i = 0; i < rec->device_count; i++) {
        struct rec_device *d = &rec->devices[i];
        *d = m->devices[i];
        make_printable(d->name, sizeof(d->name));
        make_printable(d->driver, sizeof(d->driver));
    }
    rec->note_count = atomic_load(&m->note_count);
    if (rec->note_count > REC_MAX_NOTES)
        rec->note_count = REC_MAX_NOTES;
    for (unsigned i = 0; i < rec->note_count; i++)
        copy_string(rec->notes[i], sizeof(rec->notes[i]), m->notes[i], sizeof(m->notes[i]));
    rec->output_count = atomic_load(&m->output_count);
    if (rec->output_count > REC_MAX_OUTPUTS)
        rec->output_count = REC_MAX_OUTPUTS;
    for (unsigned i = 0; i < rec->output_count; i++) {
        rec->outputs[i] = m->outputs[i];
        make_printable(rec->outputs[i].name, sizeof(rec->outputs[i].name));
    }
    uint32_t kernel = atomic_load(&m->kernel_state);
    rec->kernel_state = kernel <= REC_KERNEL_UNAVAILABLE ? (enum rec_kernel_state)kernel
                                                         : REC_KERNEL_UNKNOWN;
    copy_string(rec->kernel_why, sizeof(rec->kernel_why), m->kernel_why, sizeof(m->kernel_why));
    const struct rec_counters *c = &m->counters;
    uint32_t counters = atomic_load(&c->state);
    rec->counters.state = counters <= REC_COUNTERS_UNAVAILABLE ? (enum rec_counter_state)counters
                                                               : REC_COUNTERS_UNKNOWN;
    rec->counters.count = c->count <= FRAME_COUNTERS ? c->count : FRAME_COUNTERS;
    for (unsigned k = 0; k < rec->counters.count; k++) {
        char *name = rec->counters.names[k];
        copy_string(name, sizeof(rec->counters.names[k]), c->names[k], sizeof(c->names[k]));
        /* libpfm4's names are words, "::", ':' and '=': anything else would break a CSV
         * header or a summary line. */
        for (char *p = name; *p; p++)
            if (!isalnum((unsigned char)*p) && !strchr(":=_.-", *p))
                *p = '?';
        rec->counters.kinds[k] = c->kinds[k] <= COUNTER_INSTRUCTIONS ? (enum counter_kind)c->kinds[k]
                                                                     : COUNTER_OTHER;
    }
    copy_string(rec->counters.why, sizeof(rec->counters.why), c->why, sizeof(c->why));
    if (atomic_load(&m->system_known)) {
        const struct rec_system *s = &m->system;
        copy_string(rec->system.os, sizeof(rec->system.os), s->os, sizeof(s->os));
        copy_string(rec->system.cpu, sizeof(rec->system.cpu), s->cpu, sizeof(s->cpu));
        copy_string(rec->system.ram_kib, sizeof(rec->system.ram_kib), s->ram_kib,
                    sizeof(s->ram_kib));
        copy_string(rec->system.kernel, sizeof(rec->system.kernel), s->kernel, sizeof(s->kernel));
        copy_string(rec->system.scheduler, sizeof(rec->system.scheduler), s->scheduler,
                    sizeof(s->scheduler));
    }
}

static int read_kernel(struct reader *r, struct recording *rec, const struct rec_kernel *src)
{
    struct recording_kernel *k = &rec->kernel;
    if (k->present)
        return malformed(r, "two kernel sampler objects");
    k->present = true;
    k->tick_ms = src->tick_ms;
    k->thread_count = atomic_load(&src->thread_count);
    if (k->thread_count > REC_KERNEL_THREADS)
        k->thread_count = REC_KERNEL_THREADS;
    for (unsigned i = 0; i < k->thread_count; i++) {
        k->threads[i].tid = src->threads[i].tid;
        copy_string(k->threads[i].name, sizeof(k->threads[i].name), src->threads[i].name,
                    sizeof(src->threads[i].name));
    }
    copy_string(k->perf_why, sizeof(k->perf_why), src->perf_why, sizeof(src->perf_why));
    k->unwatched_threads = atomic_load(&src->unwatched_threads);
    k->kms = src->kms;
    if (k->kms.state > REC_KMS_UNAVAILABLE || k->kms.count > REC_KMS_OUTPUTS)
        return malformed(r, "KMS state %u with %u outputs", k->kms.state, k->kms.count);
    k->kms.why[sizeof(k->kms.why) - 1] = '\0';
    for (unsigned i = 0; i < k->kms.count; i++) {
        struct rec_kms_output *o = &k->kms.outputs[i];
        o->card[sizeof(o->card) - 1] = o->connector[sizeof(o->connector) - 1] = '\0';
        if (o->vrr_capable > KMS_UNKNOWN || o->vrr_enabled > KMS_UNKNOWN)
            return malformed(r, "KMS output %u with VRR state %u/%u", i, o->vrr_capable,
                             o->vrr_enabled);
    }
    void *samples;
    int e = read_chunked(r, rec, &src->samples, sizeof(struct kernel_sample), "kernel samples",
                         &samples, &k->sample_count);
    k->samples = samples;
    if (e)
        return e;
    k->drm_fds = atomic_load(&src->drm_fds);
    void *drm;
    e = read_chunked(r, rec, &src->drm_samples, sizeof(struct drm_sample), "DRM samples", &drm,
                     &k->drm_sample_count);
    k->drm_samples = drm;
    for (uint64_t i = 0; !e && i < k->drm_sample_count; i++) {
        struct drm_sample *d = &k->drm_samples[i];
        if (d->engine_count > DRM_SAMPLE_ENGINES || d->region_count > DRM_SAMPLE_REGIONS)
            return malformed(r, "DRM sample %llu is malformed", (unsigned long long)i);
        make_printable(d->driver, sizeof(d->driver));
        for (unsigned j = 0; j < d->engine_count; j++)
            make_printable(d->engines[j].name, sizeof(d->engines[j].name));
        for (unsigned j = 0; j < d->region_count; j++)
            make_printable(d->regions[j].name, sizeof(d->regions[j].name));
    }
    return e;
}

static const uint64_t object_sizes[REC_OBJ_TYPE_COUNT] = {
    [REC_OBJ_META] = sizeof(struct rec_meta),
    [REC_OBJ_LOCS] = sizeof(struct rec_locs),
    [REC_OBJ_THREAD] = sizeof(struct rec_thread),
    [REC_OBJ_FRAME_LOG] = sizeof(struct rec_frame_log),
    [REC_OBJ_SPAN_LOG] = sizeof(struct rec_span_log),
    [REC_OBJ_CAP] = sizeof(struct rec_cap),
    [REC_OBJ_KERNEL] = sizeof(struct rec_kernel),
    [REC_OBJ_GPU_ZONE_NAMES] = sizeof(struct rec_gpu_zone_names),
    [REC_OBJ_GPU_ZONES] = sizeof(struct rec_gpu_zones),
};

/* A header of this format, or an error naming what it is instead. */
static int check_header(struct reader *r, const struct rec_header *h)
{
    if (r->len < sizeof(*h) || memcmp(h->magic, REC_MAGIC, 8) != 0)
        return malformed(r, "not a framescope recording");
    if (h->version != REC_VERSION || h->header_size != sizeof(*h))
        return malformed(r, "a recording of format %u; this framescope reads format %u",
                         h->version, REC_VERSION);
    return 0;
}

/* The directory's entries, within its capacity. */
static uint32_t directory_entries(const struct rec_header *h)
{
    uint32_t entries = atomic_load(&h->dir_count);
    return entries < REC_DIR_ENTRIES ? entries : REC_DIR_ENTRIES;
}

/* Entry i's object and type: 0 with *ret_object NULL for an entry a writer reserved and never
 * published, -EINVAL for one that is not a valid object of its type. */
static int directory_object(struct reader *r, const struct rec_header *h, uint32_t i,
                            uint32_t *ret_type, void **ret_object)
{
    uint32_t type = atomic_load_explicit(&h->dir[i].type, memory_order_acquire);
    uint64_t offset = h->dir[i].offset, size = h->dir[i].size;
    *ret_type = type;
    *ret_object = NULL;
    if (type == REC_OBJ_NONE)
        return 0;
    if (type >= REC_OBJ_TYPE_COUNT || size != object_sizes[type] || offset < h->header_size ||
        offset % 8 || !inside(r, offset, size))
        return malformed(r, "directory entry %u (type %u, %llu bytes at %llu) is not a valid "
                         "object", i, type, (unsigned long long)size, (unsigned long long)offset);
    *ret_object = (void *)(r->bytes + offset);
    return 0;
}

static int read_objects(struct reader *r, struct recording *rec, const struct rec_header *h)
{
    uint32_t entries = directory_entries(h);
    rec->logs = calloc(entries + 1, sizeof(*rec->logs));
    rec->caps = calloc(entries + 1, sizeof(*rec->caps));
    rec->threads = calloc(entries + 1, sizeof(*rec->threads));
    if (!rec->logs || !rec->caps || !rec->threads)
        return -ENOMEM;
    for (uint32_t i = 0; i < entries; i++) {
        uint32_t type;
        void *object;
        int e = directory_object(r, h, i, &type, &object);
        if (e)
            return e;
        if (!object)
            continue; /* reserved by a writer that died before publishing it */
        switch (type) {
        case REC_OBJ_META: read_meta(rec, object); break;
        case REC_OBJ_LOCS: e = read_locs(r, rec, object); break;
        case REC_OBJ_THREAD: e = read_thread(r, rec, object); break;
        case REC_OBJ_FRAME_LOG: e = read_frame_log(r, rec, object); break;
        case REC_OBJ_SPAN_LOG: e = read_spans(r, rec, object); break;
        case REC_OBJ_CAP: e = read_cap(r, rec, object); break;
        case REC_OBJ_KERNEL: e = read_kernel(r, rec, object); break;
        case REC_OBJ_GPU_ZONE_NAMES: e = read_gpu_zone_names(r, rec, object); break;
        case REC_OBJ_GPU_ZONES: e = read_gpu_zones(r, rec, object); break;
        }
        if (e)
            return e;
    }
    return 0;
}

int recording_read(const void *bytes, size_t len, struct recording **ret, char *why,
                   size_t why_len)
{
    struct reader r = { bytes, len, why, why_len };
    if (why_len)
        why[0] = '\0';
    const struct rec_header *h = bytes;
    int e = check_header(&r, h);
    if (e)
        return e;
    uint64_t used = atomic_load(&h->used);
    if (used < h->header_size || used > len)
        return malformed(&r, "the recording claims %llu bytes but holds %zu",
                         (unsigned long long)used, len);
    r.len = (size_t)used;
    struct recording *rec = calloc(1, sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    copy_string(rec->app, sizeof(rec->app), h->app, sizeof(h->app));
    rec->pid = atomic_load(&h->owner_pid);
    uint32_t state = atomic_load(&h->state);
    rec->state = state <= REC_STATE_ENDED ? (enum rec_state)state : REC_STATE_RECORDING;
    rec->end_status = h->end_status;
    rec->end_signal = h->end_signal;
    rec->clock_tsc = h->clock.tsc != 0;
    rec->clock_base_ticks = atomic_load(&h->clock.base_ticks);
    rec->clock_base_ns = atomic_load(&h->clock.base_ns);
    uint64_t bits = atomic_load(&h->clock.ns_per_tick_bits);
    memcpy(&rec->ns_per_tick, &bits, sizeof(bits));
    rec->alloc_failures = atomic_load(&h->alloc_failures);
    rec->gpu_timing = true;
    if (!isfinite(rec->ns_per_tick) || rec->ns_per_tick <= 0 || rec->ns_per_tick > 1e6)
        e = malformed(&r, "the recording's clock rate is not a rate");
    if (!e)
        e = read_objects(&r, rec, h);
    if (e) {
        recording_free(rec);
        return e;
    }
    *ret = rec;
    return 0;
}

int recording_read_fd(int fd, struct recording **ret, char *why, size_t why_len)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -errno;
    if (why_len)
        why[0] = '\0';
    if ((uint64_t)st.st_size < sizeof(struct rec_header)) {
        snprintf(why, why_len, "not a framescope recording (%lld bytes)", (long long)st.st_size);
        return -EINVAL;
    }
    /* The header says how much of the (sparse) arena is in use: map only that. */
    struct rec_header h;
    if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
        return -EIO;
    uint64_t used = atomic_load(&h.used);
    size_t len = used >= sizeof(h) && used <= (uint64_t)st.st_size ? (size_t)used
                                                                    : (size_t)st.st_size;
    void *bytes = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (bytes == MAP_FAILED)
        return -errno;
    int e = recording_read(bytes, len, ret, why, why_len);
    munmap(bytes, len);
    return e;
}

void recording_free(struct recording *rec)
{
    if (!rec)
        return;
    for (unsigned i = 0; rec->logs && i < rec->log_count; i++)
        free(rec->logs[i].frames);
    for (unsigned i = 0; rec->caps && i < rec->cap_count; i++)
        free(rec->caps[i].events);
    for (unsigned i = 0; rec->threads && i < rec->thread_count; i++) {
        free(rec->threads[i].nodes);
        free(rec->threads[i].events);
    }
    free(rec->logs);
    free(rec->caps);
    free(rec->threads);
    free(rec->locs);
    free(rec->spans);
    free(rec->gpu_zones);
    free(rec->gpu_zone_names);
    free(rec->kernel.samples);
    free(rec->kernel.drm_samples);
    free(rec);
}

double recording_ns(const struct recording *rec, uint64_t ticks)
{
    return (double)ticks * rec->ns_per_tick;
}

int64_t recording_mono_ns(const struct recording *rec, uint64_t ticks)
{
    return rec->clock_base_ns +
           (int64_t)((double)(int64_t)(ticks - rec->clock_base_ticks) * rec->ns_per_tick);
}

const char *recording_clock_describe(const struct recording *rec, char *buf, size_t len)
{
    if (!rec->clock_tsc)
        snprintf(buf, len, "clock_gettime(CLOCK_MONOTONIC) (no invariant TSC: readings carry "
                 "its cost)");
    else
        snprintf(buf, len, "tsc (invariant, %.4f GHz calibrated against CLOCK_MONOTONIC)",
                 1.0 / rec->ns_per_tick);
    return buf;
}

const struct rec_loc *recording_loc_find(const struct recording *rec, const void *address)
{
    uint64_t key = (uint64_t)(uintptr_t)address;
    size_t lo = 0, hi = rec->loc_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t a = atomic_load_explicit(&rec->locs[mid].address, memory_order_relaxed);
        if (a == key)
            return &rec->locs[mid];
        if (a < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Brings one array's streamed chunks back from the stream file into bytes. */
static int unstream_array(struct reader *r, struct chunked *a, int stream_fd)
{
    uint64_t streamed = atomic_load(&a->streamed_chunks);
    if (!streamed)
        return 0;
    uint64_t capacity = atomic_load(&a->table_capacity);
    uint64_t table_offset = atomic_load(&a->table_offset);
    uint64_t chunk_bytes = (uint64_t)a->chunk_items * a->item_size;
    if (streamed > capacity || capacity > r->len / sizeof(uint64_t) ||
        !inside(r, table_offset, capacity * sizeof(uint64_t)) || chunk_bytes == 0 ||
        chunk_bytes > r->len)
        return malformed(r, "a streamed array's chunk table is outside the recording");
    for (uint64_t c = 0; c < streamed; c++) {
        uint64_t offset;
        memcpy(&offset, r->bytes + table_offset + c * sizeof(uint64_t), sizeof(offset));
        if (offset == 0 || !inside(r, offset, chunk_bytes))
            return malformed(r, "streamed chunk %llu is outside the recording",
                             (unsigned long long)c);
        unsigned char *to = (unsigned char *)r->bytes + offset;
        for (uint64_t done = 0; done < chunk_bytes;) {
            ssize_t n = pread(stream_fd, to + done, chunk_bytes - done, (off_t)(offset + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return n < 0 ? -errno : malformed(r, "the stream file ends inside chunk %llu",
                                                  (unsigned long long)c);
            done += (uint64_t)n;
        }
    }
    atomic_store(&a->streamed_chunks, 0);
    return 0;
}

int recording_read_ended(void *bytes, size_t len, int stream_fd, struct recording **ret,
                         char *why, size_t why_len)
{
    int e = stream_fd >= 0 ? recording_unstream(bytes, len, stream_fd, why, why_len) : 0;
    struct rec_system system;
    system_describe(&system);
    if (e == 0)
        e = recording_set_system(bytes, len, &system, why, why_len);
    if (e == 0)
        e = recording_read(bytes, len, ret, why, why_len);
    return e;
}

int recording_unstream(void *bytes, size_t len, int stream_fd, char *why, size_t why_len)
{
    struct reader r = { bytes, len, why, why_len };
    if (why_len)
        why[0] = '\0';
    const struct rec_header *h = bytes;
    int e = check_header(&r, h);
    for (uint32_t i = 0; !e && i < directory_entries(h); i++) {
        uint32_t type;
        void *object;
        if ((e = directory_object(&r, h, i, &type, &object)) || !object ||
            (type != REC_OBJ_FRAME_LOG && type != REC_OBJ_SPAN_LOG && type != REC_OBJ_CAP &&
             type != REC_OBJ_KERNEL && type != REC_OBJ_GPU_ZONES))
            continue;
        struct chunked *a = type == REC_OBJ_FRAME_LOG ? &((struct rec_frame_log *)object)->frames
                            : type == REC_OBJ_SPAN_LOG ? &((struct rec_span_log *)object)->spans
                            : type == REC_OBJ_KERNEL   ? &((struct rec_kernel *)object)->samples
                            : type == REC_OBJ_GPU_ZONES ? &((struct rec_gpu_zones *)object)->spans
                                                        : &((struct rec_cap *)object)->events;
        e = unstream_array(&r, a, stream_fd);
        if (!e && type == REC_OBJ_KERNEL)
            e = unstream_array(&r, &((struct rec_kernel *)object)->drm_samples, stream_fd);
    }
    return e;
}

int recording_set_system(void *bytes, size_t len, const struct rec_system *sys, char *why,
                         size_t why_len)
{
    struct reader r = { bytes, len, why, why_len };
    if (why_len)
        why[0] = '\0';
    const struct rec_header *h = bytes;
    int e = check_header(&r, h);
    for (uint32_t i = 0; !e && i < directory_entries(h); i++) {
        uint32_t type;
        struct rec_meta *m;
        if ((e = directory_object(&r, h, i, &type, (void **)&m)) || type != REC_OBJ_META)
            continue;
        if (!atomic_load(&m->system_known)) {
            m->system = *sys;
            atomic_store(&m->system_known, 1);
        }
        break;
    }
    return e;
}
