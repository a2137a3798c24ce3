#include "kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meta.h"
#include "recording.h"
#include "registry.h"
#include "util/config.h"
#include "util/log.h"

static bool kernel_on = true;

static void set_state(enum rec_kernel_state state, const char *why)
{
    struct rec_meta *m = recording_meta();
    if (!m)
        return;
    uint32_t unknown = REC_KERNEL_UNKNOWN;
    if (state == REC_KERNEL_ON) {
        atomic_compare_exchange_strong(&m->kernel_state, &unknown, REC_KERNEL_ON);
        return;
    }
    /* The first reason a thread found is the one the summary gives. */
    if (atomic_exchange(&m->kernel_state, state) != state && why)
        snprintf(m->kernel_why, sizeof(m->kernel_why), "%s", why);
}

void kernel_init(void)
{
    const char *value = secure_getenv("FRAMESCOPE_KERNEL");
    if (!value || !*value)
        return;
    bool on;
    if (fscope_config_parse_switch(value, &on)) {
        kernel_on = on;
        if (!on)
            set_state(REC_KERNEL_OFF, "FRAMESCOPE_KERNEL=off");
        return;
    }
    char shown[FSCOPE_ESCAPE_SIZE];
    fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_KERNEL='%s' is not on or off; using on",
               fscope_config_escape(value, shown, sizeof(shown)));
}

bool kernel_thread_times(struct fscope_collector *c, uint64_t *ret_oncpu_ns,
                         uint64_t *ret_runnable_ns)
{
    if (!kernel_on || !c)
        return false;
    if (c->schedstat_fd < 0) {
        if (c->schedstat_fd == -2)
            return false; /* this thread already found it missing */
        c->schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
        if (c->schedstat_fd < 0) {
            char why[160];
            snprintf(why, sizeof(why), "/proc/thread-self/schedstat: %s (no /proc, or a "
                     "kernel without CONFIG_SCHED_INFO)", strerror(errno));
            set_state(REC_KERNEL_UNAVAILABLE, why);
            c->schedstat_fd = -2;
            return false;
        }
    }
    /* "ON_CPU_NS RUNQUEUE_NS TIMESLICES\n" */
    char text[96];
    ssize_t n = pread(c->schedstat_fd, text, sizeof(text) - 1, 0);
    if (n <= 0)
        return false;
    text[n] = '\0';
    char *end;
    unsigned long long oncpu = strtoull(text, &end, 10);
    unsigned long long runnable = strtoull(end, NULL, 10);
    *ret_oncpu_ns = oncpu;
    *ret_runnable_ns = runnable;
    set_state(REC_KERNEL_ON, NULL);
    return true;
}

void kernel_thread_exit(struct fscope_collector *c)
{
    if (c && c->schedstat_fd >= 0) {
        close(c->schedstat_fd);
        c->schedstat_fd = -1;
    }
}
