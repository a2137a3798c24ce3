#include "kernel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "chunked.h"
#include "engine.h"
#include "clock.h"
#include "counters.h"
#include "kms.h"
#include "meta.h"
#include "recording.h"
#include "registry.h"
#include "sched_trace.h"
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
        /* Every frame: a plain load, not a locked write to a shared line, once it is known. */
        if (atomic_load_explicit(&m->kernel_state, memory_order_relaxed) == REC_KERNEL_UNKNOWN)
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
        c->schedstat_fd = fscope_fd_high(open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC));
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
        fscope_fd_close(c->schedstat_fd);
        c->schedstat_fd = -1;
    }
}

/* ---- the sampler ---- */

/* The threads the sampler watches: a file and a perf group each. */
struct watched {
    int tid;
    char schedstat[96];
    uint64_t read_ticks; /* when its schedstat was read: its sample's time */
    uint64_t oncpu_ns;  /* at the last read of its counts: unchanged, it has not run since */
    bool counted;       /* counts read at least once */
    unsigned flags;     /* KERNEL_SAMPLE_* its counts carry */
    uint64_t switches, migrations, minor_faults, major_faults;
    bool seen;          /* in the latest listing of /proc/self/task */
};

struct sampler {
    struct rec_kernel *rec;
    struct watched threads[REC_KERNEL_THREADS];
    unsigned count;
    bool no_sched;            /* no /proc/TID/sched (a kernel without CONFIG_SCHED_DEBUG) */
    int task_dir;             /* /proc/self/task, the one descriptor held for schedstat; 0: not
                               * opened yet (0 is the app's stdin, never ours) */
    unsigned ticks;
    /* The fdinfo files of the app's DRM descriptors (links to /dev/dri nodes), found once a
     * second; FRAMESCOPE_TEST_DRM_FDINFO names one more (a text file in the same format). */
    char drm_paths[16][64];
    unsigned drm_count;
    const char *test_fdinfo;
    struct kms *kms; /* the displays' vblank counters; NULL: none */
    struct sched_trace *sched; /* the wake-up chain; NULL: none */
};

/* Reads TID/NAME under /proc/self/task into buf (NUL-terminated); its length, or -1. */
static ssize_t read_task_file(struct sampler *s, int tid, const char *name, char *buf,
                              size_t size)
{
    char path[48];
    snprintf(path, sizeof(path), "%d/%s", tid, name);
    int fd = fscope_fd_transient(openat(s->task_dir, path, O_RDONLY | O_CLOEXEC));
    ssize_t n = fd >= 0 ? pread(fd, buf, size - 1, 0) : -1;
    fscope_fd_transient_close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return n;
}

/* The number after "key" and the spaces and colon that follow it in text; false if absent. */
static bool field_after(const char *text, const char *key, uint64_t *ret)
{
    const char *at = strstr(text, key);
    if (!at)
        return false;
    at += strlen(key);
    while (*at == ' ' || *at == ':' || *at == '\t')
        at++;
    char *end;
    unsigned long long v = strtoull(at, &end, 10);
    if (end == at)
        return false;
    *ret = v;
    return true;
}

/* A thread's context switches, migrations and page faults, from procfs: its stat (minor and
 * major faults) and its sched file (switches and migrations; where the kernel has none, its
 * status for switches). Read only when the thread ran since the last read: an idle one has
 * nothing new, so a game's hundred sleeping threads cost one read each a tick. Earlier
 * versions counted these with a perf group per thread; the kernel then does perf work at every
 * switch of those threads, which cost lavapipe's rasterizer threads (switching thousands of
 * times a second) more CPU than everything else here together. */
