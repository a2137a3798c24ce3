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

#include "format.h"
#include "framescope.h"

#define FSCOPE_EXPORT __attribute__((visibility("default")))

#define FSCOPE_MAX_SLOTS 256
#define FSCOPE_MAX_DEPTH 64
#define FSCOPE_TREE_NODES 4096
#define FSCOPE_DEFAULT_DETAIL FSCOPE_LEVEL_PHASE
#define FSCOPE_DEFAULT_RING_EVENTS 65536u

struct fscope_frame_log;

/* One block as an interval, so that a report can tell which part of it the GPU was busy. */
struct fscope_block_span {
    uint64_t start, end;
    uint8_t kind;        /* enum fscope_block */
    uint8_t from_thread; /* charged by the closing thread (else by its swapchain) */
};

/* Block intervals a thread keeps between two frame closes; beyond that a block still counts
 * in block_ticks, only its interval is not kept. */
#define FSCOPE_THREAD_BLOCK_SPANS 32


struct stack_entry {
    uint32_t node;           /* FSCOPE_NODE_NONE: gated off by level */
    int32_t child_threshold; /* detail threshold in force for this zone's children */
    uint64_t start;
};

/* A thread's slot. The whole slot lives in the recording; readers see only rec (state, name,
 * zone tree and ring through offsets), the rest is the recorder's working state. */
struct fscope_collector {
    struct rec_thread rec;
    struct zone_node *nodes; /* rec.nodes_offset, in this process */

    struct stack_entry stack[FSCOPE_MAX_DEPTH];
    uint32_t depth;
    uint32_t depth_overflow;

    struct fscope_event *ring; /* rec.ring_offset, in this process */

    uint64_t last_span_end; /* external slots: spans are kept in order */
    const struct fscope_loc *instant_loc; /* the last instant's, already in the location table */
    uint64_t spans_clamped;

    uint64_t block_ticks[FSCOPE_BLOCK_COUNT]; /* since this thread's last frame close */
    struct fscope_block_span block_spans[FSCOPE_THREAD_BLOCK_SPANS];
    uint32_t block_span_count;
    struct fscope_frame_log *mark_log;        /* frames closed by fscope_frame_mark() */
    uint8_t frame_flags;                      /* CAP_FLAG_* since the last frame close */
    uint64_t record_begin_ticks;
    int schedstat_fd; /* /proc/thread-self/schedstat, opened at its first frame close; -1 */
    int counter_fds[FRAME_COUNTERS]; /* its perf group (src/record/counters.c); -1 */
    uint8_t counters_open;           /* which of them the kernel took (bit per event) */
    int8_t counters_tried;           /* 0 not yet, 1 open, -1 refused */
    _Atomic uint64_t counters[FSCOPE_COUNT_COUNT];
};

/* Library start-up: clock, log, environment. Idempotent; run by a constructor. */
void registry_init(void);

/* Slots ever claimed (a high-water mark of their indices). */
unsigned registry_slot_count(void);

/* The calling thread's collector, attaching one on first use; NULL when none is free. */
FSCOPE_EXPORT struct fscope_collector *fscope_thread_collector(void);

/* A slot owned by no thread, for spans measured on another clock (the GPU). */
FSCOPE_EXPORT struct fscope_collector *fscope_external_create(const char *name);
/* Names an external slot anew (a GPU queue the app named). A reader copying the name while it
 * changes may see a mix of the two, never an unterminated one. */
FSCOPE_EXPORT void fscope_external_rename(struct fscope_collector *c, const char *name);

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

uint32_t registry_ring_events(void);


#endif
