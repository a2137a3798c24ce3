/* The wake-up chain of the thread that closes frames: who ran instead while it was runnable,
 * and who woke it when it slept (issue 19). The kernel's sched_switch and sched_waking
 * tracepoints (sched_waking fires in the waker's context; sched_wakeup, when the wake-up is
 * queued to the sleeper's CPU, fires there from an interrupt, naming no waker), one perf
 * event of each per CPU (a thread moves between CPUs, and the wake-up happens on the
 * waker's), filtered in the kernel to that thread, so the rings carry only its own switches.
 * The kernel takes an event's filter once (a second PERF_EVENT_IOC_SET_FILTER fails with
 * EEXIST), so when another thread starts closing frames a new set of events is opened,
 * filtered to it and to the FOLLOW_MAX - 1 threads that closed frames before it, on this
 * thread at its next tick; the old set is read to the moment the new one is on, and closed
 * (issue 36: before, the first thread stayed followed for good and a second one's frames had
 * no chain). Marks in the recording say from when to when each thread was followed.
 * A CPU offline when the events are opened gets none, and a CPU taken offline loses its
 * events for good (the kernel takes them out of its context; enabling them again does
 * nothing): at each tick the CPUs online are read (/sys/devices/system/cpu/online, one pread)
 * and each CPU's switch event's time enabled (one read, which the kernel answers with an
 * interrupt to that CPU: ten a second per CPU; the time stops when the event is gone), and
 * the events of a CPU online without them are opened again. The stretch a CPU had none is
 * marked, and every frame in it reads unknown (issue 36: a CPU taken offline and back made
 * 598 frames read "woken after 0.000 ms" with nothing lost said).
 * A sched_switch event attached to the thread instead spares the other threads' switches
 * nothing they pay here, and costs the thread's own more, since its perf context then goes
 * in and out with it (tests/bench-sched-trace.c: about 0.55 us a switch of the thread on
 * every CPU's events against 0.9 attached, and 0.08 us a switch of any other thread either
 * way, on this project's 2-core VM). Opening them needs CAP_PERFMON (or root): without it
 * the summary says this part of the evidence is missing and why. Read by the kernel sampler
 * at its tick, from its own thread; nothing runs on the app's threads. */
#include "sched_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "chunked.h"
#include "clock.h"
#include "util/config.h"
#include "util/log.h"
#include "util/private_fd.h"

#define SCHED_MAX_CPUS 256
/* common_flags of a tracepoint's record: the context it fired in (include/linux/
 * trace_events.h, enum trace_flag_type, the same since 2.6 for these three). */
#define TRACE_FLAG_HARDIRQ 0x08
#define TRACE_FLAG_SOFTIRQ 0x10
#define TRACE_FLAG_NMI 0x40
/* Data pages per ring at first: 64 KiB, about 680 records of ~96 bytes, what a thread that
 * switches a few thousand times a second fills in the sampler's tick. A ring the kernel
 * found full (it counts what it dropped) is opened again four times larger, up to
 * RING_PAGES_MAX (1 MiB): the demo in MAILBOX at 2,800 frames a second switched its closing
 * thread 3 times a frame, 9 records, and lost 37% of them in 64 KiB. Only the rings of the
 * CPUs the thread runs on grow. */
#define RING_PAGES 16
#define RING_PAGES_MAX 256

/* FRAMESCOPE_WAKEUPS=auto (the default) pauses the events while frames come faster than
 * REC_SCHED_PAUSE_FPS a second, judged over each PAUSE_WINDOW_NS, and resumes them under
 * RESUME_FPS, judged over each RESUME_WINDOW_NS: a fast app pays for them a quarter second
 * after its frames start, not a second (which a benchmark's short scenes felt), and a game
 * that drops below the rate keeps them off for a second at least, so a stutter of fast and
 * slow stretches does not turn them on and off at every tick.
 * Their cost is the kernel's, per context switch and wake-up on the machine, and so about the
 * same per frame whatever the frame rate: the demo in MAILBOX on the project's 2-core VM lost
 * 16-33 us a frame to them (tests/bench_app.py --parts, paired by round), 5-8% of its frame
 * at 2,500 frames a second; the same would be 1.5% at 500 and 0.4% at 144. */
#define RESUME_FPS 400
/* Threads followed at once: a renderer that closes frames from two or three threads in turn
 * (a frame each, or a swapchain each) is followed on all of them by one set of events, not a
 * new set at every tick. */
#define FOLLOW_MAX 4
/* A new set of events the kernel refused (descriptors, memory): not asked again before. */
#define FOLLOW_RETRY_NS 1000000000LL
#define PAUSE_WINDOW_NS 250000000LL
#define RESUME_WINDOW_NS 1000000000LL

