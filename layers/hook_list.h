/* Every Vulkan entry point VK_LAYER_FRAMESCOPE hooks, by the file that implements it.
 *
 * These lists are the only way a hook reaches the app: layer.c hands out framescope_<Name>
 * for a name only through the tables built from them (layer_hook rows), and
 * tests/layer-probe.c walks the same lists to check that, for every hooked name, what the
 * app gets from vkGet*ProcAddr and what happens when it calls it are the same with and
 * without the layer. A hook added here is checked without anyone remembering to; a hook
 * left out of them is never handed out.
 *
 * Header only: X-macros and nothing they depend on, so the probe can include it. */
#ifndef FSCOPE_HOOK_LIST_H
#define FSCOPE_HOOK_LIST_H

/* Global and instance plumbing (layer.c): answered before any instance exists, or for one. */
#define GLOBAL_HOOKS(X)                                                                        \
    X(GetInstanceProcAddr)                                                                     \
    X(CreateInstance)                                                                          \
    X(DestroyInstance)                                                                         \
    X(CreateDevice)

/* Instance-level hooks (surfaces.c): surfaces, whose frames are followed. Each calls down to
 * the same name in the instance's dispatch table. */
#define INSTANCE_HOOKS(X)                                                                      \
    X(CreateWaylandSurfaceKHR)                                                                 \
    X(CreateHeadlessSurfaceEXT)                                                                \
    X(CreateXcbSurfaceKHR)                                                                     \
    X(CreateXlibSurfaceKHR)                                                                    \
    X(DestroySurfaceKHR)

/* Device plumbing (layer.c): queues, the device itself. */
#define PLUMBING_HOOKS(X)                                                                      \
    X(GetDeviceProcAddr)                                                                       \
    X(DestroyDevice)                                                                           \
    X(GetDeviceQueue)                                                                          \
    X(GetDeviceQueue2)

/* Swapchains (surfaces.c): where a surface's frames start, and its cap is made. */
#define SWAPCHAIN_HOOKS(X)                                                                     \
    X(CreateSwapchainKHR)                                                                      \
    X(DestroySwapchainKHR)

/* Frame hooks (hooks.c): submit, present, acquire, every blocking wait, passes, pipelines. */
#define FRAME_HOOKS(X)                                                                         \
    X(CreateGraphicsPipelines)                                                                 \
    X(CreateComputePipelines)                                                                  \
    X(CreateRayTracingPipelinesKHR)                                                            \
    X(CreateShaderModule)                                                                      \
    X(DebugMarkerSetObjectNameEXT)                                                             \
    X(QueueSubmit)                                                                             \
    X(QueueSubmit2)                                                                            \
    X(QueueSubmit2KHR)                                                                         \
    X(QueuePresentKHR)                                                                         \
    X(AcquireNextImageKHR)                                                                     \
    X(AcquireNextImage2KHR)                                                                    \
    X(WaitForPresentKHR)                                                                       \
    X(WaitForFences)                                                                           \
    X(WaitSemaphores)                                                                          \
    X(WaitSemaphoresKHR)                                                                       \
    X(QueueWaitIdle)                                                                           \
    X(DeviceWaitIdle)                                                                          \
    X(CreateRenderPass)                                                                        \
    X(CreateRenderPass2)                                                                       \
    X(CreateRenderPass2KHR)                                                                    \
    X(DestroyRenderPass)                                                                       \
    X(CmdBeginRenderPass)                                                                      \
    X(CmdBeginRenderPass2)                                                                     \
    X(CmdBeginRenderPass2KHR)                                                                  \
    X(CmdBeginRendering)                                                                       \
    X(CmdBeginRenderingKHR)                                                                    \
    X(CmdEndRenderPass)                                                                        \
    X(CmdEndRenderPass2)                                                                       \
    X(CmdEndRenderPass2KHR)                                                                    \
    X(CmdEndRendering)                                                                         \
    X(CmdEndRenderingKHR)                                                                      \
    X(CmdDebugMarkerBeginEXT)                                                                  \
    X(CmdDebugMarkerEndEXT)                                                                    \
    X(CreateQueryPool)                                                                         \
    X(DestroyQueryPool)                                                                        \
    X(CmdBeginQuery)                                                                           \
    X(CmdEndQuery)                                                                             \
    X(CmdBeginQueryIndexedEXT)                                                                 \
    X(CmdEndQueryIndexedEXT)

/* Device commands of an instance extension (VK_EXT_debug_utils is the only such extension):
 * the loader resolves them through the instance chain, not the device chain, and so does
 * the layer for their call-downs (hooks.c implements them). */
#define INSTANCE_CHAIN_HOOKS(X)                                                                \
    X(SetDebugUtilsObjectNameEXT)                                                              \
    X(CmdBeginDebugUtilsLabelEXT)                                                              \
    X(CmdEndDebugUtilsLabelEXT)

/* What layers/resources.c hooks: device memory and descriptor pools. */
#define RESOURCE_HOOKS(X)                                                                      \
    X(AllocateMemory)                                                                          \
    X(FreeMemory)                                                                              \
    X(CreateDescriptorPool)                                                                    \
    X(DestroyDescriptorPool)                                                                   \
    X(ResetDescriptorPool)                                                                     \
    X(AllocateDescriptorSets)                                                                  \
    X(FreeDescriptorSets)

