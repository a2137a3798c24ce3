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
#include "analysis/live.h"
#include "analysis/recording.h"
#include "analysis/report.h"
#include "util/config.h"
#include "util/daemon_proto.h"
#include "util/text.h"

#define MAX_APPS 1024
#define MAX_CLIENTS 64     /* connections not yet registered or answered */
#define CLIENTS_PER_PID 8  /* of those, from one process */
#define CLIENT_IDLE_MS 2000 /* a connection says what it wants within this, or is closed */
#define MAX_JOBS 4         /* analyses running at once, each in a child */
#define CAPTURE_JOB_S 300  /* an app's capture is written within this, or given up */
#define REQUEST_JOB_S 55   /* top's and snapshot's answers (the client waits 60 s) */
#define LIST_READ_MS 20000 /* top's list reads recordings this long; those left say so */
/* Apps that ended while every job was busy wait here, oldest first. Each holds its recording
 * (a memfd of up to REC_ARENA_SIZE) until its turn: bounded, so a burst of endings cannot pin
 * unbounded memory; one that finds it full is dropped, said in the journal. */
#define CAPTURE_QUEUE 64
#define DEFAULT_KEEP 20

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

struct app {
    bool used;
    int pid;
    int pidfd, conn;     /* conn: the app's registration connection; -1 once it closed */
    int memfd, stream_fd; /* stream_fd -1: the app streams nothing */
    bool observed;       /* framescope run writes this app's capture */
    bool ending;         /* it ended; its capture waits for a job */
    char name[64], exe[256];
    time_t since;
};

static struct app apps[MAX_APPS];
static int epfd = -1;
static char state_dir[PATH_MAX];
static long keep = DEFAULT_KEEP;
static long job_timeout_s; /* --timeout: one limit for every analysis; 0: as above */

/* epoll's data: what an fd is. */
enum { TAG_LISTEN = 1, TAG_CLIENT, TAG_PIDFD, TAG_APPCONN, TAG_JOB };
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

/* The captures' directory, to walk (NULL where it cannot be opened). */
static DIR *state_dir_open(void)
{
    int dir_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dir_fd >= 0 ? fdopendir(dir_fd) : NULL;
    if (!d && dir_fd >= 0)
        close(dir_fd);
    return d;
}

/* Whether a directory of ours named *.capture is a whole capture: capture_dir commits a
 * capture in one rename, summary.json with it. An empty one is a claim (a job writing it, or
 * left by a daemon that was killed): it must never count against --keep, or claims push out
 * real captures. */
static bool capture_complete(int dir_fd, const char *name)
{
    int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    bool complete = fstatat(fd, "summary.json", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISREG(st.st_mode);
    close(fd);
    return complete;
}

/* Whether name is a temporary directory capture_dir made for a capture of ours:
 * ".<name>.capture.tmp-" and 12 hex digits (src/analysis/capture_dir.c). */
static bool capture_temporary_name(const char *name)
{
    const char *tmp = strstr(name, ".capture.tmp-");
    if (name[0] != '.' || !tmp || tmp == name + 1)
        return false;
    const char *suffix = tmp + strlen(".capture.tmp-");
    if (strlen(suffix) != 12)
        return false;
    for (const char *c = suffix; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return true;
}

/* Removes the temporary directories capture_dir made for the capture at path (a job that was
 * killed before it committed leaves one, holding up to the whole recording's copy). */
static void remove_capture_temporaries(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char prefix[320];
    snprintf(prefix, sizeof(prefix), ".%.300s.tmp-", base);
    DIR *d = state_dir_open();
    if (!d)
        return;
    struct dirent *e;
    struct stat st;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 &&
            capture_temporary_name(e->d_name) &&
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
            remove_capture(dirfd(d), e->d_name);
    closedir(d);
}

/* At start-up, what a daemon that was killed left (SIGKILL, a crash: its jobs died with it,
 * PR_SET_PDEATHSIG): capture_dir's temporary directories of our naming, and the empty
 * directories claimed for captures never written. Only in our own directory, never through a
 * link, and only files a capture holds. */
static void remove_leftovers(void)
{
    DIR *d = state_dir_open();
    if (!d)
        return;
    unsigned temporaries = 0, claims = 0;
    struct dirent *e;
    struct stat st;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (capture_temporary_name(e->d_name)) {
            remove_capture(dirfd(d), e->d_name);
            temporaries++;
        } else if (len > 8 && e->d_name[0] != '.' &&
                   strcmp(e->d_name + len - 8, ".capture") == 0 &&
                   unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) == 0) {
            claims++; /* rmdir: only an empty one goes */
        }
    }
    closedir(d);
    if (temporaries || claims)
        say("removed what a framescoped that was stopped or killed left in %s: %u temporary "
            "and %u empty capture directories", state_dir, temporaries, claims);
}