struct ring {
    int fd;
    void *base; /* the metadata page, then the data */
    size_t size;
    unsigned pages; /* data pages: a power of two */
    bool kept;      /* the kernel refused a larger one: not asked again */
    int64_t from_ns; /* its events from this time on are recorded (the set's start) */
};

struct field {
    unsigned offset, size;
};

/* What is known of one CPU's events: when they were last seen alive, and since when it had
 * none while online (or may have). */
struct cpu_watch {
    uint64_t enabled_ns;  /* the switch event's time enabled at the last check */
    int64_t checked_ns;   /* that check's time; 0: none since the events were opened */
    int64_t prior_ns;     /* the check before it (the events were alive after it) */
    int64_t alive_ns;     /* when they were opened (alive then) */
    int64_t offline_ns;   /* without events: the latest time the CPU was seen offline */
    int64_t unwatched_ns; /* without events while it may have run threads, since; 0: none */
    unsigned hold_ticks;  /* FRAMESCOPE_TEST_WAKEUPS_GAP: ticks left before they are reopened */
};

/* Wakers' names, read once a second at most per thread: a frame's wakers are a handful of
 * threads waking it several times a frame (lavapipe's vkcube: about twelve), and a read of
 * /proc/TID/comm for each (open, read, close) cost the sampler's thread more than the rest
 * of the kernel view. A thread renamed, or a thread id reused, shows the old name for up to
 * COMM_FRESH_NS. */
#define COMM_CACHE 64 /* direct-mapped by thread id */
#define COMM_FRESH_NS 1000000000LL

struct comm_entry {
    int tid; /* 0: empty */
    int64_t read_ns;
    char comm[16];
};

struct sched_trace {
    struct rec_kernel *rec;
    int tids[FOLLOW_MAX]; /* filtered on, the latest to close frames first */
    unsigned tid_count;   /* 0: not opened yet */
    bool failed;  /* said why; never tried again */
    int64_t follow_retry_ns; /* a set refused: no new one asked for before this */
    unsigned cpus;
    struct ring rings[2 * SCHED_MAX_CPUS]; /* switch, wakeup per CPU */
    struct ring next[2 * SCHED_MAX_CPUS];  /* a new set being opened (follow) */
    struct cpu_watch watch[SCHED_MAX_CPUS];
    int online_fd;    /* /sys/devices/system/cpu/online; -1: not readable, CPUs not watched */
    unsigned ticks;   /* since the events were opened */
    int test_gap_cpu; /* FRAMESCOPE_TEST_WAKEUPS_GAP: the CPU whose events it drops; -1 */
    struct field prev_pid, prev_state, next_comm, next_pid, prev_comm, wake_pid, wake_flags;
    unsigned switch_id, wakeup_id;
    long page;
    struct comm_entry comms[COMM_CACHE];
    bool always;            /* FRAMESCOPE_WAKEUPS=on: never paused */
    bool paused;            /* the events are disabled (frames came too fast) */
    int64_t window_ns;      /* when the frame rate's current window began; 0: not yet */
    uint64_t window_frames; /* fscope_sched_frames then */
    int64_t paused_from_ns; /* while paused: what is not yet in rec->sched_paused_ms */
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void say_off(struct sched_trace *t, const char *why)
{
    snprintf(t->rec->sched_why, sizeof(t->rec->sched_why), "%s", why);
    atomic_store(&t->rec->sched_state, REC_SCHED_OFF);
    t->failed = true;
}

/* The tracepoint's id and its fields' offsets, from tracefs (or debugfs's copy of it). 0, or
 * the errno of the first root that has the file but would not give it (EACCES: tracefs is
 * mode 0700, root's alone, whatever capabilities the user has), else ENOENT; EINVAL for a
 * format this code does not understand. */
static int read_format(const char *event, unsigned *id, const char *const *names,
                       struct field *fields, unsigned count)
{
    static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
    char path[128], text[4096];
    int err = ENOENT;
    for (unsigned r = 0; r < 2; r++) {
        snprintf(path, sizeof(path), "%s/events/sched/%s/format", roots[r], event);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            if (err == ENOENT && errno != ENOENT && errno != ENOTDIR)
                err = errno;
            continue;
        }
        ssize_t n = read(fd, text, sizeof(text) - 1);
        close(fd);
        if (n <= 0)
            continue;
        text[n] = '\0';
        const char *at = strstr(text, "\nID: ");
        if (!at)
            return EINVAL;
        *id = (unsigned)strtoul(at + 5, NULL, 10);
        for (unsigned k = 0; k < count; k++) {
            char key[64], array[64];
            snprintf(key, sizeof(key), " %s;", names[k]);
            snprintf(array, sizeof(array), " %s[16];", names[k]);
            const char *f = strstr(text, key);
            if (!f)
                f = strstr(text, array);
            const char *off = f ? strstr(f, "offset:") : NULL, *size = f ? strstr(f, "size:") : NULL;
            if (!off || !size)
                return EINVAL;
            fields[k].offset = (unsigned)strtoul(off + 7, NULL, 10);
            fields[k].size = (unsigned)strtoul(size + 5, NULL, 10);
        }
        return 0;
    }
    return err;
}

