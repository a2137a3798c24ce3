#include "engine.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chunked.h"
#include "recording.h"
#include "util/private_fd.h"

static struct rec_engine *engine;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
/* One lock per array: a recording ended on one thread never waits for another's allocation. */
static pthread_mutex_t recordings_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pool_ops_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t memory_lock = PTHREAD_MUTEX_INITIALIZER;

static void engine_create(void)
{
    uint64_t offset;
    struct rec_engine *e = recording_object_new(sizeof(*e), &offset);
    if (!e)
        return;
    chunked_init(&e->recordings, sizeof(struct cmd_recording));
    chunked_init(&e->pool_ops, sizeof(struct pool_op));
    chunked_init(&e->memory, sizeof(struct memory_event));
    chunked_init(&e->budgets, sizeof(struct budget_sample));
    chunked_init(&e->gauges, sizeof(struct gauge_sample));
    recording_publish(REC_OBJ_ENGINE, offset, sizeof(*e));
    engine = e;
}

FSCOPE_EXPORT struct rec_engine *fscope_engine(void)
{
    pthread_once(&engine_once, engine_create);
    return engine;
}

static void append(struct chunked *a, pthread_mutex_t *lock, const void *item, size_t size)
{
    pthread_mutex_lock(lock);
    void *slot = chunked_next(a);
    if (slot) {
        memcpy(slot, item, size);
        chunked_publish(a);
    }
    pthread_mutex_unlock(lock);
}

FSCOPE_EXPORT void fscope_engine_recording(const struct cmd_recording *r)
{
    struct rec_engine *e = fscope_engine();
    if (e)
        append(&e->recordings, &recordings_lock, r, sizeof(*r));
}

FSCOPE_EXPORT void fscope_engine_pool_op(const struct pool_op *op)
{
    struct rec_engine *e = fscope_engine();
    if (e)
        append(&e->pool_ops, &pool_ops_lock, op, sizeof(*op));
}

FSCOPE_EXPORT void fscope_engine_memory(const struct memory_event *m)
{
    struct rec_engine *e = fscope_engine();
    if (e)
        append(&e->memory, &memory_lock, m, sizeof(*m));
}

