/* framescope compare [OPTIONS] -- COMMAND [ARGS...]: runs COMMAND three times under run, A1
 * with --a's variables, X with --b's, A2 with --a's again, and weighs X against A beyond the
 * drift |A1 - A2|. Also compare_texts() (compare.h), both tables from captures given as text.
 * The captures are read by capture_files.c and set side by side by compare_rows.c. */
#include "compare.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture_files.h"
#include "child.h"
#include "cli.h"
#include "commands.h"
#include "compare_rows.h"
#include "diff.h"
#include "util/config.h"

extern char **environ;

/* A configuration's environment changes: at most this many, a bound that only exists so the
 * changes fit one array; a comparison varies one or two. */
#define MAX_ENV_CHANGES 64

struct variant {
    const char *text; /* as given, for the report */
    char *storage;    /* a copy of text, cut into the assignments */
    char *assignments[MAX_ENV_CHANGES];
    size_t count;
};

/* Parses 'VAR=VALUE ...' (whitespace between assignments; a value holds no whitespace).
 * False after one line on stderr. */
static bool variant_parse(struct variant *v, const char *flag, const char *text)
{
    char shown[FSCOPE_ESCAPE_SIZE];
    free(v->storage);
    *v = (struct variant){ .text = text, .storage = strdup(text) };
    if (!v->storage) {
        fprintf(stderr, "framescope: out of memory\n");
        return false;
    }
    char *save = NULL;
    for (char *word = strtok_r(v->storage, " \t\n", &save); word;
         word = strtok_r(NULL, " \t\n", &save)) {
        char *equals = strchr(word, '=');
        bool valid = equals && equals > word && !(*word >= '0' && *word <= '9');
        for (char *c = word; valid && c < equals; c++)
            valid = *c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
                    (*c >= '0' && *c <= '9');
        if (!valid) {
            fprintf(stderr, "framescope: %s takes 'VAR=VALUE ...' with VAR a variable name "
                    "(got '%s')\n", flag, fscope_config_escape(word, shown, sizeof(shown)));
            return false;
        }
        size_t name_len = (size_t)(equals - word);
        if ((name_len == 17 && strncmp(word, "FRAMESCOPE_OUTPUT", 17) == 0) ||
            (name_len == 23 && strncmp(word, "FRAMESCOPE_RECORDING_FD", 23) == 0)) {
            fprintf(stderr, "framescope: %s: compare sets %.*s for each run itself\n", flag,
                    (int)name_len, word);
            return false;
        }
        if (v->count == MAX_ENV_CHANGES) {
            fprintf(stderr, "framescope: %s: more than %d variables\n", flag, MAX_ENV_CHANGES);
            return false;
        }
        v->assignments[v->count++] = word;
    }
    return true;
}

/* environ with the variant's assignments in place of the same names. Free the array only. */
static char **variant_environment(const struct variant *v)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = malloc((n + v->count + 1) * sizeof(*env));
    if (!env)
        return NULL;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        bool replaced = false;
        for (size_t a = 0; a < v->count && !replaced; a++) {
            size_t name_len = (size_t)(strchr(v->assignments[a], '=') - v->assignments[a]) + 1;
            replaced = strncmp(environ[i], v->assignments[a], name_len) == 0;
        }
        if (!replaced)
            env[kept++] = environ[i];
    }
    for (size_t a = 0; a < v->count; a++)
        env[kept++] = v->assignments[a];
    env[kept] = NULL;
    return env;
}

/* Whether posix_spawnp can find name: a path, or a file in $PATH that we may execute. */
static bool command_found(const char *name)
{
    if (strchr(name, '/'))
        return access(name, X_OK) == 0;
    const char *search = getenv("PATH");
    if (!search || !*search)
        search = "/usr/local/bin:/usr/bin:/bin";
    while (*search) {
        size_t len = strcspn(search, ":");
        char candidate[PATH_MAX];
        if (snprintf(candidate, sizeof(candidate), "%.*s/%s", (int)len, len ? search : ".",
                     name) < (int)sizeof(candidate) &&
            access(candidate, X_OK) == 0)
            return true;
        search += len + (search[len] == ':');
    }
    return false;
}

