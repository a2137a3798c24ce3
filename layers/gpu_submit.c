/* GPU timing on the app's submitting thread: a timed submission takes a slot and goes down
 * with the slot's begin command buffer in front of its first batch and its end command buffer
 * (and, when due, our timeline signal) behind its last. Never waits, never locks. */
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "record/clock.h"
#include "record/meta.h"
#include "util/log.h"

/* ---- submission (app thread) ----------------------------------------------------------- */

static void *scratch_reserve(struct queue_data *q, size_t size)
{
    if (size > q->scratch_size) {
        size_t grown = q->scratch_size ? q->scratch_size : 1024;
        while (grown < size)
            grown *= 2;
        void *p = realloc(q->scratch, grown);
        if (!p)
            return NULL;
        q->scratch = p;
        q->scratch_size = grown;
    }
    return q->scratch;
}

/* memcpy for an app's array, which may be NULL when its count is 0 (memcpy's arguments must
 * never be NULL, even for 0 bytes). */
static void copy_array(void *dst, const void *src, size_t bytes)
{
    if (bytes)
        memcpy(dst, src, bytes);
}

/* Device-group masks and protected submissions index or flag the app's command buffers in
 * ways ours cannot join: such batches go down untouched, and are counted. */
static bool chain_blocks_injection(const void *pnext)
{
    for (const VkBaseInStructure *s = pnext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_DEVICE_GROUP_SUBMIT_INFO)
            return true;
        if (s->sType == VK_STRUCTURE_TYPE_PROTECTED_SUBMIT_INFO &&
            ((const VkProtectedSubmitInfo *)s)->protectedSubmit)
            return true;
    }
    return false;
}

/* The next free slot: one read back, else one never used, else a new chunk made here (only
 * when the reader could not keep up), else NULL (counted). Never waits. */
static struct gpu_slot *slot_take(struct device_data *dev, struct queue_data *q)
{
    uint64_t out = atomic_load_explicit(&q->free_out, memory_order_relaxed);
    if (out != atomic_load_explicit(&q->free_in, memory_order_acquire)) {
        struct gpu_slot *s = q->free_ring[out % GPU_SLOTS_MAX];
        atomic_store_explicit(&q->free_out, out + 1, memory_order_relaxed);
        return s;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        for (uint32_t i = q->fresh_chunk, n = gpu_chunks_reserved(q); i < n; i++) {
            struct gpu_chunk *c = atomic_load_explicit(&q->chunks[i], memory_order_acquire);
            if (c && c->taken < c->count)
                return &c->slots[c->taken++];
            if (c && i == q->fresh_chunk)
                q->fresh_chunk++; /* used up: never looked at again */
        }
        if (attempt == 0 && gpu_slots_grow(dev, q)) {
            atomic_fetch_add_explicit(&gpu_stats.slots_grown, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&gpu_stats.slots_grown_on_app, 1, memory_order_relaxed);
        }
    }
    atomic_fetch_add_explicit(&gpu_stats.unmeasured_no_slot, 1, memory_order_relaxed);
    return NULL;
}

/* The slot for the next submission, or NULL (counted) when it goes untimed. */
static struct gpu_slot *slot_acquire(struct device_data *dev, struct queue_data *q,
                                     bool blocked, bool *unsampled)
{
    *unsampled = false;
    if (!q->timing || atomic_load_explicit(&dev->lost, memory_order_relaxed))
        return NULL;
    if (blocked) {
        atomic_fetch_add_explicit(&gpu_stats.unmeasured_unsupported, 1, memory_order_relaxed);
        return NULL;
    }
    if (!gpu_sample_admits(dev)) {
        atomic_fetch_add_explicit(&gpu_stats.unsampled, 1, memory_order_relaxed);
        q->sample_gap = true;
        *unsampled = true;
        return NULL;
    }
    struct gpu_slot *s = slot_take(dev, q);
    if (!s)
        q->sample_gap = true;
    if (s)
        s->value = atomic_load_explicit(&q->slot_head, memory_order_relaxed) + 1;
    return s;
}

/* The submission went down: the slot is in flight. The reader is woken only if it sleeps
 * for want of work (then once: it clears the flag), with no lock. */
