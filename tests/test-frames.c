/* The frame store (src/analysis/frames.h): frames packed chunk by chunk and read back through
 * cursors, byte for byte, whatever their words do from frame to frame (the same, a constant
 * step, changes of 1, 2, 4 and 8 bytes, wrapping past 2^64); read in order, backwards and at
 * random; with analysis's findings packed with them (frame_store_update); cut at the front
 * (frame_store_drop); and, past FRAME_STORE_MEMORY, from the spill file on disk, which must
 * then hold part of them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/frames.h"
#include "check.h"

/* count frames whose 8-byte words each follow one pattern, chosen per word (random: every
 * word its own random bytes, which packs at 8 bytes a word and so reaches the spill file). */
static struct fscope_frame *frames_make(uint64_t count, bool random)
{
    struct fscope_frame *frames = calloc(count ? count : 1, sizeof(*frames));
    if (!frames)
        return NULL;
    const size_t words = sizeof(*frames) / 8;
    for (size_t j = 0; j < words; j++) {
        unsigned pattern = random ? 7 : (unsigned)(test_random() % 10);
        uint64_t v = test_random(), step = test_random(), other = test_random();
        for (uint64_t k = 0; k < count; k++) {
            switch (pattern) {
            case 0: break;                                   /* the same */
            case 1: v += step; break;                        /* a constant step, wrapping */
            case 2: v += (uint64_t)(int64_t)(int8_t)test_random(); break;
            case 3: v += (uint64_t)(int64_t)(int16_t)test_random(); break;
            case 4: v += (uint64_t)(int64_t)(int32_t)test_random(); break;
            case 5: v += test_random(); break;                      /* any change */
            case 6: v = k % 331 == 0 ? test_random() : v + 1; break; /* jumps at chunk ends */
            /* The same within each chunk, changing from chunk to chunk (two values taking
             * turns, or one chunk of its own): a cursor's slot holds the other value. */
            case 8: v = (k / FRAME_CHUNK_FRAMES) % 2 ? other : step; break;
            case 9: v = k / FRAME_CHUNK_FRAMES == 2 ? other : step; break;
            default: v = test_random(); break;
            }
            memcpy((unsigned char *)&frames[k] + j * 8, &v, 8);
        }
    }
    return frames;
}

/* Every frame of log against want (count of them), in the order given by at(i). */
static void check_all(const struct recording_log *log, const struct fscope_frame *want,
                      uint64_t count, const char *what, uint64_t (*at)(uint64_t i, uint64_t n))
{
    EXPECT(log->frame_count == count, "%s: %" PRIu64 " frames, expected %" PRIu64, what,
          log->frame_count, count);
    struct frame_cursor c;
    if (!frame_cursor_open(&c, NULL, log)) {
        EXPECT(0, "%s: no cursor", what);
        return;
    }
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t k = at(i, count);
        wrong += memcmp(frame_at(&c, k), &want[k], sizeof(want[k])) != 0;
        /* A frame and its neighbour are valid together (two chunks unpacked). */
        if (k + 1 < count) {
            const struct fscope_frame *f = frame_at(&c, k);
            const struct fscope_frame *g = frame_at(&c, k + 1);
            wrong += memcmp(f, &want[k], sizeof(*f)) != 0 || memcmp(g, &want[k + 1], sizeof(*g));
        }
    }
    EXPECT(!wrong, "%s: %" PRIu64 " frames read back wrong", what, wrong);
    const struct fscope_frame *beyond = frame_at(&c, count);
    static const struct fscope_frame zero;
    EXPECT(!memcmp(beyond, &zero, sizeof(zero)), "%s: a frame beyond the end is not zeros", what);
    frame_cursor_close(&c);
}

static uint64_t in_order(uint64_t i, uint64_t n)
{
    (void)n;
    return i;
}

static uint64_t backwards(uint64_t i, uint64_t n)
{
    return n - 1 - i;
}

static uint64_t at_random(uint64_t i, uint64_t n)
{
    (void)i;
    return test_random() % n;
}

/* frame_store_update's callback: stamps each frame's findings with its start. */
static void stamp(void *ctx, struct fscope_frame *f, struct frame_extra *x)
{
    uint64_t *calls = ctx;
    (*calls)++;
    x->wake.display_ns = (int64_t)(f->start_ticks & 0x7fffffffffffffffu);
    x->wake.tid[1] = (int)(*calls);
    f->gpu_busy_ticks = f->end_ticks ^ 0x5555;
}

/* An update that names only extra.wake (left as it was) and writes over the frame's own. */
static void scribble(void *ctx, struct fscope_frame *f, struct frame_extra *x)
{
    (void)x;
    (*(uint64_t *)ctx)++;
    f->gpu_busy_ticks = 0;
    f->index ^= 1;
    f->start_ticks = 0;
}

/* An update that changes two frames' findings only (a frame in the middle of its chunk, and
 * the last): every other chunk is kept as it was. */
struct sparse {
    uint64_t calls, middle, last;
};

