/* framescope: the command-line front end.
 *
 *   framescope run [OPTIONS] [--] [COMMAND [ARGS...]]
 *
 * Runs COMMAND (the bundled demo workload when none is given) with VK_LAYER_FRAMESCOPE
 * enabled, starting a private headless Weston when there is no Wayland session, and returns
 * the command's exit status. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/capture_dir.h"
#include "analysis/recording.h"
#include "analysis/report.h"
#include "child.h"
#include "compare.h"
#include "daemon_client.h"
#include "report.h"
#include "record/format.h"
#include "util/config.h"
#include "util/log.h"
#include "util/unnamed_file.h"

extern char **environ;

#ifndef FRAMESCOPE_VERSION
#define FRAMESCOPE_VERSION "unknown"
#endif
#ifndef FRAMESCOPE_BINDIR
#define FRAMESCOPE_BINDIR "/usr/local/bin"
#endif

static const char usage[] =
    "usage: framescope run [OPTIONS] [--] [COMMAND [ARGS...]]\n"
    "       framescope report [--full | --format FORMAT] DIR\n"
    "       framescope diff [--format text|json] A B\n"
    "       framescope compare [--runs-frames N] [--a 'VAR=VALUE ...'] [--b 'VAR=VALUE ...']\n"
    "                          [-o DIR] [--format text|json] -- COMMAND [ARGS...]\n"
    "       framescope top [--once] [--json] [--interval SECONDS]\n"
    "       framescope snapshot PID|NAME [--last SECONDS]\n"
    "       framescope --help | --version\n"
    "\n"
    "Runs COMMAND under the framescope Vulkan layer and prints, when it exits, what held its\n"
    "frames back (CPU, GPU, display, cap, or CPU-GPU serialisation) with the numbers behind\n"
    "the verdict. With no COMMAND, profiles the bundled demo workload (framescope-demo).\n"
    "\n"
    "options for run:\n"
    "  -o, --output DIR     write the capture (recording.fsr, summary.json, frames.csv,\n"
    "                       zones.csv, trace.json, threads.csv, presentmon.csv,\n"
    "                       mangohud.csv, report.html) to DIR\n"
    "                       (default: ./framescope-APP-YYYYMMDD-HHMMSS)\n"
    "      --no-capture     print the summary only; write no capture\n"
    "      --summary WHERE  off, stderr (default: one screen), full (every line, on\n"
    "                       stderr) or a file path for the one-screen summary\n"
    "      --cap RATE       cap the frame rate: HZ (1-1000), auto (the refresh of the output\n"
    "                       the frames are shown on) or off (default)\n"
    "      --compositor MODE  auto (default): start a private headless Weston only when\n"
    "                       there is no display at all (no reachable Wayland session and no\n"
    "                       X display in DISPLAY; the bundled demo, which draws only on\n"
    "                       Wayland, whenever no Wayland session is reachable); never: do\n"
    "                       not start one\n"
    "  -h, --help           this text\n"
    "\n"
    "The command records into shared memory that framescope keeps: when it ends, however it\n"
    "ends (a crash or SIGKILL included), framescope analyses the recording, prints the summary\n"
    "and writes the capture.\n"
    "\n"
    "report: recomputes an output of a capture from its recording.fsr: FORMAT is text (the\n"
    "one-screen summary, byte for byte as printed when the run ended; default), full (every\n"
    "line of it; --full), json, csv, zones, trace, threads, presentmon, mangohud or html.\n"
    "diff: two captures side by side, per metric (fps, frame_ms, budget_ms, verdict shares)\n"
    "and per zone (thread and path), each difference marked when it exceeds the run-to-run\n"
    "noise, 2*sqrt(seA^2 + seB^2) with standard errors from frames.csv.\n"
    "compare: runs COMMAND three times under run: A1 with --a's variables, X with --b's, A2\n"
    "with --a's again, captures in DIR/A1, DIR/X, DIR/A2 (default:\n"
    "./framescope-compare-YYYYMMDD-HHMMSS); X is better or worse than A only by more than the\n"
    "drift |A1 - A2|, else inconclusive. --runs-frames N: each run must record N frames.\n"
    "top: every app profiled on this desktop, live, from framescoped (the per-user daemon):\n"
    "fps, frame time p50/p99 over the last second, verdict, share of frames shown, cap.\n"
    "snapshot: has framescoped write a capture of a running app's recent frames (all it holds,\n"
    "or the last SECONDS) without stopping it, and prints the capture's path.\n"
    "diff exits 0, or 2 for a bad directory or file (not a regular file, a frames.csv or\n"
    "zones.csv past 1 GiB, a summary.json past 64 MiB); compare 0, 1 when a run or its\n"
    "capture failed, 2 for a usage error (before anything runs).\n"
    "\n"
    "The environment variables the layer reads (FRAMESCOPE_*) pass through, but for\n"
    "FRAMESCOPE_SUMMARY and FRAMESCOPE_OUTPUT, which run applies itself (as --summary and\n"
    "--output); see framescope(1), ENVIRONMENT.\n"
    "SIGINT, SIGTERM and SIGHUP sent to framescope go on to the command, which ends as it\n"
    "would on its own; a private Weston is stopped and its directory removed in every case.\n"
    "Exit status: the command's own, 128+N if it died of signal N, 125 if framescope failed\n"
    "before running it, 2 for a usage error.\n";

static char self_dir[PATH_MAX];

static void find_self_dir(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) {
        snprintf(self_dir, sizeof(self_dir), "%s", FRAMESCOPE_BINDIR);
        return;
    }
    exe[n] = '\0';
    snprintf(self_dir, sizeof(self_dir), "%s", dirname(exe));
}

static bool file_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Prepends value to a colon-separated variable unless it is already there. */
static int env_prepend(const char *name, const char *value)
{
    const char *old = getenv(name);
    if (!old || !*old)
        return setenv(name, value, 1);
    size_t len = strlen(value);
    for (const char *p = old; (p = strstr(p, value)); p += len)
        if ((p == old || p[-1] == ':') && (p[len] == '\0' || p[len] == ':'))
            return 0;
    char *joined;
    if (asprintf(&joined, "%s:%s", value, old) < 0)
        return -1;
    int r = setenv(name, joined, 1);
    free(joined);
    return r;
}

