/* An external merge sort (sorter.h). */
#include "sorter.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/pio.h"
#include "util/private_fd.h"
#include "util/unnamed_file.h"

static int compare_u64(const void *a, const void *b);

void sorter_init(struct sorter *s, size_t size, sorter_compare_fn compare, size_t run_bytes)
{
    memset(s, 0, sizeof(*s));
    s->size = compare ? size : sizeof(uint64_t);
    s->compare = compare ? compare : compare_u64;
    s->run_items = (run_bytes ? run_bytes : SORTER_RUN_BYTES) / s->size;
    if (!s->run_items)
        s->run_items = 1;
}

static bool add_run(struct sorter *s, struct sorter_run run)
{
    if (s->run_count == s->run_capacity) {
        unsigned want = s->run_capacity ? 2 * s->run_capacity : 8;
        struct sorter_run *grown = realloc(s->runs, want * sizeof(*grown));
        if (!grown)
            return false;
        s->runs = grown;
        s->run_capacity = want;
    }
    s->runs[s->run_count++] = run;
    return true;
}

/* The file, made on first need; false where none can be made or it took no more. */
static bool have_file(struct sorter *s)
{
    if (!s->fd_made && !s->file_full) {
        /* Above the app's range and held, as the frame store's spill file. */
        s->fd = fscope_fd_high(unnamed_file_create(secure_getenv("TMPDIR")));
        s->fd_made = s->fd >= 0;
        s->file_full = !s->fd_made;
    }
    return s->fd_made && !s->file_full;
}

/* Appends bytes at the file's end; false (and no more from then on: the runs in it are still
 * read) when it cannot take them. */
static bool file_append(struct sorter *s, const void *bytes, size_t len)
{
    if (fscope_pwrite_all(s->fd, bytes, len, s->file_bytes) != 0) {
        s->file_full = true;
        return false;
    }
    s->file_bytes += len;
    return true;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x, y;
    memcpy(&x, a, sizeof(x));
    memcpy(&y, b, sizeof(y));
    return x < y ? -1 : x > y;
}

/* n keys in ascending order: a byte at a time from the lowest (each pass stable), a pass
 * skipped where every key has the same byte. False when memory ran out (a left as it was). */