/* Keeps the newest `keep` captures (directories whose names end in ".capture", whole ones:
 * capture_complete). */
static void prune_captures(void)
{
    DIR *d = state_dir_open();
    if (!d)
        return;
    struct kept *list = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        struct stat st;
        if (len < 9 || strcmp(e->d_name + len - 8, ".capture") != 0 ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(st.st_mode) || !capture_complete(dirfd(d), e->d_name))
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

/* ---- saying things, some of them at most every few seconds ---- */

/* Whether a line of this kind may be said now: a client that repeats what gets refused must
 * not fill the journal. Says how many were held back when it speaks again. */
struct quiet {
    time_t last;
    unsigned held;
};

static bool quiet_may_say(struct quiet *q, unsigned *ret_held)
{
    time_t now = time(NULL);
    if (q->last && now - q->last < 10) {
        q->held++;
        return false;
    }
    q->last = now;
    *ret_held = q->held;
    q->held = 0;
    return true;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- reading a registered recording (in a job) ---- */

struct copy {
    void *bytes;
    size_t len; /* what the header said is in use */
    size_t map_len;
    size_t data; /* of it, the bytes the file really holds (read) */
};

/* A job's memory, bounded by what the recording really holds: the address space it has now
 * (the copy's whole range, holes included) plus four times the bytes read and 256 MiB. A
 * recording whose objects claim gigabytes of holes (a sparse memfd costs its sender nothing)
 * makes the analysis fail for want of memory, said in the journal, instead of filling the
 * machine's. */
static void job_bound_memory(const struct copy *c)
{
    FILE *f = fopen("/proc/self/statm", "re");
    unsigned long pages = 0;
    if (!f)
        return;
    if (fscanf(f, "%lu", &pages) != 1)
        pages = 0;
    fclose(f);
    if (!pages)
        return;
    rlim_t limit = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + 4 * (rlim_t)c->data +
                   ((rlim_t)256 << 20);
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) != 0)
        return;
    r.rlim_cur = r.rlim_max != RLIM_INFINITY && r.rlim_max < limit ? r.rlim_max : limit;
    setrlimit(RLIMIT_AS, &r);
}

/* Lifts a job's bound (to the hard limit) before the next recording it reads. */
static void job_unbound_memory(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_AS, &r) == 0) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_AS, &r);
    }
}

/* The recording, read once into memory of our own: nothing another process writes afterwards
 * (the app, or anyone else holding its memfd) reaches what is validated and used. Only the
 * extents that hold data are read; holes stay untouched zero pages, so the copy costs what the
 * recording really holds. The memfd itself is never mapped: one that shrinks under us gives a
 * short read, never SIGBUS. */