/* The layer from the build tree when this binary runs from it, else the installed one. */
static int enable_layer(void)
{
    char dev[PATH_MAX + 64];
    snprintf(dev, sizeof(dev), "%s/../layers/dev/VkLayer_framescope.json", self_dir);
    if (file_exists(dev)) {
        char dir[PATH_MAX + 64];
        snprintf(dir, sizeof(dir), "%s/../layers/dev", self_dir);
        char resolved[PATH_MAX];
        if (!realpath(dir, resolved) || env_prepend("VK_ADD_LAYER_PATH", resolved) != 0)
            return -1;
    }
    return env_prepend("VK_INSTANCE_LAYERS", "VK_LAYER_FRAMESCOPE");
}

static const char *find_demo(char *buf, size_t len)
{
    snprintf(buf, len, "%s/demo/framescope-demo", self_dir);
    if (access(buf, X_OK) == 0)
        return buf;
    snprintf(buf, len, "%s/framescope-demo", self_dir);
    if (access(buf, X_OK) == 0)
        return buf;
    return NULL;
}

static bool wayland_session_reachable(void)
{
    const char *display = getenv("WAYLAND_DISPLAY");
    if (!display || !*display)
        return false;
    if (display[0] == '/')
        return file_exists(display);
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    if (!runtime)
        return false;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", runtime, display);
    return file_exists(path);
}

/* An X server the command can reach: $DISPLAY set, and for a local display (":N") its socket
 * there. A remote or unusual display is trusted as given. */
static bool x11_display_reachable(void)
{
    const char *display = getenv("DISPLAY");
    if (!display || !*display)
        return false;
    if (display[0] != ':')
        return true;
    char *end;
    long number = strtol(display + 1, &end, 10);
    if (end == display + 1 || number < 0 || number > 65535)
        return true;
    char path[64];
    snprintf(path, sizeof(path), "/tmp/.X11-unix/X%ld", number);
    return file_exists(path);
}

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