static void read_counts(struct sampler *s, struct watched *w, uint64_t oncpu_ns)
{
    if (w->counted && oncpu_ns == w->oncpu_ns)
        return;
    w->oncpu_ns = oncpu_ns;
    char text[1024];
    unsigned flags = 0;
    /* stat: "pid (comm) state ppid ..." with minflt the 10th field and majflt the 12th; comm
     * may hold spaces and parentheses, so fields count from the last ')'. */
    if (read_task_file(s, w->tid, "stat", text, sizeof(text)) > 0) {
        char *p = strrchr(text, ')');
        unsigned long long v[10] = { 0 };
        if (p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %llu %*u %llu", &v[0], &v[1]) == 2) {
            w->minor_faults = v[0];
            w->major_faults = v[1];
            flags |= KERNEL_SAMPLE_FAULTS;
        }
    }
    uint64_t switches, migrations;
    if (!s->no_sched) {
        if (read_task_file(s, w->tid, "sched", text, sizeof(text)) > 0 &&
            field_after(text, "nr_switches", &switches)) {
            w->switches = switches;
            flags |= KERNEL_SAMPLE_SWITCHES;
            if (field_after(text, "se.nr_migrations", &migrations)) {
                w->migrations = migrations;
                flags |= KERNEL_SAMPLE_MIGRATIONS;
            }
        }
    } else {
        uint64_t vol, invol;
        char status[2048];
        if (read_task_file(s, w->tid, "status", status, sizeof(status)) > 0 &&
            field_after(status, "\nvoluntary_ctxt_switches", &vol) &&
            field_after(status, "nonvoluntary_ctxt_switches", &invol)) {
            w->switches = vol + invol;
            flags |= KERNEL_SAMPLE_SWITCHES;
        }
    }
    w->flags = flags;
    w->counted = true;
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
    char name[sizeof(t->name)] = "";
    if (read_task_file(s, tid, "comm", name, sizeof(name)) > 0)
        name[strcspn(name, "\n")] = '\0';
    if (t) {
        memcpy(t->name, name, sizeof(name));
        return;
    }
    t = &s->rec->threads[n];
    t->tid = tid;
    memcpy(t->name, name, sizeof(name));
    atomic_store_explicit(&s->rec->thread_count, n + 1, memory_order_release);
}

/* A listing's descriptor, known while it is open (fscope_fd_transient): a child forked
 * meanwhile closes it. */
static DIR *opendir_transient(const char *path)
{
    int fd = fscope_fd_transient(open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dir && fd >= 0)
        fscope_fd_transient_close(fd);
    return dir;
}

static void closedir_transient(DIR *dir)
{
    int fd = dirfd(dir);
    /* Forgotten first, then closed by closedir: a number closed here is never closed again. */
    fscope_fd_transient_forget(fd);
    closedir(dir);
}

/* Lists /proc/self/task: new threads are watched, gone ones closed; with names, every
 * thread's name is read again. */
static void refresh_threads(struct sampler *s, bool names)
{
    DIR *dir = opendir_transient("/proc/self/task");
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
        record_name(s, tid);
    }
    closedir_transient(dir);
    if (unwatched > atomic_load_explicit(&s->rec->unwatched_threads, memory_order_relaxed))
        atomic_store_explicit(&s->rec->unwatched_threads, unwatched, memory_order_relaxed);
    /* Threads that exited: stop reading them (their last sample stays). */
    for (unsigned i = 0; i < s->count;) {
        if (!s->threads[i].seen) {
            s->threads[i] = s->threads[--s->count];
        } else {
            i++;
        }
    }
}

