/* Command recording: what each command buffer records and what it costs (layers/README in
 * DESIGN.md's terms: the engine's own cost). Per command buffer: the time from
 * vkBeginCommandBuffer to vkEndCommandBuffer, the commands, draws and geometry it records, and
 * its binds, with those that set what was already bound (redundant state), by the debug label
 * or pipeline they were recorded under. Counts are charged to the frame when the command
 * buffer is submitted, so one recorded once and submitted every frame is counted every frame;
 * the recording itself is written to the capture when it ends. Command pool work (resets,
 * frees, trims) is timed and attributed to its pool.
 *
 * The per-command path is a thread-local compare (the command buffer the thread touched last),
 * a few compares and stores into that command buffer's state, and the call down: no lock, no
 * allocation, no library call. The app externally synchronises a command buffer's recording
 * and submission, so its state needs no lock either. */
#include <stdlib.h>
#include <string.h>

#include "layer.h"
#include "record/clock.h"
#include "record/engine.h"
#include "record/meta.h"

#define likely(x) __builtin_expect(!!(x), 1)

/* What the state of one command buffer tracks to tell a redundant bind. More vertex bindings
 * or descriptor sets than these are compared no further: binds there count as not redundant,
 * so a redundancy reported is always real. */
#define BIND_POINTS 3      /* graphics, compute, ray tracing */
#define VERTEX_BINDINGS 8
#define BOUND_SETS 8
#define CB_SITES 8         /* sites one recording charges apart; the rest go to the last */
#define LABEL_DEPTH 16

/* Per-recording counts, charged at submission, by fscope counter. */
enum cb_count {
    CB_DRAWS,
    CB_DISPATCHES,
    CB_RENDER_PASSES,
    CB_VERTICES,
    CB_INDICES,
    CB_INSTANCES,
    CB_INDIRECT,
    CB_BINDS,
    CB_REDUNDANT = CB_BINDS + BIND_KINDS,
    CB_COUNTS = CB_REDUNDANT + BIND_KINDS,
};
static const enum fscope_counter cb_counter[CB_COUNTS] = {
    [CB_DRAWS] = FSCOPE_COUNT_DRAWS,
    [CB_DISPATCHES] = FSCOPE_COUNT_DISPATCHES,
    [CB_RENDER_PASSES] = FSCOPE_COUNT_RENDER_PASSES,
    [CB_VERTICES] = FSCOPE_COUNT_VERTICES,
    [CB_INDICES] = FSCOPE_COUNT_INDICES,
    [CB_INSTANCES] = FSCOPE_COUNT_INSTANCES,
    [CB_INDIRECT] = FSCOPE_COUNT_INDIRECT_DRAWS,
#define K(k) [CB_BINDS + k] = FSCOPE_COUNT_BINDS + k, [CB_REDUNDANT + k] = FSCOPE_COUNT_REDUNDANT + k
    K(0), K(1), K(2), K(3), K(4), K(5),
#undef K
};
_Static_assert(BIND_KINDS == 6, "cb_counter lists six bind kinds");

/* Dynamic state, one value each (a hash of what was set). */
enum dynamic_state {
    DYN_VIEWPORT,
    DYN_SCISSOR,
    DYN_LINE_WIDTH,
    DYN_DEPTH_BIAS,
    DYN_BLEND_CONSTANTS,
    DYN_DEPTH_BOUNDS,
    DYN_STENCIL_COMPARE,
    DYN_STENCIL_WRITE,
    DYN_STENCIL_REFERENCE,
    DYN_CULL_MODE,
    DYN_FRONT_FACE,
    DYN_TOPOLOGY,
    DYN_DEPTH_TEST,
    DYN_DEPTH_WRITE,
    DYN_DEPTH_COMPARE,
    DYN_VIEWPORT_COUNT,
    DYN_SCISSOR_COUNT,
    DYN_STATES,
};

struct cb_site {
    struct bind_site *site; /* NULL: binds outside any label and pipeline */
    uint32_t binds[BIND_KINDS], redundant[BIND_KINDS];
};

struct cb_state {
    struct device_data *dev; /* set at each begin: the handle may come back on another device */
    struct cb_zones *zones;  /* gpu_zones.c's, made at allocation, kept for the handle */
    VkCommandPool pool;
    bool secondary;
    bool begun;              /* between begin and end */
    uint8_t flags;           /* CMD_RECORDING_* of the recording */
    uint64_t begin_ticks;
    uint32_t commands;
    uint64_t counts[CB_COUNTS];

    /* Where binds are charged: the sites seen in this recording, and what decides the current
     * one (the innermost label, or outside labels the pipeline bound last). Binds are counted
     * in counts[] only; when the site changes, what was counted since site_mark goes to the
     * site it was (site_flush), so a bind costs no site lookup. */
    struct cb_site sites[CB_SITES];
    uint32_t site_count;
    uint64_t site_mark[2 * BIND_KINDS];
    struct bind_site *labels[LABEL_DEPTH];
    uint32_t label_depth;
    VkPipeline site_pipeline;

    /* What is bound now; a buffer or set of VK_NULL_HANDLE is not known (a null binding the
     * app makes is so never called redundant), which spares the fast path a bit mask. */
    VkPipeline pipeline[BIND_POINTS];
    struct {
        VkBuffer buffer;
        VkDeviceSize offset, size, stride;
    } vertex[VERTEX_BINDINGS];
    VkBuffer index_buffer;
    VkDeviceSize index_offset;
    VkIndexType index_type;
    struct {
        VkDescriptorSet set;
        VkPipelineLayout layout;
        uint64_t call; /* its dynamic offsets (sets_call) */
    } sets[BIND_POINTS][BOUND_SETS];
    /* The layout every known set was bound with (VK_NULL_HANDLE: not one): a bind with it
     * disturbs none of them, so the check for those it disturbs is skipped. */
    VkPipelineLayout sets_layout[BIND_POINTS];
    uint64_t pushed[BIND_POINTS][BOUND_SETS]; /* push descriptor writes, hashed; 0: unknown */
    uint64_t dynamic[DYN_STATES];
    uint32_t dynamic_known;
};

/* ---- the table: command buffer handle to its state ----
 * Open addressing keyed by handle, lock-free; an entry's state is made once and kept for the
 * handle (zeroed when freed), so a pointer to it stays valid for the life of the layer. */

#define CB_TABLE_SIZE 16384 /* power of two */

struct cb_entry {
    _Atomic(VkCommandBuffer) cb;
    struct cb_state *_Atomic state;
};

static struct cb_entry cb_table[CB_TABLE_SIZE];
static _Atomic uint64_t cb_table_full, cb_state_failed;

