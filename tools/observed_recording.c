/* The recording framescope run hands to the command and analyses once the command has ended,
 * however it ended. */
#include "observed_recording.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/recording.h"
#include "record/format.h"
#include "util/log.h"
#include "util/unnamed_file.h"

int observed_recording_create(struct observed_recording *r)
{
    r->fd = sealed_memfd_create("framescope-recording", REC_ARENA_SIZE);
    r->child_fd = r->child_stream_fd = -1;
    r->stream_fd = unnamed_file_create(getenv("TMPDIR")); /* -1: nothing is streamed */
    r->header = MAP_FAILED;
    r->early = NULL;
    r->follow = NULL;
    if (r->fd < 0)
        return r->fd;
    r->header = mmap(NULL, sizeof(*r->header), PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    if (r->header == MAP_FAILED)
        return -errno;
    rec_header_init(r->header, REC_ARENA_SIZE);
    r->child_fd = fcntl(r->fd, F_DUPFD, 3); /* without close-on-exec: the command inherits it */
    if (r->child_fd < 0)
        return -errno;
    if (r->stream_fd >= 0) {
        r->child_stream_fd = fcntl(r->stream_fd, F_DUPFD, 3);
        r->header->stream_fd = r->child_stream_fd; /* the number the command sees */
    }
    char fd_text[16];
    snprintf(fd_text, sizeof(fd_text), "%d", r->child_fd);
    if (setenv("FRAMESCOPE_RECORDING_FD", fd_text, 1) != 0)
        return -errno;
    /* The exit then reads only what was not yet streamed; without memory or a thread, all. */
    if (r->stream_fd >= 0 && (r->early = recording_early_create()) &&
        !(r->follow = recording_follow_start(r->fd, r->stream_fd, r->early))) {
        recording_early_destroy(r->early);
        r->early = NULL;
    }
    return 0;
}

/* Stops the read-ahead and lets go of what it holds. */
static void follow_end(struct observed_recording *r)
{
    recording_follow_free(r->follow);
    recording_early_destroy(r->early);
    r->follow = NULL;
    r->early = NULL;
}

void observed_recording_close(struct observed_recording *r)
{
    follow_end(r);
    if (r->header != MAP_FAILED)
        munmap(r->header, sizeof(*r->header));
    if (r->child_fd >= 0)
        close(r->child_fd);
    if (r->fd >= 0)
        close(r->fd);
    if (r->child_stream_fd >= 0)
        close(r->child_stream_fd);
    if (r->stream_fd >= 0)
        close(r->stream_fd);
}

/* Bytes of the recording's file in memory past offset (what its stream thread made resident
 * ahead of the writers: src/record/recording.c), found through a descriptor of our own so that
 * the one the command shares keeps its offset. -1: not known. */
static long long resident_after(int fd, uint64_t offset)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    int own = open(path, O_RDONLY | O_CLOEXEC);
    if (own < 0)
        return -1;
    long long bytes = 0;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    off_t at = (off_t)((offset + page - 1) / page * page); /* whole pages past it */
    for (;;) {
        off_t data = lseek(own, at, SEEK_DATA);
        off_t hole = data < 0 ? -1 : lseek(own, data, SEEK_HOLE);
        if (data < 0 || hole < 0) {
            if (errno != ENXIO)
                bytes = -1;
            break;
        }
        bytes += hole - data;
        at = hole;
    }
    close(own);
    return bytes;
}

/* Milliseconds on the monotonic clock, for the debug log's account of where the exit went. */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Analyses the command's recording once it has ended (exit status, or the signal that killed
 * it): the summary and the capture, as the command would have written them at its own exit.
 * Returns 0, 1 when the capture or summary could not be written (said on stderr), or 3 when
 * there was nothing to analyse. */
