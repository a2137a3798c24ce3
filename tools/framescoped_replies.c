/* framescoped: the replies to framescope top and snapshot. */
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
#include "util/text.h"

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
void reply_now(int conn, const char *text)
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

void request_list(int conn)
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

void request_snapshot(int conn, const struct fscoped_request *req)
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
