#include "meta.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "recording.h"

/* Serialises writers; readers in other processes take no lock (they check what they read). */
static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;

FSCOPE_EXPORT void fscope_record_enable(void)
{
    struct rec_meta *m = recording_meta();
    if (m)
        atomic_store(&m->enabled, 1);
}

FSCOPE_EXPORT void fscope_record_gpu_timing(bool on)
{
    struct rec_meta *m = recording_meta();
    if (m)
        atomic_store(&m->gpu_timing, on);
}

FSCOPE_EXPORT void fscope_record_device(uint32_t id, const char *device, const char *driver)
{
    struct rec_meta *m = recording_meta();
    if (!m)
        return;
    device = device ? device : "";
    driver = driver ? driver : "";
    pthread_mutex_lock(&meta_lock);
    uint32_t n = atomic_load_explicit(&m->device_count, memory_order_relaxed);
    struct rec_device *d = NULL;
    for (uint32_t i = 0; i < n && !d; i++)
        if (strcmp(m->devices[i].name, device) == 0 && strcmp(m->devices[i].driver, driver) == 0)
            d = &m->devices[i];
    if (!d && n < REC_MAX_DEVICES) {
        d = &m->devices[n];
        snprintf(d->name, sizeof(d->name), "%s", device);
        snprintf(d->driver, sizeof(d->driver), "%s", driver);
        d->first_id = id;
        d->last_id = id;
        d->count = 1;
        atomic_store_explicit(&m->device_count, n + 1, memory_order_release);
    } else if (d) {
        d->count++;
        d->last_id = id;
    }
    pthread_mutex_unlock(&meta_lock);
}

FSCOPE_EXPORT void fscope_record_note(const char *fmt, ...)
{
    struct rec_meta *m = recording_meta();
    if (!m)
        return;
    char line[REC_NOTE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&meta_lock);
    uint32_t n = atomic_load_explicit(&m->note_count, memory_order_relaxed);
    bool seen = false;
    for (uint32_t i = 0; i < n && !seen; i++)
        seen = strcmp(m->notes[i], line) == 0;
    if (!seen && n < REC_MAX_NOTES) {
        memcpy(m->notes[n], line, sizeof(line));
        atomic_store_explicit(&m->note_count, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&meta_lock);
}

void record_outputs(const struct rec_output *outputs, size_t count)
{
    struct rec_meta *m = recording_meta();
    if (!m)
        return;
    if (count > REC_MAX_OUTPUTS)
        count = REC_MAX_OUTPUTS;
    pthread_mutex_lock(&meta_lock);
    /* Readers take count first: shrink it before rewriting, grow it after. */
    atomic_store_explicit(&m->output_count, 0, memory_order_release);
    memcpy(m->outputs, outputs, count * sizeof(*outputs));
    atomic_store_explicit(&m->output_count, (uint32_t)count, memory_order_release);
    pthread_mutex_unlock(&meta_lock);
}
