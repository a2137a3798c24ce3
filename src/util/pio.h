/* Whole positioned reads and writes: pread and pwrite until every byte is through, across
 * interruptions and short transfers. The file offset is never moved, so threads may share a
 * descriptor. */
#ifndef FSCOPE_UTIL_PIO_H
#define FSCOPE_UTIL_PIO_H

#include <stddef.h>
#include <stdint.h>

/* All of len bytes at offset of fd into to: 0, 1 when the file ends first, or -errno. */
int fscope_pread_all(int fd, void *to, size_t len, uint64_t offset);
/* All of len bytes of from at offset of fd: 0 or -errno (a write that takes nothing is the
 * disk full: -ENOSPC). */
int fscope_pwrite_all(int fd, const void *from, size_t len, uint64_t offset);

#endif
