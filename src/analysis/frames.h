/* A surface's frames as the model keeps them: chunk by chunk, each packed by word planes
 * (frames.c: a word's first value and its changes from frame to frame, in the fewest bytes
 * they fit), and read through a cursor that unpacks the chunk a frame lies in once for all of
 * its frames. A run's frames cost analysis their packed size (tens of bytes a frame against
 * 880 unpacked) up to FRAME_STORE_MEMORY, the rest on disk, and each cursor two chunks
 * unpacked. With each frame, analysis keeps what it
 * found of it once (struct frame_extra), packed the same way.
 *
 * Packing is the model's own: chunks are packed from frames checked when the recording was
 * read, and unpacked only here, never written to a file or read from one. */
#ifndef FSCOPE_ANALYSIS_FRAMES_H
#define FSCOPE_ANALYSIS_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "budget.h"
#include "recording.h"

/* What analysis finds of a frame once and keeps with it (0 until it does). */
struct frame_extra {
    struct frame_wake wake; /* display_evidence_wakes */
    bool late_judged;       /* late_refreshes: whether it could be judged, */
    int32_t late_refreshes; /* and how many refreshes late it was shown */
};
/* A frame as a chunk unpacks: the frame as recorded, then analysis's. */
struct frame_item {
    struct fscope_frame frame;
    struct frame_extra extra;
};

/* Frames a chunk of frame_store_set holds: as many as the app's chunks (CHUNK_BYTES). */
#define FRAME_CHUNK_FRAMES ((uint32_t)(256u * 1024u / sizeof(struct fscope_frame)))

/* Packed chunks a surface keeps in memory, in bytes: the rest go to an unnamed file on disk
 * ($TMPDIR, else /var/tmp, else /tmp, as the stream file), read back by each cursor (in memory
 * when none can be made). About 170,000 frames of the demo. */
#define FRAME_STORE_MEMORY (8u << 20)

/* Two chunks unpacked: a frame's neighbour across a chunk's end leaves the frame valid. */
#define FRAME_CURSOR_SLOTS 2

struct frame_cursor {
    const struct recording_log *log;
    uint64_t chunk[FRAME_CURSOR_SLOTS];            /* unpacked in items; UINT64_MAX: none */
    struct frame_item *items[FRAME_CURSOR_SLOTS]; /* room for log->chunk_frames each */
    struct slot_words *held[FRAME_CURSOR_SLOTS];   /* what each holds already (frames.c) */
    unsigned last;                                 /* the slot read last */
    unsigned char *spilled;                        /* a chunk read from the spill file */
};

/* A cursor over log's frames (rec: the recording it is of). False when memory ran out (c then
 * holds nothing to close). */
bool frame_cursor_open(struct frame_cursor *c, const struct recording *rec,
                       const struct recording_log *log);
/* Frame i (< log->frame_count; beyond, a frame of zeros). Valid until the cursor has unpacked
 * two other chunks: a frame and the next (or the one before) are both valid, a frame kept
 * across more is copied. Frames read in order unpack each chunk once. */
const struct fscope_frame *frame_at(struct frame_cursor *c, uint64_t i);
/* What analysis keeps of frame i, valid as frame_at's. */
const struct frame_extra *frame_extra_at(struct frame_cursor *c, uint64_t i);
void frame_cursor_close(struct frame_cursor *c);

/* Appends n frames (1 <= n <= chunk_frames) to log as its next chunk, packed. Sets
 * log->chunk_frames on the first; every chunk but the last holds that many. Returns 0,
 * -EINVAL (a chunk after one that was not whole, or more than chunk_frames) or -ENOMEM. */
int frame_store_append(struct recording_log *log, uint32_t chunk_frames,
                       const struct fscope_frame *frames, uint64_t n);
/* log's frames from an array of count (tests, synthetic recordings). Returns 0 or -ENOMEM. */
int frame_store_set(struct recording_log *log, const struct fscope_frame *frames,
                    uint64_t count);
/* A part of a frame as a chunk unpacks it: FRAME_FIELD(frame.gpu_busy_ticks). */
struct frame_field {
    size_t offset, size;
};
#define FRAME_FIELD(member)                                                                 \
    ((struct frame_field){ offsetof(struct frame_item, member),                             \
                           sizeof(((struct frame_item *)0)->member) })

/* Calls update on every frame of log, in order, with what analysis keeps of it, and packs what
 * it leaves (analysis's own fields and findings, filled once). writes: every field update may
 * change (write_count of them); only their words are packed again, so a write elsewhere is
 * lost, and a chunk where update changed none of them is kept as it was. Returns 0 or -ENOMEM
 * (the frames then as they were). */
int frame_store_update(struct recording_log *log,
                       void (*update)(void *ctx, struct fscope_frame *f, struct frame_extra *x),
                       void *ctx, const struct frame_field *writes, unsigned write_count);
/* Drops log's first skip frames (their whole chunks given back). */
void frame_store_drop(struct recording_log *log, uint64_t skip);
void frame_store_free(struct recording_log *log);
/* Gives from's frames to to (whose own are freed); from is left empty. */
void frame_store_move(struct recording_log *to, struct recording_log *from);
/* Bytes log's packed chunks take in memory, and in its spill file. */
uint64_t frame_store_bytes(const struct recording_log *log);
uint64_t frame_store_spilled(const struct recording_log *log);

#endif
