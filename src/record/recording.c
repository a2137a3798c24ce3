#include "recording.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "framescope.h"
#include "util/config.h"
#include "util/log.h"
#include "util/private_fd.h"
#include "util/unnamed_file.h"

static struct rec_header *header;
static uint64_t arena_size;
static int arena_fd = -1;
/* A forked child's private copy of the arena: what lies past `used` may be the parent's. */
static bool arena_dirty;
static bool observed;
static struct rec_meta *meta;
static struct rec_locs *locs;

struct rec_header *recording_header(void)
{
    return header;
}

bool recording_observed(void)
{
    return observed;
}

static struct fscope_private_fd arena_id = { .fd = -1 }, stream_id = { .fd = -1 };

int recording_fd(void)
{
    return arena_fd;
}

int recording_stream_fd(void)
{
    return header && arena_fd >= 0 ? header->stream_fd : -1;
}

bool recording_fds_ours(void)
{
    return arena_id.fd >= 0 && fscope_private_fd_ours(&arena_id) &&
           (header->stream_fd < 0 || fscope_private_fd_ours(&stream_id));
}

/* Our descriptors, moved above the app's range and remembered by what they are (an app that
 * closes the fds it did not open, then opens its own, must never get ours written into). */
static void adopt_fds(void)
{
    if (arena_fd >= 0 && fscope_private_fd_adopt(&arena_id, arena_fd))
        arena_fd = arena_id.fd;
    if (header->stream_fd >= 0) {
        if (fscope_private_fd_adopt(&stream_id, header->stream_fd))
            header->stream_fd = stream_id.fd;
        else
            header->stream_fd = -1;
    }
}

void *recording_at(uint64_t offset)
{
    return (char *)header + offset;
}

static uint64_t align_up(uint64_t v)
{
    return (v + REC_ALIGN - 1) & ~(uint64_t)(REC_ALIGN - 1);
}

