#include "daemon_link.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "kernel.h"
#include "recording.h"
#include "util/config.h"
#include "util/daemon_proto.h"
#include "util/log.h"
#include "util/private_fd.h"
#include "worker.h"

#define LINK_PERIOD_MS 1000

struct link {
    char path[108];
    int conn; /* -1: not registered now */
    bool said_gone;
};

/* One registration: the request and the recording's descriptors in one message. */
static int link_register(struct link *l)
{
    if (!recording_fds_ours())
        return -EBADF; /* the app closed them: never send one of its files instead */
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    memcpy(addr.sun_path, l->path, strlen(l->path) + 1);
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    struct fscoped_request req;
    memset(&req, 0, sizeof(req));
    memcpy(req.magic, FSCOPED_MAGIC, sizeof(req.magic));
    req.kind = FSCOPED_REGISTER;
    req.flags = recording_observed() ? FSCOPED_OBSERVED : 0;
    req.pid = (int32_t)getpid();
    snprintf(req.name, sizeof(req.name), "%s", recording_header()->app);
    ssize_t n = readlink("/proc/self/exe", req.exe, sizeof(req.exe) - 1);
    req.exe[n > 0 ? n : 0] = '\0';
    int fds[2] = { recording_fd(), recording_stream_fd() };
    unsigned nfds = fds[1] >= 0 ? 2 : 1;
    union {
        char buf[CMSG_SPACE(sizeof(fds))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof(control));
    struct iovec iov = { .iov_base = &req, .iov_len = sizeof(req) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                          .msg_controllen = CMSG_SPACE(nfds * sizeof(int)) };
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(cmsg), fds, nfds * sizeof(int));
    if (sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(req)) {
        int e = -errno;
        close(fd);
        return e ? e : -EIO;
    }
    l->conn = fscope_fd_high(fd);
    return 0;
}

static void link_tick(void *arg, bool final)
{
    struct link *l = arg;
    if (l->conn >= 0) {
        /* The daemon never writes to a registered app: anything readable is its end. */
        struct pollfd p = { .fd = l->conn, .events = POLLIN };
        if (final || (poll(&p, 1, 0) == 1 && p.revents)) {
            fscope_fd_close(l->conn);
            l->conn = -1;
            if (!final) {
                fscope_log(FSCOPE_LOG_INFO, "framescoped went away; registering again when it "
                           "is back");
                l->said_gone = false;
            }
        }
    }
    if (final) {
        free(l);
        return;
    }
    if (l->conn < 0) {
        int e = link_register(l);
        if (e == 0)
            fscope_log(FSCOPE_LOG_INFO, "registered with framescoped at %s", l->path);
        else if (!l->said_gone && e != -ENOENT && e != -ECONNREFUSED)
            fscope_log(FSCOPE_LOG_INFO, "cannot register with framescoped at %s: %s", l->path,
                       strerror(-e));
        if (e)
            l->said_gone = true;
    }
}

static struct worker link_worker = WORKER_INIT;

static void start_once(void)
{
    const char *value = secure_getenv("FRAMESCOPE_DAEMON");
    bool on = true;
    if (value && *value && !fscope_config_parse_switch(value, &on)) {
        char shown[FSCOPE_ESCAPE_SIZE];
        fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_DAEMON='%s' is not on or off; using on",
                   fscope_config_escape(value, shown, sizeof(shown)));
    }
    struct link *l = on && recording_fd() >= 0 ? calloc(1, sizeof(*l)) : NULL;
    struct stat st;
    /* No socket, no daemon: the app goes on exactly as without one. */
    if (!l || !fscoped_socket_path(l->path, sizeof(l->path)) || stat(l->path, &st) != 0 ||
        !S_ISSOCK(st.st_mode)) {
        free(l);
        return;
    }
    l->conn = -1;
    if (!worker_start(&link_worker, "fscope-daemon", LINK_PERIOD_MS, link_tick, l))
        free(l);
}

static pthread_once_t link_once = PTHREAD_ONCE_INIT;

void daemon_link_start(void)
{
    pthread_once(&link_once, start_once);
}

void daemon_link_stop(void)
{
    worker_stop(&link_worker);
}