/* The app's descriptors that name a DRM device. */
static void refresh_drm(struct sampler *s)
{
    DIR *dir = opendir_transient("/proc/self/fd");
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
    closedir_transient(dir);
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
        /* Opened without waiting and read only if a regular file (fdinfo is one): a FIFO named
         * by FRAMESCOPE_TEST_DRM_FDINFO would hold this thread, and with it the app's exit,
         * until a writer came. */
        int fd = fscope_fd_transient(open(s->drm_paths[i],
                                          O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
        struct stat st;
        bool regular = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
        ssize_t n = regular ? read(fd, text, sizeof(text) - 1) : -1;
        fscope_fd_transient_close(fd);
        if (fd >= 0 && !regular && s->test_fdinfo &&
            strcmp(s->drm_paths[i], s->test_fdinfo) == 0) {
            char shown[FSCOPE_ESCAPE_SIZE];
            fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_TEST_DRM_FDINFO=%s is not a regular file; "
                       "it is not read", fscope_config_escape(s->test_fdinfo, shown,
                                                              sizeof(shown)));
            s->test_fdinfo = NULL; /* said once; gone from the next refresh */
        }
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
static void read_all(struct sampler *s, uint64_t *ret_ticks)
{
    /* Opened and closed each tick: no descriptor per thread held in the app's table. Every
     * schedstat first, each sample timed as its own read returns (the counts' files, read
     * after, change slowly): a sampler preempted between two reads must not make a thread's
     * time on CPU longer than its tick (ASan beside the demo's threads: 8.9 ms in a 7.5 ms
     * tick with one time for the whole tick). */
    for (unsigned i = 0; i < s->count; i++) {
        struct watched *w = &s->threads[i];
        if (read_task_file(s, w->tid, "schedstat", w->schedstat, sizeof(w->schedstat)) <= 0)
            w->schedstat[0] = '\0';
        w->read_ticks = fscope_now();
    }
    *ret_ticks = fscope_now();
    for (unsigned i = 0; i < s->count; i++) {
        struct watched *w = &s->threads[i];
        if (w->schedstat[0])
            read_counts(s, w, strtoull(w->schedstat, NULL, 10));
    }
}

static void record_samples(struct sampler *s)
{
    for (unsigned i = 0; i < s->count; i++) {
        struct watched *w = &s->threads[i];
        if (!w->schedstat[0])
            continue; /* exited since the listing */
        struct kernel_sample *k = chunked_next(&s->rec->samples);
        if (!k)
            return;
        char *end;
        k->ticks = w->read_ticks;
        k->tid = w->tid;
        k->oncpu_ns = strtoull(w->schedstat, &end, 10);
        k->runnable_ns = strtoull(end, &end, 10);
        k->runs = strtoull(end, NULL, 10);
        k->flags = w->flags;
        k->context_switches = w->switches;
        k->migrations = w->migrations;
        k->minor_faults = w->minor_faults;
        k->major_faults = w->major_faults;
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
        s->no_sched = access("/proc/thread-self/sched", R_OK) != 0;
        if (s->no_sched)
            snprintf(s->rec->perf_why, sizeof(s->rec->perf_why), "migrations not counted: no "
                     "/proc/<tid>/sched (a kernel without CONFIG_SCHED_DEBUG)");
        s->kms = kms_open(&s->rec->kms);
    }
    bool second = final || s->ticks++ % (1000 / KERNEL_TICK_MS) == 0;
    refresh_threads(s, second);
    if (second)
        refresh_drm(s);
    uint64_t now;
    read_all(s, &now);
    record_samples(s);
    record_drm(s, now);
    engine_sample(now);
    kms_tick(s->kms, &s->rec->kms);
    sched_trace_tick(s->sched, atomic_load_explicit(&fscope_sched_closer_tid,
                                                    memory_order_relaxed), final);
    if (!final)
        return;
    kms_close(s->kms);
    if (s->task_dir >= 0)
        fscope_fd_close(s->task_dir);
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
    chunked_init(&rec->sched_events, sizeof(struct sched_event));
    recording_publish(REC_OBJ_KERNEL, offset, sizeof(*rec));
    s->rec = rec;
    s->sched = sched_trace_new(rec);
    /* Test only: a file in fdinfo's format read as one more DRM client (tests/test_kernel.py
     * drives the sampler and analysis with it where no DRM device exists). */
    const char *test = secure_getenv("FRAMESCOPE_TEST_DRM_FDINFO");
    s->test_fdinfo = test && test[0] == '/' && strlen(test) < sizeof(s->drm_paths[0]) ? test : NULL;
    if (!worker_start(&sampler, "fscope-kernel", KERNEL_TICK_MS, sampler_tick, s)) {
        sched_trace_tick(s->sched, 0, true);
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
