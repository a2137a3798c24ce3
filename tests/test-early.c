/* Frames read ahead of the app's exit (src/analysis/recording_early.c): the chunks the stream
 * thread hands over, checked and packed as the reader would, are adopted only when they are
 * exactly the log's first chunks that the stream file holds; anything else (a chunk skipped,
 * out of order or of another size, one past what was streamed, a malformed frame, a log first
 * seen past its start, a second adoption) gives the reader nothing, and it reads the log whole.
 * Checked by what the log holds after adoption, frame by frame. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/frames.h"
#include "analysis/recording.h"
#include "check.h"

#define CHUNK 16

/* chunk k of a log: frames k * CHUNK on, each 100 ticks long, with what the app never writes
 * (GPU busy) set, which the reader clears. */
static void chunk_make(struct fscope_frame *frames, uint64_t k)
{
    memset(frames, 0, CHUNK * sizeof(*frames));
    for (uint64_t i = 0; i < CHUNK; i++) {
        struct fscope_frame *f = &frames[i];
        f->index = k * CHUNK + i;
        f->start_ticks = 1000 + f->index * 100;
        f->end_ticks = f->start_ticks + 100;
        f->block_ticks[0] = f->index % 7;
        f->gpu_busy_ticks = 55;
        f->present_state = 1;
    }
}

static const struct chunked array = { .item_size = sizeof(struct fscope_frame),
                                      .chunk_items = CHUNK };

/* Takes the chunks given (-1 ends the list) for directory entry 3; then adopts with usable
 * streamed chunks; returns the chunks adopted, with the log checked against them. */
static uint64_t adopt_after(const int *chunks, const struct chunked *taken_as, uint64_t usable,
                            const char *what)
{
    struct recording_early *early = recording_early_create();
    CHECK(early);
    struct fscope_frame frames[CHUNK];
    for (const int *k = chunks; *k >= 0; k++) {
        chunk_make(frames, (uint64_t)*k);
        if (*k == 99)
            frames[5].end_ticks = frames[5].start_ticks - 1; /* malformed: ends before it begins */
        recording_early_take(early, 3, taken_as, (uint64_t)*k, frames);
    }
    struct recording_log log;
    memset(&log, 0, sizeof(log));
    EXPECT(recording_early_adopt(early, 7, &array, usable, &log) == 0,
           "%s: another log's entry adopted frames", what);
    uint64_t adopted = recording_early_adopt(early, 3, &array, usable, &log);
    EXPECT(recording_early_adopt(early, 3, &array, usable, &log) == 0 || !adopted,
           "%s: adopted twice", what);
    uint64_t taken, frames_adopted = recording_early_frames(early, &taken);
    EXPECT(frames_adopted == adopted * CHUNK, "%s: %" PRIu64 " frames counted adopted for %"
           PRIu64 " chunks", what, frames_adopted, adopted);
    EXPECT(log.frame_count == adopted * CHUNK, "%s: the log holds %" PRIu64 " frames for %"
           PRIu64 " chunks", what, log.frame_count, adopted);
    struct frame_cursor c;
    if (adopted && frame_cursor_open(&c, NULL, &log)) {
        uint64_t wrong = 0;
        for (uint64_t k = 0; k < adopted; k++) {
            chunk_make(frames, k);
            for (uint64_t i = 0; i < CHUNK; i++) {
                frames[i].gpu_busy_ticks = 0;
                wrong += memcmp(frame_at(&c, k * CHUNK + i), &frames[i], sizeof(frames[i])) != 0;
            }
        }
        EXPECT(!wrong, "%s: %" PRIu64 " frames adopted wrong", what, wrong);
        frame_cursor_close(&c);
    }
    frame_store_free(&log);
    recording_early_destroy(early);
    return adopted;
}

int main(void)
{
    struct chunked other = array;
    other.chunk_items = CHUNK / 2;
    static const int in_order[] = { 0, 1, 2, -1 }, gap[] = { 0, 2, -1 },
                     again[] = { 0, 0, -1 }, late[] = { 1, 2, -1 },
                     malformed[] = { 0, 99, 2, -1 }, none[] = { -1 };
    EXPECT(adopt_after(in_order, &array, 3, "in order") == 3, "in order: not adopted");
    EXPECT(adopt_after(in_order, &array, 10, "more streamed than taken") == 3,
           "more streamed than taken: not the three taken");
    EXPECT(adopt_after(in_order, &array, 2, "taken past the stream file") == 0,
           "taken past what the stream file holds, adopted");
    EXPECT(adopt_after(gap, &array, 3, "a gap") == 0, "a chunk skipped, adopted");
    EXPECT(adopt_after(again, &array, 3, "twice") == 0, "a chunk taken twice, adopted");
    EXPECT(adopt_after(late, &array, 3, "late") == 0, "a log first seen past its start, adopted");
    EXPECT(adopt_after(malformed, &array, 3, "malformed") == 0, "a malformed frame, adopted");
    EXPECT(adopt_after(in_order, &other, 3, "another size") == 0,
           "chunks of another size, adopted");
    EXPECT(adopt_after(none, &array, 3, "none") == 0, "nothing taken, something adopted");
    /* NULL: the exit without a read-ahead. */
    struct recording_log log;
    memset(&log, 0, sizeof(log));
    EXPECT(recording_early_adopt(NULL, 3, &array, 3, &log) == 0 && !log.frame_count,
           "no read-ahead, something adopted");
    recording_early_destroy(NULL);
    if (check_failures)
        fprintf(stderr, "%d failure(s)\n", check_failures);
    else
        printf("frames read ahead were adopted exactly when they were the log's first "
               "streamed chunks\n");
    return check_failures ? 1 : 0;
}
