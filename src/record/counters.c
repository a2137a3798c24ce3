#include "counters.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef FSCOPE_HAVE_LIBPFM
#include <perfmon/pfmlib_perf_event.h>
#endif

#include "kernel.h"
#include "recording.h"
#include "registry.h"
#include "util/config.h"
#include "util/log.h"
#include "util/private_fd.h"

/* What a frame's CPU part is made of when the machine has a PMU: IPC, and the two misses
 * that most often explain a low one. */
static const char *const default_names[] = { "cycles", "instructions", "cache-misses",
                                              "branch-misses" };

/* The encoded events, the same for every thread; set once at start-up. */
static struct perf_event_attr attrs[FRAME_COUNTERS];
static unsigned attr_count;

static struct rec_counters *recorded(void)
{
    struct rec_meta *m = recording_meta();
    return m ? &m->counters : NULL;
}

/* The first reason found is the one the summary gives. */
static void set_state(enum rec_counter_state state, const char *why)
{
    struct rec_counters *r = recorded();
    if (!r)
        return;
    uint32_t unknown = REC_COUNTERS_UNKNOWN;
    if (state == REC_COUNTERS_ON) {
        atomic_compare_exchange_strong(&r->state, &unknown, REC_COUNTERS_ON);
        return;
    }
    atomic_store(&r->state, state);
    if (why && !r->why[0])
        snprintf(r->why, sizeof(r->why), "%s", why);
}

/* Adds "name: detail" to what the summary says was not counted; names refused for the same
 * reason share it ("cycles, instructions: no CPU PMU ..."). */
static void add_why(const char *name, const char *detail)
{
    struct rec_counters *r = recorded();
    if (!r)
        return;
    char *why = r->why;
    size_t used = strlen(why), size = sizeof(r->why);
    char tail[192];
    snprintf(tail, sizeof(tail), ": %.160s", detail);
    char *same = strstr(why, tail);
    size_t add = strlen(name) + 2;
    if (same && used + add < size) {
        memmove(same + add, same, used - (size_t)(same - why) + 1);
        memcpy(same, ", ", 2);
        memcpy(same + 2, name, add - 2);
    } else if (!same && used + 2 < size) {
        snprintf(why + used, size - used, "%s%.64s%.180s", used ? "; " : "", name, tail);
    }
}

static enum counter_kind kind_of(const struct perf_event_attr *a)
{
    if (a->type != PERF_TYPE_HARDWARE)
        return COUNTER_OTHER;
    return a->config == PERF_COUNT_HW_CPU_CYCLES     ? COUNTER_CYCLES
           : a->config == PERF_COUNT_HW_INSTRUCTIONS ? COUNTER_INSTRUCTIONS
                                                     : COUNTER_OTHER;
}

/* Encodes one event name into attrs[attr_count]; false (and why) when it is not one. */
static bool encode(const char *name, bool given, char *why, size_t why_size)
{
    struct perf_event_attr *a = &attrs[attr_count];
    memset(a, 0, sizeof(*a));
#ifdef FSCOPE_HAVE_LIBPFM
    static bool initialised;
    if (!initialised) {
        int e = pfm_initialize();
        if (e != PFM_SUCCESS) {
            snprintf(why, why_size, "libpfm4 did not start: %s", pfm_strerror(e));
            return false;
        }
        initialised = true;
    }
    pfm_perf_encode_arg_t arg;
    memset(&arg, 0, sizeof(arg));
    arg.attr = a;
    arg.size = sizeof(arg);
    /* User-space counts unless the name asks for more (":k=1"): what perf_event_paranoid 2
     * allows anyone, and the part of the frame that is the app's own code. */
    int e = pfm_get_os_event_encoding(name, PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
    if (e != PFM_SUCCESS) {
        snprintf(why, why_size, "%s", pfm_strerror(e));
        return false;
    }
    (void)given;
#else
    /* Without libpfm4 only our defaults, as perf's generic hardware events. */
    static const uint64_t generic[] = { PERF_COUNT_HW_CPU_CYCLES, PERF_COUNT_HW_INSTRUCTIONS,
                                        PERF_COUNT_HW_CACHE_MISSES, PERF_COUNT_HW_BRANCH_MISSES };
    unsigned i = 0;
    while (i < FRAME_COUNTERS && strcmp(name, default_names[i]) != 0)
        i++;
    if (given || i == FRAME_COUNTERS) {
        snprintf(why, why_size, "framescope was built without libpfm4, which encodes event "
                 "names");
        return false;
    }
    a->type = PERF_TYPE_HARDWARE;
    a->config = generic[i];
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
#endif
    a->size = sizeof(*a);
    a->disabled = 0;
    a->read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED |
                     PERF_FORMAT_TOTAL_TIME_RUNNING;
    a->sample_period = 0;
    a->inherit = 0;
    return true;
}

static void add_event(const char *name, bool given, char *bad, size_t bad_size)
{
    struct rec_counters *r = recorded();
    char shown[FSCOPE_ESCAPE_SIZE];
    fscope_config_escape(name, shown, sizeof(shown));
    char why[160];
    if (attr_count == FRAME_COUNTERS)
        snprintf(why, sizeof(why), "more than %d events", FRAME_COUNTERS);
    if (attr_count == FRAME_COUNTERS || !encode(name, given, why, sizeof(why))) {
        add_why(shown, why);
        size_t used = strlen(bad);
        snprintf(bad + used, bad_size - used, "%s'%s' (%s)", used ? ", " : "", shown, why);
        return;
    }
    if (r) {
        snprintf(r->names[attr_count], sizeof(r->names[attr_count]), "%.*s",
                 COUNTER_NAME_SIZE - 1, shown);
        r->kinds[attr_count] = (uint8_t)kind_of(&attrs[attr_count]);
        r->count = attr_count + 1;
    }
    attr_count++;
}

void counters_init(bool kernel_on)
{
    const char *value = secure_getenv("FRAMESCOPE_COUNTERS");
    bool given = value && *value;
    if (!kernel_on) {
        set_state(REC_COUNTERS_OFF, "FRAMESCOPE_KERNEL=off");
        return;
    }
    if (given && fscope_config_keyword(value, "off")) {
        set_state(REC_COUNTERS_OFF, "FRAMESCOPE_COUNTERS=off");
        return;
    }
    char bad[512] = "";
    if (!given || fscope_config_keyword(value, "default")) {
        for (unsigned i = 0; i < FRAME_COUNTERS; i++)
            add_event(default_names[i], false, bad, sizeof(bad));
    } else {
        /* "name,name,...": libpfm4 names keep ':' and '=' for their modifiers. */
        char list[1024];
        snprintf(list, sizeof(list), "%s", value);
        char *save = NULL;
        for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save))
            add_event(name, true, bad, sizeof(bad));
    }
    if (bad[0])
        fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_COUNTERS: not counted: %s", bad);
    if (!attr_count)
        set_state(REC_COUNTERS_UNAVAILABLE, NULL);
}

