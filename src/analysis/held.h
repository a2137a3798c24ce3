/* What a pass in time order holds of a sorted stream (sorter.h): items appended at the back as
 * they are read and dropped from the front once no later question reaches them, so that a
 * pass over a run of any length holds a window of it. */
#ifndef FSCOPE_ANALYSIS_HELD_H
#define FSCOPE_ANALYSIS_HELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Items [first, count) of items (of one size); those before first are dropped, their room
 * taken back when the rest is moved down (once the room is full). */
struct held {
    unsigned char *items;
    size_t first, count, capacity;
};

/* Appends item of size bytes; false when memory ran out. */
bool held_push(struct held *h, const void *item, size_t size);
void held_free(struct held *h);

/* A device's items, and how many it held when its owner last dropped some (its own use). */
struct held_device {
    uint32_t device_id;
    size_t pruned;
    struct held items;
};
/* The few devices a pass meets, each made on its first item, found by a walk. */
struct held_devices {
    struct held_device *devices;
    size_t count, capacity;
};
/* device_id's, made with add (NULL: not met, or no memory to add it). */
struct held_device *held_device(struct held_devices *t, uint32_t device_id, bool add);
void held_devices_free(struct held_devices *t);

#endif
