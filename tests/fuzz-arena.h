/* The fuzzers' input (tests/fuzz-recording.c, tests/fuzz-daemon.c): a recording with its runs
 * of zeros written as counts. An arena is mostly zeros (the demo's 4.8 MB recording of 20
 * frames holds 7 KB that are not), so as raw bytes the fuzzer spent its mutations on zeros and
 * ran 49 inputs a second; as segments each mutation lands on what a writer wrote, or moves it.
 *
 *   input   := segment*
 *   segment := u32 zeros, u16 n, n bytes    (little-endian; a cut segment ends the input)
 *
 * Decoded, an arena is at most FUZZ_ARENA_MAX bytes: what a hostile count can make us zero. */
#ifndef FSCOPE_TESTS_FUZZ_ARENA_H
#define FSCOPE_TESTS_FUZZ_ARENA_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "analysis/recording.h"
#include "record/format.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#endif
#endif
#ifndef ASAN_POISON_MEMORY_REGION
#define ASAN_POISON_MEMORY_REGION(at, size) ((void)(at), (void)(size))
#define ASAN_UNPOISON_MEMORY_REGION(at, size) ((void)(at), (void)(size))
#endif

#define FUZZ_ARENA_MAX (16u << 20)
/* Zeros shorter than this stay in a segment's bytes: a segment costs 6 bytes. */
#define FUZZ_ZERO_RUN 8

/* An arena decoded, in a buffer kept from one input to the next: a fresh one each time spent
 * most of an input's time faulting in zeroed pages. */
struct fuzz_arena {
    unsigned char *bytes; /* aligned as mmap aligns an arena */
    size_t len, capacity;
};

/* Decodes data into a. False when out of memory. The buffer past a->len is poisoned for
 * AddressSanitizer: a read beyond the arena is caught as if the buffer ended there. */
static bool fuzz_arena_decode(struct fuzz_arena *a, const uint8_t *data, size_t size)
{
    size_t len = 0;
    for (size_t at = 0; at + 6 <= size;) {
        uint32_t zeros;
        uint16_t n;
        memcpy(&zeros, data + at, 4);
        memcpy(&n, data + at + 4, 2);
        at += 6;
        if (n > size - at)
            n = (uint16_t)(size - at);
        len += zeros < FUZZ_ARENA_MAX - len ? zeros : FUZZ_ARENA_MAX - len;
        len += n < FUZZ_ARENA_MAX - len ? n : FUZZ_ARENA_MAX - len;
        at += n;
    }
    size_t padded = (len + REC_ALIGN - 1) / REC_ALIGN * REC_ALIGN + REC_ALIGN;
    ASAN_UNPOISON_MEMORY_REGION(a->bytes, a->capacity);
    if (padded > a->capacity) {
        free(a->bytes);
        a->bytes = aligned_alloc(REC_ALIGN, padded);
        a->capacity = a->bytes ? padded : 0;
        if (!a->bytes)
            return false;
    }
    memset(a->bytes, 0, len);
    size_t out = 0;
    for (size_t at = 0; at + 6 <= size && out < len;) {
        uint32_t zeros;
        uint16_t n;
        memcpy(&zeros, data + at, 4);
        memcpy(&n, data + at + 4, 2);
        at += 6;
        if (n > size - at)
            n = (uint16_t)(size - at);
        out += zeros < len - out ? zeros : len - out;
        size_t copy = n < len - out ? n : len - out;
        memcpy(a->bytes + out, data + at, copy);
        out += copy;
        at += n;
    }
    a->len = len;
    ASAN_POISON_MEMORY_REGION(a->bytes + len, a->capacity - len);
    return true;
}

static void fuzz_arena_segment(FILE *out, uint32_t zeros, const unsigned char *bytes, uint16_t n)
{
    fwrite(&zeros, 4, 1, out);
    fwrite(&n, 2, 1, out);
    fwrite(bytes, 1, n, out);
}

/* Encodes len bytes as segments, for a seed. */
static void fuzz_arena_encode(const unsigned char *bytes, size_t len, FILE *out)
{
    size_t at = 0;
    while (at < len) {
        size_t zeros = 0;
        while (at + zeros < len && !bytes[at + zeros] && zeros < UINT32_MAX)
            zeros++;
        at += zeros;
        /* Bytes up to the next run of FUZZ_ZERO_RUN zeros (or the end). */
        size_t n = 0, run = 0;
        while (at + n < len && n < UINT16_MAX && run < FUZZ_ZERO_RUN) {
            run = bytes[at + n] ? 0 : run + 1;
            n++;
        }
        if (run == FUZZ_ZERO_RUN)
            n -= run;
        fuzz_arena_segment(out, (uint32_t)zeros, bytes + at, (uint16_t)n);
        at += n;
    }
}

/* The whole of a file, malloc'd. NULL on failure. */
static unsigned char *fuzz_file_read(const char *path, size_t *ret_len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *bytes = NULL;
    size_t len = 0, capacity = 0;
    for (;;) {
        if (len == capacity) {
            capacity = capacity ? 2 * capacity : 1 << 20;
            unsigned char *grown = realloc(bytes, capacity);
            if (!grown)
                break;
            bytes = grown;
        }
        size_t n = fread(bytes + len, 1, capacity - len, f);
        if (!n)
            break;
        len += n;
    }
    fclose(f);
    *ret_len = len;
    return bytes;
}

/* The arena a recording file holds, malloc'd: a packed one (a capture's since format 10,
 * record/format.h) unpacked with the reader's own function, an arena as it is. NULL when it
 * cannot be read. */
static unsigned char *fuzz_recording_arena(const char *path, size_t *ret_len)
{
    size_t len;
    unsigned char *bytes = fuzz_file_read(path, &len);
    if (!bytes || len < sizeof(struct rec_header) ||
        ((const struct rec_header *)bytes)->layout != REC_LAYOUT_PACKED) {
        *ret_len = len;
        return bytes;
    }
    /* fuzz_file_read's buffer is malloc's: aligned as the reader wants it. */
    void *image;
    size_t image_len;
    char why[256];
    unsigned char *arena = NULL;
    if (recording_unpack(bytes, len, false, &image, &image_len, why, sizeof(why)) == 0) {
        arena = malloc(image_len);
        if (arena)
            memcpy(arena, image, image_len);
        munmap(image, image_len);
        *ret_len = image_len;
    } else {
        fprintf(stderr, "%s: %s\n", path, why);
    }
    free(bytes);
    return arena;
}

#endif