static void slot_submitted(struct device_data *dev, struct queue_data *q, struct gpu_slot *s)
{
    uint64_t head = atomic_load_explicit(&q->slot_head, memory_order_relaxed);
    s->after_gap = q->sample_gap;
    q->sample_gap = false;
    q->flight[head % GPU_SLOTS_MAX] = s;
    atomic_store_explicit(&q->slot_head, head + 1, memory_order_seq_cst);
    if (atomic_load_explicit(&dev->reader_idle, memory_order_seq_cst) &&
        atomic_exchange(&dev->reader_idle, 0)) {
        gpu_futex(&dev->reader_idle, FUTEX_WAKE, 1, NULL);
        atomic_fetch_add_explicit(&gpu_stats.reader_woken, 1, memory_order_relaxed);
    }
}

/* The slot goes back unused: the submission did not go down. */
static void slot_unused(struct device_data *dev, struct queue_data *q, struct gpu_slot *s)
{
    zones_detach(dev, s);
    /* Handed back through the fresh side: the submitting thread owns it still. */
    uint64_t out = atomic_load_explicit(&q->free_out, memory_order_relaxed);
    if (out && q->free_ring[(out - 1) % GPU_SLOTS_MAX] == s) {
        atomic_store_explicit(&q->free_out, out - 1, memory_order_relaxed);
        return;
    }
    for (uint32_t i = q->fresh_chunk, n = gpu_chunks_reserved(q); i < n; i++) {
        struct gpu_chunk *c = atomic_load_explicit(&q->chunks[i], memory_order_acquire);
        if (c && c->taken && &c->slots[c->taken - 1] == s) {
            c->taken--;
            return;
        }
    }
}

/* Whether this submission should carry our timeline signal (see SIGNAL_GAP_NS). */
static bool signal_due(struct queue_data *q, bool app_fence)
{
    if (!q->timeline)
        return false;
    return app_fence || q->unsignalled + 1 >= SIGNAL_RUN ||
           fscope_now() - q->last_signal_ticks >= q->signal_gap_ticks;
}

/* The submission went down with (sent) or without our signal. */
static void signal_count(struct queue_data *q, bool sent)
{
    if (sent) {
        q->unsignalled = 0;
        q->last_signal_ticks = fscope_now();
    } else {
        q->unsignalled++;
    }
}

static VkResult after_submit(struct device_data *dev, struct queue_data *q, struct gpu_slot *s,
                             VkResult r)
{
    if (r == VK_SUCCESS)
        slot_submitted(dev, q, s);
    else
        slot_unused(dev, q, s);
    return r;
}

/* The app's timeline-semaphore struct in a batch's chain, through *ret; false when it is
 * there but not first (we would have to copy what comes before it to extend it). */
static bool find_timeline_info(const void *chain, const VkTimelineSemaphoreSubmitInfo **ret)
{
    *ret = NULL;
    for (const VkBaseInStructure *s = chain; s; s = s->pNext)
        if (s->sType == VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO) {
            *ret = (const VkTimelineSemaphoreSubmitInfo *)s;
            return s == chain;
        }
    return true;
}

/* vkQueueSubmit's batches rewritten into scratch: begin_cb in front of the first batch's
 * command buffers, end_cb behind the last's, and where *signal, our timeline signal joined to
 * the last batch's own (which needs the app's timeline struct first in its chain: where it
 * is not, *signal turns false and the next submission signals instead). NULL: no scratch. */
