#include "registry.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <x86intrin.h>

#include "clock.h"
#include "counters.h"
#include "kernel.h"
#include "recording.h"
#include "util/config.h"
#include "util/log.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* In the recording, so a reader sees every thread's tree and ring; NULL without one. */
static struct fscope_collector *slots;
static _Atomic unsigned slots_used; /* high-water mark of claimed slot indices */
static pthread_key_t exit_key;
static uint32_t ring_events = FSCOPE_DEFAULT_RING_EVENTS;

/* initial-exec: one pointer in static TLS, no __tls_get_addr on the hot path. */
static __thread struct fscope_collector *tls_collector __attribute__((tls_model("initial-exec")));

/* Detail overrides by path. Readers (node creation on any thread) take no lock; writers
 * serialise on override_lock and publish an entry with a release store of `used`. */
#define MAX_OVERRIDES 64
#define MAX_PATH_LEN 256
struct detail_override {
    char path[MAX_PATH_LEN];
    _Atomic int32_t level;
    _Atomic bool used;
};
static struct detail_override overrides[MAX_OVERRIDES];
static pthread_mutex_t override_lock = PTHREAD_MUTEX_INITIALIZER;

unsigned registry_slot_count(void)
{
    return atomic_load_explicit(&slots_used, memory_order_acquire);
}

uint32_t registry_ring_events(void)
{
    return ring_events;
}

static const struct detail_override *override_find(const char *path)
{
    for (unsigned i = 0; i < MAX_OVERRIDES; i++) {
        if (!atomic_load_explicit(&overrides[i].used, memory_order_acquire))
            continue;
        if (strcmp(overrides[i].path, path) == 0)
            return &overrides[i];
    }
    return NULL;
}

