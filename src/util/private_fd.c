#include "util/private_fd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* Above this, where a program that still select()s (FD_SETSIZE 1024) never looks, and where
 * programs that close what they did not open (3..1023, as daemons and launchers do) do not
 * reach. */
#define HIGH_FD 1024

int fscope_fd_high(int fd)
{
    if (fd < 0 || fd >= HIGH_FD)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, HIGH_FD);
    if (high < 0)
        return fd; /* the limit keeps us low: better there than not at all */
    close(fd);
    return high;
}

bool fscope_private_fd_init(struct fscope_private_fd *p, int fd)
{
    struct stat st;
    p->fd = -1;
    if (fd < 0 || fstat(fd, &st) != 0)
        return false;
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0)
        return false;
    p->fd = fscope_fd_high(copy);
    p->dev = st.st_dev;
    p->ino = st.st_ino;
    return true;
}

bool fscope_private_fd_adopt(struct fscope_private_fd *p, int fd)
{
    struct stat st;
    p->fd = -1;
    if (fd < 0 || fstat(fd, &st) != 0)
        return false;
    p->fd = fscope_fd_high(fd);
    p->dev = st.st_dev;
    p->ino = st.st_ino;
    return true;
}

bool fscope_private_fd_ours(const struct fscope_private_fd *p)
{
    struct stat st;
    return p->fd >= 0 && fstat(p->fd, &st) == 0 && st.st_dev == p->dev && st.st_ino == p->ino;
}
