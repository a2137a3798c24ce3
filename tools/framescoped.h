/* framescoped's parts (tools/framescoped*.c): what they share. One thread, one epoll loop;
 * the state below is the loop's. */
#ifndef FSCOPE_TOOLS_FRAMESCOPED_H
#define FSCOPE_TOOLS_FRAMESCOPED_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include "analysis/recording.h"
#include "util/daemon_proto.h"

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

/* The registered apps, the epoll descriptor and the options (tools/framescoped.c). */
extern struct app apps[MAX_APPS];
extern int epfd;
extern char state_dir[PATH_MAX];
extern long keep;
extern long job_timeout_s; /* --timeout: one limit for every analysis; 0: as above */

/* epoll's data: what an fd is. */
enum { TAG_LISTEN = 1, TAG_CLIENT, TAG_PIDFD, TAG_APPCONN, TAG_JOB };
#define TAG(kind, index) (((uint64_t)(kind) << 32) | (uint32_t)(index))

/* ---- saying things (tools/framescoped_log.c) ---- */

void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether a line of this kind may be said now: a client that repeats what gets refused must
 * not fill the journal. Says how many were held back when it speaks again. */
struct quiet {
    time_t last;
    unsigned held;
};
bool quiet_may_say(struct quiet *q, unsigned *ret_held);
uint64_t now_ms(void);

/* ---- the state directory and its captures (tools/framescoped_captures.c) ---- */

bool default_state_dir(void);
/* Creates path and its parents, 0700 where new. */
int make_dirs(const char *path);
/* Removes the temporary directories capture_dir made for the capture at path (a job that was
 * killed before it committed leaves one, holding up to the whole recording's copy). */
void remove_capture_temporaries(const char *path);
/* At start-up, what a daemon that was killed left (SIGKILL, a crash: its jobs died with it,
 * PR_SET_PDEATHSIG): capture_dir's temporary directories of our naming, and the empty
 * directories claimed for captures never written. Only in our own directory, never through a
 * link, and only files a capture holds. */
void remove_leftovers(void);
/* Keeps the newest `keep` captures (directories whose names end in ".capture", whole ones:
 * capture_complete). */
void prune_captures(void);
/* "<name>-<pid>-<YYYYmmdd-HHMMSS>[-snapshot][-N].capture", the name made safe for a path; -N
 * (2, 3, ...) when a capture of that name exists already (two snapshots in one second), so
 * none is ever replaced. The daemon's one thread makes every capture: no race between the
 * look and the write. */
void capture_path(const struct app *a, const char *kind, char *buf, size_t len);

/* ---- reading a registered recording, in a job (tools/framescoped_read.c) ---- */

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
void job_bound_memory(const struct copy *c);
/* Lifts a job's bound (to the hard limit) before the next recording it reads. */
void job_unbound_memory(void);
/* The recording, read once into memory of our own: nothing another process writes afterwards
 * (the app, or anyone else holding its memfd) reaches what is validated and used. Only the
 * extents that hold data are read; holes stay untouched zero pages, so the copy costs what the
 * recording really holds. The memfd itself is never mapped: one that shrinks under us gives a
 * short read, never SIGBUS. */
int copy_recording(int fd, struct copy *c, char *why, size_t why_len);
void copy_free(struct copy *c);
/* Analyses an app's recording (all of it, or its last last_ms) into the capture at path (a
 * directory claimed for it). Returns 0, or -errno with why. */
int write_capture(const struct app *a, uint32_t last_ms, const char *path,
                  char *summary, size_t summary_len, char *why, size_t why_len);

/* ---- jobs: analyses in children (tools/framescoped_jobs.c) ---- */

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

extern struct job jobs[MAX_JOBS];
/* Indices in apps[] of the apps waiting for a job (CAPTURE_QUEUE), oldest at queue_head. */
extern unsigned capture_queue[CAPTURE_QUEUE];
extern unsigned queue_head, queue_length;

/* Forks a job that keeps held[]: returns 0 in the child, the job in the parent, NULL (said)
 * when none can start now. */
struct job *job_fork(enum job_kind kind, unsigned seconds, int *held,
                     unsigned nheld, bool *ret_child);
/* A job's child is gone: reaped, its slot to the next. */
void job_ended(struct job *j);
/* Kills the jobs past their time; returns how long until the next is due (-1: none). */
int jobs_expire(void);
/* The daemon stops (SIGTERM: systemd stops the unit, or sends it to the whole group): every
 * job is killed and reaped, what it left removed and said, and so is every capture still
 * waiting for one. Running apps register again with the next daemon; those that ended are
 * gone with their recordings. */
void jobs_stop(void);
/* Claims a fresh capture directory for a (made now, so that the next claim sees it). */
int claim_capture(const struct app *a, const char *kind, char *path, size_t len);

/* ---- apps (tools/framescoped_apps.c) ---- */

/* Writes the capture of an app that ended, in a job; the app is forgotten once the job has its
 * descriptors. While every job is busy it waits in the queue (ending), its pidfd out of the
 * loop; when the queue is full it is dropped, said. */
void app_capture(struct app *a);
/* The app's process is gone: its capture, and a line for the journal. */
void app_ended(struct app *a);
void app_register(int conn, const struct fscoped_request *req, const struct ucred *cred,
                  int *fds, unsigned nfds);

/* ---- replies to top and snapshot (tools/framescoped_replies.c) ---- */

/* A short reply from the loop itself (an error): one packet, never waited for. */
void reply_now(int conn, const char *text);
void request_list(int conn);
void request_snapshot(int conn, const struct fscoped_request *req);

/* ---- connections (tools/framescoped.c) ---- */

/* Listens again after running out of descriptors, once one was freed. */
void listening_resume(void);

#endif