static int open_event(unsigned id, unsigned cpu)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.size = sizeof(attr);
    attr.config = id;
    attr.sample_period = 1;
    attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
    attr.use_clockid = 1;
    attr.clockid = CLOCK_MONOTONIC;
    attr.disabled = 1;
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED; /* stops when the CPU's event is gone */
    attr.wakeup_events = 1000000; /* read at the tick; never woken */
    return fscope_fd_high((int)syscall(SYS_perf_event_open, &attr, -1, (int)cpu, -1,
                                       PERF_FLAG_FD_CLOEXEC));
}

static void close_ring(struct ring *r)
{
    if (r->base)
        munmap(r->base, r->size);
    if (r->fd >= 0)
        fscope_fd_close(r->fd);
    r->base = NULL;
    r->fd = -1;
}

static void close_set(struct sched_trace *t, struct ring *set)
{
    for (unsigned i = 0; i < 2 * t->cpus; i++)
        close_ring(&set[i]);
}

/* Ring index's filter, set once (the kernel takes no second one): the followed threads'
 * switches in and out (even index), or their wake-ups (odd). */
static bool set_filter(int fd, unsigned index, const int *tids, unsigned count)
{
    char filter[FOLLOW_MAX * 48];
    size_t at = 0;
    for (unsigned k = 0; k < count && at < sizeof(filter); k++) {
        int w = index % 2 == 0
                    ? snprintf(filter + at, sizeof(filter) - at, "%sprev_pid == %d || next_pid "
                               "== %d", k ? " || " : "", tids[k], tids[k])
                    : snprintf(filter + at, sizeof(filter) - at, "%spid == %d", k ? " || " : "",
                               tids[k]);
        at = w < 0 ? sizeof(filter) : at + (size_t)w;
    }
    return at < sizeof(filter) && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) == 0;
}

/* Maps pages data pages of event fd into r. */
static bool map_ring(const struct sched_trace *t, struct ring *r, int fd, unsigned pages)
{
    size_t size = (size_t)(1 + pages) * (size_t)t->page;
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        return false;
    *r = (struct ring){ .fd = fd, .base = base, .size = size, .pages = pages,
                        .from_ns = r->from_ns };
    return true;
}

/* A CPU's events just opened (at from_ns, which their rings got): alive then, not checked. */
static void watch_start(struct sched_trace *t, unsigned cpu, int64_t from_ns)
{
    struct cpu_watch *w = &t->watch[cpu];
    w->checked_ns = w->prior_ns = 0;
    w->alive_ns = from_ns;
}

/* Ring index found full: the same events opened again with four times the pages, filtered
 * and enabled before the old ring goes (what the old one took after its last read goes with
 * it). Where the kernel refuses (a locked-memory limit), the old ring stays, for good. */
static void grow_ring(struct sched_trace *t, unsigned index)
{
    struct ring *old = &t->rings[index];
    if (old->pages >= RING_PAGES_MAX || old->kept)
        return;
    unsigned pages = old->pages * 4 < RING_PAGES_MAX ? old->pages * 4 : RING_PAGES_MAX;
    int fd = open_event(index % 2 ? t->wakeup_id : t->switch_id, index / 2);
    struct ring grown = { .from_ns = old->from_ns };
    if (fd < 0) {
        old->kept = true;
        return;
    }
    if (!map_ring(t, &grown, fd, pages)) {
        fscope_fd_close(fd);
        old->kept = true;
        return;
    }
    if (!set_filter(fd, index, t->tids, t->tid_count) ||
        (!t->paused && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0)) {
        munmap(grown.base, grown.size);
        fscope_fd_close(fd);
        old->kept = true;
        return;
    }
    munmap(old->base, old->size);
    fscope_fd_close(old->fd);
    *old = grown;
    if (index % 2 == 0)
        watch_start(t, index / 2, mono_ns()); /* another event: its own time enabled */
}

/* A mark for readers: the events paused or resumed, or a thread followed from (or no longer
 * after) now. */
static void mark(struct sched_trace *t, enum sched_event_kind kind, int tid, int64_t now)
{
    struct sched_event *e = chunked_next(&t->rec->sched_events);
    if (!e)
        return;
    e->ticks = fscope_mono_ns_to_ticks(now);
    e->tid = tid;
    e->kind = (uint8_t)kind;
    chunked_publish(&t->rec->sched_events);
}

/* Opens CPU cpu's two events into set, filtered to tids, not yet enabled. 0, ENODEV for an
 * offline CPU (set left empty), or the errno of what failed, with *ret_what naming it. */