/* What layers/commands.c hooks: command pools and command buffers' lives. */
#define COMMAND_HOOKS(X)                                                                       \
    X(CreateCommandPool)                                                                       \
    X(DestroyCommandPool)                                                                      \
    X(AllocateCommandBuffers)                                                                  \
    X(BeginCommandBuffer)                                                                      \
    X(EndCommandBuffer)                                                                        \
    X(FreeCommandBuffers)                                                                      \
    X(ResetCommandPool)                                                                        \
    X(ResetCommandBuffer)                                                                      \
    X(TrimCommandPool)                                                                         \
    X(TrimCommandPoolKHR)                                                                      \
    X(CmdExecuteCommands)

/* What layers/commands_recorded.c hooks: every command it counts. */
#define RECORDED_COMMAND_HOOKS(X)                                                              \
    X(CmdBindPipeline)                                                                         \
    X(CmdBindVertexBuffers)                                                                    \
    X(CmdBindVertexBuffers2)                                                                   \
    X(CmdBindVertexBuffers2EXT)                                                                \
    X(CmdBindIndexBuffer)                                                                      \
    X(CmdBindDescriptorSets)                                                                   \
    X(CmdPushDescriptorSetKHR)                                                                 \
    X(CmdPushDescriptorSetWithTemplateKHR)                                                     \
    X(CmdSetViewport)                                                                          \
    X(CmdSetScissor)                                                                           \
    X(CmdSetViewportWithCount)                                                                 \
    X(CmdSetViewportWithCountEXT)                                                              \
    X(CmdSetScissorWithCount)                                                                  \
    X(CmdSetScissorWithCountEXT)                                                               \
    X(CmdSetLineWidth)                                                                         \
    X(CmdSetDepthBias)                                                                         \
    X(CmdSetBlendConstants)                                                                    \
    X(CmdSetDepthBounds)                                                                       \
    X(CmdSetStencilCompareMask)                                                                \
    X(CmdSetStencilWriteMask)                                                                  \
    X(CmdSetStencilReference)                                                                  \
    X(CmdSetCullMode)                                                                          \
    X(CmdSetCullModeEXT)                                                                       \
    X(CmdSetFrontFace)                                                                         \
    X(CmdSetFrontFaceEXT)                                                                      \
    X(CmdSetPrimitiveTopology)                                                                 \
    X(CmdSetPrimitiveTopologyEXT)                                                              \
    X(CmdSetDepthTestEnable)                                                                   \
    X(CmdSetDepthTestEnableEXT)                                                                \
    X(CmdSetDepthWriteEnable)                                                                  \
    X(CmdSetDepthWriteEnableEXT)                                                               \
    X(CmdSetDepthCompareOp)                                                                    \
    X(CmdSetDepthCompareOpEXT)                                                                 \
    X(CmdDraw)                                                                                 \
    X(CmdDrawIndexed)                                                                          \
    X(CmdDrawIndirect)                                                                         \
    X(CmdDrawIndexedIndirect)                                                                  \
    X(CmdDrawIndirectCount)                                                                    \
    X(CmdDrawIndirectCountKHR)                                                                 \
    X(CmdDrawIndexedIndirectCount)                                                             \
    X(CmdDrawIndexedIndirectCountKHR)                                                          \
    X(CmdDrawIndirectCountAMD)                                                                 \
    X(CmdDrawIndexedIndirectCountAMD)                                                          \
    X(CmdDrawMultiEXT)                                                                         \
    X(CmdDrawMultiIndexedEXT)                                                                  \
    X(CmdDrawIndirectByteCountEXT)                                                             \
    X(CmdDrawMeshTasksEXT)                                                                     \
    X(CmdDrawMeshTasksIndirectEXT)                                                             \
    X(CmdDrawMeshTasksIndirectCountEXT)                                                        \
    X(CmdDrawMeshTasksNV)                                                                      \
    X(CmdDrawMeshTasksIndirectNV)                                                              \
    X(CmdDrawMeshTasksIndirectCountNV)                                                         \
    X(CmdDispatch)                                                                             \
    X(CmdDispatchIndirect)                                                                     \
    X(CmdDispatchBase)                                                                         \
    X(CmdDispatchBaseKHR)                                                                      \
    X(CmdTraceRaysKHR)                                                                         \
    X(CmdTraceRaysIndirectKHR)                                                                 \
    X(CmdTraceRaysIndirect2KHR)                                                                \
    X(CmdPushConstants)                                                                        \
    X(CmdPipelineBarrier)                                                                      \
    X(CmdPipelineBarrier2)                                                                     \
    X(CmdPipelineBarrier2KHR)                                                                  \
    X(CmdCopyBuffer)                                                                           \
    X(CmdCopyImage)                                                                            \
    X(CmdCopyBufferToImage)                                                                    \
    X(CmdCopyImageToBuffer)                                                                    \
    X(CmdBlitImage)                                                                            \
    X(CmdClearColorImage)                                                                      \
    X(CmdClearDepthStencilImage)                                                               \
    X(CmdClearAttachments)                                                                     \
    X(CmdFillBuffer)                                                                           \
    X(CmdUpdateBuffer)                                                                         \
    X(CmdResolveImage)                                                                         \
    X(CmdNextSubpass)

/* Every device-level hook. */
#define DEVICE_HOOKS(X)                                                                        \
    PLUMBING_HOOKS(X)                                                                          \
    SWAPCHAIN_HOOKS(X)                                                                         \
    FRAME_HOOKS(X)                                                                             \
    INSTANCE_CHAIN_HOOKS(X)                                                                    \
    COMMAND_HOOKS(X)                                                                           \
    RECORDED_COMMAND_HOOKS(X)                                                                  \
    RESOURCE_HOOKS(X)

#endif
