#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture_dir.h"
#include "counters.h"
#include "engine.h"
#include "formats.h"
#include "gpu_zones.h"
#include "hitches.h"
#include "html.h"
#include "kms.h"
#include "live.h"
#include "presentation.h"
#include "stats.h"
#include "summary.h"
#include "emit.h"
#include "trace.h"
#include "trace_perfetto.h"
#include "util/config.h"
#include "util/log.h"
#include "util/text.h"
#include "threads.h"
#include "zones.h"

static int summary_writer(FILE *f, const void *arg)
{
    return summary_write_json(f, arg);
}

static int csv_writer(FILE *f, const void *arg)
{
    return frames_write_csv(f, arg);
}

static int seconds_writer(FILE *f, const void *arg)
{
    return seconds_write_csv(f, arg);
}

static int zones_writer(FILE *f, const void *arg)
{
    const struct run_stats *s = arg;
    zones_write_csv(f, s->rec);
    return 0;
}

static int trace_writer(FILE *f, const void *arg)
{
    const struct run_stats *s = arg;
    const struct trace_run run = { .hitches = &s->hitches, .engine = &s->engine,
                                   .frame_counters = true, .primary_log = s->primary_log,
                                   .window_ns = s->trace_window_ns };
    return trace_write_run(f, s->rec, &run);
}

static int perfetto_writer(FILE *f, const void *arg)
{
    const struct run_stats *s = arg;
    const struct trace_run run = { .hitches = &s->hitches, .engine = &s->engine,
                                   .frame_counters = true, .primary_log = s->primary_log };
    return trace_perfetto_write(f, s->rec, &run);
}

static int threads_writer(FILE *f, const void *arg)
{
    const struct run_stats *s = arg;
    return threads_write_csv(f, s->rec, &s->keep);
}

static int text_writer(FILE *f, const void *arg)
{
    summary_write_text(f, arg);
    return 0;
}

static int full_writer(FILE *f, const void *arg)
{
    summary_write_text_full(f, arg);
    return 0;
}

struct report {
    struct run_stats stats;
    struct formats_run run;
    uint32_t window_ms; /* a snapshot's window; 0: the whole recording */
};

/* What the other formats (formats.h) need of the run. */
static void formats_run_fill(const struct run_stats *s, struct formats_run *ret)
{
    const struct recording *rec = s->rec;
    memset(ret, 0, sizeof(*ret));
    ret->rec = rec;
    ret->app = rec->app;
    ret->device = rec->device_count ? rec->devices[0].name : "";
    ret->driver = rec->device_count ? rec->devices[0].driver : "";
    ret->pid = rec->pid;
    ret->evidence = s->evidence;
    ret->primary_log = s->primary_log;
    ret->verdict = s->frames ? verdict_name(s->run_verdict) : "none";
    ret->reason = s->reason;
    ret->frames = s->frames;
    ret->duration_s = s->duration_s;
    ret->fps = s->fps;
    const double frame_ms[5] = { s->mean_ms, s->p50_ms, s->p95_ms, s->p99_ms, s->max_ms };
    memcpy(ret->frame_ms, frame_ms, sizeof(frame_ms));
    ret->low_fps[0] = s->low1_fps;
    ret->low_fps[1] = s->low01_fps;
    for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++)
        ret->verdict_share[v] = s->basis_frames ? (double)s->verdict_frames[v] /
                                                  (double)s->basis_frames : 0;
    ret->gpu_timed = s->total.gpu_timed;
    memcpy(ret->budget_ms, s->budget_ms, sizeof(ret->budget_ms));
    ret->hitches = &s->hitches;
    ret->engine = &s->engine;
    ret->keep = &s->keep;
}

struct report *report_create(struct recording *rec)
{
    struct report *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    recording_compute_gpu_busy(rec);
    run_stats_compute(rec, &r->stats);
    engine_compute(rec, r->stats.frames, &r->stats.engine);
    r->stats.trace_window_ns = (int64_t)TRACE_WINDOW_DEFAULT_S * 1000000000;
    keep_compute(rec, &r->stats.hitches, KEEP_DEFAULT_MS, &r->stats.keep);
    formats_run_fill(&r->stats, &r->run);
    return r;
}

struct report *report_create_window(struct recording *rec, uint32_t last_ms)
{
    if (last_ms)
        recording_keep_recent(rec, last_ms / 1e3);
    struct report *r = report_create(rec);
    if (r)
        r->window_ms = last_ms;
    return r;
}

