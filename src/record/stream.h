/* Keeps the recording's memory bounded on long runs: a writer thread moves sealed chunks of
 * frames, GPU spans, cap events and the other arrays to the stream file, each encoded
 * compactly (util/compact.h) as a struct rec_range appended to the file, a batch in one write,
 * then gives their memory back (holes punched in the memfd, in one io_uring submission).
 * Never I/O, encoding or allocation on an app thread: the thread wakes once a second.
 *
 * A chunk is sealed when it is full; a frame chunk only once a further chunk of frames has
 * followed it, so presentation feedback (which arrives within a few frames) has landed. */
#ifndef FSCOPE_RECORD_STREAM_H
#define FSCOPE_RECORD_STREAM_H

#include <stdbool.h>
#include <stdint.h>

/* Starts the writer thread once there is something to stream (a chunked array filled its
 * first chunk). Cheap after the first call; does nothing without a stream file. */
void stream_kick(void);
/* Stops the writer thread at exit (what it has not moved stays in memory). */
void stream_stop(void);

struct chunked;
/* Told of chunks as the writer stages them, on the writer thread: wants says which arrays (of
 * the object at a directory entry, of its type) it takes; take gets each chunk of those, an
 * array's in order, as a private copy of its items: the bytes the stream file gets, valid for
 * the call. */
struct stream_observer {
    bool (*wants)(void *ctx, uint32_t type, const void *object, const struct chunked *array);
    void (*take)(void *ctx, uint32_t entry, uint32_t type, const void *object,
                 const struct chunked *array, uint64_t chunk, const void *items);
    void *ctx;
};
/* Sets the one observer, before the writer starts (a constructor's call). */
void stream_observe(const struct stream_observer *observer);

#endif
