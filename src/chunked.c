#include "chunked.h"

#include <stdlib.h>
#include <string.h>

void chunked_init(struct chunked *a, size_t item_size)
{
    memset(a, 0, sizeof(*a));
    a->item_size = item_size;
}

void *chunked_next(struct chunked *a)
{
    uint64_t n = atomic_load_explicit(&a->count, memory_order_relaxed);
    size_t chunk = n / CHUNK_ITEMS;
    if (chunk >= a->chunk_capacity) {
        size_t capacity = a->chunk_capacity ? a->chunk_capacity * 2 : 16;
        void **grown = calloc(capacity, sizeof(*grown));
        if (!grown) {
            a->dropped++;
            return NULL;
        }
        if (a->chunks)
            memcpy(grown, a->chunks, a->chunk_capacity * sizeof(*grown));
        /* The old table is leaked on purpose: a reader may still hold it. It is tiny. */
        a->chunks = grown;
        a->chunk_capacity = capacity;
    }
    if (!a->chunks[chunk]) {
        a->chunks[chunk] = calloc(CHUNK_ITEMS, a->item_size);
        if (!a->chunks[chunk]) {
            a->dropped++;
            return NULL;
        }
    }
    void *item = (char *)a->chunks[chunk] + (n % CHUNK_ITEMS) * a->item_size;
    memset(item, 0, a->item_size);
    return item;
}

void chunked_publish(struct chunked *a)
{
    atomic_fetch_add_explicit(&a->count, 1, memory_order_release);
}

void *chunked_at(const struct chunked *a, uint64_t index)
{
    return (char *)a->chunks[index / CHUNK_ITEMS] + (index % CHUNK_ITEMS) * a->item_size;
}

uint64_t chunked_count(const struct chunked *a)
{
    return atomic_load_explicit(&a->count, memory_order_acquire);
}