void registry_node_path(const struct fscope_collector *c, uint32_t index, char *buf, size_t len)
{
    uint32_t chain[FSCOPE_MAX_DEPTH + 1];
    unsigned n = 0;
    for (uint32_t i = index; i != 0 && i != FSCOPE_NODE_NONE && n <= FSCOPE_MAX_DEPTH;
         i = c->nodes[i].parent)
        chain[n++] = i;
    size_t used = 0;
    buf[0] = '\0';
    while (n-- > 0 && used < len) {
        int w = snprintf(buf + used, len - used, "%s%s", used ? "/" : "",
                         c->nodes[chain[n]].loc->name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

static void node_apply_override(struct fscope_collector *c, uint32_t index)
{
    char path[MAX_PATH_LEN];
    registry_node_path(c, index, path, sizeof(path));
    const struct detail_override *o = override_find(path);
    if (o)
        atomic_store_explicit(&c->nodes[index].detail_override,
                              atomic_load_explicit(&o->level, memory_order_relaxed),
                              memory_order_relaxed);
}

static void collector_reset(struct fscope_collector *c)
{
    atomic_store_explicit(&c->rec.node_count, 1, memory_order_relaxed);
    memset(&c->nodes[0], 0, sizeof(c->nodes[0]));
    c->nodes[0].parent = FSCOPE_NODE_NONE;
    c->nodes[0].first_child = FSCOPE_NODE_NONE;
    c->nodes[0].next_sibling = FSCOPE_NODE_NONE;
    c->nodes[0].last_hit_child = FSCOPE_NODE_NONE;
    atomic_store(&c->nodes[0].detail_override, -1);
    const struct detail_override *root = override_find("");
    if (root)
        atomic_store(&c->nodes[0].detail_override, atomic_load(&root->level));
    c->rec.nodes_exhausted = 0;
    c->depth = 0;
    c->depth_overflow = 0;
    atomic_store(&c->rec.ring_head, 0);
    c->last_span_end = 0;
    c->spans_clamped = 0;
    memset(c->block_ticks, 0, sizeof(c->block_ticks));
    c->block_span_count = 0;
    c->record_begin_ticks = 0;
    c->frame_flags = 0;
    c->mark_log = NULL;
    c->schedstat_fd = -1;
    for (unsigned i = 0; i < FRAME_COUNTERS; i++)
        c->counter_fds[i] = -1;
    c->counters_open = 0;
    c->counters_tried = 0;
    c->instant_loc = NULL;
    for (unsigned k = 0; k < FSCOPE_COUNT_COUNT; k++)
        atomic_store(&c->counters[k], 0);
}

/* Claims a slot: a free one, else the storage of a thread that exited (its data is the oldest
 * thing we may give up). Allocates the slot's tree and ring on first claim only. */
static struct fscope_collector *slot_claim(int new_state)
{
    if (!slots)
        return NULL;
    for (int pass = 0; pass < 2; pass++) {
        int want = pass == 0 ? SLOT_FREE : SLOT_EXITED;
        for (unsigned i = 0; i < FSCOPE_MAX_SLOTS; i++) {
            int expected = want;
            if (!atomic_compare_exchange_strong(&slots[i].rec.state, &expected, SLOT_CLAIMING))
                continue;
            struct fscope_collector *c = &slots[i];
            if (!c->nodes) {
                /* Both in the recording; a reader finds them through the published rec. */
                uint64_t nodes = recording_alloc(FSCOPE_TREE_NODES * sizeof(*c->nodes));
                uint64_t ring = nodes ? recording_alloc(ring_events * sizeof(*c->ring)) : 0;
                if (!ring) {
                    atomic_store(&c->rec.state, want);
                    return NULL;
                }
                c->nodes = recording_at(nodes);
                c->ring = recording_at(ring);
                c->rec.slot = i;
                c->rec.nodes_offset = nodes;
                c->rec.node_capacity = FSCOPE_TREE_NODES;
                c->rec.ring_offset = ring;
                c->rec.ring_mask = ring_events - 1;
                recording_publish(REC_OBJ_THREAD,
                                  (uint64_t)((char *)&c->rec - (char *)recording_header()),
                                  sizeof(c->rec));
            }
            collector_reset(c);
            c->rec.name[0] = '\0';
            c->rec.tid = 0;
            unsigned used = atomic_load(&slots_used);
            while (used < i + 1 && !atomic_compare_exchange_weak(&slots_used, &used, i + 1))
                ;
            atomic_store_explicit(&c->rec.state, new_state, memory_order_release);
            return c;
        }
    }
    return NULL;
}

static void thread_exited(void *arg)
{
    struct fscope_collector *c = arg;
    kernel_thread_exit(c);
    counters_thread_exit(c);
    atomic_store_explicit(&c->rec.state, SLOT_EXITED, memory_order_release);
}

static struct fscope_collector *collector_attach(void)
{
    static _Atomic bool warned;
    struct fscope_collector *c = slot_claim(SLOT_LIVE);
    if (!c) {
        if (!atomic_exchange(&warned, true))
            fscope_log(FSCOPE_LOG_WARN, "all %d collector slots are in use; zones of further "
                       "threads are not recorded", FSCOPE_MAX_SLOTS);
        return NULL;
    }
    c->rec.tid = (int)gettid();
    if (pthread_getname_np(pthread_self(), c->rec.name, sizeof(c->rec.name)) != 0)
        snprintf(c->rec.name, sizeof(c->rec.name), "thread %d", c->rec.tid);
    tls_collector = c;
    pthread_setspecific(exit_key, c);
    return c;
}

FSCOPE_EXPORT struct fscope_collector *fscope_thread_collector(void)
{
    struct fscope_collector *c = tls_collector;
    return likely(c) ? c : collector_attach();
}

static inline void ring_write(struct fscope_collector *c, uint64_t ticks,
                              const struct fscope_loc *loc)
{
    uint64_t head = atomic_load_explicit(&c->rec.ring_head, memory_order_relaxed);
    struct fscope_event *e = &c->ring[head & c->rec.ring_mask];
    e->ticks = ticks;
    e->loc = loc;
    atomic_store_explicit(&c->rec.ring_head, head + 1, memory_order_release);
}

/* Cold path: the first time a call path is seen. Uses preallocated nodes only. */
static uint32_t __attribute__((noinline)) node_create(struct fscope_collector *c, uint32_t parent,
                                                      const struct fscope_loc *loc)
{
    uint32_t index = atomic_load_explicit(&c->rec.node_count, memory_order_relaxed);
    if (index >= FSCOPE_TREE_NODES) {
        c->rec.nodes_exhausted++;
        return FSCOPE_NODE_NONE;
    }
    recording_loc(loc);
    struct zone_node *n = &c->nodes[index];
    memset(n, 0, sizeof(*n));
    n->loc = loc;
    n->parent = parent;
    n->first_child = FSCOPE_NODE_NONE;
    n->last_hit_child = FSCOPE_NODE_NONE;
    n->next_sibling = c->nodes[parent].first_child;
    atomic_store_explicit(&n->detail_override, -1, memory_order_relaxed);
    /* Publish the node before linking it, so a reader walking the tree sees it whole. */
    atomic_store_explicit(&c->rec.node_count, index + 1, memory_order_release);
    c->nodes[parent].first_child = index;
    node_apply_override(c, index);
    return index;
}

static inline uint32_t node_child(struct fscope_collector *c, uint32_t parent,
                                  const struct fscope_loc *loc)
{
    struct zone_node *p = &c->nodes[parent];
    uint32_t hit = p->last_hit_child;
    if (likely(hit != FSCOPE_NODE_NONE && c->nodes[hit].loc == loc))
        return hit;
    for (uint32_t i = p->first_child; i != FSCOPE_NODE_NONE; i = c->nodes[i].next_sibling) {
        if (c->nodes[i].loc == loc) {
            p->last_hit_child = i;
            return i;
        }
    }
    hit = node_create(c, parent, loc);
    p->last_hit_child = hit;
    return hit;
}

static inline int32_t threshold_for_children(const struct fscope_collector *c, uint32_t node,
                                             int32_t inherited)
{
    int32_t o = atomic_load_explicit(&c->nodes[node].detail_override, memory_order_relaxed);
    return o >= 0 ? o : inherited;
}

/* Pushes loc; returns the stack entry to time, or NULL when gated or untracked. */
static inline struct stack_entry *zone_push(struct fscope_collector *c,
                                            const struct fscope_loc *loc)
{
    uint32_t depth = c->depth;
    if (unlikely(depth >= FSCOPE_MAX_DEPTH)) {
        c->depth_overflow++;
        return NULL;
    }
    int32_t threshold;
    uint32_t parent;
    if (depth) {
        threshold = c->stack[depth - 1].child_threshold;
        parent = c->stack[depth - 1].node;
    } else {
        threshold = threshold_for_children(c, 0, FSCOPE_DEFAULT_DETAIL);
        parent = 0;
    }
    struct stack_entry *e = &c->stack[depth];
    c->depth = depth + 1;
    if ((int32_t)loc->level > threshold) {
        e->node = FSCOPE_NODE_NONE;
        e->child_threshold = -1; /* nothing inside a gated zone is recorded */
        return NULL;
    }
    uint32_t node = node_child(c, parent, loc);
    e->node = node;
    if (unlikely(node == FSCOPE_NODE_NONE)) {
        e->child_threshold = -1;
        return NULL;
    }
    e->child_threshold = threshold_for_children(c, node, threshold);
    return e;
}

/* Pops; returns the entry to close, or NULL when there is nothing recorded to close. */
static inline struct stack_entry *zone_pop(struct fscope_collector *c)
{
    if (unlikely(c->depth_overflow)) {
        c->depth_overflow--;
        return NULL;
    }
    if (unlikely(c->depth == 0))
        return NULL;
    struct stack_entry *e = &c->stack[--c->depth];
    return e->node == FSCOPE_NODE_NONE ? NULL : e;
}

static inline void zone_account(struct fscope_collector *c, const struct stack_entry *e,
                                uint64_t end)
{
    uint64_t duration = end - e->start;
    struct zone_node *n = &c->nodes[e->node];
    n->calls++;
    n->inclusive_ticks += duration;
    if (duration > n->max_ticks)
        n->max_ticks = duration;
    c->nodes[n->parent].child_ticks += duration;
}

/* The hot path, instantiated once per clock and chosen by ifunc at load time. */
#define DEFINE_ZONE_FUNCTIONS(suffix, read_clock)                                              \
    static void zone_begin_##suffix(const struct fscope_loc *loc)                              \
    {                                                                                          \
        struct fscope_collector *c = tls_collector;                                           \
        if (unlikely(!c) && !(c = collector_attach()))                                         \
            return;                                                                            \
        struct stack_entry *e = zone_push(c, loc);                                             \
        if (!e)                                                                                \
            return;                                                                            \
        uint64_t now = read_clock();                                                           \
        e->start = now;                                                                        \
        ring_write(c, now, loc);                                                               \
    }                                                                                          \
    static void zone_end_##suffix(void)                                                        \
    {                                                                                          \
        struct fscope_collector *c = tls_collector;                                           \
        if (unlikely(!c))                                                                      \
            return;                                                                            \
        struct stack_entry *e = zone_pop(c);                                                   \
        if (!e)                                                                                \
            return;                                                                            \
        uint64_t now = read_clock();                                                           \
        ring_write(c, now, NULL);                                                              \
        zone_account(c, e, now);                                                               \
    }

static inline uint64_t read_tsc(void)
{
    return __rdtsc();
}

static inline uint64_t read_mono(void)
{
    return (uint64_t)clock_mono_ns();
}

DEFINE_ZONE_FUNCTIONS(tsc, read_tsc)
DEFINE_ZONE_FUNCTIONS(mono, read_mono)

FSCOPE_IFUNC_RESOLVER static bool resolver_has_invariant_tsc(void)
{
    unsigned eax, ebx, ecx, edx;
    __asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(0x80000000u), "c"(0));
    if (eax < 0x80000007u)
        return false;
    __asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(0x80000007u), "c"(0));
    return (edx >> 8) & 1;
}

FSCOPE_IFUNC_RESOLVER static void (*resolve_zone_begin(void))(const struct fscope_loc *)
{
    return resolver_has_invariant_tsc() ? zone_begin_tsc : zone_begin_mono;
}

FSCOPE_IFUNC_RESOLVER static void (*resolve_zone_end(void))(void)
{
    return resolver_has_invariant_tsc() ? zone_end_tsc : zone_end_mono;
}

FSCOPE_EXPORT void fscope_zone_begin(const struct fscope_loc *loc)
    __attribute__((ifunc("resolve_zone_begin")));
FSCOPE_EXPORT void fscope_zone_end(void) __attribute__((ifunc("resolve_zone_end")));

FSCOPE_EXPORT uint64_t fscope_block_begin(const struct fscope_loc *loc)
{
    uint64_t now = fscope_now();
    struct fscope_collector *c = fscope_thread_collector();
    if (!c)
        return now;
    struct stack_entry *e = zone_push(c, loc);
    if (e) {
        e->start = now;
        ring_write(c, now, loc);
    }
    return now;
}

FSCOPE_EXPORT uint64_t fscope_block_end(enum fscope_block kind, uint64_t start)
{
    uint64_t now = fscope_now();
    struct fscope_collector *c = tls_collector;
    if (!c)
        return now - start;
    struct stack_entry *e = zone_pop(c);
    if (e) {
        ring_write(c, now, NULL);
        zone_account(c, e, now);
    }
    c->block_ticks[kind] += now - start;
    if (c->block_span_count < FSCOPE_THREAD_BLOCK_SPANS)
        c->block_spans[c->block_span_count++] =
            (struct fscope_block_span){ .start = start, .end = now, .kind = (uint8_t)kind };
    switch (kind) {
    case FSCOPE_BLOCK_FENCE:
        fscope_collector_count(c, FSCOPE_COUNT_WAIT_FENCE_TICKS, now - start);
        break;
    case FSCOPE_BLOCK_SEMAPHORE:
        fscope_collector_count(c, FSCOPE_COUNT_WAIT_SEMAPHORE_TICKS, now - start);
        break;
    case FSCOPE_BLOCK_IDLE:
        fscope_collector_count(c, FSCOPE_COUNT_WAIT_IDLE_TICKS, now - start);
        break;
    default:
        break;
    }
    return now - start;
}

FSCOPE_EXPORT uint64_t fscope_block_end_uncharged(void)
{
    uint64_t now = fscope_now();
    struct fscope_collector *c = tls_collector;
    if (!c)
        return now;
    struct stack_entry *e = zone_pop(c);
    if (e) {
        ring_write(c, now, NULL);
        zone_account(c, e, now);
    }
    return now;
}

FSCOPE_EXPORT void fscope_thread_take_block_spans(uint64_t ret[FSCOPE_BLOCK_COUNT],
                                                  struct fscope_block_span *spans,
                                                  uint32_t *ret_span_count)
{
    struct fscope_collector *c = fscope_thread_collector();
    if (!c) {
        memset(ret, 0, sizeof(uint64_t) * FSCOPE_BLOCK_COUNT);
        if (ret_span_count)
            *ret_span_count = 0;
        return;
    }
    memcpy(ret, c->block_ticks, sizeof(c->block_ticks));
    memset(c->block_ticks, 0, sizeof(c->block_ticks));
    if (spans && ret_span_count) {
        memcpy(spans, c->block_spans, c->block_span_count * sizeof(*spans));
        *ret_span_count = c->block_span_count;
    }
    c->block_span_count = 0;
}

FSCOPE_EXPORT void fscope_thread_take_blocks(uint64_t ret[FSCOPE_BLOCK_COUNT])
{
    fscope_thread_take_block_spans(ret, NULL, NULL);
}

FSCOPE_EXPORT void fscope_thread_add_frame_flags(uint8_t flags)
{
    struct fscope_collector *c = fscope_thread_collector();
    if (c)
        c->frame_flags |= flags;
}

FSCOPE_EXPORT uint8_t fscope_thread_take_frame_flags(void)
{
    struct fscope_collector *c = fscope_thread_collector();
    if (!c)
        return 0;
    uint8_t flags = c->frame_flags;
    c->frame_flags = 0;
    return flags;
}

FSCOPE_EXPORT void fscope_instant(const struct fscope_loc *loc, uint64_t ticks)
{
    struct fscope_collector *c = fscope_thread_collector();
    if (c) {
        /* A thread marks the same instant (a present) again and again: enter it once. */
        if (c->instant_loc != loc) {
            recording_loc(loc);
            c->instant_loc = loc;
        }
        ring_write(c, ticks, loc);
    }
}

FSCOPE_EXPORT void fscope_count(enum fscope_counter k, uint64_t n)
{
    struct fscope_collector *c = fscope_thread_collector();
    if (c)
        fscope_collector_count(c, k, n);
}

FSCOPE_EXPORT void fscope_count_totals(uint64_t ret[FSCOPE_COUNT_COUNT])
{
    memset(ret, 0, sizeof(uint64_t) * FSCOPE_COUNT_COUNT);
    unsigned n = registry_slot_count();
    for (unsigned i = 0; i < n; i++) {
        int state = atomic_load_explicit(&slots[i].rec.state, memory_order_acquire);
        if (state != SLOT_LIVE && state != SLOT_EXITED)
            continue;
        for (unsigned k = 0; k < FSCOPE_COUNT_COUNT; k++)
            ret[k] += atomic_load_explicit(&slots[i].counters[k], memory_order_relaxed);
    }
}

FSCOPE_EXPORT void fscope_thread_name(const char *name)
{
    struct fscope_collector *c = fscope_thread_collector();
    if (c && name)
        snprintf(c->rec.name, sizeof(c->rec.name), "%s", name);
}

FSCOPE_EXPORT struct fscope_collector *fscope_external_create(const char *name)
{
    struct fscope_collector *c = slot_claim(SLOT_EXTERNAL);
    if (c)
        snprintf(c->rec.name, sizeof(c->rec.name), "%s", name);
    return c;
}

FSCOPE_EXPORT void fscope_external_rename(struct fscope_collector *c, const char *name)
{
    if (c)
        snprintf(c->rec.name, sizeof(c->rec.name), "%s", name);
}

FSCOPE_EXPORT void fscope_external_span(struct fscope_collector *c, const struct fscope_loc *loc,
                                        uint64_t begin, uint64_t end)
{
    if (!c)
        return;
    if (begin < c->last_span_end) {
        begin = c->last_span_end;
        c->spans_clamped++;
    }
    if (end < begin)
        end = begin;
    uint32_t node = node_child(c, 0, loc);
    if (node == FSCOPE_NODE_NONE)
        return;
    struct stack_entry e = { .node = node, .start = begin };
    ring_write(c, begin, loc);
    ring_write(c, end, NULL);
    zone_account(c, &e, end);
    c->last_span_end = end;
}

/* Walks every node of every slot and applies the override for path. */
static void overrides_apply_everywhere(const char *path, int32_t level)
{
    unsigned n = registry_slot_count();
    char node_path[MAX_PATH_LEN];
    for (unsigned s = 0; s < n; s++) {
        struct fscope_collector *c = &slots[s];
        int state = atomic_load_explicit(&c->rec.state, memory_order_acquire);
        if (state != SLOT_LIVE && state != SLOT_EXITED)
            continue;
        uint32_t count = atomic_load_explicit(&c->rec.node_count, memory_order_acquire);
        for (uint32_t i = 0; i < count; i++) {
            registry_node_path(c, i, node_path, sizeof(node_path));
            if (strcmp(node_path, path) == 0)
                atomic_store_explicit(&c->nodes[i].detail_override, level, memory_order_relaxed);
        }
    }
}

FSCOPE_EXPORT int fscope_detail_set(const char *path, int level)
{
    if (!path || level < -1 || level > FSCOPE_LEVEL_INNER || strlen(path) >= MAX_PATH_LEN)
        return -EINVAL;
    pthread_mutex_lock(&override_lock);
    struct detail_override *o = (struct detail_override *)override_find(path);
    if (!o) {
        for (unsigned i = 0; i < MAX_OVERRIDES && !o; i++)
            if (!atomic_load(&overrides[i].used))
                o = &overrides[i];
        if (!o) {
            pthread_mutex_unlock(&override_lock);
            return -ENOSPC;
        }
        snprintf(o->path, sizeof(o->path), "%s", path);
        atomic_store(&o->level, level);
        atomic_store_explicit(&o->used, true, memory_order_release);
    } else {
        atomic_store(&o->level, level);
    }
    overrides_apply_everywhere(path, level);
    pthread_mutex_unlock(&override_lock);
    return 0;
}

/* Applies every good PATH=LEVEL entry. The bad ones, however many (a generated value can hold
 * thousands), make one warning that counts them and shows the first. */
static void detail_from_environment(void)
{
    const char *value = secure_getenv("FRAMESCOPE_DETAIL");
    if (!value || !*value)
        return;
    char *copy = strdup(value);
    if (!copy) {
        fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_DETAIL: out of memory; no override applied");
        return;
    }
    unsigned long entries = 0, bad = 0;
    char first_bad[FSCOPE_ESCAPE_SIZE] = "";
    char first_reason[64] = "";
    char *save = NULL;
    for (char *token = strtok_r(copy, ",", &save); token; token = strtok_r(NULL, ",", &save)) {
        entries++;
        char *eq = strrchr(token, '=');
        long level;
        bool parsed = eq && fscope_config_parse_long(eq + 1, 0, FSCOPE_LEVEL_INNER, &level);
        int r = -EINVAL;
        if (parsed) {
            *eq = '\0';
            r = fscope_detail_set(token, (int)level);
            *eq = '='; /* whole again, for the warning */
        }
        if (r == 0 || bad++ > 0)
            continue;
        fscope_config_escape(token, first_bad, sizeof(first_bad));
        if (!parsed)
            snprintf(first_reason, sizeof(first_reason), "want PATH=LEVEL, LEVEL 0..%d",
                     FSCOPE_LEVEL_INNER);
        else if (r == -ENOSPC)
            snprintf(first_reason, sizeof(first_reason), "more than %d paths", MAX_OVERRIDES);
        else
            snprintf(first_reason, sizeof(first_reason), "a path of %d bytes or more",
                     MAX_PATH_LEN);
    }
    free(copy);
    if (bad)
        fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_DETAIL: ignored %lu of %lu entries; the first: "
                   "'%s' (%s)", bad, entries, first_bad, first_reason);
}