static int open_pair(struct sched_trace *t, struct ring *set, unsigned cpu, const int *tids,
                     unsigned count, const char **ret_what)
{
    for (unsigned k = 0; k < 2; k++) {
        unsigned index = 2 * cpu + k;
        set[index] = (struct ring){ .fd = -1 };
        int fd = open_event(k ? t->wakeup_id : t->switch_id, cpu);
        int err = errno;
        unsigned pages = t->rings[index].base ? t->rings[index].pages : RING_PAGES;
        *ret_what = "open";
        if (fd >= 0 && !map_ring(t, &set[index], fd, pages)) {
            err = errno;
            *ret_what = "map";
            fscope_fd_close(fd);
            fd = -1;
        }
        if (fd >= 0 && !set_filter(fd, index, tids, count)) {
            err = errno;
            *ret_what = "filter";
            fd = -1;
        }
        if (fd < 0) {
            close_ring(&set[2 * cpu]);
            close_ring(&set[2 * cpu + 1]);
            return err ? err : EINVAL;
        }
    }
    return 0;
}

/* Opens a set of events on every online CPU into set, filtered to tids and enabled unless
 * paused; its events count from the time it returns, set in each ring's from_ns. Rings of the
 * current set give their size (a ring that grew is opened as large). 0, or the errno of what
 * failed, with *ret_what naming it; set is left closed. */
static int open_set(struct sched_trace *t, struct ring *set, const int *tids, unsigned count,
                    int64_t *ret_from, const char **ret_what)
{
    for (unsigned i = 0; i < 2 * t->cpus; i++)
        set[i] = (struct ring){ .fd = -1 };
    for (unsigned c = 0; c < t->cpus; c++) {
        int err = open_pair(t, set, c, tids, count, ret_what);
        if (err && err != ENODEV) {
            close_set(t, set);
            return err;
        }
    }
    for (unsigned i = 0; i < 2 * t->cpus; i++)
        if (set[i].fd >= 0 && !t->paused)
            ioctl(set[i].fd, PERF_EVENT_IOC_ENABLE, 0);
    int64_t from = mono_ns();
    for (unsigned i = 0; i < 2 * t->cpus; i++)
        set[i].from_ns = from;
    for (unsigned c = 0; c < t->cpus; c++) {
        watch_start(t, c, from);
        if (!set[2 * c].base) {
            t->watch[c].offline_ns = from; /* offline then (ENODEV) */
        } else if (t->watch[c].unwatched_ns) {
            mark(t, SCHED_EVENT_CPU_WATCHED, (int)c, from);
            t->watch[c].unwatched_ns = t->watch[c].offline_ns = 0;
        }
    }
    *ret_from = from;
    return 0;
}

static void open_all(struct sched_trace *t, int tid)
{
    static const char *const sw_names[] = { "prev_comm", "prev_pid", "prev_state", "next_comm",
                                            "next_pid" };
    static const char *const wk_names[] = { "pid", "common_flags" };
    struct field sw[5], wk[2];
    int err = read_format("sched_switch", &t->switch_id, sw_names, sw, 5);
    if (!err)
        err = read_format("sched_waking", &t->wakeup_id, wk_names, wk, 2);
    if (err == EACCES || err == EPERM) {
        say_off(t, "the wake-up chain was not recorded: the scheduler events' formats in tracefs "
                   "(/sys/kernel/tracing, mode 0700) are readable by root only; CAP_PERFMON "
                   "alone is not enough");
        return;
    }
    if (err) {
        char why[224];
        snprintf(why, sizeof(why), "the wake-up chain was not recorded: %s",
                 err == EINVAL   ? "the sched_switch and sched_waking formats in tracefs are "
                                   "not ones this version reads"
                 : err == EMFILE || err == ENFILE
                     ? "no descriptor left to read its events' formats in tracefs (ulimit -n)"
                     : "no tracefs (/sys/kernel/tracing) with the sched_switch and sched_waking "
                       "events");
        say_off(t, why);
        return;
    }
    t->prev_comm = sw[0];
    t->prev_pid = sw[1];
    t->prev_state = sw[2];
    t->next_comm = sw[3];
    t->next_pid = sw[4];
    t->wake_pid = wk[0];
    t->wake_flags = wk[1];
    long cpus = sysconf(_SC_NPROCESSORS_CONF);
    t->cpus = cpus > 0 && cpus <= SCHED_MAX_CPUS ? (unsigned)cpus : 1;
    t->page = sysconf(_SC_PAGESIZE);
    for (unsigned i = 0; i < 2 * t->cpus; i++)
        t->rings[i] = (struct ring){ .fd = -1 };
    const char *what = "";
    int64_t from;
    int open_errno = open_set(t, t->rings, &tid, 1, &from, &what);
    if (open_errno) {
        char why[224];
        if (strcmp(what, "map") == 0)
            snprintf(why, sizeof(why), "the wake-up chain was not recorded: its perf rings "
                     "could not be mapped (%s)", strerror(open_errno));
        else if (strcmp(what, "filter") == 0)
            snprintf(why, sizeof(why), "the wake-up chain was not recorded: the kernel refused "
                     "the events' filter (%s)", strerror(open_errno));
        else if (open_errno == EACCES || open_errno == EPERM)
            snprintf(why, sizeof(why), "the wake-up chain (who ran instead, who woke "
                     "the thread) was not recorded: perf tracepoints on every CPU need "
                     "root or CAP_PERFMON (%s)", strerror(open_errno));
        else if (open_errno == EMFILE || open_errno == ENFILE)
            snprintf(why, sizeof(why), "the wake-up chain was not recorded: no "
                     "descriptor left for its %u perf events (%s; ulimit -n)",
                     2 * t->cpus, strerror(open_errno));
        else
            snprintf(why, sizeof(why), "the wake-up chain was not recorded: "
                     "perf_event_open refused its tracepoint (%s)", strerror(open_errno));
        say_off(t, why);
        return;
    }
    t->tids[0] = tid;
    t->tid_count = 1;
    mark(t, SCHED_EVENT_FOLLOWED, tid, from);
    /* Held: read once a tick, where an open and close would be three system calls. */
    t->online_fd = fscope_fd_high(open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC));
    atomic_store(&t->rec->sched_state, REC_SCHED_ON);
}

