/* An app that closes every descriptor it did not open, as daemons, launchers and programs that
 * "sanitise" their fds do at start-up, then opens four files of its own (taking the lowest numbers)
 * and writes them while it marks frames for a few seconds (the recording streams to disk once
 * a second meanwhile). At the end it checks its files hold exactly what it wrote.
 *
 *   fd-closer DIR SECONDS
 *
 * Exit status 0: every file intact; 1: a file was damaged (said on stderr); 2: bad use. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "framescope.h"

#define FILE_BYTES (8u << 20)
#define FILES 4

static unsigned char pattern(size_t i, int file)
{
    return (unsigned char)((i * 7 + (size_t)file * 13) % 251);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 3 || atof(argv[2]) <= 0) {
        fprintf(stderr, "usage: fd-closer DIR SECONDS\n");
        return 2;
    }
    FSCOPE_FRAME_MARK(); /* the recording (and its descriptors) exist from here */
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    static unsigned char block[1 << 16];
    int fds[FILES];
    for (int f = 0; f < FILES; f++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/app-file-%d", argv[1], f);
        fds[f] = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fds[f] < 0) {
            fprintf(stderr, "fd-closer: %s: %s\n", path, strerror(errno));
            return 2;
        }
        for (size_t at = 0; at < FILE_BYTES; at += sizeof(block)) {
            for (size_t i = 0; i < sizeof(block); i++)
                block[i] = pattern(at + i, f);
            if (pwrite(fds[f], block, sizeof(block), (off_t)at) != (ssize_t)sizeof(block))
                return 2;
        }
        fprintf(stderr, "fd-closer: app file %d is fd %d\n", f, fds[f]);
    }
    double end = now_s() + atof(argv[2]);
    unsigned frames = 0;
    while (now_s() < end) {
        {
            FSCOPE_ZONE("work");
            struct timespec pause = { 0, 100000 };
            nanosleep(&pause, NULL);
        }
        FSCOPE_FRAME_MARK();
        frames++;
    }
    int damaged = 0;
    for (int f = 0; f < FILES; f++) {
        struct stat;
        off_t size = lseek(fds[f], 0, SEEK_END);
        size_t bad = size != (off_t)FILE_BYTES;
        for (size_t at = 0; at < FILE_BYTES && !bad; at += sizeof(block)) {
            if (pread(fds[f], block, sizeof(block), (off_t)at) != (ssize_t)sizeof(block)) {
                bad = 1;
                break;
            }
            for (size_t i = 0; i < sizeof(block); i++)
                bad += block[i] != pattern(at + i, f);
        }
        if (bad) {
            fprintf(stderr, "fd-closer: app file %d damaged (%zu bytes wrong, size %lld)\n", f,
                    bad, (long long)size);
            damaged = 1;
        }
    }
    fprintf(stderr, "fd-closer: %u frames; files %s\n", frames, damaged ? "DAMAGED" : "intact");
    return damaged;
}