static void ring_size_from_environment(void)
{
    const char *value = secure_getenv("FRAMESCOPE_RING_EVENTS");
    if (!value)
        return;
    long events;
    if (!fscope_config_parse_long(value, 64, 1L << 24, &events)) {
        char shown[FSCOPE_ESCAPE_SIZE];
        fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_RING_EVENTS='%s' is not a whole number in "
                   "64..16777216; using %u", fscope_config_escape(value, shown, sizeof(shown)),
                   FSCOPE_DEFAULT_RING_EVENTS);
        return;
    }
    uint32_t pow2 = 64;
    while (pow2 < (uint32_t)events)
        pow2 <<= 1;
    ring_events = pow2;
}

/* Every FRAMESCOPE_* variable any part of framescope reads; anything else is a typo to flag. */
static const char *const known_variables[] = {
    "FRAMESCOPE_LOG", "FRAMESCOPE_DETAIL", "FRAMESCOPE_RING_EVENTS", "FRAMESCOPE_SUMMARY",
    "FRAMESCOPE_OUTPUT", "FRAMESCOPE_GPU", "FRAMESCOPE_GPU_ZONES", "FRAMESCOPE_GPU_SAMPLE",
    "FRAMESCOPE_PIPELINE_STATS", "FRAMESCOPE_TRACE_WINDOW", "FRAMESCOPE_KEEP_MINUTES",
    "FRAMESCOPE_CAP", "FRAMESCOPE_PRESENT",
    "FRAMESCOPE_TEST_FAULT", "FRAMESCOPE_RECORDING_FD", "FRAMESCOPE_KERNEL",
    "FRAMESCOPE_WAKEUPS", "FRAMESCOPE_COUNTERS", "FRAMESCOPE_DAEMON",
    "FRAMESCOPE_TEST_DRM_FDINFO", "FRAMESCOPE_TEST_WAKEUPS_GAP",
};

