/* framescope-demo's render pass and graphics pipeline (the fullscreen shaders). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"
#include "fullscreen.frag.h"
#include "fullscreen.vert.h"

/* ---- pipeline ---- */

bool demo_render_pass_create(struct demo_gpu *gpu, VkFormat format,
                             VkAttachmentLoadOp load_op, VkImageLayout initial,
                             VkImageLayout final, VkRenderPass *ret_pass)
{
    VkAttachmentDescription attachment = {
        .format = format,
        .samples = VK_SAMPLE_COUNT_1_BIT,
        .loadOp = load_op,
        .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
        .stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
        .stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
        .initialLayout = initial,
        .finalLayout = final,
    };
    VkAttachmentReference color_ref = {
        .attachment = 0,
        .layout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
    };
    VkSubpassDescription subpass = {
        .pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS,
        .colorAttachmentCount = 1,
        .pColorAttachments = &color_ref,
    };
    /*
     * In: the acquire semaphore is waited at colour-attachment output, and the previous
     * writer of the image (an earlier frame, or another band's pass) wrote there too.
     * Out: whoever comes next (present, the closing barrier, --draws' pass) starts from that
     * stage. Reads too, for a pass that loads: its load reads what the one before wrote.
     * Every pass of the demo has these, as render-pass compatibility requires.
     */
    VkSubpassDependency dependencies[] = {
        {
            .srcSubpass = VK_SUBPASS_EXTERNAL,
            .dstSubpass = 0,
            .srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            .dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            .srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
            .dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_READ_BIT |
                             VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
        },
        {
            .srcSubpass = 0,
            .dstSubpass = VK_SUBPASS_EXTERNAL,
            .srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            .dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            .srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
            .dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_READ_BIT |
                             VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
        },
    };
    VkRenderPassCreateInfo create_info = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO,
        .attachmentCount = 1,
        .pAttachments = &attachment,
        .subpassCount = 1,
        .pSubpasses = &subpass,
        .dependencyCount = 2,
        .pDependencies = dependencies,
    };
    return demo_vk_check(vkCreateRenderPass(gpu->device, &create_info, NULL, ret_pass),
                         "vkCreateRenderPass");
}

static bool create_shader_module(struct demo_gpu *gpu, const uint32_t *code, size_t size,
                                 VkShaderModule *ret_module)
{
    VkShaderModuleCreateInfo create_info = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = size,
        .pCode = code,
    };
    return demo_vk_check(vkCreateShaderModule(gpu->device, &create_info, NULL, ret_module),
                         "vkCreateShaderModule");
}

