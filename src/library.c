/* The library's exit, and the one file that joins recording and analysis: with no observer
 * (only VK_INSTANCE_LAYERS, or the library linked in), the app analyses its own recording at
 * exit with the same code `framescope run` uses after it. Under an observer the app only
 * flushes and marks its recording ended; the observer does the rest, however the app ends. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/capture_dir.h"
#include "analysis/recording.h"
#include "analysis/report.h"
#include "analysis/trace.h"
#include "library.h"
#include "record/clock.h"
#include "record/daemon_link.h"
#include "record/frame.h"
#include "record/kernel.h"
#include "record/meta.h"
#include "record/recording.h"
#include "record/stream.h"
#include "util/config.h"
#include "util/log.h"
#include "util/private_fd.h"
#include "util/system.h"

#define FSCOPE_EXPORT __attribute__((visibility("default")))

static enum report_summary summary_target = REPORT_SUMMARY_STDERR;
static char summary_path[1024];
static char output_dir[1024];
static _Atomic bool finished, disowned;
/* The terminal's stderr as it was at start-up, kept apart: an app that closes its fds 1 and 2
 * at exit (SuperTuxKart does) still gets its summary, and one that opens a file of its own
 * under number 2 never gets the summary written into it. */
static struct fscope_private_fd private_stderr = { .fd = -1 };
/* What this process's exit will read (frames, command buffer recordings, GPU spans), read
 * ahead as the stream thread moves it to disk (NULL when the exit reads nothing: no summary,
 * no capture). */
static struct recording_early *early;

/* On the stream thread. Under framescope run the observer analyses instead: nothing to take. */
static bool early_wants(void *ctx, uint32_t type, const void *object,
                        const struct chunked *array)
{
    (void)ctx;
    return !recording_observed() &&
           recording_early_wants(type, (size_t)((const char *)array - (const char *)object));
}

static void early_take(void *ctx, uint32_t entry, uint32_t type, const void *object,
                       const struct chunked *array, uint64_t chunk, const void *items)
{
    recording_early_take(ctx, entry, type, (size_t)((const char *)array - (const char *)object),
                         array, array, chunk, items);
}

/* A forked child has none of the parent's threads and must not write the parent's summary or
 * capture when it exits: the run being profiled is the parent's. Nor may it keep what we hold
 * open: the scheduler's events cost every context switch of the machine while they live, and
 * the daemon takes the app's end from its connection closing. The one fork handler of ours,
 * so the order holds: the arena made private (from its descriptor), then every descriptor let
 * go of. */
static void forked_child(void)
{
    atomic_store(&disowned, true);
    recording_forked_child();
    fscope_fd_release_all();
}

__attribute__((constructor)) static void library_init(void)
{
    pthread_atfork(NULL, NULL, forked_child);
    const char *summary = secure_getenv("FRAMESCOPE_SUMMARY");
    if (summary && *summary) {
        char shown[FSCOPE_ESCAPE_SIZE];
        if (fscope_config_keyword(summary, "off")) {
            summary_target = REPORT_SUMMARY_OFF;
        } else if (fscope_config_keyword(summary, "stderr")) {
            summary_target = REPORT_SUMMARY_STDERR;
        } else if (fscope_config_keyword(summary, "full")) {
            summary_target = REPORT_SUMMARY_FULL;
        } else if (fscope_config_is_path(summary) && strlen(summary) < sizeof(summary_path)) {
            summary_target = REPORT_SUMMARY_PATH;
            snprintf(summary_path, sizeof(summary_path), "%s", summary);
        } else if (fscope_config_is_path(summary)) {
            fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_SUMMARY='%s' is longer than %zu bytes; "
                       "using stderr", fscope_config_escape(summary, shown, sizeof(shown)),
                       sizeof(summary_path) - 1);
        } else {
            fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_SUMMARY='%s' is not off, stderr, full or a path "
                       "starting with / or ./; using stderr",
                       fscope_config_escape(summary, shown, sizeof(shown)));
        }
    }
    if (summary_target != REPORT_SUMMARY_OFF)
        fscope_private_fd_init(&private_stderr, STDERR_FILENO);
    const char *out = secure_getenv("FRAMESCOPE_OUTPUT");
    if (out && *out) {
        if (strlen(out) >= sizeof(output_dir) - 32)
            fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_OUTPUT is too long; no capture is written");
        else
            snprintf(output_dir, sizeof(output_dir), "%s", out);
    }
    if ((summary_target != REPORT_SUMMARY_OFF || output_dir[0]) &&
        (early = recording_early_create()))
        stream_observe(&(struct stream_observer){ early_wants, early_take, early });
}

/* This process's own recording, read back. NULL (logged) when it cannot be. */
static struct recording *read_own(size_t *ret_len)
{
    struct rec_header *h = recording_header();
    if (!h)
        return NULL;
    size_t len = (size_t)atomic_load(&h->used);
    struct recording *rec = NULL;
    char why[256];
    int e = recording_read(h, len, &rec, why, sizeof(why));
    if (e) {
        fscope_log(FSCOPE_LOG_ERROR, "cannot read this run's recording back: %s",
                   why[0] ? why : strerror(-e));
        return NULL;
    }
    *ret_len = len;
    return rec;
}

/* Where the summary's "stderr" goes: the private copy of the terminal's stderr while it is
 * still that file, else stderr if fd 2 is still it, else nowhere. */
