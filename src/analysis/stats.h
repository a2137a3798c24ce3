/* Order statistics used by every report: one definition of a percentile (nearest rank) and
 * one of a median. */
#ifndef FSCOPE_STATS_H
#define FSCOPE_STATS_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The 0-based index of the p-th percentile (0 < p <= 1) of n sorted values, nearest rank. */
static inline size_t stats_rank(size_t n, double p)
{
    size_t rank = (size_t)ceil(p * (double)n);
    return (rank ? rank : 1) - 1;
}

static inline int stats_compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline void stats_sort(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), stats_compare_double);
}

/* Sorts v and returns its p-th percentile; 0 for no values. */
static inline double stats_percentile(double *v, size_t n, double p)
{
    if (!n)
        return 0;
    stats_sort(v, n);
    return v[stats_rank(n, p)];
}

/* Sorts v and returns its median: the middle value, or the mean of the two middle ones for an
 * even count; 0 for no values. The one median of every output. */
static inline double stats_median(double *v, size_t n)
{
    if (!n)
        return 0;
    stats_sort(v, n);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The same median for integers (nanoseconds): the mean of the two middle ones rounds down. */
static inline int stats_compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts n values by their bytes, least significant first (a byte every value shares is
 * passed over): a run's frame times, where qsort's calls were a twentieth of the analysis.
 * false when there is no memory for the copy it needs. */
static inline bool stats_radix_sort_i64(int64_t *v, size_t n)
{
    if (n < 2)
        return true;
    uint64_t *a = (uint64_t *)v, *b = malloc(n * sizeof(*b));
    if (!b)
        return false;
    const uint64_t sign = UINT64_C(1) << 63; /* flipped: negative values first */
    for (size_t i = 0; i < n; i++)
        a[i] ^= sign;
    for (unsigned shift = 0; shift < 64; shift += 8) {
        size_t count[257] = { 0 };
        for (size_t i = 0; i < n; i++)
            count[((a[i] >> shift) & 0xff) + 1]++;
        if (count[((a[0] >> shift) & 0xff) + 1] == n)
            continue;
        for (unsigned k = 1; k < 257; k++)
            count[k] += count[k - 1];
        for (size_t i = 0; i < n; i++)
            b[count[(a[i] >> shift) & 0xff]++] = a[i];
        uint64_t *t = a;
        a = b;
        b = t;
    }
    if (a != (uint64_t *)v) {
        memcpy(v, a, n * sizeof(*a));
        b = a;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (int64_t)((uint64_t)v[i] ^ sign);
    free(b);
    return true;
}

/* Sorts v: in place by insertion for the few values of a neighbourhood, by radix for many,
 * else (no memory) qsort. */
static inline void stats_sort_i64(int64_t *v, size_t n)
{
    if (n > 64) {
        if (!stats_radix_sort_i64(v, n))
            qsort(v, n, sizeof(*v), stats_compare_i64);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        int64_t x = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

static inline int64_t stats_median_i64(int64_t *v, size_t n)
{
    if (!n)
        return 0;
    stats_sort_i64(v, n);
    return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

#endif
