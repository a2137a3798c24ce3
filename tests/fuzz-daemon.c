/* libFuzzer harness for the path framescoped (tools/framescoped.c) takes with a recording a
 * client hands it (tests/fuzz_daemon.sh builds and runs it with clang-14; a benchmark, not a
 * test). The input is the client's memfd and its stream file; the harness calls the library
 * functions the daemon calls, in its order, on memfds made of them:
 *   registration  the checks of recording_plausible (its size, magic, version, sizes)
 *   top           map_recording (shared, read-only) -> recording_read ->
 *                 recording_compute_gpu_busy -> live_stats_compute (reply_list)
 *   exit, snapshot map_recording (private, writable) -> recording_read_ended (the stream file
 *                 read back) -> recording_keep_recent (a snapshot's last_ms) -> report_create
 *                 -> report_write_capture -> live_stats_compute (write_capture)
 * Whatever the bytes, each step returns an error or a result, without a crash, a leak or
 * undefined behaviour, and a capture's files are a small multiple of what they came from.
 *
 *   input := u32 recording_len, u32 last_ms, recording (recording_len bytes), stream file
 * each of the two an arena with its zeros as counts (tests/fuzz-arena.h).
 * `fuzz-daemon --seed RECORDING SEED` writes a seed from a capture's recording: the first chunk
 * of each of its arrays moved to the stream file (marked streamed, zeros left in the arena),
 * encoded as a range (record/format.h, util/compact.h) as the app's stream thread does with
 * sealed chunks: the stream file's decoder is on the path. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/live.h"
#include "analysis/recording.h"
#include "analysis/report.h"
#include "fuzz-arena.h"
#include "util/compact.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The most an input may claim its arena uses (the seed's is 2.7 MB). */
#define FUZZ_USED_MAX (64u << 20)

static char work_dir[64];

/* The stream file of a seed: ranges, back to back. */
struct stream_seed {
    unsigned char *bytes;
    size_t len;
};

/* Moves the first chunk of a (trusted: the seed's) array to the stream file. */
static void stream_first_chunk(unsigned char *arena, struct stream_seed *stream, size_t len,
                               struct chunked *a, struct rec_header *h)
{
    uint64_t table = atomic_load(&a->table_offset);
    uint64_t bytes = (uint64_t)a->chunk_items * a->item_size;
    uint64_t chunk;
    if (!atomic_load(&a->count) || !table || table + 8 > len)
        return;
    memcpy(&chunk, arena + table, 8);
    if (!chunk || chunk + bytes > len)
        return;
    struct compact_coder *coder = compact_coder_create();
    size_t room = sizeof(struct rec_range) + compact_bound(bytes) + 8;
    unsigned char *grown = realloc(stream->bytes, stream->len + room);
    if (!coder || !grown)
        exit(1);
    stream->bytes = grown;
    unsigned char *at = grown + stream->len;
    uint32_t encoding;
    ssize_t stored = compact_encode(coder, arena + chunk, bytes, a->item_size,
                                    at + sizeof(struct rec_range), compact_bound(bytes), &encoding);
    compact_coder_destroy(coder);
    if (stored < 0)
        exit(1);
    struct rec_range range = { .encoding = encoding, .offset = chunk, .raw_bytes = bytes,
                               .stored_bytes = (uint64_t)stored,
                               .item_size = encoding == COMPACT_ITEMS ? a->item_size : 0 };
    memcpy(range.magic, REC_RANGE_MAGIC, sizeof(range.magic));
    memcpy(at, &range, sizeof(range));
    size_t padded = ((size_t)stored + 7) / 8 * 8;
    memset(at + sizeof(range) + stored, 0, padded - (size_t)stored);
    stream->len += sizeof(range) + padded;
    memset(arena + chunk, 0, bytes);
    atomic_store(&a->streamed_chunks, 1);
    atomic_fetch_add(&h->streamed_bytes, bytes);
    atomic_fetch_add(&h->streamed_stored_bytes, sizeof(range) + padded);
}