struct compositor {
    pid_t pid;
    char runtime_dir[64];
};

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
        if (file_exists(socket)) {
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

static int compositor_start(struct compositor *c)
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
 * client's files). Accepts a compositor that never started or failed half-way. */
static void compositor_stop(struct compositor *c)
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

/* Runs argv (tools/child.h); a signal that came first is said here. */
static int run_command(char **argv, int *ret_signal, bool *ret_ran)
{
    int status = child_run(argv, environ, ret_signal, ret_ran);
    if (!*ret_ran && child_stop_signal)
        fprintf(stderr, "framescope: %s before %s started\n", strsignal(child_stop_signal),
                argv[0]);
    return status;
}

/* The last component of path, trailing slashes aside, into ret_base; false when there is none
 * of its own ("/", ".", "..", "./"). */
static bool last_component(const char *path, char *ret_base, size_t base_len)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);
    if (len >= sizeof(buf))
        return false;
    memcpy(buf, path, len + 1);
    while (len > 1 && buf[len - 1] == '/')
        buf[--len] = '\0';
    const char *slash = strrchr(buf, '/');
    const char *base = slash ? slash + 1 : buf;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strlen(base) >= base_len)
        return false;
    snprintf(ret_base, base_len, "%s", base);
    return true;
}

/*
 * The layer makes the missing directories on the way to path (as mkdir -p does) and writes
 * beside path before renaming into place, so the nearest directory on the way that exists
 * must be one we can write in. what names path in the message. False after one line on
 * stderr.
 */
static bool parent_writable(const char *what, const char *path)
{
    char shown[FSCOPE_ESCAPE_SIZE];
    char dir[PATH_MAX];
    size_t len = strlen(path);
    if (len >= sizeof(dir)) {
        fprintf(stderr, "framescope: %s %s: the path is too long\n", what,
                fscope_config_escape(path, shown, sizeof(shown)));
        return false;
    }
    memcpy(dir, path, len + 1);
    for (;;) {
        while (len > 1 && dir[len - 1] == '/')
            dir[--len] = '\0';
        char *slash = strrchr(dir, '/');
        if (!slash)
            snprintf(dir, sizeof(dir), ".");
        else if (slash == dir)
            dir[1] = '\0';
        else
            *slash = '\0';
        len = strlen(dir);
        struct stat st;
        if (stat(dir, &st) == 0) {
            const char *why = !S_ISDIR(st.st_mode) ? strerror(ENOTDIR)
                              : access(dir, W_OK | X_OK) != 0 ? strerror(errno)
                                                               : NULL;
            if (why) {
                char shown_dir[FSCOPE_ESCAPE_SIZE];
                fprintf(stderr, "framescope: %s %s: cannot create it in %s: %s\n", what,
                        fscope_config_escape(path, shown, sizeof(shown)),
                        fscope_config_escape(dir, shown_dir, sizeof(shown_dir)), why);
            }
            return !why;
        }
        if (errno != ENOENT || strcmp(dir, ".") == 0 || strcmp(dir, "/") == 0) {
            fprintf(stderr, "framescope: %s %s: %s\n", what,
                    fscope_config_escape(path, shown, sizeof(shown)), strerror(errno));
            return false;
        }
    }
}

/* What a capture holds (src/analysis/capture_dir.c): a directory holding nothing else is
 * replaced, one that does is refused. */
static bool holds_only_capture(int dir_fd)
{
    DIR *dir = fdopendir(dir_fd);
    if (!dir) {
        close(dir_fd);
        return false;
    }
    bool only_capture = true;
    struct dirent *e;
    while (only_capture && (e = readdir(dir))) {
        only_capture = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
                       capture_is_file_name(e->d_name);
    }
    closedir(dir);
    return only_capture;
}

/*
 * The capture directory, checked before anything runs by the rules the layer applies when it
 * writes the capture at exit: a directory it can create, or an existing one of ours that only
 * we can write, holding at most an earlier capture. what names it in the message. False after
 * one line on stderr.
 */