int observed_recording_analyse(struct observed_recording *r, int exit_status, int signal,
                                enum report_summary where, const char *summary_path,
                                const char *output)
{
    struct rec_header *h = r->header;
    if (atomic_load(&h->owner_pid) == 0)
        return 3;
    h->end_status = signal ? 0 : exit_status + 1;
    h->end_signal = signal;
    uint64_t used = atomic_load(&h->used);
    if (used < sizeof(*h) || used > REC_ARENA_SIZE) {
        fprintf(stderr, "framescope: the command's recording is damaged (%llu bytes in use)\n",
                (unsigned long long)used);
        return 1;
    }
    void *bytes = mmap(NULL, (size_t)used, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    if (bytes == MAP_FAILED) {
        fprintf(stderr, "framescope: cannot map the command's recording: %s\n", strerror(errno));
        return 1;
    }
    struct stat memory, streamed;
    if (fstat(r->fd, &memory) == 0 && r->stream_fd >= 0 && fstat(r->stream_fd, &streamed) == 0) {
        long long ahead = resident_after(r->fd, used);
        fscope_log(FSCOPE_LOG_DEBUG, "the recording held %lld KiB in memory at the end (%lld KiB "
                   "of it made resident ahead of use), %llu KiB streamed to disk (in %lld KiB)",
                   (long long)memory.st_blocks / 2, ahead < 0 ? -1 : ahead / 1024,
                   (unsigned long long)atomic_load(&h->streamed_bytes) / 1024,
                   (long long)streamed.st_blocks / 2);
    }
    struct recording *rec = NULL;
    char why[256];
    /* With the machine the run ended on, kept for a report made elsewhere later. */
    struct system_description machine;
    system_describe(&machine);
    double start_ms = now_ms();
    /* The command and its stream thread are gone: what the file holds now is all it will. */
    recording_follow_finish(r->follow);
    int e = recording_read_ended(bytes, (size_t)used, r->stream_fd, &machine, r->early, &rec,
                                 why, sizeof(why));
    struct recording_early_counts ahead;
    recording_early_counts(r->early, &ahead);
    follow_end(r);
    fscope_log(FSCOPE_LOG_DEBUG, "%llu frames of the recording read ahead as they were "
               "streamed, of %llu taken, and %llu other items, of %llu taken (%llu GPU spans, "
               "of %llu)", (unsigned long long)ahead.frames_adopted,
               (unsigned long long)ahead.frames_taken, (unsigned long long)ahead.items_adopted,
               (unsigned long long)ahead.items_taken, (unsigned long long)ahead.spans_adopted,
               (unsigned long long)ahead.spans_taken);
    int status = 0, capture_error = 0;
    if (e) {
        fprintf(stderr, "framescope: cannot read the command's recording: %s\n",
                why[0] ? why : strerror(-e));
        status = 1;
    } else {
        double read_ms = now_ms();
        struct report *report = report_create(rec);
        double analysed_ms = now_ms();
        if (report) {
            report_set_trace_window_from(report, getenv("FRAMESCOPE_TRACE_WINDOW"));
            report_set_keep_window_from(report, getenv("FRAMESCOPE_KEEP_MINUTES"));
        }
        if (!report)
            status = 1;
        else if (!report_has_frames(report) && !rec->enabled)
            status = 3; /* framescope loaded (the library) but nothing to report */
        else if (report_deliver(report, bytes, (size_t)used, where, summary_path, output,
                                stderr, &capture_error) != 0)
            status = 1;
        fscope_log(FSCOPE_LOG_DEBUG, "the exit took %.0f ms: reading the recording %.0f, the "
                   "analysis %.0f, the summary and capture %.0f", now_ms() - start_ms,
                   read_ms - start_ms, analysed_ms - read_ms, now_ms() - analysed_ms);
        if (capture_error)
            fprintf(stderr, "framescope: the capture was NOT written to %s (%s)\n", output,
                    strerror(-capture_error));
        report_destroy(report);
    }
    /* The streamed chunks went from the stream file into the analysis, not back into the
     * recording's memory: what it holds now is what it held at the end. */
    if (fstat(r->fd, &memory) == 0)
        fscope_log(FSCOPE_LOG_DEBUG, "after the analysis the recording held %lld KiB in memory",
                   (long long)memory.st_blocks / 2);
    recording_free(rec);
    munmap(bytes, (size_t)used);
    return status;
}