static bool radix_u64(uint64_t *a, size_t n)
{
    size_t (*count)[256] = calloc(8, sizeof(*count));
    uint64_t *tmp = malloc(n * sizeof(*tmp));
    if (!count || !tmp) {
        free(count);
        free(tmp);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        for (unsigned b = 0; b < 8; b++)
            count[b][(a[i] >> (8 * b)) & 0xff]++;
    uint64_t *from = a, *to = tmp;
    for (unsigned b = 0; b < 8; b++) {
        if (count[b][(a[0] >> (8 * b)) & 0xff] == n)
            continue;
        size_t at = 0;
        for (unsigned v = 0; v < 256; v++) {
            size_t c = count[b][v];
            count[b][v] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++)
            to[count[b][(from[i] >> (8 * b)) & 0xff]++] = from[i];
        uint64_t *t = from;
        from = to;
        to = t;
    }
    if (from != a)
        memcpy(a, from, n * sizeof(*a));
    free(tmp);
    free(count);
    return true;
}

int sorter_as_pushed(const void *a, const void *b)
{
    (void)a;
    (void)b;
    return 0;
}

/* The filled run in order: sorted, unless it was pushed in order (a spool always is). */
static void sort_fill(struct sorter *s)
{
    if (!s->fill_disordered)
        return;
    if (s->compare != compare_u64 || !radix_u64((uint64_t *)(void *)s->fill, s->fill_count))
        qsort(s->fill, s->fill_count, s->size, s->compare);
}

/* The filled run, sorted, to the file; kept in memory (its buffer given to it) when the file
 * cannot take it. */
static bool flush_run(struct sorter *s)
{
    sort_fill(s);
    uint64_t offset = s->file_bytes;
    struct sorter_run *last = s->run_count ? &s->runs[s->run_count - 1] : NULL;
    /* A run that starts at or after the end of the file's last one, right behind it there,
     * lengthens it: items pushed in order (a spool's, GPU spans by begin) are one run in the
     * file however many, never merged. */
    bool follows = last && !last->items && s->tail &&
                   last->offset + last->count * s->size == offset &&
                   s->compare(s->tail, s->fill) <= 0;
    s->fill_disordered = false;
    if (have_file(s) && file_append(s, s->fill, s->fill_count * s->size)) {
        if (!s->tail)
            s->tail = malloc(s->size); /* without it, no run lengthens another */
        if (s->tail)
            memcpy(s->tail, s->fill + (s->fill_count - 1) * s->size, s->size);
        if (follows)
            last->count += s->fill_count;
        else if (!add_run(s, (struct sorter_run){ offset, s->fill_count, NULL }))
            return false;
        s->fill_count = 0;
        return true;
    }
    if (!add_run(s, (struct sorter_run){ 0, s->fill_count, s->fill }))
        return false;
    s->fill = NULL;
    s->fill_count = 0;
    return true;
}

bool sorter_push(struct sorter *s, const void *item)
{
    if (s->failed || s->finished)
        return false;
    if (!s->fill || s->fill_count == s->run_items) {
        if (s->fill && !flush_run(s)) {
            s->failed = true;
            return false;
        }
        if (!s->fill && !(s->fill = malloc(s->run_items * s->size))) {
            s->failed = true;
            return false;
        }
    }
    if (!s->fill_disordered && s->fill_count &&
        s->compare(s->fill + (s->fill_count - 1) * s->size, item) > 0)
        s->fill_disordered = true;
    memcpy(s->fill + s->fill_count++ * s->size, item, s->size);
    s->count++;
    return true;
}

/* ---- merging ---- */

static const void *way_item(const struct sorter_cursor *c, unsigned w)
{
    return c->ways[w].items + c->ways[w].next * c->s->size;
}

/* Whether way a's next item comes before b's: by compare, then by run (the earlier first). */
static bool before(const struct sorter_cursor *c, unsigned a, unsigned b)
{
    if (c->s->compare == compare_u64) {
        uint64_t x, y;
        memcpy(&x, way_item(c, a), sizeof(x));
        memcpy(&y, way_item(c, b), sizeof(y));
        return x < y || (x == y && a < b);
    }
    int order = c->s->compare(way_item(c, a), way_item(c, b));
    return order < 0 || (order == 0 && a < b);
}

static void sift_down(struct sorter_cursor *c, unsigned at)
{
    for (;;) {
        unsigned least = at, l = 2 * at + 1, r = l + 1;
        if (l < c->heap_count && before(c, c->heap[l], c->heap[least]))
            least = l;
        if (r < c->heap_count && before(c, c->heap[r], c->heap[least]))
            least = r;
        if (least == at)
            return;
        unsigned t = c->heap[at];
        c->heap[at] = c->heap[least];
        c->heap[least] = t;
        at = least;
    }
}

/* The way's next block; false at its end or on a read error (c->failed). */
static bool refill(struct sorter_cursor *c, struct sorter_way *w, const struct sorter_run *run)
{
    if (w->at == w->count)
        return false;
    if (run->items) {
        w->items = run->items;
        w->have = w->count;
    } else {
        size_t block_items = SORTER_BLOCK_BYTES / c->s->size ? SORTER_BLOCK_BYTES / c->s->size : 1;
        w->have = w->count - w->at < block_items ? (size_t)(w->count - w->at) : block_items;
        if (fscope_pread_all(c->s->fd, w->block, w->have * c->s->size,
                             run->offset + w->at * c->s->size) != 0) {
            c->failed = true;
            return false;
        }
        w->items = w->block;
    }
    w->at += w->have;
    w->next = 0;
    return true;
}

/* A cursor over runs [first, first + count) of s. */
static bool open_runs(struct sorter_cursor *c, const struct sorter *s, unsigned first,
                      unsigned count)
{
    memset(c, 0, sizeof(*c));
    c->s = s;
    c->count = count;
    c->ways = calloc(count ? count : 1, sizeof(*c->ways));
    c->heap = calloc(count ? count : 1, sizeof(*c->heap));
    bool ok = c->ways && c->heap;
    for (unsigned i = 0; ok && i < count; i++) {
        const struct sorter_run *run = &s->runs[first + i];
        struct sorter_way *w = &c->ways[i];
        w->count = run->count;
        if (!run->items && !(w->block = malloc(SORTER_BLOCK_BYTES > s->size ? SORTER_BLOCK_BYTES
                                                                            : s->size)))
            ok = false;
        else if (refill(c, w, run))
            c->heap[c->heap_count++] = i;
    }
    ok = ok && !c->failed;
    if (!ok) {
        sorter_cursor_close(c);
        return false;
    }
    for (unsigned i = c->heap_count / 2; i-- > 0;)
        sift_down(c, i);
    return true;
}

/* Past the item last given: the way it came from moves on (a new block, or out of the heap). */
static void advance(struct sorter_cursor *c, unsigned first)
{
    unsigned w = c->heap[0];
    struct sorter_way *way = &c->ways[w];
    if (++way->next == way->have && !refill(c, way, &c->s->runs[first + w])) {
        c->heap[0] = c->heap[--c->heap_count];
        if (!c->heap_count)
            return;
    }
    sift_down(c, 0);
}

/* The next item of a cursor over runs from first on; pending: whether one was given. */
static const void *next_of(struct sorter_cursor *c, unsigned first, bool *pending)
{
    if (*pending && c->heap_count)
        advance(c, first);
    *pending = false;
    if (!c->heap_count || c->failed)
        return NULL;
    *pending = true;
    return way_item(c, c->heap[0]);
}

/* Merges runs [first, first + count), all in the file, into one run at the file's end: 0, 1
 * when the file took no more (the runs stay as they were), -1 when memory ran out or a read
 * failed. */
static int merge_runs(struct sorter *s, unsigned first, unsigned count)
{
    struct sorter_cursor c;
    if (!open_runs(&c, s, first, count))
        return -1;
    size_t block_items = SORTER_BLOCK_BYTES / s->size ? SORTER_BLOCK_BYTES / s->size : 1;
    unsigned char *out = malloc(block_items * s->size);
    uint64_t offset = s->file_bytes, total = 0;
    size_t have = 0;
    bool pending = false, ok = out != NULL;
    const void *item;
    while (ok && (item = next_of(&c, first, &pending))) {
        memcpy(out + have++ * s->size, item, s->size);
        total++;
        if (have == block_items) {
            ok = file_append(s, out, have * s->size);
            have = 0;
        }
    }
    ok = ok && !c.failed && (!have || file_append(s, out, have * s->size));
    bool read_failed = c.failed || !out;
    free(out);
    sorter_cursor_close(&c);
    if (!ok)
        return read_failed ? -1 : 1;
    /* The merged runs' bytes go back to the disk; where the file system cannot, they stay. */
    uint64_t from = s->runs[first].offset;
    const struct sorter_run *last = &s->runs[first + count - 1];
    fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)from,
              (off_t)(last->offset + last->count * s->size - from));
    memmove(&s->runs[first], &s->runs[first + count],
            (s->run_count - first - count) * sizeof(*s->runs));
    s->run_count -= count;
    return add_run(s, (struct sorter_run){ offset, total, NULL }) ? 0 : -1;
}

