/* The rows of diff and compare built from captures, each value with its noise, and the
 * pieces both tables print them with. */
#include "compare_rows.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/text.h"

/* ---- noise ---- */

/* Neighbouring frames are not independent (a slow stretch lasts: a busy second of the
 * machine, a compositor's hiccup), so a standard error that takes them as independent is too
 * small: two identical vkcube FIFO runs came out "beyond noise" in p50, CPU work, GPU busy and
 * acquire. The noise is read from batch means instead: the frames cut into consecutive blocks
 * of at least a second and at least sqrt(n) frames, MIN_BLOCKS blocks at least, and the
 * spread of the blocks' means (or quantiles) taken as that of independent values. */
#define MIN_BLOCKS 8

/* How many blocks n frames are cut into; 0 when too few frames for MIN_BLOCKS of two. */
static size_t block_count(const double *frame_ms, size_t n)
{
    if (n < 2 * MIN_BLOCKS)
        return 0;
    double total_ms = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(frame_ms[i]) && frame_ms[i] > 0)
            total_ms += frame_ms[i];
    double per_second = total_ms > 0 ? (double)n * 1000.0 / total_ms : (double)n;
    double length = fmax(ceil(sqrt((double)n)), ceil(per_second));
    double count = floor((double)n / length);
    return count < MIN_BLOCKS ? MIN_BLOCKS : (size_t)count;
}

