/* framescope-demo's render targets: the surface's format and present modes, the swapchain
 * and the offscreen images. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"

/* ---- surface ---- */

bool demo_surface_choose_format(struct demo_gpu *gpu, VkSurfaceKHR surface,
                                VkSurfaceFormatKHR *ret_format)
{
    uint32_t count = 0;
    if (!demo_vk_check(vkGetPhysicalDeviceSurfaceFormatsKHR(gpu->physical_device, surface,
                                                            &count, NULL),
                       "vkGetPhysicalDeviceSurfaceFormatsKHR"))
        return false;
    if (count == 0) {
        fprintf(stderr, DEMO_NAME ": the surface offers no formats\n");
        return false;
    }
    VkSurfaceFormatKHR *formats = calloc(count, sizeof(*formats));
    if (!formats) {
        fprintf(stderr, DEMO_NAME ": out of memory\n");
        return false;
    }
    if (!demo_vk_check(vkGetPhysicalDeviceSurfaceFormatsKHR(gpu->physical_device, surface,
                                                            &count, formats),
                       "vkGetPhysicalDeviceSurfaceFormatsKHR")) {
        free(formats);
        return false;
    }
    /* UNORM, so the shader's colours reach the screen unchanged; else what comes first. */
    *ret_format = formats[0];
    for (uint32_t i = 0; i < count; i++) {
        if ((formats[i].format == VK_FORMAT_B8G8R8A8_UNORM ||
             formats[i].format == VK_FORMAT_R8G8B8A8_UNORM) &&
            formats[i].colorSpace == VK_COLOR_SPACE_SRGB_NONLINEAR_KHR) {
            *ret_format = formats[i];
            break;
        }
    }
    free(formats);
    return true;
}

bool demo_surface_supports_present_mode(VkPhysicalDevice physical_device, VkSurfaceKHR surface,
                                        VkPresentModeKHR mode)
{
    VkPresentModeKHR modes[16];
    uint32_t count = 16;
    VkResult result = vkGetPhysicalDeviceSurfacePresentModesKHR(physical_device, surface,
                                                                &count, modes);
    if (!demo_vk_check(result, "vkGetPhysicalDeviceSurfacePresentModesKHR"))
        return false;
    for (uint32_t i = 0; i < count; i++) {
        if (modes[i] == mode)
            return true;
    }

    char offered[256] = "";
    size_t used = 0;
    for (uint32_t i = 0; i < count && used < sizeof(offered); i++) {
        int n = snprintf(offered + used, sizeof(offered) - used, "%s%s", i ? ", " : "",
                         demo_present_mode_name(modes[i]));
        if (n < 0)
            break;
        used += (size_t)n;
    }
    fprintf(stderr, DEMO_NAME ": --present-mode: the surface does not support %s "
            "(it offers: %s)\n", demo_present_mode_name(mode), offered);
    return false;
}

/* ---- render targets ---- */

static bool init_image_views(struct demo_gpu *gpu, const struct demo_pipeline *pipeline,
                             struct demo_targets *targets)
{
    for (uint32_t i = 0; i < targets->image_count; i++) {
        struct demo_image *image = &targets->images[i];
        VkImageViewCreateInfo view_info = {
            .sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
            .image = image->image,
            .viewType = VK_IMAGE_VIEW_TYPE_2D,
            .format = pipeline->format,
            .subresourceRange = {
                .aspectMask = VK_IMAGE_ASPECT_COLOR_BIT,
                .levelCount = 1,
                .layerCount = 1,
            },
        };
        if (!demo_vk_check(vkCreateImageView(gpu->device, &view_info, NULL, &image->view),
                           "vkCreateImageView"))
            return false;

        VkFramebufferCreateInfo framebuffer_info = {
            .sType = VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO,
            .renderPass = pipeline->frame_pass,
            .attachmentCount = 1,
            .pAttachments = &image->view,
            .width = targets->extent.width,
            .height = targets->extent.height,
            .layers = 1,
        };
        if (!demo_vk_check(vkCreateFramebuffer(gpu->device, &framebuffer_info, NULL,
                                               &image->framebuffer),
                           "vkCreateFramebuffer"))
            return false;
    }
    return true;
}

