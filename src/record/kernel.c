#include "kernel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "chunked.h"
#include "clock.h"
#include "counters.h"
#include "kms.h"
#include "meta.h"
#include "recording.h"
#include "registry.h"
#include "util/config.h"
#include "util/drm_fdinfo.h"
#include "util/log.h"
#include "util/private_fd.h"
#include "worker.h"

static bool kernel_on = true;

static void set_state(enum rec_kernel_state state, const char *why)
{
    struct rec_meta *m = recording_meta();
    if (!m)
        return;
    uint32_t unknown = REC_KERNEL_UNKNOWN;
    if (state == REC_KERNEL_ON) {
        atomic_compare_exchange_strong(&m->kernel_state, &unknown, REC_KERNEL_ON);
        return;
    }
    /* The first reason a thread found is the one the summary gives. */
    if (atomic_exchange(&m->kernel_state, state) != state && why)
        snprintf(m->kernel_why, sizeof(m->kernel_why), "%s", why);
}

void kernel_init(void)
{
    const char *value = secure_getenv("FRAMESCOPE_KERNEL");
    bool on;
    if (value && *value && fscope_config_parse_switch(value, &on)) {
        kernel_on = on;
        if (!on)
            set_state(REC_KERNEL_OFF, "FRAMESCOPE_KERNEL=off");
    } else if (value && *value) {
        char shown[FSCOPE_ESCAPE_SIZE];
        fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_KERNEL='%s' is not on or off; using on",
                   fscope_config_escape(value, shown, sizeof(shown)));
    }
    counters_init(kernel_on);
}

bool kernel_thread_times(struct fscope_collector *c, struct kernel_thread_view *ret)
{
    if (!kernel_on || !c)
        return false;
    if (c->schedstat_fd < 0) {
        if (c->schedstat_fd == -2)
            return false; /* this thread already found it missing */
        c->schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
        if (c->schedstat_fd < 0) {
            char why[160];
            snprintf(why, sizeof(why), "/proc/thread-self/schedstat: %s (no /proc, or a "
                     "kernel without CONFIG_SCHED_INFO)", strerror(errno));
            set_state(REC_KERNEL_UNAVAILABLE, why);
            c->schedstat_fd = -2;
            return false;
        }
    }
    /* "ON_CPU_NS RUNQUEUE_NS TIMESLICES\n" */
    char text[96];
    ssize_t n = pread(c->schedstat_fd, text, sizeof(text) - 1, 0);
    if (n <= 0)
        return false;
    text[n] = '\0';
    char *end;
    ret->oncpu_ns = strtoull(text, &end, 10);
    ret->runnable_ns = strtoull(end, NULL, 10);
    /* The same thread's faults and switches: one more system call, no descriptor. */
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0) {
        ret->major_faults = (uint64_t)ru.ru_majflt;
        ret->block_reads = (uint64_t)ru.ru_inblock;
        ret->preempted = (uint64_t)ru.ru_nivcsw;
        ret->waits = (uint64_t)ru.ru_nvcsw;
    } else {
        ret->major_faults = ret->block_reads = ret->preempted = ret->waits = 0;
    }
    set_state(REC_KERNEL_ON, NULL);
    return true;
}

void kernel_thread_exit(struct fscope_collector *c)
{
    if (c && c->schedstat_fd >= 0) {
        close(c->schedstat_fd);
        c->schedstat_fd = -1;
    }
}

/* ---- the sampler ---- */

/* The threads the sampler watches: a file and a perf group each. */
/* Perf groups take four descriptors each in the app's own table (a game may still select()
 * on low numbers): the first threads found get one, which is where engines start their main,
 * render and worker threads. */
#define PERF_THREADS 16

struct watched {
    int tid;
    int perf_fd;        /* the group's leader; -1 without perf */
    int perf_member[3]; /* the other events: a group lives as long as all its fds; -1 */
    unsigned perf_flags; /* KERNEL_SAMPLE_* the group counts */
    char schedstat[96];
    uint64_t perf[1 + 4]; /* PERF_FORMAT_GROUP: nr, then the values */
    bool seen;             /* in the latest listing of /proc/self/task */
};

struct sampler {
    struct rec_kernel *rec;
    struct watched threads[REC_KERNEL_THREADS];
    unsigned count;
    bool perf_kernel_refused; /* perf_event_paranoid: user-space counts only */
    unsigned perf_groups;     /* open now, at most PERF_THREADS */
    int task_dir;             /* /proc/self/task, the one descriptor held for schedstat; 0: not
                               * opened yet (0 is the app's stdin, never ours) */
    unsigned ticks;
    /* The fdinfo files of the app's DRM descriptors (links to /dev/dri nodes), found once a
     * second; FRAMESCOPE_TEST_DRM_FDINFO names one more (a text file in the same format). */
    char drm_paths[16][64];
    unsigned drm_count;
    const char *test_fdinfo;
    struct kms *kms; /* the displays' vblank counters; NULL: none */
};


