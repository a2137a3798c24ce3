/* framescope diff [--format text|json] A B: two captures side by side, per metric and per
 * zone, each difference marked when it exceeds the run-to-run noise: each side's noise from
 * its own frames in blocks (compare_rows.c) with the spread between identical runs added,
 * sqrt(noiseA^2 + noiseB^2), and the least change worth calling. */
#include "diff.h"

#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "commands.h"
#include "compare_rows.h"

struct diff_result {
    double difference, threshold;
    bool has_threshold, exceeds;
};

/* The difference B - A and whether it exceeds both sides' noise added in quadrature and the
 * least change worth calling. */
static struct diff_result diff_row(const struct row *row)
{
    struct diff_result d = { .difference = row->value[1] - row->value[0] };
    d.has_threshold = !isnan(row->noise[0]) && !isnan(row->noise[1]);
    if (d.has_threshold) {
        d.threshold = hypot(rows_run_noise(row, 0), rows_run_noise(row, 1));
        d.exceeds = fabs(d.difference) > d.threshold && fabs(d.difference) > row->least_change;
    }
    return d;
}

static void print_diff_text(FILE *out, const struct rows *rows, const struct capture *caps)
{
    char shown[4 * PATH_MAX];
    fputs("framescope diff\n", out);
    for (int i = 0; i < 2; i++)
        fprintf(out, "  %c  %s: %s, %.0f frames\n", 'A' + i,
                capture_files_shown_path(caps[i].dir, shown, sizeof(shown)), caps[i].app,
                caps[i].frames);
    fputs("  noise: a difference counts when it exceeds sqrt(noiseA^2 + noiseB^2) and half a "
          "percent of the frame\n  (of the frame rate; half a point of a share); a side's noise "
          "is 2 standard errors of frames.csv's\n  one-second blocks (neighbouring frames are "
          "not independent) with the spread between identical\n  runs added (1% of a frame "
          "statistic, 2.2% of p95 and p99, 0.5% of the frame time for a part\n  of it)\n\n", out);
    fprintf(out, "%-24s %12s %12s %12s %12s\n", "metric", "A", "B", "B - A", "noise");
    bool zones_started = false;
    for (size_t i = 0; i < rows->count; i++) {
        const struct row *row = &rows->items[i];
        if (row->thread && !(row->present[0] && row->present[1]))
            continue; /* listed as added or removed below */
        if (rows_zone_heading(rows->items, i)) {
            if (!zones_started)
                fputs("\nzones (thread / path): no noise estimate, zones.csv holds totals, "
                      "not frames\n", out);
            zones_started = true;
            fprintf(out, "%s / %s\n", row->thread, row->path);
        }
        struct diff_result d = diff_row(row);
        fprintf(out, row->thread ? "  %-22s" : "%-24s", row->name);
        rows_print_cell(out, row->value[0], true);
        rows_print_cell(out, row->value[1], true);
        if (isfinite(d.difference))
            fprintf(out, " %+12.4f", d.difference);
        else
            fprintf(out, " %12s", "-");
        if (!d.has_threshold && row->thread)
            fprintf(out, " %12s  no noise estimate\n", "-");
        else if (!d.has_threshold)
            fprintf(out, " %12s  no noise estimate (%s)\n", "-", row->no_noise_why);
        else if (d.exceeds)
            fprintf(out, " %12.4f  beyond noise: %s\n", d.threshold,
                    rows_change_name(row->direction, d.difference));
        else
            fprintf(out, " %12.4f  within noise\n", d.threshold);
    }
    for (int side = 0; side < 2; side++) {
        for (size_t i = 0; i < rows->count; i++) {
            const struct row *row = &rows->items[i];
            if (!rows_zone_heading(rows->items, i) || row->present[0] == row->present[1] ||
                row->present[1] != (side == 0))
                continue;
            const struct row *mean = row + 1;
            int present = row->present[0] ? 0 : 1;
            fprintf(out, "%s in B: %s / %s (calls/frame %.4f, mean_ms %.4f)\n",
                    side == 0 ? "added" : "removed", row->thread, row->path,
                    row->value[present], mean->value[present]);
        }
    }
}

static void print_diff_json(FILE *out, const struct rows *rows, const struct capture *caps)
{
    fputs("{\"schema\": \"framescope-diff-1\", \"a\": ", out);
    rows_print_json_string(out, caps[0].dir);
    fputs(", \"b\": ", out);
    rows_print_json_string(out, caps[1].dir);
    fputs(",\n \"rows\": [", out);
    for (size_t i = 0; i < rows->count; i++) {
        const struct row *row = &rows->items[i];
        fprintf(out, "%s\n  ", i ? "," : "");
        rows_print_key(out, row);
        const char *status = row->present[0] && row->present[1] ? "both"
                             : row->present[1]                   ? "added"
                                                                 : "removed";
        fprintf(out, ", \"status\": \"%s\", \"a\": ", status);
        rows_print_number(out, row->present[0] ? row->value[0] : NAN);
        fputs(", \"b\": ", out);
        rows_print_number(out, row->present[1] ? row->value[1] : NAN);
        struct diff_result d = diff_row(row);
        fputs(", \"difference\": ", out);
        rows_print_number(out, row->present[0] && row->present[1] ? d.difference : NAN);
        fputs(", \"noise\": ", out);
        rows_print_number(out, d.has_threshold ? d.threshold : NAN);
        fputs(", \"least_change\": ", out);
        rows_print_number(out, row->least_change);
        if (d.has_threshold) {
            fprintf(out, ", \"exceeds_noise\": %s", d.exceeds ? "true" : "false");
            fputs(", \"change\": ", out);
            if (d.exceeds)
                fprintf(out, "\"%s\"", rows_change_name(row->direction, d.difference));
            else
                fputs("null", out);
        } else {
            fputs(", \"exceeds_noise\": null, \"change\": null, \"no_noise_why\": ", out);
            rows_print_json_string(out, row->no_noise_why);
        }
        fputs("}", out);
    }
    fputs("\n ]}\n", out);
}

/* diff's table of caps[0] (A) against caps[1] (B) on out. Returns 0, or 2 after one line on
 * err. */
int diff_write(const struct capture caps[2], bool json, FILE *out, FILE *err)
{
    struct rows rows = { 0 };
    int status = 2;
    if (rows_build(&rows, caps, 2, err)) {
        if (json)
            print_diff_json(out, &rows, caps);
        else
            print_diff_text(out, &rows, caps);
        status = 0;
    }
    free(rows.items);
    return status;
}

int cmd_diff(int argc, char **argv)
{
    static const struct option options[] = {
        { "format", required_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    bool json = false;
    int opt;
    opterr = 0; /* one line of ours instead of getopt's and the usage */
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (opt) {
        case 'f':
            if (!cli_parse_format(optarg, &json)) {
                cli_bad_format(optarg);
                return 2;
            }
            break;
        case 'h':
            printf("usage: framescope diff [--format text|json] A B\n");
            return 0;
        default:
            cli_unknown_option(argv[optind - 1]);
            return 2;
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "framescope: diff takes two capture directories, A and B (got %d)\n",
                argc - optind);
        return 2;
    }
    struct capture caps[2];
    if (!capture_files_load(&caps[0], argv[optind]))
        return 2;
    if (!capture_files_load(&caps[1], argv[optind + 1])) {
        capture_files_finish(&caps[0]);
        return 2;
    }
    int status = diff_write(caps, json, stdout, stderr);
    capture_files_finish(&caps[1]);
    capture_files_finish(&caps[0]);
    return status;
}