static const VkSubmitInfo *rewrite_submit(struct queue_data *q, const struct gpu_slot *slot,
                                          uint32_t count, const VkSubmitInfo *submits,
                                          bool *signal)
{
    const VkTimelineSemaphoreSubmitInfo *app_timeline = NULL;
    *signal = *signal && find_timeline_info(submits[count - 1].pNext, &app_timeline);

    /* Scratch: the batches, then the first and last batches' command buffers, then the last
     * batch's signals, their values and our timeline struct. */
    const VkSubmitInfo *first = &submits[0], *last = &submits[count - 1];
    uint32_t first_cbs = first->commandBufferCount + 1 + (count == 1);
    uint32_t last_cbs = count > 1 ? last->commandBufferCount + 1 : 0;
    uint32_t signals = *signal ? last->signalSemaphoreCount + 1 : 0;
    size_t size = count * sizeof(VkSubmitInfo) + sizeof(VkTimelineSemaphoreSubmitInfo) +
                  signals * (sizeof(VkSemaphore) + sizeof(uint64_t)) +
                  (first_cbs + last_cbs) * sizeof(VkCommandBuffer);
    VkSubmitInfo *copy = scratch_reserve(q, size);
    if (!copy)
        return NULL;
    memcpy(copy, submits, count * sizeof(VkSubmitInfo));
    VkTimelineSemaphoreSubmitInfo *timeline = (VkTimelineSemaphoreSubmitInfo *)(copy + count);
    uint64_t *values = (uint64_t *)(timeline + 1);
    VkSemaphore *semaphores = (VkSemaphore *)(values + signals);
    VkCommandBuffer *cbs = (VkCommandBuffer *)(semaphores + signals);

    cbs[0] = slot->begin_cb;
    copy_array(cbs + 1, first->pCommandBuffers, first->commandBufferCount * sizeof(*cbs));
    copy[0].pCommandBuffers = cbs;
    copy[0].commandBufferCount = first->commandBufferCount + 1;
    VkSubmitInfo *tail = &copy[count - 1];
    if (count > 1) {
        cbs += first_cbs;
        copy_array(cbs, last->pCommandBuffers, last->commandBufferCount * sizeof(*cbs));
        tail->pCommandBuffers = cbs;
        tail->commandBufferCount = last->commandBufferCount;
    }
    cbs[tail->commandBufferCount++] = slot->end_cb;

    if (*signal) {
        /* Our signal joins the batch's own: the app's values where it gave them (binary
         * semaphores ignore theirs), ours last. */
        uint32_t n = last->signalSemaphoreCount;
        copy_array(semaphores, last->pSignalSemaphores, n * sizeof(*semaphores));
        semaphores[n] = q->timeline;
        for (uint32_t k = 0; k < n; k++)
            values[k] = app_timeline && k < app_timeline->signalSemaphoreValueCount
                            ? app_timeline->pSignalSemaphoreValues[k]
                            : 0;
        values[n] = slot->value;
        *timeline = (VkTimelineSemaphoreSubmitInfo){
            .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
            .pNext = app_timeline ? app_timeline->pNext : last->pNext,
            .waitSemaphoreValueCount = app_timeline ? app_timeline->waitSemaphoreValueCount : 0,
            .pWaitSemaphoreValues = app_timeline ? app_timeline->pWaitSemaphoreValues : NULL,
            .signalSemaphoreValueCount = n + 1,
            .pSignalSemaphoreValues = values,
        };
        tail->pNext = timeline;
        tail->signalSemaphoreCount = n + 1;
        tail->pSignalSemaphores = semaphores;
    }
    return copy;
}

/* vkQueueSubmit2's batches rewritten the same way; its semaphore infos carry their values,
 * so our signal always fits. NULL: no scratch. */