/* Perf events only where the limit leaves room for them. */
#define PERF_MIN_FD_LIMIT 4096

static int perf_open(uint64_t config, int tid, int group, bool exclude_kernel)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.type = PERF_TYPE_SOFTWARE;
    attr.size = sizeof(attr);
    attr.config = config;
    attr.read_format = PERF_FORMAT_GROUP;
    attr.exclude_kernel = exclude_kernel;
    attr.exclude_hv = 1;
    return fscope_fd_high((int)syscall(SYS_perf_event_open, &attr, tid, -1, group,
                                PERF_FLAG_FD_CLOEXEC));
}

static void watched_close_perf(struct watched *w)
{
    for (unsigned i = 0; i < 3; i++)
        if (w->perf_member[i] >= 0)
            close(w->perf_member[i]);
    if (w->perf_fd >= 0)
        close(w->perf_fd);
    w->perf_fd = w->perf_member[0] = w->perf_member[1] = w->perf_member[2] = -1;
}

/* A perf group for tid: context switches and migrations (kernel events: need
 * perf_event_paranoid <= 1 or CAP_PERFMON), then page faults (counted in user space too). */
static void perf_group(struct sampler *s, struct watched *w)
{
    static const uint64_t all[] = { PERF_COUNT_SW_CONTEXT_SWITCHES, PERF_COUNT_SW_CPU_MIGRATIONS,
                                    PERF_COUNT_SW_PAGE_FAULTS_MIN, PERF_COUNT_SW_PAGE_FAULTS_MAJ };
    w->perf_fd = -1;
    w->perf_flags = 0;
    for (unsigned i = 0; i < 3; i++)
        w->perf_member[i] = -1;
    if (s->perf_groups >= PERF_THREADS)
        return;
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < PERF_MIN_FD_LIMIT) {
        if (!s->rec->perf_why[0])
            snprintf(s->rec->perf_why, sizeof(s->rec->perf_why), "context switches, migrations "
                     "and page faults not counted: the app may open %llu descriptors, too few to "
                     "lend perf groups %d of them", (unsigned long long)limit.rlim_cur,
                     PERF_THREADS * 4);
        return;
    }
    bool user_only = s->perf_kernel_refused;
    for (int attempt = 0; attempt < 2; attempt++) {
        unsigned first = user_only ? 2 : 0;
        int leader = perf_open(all[first], w->tid, -1, user_only);
        if (leader < 0) {
            if (!user_only && (errno == EACCES || errno == EPERM)) {
                user_only = s->perf_kernel_refused = true;
                snprintf(s->rec->perf_why, sizeof(s->rec->perf_why), "context switches and "
                         "migrations not counted: perf_event_paranoid allows user-space counts "
                         "only (root, CAP_PERFMON or perf_event_paranoid <= 1 would)");
                continue;
            }
            if (!s->rec->perf_why[0])
                snprintf(s->rec->perf_why, sizeof(s->rec->perf_why), "perf events unavailable "
                         "(%s): no context switches, migrations or page faults", strerror(errno));
            return;
        }
        bool ok = true;
        for (unsigned i = first + 1; i < 4 && ok; i++) {
            int fd = perf_open(all[i], w->tid, leader, user_only);
            ok = fd >= 0;
            w->perf_member[i - first - 1] = fd;
        }
        w->perf_fd = leader;
        if (!ok) {
            watched_close_perf(w);
            return;
        }
        s->perf_groups++;
        w->perf_flags = KERNEL_SAMPLE_FAULTS | (user_only ? 0 : KERNEL_SAMPLE_SWITCHES);
        return;
    }
}

static void watched_close(struct sampler *s, struct watched *w)
{
    if (w->perf_fd >= 0)
        s->perf_groups--;
    watched_close_perf(w);
}

/* A thread's name into the recording's table (a thread renames itself after it starts). */
static void record_name(struct sampler *s, int tid)
{
    uint32_t n = atomic_load(&s->rec->thread_count);
    struct rec_kernel_thread *t = NULL;
    for (uint32_t i = 0; i < n && !t; i++)
        if (s->rec->threads[i].tid == tid)
            t = &s->rec->threads[i];
    if (!t && n >= REC_KERNEL_THREADS)
        return;
    char path[64], name[sizeof(t->name)] = "";
    snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
    FILE *comm = fopen(path, "re");
    if (comm) {
        if (fgets(name, sizeof(name), comm))
            name[strcspn(name, "\n")] = '\0';
        fclose(comm);
    }
    if (t) {
        memcpy(t->name, name, sizeof(name));
        return;
    }
    t = &s->rec->threads[n];
    t->tid = tid;
    memcpy(t->name, name, sizeof(name));
    atomic_store_explicit(&s->rec->thread_count, n + 1, memory_order_release);
}

