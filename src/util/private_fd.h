/* Descriptors the profiler holds inside someone else's process: kept above the range the app
 * uses, and known by what they are (device and inode), not by their number, which the app may
 * close and reuse for a file of its own. */
#ifndef FSCOPE_UTIL_PRIVATE_FD_H
#define FSCOPE_UTIL_PRIVATE_FD_H

#include <stdbool.h>
#include <sys/types.h>

/* fd moved above the app's range (close-on-exec; fd itself closed) where the limit leaves
 * room, else fd as it is. Returns the descriptor to use; a negative fd is passed through. */
int fscope_fd_high(int fd);

struct fscope_private_fd {
    int fd; /* -1: none */
    dev_t dev;
    ino_t ino;
};

/* A private duplicate of fd, above the app's range, with its identity. False (p->fd -1) when
 * fd is not open or cannot be duplicated. */
bool fscope_private_fd_init(struct fscope_private_fd *p, int fd);
/* Takes fd itself (moved above the app's range) and remembers what it is. False (p->fd -1,
 * fd left as it was) when fd is not open. */
bool fscope_private_fd_adopt(struct fscope_private_fd *p, int fd);
/* Whether p->fd is still the file it was made for (the app may have closed it, and may have
 * opened something else under its number). */
bool fscope_private_fd_ours(const struct fscope_private_fd *p);

#endif
