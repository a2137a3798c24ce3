/* What framescope diff and compare read, as tests/fuzz-compare.c drives it: captures side by
 * side, each difference weighed against the run-to-run noise (diff) or against the drift of a
 * bracketing A/X/A (compare). The subcommands themselves: tools/commands.h. */
#ifndef FSCOPE_TOOLS_COMPARE_H
#define FSCOPE_TOOLS_COMPARE_H

#include <stddef.h>
#include <stdio.h>

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
