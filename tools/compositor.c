/* The private headless Weston of framescope run: started in a runtime directory of its own,
 * waited for, stopped with everything it started, its directory removed. */
#include "compositor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"

extern char **environ;

static long long monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* How long Weston may take to open its socket. */
#define COMPOSITOR_START_TIMEOUT_MS 10000
/* How long Weston has to exit on SIGTERM before it is killed: it took 2.3 ms (Weston 10,
 * headless, pixman, Debian 12 container); the rest is margin for a loaded machine. */
#define COMPOSITOR_EXIT_TIMEOUT_MS 5000
/* Subdirectory levels removed with the runtime directory: clients keep state there one or two
 * levels deep (dconf/user, pulse/native). */
#define RUNTIME_DIR_MAX_DEPTH 8

/* Copies the end of Weston's log to stderr, since the log goes with the runtime directory. */
static void print_log_tail(const char *path)
{
    char tail[2048]; /* the error Weston ends with and the lines leading to it */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    off_t size = lseek(fd, 0, SEEK_END);
    ssize_t n = -1;
    if (size >= 0 && lseek(fd, size > (off_t)sizeof(tail) ? size - (off_t)sizeof(tail) : 0,
                           SEEK_SET) >= 0)
        n = read(fd, tail, sizeof(tail));
    close(fd);
    if (n > 0) {
        fprintf(stderr, "framescope: the end of Weston's log:\n");
        fwrite(tail, 1, (size_t)n, stderr);
    }
}

/* 1 when the Wayland socket at path takes a connection, 0 when it is bound but not listening
 * yet (ECONNREFUSED), -errno on another failure. The connection is closed at once. */
static int socket_accepts(const char *path)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(addr.sun_path))
        return -ENAMETOOLONG;
    memcpy(addr.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int r = connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 ? 1
            : errno == ECONNREFUSED                                 ? 0
                                                                    : -errno;
    close(fd);
    return r;
}

/*
 * Waits until Weston's socket appears in the runtime directory (inotify), Weston exits
 * (pidfd), a forwarded signal arrives, or the time is up. The signals are blocked except inside
 * ppoll, so one that arrives just before it still wakes it.
 */
