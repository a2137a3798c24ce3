/* Arrays of fixed-size items stored compactly: each 8-byte word minus the same word of the
 * item before it, laid out word by word (every item's first word, then every item's second,
 * ...), then zstd. Successive records of a run differ in a few fields by small amounts, so
 * what zstd sees is mostly long runs of zeros: the demo's frame records (792 bytes) take 26
 * bytes a frame this way, 53 with zstd alone (2-core VM, 10,000 frames, tests/bench/README.md).
 * Bytes that are not items are zstd'd as they are.
 *
 * The recording keeps its stream file and its captures this way (record/format.h names the
 * encodings and the headers around them); util knows no record type, only bytes and sizes.
 * A decoder refuses anything that is not exactly what the encoder could have written for the
 * length it is told, and never writes past that length. */
#ifndef FSCOPE_UTIL_COMPACT_H
#define FSCOPE_UTIL_COMPACT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* How a range's bytes are stored (record/format.h's REC_ENCODING_* have these values). */
enum compact_encoding {
    COMPACT_RAW = 0,   /* as they are */
    COMPACT_ZSTD = 1,  /* one zstd frame of them */
    COMPACT_ITEMS = 2, /* items of item_size bytes, delta by word and word by word, then zstd */
    COMPACT_ENCODING_COUNT,
};

/* What an encoder or decoder keeps between calls: zstd's contexts and the scratch memory of
 * the largest range it has seen. One per thread. */
struct compact_coder;

/* NULL when out of memory. */
struct compact_coder *compact_coder_create(void);
/* Accepts NULL. */
void compact_coder_destroy(struct compact_coder *c);

/* The most bytes the stored form of raw_len bytes takes, whatever the encoding. */
size_t compact_bound(size_t raw_len);

/* Stores raw_len bytes of src in dst (dst_cap >= compact_bound(raw_len)): as items of
 * item_size bytes when item_size is a multiple of 8 that divides raw_len, else zstd of the
 * bytes; as they are when that is no smaller. src is read exactly once, so another thread
 * may be writing it meanwhile: what is stored is some state of each word. Returns the stored
 * length and *ret_encoding, or -ENOMEM. */
ssize_t compact_encode(struct compact_coder *c, const void *src, size_t raw_len,
                       uint32_t item_size, void *dst, size_t dst_cap, uint32_t *ret_encoding);

/* Decodes stored_len bytes of src, stored as encoding (with item_size for COMPACT_ITEMS), into
 * exactly raw_len bytes at dst. Returns 0, -EINVAL when they are not a stored form of raw_len
 * bytes (a cut, corrupt or hostile range: nothing is written past dst + raw_len, and what was
 * written before the error is unspecified), or -ENOMEM. */
int compact_decode(struct compact_coder *c, uint32_t encoding, const void *src, size_t stored_len,
                   uint32_t item_size, void *dst, size_t raw_len);

#endif