int64_t report_read_window(int dir_fd, char *why, size_t why_len)
{
    int fd = openat(dir_fd, REPORT_WINDOW_FILE, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(why, why_len, "%s: %s", REPORT_WINDOW_FILE, strerror(errno));
        return -1;
    }
    char text[128];
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    unsigned long long ms = 0;
    int end = 0;
    if (n > 0) {
        text[n] = '\0';
        if (sscanf(text, " {\"last_ms\": %llu}%n", &ms, &end) != 1 || !end)
            ms = 0;
    }
    if (!ms || ms > UINT32_MAX || strspn(text + end, " \n") != strlen(text + end)) {
        snprintf(why, why_len, "%s: not a snapshot's window ({\"last_ms\": N}, N in 1..%u)",
                 REPORT_WINDOW_FILE, UINT32_MAX);
        return -1;
    }
    return (int64_t)ms;
}

static int window_writer(FILE *f, const void *arg)
{
    fprintf(f, "{\"last_ms\": %u}\n", *(const uint32_t *)arg);
    return 0;
}

void report_destroy(struct report *r)
{
    if (!r)
        return;
    run_stats_finish(&r->stats);
    free(r);
}

void report_headline(const struct report *r, uint64_t *frames, const char **verdict)
{
    *frames = r->stats.frames;
    *verdict = r->run.verdict;
}

void report_set_trace_window(struct report *r, int64_t window_ns)
{
    r->stats.trace_window_ns = window_ns;
}

bool report_trace_window_parse(const char *text, int64_t *ret_ns)
{
    long seconds;
    if (fscope_config_keyword(text, "all")) {
        *ret_ns = 0;
        return true;
    }
    if (!fscope_config_parse_long(text, 1, TRACE_WINDOW_MAX_S, &seconds))
        return false;
    *ret_ns = (int64_t)seconds * 1000000000;
    return true;
}

void report_set_trace_window_from(struct report *r, const char *text)
{
    int64_t window_ns;
    if (!text || !*text)
        return;
    if (report_trace_window_parse(text, &window_ns)) {
        report_set_trace_window(r, window_ns);
        return;
    }
    char shown[FSCOPE_ESCAPE_SIZE];
    fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_TRACE_WINDOW='%s' is not a number of seconds from 1 "
               "to %d or all; trace.json keeps the last %d s", fscope_config_escape(text, shown,
               sizeof(shown)), TRACE_WINDOW_MAX_S, TRACE_WINDOW_DEFAULT_S);
}

void report_set_keep_window(struct report *r, uint32_t window_ms)
{
    if (window_ms == r->stats.keep.window_ms)
        return;
    keep_finish(&r->stats.keep);
    keep_compute(r->stats.rec, &r->stats.hitches, window_ms, &r->stats.keep);
}

bool report_keep_parse(const char *text, uint32_t *ret_ms)
{
    double minutes;
    if (fscope_config_keyword(text, "all")) {
        *ret_ms = 0;
        return true;
    }
    if (!fscope_config_parse_double(text, KEEP_MIN_MS / 60000.0, KEEP_MAX_MS / 60000.0, &minutes))
        return false;
    *ret_ms = (uint32_t)llround(minutes * 60000.0);
    return true;
}

void report_set_keep_window_from(struct report *r, const char *text)
{
    uint32_t window_ms;
    if (!text || !*text)
        return;
    if (report_keep_parse(text, &window_ms)) {
        report_set_keep_window(r, window_ms);
        return;
    }
    char shown[FSCOPE_ESCAPE_SIZE];
    fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_KEEP_MINUTES='%s' is not a number of minutes from "
               "%g to %u or all; ignored (the default: every frame's row of the last %u minutes)",
               fscope_config_escape(text, shown, sizeof(shown)), KEEP_MIN_MS / 60000.0,
               KEEP_MAX_MS / 60000, KEEP_DEFAULT_MS / 60000);
}

int report_read_keep(int dir_fd, uint32_t *ret_ms, char *why, size_t why_len)
{
    int fd = openat(dir_fd, REPORT_KEEP_FILE, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(why, why_len, "%s: %s", REPORT_KEEP_FILE, strerror(errno));
        return -1;
    }
    char text[128];
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    unsigned long long ms = UINT64_MAX;
    int end = 0;
    if (n > 0) {
        text[n] = '\0';
        if (sscanf(text, " {\"keep_ms\": %llu}%n", &ms, &end) != 1 || !end)
            ms = UINT64_MAX;
    }
    if (n <= 0 || (ms && (ms < KEEP_MIN_MS || ms > KEEP_MAX_MS)) ||
        strspn(text + end, " \n") != strlen(text + end)) {
        snprintf(why, why_len, "%s: not a capture's keep window ({\"keep_ms\": N}, N 0 or in "
                 "%u..%u)", REPORT_KEEP_FILE, KEEP_MIN_MS, KEEP_MAX_MS);
        return -1;
    }
    *ret_ms = (uint32_t)ms;
    return 1;
}