_Atomic int fscope_sched_closer_tid;
_Atomic uint64_t fscope_sched_frames;

static void set_enabled(struct sched_trace *t, bool on)
{
    for (unsigned i = 0; i < 2 * t->cpus; i++)
        if (t->rings[i].fd >= 0)
            ioctl(t->rings[i].fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

/* Moves the time paused so far into the recording (a killed app's capture keeps it). */
static void count_paused(struct sched_trace *t, int64_t now)
{
    if (!t->paused || now <= t->paused_from_ns)
        return;
    atomic_fetch_add(&t->rec->sched_paused_ms, (uint32_t)((now - t->paused_from_ns) / 1000000));
    t->paused_from_ns += (now - t->paused_from_ns) / 1000000 * 1000000;
}

/* At each tick once the events are open (FRAMESCOPE_WAKEUPS=auto): pauses them by the frame
 * rate of the quarter second that just ended, or resumes them by that of the second. */
static void pace(struct sched_trace *t, bool final)
{
    int64_t now = mono_ns();
    uint64_t frames = atomic_load_explicit(&fscope_sched_frames, memory_order_relaxed);
    count_paused(t, now);
    if (final)
        return;
    if (!t->window_ns || now < t->window_ns) {
        t->window_ns = now;
        t->window_frames = frames;
        return;
    }
    if (now - t->window_ns < (t->paused ? RESUME_WINDOW_NS : PAUSE_WINDOW_NS))
        return;
    double rate = (double)(frames - t->window_frames) * 1e9 / (double)(now - t->window_ns);
    t->window_ns = now;
    t->window_frames = frames;
    if (!t->paused && rate > REC_SCHED_PAUSE_FPS) {
        set_enabled(t, false);
        t->paused = true;
        t->paused_from_ns = now;
        atomic_fetch_add(&t->rec->sched_pauses, 1);
        mark(t, SCHED_EVENT_PAUSED, t->tids[0], now);
    } else if (t->paused && rate < RESUME_FPS) {
        set_enabled(t, true);
        t->paused = false;
        mark(t, SCHED_EVENT_RESUMED, t->tids[0], mono_ns());
    }
}

struct sched_trace *sched_trace_new(struct rec_kernel *rec)
{
    struct sched_trace *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->rec = rec;
    t->online_fd = -1;
    /* Test only: CPU N's events dropped at the third tick and opened again three later, as a
     * CPU taken offline and back loses them (tests/test_hitches.py, wakeups_gap). */
    const char *gap = secure_getenv("FRAMESCOPE_TEST_WAKEUPS_GAP");
    char *gap_end = NULL;
    long gap_cpu = gap && *gap ? strtol(gap, &gap_end, 10) : -1;
    t->test_gap_cpu = gap_end && *gap_end == '\0' && gap_cpu >= 0 && gap_cpu < SCHED_MAX_CPUS
                          ? (int)gap_cpu : -1;
    if (gap && *gap && t->test_gap_cpu < 0) {
        char shown[FSCOPE_ESCAPE_SIZE];
        fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_TEST_WAKEUPS_GAP='%s' is not a CPU number; "
                   "ignored", fscope_config_escape(gap, shown, sizeof(shown)));
    }
    /* The kernel builds every sched_switch and sched_waking record of every CPU before the
     * filter drops it: a cost on the whole machine, which this turns off on its own. */
    const char *value = secure_getenv("FRAMESCOPE_WAKEUPS");
    bool on = true;
    if (value && *value && strcasecmp(value, "auto") != 0) {
        if (fscope_config_parse_switch(value, &on)) {
            t->always = on;
        } else {
            char shown[FSCOPE_ESCAPE_SIZE];
            fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_WAKEUPS='%s' is not auto, on or off; "
                       "using auto", fscope_config_escape(value, shown, sizeof(shown)));
            on = true;
        }
    }
    if (!on)
        say_off(t, "the wake-up chain was not recorded: FRAMESCOPE_WAKEUPS=off");
    return t;
}

