/* libFuzzer harness for the recording reader and everything analysis does with what it read
 * (tests/fuzz_recording.sh builds and runs it with clang-14; a benchmark, not a test).
 * Whatever the bytes, reading returns an error or a recording, and every report format of a
 * recording read is written without a crash, a leak or undefined behaviour. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/recording.h"
#include "analysis/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The arena is aligned as mmap aligns it; a reader is handed it that way. */
    size_t padded = (size + REC_ALIGN - 1) / REC_ALIGN * REC_ALIGN;
    void *bytes = aligned_alloc(REC_ALIGN, padded ? padded : REC_ALIGN);
    if (!bytes)
        return 0;
    memcpy(bytes, data, size);
    struct recording *rec = NULL;
    char why[256];
    if (recording_read(bytes, size, &rec, why, sizeof(why)) == 0) {
        struct report *report = report_create(rec);
        FILE *sink = fopen("/dev/null", "w");
        for (unsigned f = 0; report && sink && f < REPORT_FORMAT_COUNT; f++)
            report_write(sink, report, (enum report_format)f);
        if (sink)
            fclose(sink);
        report_destroy(report);
        recording_free(rec);
    }
    free(bytes);
    return 0;
}
