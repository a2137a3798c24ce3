/* framescoped: the per-user daemon that keeps every profiled app's recording (src/util/
 * daemon_proto.h says what is spoken on its socket). Apps register as their frames start; when
 * one ends, however it ends, the daemon analyses its recording and writes the capture under
 * $XDG_STATE_HOME/framescope/, keeping the newest --keep of them, and logs one line (stderr:
 * the journal under systemd). `framescope top` and `framescope snapshot` ask it about the apps
 * still running.
 *
 * Socket-activated (framescoped.socket: LISTEN_FDS) or, run by hand, it makes its socket itself
 * in a 0700 directory. One thread, one epoll loop, and nothing in it that a client controls the
 * duration of: every recording is read and analysed in a child of its own (a job), under a
 * time limit, so a hostile or huge recording, a hung stream file or a client that never reads
 * its reply costs that child, never the loop or the other clients. A recording is never
 * mapped: a job copies what it holds once into its own memory (copy_recording), then
 * validates and uses only that copy. */
#include "framescoped.h"

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
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/capture_dir.h"
#include "util/config.h"

static const char usage[] =
    "usage: framescoped [--keep N] [--state-dir DIR] [--timeout SECONDS]\n"
    "\n"
    "The per-user framescope daemon. Profiled apps register with it; when one ends (exit,\n"
    "crash, SIGKILL) it writes the app's capture under DIR (default\n"
    "$XDG_STATE_HOME/framescope, else ~/.local/state/framescope) and keeps the newest N\n"
    "(default 20). Started by systemd's framescoped.socket, or by hand: it then listens at\n"
    "$XDG_RUNTIME_DIR/framescope/framescoped.sock itself.\n"
    "\n"
    "Each recording is analysed in a process of its own (at most 4 at once; apps that end\n"
    "meanwhile wait in a queue of 64), killed (and said in the log) when it takes longer\n"
    "than SECONDS: by default 300 for an app's capture and 55 for what framescope top and\n"
    "snapshot ask. On SIGTERM it kills its analyses, says which captures were lost, removes\n"
    "what they left, and exits.\n";

struct app apps[MAX_APPS];
int epfd = -1;
char state_dir[PATH_MAX];
long keep = DEFAULT_KEEP;
long job_timeout_s; /* --timeout: one limit for every analysis; 0: as above */

/* ---- connections ---- */

/* Connections that have not yet said what they want. Each has CLIENT_IDLE_MS to do so; one
 * process holds at most CLIENTS_PER_PID of them; when all are taken, the one waiting longest
 * makes room. No client can lock the others out. */
struct client {
    int fd; /* -1: a free slot */
    pid_t pid;
    uint64_t since_ms;
};

static struct client clients[MAX_CLIENTS];
static int listen_fd = -1;
static bool listening; /* false while out of descriptors */
static uint64_t listen_paused_ms;
static struct quiet quiet_evicted, quiet_per_pid, quiet_idle;

static void client_request(unsigned i);

static void client_close(unsigned i)
{
    epoll_ctl(epfd, EPOLL_CTL_DEL, clients[i].fd, NULL);
    close(clients[i].fd);
    clients[i].fd = -1;
    listening_resume();
}

/* Listens again after running out of descriptors, once one was freed. */
void listening_resume(void)
{
    if (listening || listen_fd < 0)
        return;
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG(TAG_LISTEN, 0) };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd, &ev) == 0) {
        listening = true;
        say("listening again");
    }
}

static void listening_pause(int err)
{
    epoll_ctl(epfd, EPOLL_CTL_DEL, listen_fd, NULL);
    listening = false;
    listen_paused_ms = now_ms();
    say("out of descriptors (%s): not taking connections until one is freed", strerror(err));
}

static void client_accept(void)
{
    int conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (conn < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            listening_pause(errno);
        return;
    }
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) {
        say("refused a connection from uid %d (only uid %d may connect)",
            len == sizeof(cred) ? (int)cred.uid : -1, (int)getuid());
        close(conn);
        return;
    }
    unsigned free_slot = MAX_CLIENTS, oldest = MAX_CLIENTS, same_pid = 0;
    for (unsigned i = 0; i < MAX_CLIENTS; i++) {
        if (clients[i].fd < 0) {
            if (free_slot == MAX_CLIENTS)
                free_slot = i;
            continue;
        }
        if (clients[i].pid == cred.pid)
            same_pid++;
        if (oldest == MAX_CLIENTS || clients[i].since_ms < clients[oldest].since_ms)
            oldest = i;
    }
    unsigned held;
    if (same_pid >= CLIENTS_PER_PID) {
        if (quiet_may_say(&quiet_per_pid, &held))
            say("refused a connection: pid %d has %d waiting already (%u more refused since "
                "last said)", cred.pid, CLIENTS_PER_PID, held);
        close(conn);
        return;
    }
    if (free_slot == MAX_CLIENTS) {
        if (quiet_may_say(&quiet_evicted, &held))
            say("%d connections waiting: closed the longest-waiting one (pid %d) to make room "
                "(%u more since last said)", MAX_CLIENTS, clients[oldest].pid, held);
        client_close(oldest);
        free_slot = oldest;
    }
    clients[free_slot] = (struct client){ .fd = conn, .pid = cred.pid, .since_ms = now_ms() };
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG(TAG_CLIENT, free_slot) };
    epoll_ctl(epfd, EPOLL_CTL_ADD, conn, &ev);
}

