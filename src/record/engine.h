/* The recording side of the engine's own cost (format.h, struct rec_engine): the layer's
 * hooks call these from any app thread. Command buffer recordings, pool work and memory
 * events are appended under a lock of their own each (one append per recording ended, per
 * pool call, per allocation: never per command); bind sites and descriptor pools are tables
 * the hooks update with atomics. */
#ifndef FSCOPE_RECORD_ENGINE_H
#define FSCOPE_RECORD_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"

#define FSCOPE_EXPORT __attribute__((visibility("default")))

/* The recording's engine object, made at the first call; NULL when the arena is full. */
FSCOPE_EXPORT struct rec_engine *fscope_engine(void);

FSCOPE_EXPORT void fscope_engine_recording(const struct cmd_recording *r);
FSCOPE_EXPORT void fscope_engine_pool_op(const struct pool_op *op);
FSCOPE_EXPORT void fscope_engine_memory(const struct memory_event *m);
/* A device's heaps and types, once per device (a device seen again replaces its entry). */
FSCOPE_EXPORT void fscope_engine_memory_props(const struct rec_memory_props *props);

/* The site keyed key (a label's name hash, or a pipeline), made on first use with kind,
 * handle and name; NULL when the table is full (counted). Lock-free. */
FSCOPE_EXPORT struct bind_site *fscope_engine_site(uint64_t key, uint32_t kind,
                                                   uint32_t device_id, uint64_t handle,
                                                   const char *name);

/* A descriptor pool made; its entry, or NULL when the table is full (counted). */
FSCOPE_EXPORT struct descriptor_pool_entry *fscope_engine_descriptor_pool(uint32_t device_id,
                                                                         uint64_t handle,
                                                                         uint32_t max_sets,
                                                                         bool free_individual);

/* A device's VK_EXT_memory_budget, read on the kernel sampler's thread at each tick: fills
 * ret (device_id, heap_count, budget, usage) and returns true. Registered per device and
 * removed before the device goes (removal waits for a read in progress). */
typedef bool (*fscope_budget_probe)(void *ctx, struct budget_sample *ret);
FSCOPE_EXPORT void fscope_engine_budget_probe_add(fscope_budget_probe probe, void *ctx);
FSCOPE_EXPORT void fscope_engine_budget_probe_remove(void *ctx);

/* The kernel sampler's tick: a gauge sample (RSS, descriptor pools) and each probe's budget. */
void engine_sample(uint64_t ticks);

#endif