static int32_t field_i32(const unsigned char *raw, uint32_t len, struct field f)
{
    int32_t v = 0;
    if (f.offset + 4 <= len)
        memcpy(&v, raw + f.offset, 4);
    return v;
}

static void field_comm(const unsigned char *raw, uint32_t len, struct field f, char out[16])
{
    memset(out, 0, 16);
    if (f.offset + 16 <= len)
        memcpy(out, raw + f.offset, 15);
}

/* The waker's name: its thread's comm, as read within the last COMM_FRESH_NS before now_ns
 * (it may have exited: then ""). */
static void comm_of(struct sched_trace *t, int tid, int64_t now_ns, char out[16])
{
    struct comm_entry *c = &t->comms[(unsigned)tid % COMM_CACHE];
    if (c->tid != tid || now_ns - c->read_ns >= COMM_FRESH_NS || now_ns < c->read_ns) {
        char path[48];
        memset(c->comm, 0, sizeof(c->comm));
        c->tid = tid;
        c->read_ns = now_ns;
        snprintf(path, sizeof(path), "/proc/%d/comm", tid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t n = read(fd, c->comm, 15);
            close(fd);
            if (n > 0 && c->comm[n - 1] == '\n')
                c->comm[n - 1] = '\0';
        }
    }
    memcpy(out, c->comm, 16);
}

static bool followed(const struct sched_trace *t, int tid)
{
    for (unsigned k = 0; k < t->tid_count; k++)
        if (t->tids[k] == tid)
            return true;
    return false;
}

static struct sched_event *event_of(struct sched_trace *t, int tid, enum sched_event_kind kind,
                                    uint64_t time_ns)
{
    struct sched_event *e = chunked_next(&t->rec->sched_events);
    if (!e)
        return NULL;
    e->ticks = fscope_mono_ns_to_ticks((int64_t)time_ns);
    e->tid = tid;
    e->kind = (uint8_t)kind;
    return e;
}

/* One sample: a followed thread woken, or switched out, in, or both (from one followed thread
 * to another). The filter passed only the followed threads' samples. */
static void record(struct sched_trace *t, bool wakeup, uint32_t waker, uint64_t time_ns,
                   const unsigned char *raw, uint32_t len)
{
    struct sched_event *e;
    if (wakeup) {
        int woken = field_i32(raw, len, t->wake_pid);
        if (!followed(t, woken) || !(e = event_of(t, woken, SCHED_EVENT_WOKEN, time_ns)))
            return;
        /* In an interrupt, the sample's thread is whatever it interrupted: a CPU hog beside a
         * thread asleep on a timer was named its waker in 246 of 299 frames (issue 36). */
        uint8_t flags = t->wake_flags.size == 1 && t->wake_flags.offset < len
                            ? raw[t->wake_flags.offset] : 0;
        e->state = (flags & TRACE_FLAG_NMI)       ? SCHED_WAKE_NMI
                   : (flags & TRACE_FLAG_HARDIRQ) ? SCHED_WAKE_HARDIRQ
                   : (flags & TRACE_FLAG_SOFTIRQ) ? SCHED_WAKE_SOFTIRQ
                                                  : SCHED_WAKE_TASK;
        static const char *const contexts[] = { [SCHED_WAKE_HARDIRQ] = "interrupt",
                                                [SCHED_WAKE_SOFTIRQ] = "softirq",
                                                [SCHED_WAKE_NMI] = "NMI" };
        e->other_tid = e->state == SCHED_WAKE_TASK ? (int32_t)waker : 0;
        if (e->state != SCHED_WAKE_TASK)
            snprintf(e->other_comm, sizeof(e->other_comm), "%s", contexts[e->state]);
        else if (waker == 0)
            snprintf(e->other_comm, sizeof(e->other_comm), "kernel (idle)");
        else
            comm_of(t, (int)waker, (int64_t)time_ns, e->other_comm);
        chunked_publish(&t->rec->sched_events);
        return;
    }
    int prev = field_i32(raw, len, t->prev_pid), next = field_i32(raw, len, t->next_pid);
    if (followed(t, prev) && (e = event_of(t, prev, SCHED_EVENT_OUT, time_ns))) {
        e->other_tid = next;
        field_comm(raw, len, t->next_comm, e->other_comm);
        int64_t state = 0;
        if (t->prev_state.offset + t->prev_state.size <= len && t->prev_state.size <= 8)
            memcpy(&state, raw + t->prev_state.offset, t->prev_state.size);
        e->state = state == 0 ? SCHED_OUT_RUNNABLE : (state & 1) ? SCHED_OUT_SLEEP
                   : (state & 2)                   ? SCHED_OUT_DISK
                                                   : SCHED_OUT_OTHER;
        chunked_publish(&t->rec->sched_events);
    }
    if (followed(t, next) && (e = event_of(t, next, SCHED_EVENT_IN, time_ns))) {
        e->other_tid = prev;
        field_comm(raw, len, t->prev_comm, e->other_comm);
        chunked_publish(&t->rec->sched_events);
    }
}

