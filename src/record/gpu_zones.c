#include "gpu_zones.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunked.h"
#include "recording.h"

/* Names are looked up at every zone begin on the app's recording threads: a lock-free probe
 * of our index finds a known path; only a new one takes the lock to be added. */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rec_gpu_zone_names *names;
static pthread_once_t names_once = PTHREAD_ONCE_INIT;
/* An open-addressing index over the names, ours (the recording holds the names only): slot
 * value id + 1, 0 empty, set once after the name's text. */
#define INDEX_SIZE (2 * GPU_ZONE_NAMES)
static _Atomic uint16_t name_index[INDEX_SIZE];

static void names_create(void)
{
    uint64_t offset;
    names = recording_object_new(sizeof(*names), &offset);
    if (names)
        recording_publish(REC_OBJ_GPU_ZONE_NAMES, offset, sizeof(*names));
}

static struct rec_gpu_zone_names *names_object(void)
{
    pthread_once(&names_once, names_create);
    return names;
}

static uint32_t hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

FSCOPE_EXPORT void fscope_gpu_zone_untimed(enum gpu_zone_untimed why, uint64_t n)
{
    struct rec_gpu_zone_names *t = names_object();
    if (t && why < GPU_ZONE_UNTIMED_COUNT)
        atomic_fetch_add_explicit(&t->untimed[why], n, memory_order_relaxed);
}

FSCOPE_EXPORT void fscope_gpu_pass_stats_state(enum rec_pipeline_stats_state state)
{
    struct rec_gpu_zone_names *t = names_object();
    /* On wins: one device that has them is enough for the report to show them. */
    if (t && atomic_load(&t->pipeline_stats) != REC_PIPELINE_STATS_ON)
        atomic_store(&t->pipeline_stats, state);
}

FSCOPE_EXPORT void fscope_gpu_pass_stats_skipped(uint64_t n)
{
    struct rec_gpu_zone_names *t = names_object();
    if (t)
        atomic_fetch_add_explicit(&t->stats_skipped, n, memory_order_relaxed);
}

/* The id of key, probing from its hash; the empty slot it reached in *ret_empty (or NULL). */
static bool name_find(const struct rec_gpu_zone_names *t, const char *key, uint32_t h,
                      uint16_t *ret_id, _Atomic uint16_t **ret_empty)
{
    *ret_empty = NULL;
    for (uint32_t probe = 0; probe < INDEX_SIZE; probe++) {
        _Atomic uint16_t *slot = &name_index[(h + probe) % INDEX_SIZE];
        uint16_t v = atomic_load_explicit(slot, memory_order_acquire);
        if (!v) {
            *ret_empty = slot;
            return false;
        }
        if (strncmp(t->names[v - 1], key, GPU_ZONE_NAME_SIZE - 1) == 0) {
            *ret_id = (uint16_t)(v - 1);
            return true;
        }
    }
    return false;
}

FSCOPE_EXPORT bool fscope_gpu_zone_name(const char *path, uint16_t *ret_id)
{
    struct rec_gpu_zone_names *t = names_object();
    if (!t)
        return false;
    uint32_t h = hash(path);
    _Atomic uint16_t *empty;
    if (name_find(t, path, h, ret_id, &empty))
        return true;
    pthread_mutex_lock(&names_lock);
    /* Again under the lock: another thread may have added it meanwhile. */
    bool found = name_find(t, path, h, ret_id, &empty);
    uint32_t count = atomic_load_explicit(&t->count, memory_order_relaxed);
    if (!found && empty && count < GPU_ZONE_NAMES) {
        snprintf(t->names[count], sizeof(t->names[count]), "%s", path);
        /* Published after its text: readers copy names below count only, and the index
         * points at it only once it is whole. */
        atomic_store_explicit(&t->count, count + 1, memory_order_release);
        atomic_store_explicit(empty, (uint16_t)(count + 1), memory_order_release);
        *ret_id = (uint16_t)count;
        found = true;
    }
    pthread_mutex_unlock(&names_lock);
    if (!found)
        atomic_fetch_add_explicit(&t->untimed[GPU_ZONE_UNTIMED_NAMES], 1, memory_order_relaxed);
    return found;
}

struct fscope_gpu_zone_log {
    struct rec_gpu_zones *rec;
};

FSCOPE_EXPORT struct fscope_gpu_zone_log *fscope_gpu_zone_log_create(uint32_t device_id)
{
    struct fscope_gpu_zone_log *log = calloc(1, sizeof(*log));
    uint64_t offset;
    struct rec_gpu_zones *rec = log ? recording_object_new(sizeof(*rec), &offset) : NULL;
    if (!rec) {
        free(log);
        return NULL;
    }
    rec->device_id = device_id;
    chunked_init(&rec->spans, sizeof(struct gpu_zone_span));
    chunked_init(&rec->stats, sizeof(struct gpu_pass_stats));
    recording_publish(REC_OBJ_GPU_ZONES, offset, sizeof(*rec));
    log->rec = rec;
    return log;
}

FSCOPE_EXPORT void fscope_gpu_pass_stats(struct fscope_gpu_zone_log *log, uint64_t end_ticks,
                                         uint16_t name, const uint64_t values[PIPELINE_STATS])
{
    if (!log)
        return;
    struct gpu_pass_stats *s = chunked_next(&log->rec->stats);
    if (!s)
        return;
    s->end_ticks = end_ticks;
    s->device_id = log->rec->device_id;
    s->name = name;
    memcpy(s->values, values, sizeof(s->values));
    chunked_publish(&log->rec->stats);
}

FSCOPE_EXPORT void fscope_gpu_zone_add(struct fscope_gpu_zone_log *log, uint64_t begin_ticks,
                                       uint64_t end_ticks, uint16_t name, uint8_t depth,
                                       enum gpu_zone_kind kind)
{
    if (!log || end_ticks < begin_ticks)
        return;
    struct gpu_zone_span *s = chunked_next(&log->rec->spans);
    if (!s)
        return;
    s->begin = begin_ticks;
    s->end = end_ticks;
    s->device_id = log->rec->device_id;
    s->name = name;
    s->depth = depth;
    s->kind = (uint8_t)kind;
    chunked_publish(&log->rec->spans);
}