static void sparse(void *ctx, struct fscope_frame *f, struct frame_extra *x)
{
    (void)f;
    struct sparse *s = ctx;
    uint64_t k = s->calls++;
    if (k == s->middle || k == s->last)
        x->wake.timer_ns = 77;
}

static void check_store(uint64_t count, bool random)
{
    char what[64];
    snprintf(what, sizeof(what), "%" PRIu64 " %s frames", count, random ? "random" : "patterned");
    struct fscope_frame *want = frames_make(count, random);
    struct recording_log log = { .frame_count = 0 };
    if (!want || frame_store_set(&log, want, count) != 0) {
        EXPECT(0, "%s: no memory", what);
        free(want);
        return;
    }
    check_all(&log, want, count, what, in_order);
    check_all(&log, want, count, what, backwards);
    check_all(&log, want, count, what, at_random);
    if (random && count * sizeof(struct frame_item) > 2 * (uint64_t)FRAME_STORE_MEMORY)
        EXPECT(frame_store_spilled(&log) > 0 && frame_store_bytes(&log) <= FRAME_STORE_MEMORY +
                  log.chunk_capacity * sizeof(*log.chunks) + sizeof(struct frame_item) * 400,
              "%s: %" PRIu64 " bytes in memory, %" PRIu64 " on disk", what,
              frame_store_bytes(&log), frame_store_spilled(&log));
    /* Analysis's findings, packed with the frames once. */
    uint64_t calls = 0;
    const struct frame_field writes[] = { FRAME_FIELD(extra.wake),
                                          FRAME_FIELD(frame.gpu_busy_ticks) };
    EXPECT(frame_store_update(&log, stamp, &calls, writes, 2) == 0 && calls == count,
          "%s: update called %" PRIu64 " times", what, calls);
    for (uint64_t k = 0; k < count; k++)
        want[k].gpu_busy_ticks = want[k].end_ticks ^ 0x5555;
    check_all(&log, want, count, what, in_order);
    struct frame_cursor c;
    if (count && frame_cursor_open(&c, NULL, &log)) {
        uint64_t wrong = 0;
        for (uint64_t k = 0; k < count; k++) {
            const struct frame_extra *x = frame_extra_at(&c, k);
            wrong += x->wake.display_ns != (int64_t)(want[k].start_ticks & 0x7fffffffffffffffu) ||
                     x->wake.tid[1] != (int)(k + 1) || x->wake.timer_ns != 0;
        }
        EXPECT(!wrong, "%s: %" PRIu64 " frames' findings read back wrong", what, wrong);
        frame_cursor_close(&c);
    }
    /* Only the fields an update names are packed again: its other writes are not kept (the
     * frames' own words come back from the planes packed before, as they were). */
    calls = 0;
    EXPECT(frame_store_update(&log, scribble, &calls, writes, 1) == 0 && calls == count,
          "%s: second update called %" PRIu64 " times", what, calls);
    check_all(&log, want, count, what, in_order);
    /* An update that changes few frames: theirs come back changed, every other as it was. */
    struct sparse few = { 0, count / 2, count - 1 };
    const struct frame_field timer[] = { FRAME_FIELD(extra.wake.timer_ns) };
    EXPECT(frame_store_update(&log, sparse, &few, timer, 1) == 0 && few.calls == count,
          "%s: sparse update called %" PRIu64 " times", what, few.calls);
    check_all(&log, want, count, what, in_order);
    if (count && frame_cursor_open(&c, NULL, &log)) {
        uint64_t wrong = 0;
        for (uint64_t k = 0; k < count; k++) {
            const struct frame_extra *x = frame_extra_at(&c, k);
            bool marked = k == count / 2 || k == count - 1;
            wrong += x->wake.timer_ns != (marked ? 77 : 0) || x->wake.tid[1] != (int)(k + 1);
        }
        EXPECT(!wrong, "%s: %" PRIu64 " frames' findings wrong after a sparse update", what,
               wrong);
        frame_cursor_close(&c);
    }
    /* Cut at the front: inside the first chunk, then across chunks. */
    uint64_t cut = count > 10 ? 7 : 0, total = cut;
    frame_store_drop(&log, cut);
    check_all(&log, want + total, count - total, what, in_order);
    cut = count > 1000 ? 700 : 0;
    total += cut;
    frame_store_drop(&log, cut);
    check_all(&log, want + total, count - total, what, at_random);
    if (count > total)
        EXPECT(log.first_start_ticks == want[total].start_ticks &&
                  log.last_end_ticks == want[count - 1].end_ticks,
              "%s: first and last times not kept", what);
    frame_store_free(&log);
    free(want);
}

int main(void)
{
    static const uint64_t counts[] = { 0, 1, 2, 330, 331, 332, 5000 };
    for (unsigned i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
        check_store(counts[i], false);
    /* Random words pack at their full size: 2.5 times FRAME_STORE_MEMORY of them spill. */
    check_store(5 * (uint64_t)FRAME_STORE_MEMORY / 2 / sizeof(struct frame_item), true);
    if (check_failures)
        fprintf(stderr, "%d failure(s)\n", check_failures);
    else
        printf("the frame store read back every frame as packed, in memory and on disk\n");
    return check_failures ? 1 : 0;
}