static struct cb_entry *entry_of(VkCommandBuffer cb, bool insert)
{
    uintptr_t h = (uintptr_t)cb;
    h ^= h >> 17;
    h *= UINT64_C(0xed5ad4bb);
    h ^= h >> 11;
    for (unsigned probe = 0; probe < 64; probe++) {
        struct cb_entry *e = &cb_table[(h + probe) & (CB_TABLE_SIZE - 1)];
        VkCommandBuffer key = atomic_load_explicit(&e->cb, memory_order_acquire);
        if (key == cb)
            return e;
        if (key == VK_NULL_HANDLE) {
            if (!insert)
                return NULL;
            VkCommandBuffer expected = VK_NULL_HANDLE;
            if (atomic_compare_exchange_strong(&e->cb, &expected, cb) || expected == cb)
                return e;
        }
    }
    if (insert)
        atomic_fetch_add_explicit(&cb_table_full, 1, memory_order_relaxed);
    return NULL;
}

/* The state of cb, made when insert; NULL when the table is full or memory ran out. */
static struct cb_state *state_make(VkCommandBuffer cb, bool insert)
{
    struct cb_entry *e = entry_of(cb, insert);
    if (!e)
        return NULL;
    struct cb_state *s = atomic_load_explicit(&e->state, memory_order_acquire);
    if (s || !insert)
        return s;
    s = calloc(1, sizeof(*s));
    if (!s) {
        atomic_fetch_add_explicit(&cb_state_failed, 1, memory_order_relaxed);
        return NULL;
    }
    struct cb_state *expected = NULL;
    if (!atomic_compare_exchange_strong(&e->state, &expected, s)) {
        free(s);
        s = expected;
    }
    return s;
}

/* The command buffer this thread touched last: a recording thread records one at a time, so
 * nearly every command finds its state here. */
static __thread struct {
    VkCommandBuffer cb;
    struct cb_state *state;
} last __attribute__((tls_model("initial-exec")));

static inline struct cb_state *state_of(VkCommandBuffer cb)
{
    if (likely(last.cb == cb))
        return last.state;
    struct cb_state *s = state_make(cb, false);
    if (s && s->dev) {
        last.cb = cb;
        last.state = s;
    }
    return s && s->dev ? s : NULL;
}

struct cb_zones **commands_cb_zones(VkCommandBuffer cb, bool insert)
{
    struct cb_state *s = state_make(cb, insert);
    return s ? &s->zones : NULL;
}

void commands_cb_zones_each(void (*fn)(struct cb_zones *z, const void *arg), const void *arg)
{
    for (unsigned i = 0; i < CB_TABLE_SIZE; i++) {
        struct cb_state *s = atomic_load_explicit(&cb_table[i].state, memory_order_acquire);
        if (s && s->zones)
            fn(s->zones, arg);
    }
}

/* ---- sites ---- */

/* A 64-bit mix, a word at a time: a bind's key is a few words, hashed on the recording path,
 * so a byte-wise hash (eight multiplies for two words) would cost more than the compare. */
static inline uint64_t hash_word(uint64_t h, uint64_t word)
{
    h = (h ^ word) * UINT64_C(0x9e3779b97f4a7c15);
    return h ^ (h >> 29);
}

static uint64_t hash_bytes(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t word;
    for (; len >= 8; len -= 8, p += 8) {
        memcpy(&word, p, 8);
        h = hash_word(h, word);
    }
    if (len) {
        word = 0;
        memcpy(&word, p, len);
        h = hash_word(h, word ^ ((uint64_t)len << 56));
    }
    return h;
}
#define HASH_SEED UINT64_C(0xcbf29ce484222325)

/* The recording's slot for site (NULL: none), found or added; the last slot takes the rest. */
static struct cb_site *site_slot(struct cb_state *s, struct bind_site *site)
{
    for (uint32_t i = 0; i < s->site_count; i++)
        if (s->sites[i].site == site)
            return &s->sites[i];
    if (s->site_count < CB_SITES) {
        struct cb_site *slot = &s->sites[s->site_count++];
        memset(slot, 0, sizeof(*slot));
        slot->site = site;
        return slot;
    }
    return &s->sites[CB_SITES - 1];
}

/* The binds counted since the site last changed go to the site they were recorded under. */
static void site_flush(struct cb_state *s)
{
    uint64_t *mark = s->site_mark;
    const uint64_t *now = &s->counts[CB_BINDS];
    uint64_t any = 0;
    for (unsigned k = 0; k < 2 * BIND_KINDS; k++)
        any |= now[k] - mark[k];
    if (any) {
        struct bind_site *site = NULL;
        if (s->label_depth)
            site = s->label_depth <= LABEL_DEPTH ? s->labels[s->label_depth - 1] : NULL;
        else if (s->site_pipeline)
            site = fscope_engine_site(
                hash_bytes(HASH_SEED ^ BIND_SITE_PIPELINE, &s->site_pipeline,
                           sizeof(s->site_pipeline)) | 1,
                BIND_SITE_PIPELINE, s->dev->id, (uint64_t)s->site_pipeline, NULL);
        struct cb_site *slot = site_slot(s, site);
        for (unsigned k = 0; k < BIND_KINDS; k++) {
            slot->binds[k] += (uint32_t)(now[k] - mark[k]);
            slot->redundant[k] += (uint32_t)(now[BIND_KINDS + k] - mark[BIND_KINDS + k]);
        }
    }
    memcpy(mark, now, sizeof(s->site_mark));
}

void commands_label_begin(VkCommandBuffer cb, const char *name)
{
    struct cb_state *s = state_of(cb);
    if (!s)
        return;
    s->commands++;
    site_flush(s);
    if (s->label_depth < LABEL_DEPTH) {
        const char *n = name ? name : "";
        uint64_t key = hash_bytes(HASH_SEED ^ BIND_SITE_LABEL, n, strlen(n)) | 1;
        s->labels[s->label_depth] = fscope_engine_site(key, BIND_SITE_LABEL, s->dev->id, 0, n);
    }
    s->label_depth++;
}

void commands_label_end(VkCommandBuffer cb)
{
    struct cb_state *s = state_of(cb);
    if (!s)
        return;
    s->commands++;
    site_flush(s);
    if (s->label_depth)
        s->label_depth--;
}

void commands_pass_counted(VkCommandBuffer cb)
{
    struct cb_state *s = state_of(cb);
    if (s) {
        s->commands++;
        s->counts[CB_RENDER_PASSES]++;
    }
}

void commands_counted(VkCommandBuffer cb)
{
    struct cb_state *s = state_of(cb);
    if (s)
        s->commands++;
}

/* A bind: counted, and counted again when it set what was bound (no branch: the per-command
 * path). Its command is counted at the recording's end, from these. */
static inline void bound(struct cb_state *s, enum bind_kind kind, bool redundant)
{
    s->counts[CB_BINDS + kind]++;
    s->counts[CB_REDUNDANT + kind] += redundant;
}

/* ---- recording ---- */

static void state_reset(struct cb_state *s)
{
    s->commands = 0;
    memset(s->counts, 0, sizeof(s->counts));
    s->site_count = 0;
    memset(s->site_mark, 0, sizeof(s->site_mark));
    s->label_depth = 0;
    s->site_pipeline = VK_NULL_HANDLE;
    memset(s->pipeline, 0, sizeof(s->pipeline));
    memset(s->vertex, 0, sizeof(s->vertex));
    s->index_buffer = VK_NULL_HANDLE;
    memset(s->sets, 0, sizeof(s->sets));
    memset(s->pushed, 0, sizeof(s->pushed));
    s->dynamic_known = 0;
}

