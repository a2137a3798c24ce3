#include "frames.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/pio.h"
#include "util/private_fd.h"
#include "util/unnamed_file.h"

/* A frame (with what analysis keeps of it) as 8-byte words: a chunk is packed word plane by
 * word plane (word j of each of its frames), each plane as its first value, then the change
 * from each frame to the next (modulo 2^64) in the fewest bytes every change fits as a signed
 * number. Most of a frame's words change by the same amount from frame to frame or not at
 * all (its index, the zeros of what it did not do); its times change by a frame's length. */
#define WORDS (sizeof(struct frame_item) / 8)
_Static_assert(sizeof(struct frame_item) % 8 == 0, "an item is whole words");
_Static_assert(offsetof(struct frame_item, extra) == sizeof(struct fscope_frame),
               "analysis's words follow the frame's");

enum plane {
    PLANE_SAME, /* every frame's word is the first's */
    PLANE_STEP, /* the same change each frame: one word */
    PLANE_1,    /* changes of 1, 2, 4 or 8 bytes each */
    PLANE_2,
    PLANE_4,
    PLANE_8,
};

static const struct frame_item zero_item;

static uint64_t word(const struct frame_item *items, uint64_t k, size_t j)
{
    uint64_t v;
    memcpy(&v, (const unsigned char *)&items[k] + j * 8, 8);
    return v;
}

static void set_word(struct frame_item *items, uint64_t k, size_t j, uint64_t v)
{
    memcpy((unsigned char *)&items[k] + j * 8, &v, 8);
}

static unsigned plane_width(enum plane p)
{
    return p == PLANE_1 ? 1 : p == PLANE_2 ? 2 : p == PLANE_4 ? 4 : p == PLANE_8 ? 8 : 0;
}

/* How plane j of n frames packs. */
static enum plane plane_of(const struct frame_item *frames, uint64_t n, size_t j)
{
    if (n < 2)
        return PLANE_SAME;
    uint64_t step = word(frames, 1, j) - word(frames, 0, j);
    bool same_step = true;
    int64_t low = 0, high = 0;
    for (uint64_t k = 1; k < n; k++) {
        int64_t d = (int64_t)(word(frames, k, j) - word(frames, k - 1, j));
        same_step = same_step && (uint64_t)d == step;
        low = d < low ? d : low;
        high = d > high ? d : high;
    }
    if (same_step)
        return step ? PLANE_STEP : PLANE_SAME;
    if (low >= INT8_MIN && high <= INT8_MAX)
        return PLANE_1;
    if (low >= INT16_MIN && high <= INT16_MAX)
        return PLANE_2;
    if (low >= INT32_MIN && high <= INT32_MAX)
        return PLANE_4;
    return PLANE_8;
}

/* plan_every_plane's words a frame: WORDS, rounded up to an even number so that its loops
 * over them run two at a time (the one past WORDS stays 0). */
#define PLAN_WORDS ((WORDS + 1) / 2 * 2)

/* How every plane of n frames packs, into kinds: plane_of for each word, but in one walk over
 * the frames in memory order, a whole frame's words at a time (a plane at a time reads every
 * frame's cache lines once a word). */
static void plan_every_plane(const struct frame_item *frames, uint64_t n, unsigned char *kinds)
{
    if (n < 2) {
        memset(kinds, PLANE_SAME, WORDS);
        return;
    }
    /* Per word: its first change, the bits in which a later one differs from it, and the
     * bits of every change's magnitude (d, or ~d below zero: under 2^7 for all of them when
     * each fits a signed byte); plain or and xor, so that the loop runs on vectors. */
    uint64_t rows[2][PLAN_WORDS] = { { 0 } }, step[PLAN_WORDS];
    uint64_t other_step[PLAN_WORDS] = { 0 }, magnitude[PLAN_WORDS] = { 0 };
    memcpy(rows[0], &frames[0], sizeof(frames[0]));
    memcpy(rows[1], &frames[1], sizeof(frames[1]));
    for (size_t j = 0; j < PLAN_WORDS; j++)
        step[j] = rows[1][j] - rows[0][j];
    for (uint64_t k = 1; k < n; k++) {
        uint64_t *now = rows[k & 1];
        const uint64_t *before = rows[(k - 1) & 1];
        memcpy(now, &frames[k], sizeof(frames[k]));
        for (size_t j = 0; j < PLAN_WORDS; j++) {
            uint64_t d = now[j] - before[j];
            other_step[j] |= d ^ step[j];
            magnitude[j] |= d ^ (0 - (d >> 63));
        }
    }
    for (size_t j = 0; j < WORDS; j++) {
        if (!other_step[j])
            kinds[j] = step[j] ? PLANE_STEP : PLANE_SAME;
        else if (magnitude[j] < UINT64_C(1) << 7)
            kinds[j] = PLANE_1;
        else if (magnitude[j] < UINT64_C(1) << 15)
            kinds[j] = PLANE_2;
        else if (magnitude[j] < UINT64_C(1) << 31)
            kinds[j] = PLANE_4;
        else
            kinds[j] = PLANE_8;
    }
}