/* Closes connections that said nothing in time; returns how long until the next one is due
 * (-1: none waits). One whose request is waiting to be read said it in time, however long
 * the daemon took to get to it (busy, or starved of CPU): it is served now. */
static int clients_expire(void)
{
    uint64_t now = now_ms();
    int next = -1;
    unsigned held;
    for (unsigned i = 0; i < MAX_CLIENTS; i++) {
        if (clients[i].fd < 0)
            continue;
        uint64_t due = clients[i].since_ms + CLIENT_IDLE_MS;
        char byte;
        if (due <= now && recv(clients[i].fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) >= 0) {
            client_request(i); /* a request, or its end of the connection: both take it out */
        } else if (due <= now) {
            if (quiet_may_say(&quiet_idle, &held))
                say("closed a connection from pid %d that said nothing for %d ms (%u more since "
                    "last said)", clients[i].pid, CLIENT_IDLE_MS, held);
            client_close(i);
        } else if (next < 0 || due - now < (uint64_t)next) {
            next = (int)(due - now);
        }
    }
    return next;
}

/* One request from a connection; it is answered (or registered) and leaves the client list. */
static void client_request(unsigned i)
{
    int conn = clients[i].fd;
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
    clients[i].fd = -1;
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
        request_list(conn);
    } else if (req.kind == FSCOPED_SNAPSHOT) {
        req.name[sizeof(req.name) - 1] = '\0';
        request_snapshot(conn, &req);
    } else {
        say("dropped a request of unknown kind %u", req.kind);
    }
    close(conn);
    listening_resume();
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
        { "timeout", required_argument, NULL, 't' },
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
        case 't':
            if (!fscope_config_parse_long(optarg, 1, 86400, &job_timeout_s)) {
                fprintf(stderr, "framescoped: --timeout takes whole seconds 1..86400, not "
                        "'%s'\n", optarg);
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
    /* Every app holds four of our descriptors: as many as we are allowed. */
    struct rlimit files;
    if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        setrlimit(RLIMIT_NOFILE, &files);
    }
    char path[PATH_MAX];
    listen_fd = listen_socket(path, sizeof(path));
    if (listen_fd < 0)
        return 1;
    epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG(TAG_LISTEN, 0) };
    epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd, &ev);
    listening = true;
    for (unsigned i = 0; i < MAX_CLIENTS; i++)
        clients[i].fd = -1;
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    remove_leftovers();
    say("listening at %s; captures in %s (newest %ld kept)", path, state_dir, keep);
    while (!stopping) {
        struct epoll_event events[32];
        int timeout = clients_expire(), job_due = jobs_expire();
        if (job_due >= 0 && (timeout < 0 || job_due < timeout))
            timeout = job_due;
        if (!listening) {
            /* Out of descriptors: a freed one resumes listening at once; this catches those
             * freed outside (a job's child that exited). */
            if (now_ms() - listen_paused_ms >= 1000)
                listening_resume();
            if (timeout < 0 || timeout > 1000)
                timeout = 1000;
        }
        int n = epoll_wait(epfd, events, 32, timeout);
        for (int i = 0; i < n; i++) {
            uint32_t kind = (uint32_t)(events[i].data.u64 >> 32);
            uint32_t index = (uint32_t)events[i].data.u64;
            if (kind == TAG_LISTEN && listening)
                client_accept();
            else if (kind == TAG_CLIENT && index < MAX_CLIENTS && clients[index].fd >= 0)
                client_request(index);
            else if (kind == TAG_PIDFD && index < MAX_APPS && apps[index].used &&
                     !apps[index].ending)
                app_ended(&apps[index]);
            else if (kind == TAG_JOB && index < MAX_JOBS && jobs[index].pid)
                job_ended(&jobs[index]);
            else if (kind == TAG_APPCONN && index < MAX_APPS && apps[index].used &&
                     apps[index].conn >= 0) {
                /* The app closed its side (its exit): its end comes from its pidfd. */
                epoll_ctl(epfd, EPOLL_CTL_DEL, apps[index].conn, NULL);
                close(apps[index].conn);
                apps[index].conn = -1;
                listening_resume();
            }
        }
    }
    /* Stopped (a restart, or the unit stopped): apps keep running and register with the next
     * daemon; jobs are killed, and what they leave removed, here, not left to run on their
     * own. */
    jobs_stop();
    /* A capture job that finished before the stop was reaped here, not by the loop, whose
     * pruning after it never ran: --keep holds after a stop too. */
    prune_captures();
    say("stopping; %s", "running apps register again with the next framescoped");
    return 0;
}

