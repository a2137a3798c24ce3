/* The sorter (src/analysis/sorter.h): items pushed in any order come back in order, every
 * one of them whole, through one cursor or several at once, whether they fit in one run in
 * memory, need runs in the file merged at once, or so many runs that they are merged into
 * longer ones first; and, when the file takes no more (a file size limit), with the runs that
 * did not fit kept in memory; a sorter of items as pushed (a spool), the same. The values on top of it (values.h) give stats.h's percentiles
 * and medians exactly, in memory and from the file. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "analysis/sorter.h"
#include "analysis/stats.h"
#include "analysis/values.h"
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

/* count items (keys distinct values; 0: keys in order, three of each) through a sorter of
 * run_bytes runs: read back twice, the second pass through a cursor opened while the first is
 * half way. Keys in order with dip_every: every dip_every-th item's key is 5,000 lower. compare
 * sorter_as_pushed, or keys in order without dips: they come back as pushed, the file one run
 * however many were written. */
static void sort_compare_check(const char *what, uint64_t count, uint64_t keys,
                               uint64_t dip_every, size_t run_bytes, bool want_spilled,
                               sorter_compare_fn compare)
{
    struct item *want = malloc((count ? count : 1) * sizeof(*want));
    CHECK(want);
    struct sorter s;
    sorter_init(&s, sizeof(struct item), compare, run_bytes);
    for (uint64_t i = 0; i < count; i++) {
        want[i] = item_make(i, keys ? keys : 1);
        if (!keys)
            want[i].key = i / 3 - (dip_every && i % dip_every == dip_every - 1 ? 5000 : 0);
        CHECK(sorter_push(&s, &want[i]));
    }
    CHECK(sorter_finish(&s));
    if (compare != sorter_as_pushed)
        qsort(want, count, sizeof(*want), compare);
    EXPECT(sorter_count(&s) == count, "%s: %llu counted of %llu", what,
           (unsigned long long)sorter_count(&s), (unsigned long long)count);
    EXPECT(sorter_spilled(&s) == want_spilled, "%s: spilled %d, expected %d", what,
           sorter_spilled(&s), want_spilled);
    unsigned on_file = 0;
    for (unsigned i = 0; i < s.run_count; i++)
        on_file += !s.runs[i].items;
    bool one_run = compare == sorter_as_pushed || (!keys && !dip_every);
    EXPECT(on_file <= (one_run ? 1 : SORTER_FANIN) || s.file_full,
           "%s: %u runs in the file left to merge", what, on_file);
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

static void sort_check(const char *what, uint64_t count, uint64_t keys, size_t run_bytes,
                       bool want_spilled)
{
    sort_compare_check(what, count, keys, 0, run_bytes, want_spilled, by_key_then_serial);
}

/* Ties counted half, as run.c counted them before values_u_statistic. */
static double u_by_search(const int64_t *a, uint64_t na, const int64_t *sorted_b, uint64_t nb)
{
    double u = 0;
    for (uint64_t i = 0; i < na; i++) {
        uint64_t below = 0, at = 0;
        for (uint64_t lo = 0, hi = nb; lo < hi;) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (sorted_b[mid] < a[i])
                lo = below = mid + 1;
            else
                hi = mid;
        }
        while (below + at < nb && sorted_b[below + at] == a[i])
            at++;
        u += (double)below + 0.5 * (double)at;
    }
    return u;
}

/* Values are sorted as keys (values.c): every sign, the infinities, -0 and NaN (last) come
 * back in order and as they were. */
static void keys_check(void)
{
    const double in[] = { 1.5, -0.0, NAN, -INFINITY, 1e-300, -2.25, INFINITY, 0.0, -1e-300,
                          -1e300, 42.0 };
    const double want[] = { -INFINITY, -1e300, -2.25, -1e-300, 0.0, 0.0, 1e-300, 1.5, 42.0,
                            INFINITY };
    const unsigned n = sizeof(in) / sizeof(in[0]);
    struct values d, v;
    values_init_double(&d);
    values_init_i64(&v);
    const int64_t ints[] = { 5, INT64_MIN, -1, INT64_MAX, 0, -7 };
    for (unsigned i = 0; i < n; i++)
        values_add(&d, in[i]);
    for (unsigned i = 0; i < 6; i++)
        values_add_i64(&v, ints[i]);
    CHECK(values_finish(&d) && values_finish(&v));
    uint64_t ranks[11];
    double got[11];
    for (unsigned i = 0; i < n; i++)
        ranks[i] = i;
    CHECK(values_at(&d, ranks, n, got));
    unsigned wrong = 0;
    for (unsigned i = 0; i + 1 < n; i++)
        wrong += got[i] != want[i] || (want[i] == 0 && signbit(got[i]));
    EXPECT(!wrong && isnan(got[n - 1]), "doubles as keys: %u out of order", wrong);
    struct values_cursor c;
    CHECK(values_cursor_open(&c, &d));
    unsigned read = 0;
    double x;
    wrong = 0;
    while (values_next(&c, &x))
        wrong += read < n && !(x == got[read] || (isnan(x) && isnan(got[read]))), read++;
    values_cursor_close(&c);
    EXPECT(!wrong && read == n, "a pass over the doubles: %u of %u out of place", wrong, read);
    EXPECT(values_percentile(&v, 1.0 / 6) == (double)INT64_MIN && values_median_i64(&v) == -1 &&
               values_percentile(&v, 1.0) == (double)INT64_MAX,
           "integers as keys: p16 %.0f median %lld max %.0f", values_percentile(&v, 1.0 / 6),
           (long long)values_median_i64(&v), values_percentile(&v, 1.0));
    values_free(&d);
    values_free(&v);
}

