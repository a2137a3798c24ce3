/* framescoped: the per-user daemon that keeps every profiled app's recording (src/util/
 * daemon_proto.h says what is spoken on its socket). Apps register as their frames start; when
 * one ends, however it ends, the daemon analyses its recording and writes the capture under
 * $XDG_STATE_HOME/framescope/, keeping the newest --keep of them, and logs one line (stderr:
 * the journal under systemd). `framescope top` and `framescope snapshot` ask it about the apps
 * still running.
 *
 * Socket-activated (framescoped.socket: LISTEN_FDS) or, run by hand, it makes its socket itself
 * in a 0700 directory. One thread, one epoll loop; recordings are mapped only while read. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "analysis/capture_dir.h"
#include "analysis/live.h"
#include "analysis/recording.h"
#include "analysis/report.h"
#include "util/config.h"
#include "util/daemon_proto.h"
#include "util/text.h"

#define MAX_APPS 1024
#define MAX_CLIENTS 64 /* connections not yet registered or answered */
#define DEFAULT_KEEP 20

static const char usage[] =
    "usage: framescoped [--keep N] [--state-dir DIR]\n"
    "\n"
    "The per-user framescope daemon. Profiled apps register with it; when one ends (exit,\n"
    "crash, SIGKILL) it writes the app's capture under DIR (default\n"
    "$XDG_STATE_HOME/framescope, else ~/.local/state/framescope) and keeps the newest N\n"
    "(default 20). Started by systemd's framescoped.socket, or by hand: it then listens at\n"
    "$XDG_RUNTIME_DIR/framescope/framescoped.sock itself.\n";

struct app {
    bool used;
    int pid;
    int pidfd, conn;     /* conn: the app's registration connection; -1 once it closed */
    int memfd, stream_fd; /* stream_fd -1: the app streams nothing */
    bool observed;       /* framescope run writes this app's capture */
    char name[64], exe[256];
    time_t since;
};

static struct app apps[MAX_APPS];
static int epfd = -1;
static char state_dir[PATH_MAX];
static long keep = DEFAULT_KEEP;

/* epoll's data: what an fd is. */
enum { TAG_LISTEN = 1, TAG_CLIENT, TAG_PIDFD, TAG_APPCONN };
#define TAG(kind, index) (((uint64_t)(kind) << 32) | (uint32_t)(index))

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("framescoped: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- the state directory and its captures ---- */

static bool default_state_dir(void)
{
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/')
        n = snprintf(state_dir, sizeof(state_dir), "%s/framescope", xdg);
    else if (home && home[0] == '/')
        n = snprintf(state_dir, sizeof(state_dir), "%s/.local/state/framescope", home);
    else
        return false;
    return n > 0 && (size_t)n < sizeof(state_dir);
}

/* Creates path and its parents, 0700 where new. */
static int make_dirs(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    return mkdir(buf, 0700) != 0 && errno != EEXIST ? -errno : 0;
}

struct kept {
    char name[256];
    struct timespec mtime;
};

static int kept_compare(const void *a, const void *b)
{
    const struct kept *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
    return strcmp(y->name, x->name);
}

/* Removes a capture directory of ours: only the files a capture holds, then the directory. */
static void remove_capture(int dir_fd, const char *name)
{
    int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (capture_is_file_name(e->d_name))
            unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    if (unlinkat(dir_fd, name, AT_REMOVEDIR) != 0)
        say("kept %s/%s: it holds files that are not a capture's", state_dir, name);
}

/* Keeps the newest `keep` captures (directories whose names end in ".capture"). */
static void prune_captures(void)
{
    int dir_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dir_fd >= 0 ? fdopendir(dir_fd) : NULL;
    if (!d) {
        if (dir_fd >= 0)
            close(dir_fd);
        return;
    }
    struct kept *list = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        struct stat st;
        if (len < 9 || strcmp(e->d_name + len - 8, ".capture") != 0 ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            struct kept *grown = realloc(list, cap * sizeof(*list));
            if (!grown)
                break;
            list = grown;
        }
        snprintf(list[n].name, sizeof(list[n].name), "%s", e->d_name);
        list[n++].mtime = st.st_mtim;
    }
    qsort(list, n, sizeof(*list), kept_compare);
    for (size_t i = (size_t)keep; i < n; i++)
        remove_capture(dirfd(d), list[i].name);
    free(list);
    closedir(d);
}

