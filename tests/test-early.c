/* What the app's exit reads ahead (src/analysis/recording_early.c): the chunks the stream
 * thread hands over, of frames (checked and packed as the reader would) or of the engine's
 * command buffer recordings (checked and pushed to a sorter as the reader would), are adopted
 * only when they are exactly the array's first chunks that the stream file holds; anything
 * else (a chunk skipped, out of order or of another size, one past what was streamed, a
 * malformed item, an array first seen past its start, a second adoption, a sorter not empty)
 * gives the reader nothing, and it reads the array whole. Checked by what the log or the
 * sorter holds after adoption, item by item. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/frames.h"
#include "analysis/recording.h"
#include "check.h"

#define CHUNK 16
#define ENTRY 3
#define FRAMES_FIELD offsetof(struct rec_frame_log, frames)
#define RECORDINGS_FIELD offsetof(struct rec_engine, recordings)

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
        recording_early_take(early, ENTRY, REC_OBJ_FRAME_LOG, FRAMES_FIELD, taken_as,
                             taken_as, (uint64_t)*k, frames);
    }
    struct recording_log log;
    memset(&log, 0, sizeof(log));
    EXPECT(recording_early_adopt_frames(early, ENTRY + 1, &array, usable, &log) == 0,
           "%s: another log's entry adopted frames", what);
    uint64_t adopted = recording_early_adopt_frames(early, ENTRY, &array, usable, &log);
    EXPECT(recording_early_adopt_frames(early, ENTRY, &array, usable, &log) == 0 || !adopted,
           "%s: adopted twice", what);
    struct recording_early_counts counts;
    recording_early_counts(early, &counts);
    EXPECT(counts.frames_adopted == adopted * CHUNK, "%s: %" PRIu64 " frames counted adopted "
           "for %" PRIu64 " chunks", what, counts.frames_adopted, adopted);
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

/* Chunk k of command buffer recordings, ended in order. */
static void recordings_make(struct cmd_recording *items, uint64_t k)
{
    memset(items, 0, CHUNK * sizeof(*items));
    for (uint64_t i = 0; i < CHUNK; i++) {
        items[i].begin_ticks = 500 + (k * CHUNK + i) * 10;
        items[i].end_ticks = items[i].begin_ticks + 5;
        items[i].cb = k * CHUNK + i;
        items[i].commands = (uint32_t)i;
    }
}

/* As adopt_after, for the engine's recordings into a sorter made ready as the reader makes
 * it (not empty: one item pushed first); the sorter checked against them. */
static uint64_t sorted_after(const int *chunks, uint64_t usable, bool not_empty,
                             const char *what)
{
    struct recording_early *early = recording_early_create();
    CHECK(early);
    struct cmd_recording items[CHUNK];
    static const struct chunked recordings = { .item_size = sizeof(struct cmd_recording),
                                               .chunk_items = CHUNK };
    for (const int *k = chunks; *k >= 0; k++) {
        recordings_make(items, (uint64_t)*k);
        if (*k == 99)
            items[3].end_ticks = items[3].begin_ticks - 1;
        recording_early_take(early, ENTRY, REC_OBJ_ENGINE, RECORDINGS_FIELD, &recordings,
                             &recordings, (uint64_t)*k, items);
    }
    struct recording_engine g;
    recording_engine_init(&g);
    if (not_empty) {
        recordings_make(items, 0);
        CHECK(sorter_push(&g.recordings, &items[0]));
    }
    EXPECT(recording_early_adopt_sorted(early, ENTRY, FRAMES_FIELD, &recordings, usable,
                                        &g.pool_ops) == 0,
           "%s: another array's field adopted", what);
    uint64_t adopted = recording_early_adopt_sorted(early, ENTRY, RECORDINGS_FIELD, &recordings,
                                                    usable, &g.recordings);
    struct recording_early_counts counts;
    recording_early_counts(early, &counts);
    EXPECT(counts.items_adopted == adopted * CHUNK, "%s: %" PRIu64 " items counted adopted for %"
           PRIu64 " chunks", what, counts.items_adopted, adopted);
    uint64_t want = adopted * CHUNK + not_empty;
    EXPECT(sorter_count(&g.recordings) == want, "%s: the sorter holds %" PRIu64 " items, not %"
           PRIu64, what, sorter_count(&g.recordings), want);
    struct sorter_cursor c;
    if (adopted && sorter_finish(&g.recordings) && sorter_cursor_open(&c, &g.recordings)) {
        uint64_t wrong = 0, n = 0;
        const struct cmd_recording *x;
        while ((x = sorter_next(&c))) {
            recordings_make(items, n / CHUNK);
            wrong += memcmp(x, &items[n % CHUNK], sizeof(*x)) != 0;
            n++;
        }
        EXPECT(!wrong && n == want, "%s: %" PRIu64 " of %" PRIu64 " recordings read back wrong",
               what, wrong, n);
        sorter_cursor_close(&c);
    }
    sorter_free(&g.recordings);
    sorter_free(&g.pool_ops);
    recording_early_destroy(early);
    return adopted;
}