static size_t plane_bytes(enum plane p, uint64_t n)
{
    return 8 + (p == PLANE_STEP ? 8 : plane_width(p) * (size_t)(n - 1));
}

/* Plane j of n frames, as plane_of chose (kind), at out; returns the bytes written. */
static size_t pack_plane(const struct frame_item *frames, uint64_t n, size_t j, enum plane kind,
                         unsigned char *out)
{
    unsigned char *at = out;
    uint64_t first = word(frames, 0, j);
    memcpy(at, &first, 8);
    at += 8;
    if (kind == PLANE_STEP) {
        uint64_t step = word(frames, 1, j) - first;
        memcpy(at, &step, 8);
        at += 8;
    }
    unsigned width = plane_width(kind);
    for (uint64_t k = 1; width && k < n; k++) {
        uint64_t d = word(frames, k, j) - word(frames, k - 1, j);
        /* The low bytes of a change that fits them signed: widened back by sign. */
        if (width == 1) {
            int8_t v = (int8_t)(int64_t)d;
            memcpy(at, &v, 1);
        } else if (width == 2) {
            int16_t v = (int16_t)(int64_t)d;
            memcpy(at, &v, 2);
        } else if (width == 4) {
            int32_t v = (int32_t)(int64_t)d;
            memcpy(at, &v, 4);
        } else {
            memcpy(at, &d, 8);
        }
        at += width;
    }
    return (size_t)(at - out);
}

/* n frames packed: the planes' kinds, then each plane. With old (the same n frames packed
 * before), only the words in fresh are planned and packed again; the others' planes are
 * copied from it. NULL when memory ran out. */
static void *pack(const struct frame_item *frames, uint64_t n, const unsigned char *old,
                  const bool *fresh, uint64_t *ret_bytes)
{
    unsigned char kinds[WORDS];
    const unsigned char *from[WORDS]; /* each old plane kept */
    const unsigned char *old_at = old ? old + WORDS : NULL;
    size_t bytes = WORDS;
    if (!old)
        plan_every_plane(frames, n, kinds);
    for (size_t j = 0; j < WORDS; j++) {
        from[j] = NULL;
        if (old) {
            size_t old_bytes = plane_bytes(old[j], n);
            if (!fresh[j]) {
                from[j] = old_at;
                kinds[j] = old[j];
            }
            old_at += old_bytes;
        }
        if (!from[j] && old)
            kinds[j] = (unsigned char)plane_of(frames, n, j);
        bytes += plane_bytes(kinds[j], n);
    }
    unsigned char *out = malloc(bytes), *at = out + WORDS;
    if (!out)
        return NULL;
    memcpy(out, kinds, WORDS);
    for (size_t j = 0; j < WORDS; j++) {
        if (from[j]) {
            size_t len = plane_bytes(kinds[j], n);
            memcpy(at, from[j], len);
            at += len;
        } else {
            at += pack_plane(frames, n, j, kinds[j], at);
        }
    }
    *ret_bytes = bytes;
    return out;
}

/* The most bytes a chunk of n frames packs into. */
static size_t packed_bound(uint64_t n)
{
    return WORDS + WORDS * plane_bytes(PLANE_8, n ? n : 1);
}

/* Keeps packed (bytes long, malloc'd) as chunk's: in memory within FRAME_STORE_MEMORY, else in
 * the spill file (made on first need; where none can be made or written, in memory). at: the
 * chunk's place in the file when it had one, reused when the new bytes fit there. */