struct demo_targets *demo_targets_create_swapchain(struct demo_gpu *gpu,
                                                   const struct demo_pipeline *pipeline,
                                                   VkSurfaceKHR surface,
                                                   VkSurfaceFormatKHR format,
                                                   VkExtent2D extent,
                                                   VkPresentModeKHR present_mode,
                                                   VkSwapchainKHR old)
{
    VkSurfaceCapabilitiesKHR caps;
    if (!demo_vk_check(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(gpu->physical_device, surface,
                                                                 &caps),
                       "vkGetPhysicalDeviceSurfaceCapabilitiesKHR"))
        return NULL;

    /* Wayland leaves the size to the client (0xFFFFFFFF); other platforms dictate it. */
    if (caps.currentExtent.width != UINT32_MAX) {
        extent = caps.currentExtent;
    } else {
        if (extent.width < caps.minImageExtent.width)
            extent.width = caps.minImageExtent.width;
        if (extent.width > caps.maxImageExtent.width)
            extent.width = caps.maxImageExtent.width;
        if (extent.height < caps.minImageExtent.height)
            extent.height = caps.minImageExtent.height;
        if (extent.height > caps.maxImageExtent.height)
            extent.height = caps.maxImageExtent.height;
    }
    /* One more than the minimum, so acquiring never waits on the image being scanned out. */
    uint32_t image_count = caps.minImageCount + 1;
    if (caps.maxImageCount > 0 && image_count > caps.maxImageCount)
        image_count = caps.maxImageCount;

    VkCompositeAlphaFlagBitsKHR alpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR;
    if (!(caps.supportedCompositeAlpha & alpha)) {
        static const VkCompositeAlphaFlagBitsKHR fallbacks[] = {
            VK_COMPOSITE_ALPHA_INHERIT_BIT_KHR,
            VK_COMPOSITE_ALPHA_PRE_MULTIPLIED_BIT_KHR,
            VK_COMPOSITE_ALPHA_POST_MULTIPLIED_BIT_KHR,
        };
        for (size_t i = 0; i < sizeof(fallbacks) / sizeof(fallbacks[0]); i++) {
            if (caps.supportedCompositeAlpha & fallbacks[i]) {
                alpha = fallbacks[i];
                break;
            }
        }
    }

    struct demo_targets *targets = calloc(1, sizeof(*targets));
    if (!targets) {
        fprintf(stderr, DEMO_NAME ": out of memory\n");
        return NULL;
    }
    targets->extent = extent;

    VkSwapchainCreateInfoKHR create_info = {
        .sType = VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR,
        .surface = surface,
        .minImageCount = image_count,
        .imageFormat = format.format,
        .imageColorSpace = format.colorSpace,
        .imageExtent = extent,
        .imageArrayLayers = 1,
        .imageUsage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT,
        .imageSharingMode = VK_SHARING_MODE_EXCLUSIVE,
        .preTransform = (caps.supportedTransforms & VK_SURFACE_TRANSFORM_IDENTITY_BIT_KHR)
                        ? VK_SURFACE_TRANSFORM_IDENTITY_BIT_KHR : caps.currentTransform,
        .compositeAlpha = alpha,
        .presentMode = present_mode,
        .clipped = VK_TRUE,
        .oldSwapchain = old,
    };
    if (!demo_vk_check(vkCreateSwapchainKHR(gpu->device, &create_info, NULL,
                                            &targets->swapchain),
                       "vkCreateSwapchainKHR"))
        goto error;

    uint32_t count = 0;
    if (!demo_vk_check(vkGetSwapchainImagesKHR(gpu->device, targets->swapchain, &count, NULL),
                       "vkGetSwapchainImagesKHR"))
        goto error;
    VkImage *images = calloc(count, sizeof(*images));
    targets->images = calloc(count, sizeof(*targets->images));
    if (!images || !targets->images) {
        free(images);
        fprintf(stderr, DEMO_NAME ": out of memory\n");
        goto error;
    }
    VkResult result = vkGetSwapchainImagesKHR(gpu->device, targets->swapchain, &count, images);
    for (uint32_t i = 0; i < count; i++)
        targets->images[i].image = images[i];
    free(images);
    if (!demo_vk_check(result, "vkGetSwapchainImagesKHR"))
        goto error;
    targets->image_count = count;

    for (uint32_t i = 0; i < count; i++) {
        VkSemaphoreCreateInfo semaphore_info = {
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
        };
        if (!demo_vk_check(vkCreateSemaphore(gpu->device, &semaphore_info, NULL,
                                             &targets->images[i].render_done),
                           "vkCreateSemaphore"))
            goto error;
    }
    if (!init_image_views(gpu, pipeline, targets))
        goto error;
    return targets;

error:
    demo_targets_destroy(gpu, targets);
    return NULL;
}

