/* framescoped: a registered recording read, in a job, from a copy of its own. */
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

#include "analysis/live.h"
#include "analysis/report.h"

/* ---- reading a registered recording (in a job) ---- */

/* A job's memory, bounded by what the recording really holds: the address space it has now
 * (the copy's whole range, holes included) plus four times the bytes read and 256 MiB. A
 * recording whose objects claim gigabytes of holes (a sparse memfd costs its sender nothing)
 * makes the analysis fail for want of memory, said in the journal, instead of filling the
 * machine's. */
void job_bound_memory(const struct copy *c)
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
void job_unbound_memory(void)
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
int copy_recording(int fd, struct copy *c, char *why, size_t why_len)
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

void copy_free(struct copy *c)
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
    struct copy bound = *c;
    if (a->stream_fd >= 0) {
        /* Its chunks come back into the copy, decoded: as many bytes as the header says were
         * streamed (the stream file holds them compact), never more than the copy's length. */
        uint64_t streamed = atomic_load(&((const struct rec_header *)c->bytes)->streamed_bytes);
        uint64_t room = c->len > c->data ? c->len - c->data : 0;
        bound.data += (size_t)(streamed < room ? streamed : room);
    }
    job_bound_memory(&bound);
    struct system_description machine;
    system_describe(&machine);
    e = recording_read_ended(c->bytes, c->len, a->stream_fd, &machine, NULL, rec, why, why_len);
    if (e)
        copy_free(c);
    return e;
}

/* Analyses an app's recording (all of it, or its last last_ms) into the capture at path (a
 * directory claimed for it). Returns 0, or -errno with why. */
int write_capture(const struct app *a, uint32_t last_ms, const char *path,
                  char *summary, size_t summary_len, char *why, size_t why_len)
{
    struct copy c;
    struct recording *rec = NULL;
    int e = read_whole(a, &c, &rec, why, why_len);
    if (e)
        return e;
    struct report *report = report_create_window(rec, last_ms);
    if (!report) {
        e = -ENOMEM;
    } else {
        report_set_trace_window_from(report, getenv("FRAMESCOPE_TRACE_WINDOW"));
        report_set_keep_window_from(report, getenv("FRAMESCOPE_KEEP_MINUTES"));
        e = report_write_capture(report, c.bytes, c.len, path, NULL);
        if (e)
            snprintf(why, why_len, "cannot write %s: %s", path, strerror(-e));
        /* The log's line says what the capture's summary says. */
        uint64_t frames;
        const char *verdict;
        report_headline(report, &frames, &verdict);
        snprintf(summary, summary_len, "%llu frames, %s-bound", (unsigned long long)frames,
                 verdict);
        report_destroy(report);
    }
    recording_free(rec);
    copy_free(&c);
    return e;
}
