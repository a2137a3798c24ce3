/* framescoped: the state directory and the captures in it (kept, pruned, cleaned up). */
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

#include "analysis/capture_dir.h"

/* ---- the state directory and its captures ---- */

bool default_state_dir(void)
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
int make_dirs(const char *path)
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
void remove_capture_temporaries(const char *path)
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
void remove_leftovers(void)
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
void prune_captures(void)
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
void capture_path(const struct app *a, const char *kind, char *buf, size_t len)
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
