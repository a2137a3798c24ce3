/* framescoped: saying things, some of them at most every few seconds. */
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

void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("framescoped: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- saying things, some of them at most every few seconds ---- */


bool quiet_may_say(struct quiet *q, unsigned *ret_held)
{
    time_t now = time(NULL);
    if (q->last && now - q->last < 10) {
        q->held++;
        return false;
    }
    q->last = now;
    *ret_held = q->held;
    q->held = 0;
    return true;
}

uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
