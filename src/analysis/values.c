/* Order statistics of many numbers with bounded memory (values.h). */
#include "values.h"

#include <math.h>
#include <string.h>

#include "stats.h"

/* Values are kept as keys whose unsigned order is theirs (the sorter's fastest): an integer
 * with its sign bit flipped; a double's bits flipped whole when negative, else its sign bit
 * set; every NaN one key, last; -0 as 0. */
#define SIGN (UINT64_C(1) << 63)

static uint64_t key_of_double(double x)
{
    if (x != x)
        return UINT64_MAX;
    if (x == 0)
        x = 0.0;
    uint64_t bits;
    memcpy(&bits, &x, sizeof(bits));
    return bits & SIGN ? ~bits : bits | SIGN;
}

static double double_of_key(uint64_t key)
{
    if (key == UINT64_MAX)
        return NAN;
    uint64_t bits = key & SIGN ? key & ~SIGN : ~key;
    double x;
    memcpy(&x, &bits, sizeof(x));
    return x;
}

static int64_t i64_of_key(uint64_t key)
{
    return (int64_t)(key ^ SIGN);
}

void values_init_i64(struct values *v)
{
    sorter_init(&v->s, sizeof(uint64_t), NULL, 0);
    v->integer = true;
}

void values_init_double(struct values *v)
{
    sorter_init(&v->s, sizeof(uint64_t), NULL, 0);
    v->integer = false;
}

void values_add_i64(struct values *v, int64_t x)
{
    uint64_t key = (uint64_t)x ^ SIGN;
    sorter_push(&v->s, &key);
}

void values_add(struct values *v, double x)
{
    uint64_t key = key_of_double(x);
    sorter_push(&v->s, &key);
}

bool values_finish(struct values *v)
{
    return sorter_finish(&v->s);
}

uint64_t values_count(const struct values *v)
{
    return sorter_count(&v->s);
}

static double as_double(const struct values *v, const void *item)
{
    uint64_t key;
    memcpy(&key, item, sizeof(key));
    return v->integer ? (double)i64_of_key(key) : double_of_key(key);
}

/* One pass, calling take for the items at ranks[0..n) (ascending). */
static bool pass_ranks(const struct values *v, const uint64_t *ranks, unsigned n,
                       void (*take)(const struct values *, const void *, unsigned, void *),
                       void *ctx)
{
    struct sorter_cursor c;
    if (!sorter_cursor_open(&c, &v->s))
        return false;
    const void *item;
    uint64_t rank = 0;
    unsigned k = 0;
    while (k < n && (item = sorter_next(&c))) {
        for (; k < n && ranks[k] == rank; k++)
            take(v, item, k, ctx);
        rank++;
    }
    bool ok = !c.failed && k == n;
    sorter_cursor_close(&c);
    return ok;
}

static void take_double(const struct values *v, const void *item, unsigned k, void *ctx)
{
    ((double *)ctx)[k] = as_double(v, item);
}

bool values_at(const struct values *v, const uint64_t *ranks, unsigned n, double *ret)
{
    memset(ret, 0, n * sizeof(*ret));
    return pass_ranks(v, ranks, n, take_double, ret);
}

double values_percentile(const struct values *v, double p)
{
    uint64_t n = values_count(v), rank = stats_rank((size_t)n, p);
    double x = 0;
    if (n)
        values_at(v, &rank, 1, &x);
    return x;
}

double values_median(const struct values *v)
{
    uint64_t n = values_count(v);
    if (!n)
        return 0;
    uint64_t ranks[2] = { n % 2 ? n / 2 : n / 2 - 1, n / 2 };
    double x[2];
    values_at(v, ranks, 2, x);
    return n % 2 ? x[1] : (x[0] + x[1]) / 2;
}

static void take_i64(const struct values *v, const void *item, unsigned k, void *ctx)
{
    (void)v;
    uint64_t key;
    memcpy(&key, item, sizeof(key));
    ((int64_t *)ctx)[k] = i64_of_key(key);
}

int64_t values_median_i64(const struct values *v)
{
    uint64_t n = values_count(v);
    int64_t x[2] = { 0, 0 };
    if (!n)
        return 0;
    uint64_t ranks[2] = { n % 2 ? n / 2 : n / 2 - 1, n / 2 };
    if (!pass_ranks(v, ranks, 2, take_i64, x))
        return 0;
    return n % 2 ? x[1] : x[0] + (x[1] - x[0]) / 2;
}

double values_sum_from(const struct values *v, uint64_t from)
{
    struct sorter_cursor c;
    if (!sorter_cursor_open(&c, &v->s))
        return 0;
    double sum = 0;
    const void *item;
    for (uint64_t rank = 0; (item = sorter_next(&c)); rank++)
        if (rank >= from)
            sum += as_double(v, item);
    sorter_cursor_close(&c);
    return sum;
}

uint64_t values_count_within(const struct values *v, double lo, double hi)
{
    struct sorter_cursor c;
    if (!sorter_cursor_open(&c, &v->s))
        return 0;
    uint64_t count = 0;
    const void *item;
    while ((item = sorter_next(&c))) {
        double x = as_double(v, item);
        if (x > hi)
            break;
        count += x >= lo;
    }
    sorter_cursor_close(&c);
    return count;
}

double values_u_statistic(const struct values *a, const struct values *b)
{
    /* a in order, with two passes over b in step: past those below x, and past those at x. */
    struct sorter_cursor ca, below, at;
    if (!sorter_cursor_open(&ca, &a->s))
        return 0;
    if (!sorter_cursor_open(&below, &b->s)) {
        sorter_cursor_close(&ca);
        return 0;
    }
    if (!sorter_cursor_open(&at, &b->s)) {
        sorter_cursor_close(&below);
        sorter_cursor_close(&ca);
        return 0;
    }
    const void *x, *lo = sorter_next(&below), *hi = sorter_next(&at);
    uint64_t n_below = 0, n_at_or_below = 0;
    double u = 0;
    while ((x = sorter_next(&ca))) {
        double value = as_double(a, x);
        while (lo && as_double(b, lo) < value) {
            n_below++;
            lo = sorter_next(&below);
        }
        while (hi && as_double(b, hi) <= value) {
            n_at_or_below++;
            hi = sorter_next(&at);
        }
        u += (double)n_below + 0.5 * (double)(n_at_or_below - n_below);
    }
    sorter_cursor_close(&at);
    sorter_cursor_close(&below);
    sorter_cursor_close(&ca);
    return u;
}

bool values_cursor_open(struct values_cursor *c, const struct values *v)
{
    c->v = v;
    return sorter_cursor_open(&c->c, &v->s);
}

bool values_next(struct values_cursor *c, double *ret)
{
    const void *item = sorter_next(&c->c);
    if (item)
        *ret = as_double(c->v, item);
    return item != NULL;
}

void values_cursor_close(struct values_cursor *c)
{
    sorter_cursor_close(&c->c);
}

void values_free(struct values *v)
{
    sorter_free(&v->s);
}
