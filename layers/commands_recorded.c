/* Every command a command buffer records that commands.c counts: binds (with those that set
 * what was already bound), dynamic state, draws, dispatches and the rest. The per-command path
 * is a thread-local compare (the command buffer the thread touched last), a few compares and
 * stores into that command buffer's state, and the call down: no lock, no allocation, no
 * library call. */
#include <string.h>

#include "commands.h"

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
        struct cb_state *s = commands_state_of(cb);                                                     \
        if (s) {                                                                               \
            body;                                                                              \
        }                                                                                      \
        (s ? s->dev : device_lookup(cb))->vk.name args;                                        \
    }                                                                                          \
    static __attribute__((hot)) VKAPI_ATTR void VKAPI_CALL framescope_##name params          \
    {                                                                                          \
        struct cb_state *s = commands_last.state;                                                       \
        if (__builtin_expect(commands_last.cb != cb || !(guard), 0)) {                                  \
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
        commands_site_flush(s);
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
    struct cb_state *s = commands_state_of(cb);
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
    struct cb_state *s = commands_state_of(cb);
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

static const struct layer_hook hook_rows[] = {
    RECORDED_COMMAND_HOOKS(LAYER_HOOK_ROW)
};
const struct layer_hook_table commands_recorded_hook_table = LAYER_HOOK_TABLE(hook_rows);
