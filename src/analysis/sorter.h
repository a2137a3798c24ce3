/* Items of one size put in order with bounded memory, however many: an external merge sort.
 * Items pushed in any order are read back in compare's order through cursors, as many passes
 * as wanted. Up to a run's bytes (SORTER_RUN_BYTES) they stay in memory, sorted there; past
 * that each full run is sorted and written to an unnamed file on disk ($TMPDIR, else /var/tmp,
 * else /tmp, as the frame store's), and a cursor merges the runs, SORTER_FANIN at most: more
 * are merged into longer ones first. Items pushed in order are neither sorted nor merged: a
 * run that follows the file's last one lengthens it. Memory: one run while pushing, then SORTER_FANIN blocks
 * a cursor. Where no file can be made or written, runs stay in memory: the order is never
 * given up. */
#ifndef FSCOPE_ANALYSIS_SORTER_H
#define FSCOPE_ANALYSIS_SORTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SORTER_RUN_BYTES (2u << 20)
#define SORTER_FANIN 16u
#define SORTER_BLOCK_BYTES (64u << 10)

typedef int (*sorter_compare_fn)(const void *a, const void *b);

struct sorter_run {
    uint64_t offset; /* in the file; unused for a run in memory */
    uint64_t count;
    unsigned char *items; /* a run kept in memory (no file), else NULL */
};

struct sorter {
    size_t size;
    sorter_compare_fn compare;
    size_t run_items;     /* a run's capacity */
    unsigned char *fill;  /* the run being pushed */
    size_t fill_count;
    uint64_t count;       /* pushed in all */
    struct sorter_run *runs;
    unsigned run_count, run_capacity;
    int fd;               /* the runs' file, where fd_made */
    bool fd_made;
    uint64_t file_bytes;
    bool file_full;       /* none could be made, or it took no more: runs stay in memory */
    bool fill_disordered; /* an item of the filled run came before the one pushed ahead of it */
    unsigned char *tail;  /* the last item written to the file */
    bool finished, failed;
};

/* A sorter of items of size bytes (a sorter of zeros is an empty one, never finished) in
 * compare's order; run_bytes: a run's memory (0: the default; tests pass less to reach the
 * file and the merges with few items). Items equal by compare come back in no promised order:
 * a compare that wants one breaks ties itself. compare NULL: the items are uint64_t keys
 * (size ignored), ascending, sorted a byte at a time rather than by calls to a compare. */
void sorter_init(struct sorter *s, size_t size, sorter_compare_fn compare, size_t run_bytes);
/* The compare of a sorter that keeps its items in the order pushed (a spool: a stream read
 * back as written, with the same bounded memory): no run is sorted, and the file holds them
 * as one run. */
int sorter_as_pushed(const void *a, const void *b);
/* Adds an item; false when memory ran out (the sorter is failed: sorter_failed). */
bool sorter_push(struct sorter *s, const void *item);
/* No more items: sorts the last run and merges runs down to SORTER_FANIN. False on failure. */
bool sorter_finish(struct sorter *s);
uint64_t sorter_count(const struct sorter *s);
bool sorter_failed(const struct sorter *s);
/* Whether runs went to the file (tests). */
bool sorter_spilled(const struct sorter *s);
void sorter_free(struct sorter *s);

/* A pass over a finished sorter's items in order; several may be open at once. */
struct sorter_cursor {
    const struct sorter *s;
    unsigned count;      /* runs merged */
    struct sorter_way {
        const unsigned char *items; /* the run's block (or whole run in memory) */
        unsigned char *block;       /* the block's memory, for a run in the file */
        uint64_t at, count;         /* read so far of the run, its items */
        size_t have, next;          /* items in the block, the next one in it */
    } *ways;
    unsigned *heap;      /* ways by their next item, least first */
    unsigned heap_count;
    bool pending; /* an item was given: its way moves on at the next call */
    bool failed;
};

/* False when memory ran out or the sorter is not finished (c then holds nothing to close). */
bool sorter_cursor_open(struct sorter_cursor *c, const struct sorter *s);
/* The next item in order, valid until the next call; NULL after the last (or on a read
 * error: c->failed). */
const void *sorter_next(struct sorter_cursor *c);
void sorter_cursor_close(struct sorter_cursor *c);

#endif