/* Where block b of count over n frames begins (the last ends at n). */
static size_t block_start(size_t b, size_t count, size_t n)
{
    return (size_t)((double)b * (double)n / (double)count);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Student's t for a two-sided ~95% interval with df degrees of freedom. */
static double t95(size_t df)
{
    static const double table[30] = {
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    };
    if (df == 0)
        return NAN;
    return df <= 30 ? table[df - 1] : 1.96 + 2.4 / (double)df; /* within 0.002 from 30 on */
}

/* Half the width of a ~95% interval for the mean of the block statistics in stat (count of
 * them, NAN for a block with no value): t * their standard deviation / sqrt(count). */
static double blocks_noise(const double *stat, size_t count)
{
    double sum = 0, sum_sq = 0;
    size_t k = 0;
    for (size_t b = 0; b < count; b++)
        if (!isnan(stat[b])) {
            sum += stat[b];
            k++;
        }
    if (k < 2)
        return NAN;
    double mean = sum / (double)k;
    for (size_t b = 0; b < count; b++)
        if (!isnan(stat[b]))
            sum_sq += (stat[b] - mean) * (stat[b] - mean);
    return t95(k - 1) * sqrt(sum_sq / (double)(k - 1) / (double)k);
}

/* The noise of a column's mean, from the means of its blocks (blocks of block_count()). Of
 * the values that are known: a frame GPU timing sampled out has no GPU busy (NAN). */
static double mean_noise(const double *values, size_t count, size_t blocks)
{
    if (!blocks || blocks > count)
        return NAN;
    double *means = malloc(blocks * sizeof(*means));
    if (!means)
        return NAN;
    for (size_t b = 0; b < blocks; b++) {
        size_t from = block_start(b, blocks, count), to = block_start(b + 1, blocks, count);
        double sum = 0;
        size_t n = 0;
        for (size_t i = from; i < to; i++)
            if (!isnan(values[i])) {
                sum += values[i];
                n++;
            }
        means[b] = n ? sum / (double)n : NAN;
    }
    double noise = blocks_noise(means, blocks);
    free(means);
    return noise;
}

/*
 * Half the width of a ~95% interval for the q-quantile of the frame times. Two estimates, the
 * wider kept. One distribution-free, from order statistics: the number of frames at or below
 * the true quantile is Binomial(n, q), so the ranks n*q -/+ 2*sqrt(n*q*(1-q)) bracket it about
 * 95% of the time, and the frame times at those ranks bracket the quantile whatever the shape
 * of the distribution; it takes frames as independent. The other from the quantiles of the
 * blocks, which sees stretches of slow frames. When a rank falls outside 1..n (p99 of fewer
 * than about 400 frames) there are too few frames to bound it, and no estimate is given.
 */
static double quantile_noise(const double *frame_ms, const double *sorted, size_t n, double q,
                             size_t blocks)
{
    double center = (double)n * q, spread = 2 * sqrt((double)n * q * (1 - q));
    double low_rank = floor(center - spread), high_rank = ceil(center + spread);
    if (n < 2 || low_rank < 1 || high_rank > (double)n)
        return NAN;
    double noise = (sorted[(size_t)high_rank - 1] - sorted[(size_t)low_rank - 1]) / 2;
    if (!blocks || blocks > n)
        return noise;
    double *quantiles = malloc(blocks * sizeof(*quantiles));
    double *block = malloc((n / blocks + 2) * sizeof(*block));
    if (quantiles && block) {
        for (size_t b = 0; b < blocks; b++) {
            size_t from = block_start(b, blocks, n), to = block_start(b + 1, blocks, n);
            memcpy(block, frame_ms + from, (to - from) * sizeof(*block));
            qsort(block, to - from, sizeof(*block), compare_doubles);
            quantiles[b] = block[(size_t)floor(q * (double)(to - from - 1) + 0.5)];
        }
        double batch = blocks_noise(quantiles, blocks);
        if (batch > noise)
            noise = batch;
    }
    free(quantiles);
    free(block);
    return noise;
}

/* What one run cannot show of the next: identical runs differ by more than either run's own
 * noise, a machine's state moving under them. As one standard deviation, from five identical
 * vkcube FIFO runs and four of the demo on lavapipe (2 shared cores): the frame rate and frame
 * time statistics 0.1-0.4% of the value (p95 2.2%); each part of the frame (CPU work, GPU
 * busy, acquire, present) at most 0.35% of the frame time, whatever its own size (GPU busy
 * 8.5% of its 1.0 ms, present 0.3% of its 25.6 ms). */
#define RUN_SPREAD_FRAME 0.01 /* of the value */
/* p95 and p99: the tail's few frames move it most between runs (2.2% measured above). Taken
 * at 1% like the rest, identical 90- and 200-frame FIFO runs of the demo were called apart in
 * p95 by 4.6-4.8% (26.47, 27.76 and 26.63 ms; 26.46 and 27.72 ms), three times in CI. */
#define RUN_SPREAD_TAIL 0.022 /* of the value */
#define RUN_SPREAD_PART 0.005 /* of the run's mean frame time */
/* The least change called, as a share of the frame time (or of the frame rate): a part of the
 * frame that moves by less moves the frame rate by less than half a percent. */
#define LEAST_FRAME_SHARE 0.005
/* Of a verdict's share of the frames: half a point. */
#define LEAST_SHARE 0.005

double rows_run_noise(const struct row *row, int side)
{
    return hypot(row->noise[side], 2 * row->run_spread[side]);
}

/* ---- rows ---- */

static struct row *rows_add(struct rows *rows, const char *name, enum direction direction)
{
    if (rows->count == rows->capacity) {
        size_t grown = rows->capacity ? rows->capacity * 2 : 64;
        struct row *items = realloc(rows->items, grown * sizeof(*items));
        if (!items)
            return NULL;
        rows->items = items;
        rows->capacity = grown;
    }
    struct row *row = &rows->items[rows->count++];
    *row = (struct row){ .direction = direction };
    snprintf(row->name, sizeof(row->name), "%s", name);
    for (int i = 0; i < 3; i++)
        row->noise[i] = NAN;
    return row;
}

/* The number of key in a capture's budget_ms or verdict.shares, or NULL. */
static const struct keyed_number *keyed_find(const struct capture *c, bool shares,
                                             const char *key)
{
    const struct keyed_number *numbers = shares ? c->shares : c->budget;
    size_t count = shares ? c->share_count : c->budget_count;
    for (size_t i = 0; i < count; i++)
        if (strcmp(numbers[i].key, key) == 0)
            return &numbers[i];
    return NULL;
}

/* The frames.csv column whose mean a budget_ms entry is; -1 for other_wait, the sum of two. */
static int budget_column(const char *key)
{
    static const struct { const char *key; enum frame_column column; } map[] = {
        { "cpu", COLUMN_CPU }, { "gpu_busy", COLUMN_GPU_BUSY }, { "acquire", COLUMN_ACQUIRE },
        { "present", COLUMN_PRESENT }, { "present_wait", COLUMN_PRESENT_WAIT },
        { "fence", COLUMN_FENCE }, { "semaphore", COLUMN_SEMAPHORE }, { "idle", COLUMN_IDLE },
        { "cap", COLUMN_CAP },
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(map[i].key, key) == 0)
            return (int)map[i].column;
    return strcmp(key, "other_wait") == 0 ? -1 : -2;
}

/* Adds the rows of budget_ms, or of verdict.shares: every key any capture has; a key one
 * capture lacks makes its summary malformed. False after one line on err. */
static bool add_keyed_rows(struct rows *rows, const struct capture *caps, int cap_count,
                           bool shares, FILE *err)
{
    const char *object = shares ? "verdict.shares" : "budget_ms";
    for (int owner = 0; owner < cap_count; owner++) {
        const struct keyed_number *keys = shares ? caps[owner].shares : caps[owner].budget;
        size_t key_count = shares ? caps[owner].share_count : caps[owner].budget_count;
        for (size_t k = 0; k < key_count; k++) {
            const char *key = keys[k].key;
            char name[ROW_NAME_LEN];
            snprintf(name, sizeof(name), "%s.%s", object, key);
            bool seen = false;
            for (size_t r = 0; r < rows->count && !seen; r++)
                seen = strcmp(rows->items[r].name, name) == 0;
            if (seen)
                continue;
            /* Less CPU work or GPU work per frame is better; a wait or a verdict's share has
             * no direction (less CPU work shows up as more time waiting for the display). */
            enum direction direction = !shares && (strcmp(key, "cpu") == 0 ||
                                                   strcmp(key, "gpu_busy") == 0)
                                           ? LOWER_IS_BETTER : NO_DIRECTION;
            struct row *row = rows_add(rows, name, direction);
            if (!row) {
                fprintf(err, "framescope: out of memory\n");
                return false;
            }
            for (int i = 0; i < cap_count; i++) {
                const struct capture *c = &caps[i];
                const struct keyed_number *found = keyed_find(c, shares, key);
                if (!found) {
                    char path[PATH_MAX + 32], shown[4 * (PATH_MAX + 32)];
                    snprintf(path, sizeof(path), "%s/summary.json", c->dir);
                    fprintf(err, "framescope: %s: no number at %s\n",
                            capture_files_shown_path(path, shown, sizeof(shown)), name);
                    return false;
                }
                row->value[i] = found->value;
                row->present[i] = true;
                size_t n = c->frame_rows;
                size_t blocks = block_count(c->columns[COLUMN_FRAME], n);
                if (shares) {
                    double p = row->value[i];
                    if (n > 0 && p >= 0 && p <= 1)
                        row->noise[i] = 2 * sqrt(p * (1 - p) / (double)n);
                    else
                        row->no_noise_why = "no frames";
                    continue;
                }
                int column = budget_column(key);
                if (column >= 0) {
                    row->noise[i] = mean_noise(c->columns[column], n, blocks);
                } else if (column == -1 && n) {
                    double *sum = malloc(n * sizeof(double));
                    if (!sum) {
                        fprintf(err, "framescope: out of memory\n");
                        return false;
                    }
                    for (size_t f = 0; f < n; f++)
                        sum[f] = c->columns[COLUMN_SEMAPHORE][f] + c->columns[COLUMN_IDLE][f];
                    row->noise[i] = mean_noise(sum, n, blocks);
                    free(sum);
                } else {
                    row->no_noise_why = "no per-frame column for it";
                }
                if (isnan(row->noise[i]) && !row->no_noise_why)
                    row->no_noise_why = "fewer than 16 frames (8 blocks of 2)";
            }
        }
    }
    return true;
}

/* Two rows per zone of any capture: calls per frame and mean ms, with no noise estimate:
 * zones.csv holds one total per zone, not one per frame, so there is no spread to read. */
static bool add_zone_rows(struct rows *rows, const struct capture *caps, int cap_count)
{
    for (int owner = 0; owner < cap_count; owner++) {
        for (size_t z = 0; z < caps[owner].zone_count; z++) {
            const struct zone_total *zone = &caps[owner].zones[z];
            bool earlier = false;
            for (int i = 0; i < owner && !earlier; i++)
                earlier = capture_files_zone_find(&caps[i], zone->thread, zone->path) != NULL;
            if (earlier)
                continue;
            struct row *calls = rows_add(rows, "calls/frame", NO_DIRECTION);
            struct row *mean = calls ? rows_add(rows, "mean_ms", NO_DIRECTION) : NULL;
            if (!mean)
                return false;
            calls = mean - 1; /* rows_add may have moved the array */
            for (int i = 0; i < cap_count; i++) {
                const struct zone_total *found =
                    capture_files_zone_find(&caps[i], zone->thread, zone->path);
                calls->present[i] = mean->present[i] = found != NULL;
                if (!found)
                    continue;
                calls->value[i] = caps[i].frames > 0 ? found->calls / caps[i].frames : NAN;
                mean->value[i] = found->calls > 0 ? found->inclusive_ms / found->calls : NAN;
            }
            calls->thread = mean->thread = zone->thread;
            calls->path = mean->path = zone->path;
            calls->no_noise_why = mean->no_noise_why = "zones.csv holds totals, not frames";
        }
    }
    return true;
}

/* The hitch count and each cause's excess, where every capture has them (a capture made
 * before hitches were counted has none: no rows rather than rows half empty). Fewer is
 * better; a count's noise is a Poisson count's (2 sqrt(n)) or its blocks', an excess in ms
 * has none. False when out of memory. */
static bool add_hitch_rows(struct rows *rows, const struct capture *caps, int cap_count)
{
    for (int i = 0; i < cap_count; i++)
        if (!caps[i].has_hitches)
            return true;
    struct row *row = rows_add(rows, "hitches.count", LOWER_IS_BETTER);
    if (!row)
        return false;
    for (int i = 0; i < cap_count; i++) {
        const struct capture *c = &caps[i];
        row->value[i] = c->hitch_count;
        row->present[i] = true;
        row->noise[i] = 2 * sqrt(c->hitch_count > 1 ? c->hitch_count : 1);
        /* Hitches come in bursts (a busy stretch of the machine makes several): the noise of
         * their count from the blocks' counts, where the summary says which frames they were,
         * when that is the wider. */
        size_t n = c->frame_rows, blocks = block_count(c->columns[COLUMN_FRAME], n);
        double *per_frame = blocks && c->hitch_frame_count ? calloc(n, sizeof(double)) : NULL;
        if (per_frame) {
            for (size_t h = 0; h < c->hitch_frame_count; h++) {
                double f = c->hitch_frames[h];
                if (f >= 0 && f < (double)n)
                    per_frame[(size_t)f] += 1;
            }
            double burst = (double)n * mean_noise(per_frame, n, blocks);
            if (burst > row->noise[i])
                row->noise[i] = burst;
            free(per_frame);
        }
    }
    for (size_t k = 0; k < caps[0].hitch_cause_count; k++) {
        char name[ROW_NAME_LEN];
        snprintf(name, sizeof(name), "hitches.causes_ms.%s", caps[0].hitch_causes[k].key);
        bool everywhere = true;
        double values[3] = { 0 };
        for (int i = 0; i < cap_count && everywhere; i++) {
            everywhere = false;
            for (size_t j = 0; j < caps[i].hitch_cause_count; j++)
                if (strcmp(caps[i].hitch_causes[j].key, caps[0].hitch_causes[k].key) == 0) {
                    values[i] = caps[i].hitch_causes[j].value;
                    everywhere = true;
                }
        }
        if (!everywhere)
            continue;
        if (!(row = rows_add(rows, name, LOWER_IS_BETTER)))
            return false;
        row->no_noise_why = "a hitch's excess is one event, not a distribution";
        for (int i = 0; i < cap_count; i++) {
            row->value[i] = values[i];
            row->present[i] = true;
        }
    }
    return true;
}

static bool name_starts(const struct row *row, const char *prefix)
{
    return strncmp(row->name, prefix, strlen(prefix)) == 0;
}

/* Each row's spread between identical runs and least change worth calling. */
static void set_least_changes(struct rows *rows, const struct capture *caps, int cap_count)
{
    double frame_ms = 0, fps = 0;
    for (int i = 0; i < cap_count; i++) {
        if (isfinite(caps[i].frame_ms[0]) && caps[i].frame_ms[0] > frame_ms)
            frame_ms = caps[i].frame_ms[0]; /* the mean */
        if (isfinite(caps[i].fps) && caps[i].fps > fps)
            fps = caps[i].fps;
    }
    for (size_t r = 0; r < rows->count; r++) {
        struct row *row = &rows->items[r];
        double largest = 0;
        for (int i = 0; i < cap_count; i++)
            if (row->present[i] && isfinite(row->value[i]) && fabs(row->value[i]) > largest)
                largest = fabs(row->value[i]);
        if (row->thread) {
            row->least_change = LEAST_FRAME_SHARE * largest;
        } else if (strcmp(row->name, "fps") == 0 || name_starts(row, "frame_ms.")) {
            double spread = strcmp(row->name, "frame_ms.p95") == 0 ||
                                    strcmp(row->name, "frame_ms.p99") == 0
                                ? RUN_SPREAD_TAIL : RUN_SPREAD_FRAME;
            for (int i = 0; i < cap_count; i++)
                row->run_spread[i] = isfinite(row->value[i]) ? spread * fabs(row->value[i]) : 0;
            row->least_change = LEAST_FRAME_SHARE * (row->name[0] == 'f' && row->name[1] == 'p'
                                                         ? fps : frame_ms);
        } else if (name_starts(row, "budget_ms.")) {
            for (int i = 0; i < cap_count; i++)
                row->run_spread[i] = isfinite(caps[i].frame_ms[0])
                                         ? RUN_SPREAD_PART * fabs(caps[i].frame_ms[0]) : 0;
            row->least_change = LEAST_FRAME_SHARE * frame_ms;
        } else if (name_starts(row, "hitches.causes_ms.")) {
            row->least_change = LEAST_FRAME_SHARE * frame_ms;
        } else if (name_starts(row, "verdict.shares.")) {
            row->least_change = LEAST_SHARE;
        }
    }
}

/* Every row for cap_count captures. False after one line on err. */
bool rows_build(struct rows *rows, const struct capture *caps, int cap_count, FILE *err)
{
    struct row *row = rows_add(rows, "fps", HIGHER_IS_BETTER);
    if (!row)
        goto error_memory;
    for (int i = 0; i < cap_count; i++) {
        const struct capture *c = &caps[i];
        row->value[i] = c->fps;
        row->present[i] = true;
        size_t blocks = block_count(c->columns[COLUMN_FRAME], c->frame_rows);
        /* fps is frames over their summed time, 1000 / the mean frame time: a relative error
         * in the mean is the same relative error in fps (to first order). */
        double mean_ms = 0;
        for (size_t f = 0; f < c->frame_rows; f++)
            mean_ms += c->columns[COLUMN_FRAME][f] / (double)c->frame_rows;
        if (mean_ms > 0)
            row->noise[i] = row->value[i] * mean_noise(c->columns[COLUMN_FRAME],
                                                       c->frame_rows, blocks) / mean_ms;
        if (isnan(row->noise[i]))
            row->no_noise_why = "fewer than 16 frames (8 blocks of 2)";
    }
    for (int s = 0; s < FRAME_STAT_COUNT; s++) {
        char name[ROW_NAME_LEN];
        snprintf(name, sizeof(name), "frame_ms.%s", frame_stats[s].key);
        if (!(row = rows_add(rows, name, LOWER_IS_BETTER)))
            goto error_memory;
        for (int i = 0; i < cap_count; i++) {
            const struct capture *c = &caps[i];
            row->value[i] = c->frame_ms[s];
            row->present[i] = true;
            double q = frame_stats[s].quantile;
            size_t blocks = block_count(c->columns[COLUMN_FRAME], c->frame_rows);
            if (q < 0)
                row->noise[i] = mean_noise(c->columns[COLUMN_FRAME], c->frame_rows, blocks);
            else if (q < 1)
                row->noise[i] = quantile_noise(c->columns[COLUMN_FRAME], c->sorted_frame_ms,
                                               c->frame_rows, q, blocks);
        }
        if (frame_stats[s].quantile >= 1)
            row->no_noise_why = "a maximum has no distribution-free interval";
        else if (frame_stats[s].quantile > 0)
            row->no_noise_why = "too few frames for an order-statistic interval";
        else
            row->no_noise_why = "fewer than 16 frames (8 blocks of 2)";
    }
    if (!add_keyed_rows(rows, caps, cap_count, false, err) ||
        !add_keyed_rows(rows, caps, cap_count, true, err))
        return false;
    if (!add_zone_rows(rows, caps, cap_count) || !add_hitch_rows(rows, caps, cap_count))
        goto error_memory;
    set_least_changes(rows, caps, cap_count);
    return true;

error_memory:
    fprintf(err, "framescope: out of memory\n");
    return false;
}

/* ---- output ---- */

const char *rows_direction_name(enum direction direction)
{
    return direction == LOWER_IS_BETTER    ? "lower-is-better"
           : direction == HIGHER_IS_BETTER ? "higher-is-better"
                                           : "none";
}

/* What a change beyond the noise or the drift means: better, worse, or for a metric with no
 * direction, higher or lower. */
const char *rows_change_name(enum direction direction, double change)
{
    if (direction == NO_DIRECTION)
        return change > 0 ? "higher" : "lower";
    return (change < 0) == (direction == LOWER_IS_BETTER) ? "better" : "worse";
}

void rows_print_number(FILE *out, double value)
{
    if (isfinite(value))
        fprintf(out, "%.9g", value);
    else
        fputs("null", out);
}

void rows_print_cell(FILE *out, double value, bool present)
{
    if (present && isfinite(value))
        fprintf(out, " %12.4f", value);
    else
        fprintf(out, " %12s", present ? "-" : "absent");
}

/* text as a JSON string. Text that is not UTF-8 (a path from the command line), which jansson
 * refuses, goes as its printable form (util/text.h), which is. */
void rows_print_json_string(FILE *out, const char *text)
{
    json_t *string = json_string(text);
    if (!string) {
        size_t len = strlen(text);
        char *shown = malloc(4 * len + 1);
        if (shown)
            string = json_string(fscope_text_printable(shown, 4 * len + 1, text, len));
        free(shown);
    }
    if (!string || json_dumpf(string, out, JSON_ENCODE_ANY) != 0)
        fputs("null", out); /* out of memory */
    json_decref(string);
}

/* Zone rows come in pairs under one heading; returns whether this row starts a new zone. */
bool rows_zone_heading(const struct row *rows, size_t i)
{
    return rows[i].thread && (i == 0 || rows[i - 1].thread != rows[i].thread ||
                              rows[i - 1].path != rows[i].path);
}

void rows_print_key(FILE *out, const struct row *row)
{
    fputs("{\"name\": ", out);
    rows_print_json_string(out, row->name);
    if (row->thread) {
        fputs(", \"thread\": ", out);
        rows_print_json_string(out, row->thread);
        fputs(", \"path\": ", out);
        rows_print_json_string(out, row->path);
    }
    fprintf(out, ", \"direction\": \"%s\"", rows_direction_name(row->direction));
}