/* The comparison's directory: a new one (its parent must exist) or one of ours that only we
 * can write, holding no earlier A1, X or A2 (run checks each of those as it does any --output).
 * False after one line on stderr. */
static bool make_output_dir(const char *dir)
{
    char shown[4 * PATH_MAX];
    if (strlen(dir) + sizeof("/A1") > PATH_MAX) {
        fprintf(stderr, "framescope: --output %s: the path is too long\n",
                capture_files_shown_path(dir, shown, sizeof(shown)));
        return false;
    }
    if (mkdir(dir, 0755) == 0)
        return true;
    const char *why = strerror(errno);
    struct stat st;
    if (errno == EEXIST) {
        why = lstat(dir, &st) != 0       ? strerror(errno)
              : !S_ISDIR(st.st_mode)     ? "it exists and is not a directory"
              : st.st_uid != geteuid()   ? "it is owned by another user"
              : st.st_mode & (S_IWGRP | S_IWOTH) ? "others can write to it"
                                                 : NULL;
        if (!why) {
            char probe[PATH_MAX];
            const char *const runs[] = { "A1", "X", "A2" };
            for (int i = 0; i < 3 && !why; i++) {
                snprintf(probe, sizeof(probe), "%s/%s", dir, runs[i]);
                if (lstat(probe, &st) == 0)
                    why = "it already holds a comparison (A1, X or A2)";
            }
        }
        if (!why)
            return true;
    }
    fprintf(stderr, "framescope: --output %s: %s\n",
            capture_files_shown_path(dir, shown, sizeof(shown)), why);
    return false;
}

/* The drift rule (an A1/X/A2 bracket): X - mean(A1, A2) supports a directional claim only
 * when it is larger than the drift |A1 - A2| between the two controls, than the runs' own
 * spread (each run's noise from its frames, compare_rows.c: a drift of zero between two
 * runs of a noisy value proves nothing), and than the least change worth calling (a fence
 * wait of 0.0003 ms in all three runs is no change, whatever the drift). Without the runs'
 * own spread (a maximum, a zone's totals) no claim is made: with A and B the same, X's GPU
 * submissions here took 57% longer than both A runs', which agreed within 9%. */
struct drift_result {
    double drift, change, noise;
    const char *verdict;
};

static struct drift_result drift_row(const struct row *row)
{
    struct drift_result d = { .drift = fabs(row->value[0] - row->value[2]),
                              .change = row->value[1] - (row->value[0] + row->value[2]) / 2 };
    /* The noise of X - (A1 + A2) / 2 from the three runs' own. */
    d.noise = sqrt(row->noise[1] * row->noise[1] +
                   (row->noise[0] * row->noise[0] + row->noise[2] * row->noise[2]) / 4);
    if (!isfinite(d.drift) || !isfinite(d.change))
        d.verdict = "no value";
    else if (fabs(d.change) > d.drift && fabs(d.change) > d.noise &&
             fabs(d.change) > row->least_change)
        d.verdict = rows_change_name(row->direction, d.change);
    else
        d.verdict = "inconclusive";
    return d;
}

static const char *const run_names[3] = { "A1", "X", "A2" };

/* A configuration as the report names it: its environment changes as given. */
static const char *setting_name(const char *setting)
{
    return *setting ? setting : "(environment unchanged)";
}

