/* framescoped: jobs, the analyses run in children under a time limit, and the queue of
 * apps waiting for one. */
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

/* ---- jobs: analyses in children ---- */

struct job jobs[MAX_JOBS];
static unsigned job_count;

/* Indices in apps[] of the apps waiting for a job (CAPTURE_QUEUE), oldest at queue_head. */
unsigned capture_queue[CAPTURE_QUEUE];
unsigned queue_head, queue_length;


static int fd_compare(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* In a job's child: keeps stdin/out/err and held[] (nothing else the daemon holds: the
 * socket, other clients, other apps' recordings). A job dies with the daemon, however the
 * daemon ends: one left running would outlive its deadline (nobody enforces it) and leave its
 * files. */
static void job_child_setup(pid_t daemon_pid, int *held, unsigned nheld)
{
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    /* The daemon may have died between fork and prctl: then no signal comes, and our parent
     * is no longer the daemon. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != daemon_pid)
        _exit(1);
    qsort(held, nheld, sizeof(*held), fd_compare);
    unsigned from = 3;
    for (unsigned i = 0; i < nheld; i++) {
        if (held[i] < (int)from)
            continue;
        if ((unsigned)held[i] > from)
            close_range(from, (unsigned)held[i] - 1, 0);
        from = (unsigned)held[i] + 1;
    }
    close_range(from, ~0u, 0);
}

/* Forks a job that keeps held[]: returns 0 in the child, the job in the parent, NULL (said)
 * when none can start now. */
struct job *job_fork(enum job_kind kind, unsigned seconds, int *held,
                     unsigned nheld, bool *ret_child)
{
    *ret_child = false;
    struct job *j = NULL;
    for (unsigned i = 0; i < MAX_JOBS && !j; i++)
        if (!jobs[i].pid)
            j = &jobs[i];
    if (!j)
        return NULL;
    fflush(stderr);
    pid_t daemon_pid = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        say("cannot start an analysis: fork: %s", strerror(errno));
        return NULL;
    }
    if (pid == 0) {
        job_child_setup(daemon_pid, held, nheld);
        *ret_child = true;
        return j;
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        say("cannot follow an analysis: pidfd_open: %s", strerror(errno));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return NULL;
    }
    memset(j, 0, sizeof(*j));
    j->pid = pid;
    j->pidfd = pidfd;
    j->conn = -1;
    j->kind = kind;
    j->seconds = job_timeout_s ? (unsigned)job_timeout_s : seconds;
    j->deadline_ms = now_ms() + 1000ull * j->seconds;
    job_count++;
    struct epoll_event ev = { .events = EPOLLIN,
                              .data.u64 = TAG(TAG_JOB, (uint32_t)(j - jobs)) };
    epoll_ctl(epfd, EPOLL_CTL_ADD, pidfd, &ev);
    return j;
}

/* Reaps a job's child and says how it went when it failed (a job that fails by itself says
 * why; one killed, by its deadline or anything else, cannot): a capture that was not written
 * is always said. Removes what a failed job left (its claimed directory and capture_dir's
 * temporary one) and tells a waiting client. stopping: the daemon is stopping, and killed it. */
static void job_reap(struct job *j, bool stopping)
{
    int status = 0;
    while (waitpid(j->pid, &status, 0) < 0 && errno == EINTR)
        ;
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    const char *lost = j->kind == JOB_CAPTURE ? "; no capture written" : "";
    char why[256] = "";
    if (ok)
        ;
    else if (j->expired)
        snprintf(why, sizeof(why), "it exceeded its %u s deadline and was killed (the "
                 "machine is busy, the recording large, or a read of it or of its stream "
                 "file is stuck; --timeout sets the deadline)", j->seconds);
    else if (stopping)
        snprintf(why, sizeof(why), "framescoped stopped before it finished");
    else if (WIFSIGNALED(status))
        snprintf(why, sizeof(why), "the analysis died of signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    /* Removed before it is said: a line in the journal means it is done. */
    if (!ok && j->path[0]) {
        remove_capture_temporaries(j->path);
        rmdir(j->path); /* the claimed directory, when nothing was put in its place */
    }
    if (why[0])
        say("%s: %s%s", j->what, why, lost);
    if (j->conn >= 0) {
        if (why[0]) {
            /* The job answers by itself otherwise; this one never will. (why is our own
             * text: nothing in it needs escaping.) */
            const char *what = j->kind == JOB_SNAPSHOT ? "the snapshot" : "the list of apps";
            char text[512];
            if (j->expired)
                snprintf(text, sizeof(text), "{\"error\": \"%s timed out after %u s "
                         "(framescoped's deadline; --timeout sets it)\"}\n", what, j->seconds);
            else
                snprintf(text, sizeof(text), "{\"error\": \"%s failed: %s\"}\n", what, why);
            reply_now(j->conn, text);
        }
        close(j->conn);
    }
    epoll_ctl(epfd, EPOLL_CTL_DEL, j->pidfd, NULL);
    close(j->pidfd);
    memset(j, 0, sizeof(*j));
    job_count--;
}

/* A job's child is gone: reaped, its slot to the next. */
void job_ended(struct job *j)
{
    bool capture = j->kind == JOB_CAPTURE;
    job_reap(j, false);
    listening_resume();
    if (capture)
        prune_captures();
    /* Apps that ended while every job was busy, oldest first. */
    while (queue_length && job_count < MAX_JOBS) {
        struct app *a = &apps[capture_queue[queue_head]];
        queue_head = (queue_head + 1) % CAPTURE_QUEUE;
        unsigned waiting = --queue_length;
        app_capture(a);
        if (queue_length > waiting)
            break; /* back at the head (fork failed): it waits for the next job to end */
    }
}

/* Kills the jobs past their time; returns how long until the next is due (-1: none). */
int jobs_expire(void)
{
    uint64_t now = now_ms();
    int next = -1;
    for (unsigned i = 0; i < MAX_JOBS; i++) {
        struct job *j = &jobs[i];
        if (!j->pid || j->expired)
            continue;
        if (j->deadline_ms <= now) {
            kill(j->pid, SIGKILL); /* its pidfd says when it is gone */
            j->expired = true;
        } else if (next < 0 || j->deadline_ms - now < (uint64_t)next) {
            next = (int)(j->deadline_ms - now);
        }
    }
    return next;
}

/* The daemon stops (SIGTERM: systemd stops the unit, or sends it to the whole group): every
 * job is killed and reaped, what it left removed and said, and so is every capture still
 * waiting for one. Running apps register again with the next daemon; those that ended are
 * gone with their recordings. */
void jobs_stop(void)
{
    for (unsigned i = 0; i < MAX_JOBS; i++) {
        if (!jobs[i].pid)
            continue;
        kill(jobs[i].pid, SIGKILL);
        job_reap(&jobs[i], true);
    }
    for (; queue_length; queue_length--, queue_head = (queue_head + 1) % CAPTURE_QUEUE) {
        const struct app *a = &apps[capture_queue[queue_head]];
        say("%s (pid %d) ended; no capture written: framescoped stopped while it waited for "
            "an analysis", a->name, a->pid);
    }
}

/* Claims a fresh capture directory for a (made now, so that the next claim sees it). */
int claim_capture(const struct app *a, const char *kind, char *path, size_t len)
{
    int e = make_dirs(state_dir);
    if (e)
        return e;
    capture_path(a, kind, path, len);
    return mkdir(path, 0700) == 0 ? 0 : -errno;
}