static void write_seed(const char *recording, const char *seed)
{
    size_t len;
    unsigned char *arena = fuzz_recording_arena(recording, &len);
    struct stream_seed stream = { 0 };
    FILE *out = fopen(seed, "wb");
    if (!arena || !out || len < sizeof(struct rec_header))
        exit(1);
    struct rec_header *h = (struct rec_header *)arena;
    uint32_t entries = atomic_load(&h->dir_count);
    for (uint32_t i = 0; i < entries && i < REC_DIR_ENTRIES; i++) {
        void *object = arena + h->dir[i].offset;
        if (h->dir[i].offset + h->dir[i].size > len)
            continue;
        switch (atomic_load(&h->dir[i].type)) {
        case REC_OBJ_FRAME_LOG:
            stream_first_chunk(arena, &stream, len, &((struct rec_frame_log *)object)->frames, h);
            break;
        case REC_OBJ_SPAN_LOG:
            stream_first_chunk(arena, &stream, len, &((struct rec_span_log *)object)->spans, h);
            break;
        case REC_OBJ_KERNEL:
            stream_first_chunk(arena, &stream, len, &((struct rec_kernel *)object)->samples, h);
            break;
        default:
            break;
        }
    }
    /* The recording's segments, then the stream file's. */
    char *encoded = NULL;
    size_t encoded_len = 0;
    FILE *part = open_memstream(&encoded, &encoded_len);
    if (!part)
        exit(1);
    fuzz_arena_encode(arena, len, part);
    fclose(part);
    uint32_t prefix[2] = { (uint32_t)encoded_len, 500 /* last_ms of a snapshot */ };
    fwrite(prefix, sizeof(prefix), 1, out);
    fwrite(encoded, 1, encoded_len, out);
    fuzz_arena_encode(stream.bytes, stream.len, out);
    exit(fclose(out) == 0 ? 0 : 1);
}

/* A memfd holding bytes, its size size (at least len: a sparse tail). Pages of zeros are
 * left holes, as in an app's arena. -1 on failure. */
static int memfd_of(const char *name, const unsigned char *bytes, size_t len, uint64_t size)
{
    static const unsigned char zeros[4096];
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0)
        goto error;
    for (size_t at = 0; at < len; at += sizeof(zeros)) {
        size_t n = len - at < sizeof(zeros) ? len - at : sizeof(zeros);
        if (memcmp(bytes + at, zeros, n) != 0 && pwrite(fd, bytes + at, n, (off_t)at) != (ssize_t)n)
            goto error;
    }
    return fd;
error:
    if (fd >= 0)
        close(fd);
    return -1;
}

/* recording_plausible's checks, as the daemon makes them of a registration's memfd. */
static bool plausible(int fd)
{
    struct stat st;
    struct rec_header h;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size < sizeof(struct rec_header) || (uint64_t)st.st_size > REC_ARENA_SIZE)
        return false;
    return pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
           memcmp(h.magic, REC_MAGIC, 8) == 0 && h.version == REC_VERSION &&
           h.header_size == sizeof(h) && h.size == (uint64_t)st.st_size &&
           atomic_load(&h.used) <= h.size;
}

struct mapped {
    void *bytes;
    size_t len, map_len;
};

/* map_recording's mapping and checks. */
static bool map_recording(int fd, bool writable, struct mapped *m)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return false;
    m->map_len = (size_t)st.st_size;
    m->bytes = mmap(NULL, m->map_len, PROT_READ | (writable ? PROT_WRITE : 0),
                    (writable ? MAP_PRIVATE : MAP_SHARED) | MAP_NORESERVE, fd, 0);
    if (m->bytes == MAP_FAILED)
        return false;
    uint64_t used = atomic_load(&((const struct rec_header *)m->bytes)->used);
    if (used < sizeof(struct rec_header) || used > m->map_len) {
        munmap(m->bytes, m->map_len);
        return false;
    }
    m->len = (size_t)used;
    return true;
}

/* reply_list's reading of one app. */
static void top(int fd)
{
    struct mapped m;
    if (!map_recording(fd, false, &m))
        return;
    struct recording *rec = NULL;
    char why[256];
    int e = recording_read(m.bytes, m.len, &rec, why, sizeof(why));
    munmap(m.bytes, m.map_len);
    if (e)
        return;
    recording_compute_gpu_busy(rec);
    struct live_stats s;
    live_stats_compute(rec, 1.0, &s);
    recording_free(rec);
}

/* The bytes of the capture's files but the recording's own, and the capture removed. */
static uint64_t capture_remove(const char *path)
{
    uint64_t bytes = 0;
    DIR *dir = opendir(path);
    if (!dir)
        return 0;
    struct dirent *d;
    while ((d = readdir(dir))) {
        struct stat st;
        if (d->d_name[0] == '.' || fstatat(dirfd(dir), d->d_name, &st, 0) != 0)
            continue;
        if (strcmp(d->d_name, REPORT_RECORDING_FILE) != 0)
            bytes += (uint64_t)st.st_size;
        unlinkat(dirfd(dir), d->d_name, 0);
    }
    closedir(dir);
    rmdir(path);
    return bytes;
}