static int compositor_wait_ready(struct compositor *c, const char *socket, const char *log_path)
{
    int r = -1;
    sigset_t forwarded, unblocked;
    child_stop_signal_set(&forwarded);
    sigprocmask(SIG_BLOCK, &forwarded, &unblocked);
    int pidfd = -1;
    int inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (inotify_fd < 0 || inotify_add_watch(inotify_fd, c->runtime_dir, IN_CREATE) < 0) {
        fprintf(stderr, "framescope: cannot watch %s for Weston's socket: %s\n", c->runtime_dir,
                strerror(errno));
        goto error_inotify;
    }
    /* Without a pidfd (Linux before 5.3) an early exit shows only when the time is up. */
    pidfd = pidfd_open(c->pid, 0);
    long long deadline = monotonic_ms() + COMPOSITOR_START_TIMEOUT_MS;
    for (;;) {
        /* The socket file appears at bind(), a moment before listen(), for which there is no
         * event: a socket that refuses is looked at again after a millisecond. */
        long long poll_ms = LLONG_MAX;
        if (access(socket, F_OK) == 0) {
            int accepts = socket_accepts(socket);
            if (accepts > 0) {
                r = 0;
                break;
            }
            if (accepts < 0) {
                fprintf(stderr, "framescope: cannot connect to Weston's socket %s: %s\n", socket,
                        strerror(-accepts));
                break;
            }
            poll_ms = 1;
        }
        if (child_stop_signal) {
            fprintf(stderr, "framescope: %s while the headless Weston started; stopping it\n",
                    strsignal(child_stop_signal));
            break;
        }
        /* Left unreaped: compositor_stop() collects it with anything it started. */
        siginfo_t exited = { 0 };
        if (waitid(P_PID, (id_t)c->pid, &exited, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            exited.si_pid == c->pid) {
            fprintf(stderr, "framescope: headless weston exited at start-up\n");
            print_log_tail(log_path);
            break;
        }
        long long left = deadline - monotonic_ms();
        if (left <= 0) {
            fprintf(stderr, "framescope: headless weston did not open its socket within %d s\n",
                    COMPOSITOR_START_TIMEOUT_MS / 1000);
            print_log_tail(log_path);
            break;
        }
        struct pollfd fds[2] = { { .fd = inotify_fd, .events = POLLIN },
                                 { .fd = pidfd, .events = POLLIN } };
        if (poll_ms > left)
            poll_ms = left;
        struct timespec timeout = { .tv_sec = poll_ms / 1000,
                                    .tv_nsec = poll_ms % 1000 * 1000000 };
        if (ppoll(fds, 2, &timeout, &unblocked) < 0 && errno != EINTR) {
            fprintf(stderr, "framescope: waiting for Weston failed: %s\n", strerror(errno));
            break;
        }
        char events[4096];
        while (read(inotify_fd, events, sizeof(events)) > 0)
            ; /* what was created does not matter: the socket is looked for by name */
    }
    if (pidfd >= 0)
        close(pidfd);
error_inotify:
    if (inotify_fd >= 0)
        close(inotify_fd);
    sigprocmask(SIG_SETMASK, &unblocked, NULL);
    return r;
}

int compositor_start(struct compositor *c)
{
    const char *weston = "weston";
    snprintf(c->runtime_dir, sizeof(c->runtime_dir), "/tmp/framescope-XXXXXX");
    if (!mkdtemp(c->runtime_dir)) {
        fprintf(stderr, "framescope: cannot create a runtime directory: %s\n", strerror(errno));
        c->runtime_dir[0] = '\0';
        return -1;
    }
    setenv("XDG_RUNTIME_DIR", c->runtime_dir, 1);
    /* Weston's own clients then come to us, not to init, when Weston exits, and
     * compositor_stop() can make sure they are gone. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    char log_path[128];
    snprintf(log_path, sizeof(log_path), "%s/weston.log", c->runtime_dir);
    char *argv[] = { (char *)weston, "--backend=headless-backend.so", "--socket=framescope-0",
                     "--use-pixman", "--idle-time=0", NULL };
    /* A process group of its own, so that the terminal's ^C and hangup, which go to the
     * foreground group, never stop the compositor under the command: we stop it, last. Default
     * dispositions and no blocked signals, whatever we inherited, so that SIGTERM ends it. */
    sigset_t none, forwarded;
    sigemptyset(&none);
    child_stop_signal_set(&forwarded);
    /* Not the terminal for its standard descriptors: a background group that reads it is
     * stopped. */
    const struct child_spawn_opts opts = {
        .mask = &none,
        .defaults = &forwarded,
        .new_group = true,
        .log_path = log_path,
    };
    int r = child_spawn(&c->pid, argv, environ, &opts);
    if (r != 0) {
        fprintf(stderr, "framescope: no Wayland session, and weston could not be started (%s);"
                " install it (apt-get install weston) or pass --compositor never\n", strerror(r));
        c->pid = 0;
        return -1;
    }
    char socket[128];
    snprintf(socket, sizeof(socket), "%s/framescope-0", c->runtime_dir);
    if (compositor_wait_ready(c, socket, log_path) != 0)
        return -1;
    setenv("WAYLAND_DISPLAY", "framescope-0", 1);
    fprintf(stderr, "framescope: no Wayland session; started a headless Weston "
            "(WAYLAND_DISPLAY=framescope-0, XDG_RUNTIME_DIR=%s)\n", c->runtime_dir);
    return 0;
}

/* Waits up to timeout_ms for fd to become readable, through signals. */
static bool wait_readable(int fd, int timeout_ms)
{
    long long deadline = monotonic_ms() + timeout_ms;
    for (;;) {
        long long left = deadline - monotonic_ms();
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int n = poll(&p, 1, left > 0 ? (int)left : 0);
        if (n > 0)
            return true;
        if (n == 0 || errno != EINTR)
            return false;
    }
}

/* Removes everything in the directory open as dir_fd, which it closes, max_depth levels of
 * subdirectories down at most. A link is removed, never followed. */
static void empty_dir(int dir_fd, int max_depth)
{
    DIR *dir = fdopendir(dir_fd);
    if (!dir) {
        close(dir_fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (unlinkat(dir_fd, e->d_name, 0) == 0 || errno != EISDIR || max_depth == 0)
            continue;
        int sub_fd = openat(dir_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub_fd >= 0)
            empty_dir(sub_fd, max_depth - 1);
        unlinkat(dir_fd, e->d_name, AT_REMOVEDIR);
    }
    closedir(dir);
}

/* Stops Weston and removes its runtime directory with everything in it (socket, lock, log, a
 * client's files). */
void compositor_stop(struct compositor *c)
{
    if (c->pid > 0) {
        /* Without a pidfd (Linux before 5.3) Weston is killed at once; its files go anyway. */
        int pidfd = pidfd_open(c->pid, 0);
        kill(c->pid, SIGTERM);
        if (pidfd >= 0) {
            wait_readable(pidfd, COMPOSITOR_EXIT_TIMEOUT_MS);
            close(pidfd);
        }
        /* Weston is not reaped yet, so its pid, its group's id, is no one else's: this ends
         * Weston if it did not exit in time and anything it started that is still there. */
        kill(-c->pid, SIGKILL);
        /* Weston and the clients it starts (weston-desktop-shell, weston-keyboard), which
         * came to us when it exited (we are their subreaper): reaped here, not left behind. */
        while (waitpid(-c->pid, NULL, 0) > 0 || errno == EINTR)
            ;
        c->pid = 0;
    }
    if (c->runtime_dir[0]) {
        int dir_fd = open(c->runtime_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir_fd >= 0)
            empty_dir(dir_fd, RUNTIME_DIR_MAX_DEPTH);
        if (rmdir(c->runtime_dir) != 0 && errno != ENOENT)
            fprintf(stderr, "framescope: cannot remove the runtime directory %s: %s\n",
                    c->runtime_dir, strerror(errno));
        c->runtime_dir[0] = '\0';
    }
}

