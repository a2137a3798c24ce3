/* The command buffer table: every command buffer the app allocated, keyed by its handle, with
 * what commands.c (counts, binds) and gpu_zones.c (GPU zones) keep for it. Both reach it
 * from here, neither through the other.
 *
 * Open addressing keyed by handle, lock-free; an entry is made once and kept for the handle
 * (what it points to is zeroed when freed), so a pointer to it stays valid for the life of
 * the layer. */
#ifndef FSCOPE_LAYER_CB_TABLE_H
#define FSCOPE_LAYER_CB_TABLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "layer.h"

/* Command buffers followed at once: past this many, later ones go unfollowed (counted). */
#define CB_TABLE_SIZE 16384 /* power of two */

struct cb_state;
struct cb_zones;

struct cb_entry {
    _Atomic(VkCommandBuffer) cb;
    struct cb_state *_Atomic state; /* commands.c's, made at allocation or first begin */
    /* gpu_zones.c's, made at allocation; written by the allocating thread (the app
     * synchronises a command buffer's allocation with its use). */
    struct cb_zones *zones;
};

extern struct cb_entry cb_table[CB_TABLE_SIZE];
/* Command buffers that found no entry (the table full around their hash). */
extern _Atomic uint64_t cb_table_full;

/* cb's entry, made when insert; NULL when there is none (or no room: counted). Inline: the
 * submit path and the per-command path's slow side look command buffers up here. */
static inline struct cb_entry *cb_table_entry(VkCommandBuffer cb, bool insert)
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

#endif