/* "<name>-<pid>-<YYYYmmdd-HHMMSS>[-snapshot][-N].capture", the name made safe for a path; -N
 * (2, 3, ...) when a capture of that name exists already (two snapshots in one second), so
 * none is ever replaced. The daemon's one thread makes every capture: no race between the
 * look and the write. */
static void capture_path(const struct app *a, const char *kind, char *buf, size_t len)
{
    char name[64];
    snprintf(name, sizeof(name), "%s", a->name[0] ? a->name : "app");
    for (char *p = name; *p; p++)
        if (*p == '/' || *p == '.' || *p == '\\' || (unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '_';
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y%m%d-%H%M%S", &tm);
    snprintf(buf, len, "%.3900s/%.63s-%d-%.31s%.16s.capture", state_dir, name, a->pid, when,
             kind);
    struct stat st;
    for (unsigned n = 2; lstat(buf, &st) == 0 && n < 10000; n++)
        snprintf(buf, len, "%.3900s/%.63s-%d-%.31s%.16s-%u.capture", state_dir, name, a->pid,
                 when, kind, n);
}

/* ---- reading a registered recording ---- */

struct mapped {
    void *bytes;
    size_t len; /* what is in use */
    size_t map_len;
};

/* Maps the recording (private: unstreaming writes into our copy, never the app's). */
static int map_recording(const struct app *a, bool writable, struct mapped *m, char *why,
                         size_t why_len)
{
    struct stat st;
    if (fstat(a->memfd, &st) != 0)
        return -errno;
    m->map_len = (size_t)st.st_size;
    m->bytes = mmap(NULL, m->map_len, PROT_READ | (writable ? PROT_WRITE : 0),
                    (writable ? MAP_PRIVATE : MAP_SHARED) | MAP_NORESERVE, a->memfd, 0);
    if (m->bytes == MAP_FAILED)
        return -errno;
    const struct rec_header *h = m->bytes;
    uint64_t used = atomic_load(&h->used);
    if (used < sizeof(*h) || used > m->map_len) {
        snprintf(why, why_len, "its recording claims %llu bytes in use of %zu",
                 (unsigned long long)used, m->map_len);
        munmap(m->bytes, m->map_len);
        return -EINVAL;
    }
    m->len = (size_t)used;
    return 0;
}

/* The whole recording (its streamed chunks read back into our private copy), parsed. */
static int read_whole(const struct app *a, struct mapped *m, struct recording **rec, char *why,
                      size_t why_len)
{
    why[0] = '\0';
    int e = map_recording(a, true, m, why, why_len);
    if (e)
        return e;
    e = recording_read_ended(m->bytes, m->len, a->stream_fd, rec, why, why_len);
    if (e)
        munmap(m->bytes, m->map_len);
    return e;
}

/* Analyses an app's recording (all of it, or its last last_ms) into a capture. Returns 0 and
 * the capture's path, or -errno with why. */
static int write_capture(const struct app *a, const char *kind, uint32_t last_ms, char *path,
                         size_t path_len, char *summary, size_t summary_len, char *why,
                         size_t why_len)
{
    struct mapped m;
    struct recording *rec = NULL;
    int e = read_whole(a, &m, &rec, why, why_len);
    if (e)
        return e;
    if (last_ms)
        recording_keep_recent(rec, last_ms / 1e3);
    struct report *report = report_create(rec);
    if (!report) {
        e = -ENOMEM;
    } else {
        int made = make_dirs(state_dir);
        capture_path(a, kind, path, path_len);
        e = made ? made : report_write_capture(report, m.bytes, m.len, path, NULL);
        if (e)
            snprintf(why, why_len, "cannot write %s: %s", path, strerror(-e));
        struct live_stats s;
        live_stats_compute(rec, 1e9, &s);
        snprintf(summary, summary_len, "%llu frames, %s-bound",
                 (unsigned long long)s.frames, s.verdict);
        report_destroy(report);
    }
    recording_free(rec);
    munmap(m.bytes, m.map_len);
    if (!e)
        prune_captures();
    return e;
}

/* ---- apps ---- */

static void app_forget(struct app *a)
{
    if (a->pidfd >= 0)
        close(a->pidfd);
    if (a->conn >= 0)
        close(a->conn);
    if (a->memfd >= 0)
        close(a->memfd);
    if (a->stream_fd >= 0)
        close(a->stream_fd);
    memset(a, 0, sizeof(*a));
}

/* The app's process is gone: its capture, and a line for the journal. */
static void app_ended(struct app *a)
{
    const struct rec_header *h = NULL;
    struct mapped m;
    char why[256] = "";
    bool clean = false;
    if (map_recording(a, false, &m, why, sizeof(why)) == 0) {
        h = m.bytes;
        clean = atomic_load(&h->state) == REC_STATE_ENDED;
        munmap(m.bytes, m.map_len);
    }
    const char *how = clean ? "exited" : "ended without reaching its exit (killed or crashed)";
    if (a->observed) {
        say("%s (pid %d) %s; framescope run analyses it", a->name, a->pid, how);
        app_forget(a);
        return;
    }
    char path[PATH_MAX], summary[128] = "";
    int e = write_capture(a, "", 0, path, sizeof(path), summary, sizeof(summary), why,
                          sizeof(why));
    if (e)
        say("%s (pid %d) %s; no capture: %s", a->name, a->pid, how, why[0] ? why : strerror(-e));
    else
        say("%s (pid %d) %s: %s; capture %s", a->name, a->pid, how, summary, path);
    app_forget(a);
}

static int pidfd_open_of(int pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Checks what a registration carries: a recording of ours, of a size it can have. */
static bool recording_plausible(int fd, char *why, size_t why_len)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, why_len, "the recording is not a file");
        return false;
    }
    if ((uint64_t)st.st_size < sizeof(struct rec_header) || (uint64_t)st.st_size > REC_ARENA_SIZE) {
        snprintf(why, why_len, "the recording's size %lld is impossible", (long long)st.st_size);
        return false;
    }
    struct rec_header h;
    if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
        memcmp(h.magic, REC_MAGIC, 8) != 0 || h.version != REC_VERSION ||
        h.header_size != sizeof(h) || h.size != (uint64_t)st.st_size ||
        atomic_load(&h.used) > h.size) {
        snprintf(why, why_len, "not a framescope recording of version %u, or its header "
                 "claims impossible sizes", REC_VERSION);
        return false;
    }
    return true;
}

