/* Writing captures and summary files safely: all of one run or nothing, never through a link
 * or a name another user chose, and every failure named by its errno.
 *
 * A capture is written into a fresh directory with an unpredictable name beside its target,
 * then renamed into place (exchanged with a previous capture, which is then removed), so a
 * reader never sees one run's summary.json beside another run's frames.csv. Every file is
 * created through a directory fd with O_EXCL | O_NOFOLLOW under an unpredictable temporary
 * name and renamed when complete. An existing target owned by another user, writable by
 * others, a link, or holding files that are not a capture's is refused. */
#ifndef FSCOPE_CAPTURE_DIR_H
#define FSCOPE_CAPTURE_DIR_H

#include <stdbool.h>
#include <stdio.h>

/* Writes one file's contents; returns 0 or -errno. */
typedef int (*capture_writer)(FILE *f, const void *arg);

struct capture_dir {
    int parent_fd;      /* the target's parent directory */
    int tmp_fd;         /* the fresh directory the files go into */
    char target[256];   /* the target's last path component */
    char tmp_name[288]; /* the fresh directory's name in parent */
};

/* Checks path (creating its parents when missing) and opens a fresh directory beside it.
 * Returns 0 or -errno; *why (static text) says which rule refused it when not 0. */
int capture_dir_begin(struct capture_dir *c, const char *path, const char **why);
/* Writes name in the fresh directory. Returns 0 or -errno. */
int capture_dir_write(struct capture_dir *c, const char *name, capture_writer writer,
                      const void *arg);
/* Puts the fresh directory in place of the target. Returns 0 or -errno; on failure the target
 * is as it was and the fresh directory is gone. */
int capture_dir_commit(struct capture_dir *c);
/* Removes the fresh directory and what was written in it. Accepts a failed begin. */
void capture_dir_abort(struct capture_dir *c);

/* Whether name is one of the files a capture holds. */
bool capture_is_file_name(const char *name);

/* Writes one file at path (a summary, a trace) the same way: an exclusive temporary name in
 * its directory (which must exist), renamed when complete. Returns 0 or -errno.
 * A FIFO or a character device at path is written into instead (never replaced), and so is
 * whatever a name of one of this process's descriptors (capture_path_names_descriptor)
 * leads to (a regular file there is appended to). Nothing waits on a reader: a FIFO nobody
 * has open for reading fails at once with -ENXIO, and one whose reader takes nothing for 5 s
 * fails with -ETIMEDOUT; a reader that closed fails it with -EPIPE, never with SIGPIPE. A
 * link anywhere else is refused (-ELOOP). */
int capture_write_file(const char *path, capture_writer writer, const void *arg);
/* Whether path names a descriptor of this process: /dev/stdout, /dev/stderr, /dev/fd/N or
 * /proc/self/fd/N, links the user chose by naming them, which are followed. */
bool capture_path_names_descriptor(const char *path);

#endif