/* Chunk k of span log `log`'s GPU spans: the two logs' spans interleave in time, and some
 * are equal across them (the same bytes: their order in the sorter never shows). */
static void spans_make(struct gpu_span *spans, uint64_t k, int log)
{
    memset(spans, 0, CHUNK * sizeof(*spans));
    for (uint64_t i = 0; i < CHUNK; i++) {
        uint64_t n = k * CHUNK + i;
        spans[i].begin = 100 + n * 20 + (n % 3 ? (uint64_t)log * 7 : 0);
        spans[i].end = spans[i].begin + 9;
    }
}

/* Two span logs (entries ENTRY and ENTRY + 1) take chunks [0, taken[log]) ahead, their live
 * arrays saying streamed[log] chunks are in the stream file; the reader adopts the shared
 * sorter first, then each log, then pushes what is left of each (total[log] chunks), as it
 * reads. Returns the spans adopted; the sorter is checked against every span once, in order. */
static uint64_t spans_after(const unsigned *taken, const unsigned *streamed,
                            const unsigned *total, bool malformed, const char *what)
{
    struct recording_early *early = recording_early_create();
    CHECK(early);
    struct chunked live[2];
    struct gpu_span spans[CHUNK];
    for (int log = 0; log < 2; log++) {
        memset(&live[log], 0, sizeof(live[log]));
        live[log].item_size = sizeof(struct gpu_span);
        live[log].chunk_items = CHUNK;
        atomic_store(&live[log].streamed_chunks, streamed[log]);
    }
    for (unsigned k = 0; k < 3; k++)
        for (int log = 0; log < 2; log++) {
            if (k >= taken[log])
                continue;
            spans_make(spans, k, log);
            if (malformed && log == 1 && k == 1)
                spans[2].end = spans[2].begin - 1;
            recording_early_take(early, ENTRY + (uint32_t)log, REC_OBJ_SPAN_LOG,
                                 offsetof(struct rec_span_log, spans), &live[log], &live[log],
                                 k, spans);
        }
    struct sorter sorted;
    recording_span_sorter_init(&sorted);
    recording_early_adopt_shared(early, &sorted);
    uint64_t adopted = 0;
    for (int log = 0; log < 2; log++) {
        uint64_t from = recording_early_adopt_sorted(early, ENTRY + (uint32_t)log,
                                                     offsetof(struct rec_span_log, spans),
                                                     &live[log], streamed[log], &sorted);
        adopted += from * CHUNK;
        for (uint64_t k = from; k < total[log]; k++) {
            spans_make(spans, k, log);
            for (unsigned i = 0; i < CHUNK; i++)
                CHECK(sorter_push(&sorted, &spans[i]));
        }
    }
    uint64_t want = (uint64_t)(total[0] + total[1]) * CHUNK;
    EXPECT(sorter_count(&sorted) == want, "%s: %" PRIu64 " spans in the sorter, not %" PRIu64,
           what, sorter_count(&sorted), want);
    /* Every span in order, once: the same as all of them pushed by the reader. */
    struct sorter all;
    recording_span_sorter_init(&all);
    for (int log = 0; log < 2; log++)
        for (uint64_t k = 0; k < total[log]; k++) {
            spans_make(spans, k, log);
            for (unsigned i = 0; i < CHUNK; i++)
                CHECK(sorter_push(&all, &spans[i]));
        }
    struct sorter_cursor c, d;
    CHECK(sorter_finish(&sorted) && sorter_finish(&all));
    CHECK(sorter_cursor_open(&c, &sorted) && sorter_cursor_open(&d, &all));
    uint64_t wrong = 0, n = 0;
    const struct gpu_span *x, *y;
    while ((y = sorter_next(&d))) {
        x = sorter_next(&c);
        wrong += !x || memcmp(x, y, sizeof(*x)) != 0;
        n++;
    }
    wrong += sorter_next(&c) != NULL;
    EXPECT(!wrong && n == want, "%s: %" PRIu64 " of %" PRIu64 " spans out of place", what,
           wrong, n);
    sorter_cursor_close(&c);
    sorter_cursor_close(&d);
    sorter_free(&sorted);
    sorter_free(&all);
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
    EXPECT(sorted_after(in_order, 3, false, "recordings") == 3, "recordings: not adopted");
    EXPECT(sorted_after(in_order, 2, false, "recordings past the stream file") == 0,
           "recordings taken past the stream file, adopted");
    EXPECT(sorted_after(gap, 3, false, "recordings with a gap") == 0,
           "recordings with a chunk skipped, adopted");
    EXPECT(sorted_after(malformed, 3, false, "a malformed recording") == 0,
           "a malformed recording, adopted");
    EXPECT(sorted_after(in_order, 3, true, "into a sorter not empty") == 0,
           "recordings adopted into a sorter that held one already");
    /* GPU spans: both logs' read ahead go to the reader's one sorter, or neither's. */
    static const unsigned both[] = { 2, 3 }, streamed[] = { 2, 3 }, total[] = { 4, 5 },
                          short_one[] = { 1, 3 };
    EXPECT(spans_after(both, streamed, total, false, "spans") == 5 * CHUNK,
           "spans: not every chunk taken ahead adopted");
    EXPECT(spans_after(both, short_one, total, false, "spans past one stream file") == 0,
           "spans taken past one log's stream file, adopted");
    EXPECT(spans_after(both, streamed, total, true, "a malformed span") == 0,
           "a malformed span, adopted");
    /* What the reader keeps otherwise is never read ahead. */
    EXPECT(!recording_early_wants(REC_OBJ_ENGINE, offsetof(struct rec_engine, memory)) &&
           recording_early_wants(REC_OBJ_SPAN_LOG, offsetof(struct rec_span_log, spans)) &&
           !recording_early_wants(REC_OBJ_GPU_ZONES, offsetof(struct rec_gpu_zones, spans)) &&
           recording_early_wants(REC_OBJ_ENGINE, RECORDINGS_FIELD) &&
           recording_early_wants(REC_OBJ_FRAME_LOG, FRAMES_FIELD),
           "the arrays read ahead are not the frames and the engine's sorted arrays");
    /* NULL: the exit without a read-ahead. */
    struct recording_log log;
    memset(&log, 0, sizeof(log));
    EXPECT(recording_early_adopt_frames(NULL, ENTRY, &array, 3, &log) == 0 && !log.frame_count,
           "no read-ahead, something adopted");
    recording_early_destroy(NULL);
    if (check_failures)
        fprintf(stderr, "%d failure(s)\n", check_failures);
    else
        printf("frames, recordings and GPU spans read ahead were adopted exactly when they were "
               "the arrays' first streamed chunks\n");
    return check_failures ? 1 : 0;
}
