#include "chunked.h"

#include <string.h>

#include "recording.h"
#include "stream.h"

void chunked_init(struct chunked *a, uint32_t item_size)
{
    memset(a, 0, sizeof(*a));
    a->item_size = item_size;
    a->chunk_items = CHUNK_BYTES / item_size ? CHUNK_BYTES / item_size : 1;
}

static uint64_t *table(const struct chunked *a)
{
    return recording_at(atomic_load_explicit(&a->table_offset, memory_order_acquire));
}

void *chunked_next(struct chunked *a)
{
    uint64_t n = atomic_load_explicit(&a->count, memory_order_relaxed);
    uint64_t chunk = n / a->chunk_items;
    uint64_t capacity = atomic_load_explicit(&a->table_capacity, memory_order_relaxed);
    if (chunk >= capacity) {
        uint64_t grown_capacity = capacity ? capacity * 2 : 16;
        uint64_t grown = recording_alloc(grown_capacity * sizeof(uint64_t));
        if (!grown) {
            a->dropped++;
            return NULL;
        }
        if (capacity)
            memcpy(recording_at(grown), table(a), capacity * sizeof(uint64_t));
        /* The old table stays where it is: a reader may still be walking it. */
        atomic_store_explicit(&a->table_offset, grown, memory_order_release);
        atomic_store_explicit(&a->table_capacity, grown_capacity, memory_order_release);
    }
    uint64_t *chunks = table(a);
    if (!chunks[chunk]) {
        uint64_t offset = recording_alloc((uint64_t)a->chunk_items * a->item_size);
        if (!offset) {
            a->dropped++;
            return NULL;
        }
        atomic_store_explicit((_Atomic uint64_t *)&chunks[chunk], offset, memory_order_release);
        /* A first chunk filled: from here the recording grows, so it streams (once). */
        if (chunk == 1)
            stream_kick();
    }
    /* Zero already (recording_alloc's, which is where a forked child zeroes it): callers
     * that may leave a slot unpublished clear it before they use it again. */
    char *item = recording_at(chunks[chunk]);
    return item + (n % a->chunk_items) * a->item_size;
}

void chunked_publish(struct chunked *a)
{
    atomic_fetch_add_explicit(&a->count, 1, memory_order_release);
}

void *chunked_at(const struct chunked *a, uint64_t index)
{
    char *chunk = recording_at(table(a)[index / a->chunk_items]);
    return chunk + (index % a->chunk_items) * a->item_size;
}

uint64_t chunked_count(const struct chunked *a)
{
    return atomic_load_explicit(&a->count, memory_order_acquire);
}
