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