static void group_close(struct fscope_collector *c)
{
    for (unsigned i = 0; i < FRAME_COUNTERS; i++) {
        if (c->counter_fds[i] >= 0)
            fscope_fd_close(c->counter_fds[i]);
        c->counter_fds[i] = -1;
    }
    c->counters_open = 0;
}

/* Why perf_event_open refused an event, for the summary (once per event). */
static void open_failed(unsigned i, int err)
{
    static _Atomic uint32_t said;
    if (atomic_fetch_or(&said, 1u << i) & (1u << i))
        return;
    const struct rec_counters *r = recorded();
    const char *name = r ? r->names[i] : "?";
    char why[160];
    if (attrs[i].type == PERF_TYPE_HARDWARE && (err == ENOENT || err == EOPNOTSUPP))
        snprintf(why, sizeof(why), "this machine has no CPU PMU that counts it "
                 "(perf_event_open: %s)", strerror(err));
    else if (err == EACCES || err == EPERM)
        snprintf(why, sizeof(why), "perf_event_open refused (%s): perf_event_paranoid, a "
                 "seccomp filter or a container forbids it", strerror(err));
    else
        snprintf(why, sizeof(why), "perf_event_open: %s", strerror(err));
    add_why(name, why);
}

/* One group of the events the kernel takes; each it refuses is said and left out (its frames'
 * value stays 0 and the summary says why), so a machine without a PMU still counts software
 * events given beside cycles. */
static bool group_open(struct fscope_collector *c)
{
    c->counters_open = 0;
    for (unsigned i = 0; i < attr_count; i++) {
        int group = c->counters_open ? c->counter_fds[__builtin_ctz(c->counters_open)] : -1;
        int fd = (int)syscall(SYS_perf_event_open, &attrs[i], 0, -1, group,
                              PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            open_failed(i, errno);
            continue;
        }
        c->counter_fds[i] = fscope_fd_high(fd);
        c->counters_open |= 1u << i;
    }
    if (!c->counters_open)
        set_state(REC_COUNTERS_UNAVAILABLE, NULL);
    return c->counters_open != 0;
}

bool counters_read(struct fscope_collector *c, struct counter_reading *ret)
{
    if (!c || !attr_count || c->counters_tried < 0)
        return false;
    if (!c->counters_tried) {
        /* One try per thread: a thread the kernel refuses is not asked every frame. */
        c->counters_tried = group_open(c) ? 1 : -1;
        if (c->counters_tried < 0)
            return false;
    }
    /* nr, time enabled, time running, then the value of each member in the order opened */
    uint64_t buf[3 + FRAME_COUNTERS];
    unsigned open = (unsigned)__builtin_popcount(c->counters_open);
    ssize_t n = read(c->counter_fds[__builtin_ctz(c->counters_open)], buf, sizeof(buf));
    if (n != (ssize_t)((3 + open) * sizeof(uint64_t)) || buf[0] != open)
        return false;
    ret->counted = c->counters_open;
    ret->enabled_ns = buf[1];
    ret->running_ns = buf[2];
    for (unsigned i = 0, member = 0; i < FRAME_COUNTERS; i++)
        ret->values[i] = c->counters_open & (1u << i) ? buf[3 + member++] : 0;
    set_state(REC_COUNTERS_ON, NULL);
    return true;
}

void counters_thread_exit(struct fscope_collector *c)
{
    if (!c)
        return;
    group_close(c);
    c->counters_tried = 0;
}
