#include "capture_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* What a capture holds; a target holding anything else is not ours to replace. */
static const char *const capture_files[] = { "recording.fsr", "summary.json", "frames.csv",
                                             "zones.csv", "trace.json", "presentmon.csv",
                                             "mangohud.csv", "report.html", "threads.csv",
                                             "snapshot.json", "trace.perfetto-trace",
                                             "seconds.csv", "keep.json" };

bool capture_is_file_name(const char *name)
{
    for (unsigned i = 0; i < sizeof(capture_files) / sizeof(capture_files[0]); i++)
        if (strcmp(name, capture_files[i]) == 0)
            return true;
    return false;
}

/* 12 hex digits nobody can predict (getrandom; the clock only if that fails). */
static void random_suffix(char out[13])
{
    uint64_t bits = 0;
    if (getrandom(&bits, sizeof(bits), GRND_NONBLOCK) != sizeof(bits)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        bits = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32;
    }
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 12; i++)
        out[i] = hex[(bits >> (4 * i)) & 15];
    out[12] = '\0';
}

/* Splits path into its parent (created when missing, if asked) and last component. */
static int open_parent(const char *path, bool create, char *ret_base, size_t base_len)
{
    char buf[4096];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof(buf))
        return -ENAMETOOLONG;
    memcpy(buf, path, len + 1);
    while (len > 1 && buf[len - 1] == '/')
        buf[--len] = '\0';
    char *slash = strrchr(buf, '/');
    const char *base = slash ? slash + 1 : buf;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 ||
        strlen(base) >= base_len)
        return -EINVAL;
    snprintf(ret_base, base_len, "%s", base);
    if (!slash) {
        int fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
    }
    if (slash == buf)
        slash[1] = '\0';
    else
        *slash = '\0';
    /* Parents as mkdir -p makes them; the target itself is checked, not created, here. */
    for (char *p = buf + 1; create && *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (create && mkdir(buf, 0755) != 0 && errno != EEXIST)
        return -errno;
    int fd = open(buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* An existing target must be a directory of ours that only we can write, holding at most a
 * previous capture. */
static int check_target(int parent_fd, const char *name, const char **why)
{
    struct stat st;
    if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -errno;
    if (S_ISLNK(st.st_mode)) {
        *why = "it is a symbolic link";
        return -ELOOP;
    }
    if (!S_ISDIR(st.st_mode)) {
        *why = "it exists and is not a directory";
        return -ENOTDIR;
    }
    if (st.st_uid != geteuid()) {
        *why = "it is owned by another user";
        return -EPERM;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        *why = "other users can write to it";
        return -EPERM;
    }
    int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *dir = fdopendir(fd);
    if (!dir) {
        int r = -errno;
        close(fd);
        return r;
    }
    int r = 0;
    struct dirent *e;
    while (r == 0 && (e = readdir(dir))) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !capture_is_file_name(e->d_name)) {
            *why = "it holds files that are not a framescope capture";
            r = -EEXIST;
        }
    }
    closedir(dir);
    return r;
}

/* Empties a directory we made (or an old capture) and removes it. */
static void remove_dir(int parent_fd, const char *name)
{
    int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        DIR *dir = fdopendir(fd);
        if (dir) {
            struct dirent *e;
            while ((e = readdir(dir)))
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                    unlinkat(fd, e->d_name, 0);
            closedir(dir);
        } else {
            close(fd);
        }
    }
    unlinkat(parent_fd, name, AT_REMOVEDIR);
}