static int keep_writer(FILE *f, const void *arg)
{
    fprintf(f, "{\"keep_ms\": %u}\n", *(const uint32_t *)arg);
    return 0;
}

bool report_has_frames(const struct report *r)
{
    return r->stats.frames > 0;
}

static const struct {
    const char *name;  /* for --format */
    const char *file;  /* in a capture */
    capture_writer writer;
    bool uses_run;     /* takes the formats_run, else the run_stats */
} formats[REPORT_FORMAT_COUNT] = {
    [REPORT_TEXT] = { "text", NULL, text_writer, false },
    [REPORT_TEXT_FULL] = { "full", NULL, full_writer, false },
    [REPORT_JSON] = { "json", "summary.json", summary_writer, false },
    [REPORT_CSV] = { "csv", "frames.csv", csv_writer, false },
    [REPORT_SECONDS] = { "seconds", "seconds.csv", seconds_writer, false },
    [REPORT_ZONES] = { "zones", "zones.csv", zones_writer, false },
    [REPORT_TRACE] = { "trace", "trace.json", trace_writer, false },
    [REPORT_PERFETTO] = { "perfetto", "trace.perfetto-trace", perfetto_writer, false },
    [REPORT_THREADS] = { "threads", "threads.csv", threads_writer, false },
    [REPORT_PRESENTMON] = { "presentmon", "presentmon.csv", formats_write_presentmon, true },
    [REPORT_MANGOHUD] = { "mangohud", "mangohud.csv", formats_write_mangohud, true },
    [REPORT_HTML] = { "html", "report.html", html_write_report, true },
};

bool report_format_parse(const char *name, enum report_format *ret)
{
    for (unsigned i = 0; i < REPORT_FORMAT_COUNT; i++) {
        if (strcasecmp(name, formats[i].name) == 0) {
            *ret = (enum report_format)i;
            return true;
        }
    }
    return false;
}

const char *report_format_name(enum report_format format)
{
    return format < REPORT_FORMAT_COUNT ? formats[format].name : "?";
}

int report_write(FILE *f, const struct report *r, enum report_format format)
{
    if (format >= REPORT_FORMAT_COUNT)
        return -EINVAL;
    int e = formats[format].writer(f, formats[format].uses_run ? (const void *)&r->run
                                                               : (const void *)&r->stats);
    if (e == 0 && (fflush(f) != 0 || ferror(f)))
        e = -(errno ? errno : EIO);
    return e;
}

struct bytes {
    const void *data;
    size_t len;
    const struct recording *rec; /* its streamed chunks' source */
};

/* The recording, packed (recording_pack_write): its ranges that are not all zeros, compact. */
static int bytes_writer(FILE *f, const void *arg)
{
    const struct bytes *b = arg;
    return recording_pack_write(f, b->data, b->len, b->rec);
}

/* A path the user gave (FRAMESCOPE_OUTPUT, --output, FRAMESCOPE_SUMMARY) as a message shows
 * it: an escape sequence or a newline in it forges no line of the summary or the log. */
#define SHOWN_PATH_SIZE (4 * 4096 + 1)
static const char *shown_path(const char *path, char shown[SHOWN_PATH_SIZE])
{
    return fscope_text_printable(shown, SHOWN_PATH_SIZE, path, strlen(path));
}

/* Whether trace.json leaves the start of the run out (its window is shorter than the run). */
static bool trace_windowed(const struct report *r)
{
    const struct run_stats *s = &r->stats;
    const struct trace_run run = { .hitches = &s->hitches, .engine = &s->engine,
                                   .frame_counters = true, .primary_log = s->primary_log };
    uint64_t first, last;
    return s->trace_window_ns > 0 && trace_time_range(s->rec, &run, &first, &last) &&
           recording_ns(s->rec, last - first) > (double)s->trace_window_ns;
}

