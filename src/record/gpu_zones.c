#include "gpu_zones.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunked.h"
#include "recording.h"

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rec_gpu_zone_names *names;
/* An open-addressing index over the names, ours (the recording holds the names only). */
static uint16_t name_index[2 * GPU_ZONE_NAMES];
static bool names_tried;

static struct rec_gpu_zone_names *names_object(void)
{
    if (!names_tried) {
        names_tried = true;
        uint64_t offset;
        names = recording_object_new(sizeof(*names), &offset);
        if (names)
            recording_publish(REC_OBJ_GPU_ZONE_NAMES, offset, sizeof(*names));
    }
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
    pthread_mutex_lock(&names_lock);
    struct rec_gpu_zone_names *t = names_object();
    pthread_mutex_unlock(&names_lock);
    if (t && why < GPU_ZONE_UNTIMED_COUNT)
        atomic_fetch_add_explicit(&t->untimed[why], n, memory_order_relaxed);
}

FSCOPE_EXPORT bool fscope_gpu_zone_name(const char *path, uint16_t *ret_id)
{
    char key[GPU_ZONE_NAME_SIZE];
    snprintf(key, sizeof(key), "%s", path);
    pthread_mutex_lock(&names_lock);
    struct rec_gpu_zone_names *t = names_object();
    bool found = false;
    if (t) {
        uint32_t count = atomic_load_explicit(&t->count, memory_order_relaxed);
        for (uint32_t probe = 0, h = hash(key); probe < 2 * GPU_ZONE_NAMES; probe++) {
            uint16_t *slot = &name_index[(h + probe) % (2 * GPU_ZONE_NAMES)];
            if (*slot && strcmp(t->names[*slot - 1], key) == 0) {
                *ret_id = (uint16_t)(*slot - 1);
                found = true;
                break;
            }
            if (!*slot) {
                if (count == GPU_ZONE_NAMES)
                    break;
                memcpy(t->names[count], key, sizeof(key));
                *slot = (uint16_t)(count + 1);
                /* Published after its text: a reader copies names below count only. */
                atomic_store_explicit(&t->count, count + 1, memory_order_release);
                *ret_id = (uint16_t)count;
                found = true;
                break;
            }
        }
    }
    pthread_mutex_unlock(&names_lock);
    if (!found && t)
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
    recording_publish(REC_OBJ_GPU_ZONES, offset, sizeof(*rec));
    log->rec = rec;
    return log;
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
