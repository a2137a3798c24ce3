/* Command recording, shared by commands.c (command buffers' lives, their pools, sites,
 * submission) and commands_recorded.c (every command it counts: binds, dynamic state, draws):
 * the state of one command buffer, and the per-command path's lookup of it. */
#ifndef FSCOPE_LAYER_COMMANDS_H
#define FSCOPE_LAYER_COMMANDS_H

#include <string.h>

#include "cb_table.h"
#include "layer.h"
#include "record/engine.h"

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

/* The state of cb (in its cb_table.c entry), made when insert; NULL when the table is full or
 * memory ran out. */
struct cb_state *commands_state_make(VkCommandBuffer cb, bool insert);

/* The command buffer this thread touched last: a recording thread records one at a time, so
 * nearly every command finds its state here. */
struct commands_last {
    VkCommandBuffer cb;
    struct cb_state *state;
};
extern __thread struct commands_last commands_last __attribute__((tls_model("initial-exec")));

static inline struct cb_state *commands_state_of(VkCommandBuffer cb)
{
    if (likely(commands_last.cb == cb))
        return commands_last.state;
    struct cb_state *s = commands_state_make(cb, false);
    if (s && s->dev) {
        commands_last.cb = cb;
        commands_last.state = s;
    }
    return s && s->dev ? s : NULL;
}

/* A 64-bit mix, a word at a time: a bind's key is a few words, hashed on the recording path,
 * so a byte-wise hash (eight multiplies for two words) would cost more than the compare. */
static inline uint64_t hash_word(uint64_t h, uint64_t word)
{
    h = (h ^ word) * UINT64_C(0x9e3779b97f4a7c15);
    return h ^ (h >> 29);
}

static inline uint64_t hash_bytes(uint64_t h, const void *data, size_t len)
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

/* A bind: counted, and counted again when it set what was bound (no branch: the per-command
 * path). Its command is counted at the recording's end, from these. */
static inline void bound(struct cb_state *s, enum bind_kind kind, bool redundant)
{
    s->counts[CB_BINDS + kind]++;
    s->counts[CB_REDUNDANT + kind] += redundant;
}

/* The binds counted since the site last changed go to the site they were recorded under. */
void commands_site_flush(struct cb_state *s);

#endif