void report_write_capture_line(FILE *f, const struct report *r, const char *dir, bool full)
{
    char shown[SHOWN_PATH_SIZE];
    if (!full) {
        summary_write_capture(f, shown_path(dir, shown));
        return;
    }
    fprintf(f, "  capture     %s (%s", shown_path(dir, shown), REPORT_RECORDING_FILE);
    for (unsigned i = 0; i < REPORT_FORMAT_COUNT; i++) {
        if (!formats[i].file)
            continue;
        fprintf(f, ", %s", formats[i].file);
        if (i == REPORT_TRACE && trace_windowed(r))
            fprintf(f, " (the last %.0f s of the run; trace.perfetto-trace has all of it)",
                    (double)r->stats.trace_window_ns / 1e9);
    }
    if (r->stats.keep.cut)
        fprintf(f, "; frames.csv, presentmon.csv, mangohud.csv, report.html and threads.csv "
                "keep %llu of %llu frames (see kept), seconds.csv every second",
                (unsigned long long)r->stats.keep.kept_frames,
                (unsigned long long)r->stats.keep.frames);
    fputs(")\n", f);
}

/* A capture's files, written side by side: each is written from the report alone (read,
 * never changed) into a file of its own, so the run's end waits for the longest of them, not
 * their sum. */
#define CAPTURE_FILES_MAX (REPORT_FORMAT_COUNT + 3)
#define CAPTURE_WRITERS_MAX 4

struct capture_job {
    const char *file;
    capture_writer writer;
    const void *arg;
    int error;
    double wall_ms, cpu_ms; /* what writing it took, for the debug log */
};

struct capture_jobs {
    struct capture_dir *dir;
    struct capture_job job[CAPTURE_FILES_MAX];
    unsigned count;
    _Atomic unsigned next;
};