static void chunk_keep(struct recording_log *log, struct frame_chunk *chunk, void *packed,
                       uint64_t bytes)
{
    bool had_place = !chunk->packed && chunk->bytes;
    uint64_t place = chunk->offset, room = chunk->bytes;
    if (chunk->packed)
        log->memory_bytes -= chunk->bytes;
    free(chunk->packed);
    chunk->packed = NULL;
    chunk->bytes = bytes;
    if (log->memory_bytes + bytes > FRAME_STORE_MEMORY && !log->spill_open &&
        !log->spill_failed) {
        /* Above the app's range and held: the app's exit may pack frames while its threads
         * still open files, and a fork's child lets go of it (recording_early.c). */
        log->spill_fd = fscope_fd_high(unnamed_file_create(secure_getenv("TMPDIR")));
        log->spill_open = log->spill_fd >= 0;
        log->spill_failed = !log->spill_open;
    }
    if (log->memory_bytes + bytes > FRAME_STORE_MEMORY && log->spill_open) {
        uint64_t at = had_place && bytes <= room ? place : log->spill_bytes;
        if (fscope_pwrite_all(log->spill_fd, packed, bytes, at) == 0) {
            chunk->offset = at;
            if (at == log->spill_bytes)
                log->spill_bytes += bytes;
            free(packed);
            return;
        }
    }
    chunk->packed = packed;
    log->memory_bytes += bytes;
}

/* Chunk k's packed bytes: in memory, or read into scratch (packed_bound of the log's chunks).
 * NULL when the spill file could not be read. */
static const unsigned char *chunk_bytes(const struct recording_log *log, uint64_t k,
                                        unsigned char *scratch)
{
    const struct frame_chunk *chunk = &log->chunks[k];
    if (chunk->packed)
        return chunk->packed;
    if (!scratch || !log->spill_open ||
        fscope_pread_all(log->spill_fd, scratch, (size_t)chunk->bytes, chunk->offset) != 0)
        return NULL;
    return scratch;
}

/* What a cursor's slot holds of each word already: its first count frames all have value
 * there (count 0: unknown). A plane of one value (most of a frame's words: what it did not
 * do) is written into a slot only when the slot does not hold it already. */
struct slot_words {
    uint64_t value[WORDS];
    uint32_t count[WORDS];
};

/* count frames from packed into frames; held: what frames holds already, kept up to date
 * (NULL: nothing known). */
static void unpack(const unsigned char *packed, uint32_t count, struct frame_item *frames,
                   struct slot_words *held)
{
    const unsigned char *kinds = packed, *at = kinds + WORDS;
    uint64_t n = count;
    for (size_t j = 0; j < WORDS; j++) {
        uint64_t v, step = 0;
        memcpy(&v, at, 8);
        at += 8;
        if (held && kinds[j] == PLANE_SAME) {
            if (held->count[j] >= count && held->value[j] == v)
                continue;
            held->value[j] = v;
            held->count[j] = count;
        } else if (held) {
            held->count[j] = 0;
        }
        set_word(frames, 0, j, v);
        switch ((enum plane)kinds[j]) {
        case PLANE_STEP:
            memcpy(&step, at, 8);
            at += 8;
            /* fall through */
        case PLANE_SAME:
            for (uint64_t k = 1; k < n; k++)
                set_word(frames, k, j, v += step);
            break;
        case PLANE_1:
            for (uint64_t k = 1; k < n; k++, at++)
                set_word(frames, k, j, v += (uint64_t)(int64_t)(int8_t)*at);
            break;
        case PLANE_2:
            for (uint64_t k = 1; k < n; k++, at += 2) {
                int16_t d;
                memcpy(&d, at, 2);
                set_word(frames, k, j, v += (uint64_t)(int64_t)d);
            }
            break;
        case PLANE_4:
            for (uint64_t k = 1; k < n; k++, at += 4) {
                int32_t d;
                memcpy(&d, at, 4);
                set_word(frames, k, j, v += (uint64_t)(int64_t)d);
            }
            break;
        case PLANE_8:
            for (uint64_t k = 1; k < n; k++, at += 8) {
                uint64_t d;
                memcpy(&d, at, 8);
                set_word(frames, k, j, v += d);
            }
            break;
        }
    }
}

bool frame_cursor_open(struct frame_cursor *c, const struct recording *rec,
                       const struct recording_log *log)
{
    (void)rec;
    memset(c, 0, sizeof(*c));
    c->log = log;
    for (unsigned k = 0; k < FRAME_CURSOR_SLOTS; k++)
        c->chunk[k] = UINT64_MAX;
    if (!log->chunk_count)
        return true;
    for (unsigned k = 0; k < FRAME_CURSOR_SLOTS; k++) {
        c->items[k] = malloc((size_t)log->chunk_frames * sizeof(*c->items[k]));
        c->held[k] = calloc(1, sizeof(struct slot_words));
        if (!c->items[k] || !c->held[k]) {
            frame_cursor_close(c);
            return false;
        }
    }
    if (log->spill_bytes && !(c->spilled = malloc(packed_bound(log->chunk_frames)))) {
        frame_cursor_close(c);
        return false;
    }
    return true;
}

