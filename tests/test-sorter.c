/* The sorter (src/analysis/sorter.h): items pushed in any order come back in order, every
 * one of them whole, through one cursor or several at once, whether they fit in one run in
 * memory, need runs in the file merged at once, or so many runs that they are merged into
 * longer ones first; and, when the file takes no more (a file size limit), with the runs that
 * did not fit kept in memory. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "analysis/sorter.h"
#include "check.h"

/* 24 bytes: a key with many repeats, and what identifies the item to check it came back. */
struct item {
    uint64_t key;
    uint64_t serial;
    uint64_t check;
};

static int by_key_then_serial(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static struct item item_make(uint64_t serial, uint64_t keys)
{
    uint64_t key = test_random() % keys;
    return (struct item){ key, serial, key * 31 + serial * 7 + 1 };
}

/* count items (keys distinct values) through a sorter of run_bytes runs: read back twice,
 * the second pass through a cursor opened while the first is half way. */
static void sort_check(const char *what, uint64_t count, uint64_t keys, size_t run_bytes,
                       bool want_spilled)
{
    struct item *want = malloc((count ? count : 1) * sizeof(*want));
    CHECK(want);
    struct sorter s;
    sorter_init(&s, sizeof(struct item), by_key_then_serial, run_bytes);
    for (uint64_t i = 0; i < count; i++) {
        want[i] = item_make(i, keys);
        CHECK(sorter_push(&s, &want[i]));
    }
    CHECK(sorter_finish(&s));
    qsort(want, count, sizeof(*want), by_key_then_serial);
    EXPECT(sorter_count(&s) == count, "%s: %llu counted of %llu", what,
           (unsigned long long)sorter_count(&s), (unsigned long long)count);
    EXPECT(sorter_spilled(&s) == want_spilled, "%s: spilled %d, expected %d", what,
           sorter_spilled(&s), want_spilled);
    unsigned on_file = 0;
    for (unsigned i = 0; i < s.run_count; i++)
        on_file += !s.runs[i].items;
    EXPECT(on_file <= SORTER_FANIN || s.file_full, "%s: %u runs in the file left to merge",
           what, on_file);
    EXPECT(s.file_full == (s.run_count > on_file && on_file > 0) || !want_spilled,
           "%s: %u runs in the file of %u, the file full: %d", what, on_file, s.run_count,
           s.file_full);
    struct sorter_cursor a, b;
    CHECK(sorter_cursor_open(&a, &s));
    uint64_t got_a = 0, got_b = 0, wrong = 0;
    const struct item *x;
    for (; got_a < count / 2 && (x = sorter_next(&a)); got_a++)
        wrong += memcmp(x, &want[got_a], sizeof(*x)) != 0;
    CHECK(sorter_cursor_open(&b, &s));
    while ((x = sorter_next(&b)))
        wrong += got_b >= count || memcmp(x, &want[got_b++], sizeof(*x)) != 0;
    while ((x = sorter_next(&a)))
        wrong += got_a >= count || memcmp(x, &want[got_a++], sizeof(*x)) != 0;
    EXPECT(!a.failed && !b.failed && got_a == count && got_b == count && !wrong,
           "%s: %llu and %llu of %llu read back, %llu out of place", what,
           (unsigned long long)got_a, (unsigned long long)got_b, (unsigned long long)count,
           (unsigned long long)wrong);
    EXPECT(sorter_next(&a) == NULL, "%s: an item after the last", what);
    sorter_cursor_close(&a);
    sorter_cursor_close(&b);
    sorter_free(&s);
    free(want);
    printf("%s: %llu items in order\n", what, (unsigned long long)count);
}

int main(void)
{
    struct sorter s;
    sorter_init(&s, sizeof(struct item), by_key_then_serial, 0);
    struct sorter_cursor c;
    EXPECT(!sorter_cursor_open(&c, &s), "a cursor over a sorter not finished");
    CHECK(sorter_finish(&s));
    struct item one = item_make(0, 10);
    EXPECT(!sorter_push(&s, &one), "an item pushed after the finish");
    CHECK(sorter_cursor_open(&c, &s));
    EXPECT(sorter_next(&c) == NULL && sorter_count(&s) == 0, "an empty sorter gave an item");
    sorter_cursor_close(&c);
    sorter_free(&s);

    const size_t run = 1000 * sizeof(struct item);
    sort_check("one item", 1, 1, 0, false);
    sort_check("one run in memory", 100000, 1000, 0, false);
    sort_check("a run exactly full", 1000, 50, run, false);
    sort_check("two runs", 1001, 50, run, true);
    sort_check("16 runs merged at once", 16000, 100000, run, true);
    sort_check("17 runs: merged into longer first", 17000, 3, run, true);
    sort_check("300 runs: merged twice over", 300000, 1u << 30, run, true);

    /* A file that takes no more past 100 KiB (about four runs): the rest stay in memory. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = { 100 << 10, RLIM_INFINITY };
    CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0);
    sort_check("the file full after four runs", 40000, 1000, run, true);
    return check_failures ? 1 : 0;
}
