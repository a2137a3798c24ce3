/* The rows diff and compare print (tools/compare_rows.c): one per summary metric and two per
 * zone (calls per frame, mean ms), keyed by name, and zones by thread name and path, never by
 * position: between two runs the tree changes shape, and a positional key would set one scope
 * against another. Each value comes with its noise. */
#ifndef FSCOPE_TOOLS_COMPARE_ROWS_H
#define FSCOPE_TOOLS_COMPARE_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "capture_files.h"

enum direction { LOWER_IS_BETTER, HIGHER_IS_BETTER, NO_DIRECTION };

/* One line of the comparison, with a value per capture. */
struct row {
    char name[ROW_NAME_LEN];
    const char *thread, *path; /* a zone's key (owned by a capture); NULL for a summary metric */
    enum direction direction;
    bool present[3];
    double value[3];
    /* Half the width of each side's ~95% interval for the value, from the run's own frames
     * (block means: neighbouring frames are not independent); NAN where there is none, and
     * no_noise_why says why. */
    double noise[3];
    const char *no_noise_why;
    /* How much identical runs differ, one standard deviation in the row's unit, per side:
     * what a single run cannot show of the next. 0 where the noise covers it. */
    double run_spread[3];
    /* The least change worth calling, in the row's unit. */
    double least_change;
};

struct rows {
    struct row *items;
    size_t count, capacity;
};

/* The rows of cap_count captures (2 or 3), appended to rows (to free: rows->items). False
 * after one line on err. */
bool rows_build(struct rows *rows, const struct capture *caps, int cap_count, FILE *err);

/* One side's noise with the spread between identical runs added (diff: two single runs). */
double rows_run_noise(const struct row *row, int side);

/* How both tables print. */
const char *rows_direction_name(enum direction direction);
/* What a change beyond the noise or the drift means: better, worse, or for a metric with no
 * direction, higher or lower. */
const char *rows_change_name(enum direction direction, double change);
/* A JSON number, or null for one not finite. */
void rows_print_number(FILE *out, double value);
/* A text table's cell: the value, "-" when not finite, "absent". */
void rows_print_cell(FILE *out, double value, bool present);
/* text as a JSON string; text that is not UTF-8 goes as its printable form. */
void rows_print_json_string(FILE *out, const char *text);
/* Zone rows come in pairs under one heading; returns whether rows[i] starts a new zone. */
bool rows_zone_heading(const struct row *rows, size_t i);
/* A row's JSON key members: {"name", "thread", "path", "direction" (left open). */
void rows_print_key(FILE *out, const struct row *row);

#endif