static void print_compare_text(FILE *out, const struct rows *rows, const struct capture *caps,
                               const char *a_setting, const char *b_setting)
{
    char shown[4 * PATH_MAX];
    fputs("framescope compare: A1, X, A2 in turn\n", out);
    for (int i = 0; i < 3; i++)
        fprintf(out, "  %-2s  %s: %s %s, %.0f frames\n", run_names[i],
                capture_files_shown_path(caps[i].dir, shown, sizeof(shown)), i == 1 ? "B" : "A",
                setting_name(i == 1 ? b_setting : a_setting), caps[i].frames);
    fputs("  drift = |A1 - A2|; noise = the runs' own spread (2 standard errors of frames.csv's "
          "one-second\n  blocks); X is better or worse (higher or lower) only when |X - "
          "mean(A1, A2)| exceeds the drift,\n  the noise and half a percent of the frame (of the "
          "frame rate; half a point of a share),\n  else inconclusive, as it is where there is "
          "no noise (a maximum, zones)\n\n", out);
    fprintf(out, "%-24s %12s %12s %12s %12s %12s %12s  %s\n", "metric", "A1", "X", "A2",
            "drift", "noise", "X - mean(A)", "verdict");
    bool zones_started = false;
    for (size_t i = 0; i < rows->count; i++) {
        const struct row *row = &rows->items[i];
        if (row->thread && !(row->present[0] && row->present[1] && row->present[2]))
            continue;
        if (rows_zone_heading(rows->items, i)) {
            if (!zones_started)
                fputs("\nzones (thread / path)\n", out);
            zones_started = true;
            fprintf(out, "%s / %s\n", row->thread, row->path);
        }
        struct drift_result d = drift_row(row);
        fprintf(out, row->thread ? "  %-22s" : "%-24s", row->name);
        for (int r = 0; r < 3; r++)
            rows_print_cell(out, row->value[r], true);
        rows_print_cell(out, d.drift, true);
        rows_print_cell(out, d.noise, true);
        if (isfinite(d.change))
            fprintf(out, " %+12.4f", d.change);
        else
            fprintf(out, " %12s", "-");
        fprintf(out, "  %s\n", d.verdict);
    }
    for (size_t i = 0; i < rows->count; i++) {
        const struct row *row = &rows->items[i];
        if (!rows_zone_heading(rows->items, i) || (row->present[0] && row->present[1] &&
                                              row->present[2]))
            continue;
        fprintf(out, "not in every run: %s / %s (in%s%s%s)\n", row->thread, row->path,
                row->present[0] ? " A1" : "", row->present[1] ? " X" : "",
                row->present[2] ? " A2" : "");
    }
}

static void print_compare_json(FILE *out, const struct rows *rows, const struct capture *caps,
                               const char *a_setting, const char *b_setting)
{
    fputs("{\"schema\": \"framescope-compare-1\", \"a\": ", out);
    rows_print_json_string(out, a_setting);
    fputs(", \"b\": ", out);
    rows_print_json_string(out, b_setting);
    fputs(", \"runs\": {", out);
    for (int i = 0; i < 3; i++) {
        fprintf(out, "%s\"%s\": ", i ? ", " : "", run_names[i]);
        rows_print_json_string(out, caps[i].dir);
    }
    fputs("},\n \"rows\": [", out);
    for (size_t i = 0; i < rows->count; i++) {
        const struct row *row = &rows->items[i];
        fprintf(out, "%s\n  ", i ? "," : "");
        rows_print_key(out, row);
        for (int r = 0; r < 3; r++) {
            fprintf(out, ", \"%s\": ", r == 0 ? "a1" : r == 1 ? "x" : "a2");
            rows_print_number(out, row->present[r] ? row->value[r] : NAN);
        }
        if (row->present[0] && row->present[1] && row->present[2]) {
            struct drift_result d = drift_row(row);
            fputs(", \"drift\": ", out);
            rows_print_number(out, d.drift);
            fputs(", \"noise\": ", out);
            rows_print_number(out, d.noise);
            fputs(", \"least_change\": ", out);
            rows_print_number(out, row->least_change);
            fputs(", \"x_minus_mean_a\": ", out);
            rows_print_number(out, d.change);
            fprintf(out, ", \"verdict\": \"%s\"}", d.verdict);
        } else {
            fputs(", \"drift\": null, \"noise\": null, \"least_change\": null, "
                  "\"x_minus_mean_a\": null, \"verdict\": \"not in every run\"}", out);
        }
    }
    fputs("\n ]}\n", out);
}

/* compare's table of caps (A1, X, A2) on out; a_setting and b_setting are the environment
 * changes of A and B as given. Returns 0, or 1 after one line on err. */