static bool create_graphics_pipeline(struct demo_gpu *gpu, struct demo_pipeline *pipeline)
{
    VkShaderModule vertex = VK_NULL_HANDLE, fragment = VK_NULL_HANDLE;
    bool ok = false;
    if (!create_shader_module(gpu, fullscreen_vert_spv, sizeof(fullscreen_vert_spv), &vertex) ||
        !create_shader_module(gpu, fullscreen_frag_spv, sizeof(fullscreen_frag_spv), &fragment))
        goto out;

    VkPipelineShaderStageCreateInfo stages[] = {
        {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_VERTEX_BIT,
            .module = vertex,
            .pName = "main",
        },
        {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_FRAGMENT_BIT,
            .module = fragment,
            .pName = "main",
        },
    };
    VkPipelineVertexInputStateCreateInfo vertex_input = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO,
    };
    VkPipelineInputAssemblyStateCreateInfo input_assembly = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO,
        .topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST,
    };
    /* Dynamic, so one pipeline serves every swapchain size and every worker's band. */
    VkPipelineViewportStateCreateInfo viewport = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO,
        .viewportCount = 1,
        .scissorCount = 1,
    };
    VkPipelineRasterizationStateCreateInfo rasterization = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO,
        .polygonMode = VK_POLYGON_MODE_FILL,
        .cullMode = VK_CULL_MODE_NONE,
        .frontFace = VK_FRONT_FACE_COUNTER_CLOCKWISE,
        .lineWidth = 1.0f,
    };
    VkPipelineMultisampleStateCreateInfo multisample = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO,
        .rasterizationSamples = VK_SAMPLE_COUNT_1_BIT,
    };
    VkPipelineColorBlendAttachmentState blend_attachment = {
        .colorWriteMask = VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT |
                          VK_COLOR_COMPONENT_B_BIT | VK_COLOR_COMPONENT_A_BIT,
    };
    VkPipelineColorBlendStateCreateInfo blend = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO,
        .attachmentCount = 1,
        .pAttachments = &blend_attachment,
    };
    static const VkDynamicState dynamic_states[] = {
        VK_DYNAMIC_STATE_VIEWPORT,
        VK_DYNAMIC_STATE_SCISSOR,
    };
    VkPipelineDynamicStateCreateInfo dynamic = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO,
        .dynamicStateCount = 2,
        .pDynamicStates = dynamic_states,
    };
    VkGraphicsPipelineCreateInfo create_info = {
        .sType = VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO,
        .stageCount = 2,
        .pStages = stages,
        .pVertexInputState = &vertex_input,
        .pInputAssemblyState = &input_assembly,
        .pViewportState = &viewport,
        .pRasterizationState = &rasterization,
        .pMultisampleState = &multisample,
        .pColorBlendState = &blend,
        .pDynamicState = &dynamic,
        .layout = pipeline->layout,
        .renderPass = pipeline->frame_pass,
        .subpass = 0,
    };
    ok = demo_vk_check(vkCreateGraphicsPipelines(gpu->device, VK_NULL_HANDLE, 1, &create_info,
                                                 NULL, &pipeline->pipeline),
                       "vkCreateGraphicsPipelines");
out:
    if (fragment)
        vkDestroyShaderModule(gpu->device, fragment, NULL);
    if (vertex)
        vkDestroyShaderModule(gpu->device, vertex, NULL);
    return ok;
}

struct demo_pipeline *demo_pipeline_create(struct demo_gpu *gpu, VkFormat format,
                                           VkImageLayout final_layout)
{
    struct demo_pipeline *pipeline = calloc(1, sizeof(*pipeline));
    if (!pipeline) {
        fprintf(stderr, DEMO_NAME ": out of memory\n");
        return NULL;
    }
    pipeline->format = format;
    pipeline->final_layout = final_layout;

    if (!demo_render_pass_create(gpu, format, VK_ATTACHMENT_LOAD_OP_CLEAR,
                                 VK_IMAGE_LAYOUT_UNDEFINED, final_layout,
                                 &pipeline->frame_pass) ||
        !demo_render_pass_create(gpu, format, VK_ATTACHMENT_LOAD_OP_CLEAR,
                                 VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                                 VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, &pipeline->band_pass))
        goto error;

    VkPushConstantRange push_range = {
        .stageFlags = VK_SHADER_STAGE_FRAGMENT_BIT,
        .offset = 0,
        .size = sizeof(struct demo_push_constants),
    };
    VkPipelineLayoutCreateInfo layout_info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &push_range,
    };
    if (!demo_vk_check(vkCreatePipelineLayout(gpu->device, &layout_info, NULL,
                                              &pipeline->layout),
                       "vkCreatePipelineLayout"))
        goto error;
    if (!create_graphics_pipeline(gpu, pipeline))
        goto error;
    return pipeline;

error:
    demo_pipeline_destroy(gpu, pipeline);
    return NULL;
}

void demo_pipeline_destroy(struct demo_gpu *gpu, struct demo_pipeline *pipeline)
{
    if (!pipeline)
        return;
    if (pipeline->pipeline)
        vkDestroyPipeline(gpu->device, pipeline->pipeline, NULL);
    if (pipeline->layout)
        vkDestroyPipelineLayout(gpu->device, pipeline->layout, NULL);
    if (pipeline->band_pass)
        vkDestroyRenderPass(gpu->device, pipeline->band_pass, NULL);
    if (pipeline->frame_pass)
        vkDestroyRenderPass(gpu->device, pipeline->frame_pass, NULL);
    free(pipeline);
}