/* n frame times in ns (many equal, as a capped game's) through values, against stats.h. */
static void values_check(const char *what, uint64_t n)
{
    int64_t *ns = malloc((n + 1) * sizeof(*ns)), *other = malloc((n / 3 + 1) * sizeof(*other));
    double *ms = malloc((n + 1) * sizeof(*ms));
    CHECK(ns && other && ms);
    struct values v, d, o;
    values_init_i64(&v);
    values_init_double(&d);
    values_init_i64(&o);
    for (uint64_t i = 0; i < n; i++) {
        ns[i] = 16000000 + (int64_t)(test_random() % 4000) * 1000 - (i % 7 == 0 ? 9000000 : 0) -
                (i % 13 == 0 ? 40000000 : 0); /* some below 0: a latency can be */
        ms[i] = (double)ns[i] / 1e6;
        values_add_i64(&v, ns[i]);
        values_add(&d, ms[i]);
    }
    for (uint64_t i = 0; i < n / 3; i++) {
        other[i] = 16000000 + (int64_t)(test_random() % 5000) * 1000;
        values_add_i64(&o, other[i]);
    }
    CHECK(values_finish(&v) && values_finish(&d) && values_finish(&o));
    stats_sort_i64(other, n / 3);
    double u = n ? u_by_search(ns, n, other, n / 3) : 0;
    int64_t median_ns = stats_median_i64(ns, n); /* sorts ns */
    double p99 = stats_percentile(ms, n, 0.99), p10 = stats_percentile(ms, n, 0.10);
    double median = stats_median(ms, n), tail = 0;
    uint64_t from = n - n / 100, within = 0;
    for (uint64_t i = from; i < n; i++)
        tail += (double)ns[i];
    for (uint64_t i = 0; i < n; i++)
        within += ms[i] >= 15.0 && ms[i] <= 17.5;
    EXPECT(values_count(&v) == n && values_median_i64(&v) == median_ns,
           "%s: median %lld ns, expected %lld", what, (long long)values_median_i64(&v),
           (long long)median_ns);
    EXPECT(values_percentile(&d, 0.99) == p99 && values_percentile(&d, 0.10) == p10 &&
           values_median(&d) == median, "%s: p99 %.9f p10 %.9f median %.9f, expected %.9f %.9f %.9f",
           what, values_percentile(&d, 0.99), values_percentile(&d, 0.10), values_median(&d),
           p99, p10, median);
    EXPECT(values_sum_from(&v, from) == tail, "%s: the slowest 1%% sum to %.0f, expected %.0f",
           what, values_sum_from(&v, from), tail);
    EXPECT(values_count_within(&d, 15.0, 17.5) == within, "%s: %llu within, expected %llu", what,
           (unsigned long long)values_count_within(&d, 15.0, 17.5), (unsigned long long)within);
    EXPECT(values_u_statistic(&v, &o) == u, "%s: U %.1f, expected %.1f", what,
           values_u_statistic(&v, &o), u);
    EXPECT(sorter_spilled(&v.s) == (n * sizeof(int64_t) > SORTER_RUN_BYTES),
           "%s: spilled %d", what, sorter_spilled(&v.s));
    values_free(&v);
    values_free(&d);
    values_free(&o);
    free(ns);
    free(other);
    free(ms);
    printf("%s: %llu values, their statistics as stats.h's\n", what, (unsigned long long)n);
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
    sort_check("one run in memory", SORTER_RUN_BYTES / sizeof(struct item), 1000, 0, false);
    sort_check("a run exactly full", 1000, 50, run, false);
    sort_check("two runs", 1001, 50, run, true);
    sort_check("16 runs merged at once", 16000, 100000, run, true);
    sort_check("17 runs: merged into longer first", 17000, 3, run, true);
    sort_check("300 runs: merged twice over", 300000, 1u << 30, run, true);
    sort_compare_check("as pushed, in memory", 1000, 50, 0, run, false, sorter_as_pushed);
    sort_compare_check("as pushed, 300 runs' worth", 300000, 1u << 30, 0, run, true,
                       sorter_as_pushed);
    sort_compare_check("pushed in order, 300 runs' worth", 300000, 0, 0, run, true,
                       by_key_then_serial);
    sort_compare_check("in order, every 4,999th item 5,000 keys back, 300 runs' worth", 300000, 0, 4999, run,
                       true, by_key_then_serial);
    sort_compare_check("in order, one item 5,000 keys back, 300 runs' worth", 300000, 0, 150001, run,
                       true, by_key_then_serial);

    keys_check();
    values_check("no values", 0);
    values_check("one value", 1);
    values_check("values in memory", 10001);
    values_check("values from the file", 3 * SORTER_RUN_BYTES / sizeof(int64_t) + 17);

    /* A file that takes no more past 100 KiB (about four runs): the rest stay in memory. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = { 100 << 10, RLIM_INFINITY };
    CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0);
    sort_check("the file full after four runs", 40000, 1000, run, true);
    sort_compare_check("as pushed, the file full after four runs' worth", 40000, 1000, 0, run,
                       true, sorter_as_pushed);
    sort_compare_check("in order, the file full after four runs' worth", 40000, 0, 0, run,
                       true, by_key_then_serial);
    return check_failures ? 1 : 0;
}