static int write_compare(const struct capture caps[3], const char *a_setting,
                         const char *b_setting, bool json, FILE *out, FILE *err)
{
    struct rows rows = { 0 };
    int status = 1;
    if (rows_build(&rows, caps, 3, err)) {
        if (json)
            print_compare_json(out, &rows, caps, a_setting, b_setting);
        else
            print_compare_text(out, &rows, caps, a_setting, b_setting);
        status = 0;
    }
    free(rows.items);
    return status;
}

static const char compare_usage[] =
    "usage: framescope compare [--runs-frames N] [--a 'VAR=VALUE ...'] [--b 'VAR=VALUE ...']\n"
    "                          [-o DIR] [--format text|json] -- COMMAND [ARGS...]\n";

int cmd_compare(int argc, char **argv)
{
    enum { OPT_RUNS_FRAMES = 256, OPT_A, OPT_B, OPT_FORMAT };
    static const struct option options[] = {
        { "runs-frames", required_argument, NULL, OPT_RUNS_FRAMES },
        { "a", required_argument, NULL, OPT_A },
        { "b", required_argument, NULL, OPT_B },
        { "output", required_argument, NULL, 'o' },
        { "format", required_argument, NULL, OPT_FORMAT },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct variant a = { .text = "" }, b = { .text = "" };
    const char *output = NULL;
    long runs_frames = 1;
    bool json = false;
    int status = 2, opt;
    char shown[FSCOPE_ESCAPE_SIZE];
    opterr = 0; /* one line of ours instead of getopt's and the usage */
    /* '+': the command's own options stay its own. */
    while ((opt = getopt_long(argc, argv, "+o:h", options, NULL)) != -1) {
        switch (opt) {
        case OPT_RUNS_FRAMES:
            if (!fscope_config_parse_long(optarg, 1, 1000000000, &runs_frames)) {
                fprintf(stderr, "framescope: --runs-frames takes a frame count in "
                        "1..1000000000 (got '%s')\n",
                        fscope_config_escape(optarg, shown, sizeof(shown)));
                goto out;
            }
            break;
        case OPT_A:
        case OPT_B:
            if (!variant_parse(opt == OPT_A ? &a : &b, opt == OPT_A ? "--a" : "--b", optarg))
                goto out;
            break;
        case 'o':
            if (!*optarg) {
                fprintf(stderr, "framescope: --output needs a directory\n");
                goto out;
            }
            output = optarg;
            break;
        case OPT_FORMAT:
            if (!cli_parse_format(optarg, &json)) {
                cli_bad_format(optarg);
                goto out;
            }
            break;
        case 'h':
            fputs(compare_usage, stdout);
            status = 0;
            goto out;
        default:
            cli_unknown_option(argv[optind - 1]);
            goto out;
        }
    }
    char **command = argv + optind;
    int command_count = argc - optind;
    if (command_count > 0 && !command_found(command[0])) {
        fprintf(stderr, "framescope: cannot find the command %s\n",
                fscope_config_escape(command[0], shown, sizeof(shown)));
        goto out;
    }
    char default_output[64], self[PATH_MAX];
    if (!output) {
        char stamp[32];
        time_t now = time(NULL);
        strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&now));
        snprintf(default_output, sizeof(default_output), "framescope-compare-%s", stamp);
        output = default_output;
    }
    ssize_t self_len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (self_len <= 0) {
        fprintf(stderr, "framescope: cannot find this program (/proc/self/exe): %s\n",
                strerror(errno));
        status = 1;
        goto out;
    }
    self[self_len] = '\0';
    if (!make_output_dir(output))
        goto out;

    /* Caught before the first run, so that a signal between runs stops the next one. A
     * terminal's (si_code SI_KERNEL) already reached the run through the process group; one
     * sent to us alone is passed on (tools/child.c). */
    if (child_catch_stop_signals() != 0) {
        fprintf(stderr, "framescope: cannot catch signals: %s\n", strerror(errno));
        status = 1;
        goto out;
    }
    const struct variant *variants[3] = { &a, &b, &a };
    static char run_dirs[3][PATH_MAX];
    struct capture caps[3] = { 0 };
    int loaded = 0;
    status = 1;
    for (int i = 0; i < 3; i++) {
        snprintf(run_dirs[i], sizeof(run_dirs[i]), "%s/%s", output, run_names[i]);
        /* The run's summary is in its summary.json; three on stderr would bury the answer. */
        char *fixed[] = { self, "run", "--summary", "off", "--output", run_dirs[i], "--" };
        size_t fixed_count = sizeof(fixed) / sizeof(fixed[0]);
        char **run_argv = calloc(fixed_count + (size_t)command_count + 1, sizeof(char *));
        char **env = variant_environment(variants[i]);
        if (!run_argv || !env) {
            free(run_argv);
            free(env);
            fprintf(stderr, "framescope: out of memory\n");
            goto out_captures;
        }
        memcpy(run_argv, fixed, sizeof(fixed));
        memcpy(run_argv + fixed_count, command, (size_t)command_count * sizeof(char *));
        fprintf(stderr, "framescope: compare: run %s (%d of 3), %s %s\n", run_names[i], i + 1,
                i == 1 ? "B" : "A", setting_name(variants[i]->text));
        int run_signal;
        bool ran;
        int run_status = child_run(run_argv, env, &run_signal, &ran);
        free(run_argv);
        free(env);
        if (child_stop_signal) {
            fprintf(stderr, "framescope: compare stopped by %s during run %s\n",
                    strsignal(child_stop_signal), run_names[i]);
            status = 128 + child_stop_signal;
            goto out_captures;
        }
        if (run_status != 0) {
            fprintf(stderr, "framescope: compare: run %s ended with status %d; no comparison\n",
                    run_names[i], run_status);
            goto out_captures;
        }
    }
    for (; loaded < 3; loaded++)
        if (!capture_files_load(&caps[loaded], run_dirs[loaded]))
            goto out_captures;
    for (int i = 0; i < 3; i++) {
        if (caps[i].frames < (double)runs_frames) {
            fprintf(stderr, "framescope: compare: run %s recorded %.0f frames, fewer than "
                    "--runs-frames %ld\n", run_names[i], caps[i].frames, runs_frames);
            goto out_captures;
        }
    }
    status = write_compare(caps, a.text, b.text, json, stdout, stderr);
