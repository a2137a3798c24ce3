/* The order statistics every output uses (src/analysis/stats.h): the sort of many values (by
 * radix) and of a few (by insertion) against qsort's, on values a recording can hold and the
 * extremes of the type, with the median taken from each. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stats.h"
#include "check.h"


/* Values of one kind: frame times in ns (16.7 ms give or take), a few distinct ones (ties),
 * any 64-bit value, or negative and positive differences. */
static int64_t value(unsigned kind)
{
    switch (kind) {
    case 0: return 16666667 + (int64_t)(test_random() % 2000000) - 1000000;
    case 1: return (int64_t)(test_random() % 4) * 1000;
    case 2: return (int64_t)test_random();
    default: return (int64_t)(test_random() % 2000001) - 1000000;
    }
}

int main(void)
{
    static const size_t sizes[] = { 0, 1, 2, 3, 63, 64, 65, 1000, 100001 };
    int failures = 0;
    for (unsigned kind = 0; kind < 4; kind++) {
        for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            size_t n = sizes[s];
            int64_t *v = malloc((n + 2) * sizeof(*v)), *w = malloc((n + 2) * sizeof(*w));
            if (!v || !w)
                return 1;
            for (size_t i = 0; i < n; i++)
                v[i] = value(kind);
            if (n > 3) {
                v[0] = INT64_MIN;
                v[n - 1] = INT64_MAX;
            }
            memcpy(w, v, n * sizeof(*v));
            qsort(w, n, sizeof(*w), stats_compare_i64);
            int64_t expected = n ? (n % 2 ? w[n / 2] : w[n / 2 - 1] + (w[n / 2] - w[n / 2 - 1]) / 2)
                                 : 0;
            int64_t median = stats_median_i64(v, n);
            if (memcmp(v, w, n * sizeof(*v)) != 0 || median != expected) {
                fprintf(stderr, "FAIL: %zu values of kind %u: sorted %s, median %" PRId64
                        " against %" PRId64 "\n", n, kind,
                        memcmp(v, w, n * sizeof(*v)) ? "differently" : "alike", median, expected);
                failures++;
            }
            free(v);
            free(w);
        }
    }
    if (!failures)
        printf("ok: radix and insertion sorts and their medians match qsort's on %zu sizes of "
               "4 kinds of values\n", sizeof(sizes) / sizeof(sizes[0]));
    return failures ? 1 : 0;
}
