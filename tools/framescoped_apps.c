/* framescoped: the apps registered, and what happens when one ends. */
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

#include "util/config.h"
#include "util/text.h"

/* ---- apps ---- */

static void app_forget(struct app *a)
{
    if (a->ending) {
        /* Out of the queue, which keeps its order. */
        unsigned kept = 0, index = (unsigned)(a - apps);
        for (unsigned k = 0; k < queue_length; k++) {
            unsigned entry = capture_queue[(queue_head + k) % CAPTURE_QUEUE];
            if (entry != index)
                capture_queue[(queue_head + kept++) % CAPTURE_QUEUE] = entry;
        }
        queue_length = kept;
    }
    int fds[] = { a->pidfd, a->conn, a->memfd, a->stream_fd };
    for (unsigned i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
        if (fds[i] < 0)
            continue;
        epoll_ctl(epfd, EPOLL_CTL_DEL, fds[i], NULL);
        close(fds[i]);
    }
    memset(a, 0, sizeof(*a));
    listening_resume();
}

/* Whether the app reached its exit (its recording says so). */
static bool app_exited_cleanly(const struct app *a)
{
    struct rec_header h;
    return pread(a->memfd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
           atomic_load(&h.state) == REC_STATE_ENDED;
}

/* Writes the capture of an app that ended, in a job; the app is forgotten once the job has its
 * descriptors. While every job is busy it waits in the queue (ending), its pidfd out of the
 * loop; when the queue is full it is dropped, said. */
void app_capture(struct app *a)
{
    bool clean = app_exited_cleanly(a);
    const char *how = clean ? "exited" : "ended without reaching its exit (killed or crashed)";
    char path[PATH_MAX];
    int e = claim_capture(a, "", path, sizeof(path));
    if (e) {
        say("%s (pid %d) %s; no capture: cannot create %s: %s", a->name, a->pid, how, path,
            strerror(-e));
        app_forget(a);
        return;
    }
    int held[] = { a->memfd, a->stream_fd };
    bool child;
    struct job *j = job_fork(JOB_CAPTURE, CAPTURE_JOB_S, held, 2, &child);
    if (child) {
        char summary[128] = "", why[256] = "";
        e = write_capture(a, 0, path, summary, sizeof(summary), why, sizeof(why));
        if (e)
            say("%s (pid %d) %s; no capture: %s", a->name, a->pid, how,
                why[0] ? why : strerror(-e));
        else
            say("%s (pid %d) %s: %s; capture %s", a->name, a->pid, how, summary, path);
        _exit(e ? 1 : 0);
    }
    if (!j) {
        rmdir(path);
        if (a->ending) {
            /* Its turn came and no job could start (fork failed): first again. */
            queue_head = (queue_head + CAPTURE_QUEUE - 1) % CAPTURE_QUEUE;
            capture_queue[queue_head] = (unsigned)(a - apps);
            queue_length++;
            return;
        }
        if (queue_length == CAPTURE_QUEUE) {
            say("%s (pid %d) %s; no capture written: %d captures wait for an analysis already "
                "(%d run at once)", a->name, a->pid, how, CAPTURE_QUEUE, MAX_JOBS);
            app_forget(a);
            return;
        }
        if (a->pidfd >= 0)
            epoll_ctl(epfd, EPOLL_CTL_DEL, a->pidfd, NULL);
        a->ending = true;
        capture_queue[(queue_head + queue_length++) % CAPTURE_QUEUE] = (unsigned)(a - apps);
        return;
    }
    snprintf(j->path, sizeof(j->path), "%s", path);
    snprintf(j->what, sizeof(j->what), "the capture of %s (pid %d)", a->name, a->pid);
    app_forget(a);
}

/* The app's process is gone: its capture, and a line for the journal. */
void app_ended(struct app *a)
{
    if (a->observed) {
        say("%s (pid %d) %s; framescope run analyses it", a->name, a->pid,
            app_exited_cleanly(a) ? "exited"
                                  : "ended without reaching its exit (killed or crashed)");
        app_forget(a);
        return;
    }
    app_capture(a);
}

static int pidfd_open_of(int pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Checks what a registration carries: a recording of ours, of a size it can have and that
 * cannot change (sealed). */
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
    int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
        snprintf(why, why_len, "its recording is not sealed against shrinking "
                 "(F_SEAL_SHRINK): a framescope older than this daemon?");
        return false;
    }
    return true;
}

void app_register(int conn, const struct fscoped_request *req, const struct ucred *cred,
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
        listening_resume();
        return;
    }
    /* The same process again (the daemon restarted, or the app reconnected): one entry. */
    for (unsigned i = 0; i < MAX_APPS; i++)
        if (apps[i].used && !apps[i].ending && apps[i].pid == cred->pid)
            app_forget(&apps[i]); /* an ending one is another process: its pid was reused */
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