/* Copies len bytes at offset at of ring r's data (a power-of-two circle) into out: two
 * pieces where it wraps. */
static void ring_copy(const struct sched_trace *t, const struct ring *r, uint64_t at, void *out,
                      size_t len)
{
    const unsigned char *data = (const unsigned char *)r->base + t->page;
    size_t size = (size_t)r->pages * (size_t)t->page;
    size_t from = (size_t)(at & (size - 1));
    size_t first = len < size - from ? len : size - from;
    memcpy(out, data + from, first);
    memcpy((unsigned char *)out + first, data, len - first);
}

/* Records what ring index holds from its from_ns to until_ns (INT64_MAX: the current set's
 * rings, grown where the kernel found them full). */
static void drain(struct sched_trace *t, unsigned index, int64_t until_ns)
{
    struct ring *r = &t->rings[index];
    if (!r->base)
        return;
    struct perf_event_mmap_page *meta = r->base;
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    unsigned char raw[512];
    bool dropped = false;
    while (tail < head) {
        struct perf_event_header h;
        ring_copy(t, r, tail, &h, sizeof(h));
        if (h.size < sizeof(h))
            break;
        if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(h) + 20) {
            /* pid, tid (u32 each), time (u64), raw size (u32), raw data */
            struct { uint32_t pid, tid; uint64_t time; uint32_t size; } s;
            ring_copy(t, r, tail + sizeof(h), &s, sizeof(uint32_t) * 2 + 8 + 4);
            uint32_t len = s.size < sizeof(raw) ? s.size : sizeof(raw);
            ring_copy(t, r, tail + sizeof(h) + 20, raw, len);
            if ((int64_t)s.time >= r->from_ns && (int64_t)s.time < until_ns)
                record(t, index % 2 == 1, s.tid, s.time, raw, len);
        } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
            uint64_t lost[2];
            ring_copy(t, r, tail + sizeof(h), lost, sizeof(lost));
            atomic_fetch_add(&t->rec->sched_lost, lost[1]);
            dropped = true;
        }
        tail += h.size;
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    if (dropped && until_ns == INT64_MAX)
        grow_ring(t, index);
}

/* The CPUs online, from the kernel's list ("0-3,5"), into online; false if unreadable. */
static bool read_online(struct sched_trace *t, bool *online)
{
    char text[1024];
    ssize_t n = t->online_fd >= 0 ? pread(t->online_fd, text, sizeof(text) - 1, 0) : -1;
    if (n <= 0)
        return false;
    text[n] = '\0';
    memset(online, 0, t->cpus * sizeof(*online));
    for (char *at = text; *at >= '0' && *at <= '9';) {
        unsigned long first = strtoul(at, &at, 10), last = first;
        if (*at == '-')
            last = strtoul(at + 1, &at, 10);
        for (unsigned long c = first; c <= last && c < t->cpus; c++)
            online[c] = true;
        if (*at != ',')
            break;
        at++;
    }
    return true;
}

/* Whether CPU cpu's events are alive: their time enabled moved since the last check (it
 * stops for good when the CPU goes offline). Not judged while paused (it stops then too);
 * the check before a pause stands until the first one after. */
static bool events_alive(struct sched_trace *t, unsigned cpu, int64_t now)
{
    struct cpu_watch *w = &t->watch[cpu];
    uint64_t counts[2]; /* value, time enabled */
    if (t->paused || read(t->rings[2 * cpu].fd, counts, sizeof(counts)) != sizeof(counts))
        return true;
    if (w->checked_ns && counts[1] == w->enabled_ns)
        return false;
    w->prior_ns = w->checked_ns;
    w->checked_ns = now;
    w->enabled_ns = counts[1];
    return true;
}

/* Stretches a CPU had no events while it may have run threads: marked as soon as found (a
 * killed app's recording keeps the mark), and their end once its events are open again. */
static void unwatched(struct sched_trace *t, unsigned cpu, int64_t since)
{
    if (t->watch[cpu].unwatched_ns)
        return;
    t->watch[cpu].unwatched_ns = since;
    mark(t, SCHED_EVENT_CPU_UNWATCHED, (int)cpu, since);
}

