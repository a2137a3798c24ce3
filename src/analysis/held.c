/* What a pass holds (held.h). */
#include "held.h"

#include <stdlib.h>
#include <string.h>

bool held_push(struct held *h, const void *item, size_t size)
{
    if (h->first && h->count == h->capacity) {
        memmove(h->items, h->items + h->first * size, (h->count - h->first) * size);
        h->count -= h->first;
        h->first = 0;
    }
    if (h->count == h->capacity) {
        size_t want = h->capacity ? 2 * h->capacity : 64;
        unsigned char *grown = realloc(h->items, want * size);
        if (!grown)
            return false;
        h->items = grown;
        h->capacity = want;
    }
    memcpy(h->items + h->count++ * size, item, size);
    return true;
}

void held_free(struct held *h)
{
    free(h->items);
    memset(h, 0, sizeof(*h));
}

struct held_device *held_device(struct held_devices *t, uint32_t device_id, bool add)
{
    for (size_t d = 0; d < t->count; d++)
        if (t->devices[d].device_id == device_id)
            return &t->devices[d];
    if (!add)
        return NULL;
    if (t->count == t->capacity) {
        size_t want = t->capacity ? 2 * t->capacity : 4;
        struct held_device *grown = realloc(t->devices, want * sizeof(*grown));
        if (!grown)
            return NULL;
        t->devices = grown;
        t->capacity = want;
    }
    struct held_device *d = &t->devices[t->count++];
    memset(d, 0, sizeof(*d));
    d->device_id = device_id;
    return d;
}

void held_devices_free(struct held_devices *t)
{
    for (size_t d = 0; d < t->count; d++)
        held_free(&t->devices[d].items);
    free(t->devices);
    memset(t, 0, sizeof(*t));
}