uint64_t recording_alloc(uint64_t size)
{
    if (!header || !size)
        return 0;
    size = align_up(size);
    uint64_t used = atomic_load_explicit(&header->used, memory_order_relaxed);
    do {
        if (size > arena_size - used) {
            atomic_fetch_add_explicit(&header->alloc_failures, 1, memory_order_relaxed);
            return 0;
        }
    } while (!atomic_compare_exchange_weak_explicit(&header->used, &used, used + size,
                                                    memory_order_relaxed, memory_order_relaxed));
    /* Arena memory past `used` is the kernel's zero pages, never written before: except in a
     * forked child, whose private view still shows what the parent writes there. */
    if (arena_dirty)
        memset(recording_at(used), 0, size);
    return used;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
#define PREFAULT_MIN (256u << 10)
#define PREFAULT_MAX (4u << 20)

/* Resident is not enough under a hypervisor that maps guest pages on the CPU's first access
 * (shadow paging): on the project's VM the first store to each populated page still cost
 * 5 us, on whichever thread made it, and 20 ns once any thread of the process had read it
 * (tests/bench-first-touch.c). So this thread reads one byte of each page. The pages lie past
 * what was allocated when it looked, but a fast writer may allocate one and store there
 * meanwhile: the read changes nothing and its value is thrown away, so ThreadSanitizer is
 * told not to watch this one function (it would report that as a race, CI did once). */
__attribute__((noinline, no_sanitize_thread))
static void touch_pages(uint64_t from, uint64_t to, uint64_t page)
{
    for (uint64_t at = from; at < to; at += page)
        (void)*(volatile const char *)recording_at(at);
}

void recording_prefault(uint64_t *done, uint64_t *last_used)
{
    if (!header)
        return;
    uint64_t used = atomic_load_explicit(&header->used, memory_order_relaxed);
    /* The first call has no rate yet (what is in use then is start-up's tables). */
    uint64_t ahead = *last_used && used > *last_used ? used - *last_used : 0;
    *last_used = used;
    ahead = ahead < PREFAULT_MIN ? PREFAULT_MIN : ahead > PREFAULT_MAX ? PREFAULT_MAX : ahead;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    /* From the first page no allocation has reached yet. */
    uint64_t from = ((used > *done ? used : *done) + page - 1) / page * page;
    uint64_t to = used + ahead > arena_size ? arena_size : used + ahead;
    to = to / page * page;
    if (to <= from)
        return;
    /* Only the page tables change: what a thread is writing there meanwhile stays. */
    if (madvise(recording_at(from), (size_t)(to - from), MADV_POPULATE_WRITE) != 0) {
        *done = arena_size; /* not this kernel (EINVAL), or no memory now: never again */
        return;
    }
    touch_pages(from, to, page);
    *done = to;
}

void *recording_object_new(uint64_t size, uint64_t *ret_offset)
{
    uint64_t offset = recording_alloc(size);
    if (!offset)
        return NULL;
    *ret_offset = offset;
    return recording_at(offset);
}

bool recording_publish(enum rec_object_type type, uint64_t offset, uint64_t size)
{
    if (!header)
        return false;
    uint32_t index = atomic_fetch_add_explicit(&header->dir_count, 1, memory_order_relaxed);
    if (index >= header->dir_capacity) {
        atomic_fetch_add_explicit(&header->alloc_failures, 1, memory_order_relaxed);
        return false;
    }
    header->dir[index].offset = offset;
    header->dir[index].size = size;
    atomic_store_explicit(&header->dir[index].type, type, memory_order_release);
    return true;
}

struct rec_meta *recording_meta(void)
{
    return meta;
}

static uint64_t loc_hash(uint64_t address)
{
    address ^= address >> 33;
    address *= 0xff51afd7ed558ccdull;
    address ^= address >> 33;
    return address;
}

void recording_loc(const struct fscope_loc *loc)
{
    if (!locs || !loc)
        return;
    uint64_t address = (uint64_t)(uintptr_t)loc;
    uint64_t start = loc_hash(address);
    for (uint32_t probe = 0; probe < REC_LOC_CAPACITY; probe++) {
        struct rec_loc *e = &locs->entries[(start + probe) % REC_LOC_CAPACITY];
        uint64_t seen = atomic_load_explicit(&e->address, memory_order_acquire);
        if (seen == address)
            return;
        if (seen == 0) {
            uint64_t expected = 0;
            if (!atomic_compare_exchange_strong(&e->address, &expected, address)) {
                if (expected == address)
                    return;
                continue;
            }
            e->line = loc->line;
            e->level = loc->level;
            e->flags = loc->flags;
            snprintf(e->name, sizeof(e->name), "%s", loc->name ? loc->name : "");
            atomic_store_explicit(&e->ready, 1, memory_order_release);
            return;
        }
    }
    atomic_fetch_add_explicit(&locs->dropped, 1, memory_order_relaxed);
}

/* An arena the observer made: its header must be ours and unclaimed. */
static bool attach_observer(const char *text)
{
    char shown[FSCOPE_ESCAPE_SIZE];
    long fd;
    struct stat st;
    bool number = fscope_config_parse_long(text, 3, 1 << 20, &fd);
    if (number && fcntl((int)fd, F_GETFD) < 0) {
        /* Closed: this program was started by the one that claimed the recording (which
         * closes it on exec). It records on its own. */
        fscope_log(FSCOPE_LOG_DEBUG, "FRAMESCOPE_RECORDING_FD=%ld is closed here: the recording "
                   "belongs to the process that started this one", fd);
        return false;
    }
    if (!number || fstat((int)fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size < sizeof(struct rec_header)) {
        fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_RECORDING_FD='%s' is not a recording framescope "
                   "run made; recording on our own",
                   fscope_config_escape(text, shown, sizeof(shown)));
        return false;
    }
    void *base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_NORESERVE, (int)fd, 0);
    if (base == MAP_FAILED)
        return false;
    struct rec_header *h = base;
    int32_t nobody = 0;
    if (memcmp(h->magic, REC_MAGIC, 8) != 0 || h->version != REC_VERSION ||
        h->size != (uint64_t)st.st_size ||
        !atomic_compare_exchange_strong(&h->owner_pid, &nobody, (int32_t)getpid())) {
        /* Another process of the run (a launcher's child) holds it: this one keeps its own. */
        munmap(base, (size_t)st.st_size);
        return false;
    }
    /* Programs this one starts get their own recording, not these descriptors. */
    fcntl((int)fd, F_SETFD, FD_CLOEXEC);
    struct stat stream_st;
    if (h->stream_fd >= 0 && fstat(h->stream_fd, &stream_st) == 0 && S_ISREG(stream_st.st_mode))
        fcntl(h->stream_fd, F_SETFD, FD_CLOEXEC);
    else
        h->stream_fd = -1;
    header = h;
    arena_size = (uint64_t)st.st_size;
    arena_fd = (int)fd;
    adopt_fds();
    observed = true;
    return true;
}