static const struct frame_item *item_at(struct frame_cursor *c, uint64_t i)
{
    const struct recording_log *log = c->log;
    if (i >= log->frame_count)
        return &zero_item;
    uint64_t at = i + log->chunk_skip;
    uint64_t k = at / log->chunk_frames;
    unsigned slot = c->last;
    if (c->chunk[slot] != k) {
        slot = (slot + 1) % FRAME_CURSOR_SLOTS;
        if (c->chunk[slot] != k) {
            const unsigned char *packed = chunk_bytes(log, k, c->spilled);
            if (!packed)
                return &zero_item; /* the disk failed us: a frame of zeros, never a crash */
            unpack(packed, log->chunks[k].count, c->items[slot], c->held[slot]);
            c->chunk[slot] = k;
        }
        c->last = slot;
    }
    return &c->items[slot][at % log->chunk_frames];
}

const struct fscope_frame *frame_at(struct frame_cursor *c, uint64_t i)
{
    return &item_at(c, i)->frame;
}

const struct frame_extra *frame_extra_at(struct frame_cursor *c, uint64_t i)
{
    return &item_at(c, i)->extra;
}

void frame_cursor_close(struct frame_cursor *c)
{
    for (unsigned k = 0; k < FRAME_CURSOR_SLOTS; k++) {
        free(c->items[k]);
        free(c->held[k]);
    }
    free(c->spilled);
    memset(c, 0, sizeof(*c));
}

int frame_store_append(struct recording_log *log, uint32_t chunk_frames,
                       const struct fscope_frame *frames, uint64_t n)
{
    if (!n)
        return 0;
    if (!log->chunk_count)
        log->chunk_frames = chunk_frames;
    /* Frame i's chunk is found by division: every chunk but the last is whole. */
    if (!log->chunk_frames || n > log->chunk_frames ||
        (log->chunk_count && log->chunks[log->chunk_count - 1].count != log->chunk_frames))
        return -EINVAL;
    if (log->chunk_count == log->chunk_capacity) {
        uint64_t want = log->chunk_capacity ? 2 * log->chunk_capacity : 16;
        void *grown = realloc(log->chunks, want * sizeof(*log->chunks));
        if (!grown)
            return -ENOMEM;
        log->chunks = grown;
        log->chunk_capacity = want;
    }
    struct frame_chunk chunk = { .count = (uint32_t)n };
    struct frame_item *items = calloc(n, sizeof(*items)); /* analysis's words 0 */
    if (!items)
        return -ENOMEM;
    for (uint64_t k = 0; k < n; k++)
        items[k].frame = frames[k];
    uint64_t bytes;
    void *packed = pack(items, n, NULL, NULL, &bytes);
    free(items);
    if (!packed)
        return -ENOMEM;
    chunk_keep(log, &chunk, packed, bytes);
    if (!log->frame_count)
        log->first_start_ticks = frames[0].start_ticks;
    log->last_end_ticks = frames[n - 1].end_ticks;
    log->chunks[log->chunk_count++] = chunk;
    log->frame_count += n;
    return 0;
}

int frame_store_set(struct recording_log *log, const struct fscope_frame *frames, uint64_t count)
{
    frame_store_free(log);
    const uint32_t per = FRAME_CHUNK_FRAMES;
    int e = 0;
    for (uint64_t at = 0; !e && at < count; at += per)
        e = frame_store_append(log, per, frames + at, count - at < per ? count - at : per);
    if (e)
        frame_store_free(log);
    return e;
}

