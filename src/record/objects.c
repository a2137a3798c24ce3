#include "objects.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "chunked.h"
#include "recording.h"

/* Names and pipelines come from any app thread, rarely (a name per object, a pipeline per
 * material): one lock around each append. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct rec_objects *objects;
static pthread_once_t objects_once = PTHREAD_ONCE_INIT;

static void objects_create(void)
{
    uint64_t offset;
    struct rec_objects *o = recording_object_new(sizeof(*o), &offset);
    if (!o)
        return;
    chunked_init(&o->names, sizeof(struct object_name));
    chunked_init(&o->pipelines, sizeof(struct pipeline_created));
    recording_publish(REC_OBJ_OBJECTS, offset, sizeof(*o));
    objects = o;
}

static struct rec_objects *objects_get(void)
{
    pthread_once(&objects_once, objects_create);
    return objects;
}

void fscope_object_name(uint32_t device_id, int32_t type, uint64_t handle, const char *name)
{
    struct rec_objects *o = objects_get();
    if (!o || !handle)
        return;
    pthread_mutex_lock(&lock);
    struct object_name *n = chunked_next(&o->names);
    if (n) {
        memset(n, 0, sizeof(*n));
        n->handle = handle;
        n->device_id = device_id;
        n->type = type;
        snprintf(n->name, sizeof(n->name), "%s", name ? name : "");
        chunked_publish(&o->names);
    }
    pthread_mutex_unlock(&lock);
}

void fscope_pipeline_created(uint32_t device_id, uint64_t handle, uint64_t end_ticks,
                             uint64_t duration_ticks, uint32_t flags, uint64_t driver_ns)
{
    struct rec_objects *o = objects_get();
    if (!o)
        return;
    pthread_mutex_lock(&lock);
    struct pipeline_created *p = chunked_next(&o->pipelines);
    if (p) {
        *p = (struct pipeline_created){ .end_ticks = end_ticks, .duration_ticks = duration_ticks,
                                        .driver_ns = driver_ns, .handle = handle,
                                        .device_id = device_id, .flags = flags };
        chunked_publish(&o->pipelines);
    }
    pthread_mutex_unlock(&lock);
}
