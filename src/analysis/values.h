/* Numbers kept for their order statistics, however many: in a sorter (sorter.h), so that
 * memory stays bounded, and read back in order for each statistic, exactly (stats.h's
 * definitions: nearest-rank percentiles, the median of two middles). Values are int64_t
 * (nanoseconds) or double, as the init chose; ranks are 0-based. */
#ifndef FSCOPE_ANALYSIS_VALUES_H
#define FSCOPE_ANALYSIS_VALUES_H

#include <stdbool.h>
#include <stdint.h>

#include "sorter.h"

struct values {
    struct sorter s;
    bool integer;
};

void values_init_i64(struct values *v);
void values_init_double(struct values *v);
/* A failure to keep one (memory) is the sorter's, said by values_finish. */
void values_add_i64(struct values *v, int64_t x);
void values_add(struct values *v, double x);
/* Done adding: false when memory ran out (every statistic then 0). */
bool values_finish(struct values *v);
uint64_t values_count(const struct values *v);
/* The values at ranks[0..n) (ascending) as doubles into ret; false (ret 0) on failure. */
bool values_at(const struct values *v, const uint64_t *ranks, unsigned n, double *ret);
/* The nearest-rank percentile (0 < p <= 1) and the median; 0 for no values. */
double values_percentile(const struct values *v, double p);
double values_median(const struct values *v);
/* The median of integers: the mean of the two middle ones rounds down (stats_median_i64). */
int64_t values_median_i64(const struct values *v);
/* How many values lie in [lo, hi]. */
uint64_t values_count_within(const struct values *v, double lo, double hi);
/* The sum of the values at ranks from on (the slowest frames'), as doubles. */
double values_sum_from(const struct values *v, uint64_t from);
/* How many of b are below each of a, summed, ties counted half: the Mann-Whitney U of a. */
double values_u_statistic(const struct values *a, const struct values *b);
void values_free(struct values *v);

/* A pass over the values in ascending order. */
struct values_cursor {
    const struct values *v;
    struct sorter_cursor c;
};
/* False when memory ran out or the values are not finished (c then holds nothing to close). */
bool values_cursor_open(struct values_cursor *c, const struct values *v);
/* The next value into ret; false after the last (or on a read error). */
bool values_next(struct values_cursor *c, double *ret);
void values_cursor_close(struct values_cursor *c);

#endif
