/* Unnamed files (O_TMPFILE on disk, memfds in memory): gone with their last descriptor,
 * whatever ends the process. The recording is a memfd and its stream file one on disk, made by
 * the app or by framescope run. */
#ifndef FSCOPE_UTIL_UNNAMED_FILE_H
#define FSCOPE_UTIL_UNNAMED_FILE_H

#include <stdint.h>

/* An unnamed read-write file in tmpdir (the caller's $TMPDIR; NULL or not absolute: skipped),
 * else /var/tmp (on disk in Debian, where /tmp may be a tmpfs, i.e. memory), else /tmp.
 * Returns its descriptor (close-on-exec), or -1 when no directory takes one. */
int unnamed_file_create(const char *tmpdir);

/* A memfd of size bytes (sparse) sealed so that its size never changes (F_SEAL_SHRINK,
 * F_SEAL_GROW) and no seal is added later (F_SEAL_SEAL: nobody can forbid our writes):
 * whoever maps it, the daemon included, never meets a file that shrank. Close-on-exec.
 * Returns the fd, or -errno. */
int sealed_memfd_create(const char *name, uint64_t size);

#endif
