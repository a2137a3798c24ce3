#include "util/private_fd.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

/* Above this, where a program that still select()s (FD_SETSIZE 1024) never looks, and where
 * programs that close what they did not open (3..1023, as daemons and launchers do) do not
 * reach. */
#define HIGH_FD 1024
/* Room above HIGH_FD the limit must leave for it to be used: the layer and library hold a
 * few dozen descriptors (per-CPU scheduler events, per-thread counters), so a limit of 1025
 * would fit one and push the rest back down. */
#define HIGH_ROOM 256

/* Every descriptor the profiler holds in this process, as fd + 1 (0: a free slot, -1: one
 * being filled), with what it is, so that a forked child, which inherits them all, can let go
 * of them at once, and only of what is still ours there (the app may have closed one and
 * opened a file of its own under its number). Sized for the most we hold (two scheduler events
 * per CPU, five counters per recording thread) with margin; one past it is held but not
 * released in a child. */
#define HELD_MAX 1024
static _Atomic int held[HELD_MAX];
/* Transient descriptors (fscope_fd_transient), + 1 (0: a free slot). */
static _Atomic int transient[FSCOPE_FD_TRANSIENT_MAX];
static dev_t held_dev[HELD_MAX];
static ino_t held_ino[HELD_MAX];

static void hold(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return;
    for (unsigned i = 0; i < HELD_MAX; i++) {
        int free_slot = 0;
        if (atomic_load_explicit(&held[i], memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&held[i], &free_slot, -1)) {
            held_dev[i] = st.st_dev;
            held_ino[i] = st.st_ino;
            atomic_store_explicit(&held[i], fd + 1, memory_order_release);
            return;
        }
    }
}

/* Whether fd is still the file slot i was filled with. */
static bool still_held(unsigned i, int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_dev == held_dev[i] && st.st_ino == held_ino[i];
}

/* Frees fd's slot; whether fd was held and is still that file (so ours to close). */
static bool let_go(int fd)
{
    for (unsigned i = 0; i < HELD_MAX; i++) {
        /* Claimed (-1) while its identity is read, freed after: a hold() on another thread
         * may fill the slot the moment it reads 0. */
        int expected = fd + 1;
        if (atomic_load_explicit(&held[i], memory_order_relaxed) == expected &&
            atomic_compare_exchange_strong(&held[i], &expected, -1)) {
            bool ours = still_held(i, fd);
            atomic_store_explicit(&held[i], 0, memory_order_release);
            return ours;
        }
    }
    return false;
}

/* Where ours go: above HIGH_FD where the limit leaves room, else the top quarter of what it
 * allows (the app takes the lowest free numbers, so that is as far from its own as we can
 * be without raising a limit that is the app's). Read each time: an app may raise its limit
 * after start-up, as Wine and Proton do. */
static int high_floor(void)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
        limit.rlim_cur >= HIGH_FD + HIGH_ROOM)
        return HIGH_FD;
    int floor = (int)(limit.rlim_cur - limit.rlim_cur / 4);
    /* Said once, at info level: it is every desktop's default (systemd's 1024 soft limit),
     * so a warning would greet every run, and nothing is lost by it. */
    static atomic_bool said;
    if (!atomic_exchange(&said, true))
        fscope_log(FSCOPE_LOG_INFO, "the descriptor limit (ulimit -n %d) leaves no room above "
                   "the app's range: framescope keeps its descriptors at %d and up, the top "
                   "quarter of it (a limit of %d or more puts them above %d)",
                   (int)limit.rlim_cur, floor, HIGH_FD + HIGH_ROOM, HIGH_FD - 1);
    return floor;
}

int fscope_fd_move_high(int fd)
{
    if (fd < 0 || fd >= HIGH_FD)
        return fd;
    int floor = high_floor();
    if (fd >= floor)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, floor);
    if (high < 0)
        return fd; /* the limit keeps us low: better there than not at all */
    close(fd);
    return high;
}

bool fscope_fd_still_held(int fd)
{
    for (unsigned i = 0; fd >= 0 && i < HELD_MAX; i++)
        if (atomic_load_explicit(&held[i], memory_order_acquire) == fd + 1)
            return still_held(i, fd);
    return false;
}

int fscope_fd_high(int fd)
{
    fd = fscope_fd_move_high(fd);
    if (fd >= 0)
        hold(fd);
    return fd;
}

void fscope_fd_forget(int fd)
{
    if (fd >= 0)
        let_go(fd);
}

void fscope_fd_close(int fd)
{
    if (fd < 0)
        return;
    /* One never held, or no longer the file it was (the app closed ours and reused the
     * number), was never ours to close. */
    if (let_go(fd))
        close(fd);
}

void fscope_fd_release_all(void)
{
    /* In the child of a fork, before anything else runs there: async-signal-safe calls only.
     * Each number is pointed at /dev/null rather than closed, so that a stale use of it by
     * our code (a wake-up write, a read) reaches nothing of the child's, and the events and
     * memory behind it are released at once. */
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    struct stat null_st;
    if (null_fd >= 0 && fstat(null_fd, &null_st) != 0) {
        close(null_fd);
        null_fd = -1;
    }
    for (unsigned i = 0; i < HELD_MAX; i++) {
        int fd = atomic_load_explicit(&held[i], memory_order_acquire) - 1;
        if (fd < 0 || fd == null_fd)
            continue;
        if (!still_held(i, fd)) {
            /* Not ours any more (the app's now, or nothing): never touched, here or by a
             * later fscope_fd_close. */
            atomic_store_explicit(&held[i], 0, memory_order_relaxed);
            continue;
        }
        if (null_fd >= 0 && dup3(null_fd, fd, O_CLOEXEC) == fd) {
            /* the placeholder is what the slot holds from now on */
            held_dev[i] = null_st.st_dev;
            held_ino[i] = null_st.st_ino;
        } else {
            close(fd);
            atomic_store_explicit(&held[i], 0, memory_order_relaxed);
        }
    }
    if (null_fd >= 0)
        close(null_fd);
    for (unsigned i = 0; i < FSCOPE_FD_TRANSIENT_MAX; i++) {
        int fd = atomic_exchange_explicit(&transient[i], 0, memory_order_acquire) - 1;
        if (fd >= 0)
            close(fd); /* only the parent's worker thread had it: nothing of the child's */
    }
}

int fscope_fd_transient(int fd)
{
    for (unsigned i = 0; fd >= 0 && i < FSCOPE_FD_TRANSIENT_MAX; i++) {
        int none = 0;
        if (atomic_compare_exchange_strong_explicit(&transient[i], &none, fd + 1,
                                                    memory_order_release, memory_order_relaxed))
            break;
    }
    return fd;
}

void fscope_fd_transient_forget(int fd)
{
    for (unsigned i = 0; fd >= 0 && i < FSCOPE_FD_TRANSIENT_MAX; i++) {
        int mine = fd + 1;
        if (atomic_compare_exchange_strong_explicit(&transient[i], &mine, 0,
                                                    memory_order_acq_rel, memory_order_relaxed))
            break;
    }
}

void fscope_fd_transient_close(int fd)
{
    if (fd < 0)
        return;
    fscope_fd_transient_forget(fd);
    close(fd);
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
