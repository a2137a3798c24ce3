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

/* Twice the standard error of a column's mean: sample standard deviation / sqrt(n). It takes
 * frames as independent; consecutive frames are correlated (a slow stretch lasts), so this is
 * the least noise there can be, and a difference it flags is worth a second run. */
/* Of the values that are known: a frame GPU timing sampled out has no GPU busy (NAN). */
static double mean_noise(const double *values, size_t count)
{
    double sum = 0, sum_sq = 0;
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (!isnan(values[i])) {
            sum += values[i];
            n++;
        }
    if (n < 2)
        return NAN;
    double mean = sum / (double)n;
    for (size_t i = 0; i < count; i++)
        if (!isnan(values[i]))
            sum_sq += (values[i] - mean) * (values[i] - mean);
    return 2 * sqrt(sum_sq / (double)(n - 1) / (double)n);
}

/*
 * Half the width of a distribution-free ~95% interval for the q-quantile, from order
 * statistics, without a bootstrap: the number of frames at or below the true quantile is
 * Binomial(n, q), so the ranks n*q -/+ 2*sqrt(n*q*(1-q)) bracket it about 95% of the time, and
 * the frame times at those ranks bracket the quantile whatever the shape of the distribution.
 * The width then reflects how sparse the frames are around that percentile, which a mean's
 * standard error cannot. When a rank falls outside 1..n (p99 of fewer than about 400 frames)
 * there are too few frames to bound it, and no estimate is given.
 */
static double quantile_noise(const double *sorted, size_t n, double q)
{
    double center = (double)n * q, spread = 2 * sqrt((double)n * q * (1 - q));
    double low_rank = floor(center - spread), high_rank = ceil(center + spread);
    if (n < 2 || low_rank < 1 || high_rank > (double)n)
        return NAN;
    return (sorted[(size_t)high_rank - 1] - sorted[(size_t)low_rank - 1]) / 2;
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
                    row->noise[i] = mean_noise(c->columns[column], n);
                } else if (column == -1 && n) {
                    double *sum = malloc(n * sizeof(double));
                    if (!sum) {
                        fprintf(err, "framescope: out of memory\n");
                        return false;
                    }
                    for (size_t f = 0; f < n; f++)
                        sum[f] = c->columns[COLUMN_SEMAPHORE][f] + c->columns[COLUMN_IDLE][f];
                    row->noise[i] = mean_noise(sum, n);
                    free(sum);
                } else {
                    row->no_noise_why = "no per-frame column for it";
                }
                if (isnan(row->noise[i]) && !row->no_noise_why)
                    row->no_noise_why = "fewer than 2 frames";
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
 * better; a count's noise is a Poisson count's (2 sqrt(n)), an excess in ms has none. False
 * when out of memory. */
static bool add_hitch_rows(struct rows *rows, const struct capture *caps, int cap_count)
{
    for (int i = 0; i < cap_count; i++)
        if (!caps[i].has_hitches)
            return true;
    struct row *row = rows_add(rows, "hitches.count", LOWER_IS_BETTER);
    if (!row)
        return false;
    for (int i = 0; i < cap_count; i++) {
        row->value[i] = caps[i].hitch_count;
        row->present[i] = true;
        row->noise[i] = 2 * sqrt(caps[i].hitch_count > 1 ? caps[i].hitch_count : 1);
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
        /* fps is frames over their summed time, 1000 / the mean frame time: a relative error
         * in the mean is the same relative error in fps (to first order). */
        double mean_ms = 0;
        for (size_t f = 0; f < c->frame_rows; f++)
            mean_ms += c->columns[COLUMN_FRAME][f] / (double)c->frame_rows;
        if (mean_ms > 0)
            row->noise[i] = row->value[i] * mean_noise(c->columns[COLUMN_FRAME],
                                                       c->frame_rows) / mean_ms;
        if (isnan(row->noise[i]))
            row->no_noise_why = "fewer than 2 frames";
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
            if (q < 0)
                row->noise[i] = mean_noise(c->columns[COLUMN_FRAME], c->frame_rows);
            else if (q < 1)
                row->noise[i] = quantile_noise(c->sorted_frame_ms, c->frame_rows, q);
        }
        if (frame_stats[s].quantile >= 1)
            row->no_noise_why = "a maximum has no distribution-free interval";
        else if (frame_stats[s].quantile > 0)
            row->no_noise_why = "too few frames for an order-statistic interval";
        else
            row->no_noise_why = "fewer than 2 frames";
    }
    if (!add_keyed_rows(rows, caps, cap_count, false, err) ||
        !add_keyed_rows(rows, caps, cap_count, true, err))
        return false;
    if (!add_zone_rows(rows, caps, cap_count) || !add_hitch_rows(rows, caps, cap_count))
        goto error_memory;
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