/* What the app bound is unknown from here (after vkCmdExecuteCommands). */
static void bound_forget(struct cb_state *s)
{
    memset(s->pipeline, 0, sizeof(s->pipeline));
    memset(s->vertex, 0, sizeof(s->vertex));
    s->index_buffer = VK_NULL_HANDLE;
    memset(s->sets, 0, sizeof(s->sets));
    memset(s->pushed, 0, sizeof(s->pushed));
    s->dynamic_known = 0;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_BeginCommandBuffer(
    VkCommandBuffer cb, const VkCommandBufferBeginInfo *info)
{
    struct device_data *dev = device_lookup(cb);
    struct cb_state *s = state_make(cb, true);
    if (s) {
        s->dev = dev;
        s->begun = true;
        s->flags = (s->secondary ? CMD_RECORDING_SECONDARY : 0) |
                   (info && (info->flags & VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
                        ? CMD_RECORDING_ONE_TIME : 0) |
                   (info && (info->flags & VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT)
                        ? CMD_RECORDING_SIMULTANEOUS : 0);
        state_reset(s);
        last.cb = cb;
        last.state = s;
        s->begin_ticks = fscope_now();
    }
    VkResult r = dev->vk.BeginCommandBuffer(cb, info);
    if (r == VK_SUCCESS)
        zones_cb_begin(cb, info);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_EndCommandBuffer(VkCommandBuffer cb)
{
    struct cb_state *s = state_of(cb);
    struct device_data *dev = s ? s->dev : device_lookup(cb);
    zones_cb_end(cb);
    VkResult r = dev->vk.EndCommandBuffer(cb);
    if (!s || !s->begun)
        return r;
    uint64_t end = fscope_now();
    s->begun = false;
    site_flush(s);
    uint64_t binds = 0, redundant = 0;
    for (unsigned k = 0; k < BIND_KINDS; k++) {
        binds += s->counts[CB_BINDS + k];
        redundant += s->counts[CB_REDUNDANT + k];
    }
    /* Binds count their command here, not one by one. */
    s->commands += (uint32_t)binds;
    struct fscope_collector *c = fscope_thread_collector();
    uint64_t ticks = end - s->begin_ticks;
    if (c) {
        fscope_collector_count(c, FSCOPE_COUNT_RECORD_TICKS, ticks);
        fscope_collector_count(c, FSCOPE_COUNT_RECORDINGS, 1);
        fscope_collector_count(c, FSCOPE_COUNT_RECORD_COMMANDS, s->commands);
        if (s->secondary)
            fscope_collector_count(c, FSCOPE_COUNT_RECORD_SECONDARY_TICKS, ticks);
    }
    struct cmd_recording rec = {
        .begin_ticks = s->begin_ticks,
        .end_ticks = end,
        .cb = (uint64_t)(uintptr_t)cb,
        .pool = (uint64_t)s->pool,
        .device_id = dev->id,
        .tid = c ? c->rec.tid : 0,
        .commands = s->commands,
        .draws = (uint32_t)s->counts[CB_DRAWS],
        .binds = (uint32_t)binds,
        .redundant = (uint32_t)redundant,
        .flags = s->flags | (r != VK_SUCCESS ? CMD_RECORDING_FAILED : 0),
    };
    fscope_engine_recording(&rec);
    return r;
}

/* A submission charges what cb recorded to the submitting thread's frame, and its binds to
 * their sites. */
void commands_submitted(struct fscope_collector *c, VkCommandBuffer cb)
{
    struct cb_state *s = state_make(cb, false);
    if (!s || !s->dev)
        return;
    for (unsigned k = 0; k < CB_COUNTS; k++)
        if (s->counts[k])
            fscope_collector_count(c, cb_counter[k], s->counts[k]);
    for (uint32_t i = 0; i < s->site_count; i++) {
        struct cb_site *slot = &s->sites[i];
        if (!slot->site)
            continue;
        for (unsigned k = 0; k < BIND_KINDS; k++) {
            if (slot->binds[k])
                atomic_fetch_add_explicit(&slot->site->binds[k], slot->binds[k],
                                          memory_order_relaxed);
            if (slot->redundant[k])
                atomic_fetch_add_explicit(&slot->site->redundant[k], slot->redundant[k],
                                          memory_order_relaxed);
        }
    }
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_AllocateCommandBuffers(
    VkDevice device, const VkCommandBufferAllocateInfo *info, VkCommandBuffer *cbs)
{
    struct device_data *dev = device_lookup(device);
    VkResult r = dev->vk.AllocateCommandBuffers(device, info, cbs);
    if (r != VK_SUCCESS)
        return r;
    uint32_t family = hooks_pool_family(info->commandPool);
    bool primary = info->level == VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    for (uint32_t i = 0; i < info->commandBufferCount; i++) {
        struct cb_state *s = state_make(cbs[i], true);
        if (s) {
            s->dev = dev;
            s->pool = info->commandPool;
            s->secondary = !primary;
            s->begun = false;
            state_reset(s);
        }
        zones_cb_allocated(dev, info->commandPool, cbs[i], primary, family);
    }
    return r;
}

/* Command pool work, timed on the calling thread and written down with its pool. */
static void pool_op(struct device_data *dev, VkCommandPool pool, VkCommandBuffer cb,
                    enum pool_op_kind kind, uint32_t count, uint64_t begin)
{
    uint64_t end = fscope_now();
    struct fscope_collector *c = fscope_thread_collector();
    if (c)
        fscope_collector_count(c, FSCOPE_COUNT_POOL_TICKS, end - begin);
    struct pool_op op = {
        .begin_ticks = begin,
        .end_ticks = end,
        .pool = (uint64_t)pool,
        .cb = (uint64_t)(uintptr_t)cb,
        .device_id = dev->id,
        .tid = c ? c->rec.tid : 0,
        .kind = kind,
        .count = count,
    };
    fscope_engine_pool_op(&op);
}

static VKAPI_ATTR void VKAPI_CALL framescope_FreeCommandBuffers(VkDevice device,
                                                                 VkCommandPool pool,
                                                                 uint32_t count,
                                                                 const VkCommandBuffer *cbs)
{
    /* Zeroed, not removed: the probe chain stays intact and a reused handle finds its slot. */
    uint32_t freed = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (!cbs[i])
            continue;
        freed++;
        zones_cb_freed(cbs[i]);
        struct cb_state *s = state_make(cbs[i], false);
        if (s) {
            s->begun = false;
            state_reset(s);
        }
    }
    struct device_data *dev = device_lookup(device);
    uint64_t begin = fscope_now();
    dev->vk.FreeCommandBuffers(device, pool, count, cbs);
    pool_op(dev, pool, VK_NULL_HANDLE, POOL_OP_FREE, freed, begin);
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_ResetCommandPool(
    VkDevice device, VkCommandPool pool, VkCommandPoolResetFlags flags)
{
    struct device_data *dev = device_lookup(device);
    uint64_t begin = fscope_now();
    VkResult r = dev->vk.ResetCommandPool(device, pool, flags);
    pool_op(dev, pool, VK_NULL_HANDLE, POOL_OP_RESET_POOL, 0, begin);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_ResetCommandBuffer(
    VkCommandBuffer cb, VkCommandBufferResetFlags flags)
{
    struct cb_state *s = state_make(cb, false);
    struct device_data *dev = s && s->dev ? s->dev : device_lookup(cb);
    uint64_t begin = fscope_now();
    VkResult r = dev->vk.ResetCommandBuffer(cb, flags);
    pool_op(dev, s ? s->pool : VK_NULL_HANDLE, cb, POOL_OP_RESET_BUFFER, 1, begin);
    return r;
}

static void trim(PFN_vkTrimCommandPool down, VkDevice device, VkCommandPool pool,
                 VkCommandPoolTrimFlags flags)
{
    struct device_data *dev = device_lookup(device);
    uint64_t begin = fscope_now();
    down(device, pool, flags);
    pool_op(dev, pool, VK_NULL_HANDLE, POOL_OP_TRIM, 0, begin);
}

static VKAPI_ATTR void VKAPI_CALL framescope_TrimCommandPool(VkDevice device, VkCommandPool pool,
                                                             VkCommandPoolTrimFlags flags)
{
    trim(device_lookup(device)->vk.TrimCommandPool, device, pool, flags);
}

static VKAPI_ATTR void VKAPI_CALL framescope_TrimCommandPoolKHR(VkDevice device,
                                                                VkCommandPool pool,
                                                                VkCommandPoolTrimFlags flags)
{
    trim(device_lookup(device)->vk.TrimCommandPoolKHR, device, pool, flags);
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdExecuteCommands(VkCommandBuffer cb,
                                                                uint32_t count,
                                                                const VkCommandBuffer *secondaries)
{
    struct cb_state *primary = state_of(cb);
    if (primary) {
        primary->commands++;
        site_flush(primary);
        for (uint32_t i = 0; i < count; i++) {
            struct cb_state *s = state_make(secondaries[i], false);
            if (!s || !s->dev)
                continue;
            for (unsigned k = 0; k < CB_COUNTS; k++)
                primary->counts[k] += s->counts[k];
            for (uint32_t j = 0; j < s->site_count; j++) {
                struct cb_site *to = site_slot(primary, s->sites[j].site);
                for (unsigned k = 0; k < BIND_KINDS; k++) {
                    to->binds[k] += s->sites[j].binds[k];
                    to->redundant[k] += s->sites[j].redundant[k];
                }
            }
        }
        /* The secondaries' binds are at their own sites already: not the primary's to flush. */
        memcpy(primary->site_mark, &primary->counts[CB_BINDS], sizeof(primary->site_mark));
        bound_forget(primary);
    }
    (primary ? primary->dev : device_lookup(cb))->vk.CmdExecuteCommands(cb, count, secondaries);
}

/* ---- binds ----
 * Each hot hook is a fast path, taken when the command buffer is the one this thread touched
 * last (no call but the tail call down, so nothing to save on the stack), and a slow path
 * that looks the state up. Binds that take arrays have a fast path for the shape nearly
 * every call has (one buffer, one set) and leave the rest to the slow path. */
#define HOT(name, params, args, body) HOT_IF(name, params, args, true, body, body)
/* A hook whose fast path also needs guard (over s, the state) to hold; fast is what it does
 * then, and body what it does in general, on the slow path. */
#define HOT_IF(name, params, args, guard, fast, body)                                          \
    static __attribute__((noinline, cold)) void name##_slow params                             \
    {                                                                                          \
        struct cb_state *s = state_of(cb);                                                     \
        if (s) {                                                                               \
            body;                                                                              \
        }                                                                                      \
        (s ? s->dev : device_lookup(cb))->vk.name args;                                        \
    }                                                                                          \
    static __attribute__((hot)) VKAPI_ATTR void VKAPI_CALL framescope_##name params          \
    {                                                                                          \
        struct cb_state *s = last.state;                                                       \
        if (__builtin_expect(last.cb != cb || !(guard), 0)) {                                  \
            name##_slow args;                                                                  \
            return;                                                                            \
        }                                                                                      \
        fast;                                                                                  \
        s->dev->vk.name args;                                                                  \
    }

/* Graphics 0, compute 1, anything else (ray tracing, subpass shading) 2: no branch. */
static inline unsigned bind_point_index(VkPipelineBindPoint point)
{
    _Static_assert(VK_PIPELINE_BIND_POINT_GRAPHICS == 0 && VK_PIPELINE_BIND_POINT_COMPUTE == 1,
                   "bind point values");
    return (uint32_t)point < 2 ? (unsigned)point : 2;
}

/* A pipeline bound in place of another: outside labels the site changes with it, and a
 * pipeline whose state is static makes the dynamic state set before it undefined (setting it
 * again after a change is needed, never redundant). */
static __attribute__((noinline)) void pipeline_changed(struct cb_state *s, unsigned point,
                                                       VkPipeline pipeline)
{
    if (!s->label_depth)
        site_flush(s);
    s->pipeline[point] = pipeline;
    s->site_pipeline = pipeline;
    s->dynamic_known = 0;
}

/* One vertex buffer at binding b (below VERTEX_BINDINGS): the common bind, on the fast path. */
static inline __attribute__((always_inline)) void
vertex_buffer(struct cb_state *s, uint32_t b, VkBuffer buffer, VkDeviceSize offset,
              VkDeviceSize size, VkDeviceSize stride)
{
    bool same = buffer != VK_NULL_HANDLE && s->vertex[b].buffer == buffer &&
                s->vertex[b].offset == offset && s->vertex[b].size == size &&
                s->vertex[b].stride == stride;
    s->vertex[b].buffer = buffer;
    s->vertex[b].offset = offset;
    s->vertex[b].size = size;
    s->vertex[b].stride = stride;
    bound(s, BIND_VERTEX, same);
}

static void vertex_buffers(struct cb_state *s, uint32_t first, uint32_t count,
                           const VkBuffer *buffers, const VkDeviceSize *offsets,
                           const VkDeviceSize *sizes, const VkDeviceSize *strides)
{
    bool same = count > 0 && first + count <= VERTEX_BINDINGS;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t b = first + i;
        if (b >= VERTEX_BINDINGS)
            break;
        VkDeviceSize size = sizes ? sizes[i] : VK_WHOLE_SIZE;
        VkDeviceSize stride = strides ? strides[i] : ~(VkDeviceSize)0;
        same = same && buffers[i] != VK_NULL_HANDLE && s->vertex[b].buffer == buffers[i] &&
               s->vertex[b].offset == offsets[i] && s->vertex[b].size == size &&
               s->vertex[b].stride == stride;
        s->vertex[b].buffer = buffers[i];
        s->vertex[b].offset = offsets[i];
        s->vertex[b].size = size;
        s->vertex[b].stride = stride;
    }
    bound(s, BIND_VERTEX, same);
}

HOT(CmdBindPipeline, (VkCommandBuffer cb, VkPipelineBindPoint point, VkPipeline pipeline),
    (cb, point, pipeline), ({
        unsigned p = bind_point_index(point);
        bool same = s->pipeline[p] == pipeline;
        if (!same)
            pipeline_changed(s, p, pipeline);
        bound(s, BIND_PIPELINE, same);
    }))
HOT_IF(CmdBindVertexBuffers,
       (VkCommandBuffer cb, uint32_t first, uint32_t count, const VkBuffer *buffers,
        const VkDeviceSize *offsets),
       (cb, first, count, buffers, offsets), count == 1 && first < VERTEX_BINDINGS,
       vertex_buffer(s, first, buffers[0], offsets[0], VK_WHOLE_SIZE, ~(VkDeviceSize)0),
       vertex_buffers(s, first, count, buffers, offsets, NULL, NULL))
#define VERTEX_BUFFERS2(name)                                                                  \
    HOT_IF(name,                                                                               \
           (VkCommandBuffer cb, uint32_t first, uint32_t count, const VkBuffer *buffers,       \
            const VkDeviceSize *offsets, const VkDeviceSize *sizes,                            \
            const VkDeviceSize *strides),                                                      \
           (cb, first, count, buffers, offsets, sizes, strides),                               \
           count == 1 && first < VERTEX_BINDINGS,                                              \
           vertex_buffer(s, first, buffers[0], offsets[0], sizes ? sizes[0] : VK_WHOLE_SIZE,   \
                         strides ? strides[0] : ~(VkDeviceSize)0),                             \
           vertex_buffers(s, first, count, buffers, offsets, sizes, strides))
VERTEX_BUFFERS2(CmdBindVertexBuffers2)
VERTEX_BUFFERS2(CmdBindVertexBuffers2EXT)
#undef VERTEX_BUFFERS2

HOT(CmdBindIndexBuffer, (VkCommandBuffer cb, VkBuffer buffer, VkDeviceSize offset,
                         VkIndexType type),
    (cb, buffer, offset, type), ({
        bool same = buffer != VK_NULL_HANDLE && s->index_buffer == buffer &&
                    s->index_offset == offset && s->index_type == type;
        s->index_buffer = buffer;
        s->index_offset = offset;
        s->index_type = type;
        bound(s, BIND_INDEX, same);
    }))

/* What a set's dynamic offsets were: 0 without any (the handle alone then says what is bound,
 * however the call grouped its sets), else a hash of the call's first set, count and offsets
 * (top bit set), as a set's offsets are known only as part of its call's array. */
static inline uint64_t sets_call(uint32_t first, uint32_t count, uint32_t dynamic_count,
                                 const uint32_t *dynamic)
{
    if (!dynamic_count)
        return 0;
    return hash_bytes(first | (uint64_t)count << 32, dynamic, dynamic_count * sizeof(*dynamic)) |
           UINT64_C(1) << 63;
}

/* One set at index n (below BOUND_SETS), no dynamic offsets, with the layout every known set
 * was bound with (so it disturbs none): the common bind, on the fast path. */
static inline __attribute__((always_inline)) void
descriptor_set(struct cb_state *s, unsigned p, VkPipelineLayout layout, uint32_t n,
               VkDescriptorSet set)
{
    __typeof__(&s->sets[0][0]) slot = &s->sets[p][n];
    bool same = (set != VK_NULL_HANDLE) & (slot->set == set) & (slot->call == 0);
    slot->set = set;
    slot->layout = layout;
    slot->call = 0; /* sets_call(n, 1, 0, NULL) */
    bound(s, BIND_DESCRIPTOR, same);
}

static void descriptor_sets(struct cb_state *s, VkPipelineBindPoint point,
                            VkPipelineLayout layout, uint32_t first, uint32_t count,
                            const VkDescriptorSet *sets, uint64_t call)
{
    unsigned p = bind_point_index(point);
    if (layout != s->sets_layout[p]) {
        /* A set bound with another layout may be disturbed by this bind: forget those (none
         * of them could match this bind anyway). */
        for (uint32_t n = 0; n < BOUND_SETS; n++)
            if (s->sets[p][n].layout != layout)
                s->sets[p][n].set = VK_NULL_HANDLE;
        s->sets_layout[p] = layout;
    }
    bool same = count > 0 && first + count <= BOUND_SETS;
    for (uint32_t i = 0; same && i < count; i++) {
        uint32_t n = first + i;
        same = sets[i] != VK_NULL_HANDLE && s->sets[p][n].set == sets[i] &&
               s->sets[p][n].call == call;
    }
    for (uint32_t i = 0; i < count && first + i < BOUND_SETS; i++) {
        uint32_t n = first + i;
        s->sets[p][n].set = sets[i];
        s->sets[p][n].layout = layout;
        s->sets[p][n].call = call;
    }
    bound(s, BIND_DESCRIPTOR, same);
}

HOT_IF(CmdBindDescriptorSets,
       (VkCommandBuffer cb, VkPipelineBindPoint point, VkPipelineLayout layout, uint32_t first,
        uint32_t count, const VkDescriptorSet *sets, uint32_t dynamic_count,
        const uint32_t *dynamic),
       (cb, point, layout, first, count, sets, dynamic_count, dynamic),
       count == 1 && dynamic_count == 0 && first < BOUND_SETS &&
           layout == s->sets_layout[bind_point_index(point)],
       descriptor_set(s, bind_point_index(point), layout, first, sets[0]),
       descriptor_sets(s, point, layout, first, count, sets,
                       sets_call(first, count, dynamic_count, dynamic)))

/* The writes of a push, hashed with what they point at; 0 when a write carries what this
 * cannot compare (an extension structure): such a push is never called redundant. */
static uint64_t writes_hash(VkPipelineLayout layout, uint32_t count,
                            const VkWriteDescriptorSet *writes)
{
    uint64_t h = hash_bytes(HASH_SEED, &layout, sizeof(layout));
    for (uint32_t i = 0; i < count; i++) {
        const VkWriteDescriptorSet *w = &writes[i];
        if (w->pNext)
            return 0;
        h = hash_bytes(h, &w->dstBinding, sizeof(w->dstBinding));
        h = hash_bytes(h, &w->dstArrayElement, sizeof(w->dstArrayElement));
        h = hash_bytes(h, &w->descriptorCount, sizeof(w->descriptorCount));
        h = hash_bytes(h, &w->descriptorType, sizeof(w->descriptorType));
        switch (w->descriptorType) {
        case VK_DESCRIPTOR_TYPE_SAMPLER:
        case VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER:
        case VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE:
        case VK_DESCRIPTOR_TYPE_STORAGE_IMAGE:
        case VK_DESCRIPTOR_TYPE_INPUT_ATTACHMENT:
            h = hash_bytes(h, w->pImageInfo, w->descriptorCount * sizeof(*w->pImageInfo));
            break;
        case VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER:
        case VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER:
            h = hash_bytes(h, w->pTexelBufferView,
                           w->descriptorCount * sizeof(*w->pTexelBufferView));
            break;
        case VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER:
        case VK_DESCRIPTOR_TYPE_STORAGE_BUFFER:
        case VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC:
        case VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC:
            h = hash_bytes(h, w->pBufferInfo, w->descriptorCount * sizeof(*w->pBufferInfo));
            break;
        default:
            return 0;
        }
    }
    return h | 1;
}

static VKAPI_ATTR void VKAPI_CALL framescope_CmdPushDescriptorSetKHR(
    VkCommandBuffer cb, VkPipelineBindPoint point, VkPipelineLayout layout, uint32_t set,
    uint32_t count, const VkWriteDescriptorSet *writes)
{
    struct cb_state *s = state_of(cb);
    if (s) {
        unsigned p = bind_point_index(point);
        uint64_t h = writes_hash(layout, count, writes);
        bool same = false;
        if (set < BOUND_SETS) {
            same = h && s->pushed[p][set] == h;
            s->pushed[p][set] = h;
        }
        bound(s, BIND_PUSH_DESCRIPTOR, same);
    }
    (s ? s->dev : device_lookup(cb))->vk.CmdPushDescriptorSetKHR(cb, point, layout, set, count,
                                                                 writes);
}

/* A template's data has a layout only the template knows: counted, never compared. */
static VKAPI_ATTR void VKAPI_CALL framescope_CmdPushDescriptorSetWithTemplateKHR(
    VkCommandBuffer cb, VkDescriptorUpdateTemplate update, VkPipelineLayout layout, uint32_t set,
    const void *data)
{
    struct cb_state *s = state_of(cb);
    if (s) {
        for (unsigned p = 0; p < BIND_POINTS; p++)
            if (set < BOUND_SETS)
                s->pushed[p][set] = 0;
        bound(s, BIND_PUSH_DESCRIPTOR, false);
    }
    (s ? s->dev : device_lookup(cb))->vk.CmdPushDescriptorSetWithTemplateKHR(cb, update, layout,
                                                                             set, data);
}

/* ---- dynamic state: redundant when the same value is set again under the same pipeline ---- */

static inline __attribute__((always_inline)) void
dynamic_set(struct cb_state *s, enum dynamic_state which, uint64_t value)
{
    bool same = (s->dynamic_known & (1u << which)) && s->dynamic[which] == value;
    s->dynamic[which] = value;
    s->dynamic_known |= 1u << which;
    bound(s, BIND_DYNAMIC_STATE, same);
}

#define DYNAMIC(name, which, params, args, value) HOT(name, params, args, dynamic_set(s, which, value))
/* Values that fit 64 bits are compared as they are; arrays by a hash of their bytes. */
#define PACK2(a, b) (((uint64_t)(a) << 32) | (uint32_t)(b))
static inline uint64_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static uint64_t rects_hash(uint32_t first, uint32_t count, const void *data, size_t size)
{
    return hash_bytes(hash_word(HASH_SEED, first | (uint64_t)count << 32), data, count * size);
}

DYNAMIC(CmdSetViewport, DYN_VIEWPORT,
        (VkCommandBuffer cb, uint32_t first, uint32_t count, const VkViewport *v),
        (cb, first, count, v), rects_hash(first, count, v, sizeof(*v)))
DYNAMIC(CmdSetScissor, DYN_SCISSOR,
        (VkCommandBuffer cb, uint32_t first, uint32_t count, const VkRect2D *r),
        (cb, first, count, r), rects_hash(first, count, r, sizeof(*r)))
DYNAMIC(CmdSetViewportWithCount, DYN_VIEWPORT_COUNT,
        (VkCommandBuffer cb, uint32_t count, const VkViewport *v), (cb, count, v),
        rects_hash(0, count, v, sizeof(*v)))
DYNAMIC(CmdSetViewportWithCountEXT, DYN_VIEWPORT_COUNT,
        (VkCommandBuffer cb, uint32_t count, const VkViewport *v), (cb, count, v),
        rects_hash(0, count, v, sizeof(*v)))
DYNAMIC(CmdSetScissorWithCount, DYN_SCISSOR_COUNT,
        (VkCommandBuffer cb, uint32_t count, const VkRect2D *r), (cb, count, r),
        rects_hash(0, count, r, sizeof(*r)))
DYNAMIC(CmdSetScissorWithCountEXT, DYN_SCISSOR_COUNT,
        (VkCommandBuffer cb, uint32_t count, const VkRect2D *r), (cb, count, r),
        rects_hash(0, count, r, sizeof(*r)))
DYNAMIC(CmdSetLineWidth, DYN_LINE_WIDTH, (VkCommandBuffer cb, float width), (cb, width),
        float_bits(width))
DYNAMIC(CmdSetDepthBias, DYN_DEPTH_BIAS,
        (VkCommandBuffer cb, float constant, float clamp, float slope),
        (cb, constant, clamp, slope),
        hash_bytes(PACK2(float_bits(constant), float_bits(clamp)), &slope, sizeof(slope)))
DYNAMIC(CmdSetBlendConstants, DYN_BLEND_CONSTANTS,
        (VkCommandBuffer cb, const float constants[4]), (cb, constants),
        hash_bytes(HASH_SEED, constants, 4 * sizeof(float)))
DYNAMIC(CmdSetDepthBounds, DYN_DEPTH_BOUNDS, (VkCommandBuffer cb, float min, float max),
        (cb, min, max), PACK2(float_bits(min), float_bits(max)))
DYNAMIC(CmdSetStencilCompareMask, DYN_STENCIL_COMPARE,
        (VkCommandBuffer cb, VkStencilFaceFlags face, uint32_t mask), (cb, face, mask),
        PACK2(face, mask))
DYNAMIC(CmdSetStencilWriteMask, DYN_STENCIL_WRITE,
        (VkCommandBuffer cb, VkStencilFaceFlags face, uint32_t mask), (cb, face, mask),
        PACK2(face, mask))
DYNAMIC(CmdSetStencilReference, DYN_STENCIL_REFERENCE,
        (VkCommandBuffer cb, VkStencilFaceFlags face, uint32_t ref), (cb, face, ref),
        PACK2(face, ref))
DYNAMIC(CmdSetCullMode, DYN_CULL_MODE, (VkCommandBuffer cb, VkCullModeFlags mode), (cb, mode),
        mode)
DYNAMIC(CmdSetCullModeEXT, DYN_CULL_MODE, (VkCommandBuffer cb, VkCullModeFlags mode),
        (cb, mode), mode)
DYNAMIC(CmdSetFrontFace, DYN_FRONT_FACE, (VkCommandBuffer cb, VkFrontFace face), (cb, face),
        face)
DYNAMIC(CmdSetFrontFaceEXT, DYN_FRONT_FACE, (VkCommandBuffer cb, VkFrontFace face), (cb, face),
        face)
DYNAMIC(CmdSetPrimitiveTopology, DYN_TOPOLOGY, (VkCommandBuffer cb, VkPrimitiveTopology t),
        (cb, t), t)
DYNAMIC(CmdSetPrimitiveTopologyEXT, DYN_TOPOLOGY, (VkCommandBuffer cb, VkPrimitiveTopology t),
        (cb, t), t)
DYNAMIC(CmdSetDepthTestEnable, DYN_DEPTH_TEST, (VkCommandBuffer cb, VkBool32 on), (cb, on), on)
DYNAMIC(CmdSetDepthTestEnableEXT, DYN_DEPTH_TEST, (VkCommandBuffer cb, VkBool32 on), (cb, on),
        on)
DYNAMIC(CmdSetDepthWriteEnable, DYN_DEPTH_WRITE, (VkCommandBuffer cb, VkBool32 on), (cb, on),
        on)
DYNAMIC(CmdSetDepthWriteEnableEXT, DYN_DEPTH_WRITE, (VkCommandBuffer cb, VkBool32 on),
        (cb, on), on)
DYNAMIC(CmdSetDepthCompareOp, DYN_DEPTH_COMPARE, (VkCommandBuffer cb, VkCompareOp op),
        (cb, op), op)
DYNAMIC(CmdSetDepthCompareOpEXT, DYN_DEPTH_COMPARE, (VkCommandBuffer cb, VkCompareOp op),
        (cb, op), op)
#undef DYNAMIC

/* ---- draws, dispatches and other commands ----
 * Every draw and dispatch entry point the loader can hand out is counted (one a call; a
 * multi-draw counts its draws: zink draws through vkCmdDrawMultiEXT). An indirect draw counts
 * once, and apart, as its counts live on the GPU. Direct draws add their vertices or indices
 * times their instances. */
#define COUNTED(name, params, args, body)                                                      \
    HOT(name, params, args, ({                                                                 \
            uint64_t *n = s->counts;                                                           \
            (void)n;                                                                           \
            s->commands++;                                                                     \
            body;                                                                              \
        }))
#define DRAW n[CB_DRAWS]++
#define INDIRECT_DRAW (n[CB_DRAWS]++, n[CB_INDIRECT]++)
#define DISPATCH n[CB_DISPATCHES]++

COUNTED(CmdDraw, (VkCommandBuffer cb, uint32_t vc, uint32_t ic, uint32_t fv, uint32_t fi),
        (cb, vc, ic, fv, fi),
        (DRAW, n[CB_VERTICES] += (uint64_t)vc * ic, n[CB_INSTANCES] += ic))
COUNTED(CmdDrawIndexed,
        (VkCommandBuffer cb, uint32_t xc, uint32_t ic, uint32_t fx, int32_t vo, uint32_t fi),
        (cb, xc, ic, fx, vo, fi),
        (DRAW, n[CB_INDICES] += (uint64_t)xc * ic, n[CB_INSTANCES] += ic))
COUNTED(CmdDrawIndirect, (VkCommandBuffer cb, VkBuffer b, VkDeviceSize o, uint32_t c, uint32_t st),
        (cb, b, o, c, st), INDIRECT_DRAW)
COUNTED(CmdDrawIndexedIndirect,
        (VkCommandBuffer cb, VkBuffer b, VkDeviceSize o, uint32_t c, uint32_t st),
        (cb, b, o, c, st), INDIRECT_DRAW)
#define INDIRECT_COUNT_PARAMS                                                                  \
    (VkCommandBuffer cb, VkBuffer b, VkDeviceSize o, VkBuffer cbuf, VkDeviceSize co, uint32_t m,  \
     uint32_t st)
#define INDIRECT_COUNT_ARGS (cb, b, o, cbuf, co, m, st)
COUNTED(CmdDrawIndirectCount, INDIRECT_COUNT_PARAMS, INDIRECT_COUNT_ARGS, INDIRECT_DRAW)
COUNTED(CmdDrawIndirectCountKHR, INDIRECT_COUNT_PARAMS, INDIRECT_COUNT_ARGS, INDIRECT_DRAW)
COUNTED(CmdDrawIndexedIndirectCount, INDIRECT_COUNT_PARAMS, INDIRECT_COUNT_ARGS, INDIRECT_DRAW)
COUNTED(CmdDrawIndexedIndirectCountKHR, INDIRECT_COUNT_PARAMS, INDIRECT_COUNT_ARGS,
        INDIRECT_DRAW)
COUNTED(CmdDrawIndirectCountAMD, INDIRECT_COUNT_PARAMS, INDIRECT_COUNT_ARGS, INDIRECT_DRAW)
COUNTED(CmdDrawIndexedIndirectCountAMD, INDIRECT_COUNT_PARAMS, INDIRECT_COUNT_ARGS,
        INDIRECT_DRAW)
COUNTED(CmdDrawMultiEXT,
        (VkCommandBuffer cb, uint32_t count, const VkMultiDrawInfoEXT *draws, uint32_t ic,
         uint32_t fi, uint32_t stride),
        (cb, count, draws, ic, fi, stride), ({
            n[CB_DRAWS] += count;
            n[CB_INSTANCES] += (uint64_t)ic * count;
            const char *d = (const char *)draws;
            for (uint32_t i = 0; d && i < count; i++, d += stride)
                n[CB_VERTICES] += (uint64_t)((const VkMultiDrawInfoEXT *)d)->vertexCount * ic;
        }))
COUNTED(CmdDrawMultiIndexedEXT,
        (VkCommandBuffer cb, uint32_t count, const VkMultiDrawIndexedInfoEXT *draws, uint32_t ic,
         uint32_t fi, uint32_t stride, const int32_t *vo),
        (cb, count, draws, ic, fi, stride, vo), ({
            n[CB_DRAWS] += count;
            n[CB_INSTANCES] += (uint64_t)ic * count;
            const char *d = (const char *)draws;
            for (uint32_t i = 0; d && i < count; i++, d += stride)
                n[CB_INDICES] += (uint64_t)((const VkMultiDrawIndexedInfoEXT *)d)->indexCount * ic;
        }))
COUNTED(CmdDrawIndirectByteCountEXT,
        (VkCommandBuffer cb, uint32_t ic, uint32_t fi, VkBuffer counter, VkDeviceSize co,
         uint32_t offset, uint32_t stride),
        (cb, ic, fi, counter, co, offset, stride), (INDIRECT_DRAW, n[CB_INSTANCES] += ic))
COUNTED(CmdDrawMeshTasksEXT, (VkCommandBuffer cb, uint32_t x, uint32_t y, uint32_t z),
        (cb, x, y, z), DRAW)
COUNTED(CmdDrawMeshTasksIndirectEXT,
        (VkCommandBuffer cb, VkBuffer b, VkDeviceSize o, uint32_t c, uint32_t st),
        (cb, b, o, c, st), INDIRECT_DRAW)
COUNTED(CmdDrawMeshTasksIndirectCountEXT, INDIRECT_COUNT_PARAMS, INDIRECT_COUNT_ARGS,
        INDIRECT_DRAW)
COUNTED(CmdDrawMeshTasksNV, (VkCommandBuffer cb, uint32_t count, uint32_t first),
        (cb, count, first), DRAW)
COUNTED(CmdDrawMeshTasksIndirectNV,
        (VkCommandBuffer cb, VkBuffer b, VkDeviceSize o, uint32_t c, uint32_t st),
        (cb, b, o, c, st), INDIRECT_DRAW)
COUNTED(CmdDrawMeshTasksIndirectCountNV, INDIRECT_COUNT_PARAMS, INDIRECT_COUNT_ARGS,
        INDIRECT_DRAW)
COUNTED(CmdDispatch, (VkCommandBuffer cb, uint32_t x, uint32_t y, uint32_t z), (cb, x, y, z),
        DISPATCH)
COUNTED(CmdDispatchIndirect, (VkCommandBuffer cb, VkBuffer b, VkDeviceSize o), (cb, b, o),
        DISPATCH)
COUNTED(CmdDispatchBase,
        (VkCommandBuffer cb, uint32_t bx, uint32_t by, uint32_t bz, uint32_t x, uint32_t y,
         uint32_t z),
        (cb, bx, by, bz, x, y, z), DISPATCH)
COUNTED(CmdDispatchBaseKHR,
        (VkCommandBuffer cb, uint32_t bx, uint32_t by, uint32_t bz, uint32_t x, uint32_t y,
         uint32_t z),
        (cb, bx, by, bz, x, y, z), DISPATCH)
COUNTED(CmdTraceRaysKHR,
        (VkCommandBuffer cb, const VkStridedDeviceAddressRegionKHR *raygen,
         const VkStridedDeviceAddressRegionKHR *miss, const VkStridedDeviceAddressRegionKHR *hit,
         const VkStridedDeviceAddressRegionKHR *callable, uint32_t width, uint32_t height,
         uint32_t depth),
        (cb, raygen, miss, hit, callable, width, height, depth), DISPATCH)
COUNTED(CmdTraceRaysIndirectKHR,
        (VkCommandBuffer cb, const VkStridedDeviceAddressRegionKHR *raygen,
         const VkStridedDeviceAddressRegionKHR *miss, const VkStridedDeviceAddressRegionKHR *hit,
         const VkStridedDeviceAddressRegionKHR *callable, VkDeviceAddress address),
        (cb, raygen, miss, hit, callable, address), DISPATCH)
COUNTED(CmdTraceRaysIndirect2KHR, (VkCommandBuffer cb, VkDeviceAddress address), (cb, address),
        DISPATCH)

/* Commands counted only as commands: what an engine records besides draws and binds. */
COUNTED(CmdPushConstants,
        (VkCommandBuffer cb, VkPipelineLayout layout, VkShaderStageFlags stages, uint32_t offset,
         uint32_t size, const void *values),
        (cb, layout, stages, offset, size, values), (void)0)
COUNTED(CmdPipelineBarrier,
        (VkCommandBuffer cb, VkPipelineStageFlags src, VkPipelineStageFlags dst,
         VkDependencyFlags deps, uint32_t mc, const VkMemoryBarrier *m, uint32_t bc,
         const VkBufferMemoryBarrier *b, uint32_t ic, const VkImageMemoryBarrier *i),
        (cb, src, dst, deps, mc, m, bc, b, ic, i), (void)0)
COUNTED(CmdPipelineBarrier2, (VkCommandBuffer cb, const VkDependencyInfo *info), (cb, info),
        (void)0)
COUNTED(CmdPipelineBarrier2KHR, (VkCommandBuffer cb, const VkDependencyInfo *info), (cb, info),
        (void)0)
COUNTED(CmdCopyBuffer,
        (VkCommandBuffer cb, VkBuffer src, VkBuffer dst, uint32_t count,
         const VkBufferCopy *regions),
        (cb, src, dst, count, regions), (void)0)
COUNTED(CmdCopyImage,
        (VkCommandBuffer cb, VkImage src, VkImageLayout sl, VkImage dst, VkImageLayout dl,
         uint32_t count, const VkImageCopy *regions),
        (cb, src, sl, dst, dl, count, regions), (void)0)
COUNTED(CmdCopyBufferToImage,
        (VkCommandBuffer cb, VkBuffer src, VkImage dst, VkImageLayout dl, uint32_t count,
         const VkBufferImageCopy *regions),
        (cb, src, dst, dl, count, regions), (void)0)
COUNTED(CmdCopyImageToBuffer,
        (VkCommandBuffer cb, VkImage src, VkImageLayout sl, VkBuffer dst, uint32_t count,
         const VkBufferImageCopy *regions),
        (cb, src, sl, dst, count, regions), (void)0)
COUNTED(CmdBlitImage,
        (VkCommandBuffer cb, VkImage src, VkImageLayout sl, VkImage dst, VkImageLayout dl,
         uint32_t count, const VkImageBlit *regions, VkFilter filter),
        (cb, src, sl, dst, dl, count, regions, filter), (void)0)
COUNTED(CmdClearColorImage,
        (VkCommandBuffer cb, VkImage image, VkImageLayout layout, const VkClearColorValue *color,
         uint32_t count, const VkImageSubresourceRange *ranges),
        (cb, image, layout, color, count, ranges), (void)0)
COUNTED(CmdClearDepthStencilImage,
        (VkCommandBuffer cb, VkImage image, VkImageLayout layout,
         const VkClearDepthStencilValue *value, uint32_t count,
         const VkImageSubresourceRange *ranges),
        (cb, image, layout, value, count, ranges), (void)0)
COUNTED(CmdClearAttachments,
        (VkCommandBuffer cb, uint32_t ac, const VkClearAttachment *a, uint32_t rc,
         const VkClearRect *r),
        (cb, ac, a, rc, r), (void)0)
COUNTED(CmdFillBuffer,
        (VkCommandBuffer cb, VkBuffer dst, VkDeviceSize offset, VkDeviceSize size, uint32_t data),
        (cb, dst, offset, size, data), (void)0)
COUNTED(CmdUpdateBuffer,
        (VkCommandBuffer cb, VkBuffer dst, VkDeviceSize offset, VkDeviceSize size,
         const void *data),
        (cb, dst, offset, size, data), (void)0)
COUNTED(CmdResolveImage,
        (VkCommandBuffer cb, VkImage src, VkImageLayout sl, VkImage dst, VkImageLayout dl,
         uint32_t count, const VkImageResolve *regions),
        (cb, src, sl, dst, dl, count, regions), (void)0)
COUNTED(CmdNextSubpass, (VkCommandBuffer cb, VkSubpassContents contents), (cb, contents),
        (void)0)
#undef COUNTED
#undef HOT
#undef DRAW
#undef INDIRECT_DRAW
#undef DISPATCH
#undef INDIRECT_COUNT_PARAMS
#undef INDIRECT_COUNT_ARGS
#undef PACK2

void commands_report_notes(void)
{
    uint64_t full = atomic_load(&cb_table_full);
    if (full)
        fscope_record_note("%llu command buffers were not followed (draws, binds, recording "
                           "time): more than %d in use at once", (unsigned long long)full,
                           CB_TABLE_SIZE);
    uint64_t failed = atomic_load(&cb_state_failed);
    if (failed)
        fscope_record_note("%llu command buffers were not followed: out of memory for their "
                           "state", (unsigned long long)failed);
}

static const struct layer_hook hook_rows[] = {
    COMMAND_HOOKS(LAYER_HOOK_ROW)
};
const struct layer_hook_table commands_hook_table = LAYER_HOOK_TABLE(hook_rows);
