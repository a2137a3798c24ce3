/* Descriptors the profiler holds inside someone else's process: kept above the range the app
 * uses, and known by what they are (device and inode), not by their number, which the app may
 * close and reuse for a file of its own. */
#ifndef FSCOPE_UTIL_PRIVATE_FD_H
#define FSCOPE_UTIL_PRIVATE_FD_H

#include <stdbool.h>
#include <sys/types.h>

/* Takes fd as one of the profiler's own: moved above the app's range (close-on-exec; fd
 * itself closed), or to the top of what the descriptor limit allows where it leaves no room
 * above (said once), or left where it is where even that fails; and held, so a forked child
 * lets go of it. Returns the descriptor to use; a negative fd is passed through. */
int fscope_fd_high(int fd);
/* fd moved as fscope_fd_high moves it, but not held: for a descriptor another library owns
 * and closes (a Wayland connection's socket). */
int fscope_fd_move_high(int fd);
/* Stops holding fd without closing it: another library is about to close it (io_uring's
 * ring at io_uring_queue_exit). */
void fscope_fd_forget(int fd);
/* Closes a descriptor fscope_fd_high returned. A number it does not hold (the child of a
 * fork let go of it, or it was never ours) is left alone: it may be the app's by now. */
void fscope_fd_close(int fd);
/* Whether fd is held (fscope_fd_high) and still the file it was taken as: the app may have
 * closed it and opened one of its own under the number. */
bool fscope_fd_still_held(int fd);
/* In a forked child: every descriptor held is let go of (pointed at /dev/null, so a stale
 * use reaches nothing of the child's), and every transient one closed. Async-signal-safe. */
void fscope_fd_release_all(void);

/* A descriptor a worker holds for a moment where the app's numbers are (a listing of /proc, a
 * read of a stats file): known until fscope_fd_transient_close closes it, so that a child
 * forked meanwhile closes it at once instead of keeping it (a fork helper holding
 * /proc/PID/task). A negative fd is passed through; beyond FSCOPE_FD_TRANSIENT_MAX at once
 * it is simply not known. */
#define FSCOPE_FD_TRANSIENT_MAX 8
int fscope_fd_transient(int fd);
void fscope_fd_transient_close(int fd);
/* Stops knowing a transient fd without closing it (closedir is about to). */
void fscope_fd_transient_forget(int fd);

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