static const VkSubmitInfo2 *rewrite_submit2(struct queue_data *q, const struct gpu_slot *slot,
                                            uint32_t count, const VkSubmitInfo2 *submits,
                                            bool signal)
{
    const VkSubmitInfo2 *first = &submits[0], *last = &submits[count - 1];
    uint32_t first_cbs = first->commandBufferInfoCount + 1 + (count == 1);
    uint32_t last_cbs = count > 1 ? last->commandBufferInfoCount + 1 : 0;
    uint32_t signals = signal ? last->signalSemaphoreInfoCount + 1 : 0;
    size_t size = count * sizeof(VkSubmitInfo2) + signals * sizeof(VkSemaphoreSubmitInfo) +
                  (first_cbs + last_cbs) * sizeof(VkCommandBufferSubmitInfo);
    VkSubmitInfo2 *copy = scratch_reserve(q, size);
    if (!copy)
        return NULL;
    memcpy(copy, submits, count * sizeof(VkSubmitInfo2));
    VkSemaphoreSubmitInfo *semaphores = (VkSemaphoreSubmitInfo *)(copy + count);
    VkCommandBufferSubmitInfo *cbs = (VkCommandBufferSubmitInfo *)(semaphores + signals);
    const VkCommandBufferSubmitInfo ours = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
    };

    cbs[0] = ours;
    cbs[0].commandBuffer = slot->begin_cb;
    copy_array(cbs + 1, first->pCommandBufferInfos, first->commandBufferInfoCount * sizeof(*cbs));
    copy[0].pCommandBufferInfos = cbs;
    copy[0].commandBufferInfoCount = first->commandBufferInfoCount + 1;
    VkSubmitInfo2 *tail = &copy[count - 1];
    if (count > 1) {
        cbs += first_cbs;
        copy_array(cbs, last->pCommandBufferInfos, last->commandBufferInfoCount * sizeof(*cbs));
        tail->pCommandBufferInfos = cbs;
        tail->commandBufferInfoCount = last->commandBufferInfoCount;
    }
    cbs[tail->commandBufferInfoCount] = ours;
    cbs[tail->commandBufferInfoCount++].commandBuffer = slot->end_cb;

    if (signal) {
        uint32_t n = last->signalSemaphoreInfoCount;
        copy_array(semaphores, last->pSignalSemaphoreInfos, n * sizeof(*semaphores));
        semaphores[n] = (VkSemaphoreSubmitInfo){
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
            .semaphore = q->timeline,
            .value = slot->value,
            .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
        };
        tail->signalSemaphoreInfoCount = n + 1;
        tail->pSignalSemaphoreInfos = semaphores;
    }
    return copy;
}

/* One body for vkQueueSubmit and vkQueueSubmit2: what differs between them is read through
 * the submission's accessors (layer.h) and the two rewrites above. */
VkResult gpu_submit(struct device_data *dev, struct queue_data *q,
                    const struct gpu_submission *sub)
{
    uint32_t count = sub->count;
    bool blocked = count == 0;
    for (uint32_t i = 0; i < count && !blocked; i++)
        blocked = (sub->submit2 && (sub->submits2[i].flags & VK_SUBMIT_PROTECTED_BIT)) ||
                  chain_blocks_injection(gpu_submission_chain(sub, i));
    bool unsampled = false;
    struct gpu_slot *slot = count ? slot_acquire(dev, q, blocked, &unsampled) : NULL;
    /* Untimed and sampled out, a command buffer's zones matter only where a run of it that
     * copies them out is still to be read, or where its block is read from the host and must
     * be reset before every run (zones_untimed_submit): none, no look-up. */
    bool zones = atomic_load_explicit(&dev->zones, memory_order_relaxed) &&
                 (slot || !unsampled ||
                  atomic_load_explicit(&dev->zone_copies_in_flight, memory_order_relaxed) ||
                  atomic_load_explicit(&dev->zone_host_runs, memory_order_relaxed));
    for (uint32_t i = 0; i < count && zones; i++)
        for (uint32_t k = 0, n = gpu_submission_cb_count(sub, i); k < n; k++) {
            if (slot)
                zones_attach(q, slot, gpu_submission_cb(sub, i, k), i == 0 && k == 0);
            else
                zones_untimed_submit(gpu_submission_cb(sub, i, k), !unsampled);
        }
    if (!slot)
        return gpu_submission_down(dev, q->queue, sub, gpu_submission_batches(sub));
    bool signal = signal_due(q, sub->fence != VK_NULL_HANDLE);
    const void *copy = sub->submit2 ? (const void *)rewrite_submit2(q, slot, count,
                                                                     sub->submits2, signal)
                                     : rewrite_submit(q, slot, count, sub->submits, &signal);
    if (!copy) {
        atomic_fetch_add_explicit(&gpu_stats.unmeasured_no_slot, 1, memory_order_relaxed);
        slot_unused(dev, q, slot);
        q->sample_gap = true;
        return gpu_submission_down(dev, q->queue, sub, gpu_submission_batches(sub));
    }
    VkResult r = gpu_submission_down(dev, q->queue, sub, copy);
    if (r == VK_SUCCESS)
        signal_count(q, signal);
    return after_submit(dev, q, slot, r);
}
