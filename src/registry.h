/* Per-thread collectors owned by a registry of slots.
 *
 * A thread holds a pointer to its slot; the slot is not thread-local storage, so a thread
 * that exits or is cancelled leaves its zone tree and flight-recorder ring readable. */
#ifndef FSCOPE_REGISTRY_H
#define FSCOPE_REGISTRY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>

#include "framescope.h"

#define FSCOPE_EXPORT __attribute__((visibility("default")))

#define FSCOPE_MAX_SLOTS 256
#define FSCOPE_MAX_DEPTH 64
#define FSCOPE_TREE_NODES 4096
#define FSCOPE_NODE_NONE UINT32_MAX
#define FSCOPE_DEFAULT_DETAIL FSCOPE_LEVEL_PHASE
#define FSCOPE_DEFAULT_RING_EVENTS 65536u

/* One flight-recorder event: 16 bytes, no kind field. A NULL loc is the exit of the innermost
 * open zone; the reader keeps the stack. A loc with FSCOPE_LOC_INSTANT is a point in time. */
struct fscope_frame_log;

struct fscope_event {
    uint64_t ticks;
    const struct fscope_loc *loc;
};

struct zone_node {
    const struct fscope_loc *loc; /* NULL for the root */
    uint32_t parent;
    uint32_t first_child;
    uint32_t next_sibling;
    uint32_t last_hit_child;     /* where the next lookup under this node starts */
    _Atomic int32_t detail_override; /* -1: inherit; governs this node's children */
    uint64_t calls;
    uint64_t inclusive_ticks;
    uint64_t child_ticks;
    uint64_t max_ticks;
};

/* Time a thread spent blocked inside calls, by kind. The frame budget's blocks. */
enum fscope_block {
    FSCOPE_BLOCK_ACQUIRE,
    FSCOPE_BLOCK_PRESENT,
    FSCOPE_BLOCK_FENCE,
    FSCOPE_BLOCK_SEMAPHORE,
    FSCOPE_BLOCK_IDLE,
    FSCOPE_BLOCK_CAP,
    FSCOPE_BLOCK_PRESENT_WAIT, /* vkWaitForPresentKHR */
    FSCOPE_BLOCK_COUNT,
};

/* One block as an interval, so that a report can tell which part of it the GPU was busy. */
struct fscope_block_span {
    uint64_t start, end;
    uint8_t kind;        /* enum fscope_block */
    uint8_t from_thread; /* charged by the closing thread (else by its swapchain) */
};

/* Block intervals a thread keeps between two frame closes; beyond that a block still counts
 * in block_ticks, only its interval is not kept. */
#define FSCOPE_THREAD_BLOCK_SPANS 32

/* Per-thread event counters, summed over threads when a frame closes. */
enum fscope_counter {
    FSCOPE_COUNT_SUBMITS,
    FSCOPE_COUNT_COMMAND_BUFFERS,
    FSCOPE_COUNT_DRAWS,
    FSCOPE_COUNT_DISPATCHES,
    FSCOPE_COUNT_RENDER_PASSES,
    FSCOPE_COUNT_RECORD_TICKS,
    /* Waits of every thread, whatever frame they are charged to (or none). */
    FSCOPE_COUNT_WAIT_FENCE_TICKS,
    FSCOPE_COUNT_WAIT_SEMAPHORE_TICKS,
    FSCOPE_COUNT_WAIT_IDLE_TICKS,
    FSCOPE_COUNT_COUNT,
};

enum slot_state { SLOT_FREE, SLOT_CLAIMING, SLOT_LIVE, SLOT_EXITED, SLOT_EXTERNAL };

struct stack_entry {
    uint32_t node;           /* FSCOPE_NODE_NONE: gated off by level */
    int32_t child_threshold; /* detail threshold in force for this zone's children */
    uint64_t start;
};

struct fscope_collector {
    _Atomic int state;
    int tid;
    char name[32];

    struct zone_node *nodes;
    _Atomic uint32_t node_count;
    uint64_t nodes_exhausted;

    struct stack_entry stack[FSCOPE_MAX_DEPTH];
    uint32_t depth;
    uint32_t depth_overflow;

    struct fscope_event *ring;
    uint64_t ring_mask;
    _Atomic uint64_t ring_head; /* events ever written; the ring holds the last mask+1 */

    uint64_t last_span_end; /* external slots: spans are kept in order */
    uint64_t spans_clamped;