static bool check_output(const char *what, const char *path)
{
    char shown[FSCOPE_ESCAPE_SIZE];
    char base[NAME_MAX + 1];
    if (!last_component(path, base, sizeof(base))) {
        fprintf(stderr, "framescope: %s %s: name a directory of its own (not /, . or ..)\n",
                what, fscope_config_escape(path, shown, sizeof(shown)));
        return false;
    }
    const char *why = NULL;
    char why_buf[128];
    struct stat st;
    /* A trailing slash would make lstat follow a link. */
    char target[PATH_MAX];
    snprintf(target, sizeof(target), "%s", path);
    for (size_t len = strlen(target); len > 1 && target[len - 1] == '/';)
        target[--len] = '\0';
    if (lstat(target, &st) != 0) {
        if (errno == ENOENT)
            return parent_writable(what, path);
        why = strerror(errno);
    } else if (S_ISLNK(st.st_mode)) {
        why = "it is a symbolic link; give the directory it points to";
    } else if (!S_ISDIR(st.st_mode)) {
        why = "it exists and is not a directory";
    } else if (st.st_uid != geteuid()) {
        snprintf(why_buf, sizeof(why_buf), "it is owned by another user (uid %u); choose a "
                 "directory of your own", (unsigned)st.st_uid);
        why = why_buf;
    } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why_buf, sizeof(why_buf), "%s can write to it (mode %04o); choose a "
                 "directory only you can write", st.st_mode & S_IWOTH ? "everyone" : "its group",
                 (unsigned)(st.st_mode & 07777));
        why = why_buf;
    } else {
        int dir_fd = open(target, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir_fd < 0)
            why = strerror(errno);
        else if (!holds_only_capture(dir_fd))
            why = "it holds files that are not a framescope capture";
    }
    if (why) {
        fprintf(stderr, "framescope: %s %s: %s\n", what,
                fscope_config_escape(path, shown, sizeof(shown)), why);
        return false;
    }
    return parent_writable(what, path);
}

/* A summary file (FRAMESCOPE_SUMMARY naming a path, from --summary or inherited): one the
 * layer can write at exit. False after one line on stderr. */
static bool check_summary_file(const char *path)
{
    char shown[FSCOPE_ESCAPE_SIZE];
    char base[NAME_MAX + 1];
    struct stat st;
    const char *why = NULL;
    /* /dev/stderr, a `>(tee log)` substitution's /dev/fd/63: a descriptor we hold, written
     * into as it is (capture_write_file). */
    if (capture_path_names_descriptor(path))
        return true;
    if (!last_component(path, base, sizeof(base)))
        why = "name a file (not /, . or ..)";
    else if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        why = "it is a symbolic link, which framescope does not follow; name the file itself";
    else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        why = "it is a directory; name a file";
    else if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) &&
             !S_ISFIFO(st.st_mode))
        why = "it is neither a file, a device nor a FIFO";
    if (why) {
        fprintf(stderr, "framescope: summary file %s: %s\n",
                fscope_config_escape(path, shown, sizeof(shown)), why);
        return false;
    }
    return parent_writable("summary file", path);
}

/* The recording run hands to the command (src/record/format.h): a memfd the command's
 * framescope writes into and we keep, so we can analyse it however the command ends. */
struct observed_recording {
    int fd;       /* ours, close-on-exec */
    int child_fd; /* the command's copy, named in FRAMESCOPE_RECORDING_FD */
    /* The unnamed file the command streams sealed chunks to (src/record/stream.c). */
    int stream_fd, child_stream_fd;
    struct rec_header *header;
};