static void app_register(int conn, const struct fscoped_request *req, const struct ucred *cred,
                         int *fds, unsigned nfds)
{
    char why[160] = "";
    struct stat st;
    if (req->pid != cred->pid)
        snprintf(why, sizeof(why), "registers pid %d from pid %d", req->pid, cred->pid);
    else if (nfds < 1 || nfds > 2)
        snprintf(why, sizeof(why), "sent %u descriptors", nfds);
    else if (recording_plausible(fds[0], why, sizeof(why)) &&
             nfds == 2 && (fstat(fds[1], &st) != 0 || !S_ISREG(st.st_mode)))
        snprintf(why, sizeof(why), "its stream file is not a file");
    int pidfd = why[0] ? -1 : pidfd_open_of(cred->pid);
    if (!why[0] && pidfd < 0)
        snprintf(why, sizeof(why), "pidfd_open: %s", strerror(errno));
    struct app *a = NULL;
    for (unsigned i = 0; !why[0] && i < MAX_APPS && !a; i++)
        if (!apps[i].used)
            a = &apps[i];
    if (!why[0] && !a)
        snprintf(why, sizeof(why), "%d apps registered already", MAX_APPS);
    if (why[0]) {
        say("refused a registration: pid %d %s", cred->pid, why);
        for (unsigned i = 0; i < nfds; i++)
            close(fds[i]);
        if (pidfd >= 0)
            close(pidfd);
        close(conn);
        return;
    }
    /* The same process again (the daemon restarted, or the app reconnected): one entry. */
    for (unsigned i = 0; i < MAX_APPS; i++)
        if (apps[i].used && apps[i].pid == cred->pid)
            app_forget(&apps[i]);
    a->used = true;
    a->pid = cred->pid;
    a->pidfd = pidfd;
    a->conn = conn;
    a->memfd = fds[0];
    a->stream_fd = nfds == 2 ? fds[1] : -1;
    a->observed = req->flags & FSCOPED_OBSERVED;
    a->since = time(NULL);
    /* The app chose both (prctl, argv[0]): printable before they reach a log line or top. */
    fscope_text_printable(a->name, sizeof(a->name), req->name, sizeof(req->name));
    fscope_text_printable(a->exe, sizeof(a->exe), req->exe, sizeof(req->exe));
    unsigned index = (unsigned)(a - apps);
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG(TAG_PIDFD, index) };
    epoll_ctl(epfd, EPOLL_CTL_ADD, pidfd, &ev);
    ev.data.u64 = TAG(TAG_APPCONN, index);
    ev.events = EPOLLRDHUP;
    epoll_ctl(epfd, EPOLL_CTL_ADD, conn, &ev);
    say("%s (pid %d) registered%s", a->name, a->pid, a->observed ? " (under framescope run)" : "");
}