/* The file the stream thread moves sealed chunks to. -1 (said) when there is none. */
static int stream_file_create(void)
{
    int fd = unnamed_file_create(secure_getenv("TMPDIR"));
    if (fd < 0)
        fscope_log(FSCOPE_LOG_INFO, "no directory for an unnamed file (O_TMPFILE in $TMPDIR, "
                   "/var/tmp, /tmp): the recording stays in memory");
    return fd;
}

static bool create_own(void)
{
    uint64_t size = REC_ARENA_SIZE;
    int fd = sealed_memfd_create("framescope-recording", size);
    void *base = MAP_FAILED;
    if (fd >= 0)
        base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (base == MAP_FAILED) {
        /* No memfd (a sandbox): anonymous memory, still readable by our own analysis. */
        if (fd >= 0)
            close(fd);
        fd = -1;
        size = 1ull << 30;
        base = mmap(NULL, size, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base == MAP_FAILED)
            return false;
    }
    header = base;
    arena_size = size;
    arena_fd = fd;
    rec_header_init(header, size);
    atomic_store(&header->owner_pid, (int32_t)getpid());
    header->stream_fd = fd >= 0 ? stream_file_create() : -1;
    adopt_fds();
    return true;
}

void recording_forked_child(void)
{
    if (!header)
        return;
    void *remapped = arena_fd >= 0 ? mmap(header, arena_size, PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, arena_fd, 0)
                                   : MAP_FAILED;
    if (remapped == MAP_FAILED) {
        /* Anonymous shared memory cannot be made private in place: stop using it. The
         * pointers the child's recorders hold stay valid; the child's analysis is disowned. */
        return;
    }
    arena_dirty = true;
    observed = false;
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static bool init_ok;

static void init_once_fn(void)
{
    const char *text = secure_getenv("FRAMESCOPE_RECORDING_FD");
    if (!(text && *text && attach_observer(text)) && !create_own()) {
        fscope_log(FSCOPE_LOG_WARN, "cannot map memory for the recording: nothing is recorded");
        return;
    }
    FILE *comm = fopen("/proc/self/comm", "re");
    if (comm) {
        if (fgets(header->app, sizeof(header->app), comm))
            header->app[strcspn(header->app, "\n")] = '\0';
        fclose(comm);
    }
    uint64_t offset;
    meta = recording_object_new(sizeof(*meta), &offset);
    if (meta) {
        atomic_store(&meta->gpu_timing, 1);
        recording_publish(REC_OBJ_META, offset, sizeof(*meta));
    }
    locs = recording_object_new(sizeof(*locs), &offset);
    if (locs)
        recording_publish(REC_OBJ_LOCS, offset, sizeof(*locs));
    atomic_store_explicit(&header->state, REC_STATE_RECORDING, memory_order_release);
    init_ok = true;
}

bool recording_init(void)
{
    pthread_once(&init_once, init_once_fn);
    return init_ok;
}

void recording_end(void)
{
    if (header)
        atomic_store_explicit(&header->state, REC_STATE_ENDED, memory_order_release);
}