static int recording_create(struct observed_recording *r)
{
    r->fd = sealed_memfd_create("framescope-recording", REC_ARENA_SIZE);
    r->child_fd = r->child_stream_fd = -1;
    r->stream_fd = unnamed_file_create(getenv("TMPDIR")); /* -1: nothing is streamed */
    r->header = MAP_FAILED;
    if (r->fd < 0)
        return r->fd;
    r->header = mmap(NULL, sizeof(*r->header), PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    if (r->header == MAP_FAILED)
        return -errno;
    rec_header_init(r->header, REC_ARENA_SIZE);
    r->child_fd = fcntl(r->fd, F_DUPFD, 3); /* without close-on-exec: the command inherits it */
    if (r->child_fd < 0)
        return -errno;
    if (r->stream_fd >= 0) {
        r->child_stream_fd = fcntl(r->stream_fd, F_DUPFD, 3);
        r->header->stream_fd = r->child_stream_fd; /* the number the command sees */
    }
    char fd_text[16];
    snprintf(fd_text, sizeof(fd_text), "%d", r->child_fd);
    return setenv("FRAMESCOPE_RECORDING_FD", fd_text, 1) == 0 ? 0 : -errno;
}

static void recording_close(struct observed_recording *r)
{
    if (r->header != MAP_FAILED)
        munmap(r->header, sizeof(*r->header));
    if (r->child_fd >= 0)
        close(r->child_fd);
    if (r->fd >= 0)
        close(r->fd);
    if (r->child_stream_fd >= 0)
        close(r->child_stream_fd);
    if (r->stream_fd >= 0)
        close(r->stream_fd);
}

/* Bytes of the recording's file in memory past offset (what its stream thread made resident
 * ahead of the writers: src/record/recording.c), found through a descriptor of our own so that
 * the one the command shares keeps its offset. -1: not known. */
static long long resident_after(int fd, uint64_t offset)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    int own = open(path, O_RDONLY | O_CLOEXEC);
    if (own < 0)
        return -1;
    long long bytes = 0;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    off_t at = (off_t)((offset + page - 1) / page * page); /* whole pages past it */
    for (;;) {
        off_t data = lseek(own, at, SEEK_DATA);
        off_t hole = data < 0 ? -1 : lseek(own, data, SEEK_HOLE);
        if (data < 0 || hole < 0) {
            if (errno != ENXIO)
                bytes = -1;
            break;
        }
        bytes += hole - data;
        at = hole;
    }
    close(own);
    return bytes;
}

/* Analyses the command's recording once it has ended (exit status, or the signal that killed
 * it): the summary and the capture, as the command would have written them at its own exit.
 * Returns 0, 1 when the capture or summary could not be written (said on stderr), or 3 when
 * there was nothing to analyse. */