/* write_capture's reading, analysis and capture of one app. Returns whether it made one;
 * why says why not. */
static bool capture(int fd, int stream_fd, uint32_t last_ms, char *why, size_t why_len)
{
    struct mapped m;
    bool made = false;
    snprintf(why, why_len, "not mapped");
    if (!map_recording(fd, true, &m))
        return false;
    struct recording *rec = NULL;
    struct system_description machine;
    system_describe(&machine);
    if (recording_read_ended(m.bytes, m.len, stream_fd, &machine, NULL, &rec, why, why_len) == 0) {
        if (last_ms)
            recording_keep_recent(rec, last_ms / 1e3);
        struct report *report = report_create(rec);
        if (report) {
            char path[96];
            snprintf(path, sizeof(path), "%s/capture", work_dir);
            made = report_write_capture(report, m.bytes, m.len, path, NULL) == 0;
            struct live_stats s;
            live_stats_compute(rec, 1e9, &s);
            /* As tests/fuzz-recording.c bounds a report (~73 bytes out per byte in at
             * most), the capture's files by what they came from. */
            uint64_t written = capture_remove(path);
            if (written > 128 * (uint64_t)m.len + (1u << 20)) {
                fprintf(stderr, "a capture of %llu bytes from a recording of %zu bytes\n",
                        (unsigned long long)written, m.len);
                abort();
            }
            report_destroy(report);
        }
        recording_free(rec);
    }
    munmap(m.bytes, m.map_len);
    return made;
}

/* One input through the daemon's path. Returns whether it made a capture. */
static bool run(const uint8_t *data, size_t size, char *why, size_t why_len)
{
    uint32_t prefix[2];
    bool made = false;
    snprintf(why, why_len, "not a recording the daemon registers");
    if (size < sizeof(prefix))
        return false;
    memcpy(prefix, data, sizeof(prefix));
    data += sizeof(prefix);
    size -= sizeof(prefix);
    size_t recording_part = prefix[0] < size ? prefix[0] : size;
    static struct fuzz_arena recording, stream_file;
    const unsigned char *bytes = NULL, *stream = NULL;
    size_t len = 0, stream_len = 0;
    if (fuzz_arena_decode(&recording, data, recording_part) &&
        fuzz_arena_decode(&stream_file, data + recording_part, size - recording_part)) {
        bytes = recording.bytes;
        len = recording.len;
        stream = stream_file.bytes;
        stream_len = stream_file.len;
    }
    /* The app's memfd is the arena's size (sparse); the header says it. What the reader
     * takes is bounded by the arena's used bytes, so an input that claims more than
     * FUZZ_USED_MAX in use is a bigger recording, not another path: left out, or the fuzzer
     * would spend its memory limit copying holes. */
    uint64_t memfd_size = len;
    if (bytes && len >= sizeof(struct rec_header)) {
        const struct rec_header *h = (const struct rec_header *)bytes;
        if (atomic_load(&h->used) > FUZZ_USED_MAX)
            return false;
        if (h->size >= len && h->size <= REC_ARENA_SIZE)
            memfd_size = h->size;
    }
    int fd = bytes ? memfd_of("fuzz-recording", bytes, len, memfd_size) : -1;
    int stream_fd = stream ? memfd_of("fuzz-stream", stream, stream_len, stream_len) : -1;
    if (fd >= 0 && stream_fd >= 0 && plausible(fd)) {
        top(fd);
        /* A registration without a stream file has none (-1). */
        made = capture(fd, stream_len ? stream_fd : -1, prefix[1], why, why_len);
    }
    if (fd >= 0)
        close(fd);
    if (stream_fd >= 0)
        close(stream_fd);
    return made;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[256];
    run(data, size, why, sizeof(why));
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    if (*argc == 4 && strcmp((*argv)[1], "--seed") == 0)
        write_seed((*argv)[2], (*argv)[3]);
    const char *tmp = getenv("TMPDIR");
    snprintf(work_dir, sizeof(work_dir), "%.40s/fscope-fuzz-daemon-XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(work_dir))
        abort();
    /* --check SEED: the seed goes the whole way (else the fuzzer would start from a refusal). */
    if (*argc == 3 && strcmp((*argv)[1], "--check") == 0) {
        size_t len;
        uint8_t *seed = fuzz_file_read((*argv)[2], &len);
        char why[256];
        bool made = seed && run(seed, len, why, sizeof(why));
        rmdir(work_dir);
        if (!made)
            fprintf(stderr, "the seed makes no capture: %s\n", seed ? why : "unreadable");
        exit(made ? 0 : 1);
    }
    return 0;
}