static double clock_ms(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *capture_worker(void *arg)
{
    struct capture_jobs *jobs = arg;
    for (unsigned i; (i = atomic_fetch_add(&jobs->next, 1)) < jobs->count;) {
        struct capture_job *j = &jobs->job[i];
        double wall = clock_ms(CLOCK_MONOTONIC), cpu = clock_ms(CLOCK_THREAD_CPUTIME_ID);
        j->error = capture_dir_write(jobs->dir, j->file, j->writer, j->arg);
        j->wall_ms = clock_ms(CLOCK_MONOTONIC) - wall;
        j->cpu_ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - cpu;
    }
    return NULL;
}

/* Runs every job, on up to CAPTURE_WRITERS_MAX threads where the machine has the CPUs (this
 * thread one of them; a thread that cannot be made leaves its share to the others). Returns
 * the first job in order that failed, or -1. */
static int capture_jobs_run(struct capture_jobs *jobs)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned writers = cpus < 1 ? 1 : cpus < CAPTURE_WRITERS_MAX ? (unsigned)cpus
                                                                  : CAPTURE_WRITERS_MAX;
    unsigned helpers = writers - 1;
    pthread_t threads[CAPTURE_WRITERS_MAX];
    unsigned started = 0;
    for (; started < helpers && started < jobs->count; started++) {
        /* Every signal blocked: the app's handlers run on its own threads, never on ours. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int e = pthread_create(&threads[started], NULL, capture_worker, jobs);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (e)
            break;
    }
    capture_worker(jobs);
    for (unsigned i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    for (unsigned i = 0; i < jobs->count; i++)
        if (jobs->job[i].error)
            return (int)i;
    return -1;
}

/* Every file of a capture, the costliest first, so that no long writer starts last and runs on
 * alone: their CPU time at 1,000,000 frames of the demo, in this order, was 1.6, 1.0, 1.2, 0.3
 * and 0.3 s, the rest under 0.13 s each (FRAMESCOPE_LOG=debug says each; tests/bench/README.md,
 * 2026-12-07). */
static const enum report_format capture_order[] = {
    REPORT_PERFETTO, REPORT_TRACE, REPORT_CSV, REPORT_MANGOHUD, REPORT_PRESENTMON, REPORT_HTML,
    REPORT_SECONDS, REPORT_JSON, REPORT_THREADS, REPORT_ZONES,
};
/* Every format but the two summaries on the terminal (text, full), which are no file. */
_Static_assert(sizeof(capture_order) / sizeof(capture_order[0]) == REPORT_FORMAT_COUNT - 2,
               "each file of a capture is written once");

static int write_capture(const struct report *r, const void *recording, size_t recording_len,
                         const char *output_dir, FILE *summary, bool full)
{
    struct capture_dir dir;
    const char *why = "";
    const char *failed = NULL;
    struct bytes raw = { recording, recording_len, r->stats.rec };
    /* A window other than the default is kept beside the recording, so that `framescope
     * report` recomputes the same rows from it. */
    uint32_t keep_ms = r->stats.keep.window_ms;
    struct capture_jobs jobs = { .dir = &dir };
    if (r->window_ms)
        jobs.job[jobs.count++] = (struct capture_job){ REPORT_WINDOW_FILE, window_writer,
                                                       &r->window_ms };
    if (keep_ms != KEEP_DEFAULT_MS)
        jobs.job[jobs.count++] = (struct capture_job){ REPORT_KEEP_FILE, keep_writer, &keep_ms };
    for (unsigned k = 0; k < sizeof(capture_order) / sizeof(capture_order[0]); k++) {
        enum report_format i = capture_order[k];
        jobs.job[jobs.count++] = (struct capture_job){
            formats[i].file, formats[i].writer,
            formats[i].uses_run ? (const void *)&r->run : (const void *)&r->stats };
    }
    jobs.job[jobs.count++] = (struct capture_job){ REPORT_RECORDING_FILE, bytes_writer, &raw };
    int e = capture_dir_begin(&dir, output_dir, &why);
    if (e == 0) {
        int first = capture_jobs_run(&jobs);
        if (first >= 0) {
            e = jobs.job[first].error;
            failed = jobs.job[first].file;
        }
    }
    if (e == 0)
        e = capture_dir_commit(&dir);
    else
        capture_dir_abort(&dir);
    if (e != 0) {
        char what[96] = "";
        if (why[0])
            snprintf(what, sizeof(what), " (%s)", why);
        else if (failed)
            snprintf(what, sizeof(what), " (writing %s)", failed);
        char shown[SHOWN_PATH_SIZE];
        shown_path(output_dir, shown);
        fscope_log(FSCOPE_LOG_ERROR, "could not write the capture to %s%s: %s; nothing of this "
                   "run was written there", shown, what, strerror(-e));
        if (summary && full) {
            fprintf(summary, "  capture     NOT written to %s%s: %s\n", shown, what,
                    strerror(-e));
        } else if (summary) {
            char line[SHOWN_PATH_SIZE + 256];
            snprintf(line, sizeof(line), "NOT written to %s%s: %s", shown, what, strerror(-e));
            summary_write_capture(summary, line);
        }
    } else if (summary) {
        report_write_capture_line(summary, r, output_dir, full);
    }
    /* After the summary's last line, not among its lines. */
    for (unsigned i = 0; e == 0 && i < jobs.count; i++)
        fscope_log(FSCOPE_LOG_DEBUG, "%s written in %.0f ms (%.0f ms of CPU)", jobs.job[i].file,
                   jobs.job[i].wall_ms, jobs.job[i].cpu_ms);
    return e;
}

int report_write_capture(const struct report *r, const void *recording, size_t recording_len,
                         const char *output_dir, FILE *summary)
{
    return write_capture(r, recording, recording_len, output_dir, summary, false);
}

static int summary_text_writer(FILE *f, const void *arg)
{
    fputs(arg, f);
    return 0;
}

int report_deliver(const struct report *r, const void *recording, size_t recording_len,
                   enum report_summary where, const char *summary_path, const char *output_dir,
                   FILE *err, int *ret_capture_error)
{
    *ret_capture_error = 0;
    char *text = NULL;
    size_t text_len = 0;
    bool full = where == REPORT_SUMMARY_FULL;
    FILE *summary = where == REPORT_SUMMARY_OFF    ? NULL
                    : where == REPORT_SUMMARY_PATH ? open_memstream(&text, &text_len)
                                                   : err;
    if (where == REPORT_SUMMARY_PATH && !summary)
        summary = err; /* out of memory: there rather than nowhere */
    if (summary)
        report_write(summary, r, full ? REPORT_TEXT_FULL : REPORT_TEXT);
    int e = 0;
    if (output_dir && output_dir[0])
        *ret_capture_error = e = write_capture(r, recording, recording_len, output_dir, summary,
                                               full);
    if (summary == err) {
        if (err)
            fflush(err);
    } else if (summary) {
        fclose(summary);
        /* Written whole (the capture line with it) or, on failure, printed there. */
        int w = capture_write_file(summary_path, summary_text_writer, text);
        if (w != 0) {
            char shown[SHOWN_PATH_SIZE];
            /* capture_write_file's own failures, said as what they mean for a summary */
            const char *why = w == -ENXIO     ? "nothing has it open for reading: a FIFO with no reader"
                              : w == -ETIMEDOUT ? "the FIFO's reader took nothing for 5 s"
                              : w == -EPIPE     ? "the FIFO's reader closed it"
                              : w == -ELOOP     ? "it is a symbolic link, which is not followed"
                                                : strerror(-w);
            fscope_log(FSCOPE_LOG_ERROR, "cannot write the summary to %s (%s); printing it here",
                       shown_path(summary_path, shown), why);
            if (err)
                fputs(text, err);
            if (e == 0)
                e = w;
        }
        free(text);
    }
    return e;
}

