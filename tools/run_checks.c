/* What framescope run checks before anything runs: that the layer will be able to write the
 * capture directory and the summary file when the command exits. */
#include "run_checks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/capture_dir.h"
#include "util/config.h"

/* The last component of path, trailing slashes aside, into ret_base; false when there is none
 * of its own ("/", ".", "..", "./"). */
static bool last_component(const char *path, char *ret_base, size_t base_len)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);
    if (len >= sizeof(buf))
        return false;
    memcpy(buf, path, len + 1);
    while (len > 1 && buf[len - 1] == '/')
        buf[--len] = '\0';
    const char *slash = strrchr(buf, '/');
    const char *base = slash ? slash + 1 : buf;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strlen(base) >= base_len)
        return false;
    snprintf(ret_base, base_len, "%s", base);
    return true;
}

/*
 * The layer makes the missing directories on the way to path (as mkdir -p does) and writes
 * beside path before renaming into place, so the nearest directory on the way that exists
 * must be one we can write in. what names path in the message. False after one line on
 * stderr.
 */
static bool parent_writable(const char *what, const char *path)
{
    char shown[FSCOPE_ESCAPE_SIZE];
    char dir[PATH_MAX];
    size_t len = strlen(path);
    if (len >= sizeof(dir)) {
        fprintf(stderr, "framescope: %s %s: the path is too long\n", what,
                fscope_config_escape(path, shown, sizeof(shown)));
        return false;
    }
    memcpy(dir, path, len + 1);
    for (;;) {
        while (len > 1 && dir[len - 1] == '/')
            dir[--len] = '\0';
        char *slash = strrchr(dir, '/');
        if (!slash)
            snprintf(dir, sizeof(dir), ".");
        else if (slash == dir)
            dir[1] = '\0';
        else
            *slash = '\0';
        len = strlen(dir);
        struct stat st;
        if (stat(dir, &st) == 0) {
            const char *why = !S_ISDIR(st.st_mode) ? strerror(ENOTDIR)
                              : access(dir, W_OK | X_OK) != 0 ? strerror(errno)
                                                               : NULL;
            if (why) {
                char shown_dir[FSCOPE_ESCAPE_SIZE];
                fprintf(stderr, "framescope: %s %s: cannot create it in %s: %s\n", what,
                        fscope_config_escape(path, shown, sizeof(shown)),
                        fscope_config_escape(dir, shown_dir, sizeof(shown_dir)), why);
            }
            return !why;
        }
        if (errno != ENOENT || strcmp(dir, ".") == 0 || strcmp(dir, "/") == 0) {
            fprintf(stderr, "framescope: %s %s: %s\n", what,
                    fscope_config_escape(path, shown, sizeof(shown)), strerror(errno));
            return false;
        }
    }
}

/* What a capture holds (src/analysis/capture_dir.c): a directory holding nothing else is
 * replaced, one that does is refused. */
static bool holds_only_capture(int dir_fd)
{
    DIR *dir = fdopendir(dir_fd);
    if (!dir) {
        close(dir_fd);
        return false;
    }
    bool only_capture = true;
    struct dirent *e;
    while (only_capture && (e = readdir(dir))) {
        only_capture = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
                       capture_is_file_name(e->d_name);
    }
    closedir(dir);
    return only_capture;
}

/*
 * The capture directory, checked before anything runs by the rules the layer applies when it
 * writes the capture at exit: a directory it can create, or an existing one of ours that only
 * we can write, holding at most an earlier capture. what names it in the message. False after
 * one line on stderr.
 */
bool check_output(const char *what, const char *path)
{
    char shown[FSCOPE_ESCAPE_SIZE];
    char base[NAME_MAX + 1];
    if (!last_component(path, base, sizeof(base))) {
        fprintf(stderr, "framescope: %s %s: name a directory of its own (not /, . or ..)\n",
                what, fscope_config_escape(path, shown, sizeof(shown)));
        return false;
    }
    const char *why = NULL;
    char why_buf[128];
    struct stat st;
    /* A trailing slash would make lstat follow a link. */
    char target[PATH_MAX];
    snprintf(target, sizeof(target), "%s", path);
    for (size_t len = strlen(target); len > 1 && target[len - 1] == '/';)
        target[--len] = '\0';
    if (lstat(target, &st) != 0) {
        if (errno == ENOENT)
            return parent_writable(what, path);
        why = strerror(errno);
    } else if (S_ISLNK(st.st_mode)) {
        why = "it is a symbolic link; give the directory it points to";
    } else if (!S_ISDIR(st.st_mode)) {
        why = "it exists and is not a directory";
    } else if (st.st_uid != geteuid()) {
        snprintf(why_buf, sizeof(why_buf), "it is owned by another user (uid %u); choose a "
                 "directory of your own", (unsigned)st.st_uid);
        why = why_buf;
    } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why_buf, sizeof(why_buf), "%s can write to it (mode %04o); choose a "
                 "directory only you can write", st.st_mode & S_IWOTH ? "everyone" : "its group",
                 (unsigned)(st.st_mode & 07777));
        why = why_buf;
    } else {
        int dir_fd = open(target, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir_fd < 0)
            why = strerror(errno);
        else if (!holds_only_capture(dir_fd))
            why = "it holds files that are not a framescope capture";
    }
    if (why) {
        fprintf(stderr, "framescope: %s %s: %s\n", what,
                fscope_config_escape(path, shown, sizeof(shown)), why);
        return false;
    }
    return parent_writable(what, path);
}

/* A summary file (FRAMESCOPE_SUMMARY naming a path, from --summary or inherited): one the
 * layer can write at exit. False after one line on stderr. */
bool check_summary_file(const char *path)
{
    char shown[FSCOPE_ESCAPE_SIZE];
    char base[NAME_MAX + 1];
    struct stat st;
    const char *why = NULL;
    /* /dev/stderr, a `>(tee log)` substitution's /dev/fd/63: a descriptor we hold, written
     * into as it is (capture_write_file). */
    if (capture_path_names_descriptor(path))
        return true;
    if (!last_component(path, base, sizeof(base)))
        why = "name a file (not /, . or ..)";
    else if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        why = "it is a symbolic link, which framescope does not follow; name the file itself";
    else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        why = "it is a directory; name a file";
    else if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) &&
             !S_ISFIFO(st.st_mode))
        why = "it is neither a file, a device nor a FIFO";
    if (why) {
        fprintf(stderr, "framescope: summary file %s: %s\n",
                fscope_config_escape(path, shown, sizeof(shown)), why);
        return false;
    }
    return parent_writable("summary file", path);
}