static int recording_analyse(struct observed_recording *r, int exit_status, int signal,
                             enum report_summary where, const char *summary_path,
                             const char *output)
{
    struct rec_header *h = r->header;
    if (atomic_load(&h->owner_pid) == 0)
        return 3;
    h->end_status = signal ? 0 : exit_status + 1;
    h->end_signal = signal;
    uint64_t used = atomic_load(&h->used);
    if (used < sizeof(*h) || used > REC_ARENA_SIZE) {
        fprintf(stderr, "framescope: the command's recording is damaged (%llu bytes in use)\n",
                (unsigned long long)used);
        return 1;
    }
    void *bytes = mmap(NULL, (size_t)used, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    if (bytes == MAP_FAILED) {
        fprintf(stderr, "framescope: cannot map the command's recording: %s\n", strerror(errno));
        return 1;
    }
    struct stat memory, streamed;
    if (fstat(r->fd, &memory) == 0 && r->stream_fd >= 0 && fstat(r->stream_fd, &streamed) == 0) {
        long long ahead = resident_after(r->fd, used);
        fscope_log(FSCOPE_LOG_DEBUG, "the recording held %lld KiB in memory at the end (%lld KiB "
                   "of it made resident ahead of use), %lld KiB streamed to disk",
                   (long long)memory.st_blocks / 2, ahead < 0 ? -1 : ahead / 1024,
                   (long long)streamed.st_blocks / 2);
    }
    struct recording *rec = NULL;
    char why[256];
    /* With the machine the run ended on, kept for a report made elsewhere later. */
    struct system_description machine;
    system_describe(&machine);
    int e = recording_read_ended(bytes, (size_t)used, r->stream_fd, &machine, &rec, why,
                                 sizeof(why));
    int status = 0, capture_error = 0;
    if (e) {
        fprintf(stderr, "framescope: cannot read the command's recording: %s\n",
                why[0] ? why : strerror(-e));
        status = 1;
    } else {
        struct report *report = report_create(rec);
        if (!report)
            status = 1;
        else if (!report_has_frames(report) && !rec->enabled)
            status = 3; /* framescope loaded (the library) but nothing to report */
        else if (report_deliver(report, bytes, (size_t)used, where, summary_path, output,
                                stderr, &capture_error) != 0)
            status = 1;
        if (capture_error)
            fprintf(stderr, "framescope: the capture was NOT written to %s (%s)\n", output,
                    strerror(-capture_error));
        report_destroy(report);
    }
    recording_free(rec);
    munmap(bytes, (size_t)used);
    return status;
}

static int cmd_run(int argc, char **argv)
{
    enum { OPT_NO_CAPTURE = 256, OPT_SUMMARY, OPT_COMPOSITOR, OPT_CAP };
    static const struct option options[] = {
        { "output", required_argument, NULL, 'o' },
        { "no-capture", no_argument, NULL, OPT_NO_CAPTURE },
        { "summary", required_argument, NULL, OPT_SUMMARY },
        { "compositor", required_argument, NULL, OPT_COMPOSITOR },
        { "cap", required_argument, NULL, OPT_CAP },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *output = NULL, *summary_option = NULL;
    bool capture = true, compositor_auto = true;
    int opt;
    /* '+': stop at the first non-option so the command's own options stay its own. */
    while ((opt = getopt_long(argc, argv, "+o:h", options, NULL)) != -1) {
        switch (opt) {
        case 'o':
            if (!*optarg) {
                fprintf(stderr, "framescope: --output needs a directory\n");
                return 2;
            }
            output = optarg;
            break;
        case OPT_NO_CAPTURE:
            capture = false;
            break;
        case OPT_SUMMARY: {
            /* Keywords go on in lower case: the layer takes any, a script reading it may not. */
            const char *summary = NULL;
            if (fscope_config_keyword(optarg, "off"))
                summary = "off";
            else if (fscope_config_keyword(optarg, "stderr"))
                summary = "stderr";
            else if (fscope_config_keyword(optarg, "full"))
                summary = "full";
            else if (fscope_config_is_path(optarg))
                summary = optarg;
            if (!summary) {
                char shown[FSCOPE_ESCAPE_SIZE];
                fprintf(stderr, "framescope: --summary takes off, stderr, full or a path starting "
                        "with / or ./ (got '%s')\n",
                        fscope_config_escape(optarg, shown, sizeof(shown)));
                return 2;
            }
            summary_option = summary;
            break;
        }
        case OPT_COMPOSITOR:
            if (fscope_config_keyword(optarg, "auto")) {
                compositor_auto = true;
            } else if (fscope_config_keyword(optarg, "never")) {
                compositor_auto = false;
            } else {
                char shown[FSCOPE_ESCAPE_SIZE];
                fprintf(stderr, "framescope: --compositor takes auto or never (got '%s')\n",
                        fscope_config_escape(optarg, shown, sizeof(shown)));
                return 2;
            }
            break;
        case OPT_CAP: {
            double hz;
            const char *cap = NULL;
            if (fscope_config_keyword(optarg, "auto"))
                cap = "auto";
            else if (fscope_config_keyword(optarg, "off"))
                cap = "off";
            else if (fscope_config_parse_double(optarg, 1, 1000, &hz)) /* src/record/cap.h's limits */
                cap = optarg;
            if (!cap) {
                char shown[FSCOPE_ESCAPE_SIZE];
                fprintf(stderr, "framescope: --cap takes a rate in 1..1000 Hz, auto or off "
                        "(got '%s')\n", fscope_config_escape(optarg, shown, sizeof(shown)));
                return 2;
            }
            setenv("FRAMESCOPE_CAP", cap, 1);
            break;
        }
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            fputs(usage, stderr);
            return 2;
        }
    }
    if (output && !capture) {
        fprintf(stderr, "framescope: --output and --no-capture contradict each other\n");
        return 2;
    }

    char demo[PATH_MAX + 32];
    char *demo_argv[] = { demo, NULL };
    char **command = argv + optind;
    if (optind >= argc) {
        if (!find_demo(demo, sizeof(demo))) {
            fprintf(stderr, "framescope: no COMMAND given and the demo workload "
                    "(framescope-demo) is not installed beside %s\n", self_dir);
            return 125;
        }
        command = demo_argv;
    }

    char default_output[PATH_MAX];
    if (capture && !output) {
        char stamp[32];
        time_t now = time(NULL);
        strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&now));
        char app[PATH_MAX];
        snprintf(app, sizeof(app), "%s", command[0]);
        snprintf(default_output, sizeof(default_output), "framescope-%s-%s", basename(app),
                 stamp);
        output = default_output;
    }
    /* Checked now, not found out when the command exits with its run lost. */
    if (output && !check_output(output == default_output ? "capture directory" : "--output",
                                output))
        return 2;
    /* The summary goes where --summary says, else where an inherited FRAMESCOPE_SUMMARY does
     * (read as the layer reads it). */
    const char *summary_text = summary_option ? summary_option : getenv("FRAMESCOPE_SUMMARY");
    enum report_summary where = REPORT_SUMMARY_STDERR;
    if (summary_text && fscope_config_keyword(summary_text, "off"))
        where = REPORT_SUMMARY_OFF;
    else if (summary_text && fscope_config_keyword(summary_text, "full"))
        where = REPORT_SUMMARY_FULL;
    else if (summary_text && fscope_config_is_path(summary_text))
        where = REPORT_SUMMARY_PATH;
    if (where == REPORT_SUMMARY_PATH && !check_summary_file(summary_text))
        return 2;
    /* We write the summary and the capture from the recording; a process of the command that
     * does not record into it (one it starts) prints its own summary and writes no capture. */
    unsetenv("FRAMESCOPE_SUMMARY");
    unsetenv("FRAMESCOPE_OUTPUT");
    struct observed_recording recording;
    int e = recording_create(&recording);
    if (e != 0) {
        fprintf(stderr, "framescope: cannot create the recording: %s\n", strerror(-e));
        recording_close(&recording);
        return 125;
    }

    if (enable_layer() != 0) {
        fprintf(stderr, "framescope: cannot set up the layer environment: %s\n",
                strerror(errno));
        return 125;
    }
    if (child_catch_stop_signals() != 0) {
        fprintf(stderr, "framescope: cannot catch signals: %s\n", strerror(errno));
        return 125;
    }

    /* Every way out goes through compositor_stop(). */
    struct compositor compositor = { 0 };
    int status, command_signal = 0;
    bool ran = false;
    /* A private compositor only where there is no display at all: a game on an X11 desktop
     * keeps the user's display and XDG_RUNTIME_DIR (its audio and D-Bus sockets, and `top`).
     * The bundled demo draws only on Wayland, so it gets one whenever no Wayland session is
     * reachable. */
    bool need_compositor = !wayland_session_reachable() &&
                           (command == demo_argv || !x11_display_reachable());
    if (compositor_auto && need_compositor && compositor_start(&compositor) != 0)
        status = child_stop_signal ? 128 + child_stop_signal : 125;
    else
        status = run_command(command, &command_signal, &ran);
    compositor_stop(&compositor);
    int analysed = ran ? recording_analyse(&recording, command_signal ? 0 : status,
                                           command_signal, where, summary_text, output)
                       : 3;
    recording_close(&recording);
    if (ran && analysed == 3) {
        fprintf(stderr, "framescope: the command recorded nothing (did it use Vulkan?)%s\n",
                output ? "; no capture written" : "");
    } else if (ran && analysed == 1) {
        if (status == 0)
            status = 1; /* said on stderr: the run's capture or summary is lost */
    } else if (output && ran) {
        if (command_signal)
            fprintf(stderr, "framescope: the command died of signal %d (%s); its capture, up "
                    "to then, is in %s\n", command_signal, strsignal(command_signal), output);
        else
            fprintf(stderr, "framescope: capture in %s (open trace.json in ui.perfetto.dev, "
                    "report.html in a browser)\n", output);
    }
    return status;
}

int main(int argc, char **argv)
{
    find_self_dir();
    log_init();
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        fputs(usage, stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("framescope %s\n", FRAMESCOPE_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(argv[1], "report") == 0)
        return cmd_report(argc - 1, argv + 1);
    if (strcmp(argv[1], "diff") == 0)
        return cmd_diff(argc - 1, argv + 1);
    if (strcmp(argv[1], "compare") == 0)
        return cmd_compare(argc - 1, argv + 1);
    if (strcmp(argv[1], "top") == 0)
        return cmd_top(argc - 1, argv + 1);
    if (strcmp(argv[1], "snapshot") == 0)
        return cmd_snapshot(argc - 1, argv + 1);
    fprintf(stderr, "framescope: unknown command '%s'\n\n%s", argv[1], usage);
    return 2;
}