static FILE *summary_stream(void)
{
    if (private_stderr.fd < 0)
        return stderr; /* never had one to keep: as before */
    if (fscope_private_fd_ours(&private_stderr)) {
        int fd = fcntl(private_stderr.fd, F_DUPFD_CLOEXEC, 0);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (f)
            return f;
        if (fd >= 0)
            close(fd);
    }
    struct fscope_private_fd now;
    bool same = fscope_private_fd_init(&now, STDERR_FILENO) && now.dev == private_stderr.dev &&
                now.ino == private_stderr.ino;
    fscope_fd_close(now.fd);
    return same ? stderr : NULL;
}

FSCOPE_EXPORT void fscope_report_finish(void)
{
    if (atomic_load(&disowned) || atomic_exchange(&finished, true))
        return;
    struct rec_header *h = recording_header();
    if (!h)
        return;
    clock_refine();
    frame_logs_finish();
    struct rec_meta *meta = recording_meta();
#ifdef FSCOPE_HAVE_WAYLAND
    /* The compositor's outputs, for the presentation analysis, if none were learned yet
     * (an X11 app under XWayland has its outputs from RandR, which its frames index). */
    if (meta && atomic_load(&meta->enabled) && !atomic_load(&meta->output_count) &&
        secure_getenv("WAYLAND_DISPLAY"))
        frame_logs_record_wl_outputs();
#endif
    kernel_sampler_stop();
    stream_stop();
    recording_end();
    daemon_link_stop();
    /* Read ahead or not, the stream thread is gone: whatever returns below frees it. */
    struct recording_early *ahead = early;
    early = NULL;
    if (recording_observed()) {
        recording_early_destroy(ahead);
        return; /* framescope run analyses the recording once this process is gone */
    }
    /* The machine the run ended on, kept for a report made elsewhere later (framescope run
     * records it itself). */
    if (meta) {
        struct system_description machine;
        system_describe(&machine);
        recording_system_from(&meta->system, &machine);
        atomic_store(&meta->system_known, 1);
    }
    /* Nothing asked for: reading the run back and judging it would only make the app's exit
     * slower, by a time that grows with the run (about 10 us a frame here). */
    if (summary_target == REPORT_SUMMARY_OFF && !output_dir[0]) {
        fscope_log(FSCOPE_LOG_DEBUG, "summary off and no capture asked for: the recording is "
                   "not read back");
        recording_early_destroy(ahead);
        return;
    }
    /* What the stream thread moved to disk is read from there as the analysis copies the
     * recording out: the arena is not made whole again. */
    char why[256];
    int fd = recording_stream_fd();
    if (fd >= 0 && !recording_fds_ours()) {
        /* The app closed our stream file: what went there is lost, and its own file may have
         * the number now. */
        if (atomic_load(&h->streamed_bytes)) {
            fscope_log(FSCOPE_LOG_ERROR, "the app closed the recording's stream file: what was "
                       "streamed to disk is lost, so there is no summary");
            recording_early_destroy(ahead);
            return;
        }
        fd = -1;
    }
    size_t len = (size_t)atomic_load(&h->used);
    struct recording *rec = NULL;
    int e = recording_read_ended(h, len, fd, NULL, fd >= 0 ? ahead : NULL, &rec, why,
                                 sizeof(why));
    struct recording_early_counts ahead_counts;
    recording_early_counts(ahead, &ahead_counts);
    recording_early_destroy(ahead);
    if (e) {
        fscope_log(FSCOPE_LOG_ERROR, "cannot read this run's recording back: %s",
                   why[0] ? why : strerror(-e));
        return;
    }
    fscope_log(FSCOPE_LOG_DEBUG, "read back %llu KiB of the recording streamed to disk (%llu "
               "KiB there), each chunk into the analysis, none into the arena; %llu frames "
               "of it read ahead as they were streamed, of %llu taken, and %llu other items, "
               "of %llu taken (%llu GPU spans, of %llu)",
               (unsigned long long)atomic_load(&h->streamed_bytes) / 1024,
               (unsigned long long)atomic_load(&h->streamed_stored_bytes) / 1024,
               (unsigned long long)ahead_counts.frames_adopted,
               (unsigned long long)ahead_counts.frames_taken,
               (unsigned long long)ahead_counts.items_adopted,
               (unsigned long long)ahead_counts.items_taken,
               (unsigned long long)ahead_counts.spans_adopted,
               (unsigned long long)ahead_counts.spans_taken);
    struct report *r = report_create(rec);
    if (r) {
        report_set_trace_window_from(r, secure_getenv("FRAMESCOPE_TRACE_WINDOW"));
        report_set_keep_window_from(r, secure_getenv("FRAMESCOPE_KEEP_MINUTES"));
    }
    int capture_error;
    FILE *err = summary_stream();
    if (r && (report_has_frames(r) || rec->enabled))
        report_deliver(r, h, len, summary_target, summary_path, output_dir, err, &capture_error);
    if (err && err != stderr)
        fclose(err);
    report_destroy(r);
    recording_free(rec);
}

static int trace_file_writer(FILE *f, const void *arg)
{
    return trace_write(f, arg, NULL); /* the flight recorder alone: no frames judged */
}

FSCOPE_EXPORT int fscope_trace_dump(const char *path)
{
    if (!path || !*path)
        return -EINVAL;
    size_t len;
    struct recording *rec = read_own(&len);
    if (!rec)
        return -ENODATA;
    /* An exclusive, unpredictable temporary name beside path, renamed when complete. */
    int e = capture_write_file(path, trace_file_writer, rec);
    recording_free(rec);
    return e;
}

__attribute__((destructor)) static void library_exit(void)
{
    fscope_report_finish();
}
