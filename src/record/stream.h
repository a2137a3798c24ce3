/* Keeps the recording's memory bounded on long runs: a writer thread moves sealed chunks of
 * frames, GPU spans and cap events to the stream file (at their own arena offsets, so the file
 * is the arena's image) in batched io_uring writes, then gives their memory back (a hole
 * punched in the memfd). Never I/O on an app thread: the thread wakes once a second.
 *
 * A chunk is sealed when it is full; a frame chunk only once a further chunk of frames has
 * followed it, so presentation feedback (which arrives within a few frames) has landed. */
#ifndef FSCOPE_RECORD_STREAM_H
#define FSCOPE_RECORD_STREAM_H

/* Starts the writer thread once there is something to stream (a chunked array filled its
 * first chunk). Cheap after the first call; does nothing without a stream file. */
void stream_kick(void);
/* Stops the writer thread at exit (what it has not moved stays in memory). */
void stream_stop(void);

#endif