out_captures:
    for (int i = loaded - 1; i >= 0; i--)
        capture_files_finish(&caps[i]);
out:
    free(a.storage);
    free(b.storage);
    return status;
}

/* ---- captures given as text ---- */

int compare_texts(struct compare_capture_text captures[2], FILE *out, FILE *err)
{
    static const char *const names[2] = { "A", "B" };
    struct capture caps[2];
    char error[ERROR_LEN];
    int loaded, status = 2;
    for (loaded = 0; loaded < 2; loaded++) {
        struct compare_capture_text *text = &captures[loaded];
        char *const texts[CAPTURE_FILE_COUNT] = { text->summary_json, text->frames_csv,
                                                  text->zones_csv };
        const size_t lens[CAPTURE_FILE_COUNT] = { text->summary_json_len, text->frames_csv_len,
                                                  text->zones_csv_len };
        caps[loaded] = (struct capture){ .dir = names[loaded] };
        for (int f = 0; f < CAPTURE_FILE_COUNT; f++) {
            if (!capture_files_parse(&caps[loaded], (enum capture_file)f, texts[f], lens[f], error,
                               sizeof(error))) {
                fprintf(err, "framescope: %s/%s: %s\n", names[loaded], capture_file_names[f],
                        error);
                capture_files_finish(&caps[loaded]);
                goto out;
            }
        }
    }
    /* A as A1 and A2 of a comparison: copies that share A's memory, never finished. */
    const struct capture runs[3] = { caps[0], caps[1], caps[0] };
    status = 0;
    for (int json = 0; json < 2; json++)
        if (diff_write(caps, json, out, err) != 0 ||
            write_compare(runs, "A=1", "", json, out, err) != 0)
            status = 2;
out:
    while (loaded-- > 0)
        capture_files_finish(&caps[loaded]);
    return status;
}