static void warn_unknown_variables(void)
{
    extern char **environ;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "FRAMESCOPE_", 11) != 0)
            continue;
        size_t len = strcspn(*e, "=");
        bool known = false;
        for (unsigned i = 0; i < sizeof(known_variables) / sizeof(known_variables[0]); i++)
            known |= strlen(known_variables[i]) == len && strncmp(*e, known_variables[i], len) == 0;
        if (known)
            continue;
        /* The name is the user's too: one longer than an echo shows is cut here, and the
         * escape marks the cut. */
        char name[FSCOPE_ESCAPE_INPUT_MAX + 2], shown[FSCOPE_ESCAPE_SIZE];
        snprintf(name, sizeof(name), "%.*s", (int)len, *e);
        fscope_log(FSCOPE_LOG_WARN, "unknown variable %s ignored (see framescope(1) for the "
                   "FRAMESCOPE_* variables)", fscope_config_escape(name, shown, sizeof(shown)));
    }
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_once_fn(void)
{
    log_init();
    warn_unknown_variables();
    if (recording_init()) {
        uint64_t offset = recording_alloc(FSCOPE_MAX_SLOTS * sizeof(*slots));
        slots = offset ? recording_at(offset) : NULL;
    }
    clock_init();
    pthread_key_create(&exit_key, thread_exited);
    ring_size_from_environment();
    detail_from_environment();
    kernel_init();
}

void registry_init(void)
{
    pthread_once(&init_once, init_once_fn);
}

__attribute__((constructor)) static void registry_constructor(void)
{
    registry_init();
}
