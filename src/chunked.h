/* An append-only array that never moves what it holds: fixed-size chunks reached through a
 * table that grows geometrically. One writer; readers see only what the count published. */
#ifndef FSCOPE_CHUNKED_H
#define FSCOPE_CHUNKED_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CHUNK_ITEMS 4096u

struct chunked {
    size_t item_size;
    void **chunks;
    size_t chunk_capacity;
    _Atomic uint64_t count;
    uint64_t dropped; /* appends lost to allocation failure */
};

void chunked_init(struct chunked *a, size_t item_size);
/* Returns a zeroed slot for the next item, or NULL (counted) when memory ran out. The item
 * becomes visible to readers on chunked_publish. */
void *chunked_next(struct chunked *a);
void chunked_publish(struct chunked *a);
void *chunked_at(const struct chunked *a, uint64_t index);
uint64_t chunked_count(const struct chunked *a);

#endif