bool sorter_finish(struct sorter *s)
{
    if (s->failed || s->finished)
        return !s->failed;
    s->finished = true;
    if (s->fill_count) {
        if (s->run_count == 0) { /* one run: sorted in memory, no file */
            sort_fill(s);
            if (!add_run(s, (struct sorter_run){ 0, s->fill_count, s->fill }))
                s->failed = true;
            else
                s->fill = NULL;
        } else if (!flush_run(s)) {
            s->failed = true;
        }
    }
    free(s->fill);
    s->fill = NULL;
    /* Runs in the file are merged SORTER_FANIN at a time, oldest first, until a cursor reads
     * at most SORTER_FANIN of them (its memory: a block each). Runs in memory cost no block. */
    for (;;) {
        unsigned on_file = 0;
        while (on_file < s->run_count && !s->runs[on_file].items)
            on_file++; /* first in the file, then (once it took no more) in memory */
        if (s->failed || on_file <= SORTER_FANIN || s->file_full)
            break;
        int e = merge_runs(s, 0, SORTER_FANIN);
        if (e < 0)
            s->failed = true;
        else if (e > 0)
            break; /* a cursor reads more of them, a block each */
    }
    return !s->failed;
}

uint64_t sorter_count(const struct sorter *s)
{
    return s->count;
}

bool sorter_failed(const struct sorter *s)
{
    return s->failed;
}

bool sorter_spilled(const struct sorter *s)
{
    return s->file_bytes > 0;
}

void sorter_free(struct sorter *s)
{
    for (unsigned i = 0; i < s->run_count; i++)
        free(s->runs[i].items);
    free(s->runs);
    free(s->fill);
    free(s->tail);
    if (s->fd_made)
        fscope_fd_close(s->fd);
    memset(s, 0, sizeof(*s));
}

bool sorter_cursor_open(struct sorter_cursor *c, const struct sorter *s)
{
    if (!s->finished || s->failed) {
        memset(c, 0, sizeof(*c));
        return false;
    }
    return open_runs(c, s, 0, s->run_count);
}

const void *sorter_next(struct sorter_cursor *c)
{
    return next_of(c, 0, &c->pending);
}

void sorter_cursor_close(struct sorter_cursor *c)
{
    if (c->ways)
        for (unsigned i = 0; i < c->count; i++)
            free(c->ways[i].block);
    free(c->ways);
    free(c->heap);
    memset(c, 0, sizeof(*c));
}