int capture_dir_begin(struct capture_dir *c, const char *path, const char **why)
{
    static const char *no_reason = "";
    *why = no_reason;
    c->parent_fd = -1;
    c->tmp_fd = -1;
    c->tmp_name[0] = '\0';
    int r = open_parent(path, true, c->target, sizeof(c->target));
    if (r < 0)
        return r;
    c->parent_fd = r;
    r = check_target(c->parent_fd, c->target, why);
    if (r < 0)
        return r;
    for (int attempt = 0; attempt < 16; attempt++) {
        char suffix[13];
        random_suffix(suffix);
        snprintf(c->tmp_name, sizeof(c->tmp_name), ".%s.tmp-%s", c->target, suffix);
        if (mkdirat(c->parent_fd, c->tmp_name, 0700) == 0)
            break;
        if (errno != EEXIST) {
            c->tmp_name[0] = '\0';
            return -errno;
        }
        c->tmp_name[0] = '\0';
    }
    if (!c->tmp_name[0])
        return -EEXIST;
    c->tmp_fd = openat(c->parent_fd, c->tmp_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                                       O_CLOEXEC);
    return c->tmp_fd < 0 ? -errno : 0;
}

/* fd is closed in all cases. */
static int write_fd(int fd, capture_writer writer, const void *arg)
{
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int r = -errno;
        close(fd);
        return r;
    }
    errno = 0;
    int r = writer(f, arg);
    if (r == 0 && (fflush(f) != 0 || ferror(f)))
        r = errno ? -errno : -EIO;
    /* EINVAL: a device or FIFO, which has nothing to sync */
    if (r == 0 && fsync(fileno(f)) != 0 && errno != EINVAL)
        r = -errno;
    if (fclose(f) != 0 && r == 0)
        r = -errno;
    return r;
}

/* How long a reader may take nothing before it counts as gone: a pipe to `tee` or a script
 * drains a summary in microseconds; one that stops reading (stopped, or wedged without closing
 * its end) must not hold the app's exit for ever. Only a reader that makes no progress at all
 * for this long fails the write, never a slow one. */
#define SPECIAL_STALL_MS 5000

/* A FIFO's or device's descriptor, opened O_NONBLOCK: every byte is written or it fails. */
static ssize_t special_write(void *cookie, const char *buf, size_t size)
{
    int fd = *(const int *)cookie;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, buf + done, size - done);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd p = { .fd = fd, .events = POLLOUT };
            int r = poll(&p, 1, SPECIAL_STALL_MS);
            if (r > 0 || (r < 0 && errno == EINTR))
                continue; /* room, or the reader left (the write then says EPIPE) */
            if (r == 0)
                errno = ETIMEDOUT;
        }
        if (n == 0)
            errno = EIO;
        return -1;
    }
    return (ssize_t)size;
}

static int special_close(void *cookie)
{
    int *fd = cookie;
    int r = close(*fd);
    free(fd);
    return r;
}

/* Writes into a FIFO or a device (or a regular file behind a descriptor's name) opened with
 * O_NONBLOCK, as write_fd does, but never waiting on a reader that takes nothing, and with
 * SIGPIPE held off this thread so that a reader that went away fails the write (EPIPE) instead
 * of killing the process the summary is written from. fd is closed in all cases. */
static int write_special(int fd, capture_writer writer, const void *arg)
{
    int *cookie = malloc(sizeof(*cookie));
    FILE *f = cookie ? fopencookie(cookie, "w", (cookie_io_functions_t){
                                                     .write = special_write,
                                                     .close = special_close })
                     : NULL;
    if (!f) {
        int r = -(errno ? errno : ENOMEM);
        free(cookie);
        close(fd);
        return r;
    }
    *cookie = fd;
    sigset_t pipe_set, old_mask, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);
    bool was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    errno = 0;
    int r = writer(f, arg);
    if (r == 0 && (fflush(f) != 0 || ferror(f)))
        r = errno ? -errno : -EIO;
    if (fclose(f) != 0 && r == 0)
        r = -errno;
    /* Our own write's SIGPIPE is taken back; one that was already pending stays. */
    if (!was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
        sigtimedwait(&pipe_set, NULL, &(struct timespec){ 0 });
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    return r;
}

bool capture_path_names_descriptor(const char *path)
{
    const char *number = NULL;
    if (strcmp(path, "/dev/stdout") == 0 || strcmp(path, "/dev/stderr") == 0)
        return true;
    if (strncmp(path, "/dev/fd/", 8) == 0)
        number = path + 8;
    else if (strncmp(path, "/proc/self/fd/", 14) == 0)
        number = path + 14;
    if (!number || !*number)
        return false;
    for (; *number; number++)
        if (*number < '0' || *number > '9')
            return false;
    return true;
}