static int copy_recording(int fd, struct copy *c, char *why, size_t why_len)
{
    struct stat st;
    struct rec_header h;
    if (fstat(fd, &st) != 0)
        return -errno;
    if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
        snprintf(why, why_len, "its recording's header cannot be read");
        return -EIO;
    }
    uint64_t used = atomic_load(&h.used);
    if (used < sizeof(h) || used > (uint64_t)st.st_size) {
        snprintf(why, why_len, "its recording claims %llu bytes in use of %lld",
                 (unsigned long long)used, (long long)st.st_size);
        return -EINVAL;
    }
    long page = sysconf(_SC_PAGESIZE);
    c->len = (size_t)used;
    c->map_len = (c->len + (size_t)page - 1) / (size_t)page * (size_t)page;
    c->data = 0;
    c->bytes = mmap(NULL, c->map_len, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (c->bytes == MAP_FAILED)
        return -errno;
    for (uint64_t at = 0; at < used;) {
        off_t data = lseek(fd, (off_t)at, SEEK_DATA);
        if (data < 0 && errno != ENXIO)
            data = (off_t)at; /* no SEEK_DATA here: read it all */
        if (data < 0 || (uint64_t)data >= used)
            break; /* ENXIO: only holes from here on */
        off_t hole = lseek(fd, data, SEEK_HOLE);
        uint64_t end = hole < 0 || (uint64_t)hole > used ? used : (uint64_t)hole;
        for (at = (uint64_t)data; at < end;) {
            ssize_t n = pread(fd, (char *)c->bytes + at, end - at, (off_t)at);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return 0; /* it shrank: what it held is what was read */
            at += (uint64_t)n;
            c->data += (size_t)n;
        }
    }
    return 0;
}

static void copy_free(struct copy *c)
{
    munmap(c->bytes, c->map_len);
}

/* The whole recording (its streamed chunks read back into our copy), parsed. */
static int read_whole(const struct app *a, struct copy *c, struct recording **rec, char *why,
                      size_t why_len)
{
    why[0] = '\0';
    int e = copy_recording(a->memfd, c, why, why_len);
    if (e)
        return e;
    struct stat st;
    struct copy bound = *c;
    if (a->stream_fd >= 0 && fstat(a->stream_fd, &st) == 0 && st.st_size > 0)
        bound.data += (size_t)st.st_size; /* its chunks come back into the copy */
    job_bound_memory(&bound);
    struct system_description machine;
    system_describe(&machine);
    e = recording_read_ended(c->bytes, c->len, a->stream_fd, &machine, rec, why, why_len);
    if (e)
        copy_free(c);
    return e;
}

/* Analyses an app's recording (all of it, or its last last_ms) into the capture at path (a
 * directory claimed for it). Returns 0, or -errno with why. */
static int write_capture(const struct app *a, uint32_t last_ms, const char *path,
                         char *summary, size_t summary_len, char *why, size_t why_len)
{
    struct copy c;
    struct recording *rec = NULL;
    int e = read_whole(a, &c, &rec, why, why_len);
    if (e)
        return e;
    if (last_ms)
        recording_keep_recent(rec, last_ms / 1e3);
    struct report *report = report_create(rec);
    if (!report) {
        e = -ENOMEM;
    } else {
        e = report_write_capture(report, c.bytes, c.len, path, NULL);
        if (e)
            snprintf(why, why_len, "cannot write %s: %s", path, strerror(-e));
        struct live_stats s;
        live_stats_compute(rec, 1e9, &s);
        snprintf(summary, summary_len, "%llu frames, %s-bound",
                 (unsigned long long)s.frames, s.verdict);
        report_destroy(report);
    }
    recording_free(rec);
    copy_free(&c);
    return e;
}

/* ---- jobs: analyses in children ---- */

enum job_kind { JOB_CAPTURE, JOB_LIST, JOB_SNAPSHOT };