/* Lists /proc/self/task: new threads are watched, gone ones closed; with names, every
 * thread's name is read again. */
static void refresh_threads(struct sampler *s, bool names)
{
    DIR *dir = opendir("/proc/self/task");
    if (!dir)
        return;
    for (unsigned i = 0; i < s->count; i++)
        s->threads[i].seen = false;
    int self = (int)gettid();
    uint32_t unwatched = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        int tid = atoi(e->d_name);
        if (tid <= 0 || tid == self)
            continue;
        struct watched *w = NULL;
        for (unsigned i = 0; i < s->count && !w; i++)
            if (s->threads[i].tid == tid)
                w = &s->threads[i];
        if (w) {
            w->seen = true;
            if (names)
                record_name(s, tid);
            continue;
        }
        if (s->count >= REC_KERNEL_THREADS) {
            unwatched++;
            continue;
        }
        w = &s->threads[s->count++];
        memset(w, 0, sizeof(*w));
        w->tid = tid;
        w->seen = true;
        perf_group(s, w);
        record_name(s, tid);
    }
    closedir(dir);
    if (unwatched > atomic_load_explicit(&s->rec->unwatched_threads, memory_order_relaxed))
        atomic_store_explicit(&s->rec->unwatched_threads, unwatched, memory_order_relaxed);
    /* Threads that exited: stop reading them (their last sample stays). */
    for (unsigned i = 0; i < s->count;) {
        if (!s->threads[i].seen) {
            watched_close(s, &s->threads[i]);
            s->threads[i] = s->threads[--s->count];
        } else {
            i++;
        }
    }
}

/* The app's descriptors that name a DRM device. */
static void refresh_drm(struct sampler *s)
{
    DIR *dir = opendir("/proc/self/fd");
    if (!dir)
        return;
    s->drm_count = 0;
    struct dirent *e;
    while ((e = readdir(dir)) && s->drm_count < sizeof(s->drm_paths) / sizeof(s->drm_paths[0])) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        int fd = atoi(e->d_name);
        char path[64], target[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (strncmp(target, "/dev/dri/", 9) == 0)
            snprintf(s->drm_paths[s->drm_count++], sizeof(s->drm_paths[0]),
                     "/proc/self/fdinfo/%d", fd);
    }
    closedir(dir);
    if (s->test_fdinfo && s->drm_count < sizeof(s->drm_paths) / sizeof(s->drm_paths[0]))
        snprintf(s->drm_paths[s->drm_count++], sizeof(s->drm_paths[0]), "%s", s->test_fdinfo);
    if (s->drm_count > atomic_load(&s->rec->drm_fds))
        atomic_store(&s->rec->drm_fds, s->drm_count);
}