/* ---- replies ---- */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void reply(int conn, const char *text, size_t len)
{
    if (len > FSCOPED_REPLY_MAX)
        len = FSCOPED_REPLY_MAX;
    if (send(conn, text, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        say("a reply was not sent: %s", strerror(errno));
}

/* Every app, live: what `framescope top` shows. */
static void reply_list(int conn)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    fputs("{\"apps\": [", f);
    unsigned shown = 0;
    time_t now = time(NULL);
    for (unsigned i = 0; i < MAX_APPS; i++) {
        struct app *a = &apps[i];
        if (!a->used)
            continue;
        struct mapped m;
        struct recording *rec = NULL;
        char why[256] = "";
        struct live_stats s = { .verdict = "none" };
        /* Live: what is still in memory, read in place (the reader copies and checks). */
        int e = map_recording(a, false, &m, why, sizeof(why));
        if (!e) {
            e = recording_read(m.bytes, m.len, &rec, why, sizeof(why));
            munmap(m.bytes, m.map_len);
        }
        if (!e) {
            recording_compute_gpu_busy(rec);
            live_stats_compute(rec, 1.0, &s);
        }
        fprintf(f, "%s{\"pid\": %d, \"name\": ", shown++ ? ", " : "", a->pid);
        json_string(f, a->name);
        fputs(", \"exe\": ", f);
        json_string(f, a->exe);
        fprintf(f, ", \"seconds\": %lld, \"observed\": %s, \"frames\": %llu, \"fps\": %.3f, "
                "\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"verdict\": ", (long long)(now - a->since),
                a->observed ? "true" : "false", (unsigned long long)s.frames, s.fps, s.p50_ms,
                s.p99_ms);
        json_string(f, s.verdict);
        fprintf(f, ", \"verdict_share\": %.4f, \"shown\": %llu, \"resolved\": %llu, \"cap_hz\": "
                "%.3f, \"error\": ", s.verdict_share, (unsigned long long)s.shown,
                (unsigned long long)s.resolved, s.cap_hz);
        json_string(f, e ? (why[0] ? why : strerror(-e)) : "");
        fputc('}', f);
        recording_free(rec);
    }
    fputs("]}\n", f);
    fclose(f);
    reply(conn, text, len);
    free(text);
}

static void reply_snapshot(int conn, const struct fscoped_request *req)
{
    struct app *a = NULL;
    unsigned matches = 0;
    for (unsigned i = 0; i < MAX_APPS; i++) {
        if (!apps[i].used)
            continue;
        if (req->pid ? apps[i].pid == req->pid
                     : strncmp(apps[i].name, req->name, sizeof(req->name)) == 0) {
            a = &apps[i];
            matches++;
        }
    }
    char text[PATH_MAX + 512], path[PATH_MAX], summary[128], why[256] = "";
    FILE *f = fmemopen(text, sizeof(text), "w");
    if (!f)
        return;
    if (!a) {
        fputs("{\"error\": \"no profiled app is running by that pid or name\"}", f);
    } else if (matches > 1) {
        fputs("{\"error\": \"more than one profiled app has that name: give its pid\"}", f);
    } else {
        int e = write_capture(a, "-snapshot", req->last_ms, path, sizeof(path), summary,
                              sizeof(summary), why, sizeof(why));
        fputs(e ? "{\"error\": " : "{\"capture\": ", f);
        json_string(f, e ? (why[0] ? why : strerror(-e)) : path);
        fprintf(f, ", \"pid\": %d, \"name\": ", a->pid);
        json_string(f, a->name);
        fputc('}', f);
        if (!e)
            say("snapshot of %s (pid %d): %s; capture %s", a->name, a->pid, summary, path);
    }
    fputc('\n', f);
    long len = ftell(f);
    fclose(f);
    reply(conn, text, len > 0 ? (size_t)len : 0);
}

/* ---- connections ---- */

static int clients[MAX_CLIENTS];

static void client_accept(int listen_fd)
{
    int conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (conn < 0)
        return;
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) {
        say("refused a connection from uid %d (only uid %d may connect)",
            len == sizeof(cred) ? (int)cred.uid : -1, (int)getuid());
        close(conn);
        return;
    }
    for (unsigned i = 0; i < MAX_CLIENTS; i++) {
        if (clients[i] < 0) {
            clients[i] = conn;
            struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG(TAG_CLIENT, i) };
            epoll_ctl(epfd, EPOLL_CTL_ADD, conn, &ev);
            return;
        }
    }
    say("refused a connection: %d are waiting already", MAX_CLIENTS);
    close(conn);
}

