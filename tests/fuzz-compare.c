/* libFuzzer harness for what framescope diff and compare read from capture directories that
 * someone else may have written (tests/fuzz_compare.sh builds and runs it with clang-14; a
 * benchmark, not a test): summary.json through jansson and the fields taken from it,
 * frames.csv and zones.csv, then every table printed from what was read.
 *
 * The input is the six files of captures A and B, A's summary.json, frames.csv and zones.csv
 * then B's, separated by the byte 0x1e (ASCII's record separator); a file past the last
 * separator is empty. Whatever the bytes, each file is read or refused with a message, and the
 * tables of what was read are written, without a crash, a leak or undefined behaviour. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

#define FILE_COUNT 6
#define FILE_SEPARATOR 0x1e

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink; /* the tables and messages, unread; opened once */
    if (!sink && !(sink = fopen("/dev/null", "w")))
        return 0;
    char *texts[FILE_COUNT] = { 0 };
    size_t lens[FILE_COUNT];
    const uint8_t *p = data, *end = data + size;
    for (int i = 0; i < FILE_COUNT; i++) {
        const uint8_t *stop = i < FILE_COUNT - 1 ? memchr(p, FILE_SEPARATOR, (size_t)(end - p))
                                                 : NULL;
        if (!stop)
            stop = end;
        lens[i] = (size_t)(stop - p);
        /* Each file its own allocation, so that reading past one is caught; the byte after
         * it is writable as compare_texts asks, and not a NUL, so that nothing relies on one
         * being there. */
        texts[i] = malloc(lens[i] + 1);
        if (!texts[i])
            goto out;
        memcpy(texts[i], p, lens[i]);
        texts[i][lens[i]] = 'x';
        p = stop < end ? stop + 1 : end;
    }
    struct compare_capture_text captures[2] = {
        { .summary_json = texts[0], .frames_csv = texts[1], .zones_csv = texts[2],
          .summary_json_len = lens[0], .frames_csv_len = lens[1], .zones_csv_len = lens[2] },
        { .summary_json = texts[3], .frames_csv = texts[4], .zones_csv = texts[5],
          .summary_json_len = lens[3], .frames_csv_len = lens[4], .zones_csv_len = lens[5] },
    };
    compare_texts(captures, sink, sink);
out:
    for (int i = 0; i < FILE_COUNT; i++)
        free(texts[i]);
    return 0;
}