    uint64_t block_ticks[FSCOPE_BLOCK_COUNT]; /* since this thread's last frame close */
    struct fscope_block_span block_spans[FSCOPE_THREAD_BLOCK_SPANS];
    uint32_t block_span_count;
    struct fscope_frame_log *mark_log;        /* frames closed by fscope_frame_mark() */
    uint8_t frame_flags;                      /* CAP_FLAG_* since the last frame close */
    uint64_t record_begin_ticks;
    _Atomic uint64_t counters[FSCOPE_COUNT_COUNT];
};

/* Library start-up: clock, log, environment. Idempotent; run by a constructor. */
void registry_init(void);

/* The registry's slots, for readers (exporters, reports). */
struct fscope_collector *registry_slot(unsigned index);
unsigned registry_slot_count(void);

/* The calling thread's collector, attaching one on first use; NULL when none is free. */
FSCOPE_EXPORT struct fscope_collector *fscope_thread_collector(void);

/* A slot owned by no thread, for spans measured on another clock (the GPU). */
FSCOPE_EXPORT struct fscope_collector *fscope_external_create(const char *name);

/* Adds a span [begin, end) in ticks under the root of an external slot, to its tree and its
 * ring. Callers serialise spans of one slot; a span starting before the previous one ended is
 * clamped so the track stays properly nested (counted in spans_clamped). */
FSCOPE_EXPORT void fscope_external_span(struct fscope_collector *c, const struct fscope_loc *loc,
                                        uint64_t begin, uint64_t end);

/* Records an instant on the calling thread (a present marker). */
FSCOPE_EXPORT void fscope_instant(const struct fscope_loc *loc, uint64_t ticks);

/* Blocking time: a zone around the blocking call whose duration is also charged to the
 * calling thread's frame budget under kind. begin returns the start in ticks. */
FSCOPE_EXPORT uint64_t fscope_block_begin(const struct fscope_loc *loc);
FSCOPE_EXPORT uint64_t fscope_block_end(enum fscope_block kind, uint64_t start);
/* Ends the block's zone without charging the calling thread: the caller charges it to the
 * frame it belongs to (an acquire to its swapchain's frame, whatever the thread). Returns the
 * end in ticks. */
FSCOPE_EXPORT uint64_t fscope_block_end_uncharged(void);

/* Flags for the calling thread's next frame close (the cap's outcome). */
FSCOPE_EXPORT void fscope_thread_add_frame_flags(uint8_t flags);
FSCOPE_EXPORT uint8_t fscope_thread_take_frame_flags(void);

/* Moves the calling thread's accumulated block time into ret and zeroes it; with spans, also
 * its block intervals (up to FSCOPE_THREAD_BLOCK_SPANS; *ret_span_count says how many). */
FSCOPE_EXPORT void fscope_thread_take_blocks(uint64_t ret[FSCOPE_BLOCK_COUNT]);
FSCOPE_EXPORT void fscope_thread_take_block_spans(uint64_t ret[FSCOPE_BLOCK_COUNT],
                                                  struct fscope_block_span *spans,
                                                  uint32_t *ret_span_count);

static inline void fscope_collector_count(struct fscope_collector *c, enum fscope_counter k,
                                          uint64_t n)
{
    uint64_t v = atomic_load_explicit(&c->counters[k], memory_order_relaxed);
    atomic_store_explicit(&c->counters[k], v + n, memory_order_relaxed);
}

/* Adds n to the calling thread's counter k. */
FSCOPE_EXPORT void fscope_count(enum fscope_counter k, uint64_t n);
/* Every counter summed over every slot, in one pass. */
FSCOPE_EXPORT void fscope_count_totals(uint64_t ret[FSCOPE_COUNT_COUNT]);

/* Builds the path of node index in c ("frame/render") into buf. */
void registry_node_path(const struct fscope_collector *c, uint32_t index, char *buf, size_t len);

/* Copies the readable window of c's ring into out (capacity ring_mask+1). Returns the count
 * and, in ret_lost, how many events the ring had already overwritten. */
uint64_t registry_ring_snapshot(struct fscope_collector *c, struct fscope_event *out,
                                uint64_t *ret_lost);

uint32_t registry_ring_events(void);

/* The aggregated zone tree of every thread (and external track) as CSV. */
void registry_write_zones_csv(FILE *f);

#endif