FSCOPE_EXPORT void fscope_engine_memory_props(const struct rec_memory_props *props)
{
    struct rec_engine *e = fscope_engine();
    if (!e)
        return;
    pthread_mutex_lock(&memory_lock);
    uint32_t n = atomic_load(&e->memory_props_count);
    uint32_t i = 0;
    while (i < n && e->memory_props[i].device_id != props->device_id)
        i++;
    if (i < REC_ENGINE_DEVICES) {
        e->memory_props[i] = *props;
        if (i == n)
            atomic_store_explicit(&e->memory_props_count, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&memory_lock);
}

FSCOPE_EXPORT struct bind_site *fscope_engine_site(uint64_t key, uint32_t kind,
                                                   uint32_t device_id, uint64_t handle,
                                                   const char *name)
{
    struct rec_engine *e = fscope_engine();
    if (!e || !key)
        return NULL;
    uint64_t h = key ^ (key >> 29);
    for (unsigned probe = 0; probe < REC_BIND_SITES; probe++) {
        struct bind_site *s = &e->sites[(h + probe) % REC_BIND_SITES];
        uint64_t found = atomic_load_explicit(&s->key, memory_order_acquire);
        if (found == 0) {
            uint64_t expected = 0;
            if (atomic_compare_exchange_strong(&s->key, &expected, key)) {
                s->kind = kind;
                s->device_id = device_id;
                s->handle = handle;
                snprintf(s->name, sizeof(s->name), "%s", name ? name : "");
                atomic_store_explicit(&s->ready, 1, memory_order_release);
                return s;
            }
            found = expected;
        }
        if (found == key)
            return s; /* its fields may still be being written: the counts are what we add */
    }
    atomic_fetch_add_explicit(&e->sites_full, 1, memory_order_relaxed);
    return NULL;
}

FSCOPE_EXPORT struct descriptor_pool_entry *fscope_engine_descriptor_pool(uint32_t device_id,
                                                                         uint64_t handle,
                                                                         uint32_t max_sets,
                                                                         bool free_individual)
{
    struct rec_engine *e = fscope_engine();
    if (!e)
        return NULL;
    uint32_t i = atomic_fetch_add(&e->descriptor_pool_count, 1);
    if (i >= REC_DESCRIPTOR_POOLS) {
        atomic_store(&e->descriptor_pool_count, REC_DESCRIPTOR_POOLS);
        atomic_fetch_add_explicit(&e->descriptor_pools_untracked, 1, memory_order_relaxed);
        return NULL;
    }
    struct descriptor_pool_entry *p = &e->descriptor_pools[i];
    p->device_id = device_id;
    p->max_sets = max_sets;
    p->free_individual = free_individual;
    atomic_store_explicit(&p->handle, handle, memory_order_release);
    return p;
}

/* ---- the sampler's tick ---- */

#define BUDGET_PROBES 8
static struct {
    fscope_budget_probe probe;
    void *ctx;
} probes[BUDGET_PROBES];
static pthread_mutex_t probes_lock = PTHREAD_MUTEX_INITIALIZER;

FSCOPE_EXPORT void fscope_engine_budget_probe_add(fscope_budget_probe probe, void *ctx)
{
    pthread_mutex_lock(&probes_lock);
    for (unsigned i = 0; i < BUDGET_PROBES; i++)
        if (!probes[i].probe) {
            probes[i].probe = probe;
            probes[i].ctx = ctx;
            break;
        }
    pthread_mutex_unlock(&probes_lock);
}

FSCOPE_EXPORT void fscope_engine_budget_probe_remove(void *ctx)
{
    pthread_mutex_lock(&probes_lock);
    for (unsigned i = 0; i < BUDGET_PROBES; i++)
        if (probes[i].ctx == ctx)
            probes[i].probe = NULL;
    pthread_mutex_unlock(&probes_lock);
}

static uint64_t read_rss(void)
{
    static int fd = -2;
    static long page;
    if (fd == -2) {
        fd = fscope_fd_high(open("/proc/self/statm", O_RDONLY | O_CLOEXEC));
        page = sysconf(_SC_PAGESIZE);
    }
    char buf[128];
    ssize_t n = fd >= 0 ? pread(fd, buf, sizeof(buf) - 1, 0) : -1;
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    unsigned long long size, resident;
    if (sscanf(buf, "%llu %llu", &size, &resident) != 2)
        return 0;
    return (uint64_t)resident * (uint64_t)page;
}

void engine_sample(uint64_t ticks)
{
    struct rec_engine *e = fscope_engine();
    if (!e)
        return;
    struct gauge_sample *g = chunked_next(&e->gauges);
    if (g) {
        g->ticks = ticks;
        g->rss_bytes = read_rss();
        uint32_t n = atomic_load_explicit(&e->descriptor_pool_count, memory_order_acquire);
        for (uint32_t i = 0; i < n && i < REC_DESCRIPTOR_POOLS; i++) {
            struct descriptor_pool_entry *p = &e->descriptor_pools[i];
            if (!atomic_load_explicit(&p->handle, memory_order_acquire) ||
                atomic_load_explicit(&p->destroyed, memory_order_relaxed))
                continue;
            int64_t live = atomic_load_explicit(&p->live, memory_order_relaxed);
            g->descriptor_sets += live > 0 ? (uint64_t)live : 0;
            g->descriptor_capacity += p->max_sets;
            g->descriptor_pools++;
        }
        chunked_publish(&e->gauges);
    }
    pthread_mutex_lock(&probes_lock);
    for (unsigned i = 0; i < BUDGET_PROBES; i++) {
        if (!probes[i].probe)
            continue;
        struct budget_sample *b = chunked_next(&e->budgets);
        if (!b)
            break;
        /* A probe that failed left its slot unpublished, to be handed out again. */
        memset(b, 0, sizeof(*b));
        b->ticks = ticks;
        if (probes[i].probe(probes[i].ctx, b))
            chunked_publish(&e->budgets);
    }
    pthread_mutex_unlock(&probes_lock);
}