/* At each tick, after the rings were read: a CPU whose events died is closed, one online
 * without events gets them (with the followed threads' filter). What a CPU's events missed
 * is bounded by what was seen: from the check before the last one that saw them alive (they
 * died after it), or from the latest time the CPU was seen offline (nothing ran there then),
 * to the moment the new events are on. tick_ns: when this tick's reads of the rings began. */
static void watch_cpus(struct sched_trace *t, int64_t tick_ns)
{
    bool online[SCHED_MAX_CPUS];
    int64_t now = mono_ns();
    if (!read_online(t, online))
        return;
    t->ticks++;
    for (unsigned c = 0; c < t->cpus; c++) {
        struct cpu_watch *w = &t->watch[c];
        bool dropped = (int)c == t->test_gap_cpu && t->ticks == 3;
        if (t->rings[2 * c].base && (dropped || !events_alive(t, c, now))) {
            unwatched(t, c, dropped ? tick_ns : w->prior_ns ? w->prior_ns : w->alive_ns);
            close_ring(&t->rings[2 * c]);
            close_ring(&t->rings[2 * c + 1]);
            w->offline_ns = 0;
            w->hold_ticks = dropped ? 3 : 0;
        }
        if (t->rings[2 * c].base)
            continue;
        if (!online[c]) {
            /* Nothing runs there: a stretch without events ends at the latest time seen. */
            if (w->unwatched_ns) {
                mark(t, SCHED_EVENT_CPU_WATCHED, (int)c, now);
                w->unwatched_ns = 0;
            }
            w->offline_ns = now;
            continue;
        }
        unwatched(t, c, w->offline_ns ? w->offline_ns : now);
        if (w->hold_ticks && w->hold_ticks--)
            continue;
        const char *what;
        if (open_pair(t, t->rings, c, t->tids, t->tid_count, &what) != 0)
            continue; /* tried again at the next tick; unknown meanwhile */
        for (unsigned k = 0; k < 2 && !t->paused; k++)
            ioctl(t->rings[2 * c + k].fd, PERF_EVENT_IOC_ENABLE, 0);
        int64_t from = mono_ns();
        t->rings[2 * c].from_ns = t->rings[2 * c + 1].from_ns = from;
        watch_start(t, c, from);
        mark(t, SCHED_EVENT_CPU_WATCHED, (int)c, from);
        w->unwatched_ns = w->offline_ns = 0;
    }
}

/* Another thread closes frames: a new set of events, filtered to it and the latest threads
 * followed before it, opened and on before the old set is read for the last time and closed,
 * so each thread's stretch goes on without a gap and nothing is recorded twice. On this
 * thread, the sampler's: the app's thread that closed the frame only stored its id. */
static void follow(struct sched_trace *t, int tid)
{
    int64_t now = mono_ns();
    if (now < t->follow_retry_ns)
        return;
    int tids[FOLLOW_MAX];
    unsigned count = 0;
    tids[count++] = tid;
    for (unsigned k = 0; k < t->tid_count && count < FOLLOW_MAX; k++)
        tids[count++] = t->tids[k];
    const char *what = "";
    int64_t from;
    if (open_set(t, t->next, tids, count, &from, &what) != 0) {
        t->follow_retry_ns = now + FOLLOW_RETRY_NS; /* its frames read unknown meanwhile */
        return;
    }
    for (unsigned i = 0; i < 2 * t->cpus; i++)
        drain(t, i, from);
    close_set(t, t->rings);
    memcpy(t->rings, t->next, 2 * t->cpus * sizeof(t->rings[0]));
    if (t->tid_count + 1 > FOLLOW_MAX)
        mark(t, SCHED_EVENT_UNFOLLOWED, t->tids[t->tid_count - 1], from);
    mark(t, SCHED_EVENT_FOLLOWED, tid, from);
    memcpy(t->tids, tids, sizeof(tids));
    t->tid_count = count;
}

void sched_trace_tick(struct sched_trace *t, int tid, bool final)
{
    if (!t)
        return;
    if (!t->failed && tid > 0 && t->tid_count == 0)
        open_all(t, tid);
    if (t->tid_count) {
        int64_t tick_ns = mono_ns(); /* before the rings are read */
        for (unsigned i = 0; i < 2 * t->cpus; i++)
            drain(t, i, INT64_MAX);
        /* CPUs first: a set that died unseen would be replaced by follow() unmarked. */
        if (!final)
            watch_cpus(t, tick_ns);
        if (tid > 0 && !final && !followed(t, tid))
            follow(t, tid);
        if (!t->always)
            pace(t, final);
    }
    if (final) {
        close_set(t, t->rings);
        if (t->online_fd >= 0)
            fscope_fd_close(t->online_fd);
        free(t);
    }
}
