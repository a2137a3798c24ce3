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

#include <stdint.h>

/* Starts the writer thread once there is something to stream (a chunked array filled its
 * first chunk). Cheap after the first call; does nothing without a stream file. */
void stream_kick(void);
/* Stops the writer thread at exit (what it has not moved stays in memory). */
void stream_stop(void);

struct chunked;
/* Told of each frame chunk as the writer stages it: the frame log's directory entry, its
 * array, the chunk's number (an array's in order) and a private copy of its items, the bytes
 * the stream file gets (valid for the call). Runs on the writer thread. */
typedef void (*stream_frames_fn)(void *ctx, uint32_t entry, const struct chunked *frames,
                                 uint64_t chunk, const void *items);
/* Sets the one observer of frame chunks, before the writer starts (a constructor's call). */
void stream_observe_frames(stream_frames_fn fn, void *ctx);

#endif
