#include "compact.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

/* zstd's fastest level but one: on the project's VM level 1 compressed the demo's frame
 * chunks at about 1 GB/s (the stream thread's cost is in tests/bench/README.md), and a
 * higher level saved a few bytes a frame for several times the time. */
#define COMPACT_ZSTD_LEVEL 1

struct compact_coder {
    ZSTD_CCtx *cctx;
    ZSTD_DCtx *dctx;
    uint64_t *scratch; /* a range in its transformed form */
    size_t scratch_len;
    uint64_t *words;   /* one item's words: the previous item's, or running sums */
    size_t words_len;
};

struct compact_coder *compact_coder_create(void)
{
    return calloc(1, sizeof(struct compact_coder));
}

void compact_coder_destroy(struct compact_coder *c)
{
    if (!c)
        return;
    ZSTD_freeCCtx(c->cctx);
    ZSTD_freeDCtx(c->dctx);
    free(c->scratch);
    free(c->words);
    free(c);
}

size_t compact_bound(size_t raw_len)
{
    size_t zstd = ZSTD_compressBound(raw_len);
    return zstd > raw_len ? zstd : raw_len;
}

/* Room for len bytes of scratch and an item of item_words words. */
static bool reserve(struct compact_coder *c, size_t len, size_t item_words)
{
    if (len > c->scratch_len) {
        void *grown = realloc(c->scratch, (len + 7) / 8 * 8);
        if (!grown)
            return false;
        c->scratch = grown;
        c->scratch_len = (len + 7) / 8 * 8;
    }
    if (item_words > c->words_len) {
        void *grown = realloc(c->words, item_words * sizeof(uint64_t));
        if (!grown)
            return false;
        c->words = grown;
        c->words_len = item_words;
    }
    return true;
}

static bool items_apply(uint32_t item_size, size_t raw_len)
{
    return item_size && item_size % 8 == 0 && raw_len % item_size == 0;
}

/* src's items into scratch: word j of item k, less word j of item k - 1, at j * n + k. Each
 * word of src is loaded once (the previous item's are kept in c->words). */
static void items_forward(struct compact_coder *c, const unsigned char *src, size_t raw_len,
                          uint32_t item_size)
{
    size_t words = item_size / 8, n = raw_len / item_size;
    memset(c->words, 0, words * sizeof(uint64_t));
    for (size_t k = 0; k < n; k++) {
        for (size_t j = 0; j < words; j++) {
            uint64_t v;
            memcpy(&v, src + k * item_size + j * 8, 8);
            c->scratch[j * n + k] = v - c->words[j];
            c->words[j] = v;
        }
    }
}

/* The inverse: scratch's word planes summed back into items at dst. Eight items at a time,
 * a plane's eight changes (one cache line) at a time into them: an item at a time would read
 * a line of every plane for each item. */
static void items_inverse(struct compact_coder *c, unsigned char *dst, size_t raw_len,
                          uint32_t item_size)
{
    size_t words = item_size / 8, n = raw_len / item_size;
    memset(c->words, 0, words * sizeof(uint64_t));
    for (size_t k = 0; k < n; k += 8) {
        size_t block = n - k < 8 ? n - k : 8;
        for (size_t j = 0; j < words; j++) {
            const uint64_t *changes = c->scratch + j * n + k;
            unsigned char *out = dst + k * item_size + j * 8;
            uint64_t v = c->words[j];
            for (size_t i = 0; i < block; i++) {
                v += changes[i];
                memcpy(out + i * item_size, &v, 8);
            }
            c->words[j] = v;
        }
    }
}

ssize_t compact_encode(struct compact_coder *c, const void *src, size_t raw_len,
                       uint32_t item_size, void *dst, size_t dst_cap, uint32_t *ret_encoding)
{
    bool items = items_apply(item_size, raw_len);
    if (dst_cap < compact_bound(raw_len) || raw_len > (size_t)SSIZE_MAX)
        return -EINVAL;
    *ret_encoding = COMPACT_RAW;
    if (!raw_len)
        return 0;
    if (!reserve(c, raw_len, items ? item_size / 8 : 0))
        return -ENOMEM;
    if (!c->cctx) {
        c->cctx = ZSTD_createCCtx();
        if (!c->cctx)
            return -ENOMEM;
        /* A checksum of the content: a stored range changed on disk is refused, not read as
         * other numbers. 4 bytes a range. */
        ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_compressionLevel, COMPACT_ZSTD_LEVEL);
        ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_checksumFlag, 1);
    }
    /* From here on only the private copy is read. */
    if (items)
        items_forward(c, src, raw_len, item_size);
    else
        memcpy(c->scratch, src, raw_len);
    size_t stored = ZSTD_compress2(c->cctx, dst, dst_cap, c->scratch, raw_len);
    if (!ZSTD_isError(stored) && stored < raw_len) {
        *ret_encoding = items ? COMPACT_ITEMS : COMPACT_ZSTD;
        return (ssize_t)stored;
    }
    /* Incompressible (or zstd failed): the bytes as read. */
    if (items)
        items_inverse(c, dst, raw_len, item_size);
    else
        memcpy(dst, c->scratch, raw_len);
    *ret_encoding = COMPACT_RAW;
    return (ssize_t)raw_len;
}

/* One whole zstd frame of exactly raw_len bytes, its checksum right, into scratch. */
static int zstd_decode(struct compact_coder *c, const void *src, size_t stored_len, size_t raw_len)
{
    if (ZSTD_getFrameContentSize(src, stored_len) != (unsigned long long)raw_len ||
        ZSTD_findFrameCompressedSize(src, stored_len) != stored_len)
        return -EINVAL;
    if (!c->dctx) {
        c->dctx = ZSTD_createDCtx();
        if (!c->dctx)
            return -ENOMEM;
    }
    size_t n = ZSTD_decompressDCtx(c->dctx, c->scratch, raw_len, src, stored_len);
    if (ZSTD_isError(n))
        return ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation ? -ENOMEM : -EINVAL;
    return n == raw_len ? 0 : -EINVAL;
}

int compact_decode(struct compact_coder *c, uint32_t encoding, const void *src, size_t stored_len,
                   uint32_t item_size, void *dst, size_t raw_len)
{
    switch (encoding) {
    case COMPACT_RAW:
        if (stored_len != raw_len)
            return -EINVAL;
        if (raw_len)
            memcpy(dst, src, raw_len);
        return 0;
    case COMPACT_ZSTD:
    case COMPACT_ITEMS: {
        bool items = encoding == COMPACT_ITEMS;
        if (!raw_len || (items && !items_apply(item_size, raw_len)) ||
            stored_len > compact_bound(raw_len))
            return -EINVAL;
        if (!reserve(c, raw_len, items ? item_size / 8 : 0))
            return -ENOMEM;
        int e = zstd_decode(c, src, stored_len, raw_len);
        if (e)
            return e;
        if (items)
            items_inverse(c, dst, raw_len, item_size);
        else
            memcpy(dst, c->scratch, raw_len);
        return 0;
    }
    default:
        return -EINVAL;
    }
}