struct job {
    pid_t pid; /* 0: a free slot */
    int pidfd;
    enum job_kind kind;
    unsigned seconds;
    uint64_t deadline_ms; /* killed then, whatever it is doing (a hung read, stopped) */
    bool expired;         /* killed at its deadline */
    int conn;             /* JOB_LIST, JOB_SNAPSHOT: the client, told when the job fails */
    char path[PATH_MAX]; /* JOB_CAPTURE, JOB_SNAPSHOT: the capture directory claimed */
    char what[160];      /* whose and what, for the journal */
};

static struct job jobs[MAX_JOBS];
static unsigned job_count;

/* Indices in apps[] of the apps waiting for a job (CAPTURE_QUEUE), oldest at queue_head. */
static unsigned capture_queue[CAPTURE_QUEUE];
static unsigned queue_head, queue_length;

static void app_forget(struct app *a);
static void app_capture(struct app *a);
static void reply_now(int conn, const char *text);
static void listening_resume(void);
static void client_request(unsigned i);

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
static struct job *job_fork(enum job_kind kind, unsigned seconds, int *held,
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
static void job_ended(struct job *j)
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
static int jobs_expire(void)
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
static void jobs_stop(void)
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
static int claim_capture(const struct app *a, const char *kind, char *path, size_t len)
{
    int e = make_dirs(state_dir);
    if (e)
        return e;
    capture_path(a, kind, path, len);
    return mkdir(path, 0700) == 0 ? 0 : -errno;
}

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
static void app_capture(struct app *a)
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
static void app_ended(struct app *a)
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

/* A short reply from the loop itself (an error): one packet, never waited for. */
static void reply_now(int conn, const char *text)
{
    if (send(conn, text, strlen(text), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        say("a reply was not sent: %s", strerror(errno));
}

/* A job's reply: packets of FSCOPED_REPLY_PACKET bytes, as many as it takes, then the connection is
 * closed (the client reads to the end: nothing is ever cut). The client has
 * REQUEST_JOB_S to read it. */
static void reply_all(int conn, const char *text, size_t len)
{
    int flags = fcntl(conn, F_GETFL);
    if (flags >= 0)
        fcntl(conn, F_SETFL, flags & ~O_NONBLOCK);
    for (size_t at = 0; at < len;) {
        size_t n = len - at < FSCOPED_REPLY_PACKET ? len - at : FSCOPED_REPLY_PACKET;
        ssize_t sent = send(conn, text + at, n, MSG_NOSIGNAL);
        if (sent < 0 && errno == EINTR)
            continue;
        if (sent <= 0) {
            say("a reply was cut at %zu of %zu bytes: %s", at, len,
                sent < 0 ? strerror(errno) : "nothing sent");
            return;
        }
        at += (size_t)sent;
    }
}

/* Every app, live: what `framescope top` shows (in a job). On a machine too busy to read
 * every recording in LIST_READ_MS, the apps left are listed unread, saying why: top gets an
 * answer in time however many apps run. */
static void reply_list(int conn)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    fputs("{\"apps\": [", f);
    unsigned shown = 0, unread = 0;
    time_t now = time(NULL);
    uint64_t read_until = now_ms() + LIST_READ_MS;
    for (unsigned i = 0; i < MAX_APPS; i++) {
        struct app *a = &apps[i];
        if (!a->used || a->ending)
            continue;
        struct copy c;
        struct recording *rec = NULL;
        char why[256] = "";
        struct live_stats s = { .verdict = "none" };
        /* Each app's bound is its own: the last one's is lifted first. */
        job_unbound_memory();
        int e = 0;
        if (now_ms() >= read_until) {
            snprintf(why, sizeof(why), "not read: the machine is too busy for framescoped to "
                     "read every recording within %d s", LIST_READ_MS / 1000);
            e = -ETIME;
            unread++;
        }
        if (!e)
            e = copy_recording(a->memfd, &c, why, sizeof(why));
        if (!e) {
            job_bound_memory(&c);
            e = recording_read(c.bytes, c.len, &rec, why, sizeof(why));
            copy_free(&c);
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
    if (unread)
        say("the list for framescope top: %u of %u apps not read within %d s", unread, shown,
            LIST_READ_MS / 1000);
    reply_all(conn, text, len);
    free(text);
}

static void request_list(int conn)
{
    static int held[1 + 2 * MAX_APPS];
    unsigned nheld = 0;
    held[nheld++] = conn;
    for (unsigned i = 0; i < MAX_APPS; i++)
        if (apps[i].used && !apps[i].ending)
            held[nheld++] = apps[i].memfd;
    bool child;
    struct job *j = job_fork(JOB_LIST, REQUEST_JOB_S, held, nheld, &child);
    if (child) {
        reply_list(conn);
        _exit(0);
    }
    if (!j) {
        reply_now(conn, "{\"error\": \"framescoped is busy with other analyses; ask again\"}\n");
        return;
    }
    snprintf(j->what, sizeof(j->what), "the list for framescope top");
    j->conn = fcntl(conn, F_DUPFD_CLOEXEC, 3); /* to say so if the job fails */
}

static void request_snapshot(int conn, const struct fscoped_request *req)
{
    struct app *a = NULL;
    unsigned matches = 0;
    for (unsigned i = 0; i < MAX_APPS; i++) {
        if (!apps[i].used || apps[i].ending)
            continue;
        if (req->pid ? apps[i].pid == req->pid
                     : strncmp(apps[i].name, req->name, sizeof(req->name)) == 0) {
            a = &apps[i];
            matches++;
        }
    }
    if (!a) {
        reply_now(conn, "{\"error\": \"no profiled app is running by that pid or name\"}\n");
        return;
    }
    if (matches > 1) {
        reply_now(conn, "{\"error\": \"more than one profiled app has that name: give its "
                        "pid\"}\n");
        return;
    }
    char path[PATH_MAX];
    int e = claim_capture(a, "-snapshot", path, sizeof(path));
    if (e) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (f) {
            fputs("{\"error\": ", f);
            char why[PATH_MAX + 64];
            snprintf(why, sizeof(why), "cannot create %s: %s", path, strerror(-e));
            json_string(f, why);
            fputs("}\n", f);
            fclose(f);
            reply_now(conn, text);
            free(text);
        }
        return;
    }
    int held[] = { conn, a->memfd, a->stream_fd };
    bool child;
    struct job *j = job_fork(JOB_SNAPSHOT, REQUEST_JOB_S, held, 3, &child);
    if (child) {
        char summary[128] = "", why[256] = "";
        e = write_capture(a, req->last_ms, path, summary, sizeof(summary), why, sizeof(why));
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (f) {
            fputs(e ? "{\"error\": " : "{\"capture\": ", f);
            json_string(f, e ? (why[0] ? why : strerror(-e)) : path);
            fprintf(f, ", \"pid\": %d, \"name\": ", a->pid);
            json_string(f, a->name);
            fputs("}\n", f);
            fclose(f);
            reply_all(conn, text, len);
        }
        if (!e)
            say("snapshot of %s (pid %d): %s; capture %s", a->name, a->pid, summary, path);
        _exit(e ? 1 : 0);
    }
    if (!j) {
        rmdir(path);
        reply_now(conn, "{\"error\": \"framescoped is busy with other analyses; ask again\"}\n");
        return;
    }
    snprintf(j->path, sizeof(j->path), "%s", path);
    snprintf(j->what, sizeof(j->what), "the snapshot of %s (pid %d)", a->name, a->pid);
    j->conn = fcntl(conn, F_DUPFD_CLOEXEC, 3); /* to say so if the job fails */
}

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

static void client_close(unsigned i)
{
    epoll_ctl(epfd, EPOLL_CTL_DEL, clients[i].fd, NULL);
    close(clients[i].fd);
    clients[i].fd = -1;
    listening_resume();
}

/* Listens again after running out of descriptors, once one was freed. */
static void listening_resume(void)
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
