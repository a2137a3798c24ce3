/* The app's side of the recording (src/record/format.h): the shared-memory arena every
 * recorder writes into. `framescope run` creates the arena and hands it over in
 * FRAMESCOPE_RECORDING_FD, so it outlives the app however the app ends; without an observer
 * the app makes its own and analyses it at exit. Nothing here reads the recording back.
 *
 * Allocation is a bump of an atomic offset: no lock, no system call (pages fault in as they
 * are first written, as they would from malloc). */
#ifndef FSCOPE_RECORD_RECORDING_H
#define FSCOPE_RECORD_RECORDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format.h"

struct fscope_loc;

/* Attaches to the observer's arena or creates one. Idempotent; run by the library's
 * start-up before the clock. False when no arena could be made: nothing is recorded. */
bool recording_init(void);

/* The arena's header, or NULL when there is none. */
struct rec_header *recording_header(void);
/* Whether an observer (framescope run) holds the arena and will analyse it. */
bool recording_observed(void);
/* The arena's memfd, or -1 (an anonymous mapping, or none). */
int recording_fd(void);
/* The file sealed chunks are streamed to, or -1 (then nothing is streamed). */
int recording_stream_fd(void);
/* Whether the arena's and the stream file's descriptors are still those files (checked by
 * identity before anything is written, punched or sent through them). */
bool recording_fds_ours(void);

/* Reserves size zeroed bytes aligned to REC_ALIGN; returns their offset, or 0 when the arena
 * is full (counted in the header). */
uint64_t recording_alloc(uint64_t size);
/* Makes the arena's next pages resident before the app's threads first write them (a first
 * write to a page is a page fault on the writing thread: in a VM several microseconds, and
 * the demo at 2,700 fps took one every few frames): ahead of what is allocated by what was
 * allocated since the last call (256 KiB to 4 MiB: at most that much more is resident). *done and *last_used are the
 * caller's, zero at first. The stream thread calls it at its tick; a kernel without
 * MADV_POPULATE_WRITE (before 5.14) is left as it was. */
void recording_prefault(uint64_t *done, uint64_t *last_used);
/* The address of an offset in this process. */
void *recording_at(uint64_t offset);
/* Allocates and zeroes an object; *ret_offset gets its offset. NULL when full. Publish it
 * once initialised. */
void *recording_object_new(uint64_t size, uint64_t *ret_offset);
/* Makes an initialised object visible to readers. False when the directory is full. */
bool recording_publish(enum rec_object_type type, uint64_t offset, uint64_t size);

/* The run's metadata object (devices, notes, outputs, switches). NULL without an arena. */
struct rec_meta *recording_meta(void);
/* Enters loc in the location table so readers can name it. Lock-free; idempotent. */
void recording_loc(const struct fscope_loc *loc);

/* The app has flushed what it had at exit: analysis may rely on final tallies. */
void recording_end(void);
/* In a forked child, before fscope_fd_release_all: the child keeps the parent's address
 * space but must never write the parent's recording, so its view of the arena becomes a
 * private copy. */
void recording_forked_child(void);

#endif