int capture_dir_write(struct capture_dir *c, const char *name, capture_writer writer,
                      const void *arg)
{
    /* The directory is fresh and ours alone: the name is created, never followed. */
    int fd = openat(c->tmp_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    return write_fd(fd, writer, arg);
}

int capture_dir_commit(struct capture_dir *c)
{
    const char *why;
    int r = fchmod(c->tmp_fd, 0755) == 0 ? 0 : -errno;
    if (r == 0 && renameat2(c->parent_fd, c->tmp_name, c->parent_fd, c->target,
                            RENAME_NOREPLACE) != 0) {
        r = -errno;
        /* A previous capture: checked again (it may have changed since begin), then swapped
         * with ours in one step and removed. */
        if (r == -EEXIST && (r = check_target(c->parent_fd, c->target, &why)) == 0 &&
            renameat2(c->parent_fd, c->tmp_name, c->parent_fd, c->target,
                      RENAME_EXCHANGE) != 0)
            r = -errno;
    }
    if (r != 0) {
        capture_dir_abort(c);
        return r;
    }
    remove_dir(c->parent_fd, c->tmp_name); /* the old capture, if there was one */
    fsync(c->parent_fd);
    close(c->tmp_fd);
    close(c->parent_fd);
    c->tmp_fd = c->parent_fd = -1;
    return 0;
}

void capture_dir_abort(struct capture_dir *c)
{
    if (c->tmp_fd >= 0)
        close(c->tmp_fd);
    if (c->parent_fd >= 0 && c->tmp_name[0])
        remove_dir(c->parent_fd, c->tmp_name);
    if (c->parent_fd >= 0)
        close(c->parent_fd);
    c->tmp_fd = c->parent_fd = -1;
}

int capture_write_file(const char *path, capture_writer writer, const void *arg)
{
    char base[256], tmp[288];
    int dir_fd = open_parent(path, false, base, sizeof(base));
    if (dir_fd < 0)
        return dir_fd;
    /* A descriptor of this process named by path (/dev/stderr, a `>(tee log)` substitution's
     * /dev/fd/63): the user chose it, so its link is followed; a file behind it is appended to,
     * never replaced. */
    if (capture_path_names_descriptor(path)) {
        close(dir_fd);
        int fd = open(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        return fd < 0 ? -errno : write_special(fd, writer, arg);
    }
    /* A device or a FIFO (/dev/null, a pipe a script reads) is written into, never replaced
     * by a file renamed over it (as root that would replace /dev/null itself); a link is not
     * followed (STYLE: never through a name another chose). Opened without waiting: a FIFO
     * nobody reads fails at once (ENXIO) rather than holding the app's exit until a reader
     * comes, which may be never. */
    struct stat st;
    if (fstatat(dir_fd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
        int r = S_ISLNK(st.st_mode) ? -ELOOP : S_ISDIR(st.st_mode) ? -EISDIR : 0;
        int fd = r ? -1 : openat(dir_fd, base, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY |
                                                   O_CLOEXEC);
        if (!r && fd < 0)
            r = -errno;
        else if (!r && (fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))))
            r = -EINVAL; /* a socket or a block device: not somewhere a summary goes */
        if (!r)
            r = write_special(fd, writer, arg);
        else if (fd >= 0)
            close(fd);
        close(dir_fd);
        return r;
    }
    int fd = -1;
    for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
        char suffix[13];
        random_suffix(suffix);
        snprintf(tmp, sizeof(tmp), ".%s.tmp-%s", base, suffix);
        fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        int r = -errno;
        close(dir_fd);
        return r;
    }
    int r = write_fd(fd, writer, arg);
    if (r == 0 && renameat(dir_fd, tmp, dir_fd, base) != 0)
        r = -errno;
    if (r != 0)
        unlinkat(dir_fd, tmp, 0);
    close(dir_fd);
    return r;
}