/* One request from a connection; it is answered (or registered) and leaves the client list. */
static void client_request(unsigned i)
{
    int conn = clients[i];
    struct fscoped_request req;
    union {
        char buf[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct iovec iov = { .iov_base = &req, .iov_len = sizeof(req) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                          .msg_controllen = sizeof(control.buf) };
    ssize_t n = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    int fds[4];
    unsigned nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        unsigned count = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (unsigned k = 0; k < count; k++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(fd));
            if (nfds < 4)
                fds[nfds++] = fd;
            else
                close(fd);
        }
    }
    /* Everything below takes the connection out of the client list. */
    epoll_ctl(epfd, EPOLL_CTL_DEL, conn, NULL);
    clients[i] = -1;
    struct ucred cred;
    socklen_t len = sizeof(cred);
    bool ok = n == (ssize_t)sizeof(req) && !(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
              memcmp(req.magic, FSCOPED_MAGIC, 8) == 0 &&
              getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0;
    if (ok && req.kind == FSCOPED_REGISTER) {
        app_register(conn, &req, &cred, fds, nfds);
        return;
    }
    for (unsigned k = 0; k < nfds; k++)
        close(fds[k]);
    if (!ok) {
        if (n != 0)
            say("dropped a malformed message (%zd bytes)", n);
    } else if (req.kind == FSCOPED_LIST) {
        reply_list(conn);
    } else if (req.kind == FSCOPED_SNAPSHOT) {
        req.name[sizeof(req.name) - 1] = '\0';
        reply_snapshot(conn, &req);
    } else {
        say("dropped a request of unknown kind %u", req.kind);
    }
    close(conn);
}

/* ---- the socket ---- */

/* systemd's socket (sd_listen_fds' protocol: LISTEN_PID is us, LISTEN_FDS is 1, fd 3), or
 * ours. */
static int listen_socket(char *path, size_t path_len)
{
    const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
    long listen_pid, listen_fds;
    if (pid && fds && fscope_config_parse_long(pid, 1, INT_MAX, &listen_pid) &&
        listen_pid == getpid() && fscope_config_parse_long(fds, 1, 64, &listen_fds)) {
        unsetenv("LISTEN_PID");
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_FDNAMES");
        int type;
        socklen_t len = sizeof(type);
        if (listen_fds != 1 || getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
            type != SOCK_SEQPACKET) {
            say("systemd passed %ld sockets; expected one SOCK_SEQPACKET socket "
                "(framescoped.socket's ListenSequentialPacket=)", listen_fds);
            return -1;
        }
        fcntl(3, F_SETFD, FD_CLOEXEC);
        snprintf(path, path_len, "(from systemd)");
        return 3;
    }
    if (!fscoped_socket_path(path, path_len)) {
        say("XDG_RUNTIME_DIR is unset or not absolute: no place for the socket");
        return -1;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    *strrchr(dir, '/') = '\0';
    struct stat st;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        say("cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
        (st.st_mode & 0077)) {
        say("%s must be a directory of ours that only we can use (mode 0700)", dir);
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    memcpy(addr.sun_path, path, strlen(path) + 1);
    unlink(path); /* a socket left by a daemon that died: ours to replace, in our directory */
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(fd, 64) != 0) {
        say("cannot listen at %s: %s", path, strerror(errno));
        return -1;
    }
    return fd;
}

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "keep", required_argument, NULL, 'k' },
        { "state-dir", required_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    bool have_dir = false;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'k':
            if (!fscope_config_parse_long(optarg, 1, 100000, &keep)) {
                fprintf(stderr, "framescoped: --keep takes a whole number 1..100000, not '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case 's':
            if (optarg[0] != '/' || strlen(optarg) >= sizeof(state_dir) - 64) {
                fprintf(stderr, "framescoped: --state-dir takes an absolute path\n");
                return 2;
            }
            snprintf(state_dir, sizeof(state_dir), "%s", optarg);
            have_dir = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            fputs(usage, stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fputs(usage, stderr);
        return 2;
    }
    if (!have_dir && !default_state_dir()) {
        say("neither XDG_STATE_HOME nor HOME is an absolute path: give --state-dir");
        return 2;
    }
    setvbuf(stderr, NULL, _IOLBF, 0);
    char path[PATH_MAX];
    int listen_fd = listen_socket(path, sizeof(path));
    if (listen_fd < 0)
        return 1;
    epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG(TAG_LISTEN, 0) };
    epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd, &ev);
    for (unsigned i = 0; i < MAX_CLIENTS; i++)
        clients[i] = -1;
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    say("listening at %s; captures in %s (newest %ld kept)", path, state_dir, keep);
    while (!stopping) {
        struct epoll_event events[32];
        int n = epoll_wait(epfd, events, 32, -1);
        for (int i = 0; i < n; i++) {
            uint32_t kind = (uint32_t)(events[i].data.u64 >> 32);
            uint32_t index = (uint32_t)events[i].data.u64;
            if (kind == TAG_LISTEN)
                client_accept(listen_fd);
            else if (kind == TAG_CLIENT && index < MAX_CLIENTS && clients[index] >= 0)
                client_request(index);
            else if (kind == TAG_PIDFD && index < MAX_APPS && apps[index].used)
                app_ended(&apps[index]);
            else if (kind == TAG_APPCONN && index < MAX_APPS && apps[index].used &&
                     apps[index].conn >= 0) {
                /* The app closed its side (its exit): its end comes from its pidfd. */
                epoll_ctl(epfd, EPOLL_CTL_DEL, apps[index].conn, NULL);
                close(apps[index].conn);
                apps[index].conn = -1;
            }
        }
    }
    /* Stopped (a restart): apps keep running and register with the next daemon. */
    say("stopping; %s", "running apps register again with the next framescoped");
    return 0;
}
