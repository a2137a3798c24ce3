/* framescope diff and framescope compare: captures side by side, each difference weighed
 * against the run-to-run noise (diff) or against the drift of a bracketing A/X/A (compare). */
#ifndef FSCOPE_TOOLS_COMPARE_H
#define FSCOPE_TOOLS_COMPARE_H

#include <stddef.h>
#include <stdio.h>

/* framescope diff [--format text|json] A B. argv[0] is "diff". Returns the exit status: 0, or
 * 2 after one line on stderr for a bad argument, directory or file. */
int cmd_diff(int argc, char **argv);

/* framescope compare [OPTIONS] -- COMMAND [ARGS...]. argv[0] is "compare". Runs COMMAND as
 * A1, X, A2 through this binary's `run` and returns the exit status: 0, 2 for a usage error
 * (nothing run), 1 when a run or its capture failed, 128+N when stopped by signal N. */
int cmd_compare(int argc, char **argv);

/* The files of a capture that diff and compare read, as text. Each holds its len bytes and one
 * writable byte after them: the CSV files are decoded in place, each field ended by a NUL. */
struct compare_capture_text {
    char *summary_json, *frames_csv, *zones_csv;
    size_t summary_json_len, frames_csv_len, zones_csv_len;
};

/* Reads captures A and B from their files' text as diff and compare read them from a capture
 * directory, and writes diff's table (A, B) and compare's (A, B, A), text then JSON, to out:
 * what tests/fuzz-compare.c drives. The texts are changed. Returns 0, or 2 after a line on err
 * for each capture or comparison refused (naming the file, "A/summary.json", and the fault). */
int compare_texts(struct compare_capture_text captures[2], FILE *out, FILE *err);

#endif