static bool find_memory_type(struct demo_gpu *gpu, uint32_t type_bits, uint32_t *ret_type)
{
    const VkPhysicalDeviceMemoryProperties *props = &gpu->memory_properties;
    for (uint32_t pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < props->memoryTypeCount; i++) {
            if (!(type_bits & (1u << i)))
                continue;
            if (pass == 0 && !(props->memoryTypes[i].propertyFlags &
                               VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
                continue;
            *ret_type = i;
            return true;
        }
    }
    fprintf(stderr, DEMO_NAME ": no memory type for an offscreen image\n");
    return false;
}

struct demo_targets *demo_targets_create_offscreen(struct demo_gpu *gpu,
                                                   const struct demo_pipeline *pipeline,
                                                   VkExtent2D extent, uint32_t image_count)
{
    struct demo_targets *targets = calloc(1, sizeof(*targets));
    if (!targets || !(targets->images = calloc(image_count, sizeof(*targets->images)))) {
        free(targets);
        fprintf(stderr, DEMO_NAME ": out of memory\n");
        return NULL;
    }
    targets->extent = extent;
    targets->image_count = image_count;

    for (uint32_t i = 0; i < image_count; i++) {
        struct demo_image *image = &targets->images[i];
        VkImageCreateInfo image_info = {
            .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
            .imageType = VK_IMAGE_TYPE_2D,
            .format = pipeline->format,
            .extent = { extent.width, extent.height, 1 },
            .mipLevels = 1,
            .arrayLayers = 1,
            .samples = VK_SAMPLE_COUNT_1_BIT,
            .tiling = VK_IMAGE_TILING_OPTIMAL,
            .usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT,
            .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
            .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
        };
        if (!demo_vk_check(vkCreateImage(gpu->device, &image_info, NULL, &image->image),
                           "vkCreateImage"))
            goto error;

        VkMemoryRequirements requirements;
        vkGetImageMemoryRequirements(gpu->device, image->image, &requirements);
        VkMemoryAllocateInfo alloc_info = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
            .allocationSize = requirements.size,
        };
        if (!find_memory_type(gpu, requirements.memoryTypeBits, &alloc_info.memoryTypeIndex))
            goto error;
        if (!demo_vk_check(vkAllocateMemory(gpu->device, &alloc_info, NULL, &image->memory),
                           "vkAllocateMemory"))
            goto error;
        if (!demo_vk_check(vkBindImageMemory(gpu->device, image->image, image->memory, 0),
                           "vkBindImageMemory"))
            goto error;
    }
    if (!init_image_views(gpu, pipeline, targets))
        goto error;
    return targets;

error:
    demo_targets_destroy(gpu, targets);
    return NULL;
}

void demo_targets_destroy(struct demo_gpu *gpu, struct demo_targets *targets)
{
    if (!targets)
        return;
    for (uint32_t i = 0; targets->images && i < targets->image_count; i++) {
        struct demo_image *image = &targets->images[i];
        if (image->framebuffer)
            vkDestroyFramebuffer(gpu->device, image->framebuffer, NULL);
        if (image->view)
            vkDestroyImageView(gpu->device, image->view, NULL);
        if (image->render_done)
            vkDestroySemaphore(gpu->device, image->render_done, NULL);
        if (image->memory) {
            vkDestroyImage(gpu->device, image->image, NULL);
            vkFreeMemory(gpu->device, image->memory, NULL);
        } else if (image->image && !targets->swapchain) {
            vkDestroyImage(gpu->device, image->image, NULL);
        }
    }
    if (targets->swapchain)
        vkDestroySwapchainKHR(gpu->device, targets->swapchain, NULL);
    free(targets->images);
    free(targets);
}