int frame_store_update(struct recording_log *log,
                       void (*update)(void *ctx, struct fscope_frame *f, struct frame_extra *x),
                       void *ctx, const struct frame_field *writes, unsigned write_count)
{
    if (!log->chunk_count)
        return 0;
    bool fresh[WORDS] = { false };
    size_t written[WORDS], written_count = 0;
    for (unsigned w = 0; w < write_count; w++)
        for (size_t j = writes[w].offset / 8; j * 8 < writes[w].offset + writes[w].size; j++)
            if (!fresh[j]) {
                fresh[j] = true;
                written[written_count++] = j;
            }
    struct frame_item *frames = malloc((size_t)log->chunk_frames * sizeof(*frames));
    /* The written words as unpacked: a chunk none of whose frames the update changed (most,
     * where few frames have what it adds, as GPU busy of sampled GPU timing) is kept as it
     * was, neither packed again nor written again. */
    uint64_t *before = malloc((size_t)log->chunk_frames * (written_count ? written_count : 1) *
                              sizeof(*before));
    /* What frames holds already of the words no update writes, as a cursor's slot. */
    struct slot_words *held = calloc(1, sizeof(*held));
    unsigned char *scratch = log->spill_bytes ? malloc(packed_bound(log->chunk_frames)) : NULL;
    int e = frames && before && held && (scratch || !log->spill_bytes) ? 0 : -ENOMEM;
    /* The first chunk's dropped frames (chunk_skip) are updated too: never read again. */
    for (uint64_t k = 0; !e && k < log->chunk_count; k++) {
        struct frame_chunk *chunk = &log->chunks[k];
        const unsigned char *old = chunk_bytes(log, k, scratch);
        if (!old) {
            e = -EIO;
            break;
        }
        unpack(old, chunk->count, frames, held);
        uint64_t *at = before;
        for (uint32_t i = 0; i < chunk->count; i++)
            for (size_t w = 0; w < written_count; w++)
                *at++ = word(frames, i, written[w]);
        for (uint32_t i = 0; i < chunk->count; i++)
            update(ctx, &frames[i].frame, &frames[i].extra);
        for (size_t j = 0; j < WORDS; j++)
            if (fresh[j])
                held->count[j] = 0; /* written: unpacked again from the next chunk */
        bool changed = false;
        at = before;
        for (uint32_t i = 0; i < chunk->count && !changed; i++)
            for (size_t w = 0; w < written_count; w++)
                changed |= *at++ != word(frames, i, written[w]);
        if (!changed)
            continue;
        uint64_t bytes;
        void *packed = pack(frames, chunk->count, old, fresh, &bytes);
        if (!packed) {
            e = -ENOMEM;
            break;
        }
        chunk_keep(log, chunk, packed, bytes);
    }
    free(scratch);
    free(held);
    free(before);
    free(frames);
    return e;
}

void frame_store_drop(struct recording_log *log, uint64_t skip)
{
    if (!skip)
        return;
    if (skip >= log->frame_count) {
        frame_store_free(log);
        return;
    }
    uint64_t at = skip + log->chunk_skip, whole = at / log->chunk_frames;
    for (uint64_t k = 0; k < whole; k++) {
        if (log->chunks[k].packed)
            log->memory_bytes -= log->chunks[k].bytes;
        free(log->chunks[k].packed);
    }
    memmove(log->chunks, log->chunks + whole, (log->chunk_count - whole) * sizeof(*log->chunks));
    log->chunk_count -= whole;
    log->chunk_skip = at % log->chunk_frames;
    log->frame_count -= skip;
    /* The new first frame's start, from its chunk. */
    struct frame_cursor c;
    if (frame_cursor_open(&c, NULL, log)) {
        log->first_start_ticks = frame_at(&c, 0)->start_ticks;
        frame_cursor_close(&c);
    }
}

void frame_store_free(struct recording_log *log)
{
    for (uint64_t k = 0; log->chunks && k < log->chunk_count; k++)
        free(log->chunks[k].packed);
    free(log->chunks);
    log->chunks = NULL;
    log->chunk_count = log->chunk_capacity = log->chunk_skip = log->frame_count = 0;
    log->first_start_ticks = log->last_end_ticks = 0;
    log->memory_bytes = log->spill_bytes = 0;
    if (log->spill_open)
        fscope_fd_close(log->spill_fd);
    log->spill_open = log->spill_failed = false;
}

void frame_store_move(struct recording_log *to, struct recording_log *from)
{
    frame_store_free(to);
    to->frame_count = from->frame_count;
    to->chunk_frames = from->chunk_frames;
    to->chunk_skip = from->chunk_skip;
    to->chunk_count = from->chunk_count;
    to->chunk_capacity = from->chunk_capacity;
    to->chunks = from->chunks;
    to->first_start_ticks = from->first_start_ticks;
    to->last_end_ticks = from->last_end_ticks;
    to->memory_bytes = from->memory_bytes;
    to->spill_bytes = from->spill_bytes;
    to->spill_open = from->spill_open;
    to->spill_failed = from->spill_failed;
    to->spill_fd = from->spill_fd;
    from->chunks = NULL;
    from->spill_open = false;
    frame_store_free(from);
}

uint64_t frame_store_bytes(const struct recording_log *log)
{
    return log->chunk_capacity * sizeof(*log->chunks) + log->memory_bytes;
}

uint64_t frame_store_spilled(const struct recording_log *log)
{
    return log->spill_bytes;
}