/* Each DRM client's usage stats, once per client (several descriptors may share one). */
static void record_drm(struct sampler *s, uint64_t ticks)
{
    uint64_t seen[16];
    unsigned seen_count = 0;
    for (unsigned i = 0; i < s->drm_count; i++) {
        char text[4096];
        int fd = open(s->drm_paths[i], O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
        if (fd >= 0)
            close(fd);
        struct drm_fdinfo info;
        if (n <= 0)
            continue;
        text[n] = '\0';
        if (!drm_fdinfo_parse(text, &info))
            continue;
        bool again = false;
        for (unsigned j = 0; j < seen_count && !again; j++)
            again = seen[j] == info.client_id;
        if (again)
            continue;
        seen[seen_count++] = info.client_id;
        struct drm_sample *d = chunked_next(&s->rec->drm_samples);
        if (!d)
            return;
        d->ticks = ticks;
        d->client_id = info.client_id;
        snprintf(d->driver, sizeof(d->driver), "%s", info.driver);
        d->engine_count = info.engine_count;
        for (unsigned k = 0; k < info.engine_count; k++) {
            snprintf(d->engines[k].name, sizeof(d->engines[k].name), "%s", info.engines[k].name);
            d->engines[k].busy_ns = info.engines[k].busy_ns;
            d->engines[k].capacity = info.engines[k].capacity;
        }
        d->region_count = info.region_count;
        for (unsigned k = 0; k < info.region_count; k++) {
            snprintf(d->regions[k].name, sizeof(d->regions[k].name), "%s", info.regions[k].name);
            d->regions[k].total_bytes = info.regions[k].total_bytes;
            d->regions[k].resident_bytes = info.regions[k].resident_bytes;
        }
        chunked_publish(&s->rec->drm_samples);
    }
}

/* Reads every watched thread's files. Plain reads: procfs files cannot be read without
 * blocking, so io_uring hands each read to a worker thread of its own (an iou-wrk thread in the
 * app), which made a tick 2 to 6 times slower than these preads (tests/bench-sampler.c). */
static void read_all(struct sampler *s)
{
    for (unsigned i = 0; i < s->count; i++) {
        struct watched *w = &s->threads[i];
        /* Opened and closed each tick: no descriptor per thread held in the app's table. */
        char path[32];
        snprintf(path, sizeof(path), "%d/schedstat", w->tid);
        int fd = openat(s->task_dir, path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? pread(fd, w->schedstat, sizeof(w->schedstat) - 1, 0) : -1;
        if (fd >= 0)
            close(fd);
        w->schedstat[n > 0 ? n : 0] = '\0';
        if (w->perf_fd >= 0 && read(w->perf_fd, w->perf, sizeof(w->perf)) < (ssize_t)(3 * 8))
            w->perf[0] = 0;
    }
}

static void record_samples(struct sampler *s, uint64_t ticks)
{
    for (unsigned i = 0; i < s->count; i++) {
        struct watched *w = &s->threads[i];
        if (!w->schedstat[0])
            continue; /* exited since the listing */
        struct kernel_sample *k = chunked_next(&s->rec->samples);
        if (!k)
            return;
        char *end;
        k->ticks = ticks;
        k->tid = w->tid;
        k->oncpu_ns = strtoull(w->schedstat, &end, 10);
        k->runnable_ns = strtoull(end, &end, 10);
        k->runs = strtoull(end, NULL, 10);
        if (w->perf_fd >= 0 && w->perf[0] >= 2) {
            k->flags = w->perf_flags;
            if (w->perf_flags & KERNEL_SAMPLE_SWITCHES) {
                k->context_switches = w->perf[1];
                k->migrations = w->perf[2];
                k->minor_faults = w->perf[3];
                k->major_faults = w->perf[4];
            } else {
                k->minor_faults = w->perf[1];
                k->major_faults = w->perf[2];
            }
        }
        chunked_publish(&s->rec->samples);
    }
}

/* Each tick: new threads found at every one; names read again, and the DRM descriptors
 * looked for, once a second. The final tick takes a last sample, so the run's totals reach
 * its end, and lets everything go. */
static void sampler_tick(void *arg, bool final)
{
    struct sampler *s = arg;
    if (s->task_dir == 0) {
        s->task_dir = fscope_fd_high(open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        s->kms = kms_open(&s->rec->kms);
    }
    bool second = final || s->ticks++ % (1000 / KERNEL_TICK_MS) == 0;
    refresh_threads(s, second);
    if (second)
        refresh_drm(s);
    read_all(s);
    uint64_t now = fscope_now();
    record_samples(s, now);
    record_drm(s, now);
    kms_tick(s->kms, &s->rec->kms);
    if (!final)
        return;
    kms_close(s->kms);
    for (unsigned i = 0; i < s->count; i++)
        watched_close(s, &s->threads[i]);
    if (s->task_dir >= 0)
        close(s->task_dir);
    free(s);
}

static struct worker sampler = WORKER_INIT;

static void sampler_start_once(void)
{
    if (!kernel_on)
        return;
    uint64_t offset;
    struct rec_kernel *rec = recording_object_new(sizeof(*rec), &offset);
    struct sampler *s = rec ? calloc(1, sizeof(*s)) : NULL;
    if (!s)
        return;
    rec->tick_ms = KERNEL_TICK_MS;
    chunked_init(&rec->samples, sizeof(struct kernel_sample));
    chunked_init(&rec->drm_samples, sizeof(struct drm_sample));
    recording_publish(REC_OBJ_KERNEL, offset, sizeof(*rec));
    s->rec = rec;
    /* Test only: a file in fdinfo's format read as one more DRM client (tests/test_kernel.py
     * drives the sampler and analysis with it where no DRM device exists). */
    const char *test = secure_getenv("FRAMESCOPE_TEST_DRM_FDINFO");
    s->test_fdinfo = test && test[0] == '/' && strlen(test) < sizeof(s->drm_paths[0]) ? test : NULL;
    if (!worker_start(&sampler, "fscope-kernel", KERNEL_TICK_MS, sampler_tick, s)) {
        free(s);
        fscope_log(FSCOPE_LOG_WARN, "cannot start the kernel sampler thread: threads other "
                   "than the one presenting are not sampled");
    }
}

static pthread_once_t sampler_once = PTHREAD_ONCE_INIT;

void kernel_sampler_start(void)
{
    pthread_once(&sampler_once, sampler_start_once);
}

void kernel_sampler_stop(void)
{
    worker_stop(&sampler);
}
