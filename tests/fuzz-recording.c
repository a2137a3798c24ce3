/* libFuzzer harness for the recording reader and everything analysis does with what it read
 * (tests/fuzz_recording.sh builds and runs it with clang-14; a benchmark, not a test): the
 * path of `framescope report`. Whatever the bytes, reading returns an error or a recording,
 * and every report format of a recording read is written without a crash, a leak or undefined
 * behaviour, and no bigger than a small multiple of the recording (it is counted).
 *
 * The input is a recording file with its zeros as counts (tests/fuzz-arena.h): an arena, or
 * a packed recording (a capture's since format 10: its header says so), which goes through
 * recording_read_fd as report reads a capture (from a memfd): recording_unpack, the decoder
 * of its compact ranges, then its frames' chunks read from the file itself. `fuzz-recording --encode
 * RECORDING SEED` writes a recording that way for a seed (`--encode-arena` its arena,
 * unpacked), and `fuzz-recording --check SEED` says whether it is read. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analysis/recording.h"
#include "analysis/report.h"
#include "fuzz-arena.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Counts what a report writes, and writes nothing. */
static ssize_t count_write(void *cookie, const char *buf, size_t size)
{
    (void)buf;
    *(size_t *)cookie += size;
    return (ssize_t)size;
}

/* One input through report's path. Returns whether it read; why says why not. */
static bool run(const uint8_t *data, size_t size, char *why, size_t why_len)
{
    static struct fuzz_arena arena;
    snprintf(why, why_len, "out of memory");
    if (!fuzz_arena_decode(&arena, data, size))
        return false;
    const unsigned char *bytes = arena.bytes;
    size_t len = arena.len;
    struct recording *rec = NULL;
    bool read;
    if (len >= sizeof(struct rec_header) &&
        ((const struct rec_header *)bytes)->layout == REC_LAYOUT_PACKED) {
        /* What the reader may unpack is bounded by the file (recording_unpack); an input
         * that claims more than FUZZ_ARENA_MAX is a bigger recording, not another path. */
        uint64_t used = atomic_load(&((const struct rec_header *)bytes)->used);
        if (used > FUZZ_ARENA_MAX) {
            snprintf(why, why_len, "more than the fuzzer unpacks");
            return false;
        }
        static int fd = -1;
        if (fd < 0)
            fd = memfd_create("fuzz-recording", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, bytes, len, 0) != (ssize_t)len) {
            snprintf(why, why_len, "no memfd for the file");
            return false;
        }
        read = recording_read_fd(fd, &rec, why, why_len) == 0;
        /* Reports are bounded by the arena the file unpacks to, as an arena's by its own. */
        len = used > len ? (size_t)used : len;
    } else {
        read = recording_read(bytes, len, &rec, why, why_len) == 0;
    }
    if (read) {
        struct report *report = report_create(rec);
        size_t written = 0;
        FILE *sink = fopencookie(&written, "w", (cookie_io_functions_t){ .write = count_write });
        for (unsigned f = 0; report && sink && f < REPORT_FORMAT_COUNT; f++)
            report_write(sink, report, (enum report_format)f);
        if (sink)
            fclose(sink);
        /* Each format is a bounded multiple of what it was read from: a line per frame,
         * event, sample or zone, names cut at their fields' sizes, and a recording of len
         * bytes reads into at most len bytes of them. The largest multiple is a zone's: a
         * 64-byte node, a zones.csv line of up to ~670 bytes (a 255-byte path, quotes
         * doubled), and that line again in report.html, each byte escaped to at most 6: ~73
         * bytes out per byte in. A reader that copies something twice goes far beyond. */
        if (written > 128 * (size_t)len + (1u << 20)) {
            fprintf(stderr, "%zu bytes of reports from a recording of %zu bytes\n", written, len);
            abort();
        }
        report_destroy(report);
        recording_free(rec);
    }
    return read;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[256];
    run(data, size, why, sizeof(why));
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    if (*argc == 4 && (strcmp((*argv)[1], "--encode") == 0 ||
                       strcmp((*argv)[1], "--encode-arena") == 0)) {
        size_t len;
        unsigned char *bytes = strcmp((*argv)[1], "--encode") == 0
                                   ? fuzz_file_read((*argv)[2], &len)
                                   : fuzz_recording_arena((*argv)[2], &len);
        FILE *out = fopen((*argv)[3], "wb");
        if (!bytes || !out)
            exit(1);
        fuzz_arena_encode(bytes, len, out);
        exit(fclose(out) == 0 ? 0 : 1);
    }
    /* --check SEED: the seed is read (else the fuzzer would start from a refusal). */
    if (*argc == 3 && strcmp((*argv)[1], "--check") == 0) {
        size_t len;
        uint8_t *seed = fuzz_file_read((*argv)[2], &len);
        char why[256];
        bool read = seed && run(seed, len, why, sizeof(why));
        if (!read)
            fprintf(stderr, "the seed is not read: %s\n", seed ? why : "unreadable");
        exit(read ? 0 : 1);
    }
    return 0;
}
