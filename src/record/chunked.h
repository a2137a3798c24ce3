/* The writer's side of a chunked array in the recording (struct chunked, format.h): never
 * moves what it holds, so a frame's pointer stays valid while feedback fills it in. One
 * writer; readers see only what the count published. */
#ifndef FSCOPE_RECORD_CHUNKED_H
#define FSCOPE_RECORD_CHUNKED_H

#include <stdint.h>

#include "format.h"

/* Chunks hold about this many bytes: small enough that a chunk's first write is a few page
 * faults, large enough that the table is rarely replaced. */
#define CHUNK_BYTES (256u * 1024u)

void chunked_init(struct chunked *a, uint32_t item_size);
/* Returns a zeroed slot for the next item, or NULL (counted) when the arena is full. The item
 * becomes visible to readers on chunked_publish. */
void *chunked_next(struct chunked *a);
void chunked_publish(struct chunked *a);
/* An item already published (index < chunked_count). */
void *chunked_at(const struct chunked *a, uint64_t index);
uint64_t chunked_count(const struct chunked *a);

#endif
