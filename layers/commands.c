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

#include "commands.h"
#include "record/clock.h"
#include "record/meta.h"

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

/* ---- the state: one per command buffer handle, in its cb_table.c entry, made once and kept
 * for the handle (zeroed when freed), so a pointer to it stays valid for the life of the
 * layer ---- */

static _Atomic uint64_t cb_state_failed;

__thread struct commands_last commands_last __attribute__((tls_model("initial-exec")));

struct cb_state *commands_state_make(VkCommandBuffer cb, bool insert)
{
    struct cb_entry *e = cb_table_entry(cb, insert);
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

/* ---- sites ---- */

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

void commands_site_flush(struct cb_state *s)
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
    struct cb_state *s = commands_state_of(cb);
    if (!s)
        return;
    s->commands++;
    commands_site_flush(s);
    if (s->label_depth < LABEL_DEPTH) {
        const char *n = name ? name : "";
        uint64_t key = hash_bytes(HASH_SEED ^ BIND_SITE_LABEL, n, strlen(n)) | 1;
        s->labels[s->label_depth] = fscope_engine_site(key, BIND_SITE_LABEL, s->dev->id, 0, n);
    }
    s->label_depth++;
}

void commands_label_end(VkCommandBuffer cb)
{
    struct cb_state *s = commands_state_of(cb);
    if (!s)
        return;
    s->commands++;
    commands_site_flush(s);
    if (s->label_depth)
        s->label_depth--;
}

void commands_pass_counted(VkCommandBuffer cb)
{
    struct cb_state *s = commands_state_of(cb);
    if (s) {
        s->commands++;
        s->counts[CB_RENDER_PASSES]++;
    }
}

void commands_counted(VkCommandBuffer cb)
{
    struct cb_state *s = commands_state_of(cb);
    if (s)
        s->commands++;
}

/* ---- command pools ---- */

/* Command pools the app made, with their queue family: a command buffer's timestamps are
 * valid only where its family has them. */
#define POOL_TABLE_SIZE 1024
static struct {
    VkCommandPool pool;
    uint32_t family;
} pool_table[POOL_TABLE_SIZE];
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t pool_family(VkCommandPool pool)
{
    uint32_t family = UINT32_MAX;
    pthread_mutex_lock(&pool_lock);
    for (unsigned i = 0; i < POOL_TABLE_SIZE && family == UINT32_MAX; i++)
        if (pool_table[i].pool == pool)
            family = pool_table[i].family;
    pthread_mutex_unlock(&pool_lock);
    return family;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateCommandPool(
    VkDevice device, const VkCommandPoolCreateInfo *info, const VkAllocationCallbacks *alloc,
    VkCommandPool *ret)
{
    VkResult r = device_lookup(device)->vk.CreateCommandPool(device, info, alloc, ret);
    if (r == VK_SUCCESS) {
        pthread_mutex_lock(&pool_lock);
        for (unsigned i = 0; i < POOL_TABLE_SIZE; i++) {
            if (!pool_table[i].pool) {
                pool_table[i].pool = *ret;
                pool_table[i].family = info->queueFamilyIndex;
                break;
            }
        }
        pthread_mutex_unlock(&pool_lock);
    }
    return r;
}

static VKAPI_ATTR void VKAPI_CALL framescope_DestroyCommandPool(
    VkDevice device, VkCommandPool pool, const VkAllocationCallbacks *alloc)
{
    struct device_data *dev = device_lookup(device);
    if (pool) {
        zones_pool_destroyed(dev, pool);
        pthread_mutex_lock(&pool_lock);
        for (unsigned i = 0; i < POOL_TABLE_SIZE; i++)
            if (pool_table[i].pool == pool)
                pool_table[i].pool = VK_NULL_HANDLE;
        pthread_mutex_unlock(&pool_lock);
    }
    dev->vk.DestroyCommandPool(device, pool, alloc);
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
    struct cb_state *s = commands_state_make(cb, true);
    if (s) {
        s->dev = dev;
        s->begun = true;
        s->flags = (s->secondary ? CMD_RECORDING_SECONDARY : 0) |
                   (info && (info->flags & VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
                        ? CMD_RECORDING_ONE_TIME : 0) |
                   (info && (info->flags & VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT)
                        ? CMD_RECORDING_SIMULTANEOUS : 0);
        state_reset(s);
        commands_last.cb = cb;
        commands_last.state = s;
        s->begin_ticks = fscope_now();
    }
    VkResult r = dev->vk.BeginCommandBuffer(cb, info);
    if (r == VK_SUCCESS)
        zones_cb_begin(cb, info);
    return r;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_EndCommandBuffer(VkCommandBuffer cb)
{
    struct cb_state *s = commands_state_of(cb);
    struct device_data *dev = s ? s->dev : device_lookup(cb);
    zones_cb_end(cb);
    VkResult r = dev->vk.EndCommandBuffer(cb);
    if (!s || !s->begun)
        return r;
    uint64_t end = fscope_now();
    s->begun = false;
    commands_site_flush(s);
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
    struct cb_state *s = commands_state_make(cb, false);
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
    uint32_t family = pool_family(info->commandPool);
    bool primary = info->level == VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    for (uint32_t i = 0; i < info->commandBufferCount; i++) {
        struct cb_state *s = commands_state_make(cbs[i], true);
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
        struct cb_state *s = commands_state_make(cbs[i], false);
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
    struct cb_state *s = commands_state_make(cb, false);
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
    struct cb_state *primary = commands_state_of(cb);
    if (primary) {
        primary->commands++;
        commands_site_flush(primary);
        for (uint32_t i = 0; i < count; i++) {
            struct cb_state *s = commands_state_make(secondaries[i], false);
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

