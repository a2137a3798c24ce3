/* Probes the layer's contract with the loader and the app directly.
 *
 *   layer-probe functions       a Vulkan 1.1 app that enables no extension: prints what
 *                               vkGetDeviceProcAddr gives for functions of extensions the
 *                               layer may enable for itself (they must be NULL)
 *   layer-probe negotiate SO    dlopens the layer and negotiates interface versions 1, 2, 5
 *   layer-probe families        prints every GPU's queue families and timestamp valid bits
 *   layer-probe multiview N     records and submits N times: label "outer" around a classic
 *                               multiview render pass (two views) with label "inside" in it,
 *                               then a plain pass (vkCreateRenderPass2) with label "plain" in
 *                               it; waits each time
 *   layer-probe resubmit N      the same command buffer recorded once, submitted N times (a
 *                               fence wait between), as samples that record at start-up do
 *   layer-probe simultaneous N  the same, recorded once with SIMULTANEOUS_USE, as vkcube does
 *   layer-probe behind N        a command buffer recorded once with two plain passes back to
 *                               back and nothing else (vkcube's shape), submitted N times,
 *                               behind another command buffer (recorded once, empty) in odd
 *                               rounds but the last, alone in the others; prints the
 *                               device's type
 *   layer-probe storm N         N submissions in flight at once: each waits on a timeline
 *                               semaphore the host signals only after the last is submitted
 *   layer-probe closed-stderr F an instance, then stdout and stderr closed and F opened twice
 *                               (taking numbers 1 and 2), "app data" written to each, and exit
 *                               without destroying anything (SuperTuxKart closes its fds 1
 *                               and 2 at exit)
 *   layer-probe walk 1.0|1.3    every entry point the layer hooks (layers/hook_list.h, the
 *                               lists the layer builds its lookups from), over an instance
 *                               of that version and a device with no extension enabled; per
 *                               name: "NAME gipa=0|1 gdpa=0|1|- ours=0|1 call_gipa=CLASS
 *                               call_gdpa=CLASS": whether vkGetInstanceProcAddr and
 *                               vkGetDeviceProcAddr gave a function ("-": not a device
 *                               name), whether either is the layer's, and what calling it
 *                               once in a child (its first handle, zeros for the rest) did:
 *                               none, ok, null (a jump to address 0), crash (another fault:
 *                               zeros are bad arguments for most), signal-N or hang. Then
 *                               "debug-utils set_name=RESULT" and "debug-utils
 *                               label=returned": debug utils called as libplacebo calls
 *                               them, with real arguments, the extension not enabled
 *
 * Exit status 0 when the probe ran (the test reads the output), 1 on a failure to run. */
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

#include "hook_list.h"


/* Every physical device's queue families: flags and timestamp valid bits. */
static int probe_families(void)
{
    const VkInstanceCreateInfo info = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO };
    VkInstance instance;
    if (vkCreateInstance(&info, NULL, &instance) != VK_SUCCESS)
        return 1;
    VkPhysicalDevice phys[8];
    uint32_t count = 8;
    vkEnumeratePhysicalDevices(instance, &count, phys);
    for (uint32_t d = 0; d < count; d++) {
        VkPhysicalDeviceProperties props;
        vkGetPhysicalDeviceProperties(phys[d], &props);
        VkQueueFamilyProperties families[16];
        uint32_t n = 16;
        vkGetPhysicalDeviceQueueFamilyProperties(phys[d], &n, families);
        for (uint32_t f = 0; f < n; f++)
            printf("%s family %u: flags 0x%x queues %u timestampValidBits %u period %g\n",
                   props.deviceName, f, families[f].queueFlags, families[f].queueCount,
                   families[f].timestampValidBits, props.limits.timestampPeriod);
    }
    vkDestroyInstance(instance, NULL);
    return 0;
}

static int probe_negotiate(const char *path)
{
    void *layer = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!layer) {
        fprintf(stderr, "layer-probe: %s\n", dlerror());
        return 1;
    }
    PFN_vkNegotiateLoaderLayerInterfaceVersion negotiate;
    *(void **)&negotiate = dlsym(layer, "vkNegotiateLoaderLayerInterfaceVersion");
    if (!negotiate) {
        fprintf(stderr, "layer-probe: no vkNegotiateLoaderLayerInterfaceVersion\n");
        return 1;
    }
    static const uint32_t offered[] = { 1, 2, 5 };
    for (unsigned i = 0; i < 3; i++) {
        VkNegotiateLayerInterface v = {
            .sType = LAYER_NEGOTIATE_INTERFACE_STRUCT,
            .loaderLayerInterfaceVersion = offered[i],
        };
        VkResult r = negotiate(&v);
        printf("offered %u: result %d, version %u, gipa %s\n", offered[i], r,
               v.loaderLayerInterfaceVersion, v.pfnGetInstanceProcAddr ? "set" : "NULL");
    }
    return 0;
}

#define PROBE_CHECK(call)                                                                      \
    do {                                                                                       \
        VkResult r_ = (call);                                                                  \
        if (r_ != VK_SUCCESS) {                                                                \
            fprintf(stderr, "layer-probe: %s: %d\n", #call, r_);                               \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

/* A classic render pass over a 2-layer colour image, multiview over both layers when
 * view_mask is not 0. */
static VkResult make_pass(VkDevice device, uint32_t view_mask, VkRenderPass *ret)
{
    const VkAttachmentDescription color = {
        .format = VK_FORMAT_R8G8B8A8_UNORM,
        .samples = VK_SAMPLE_COUNT_1_BIT,
        .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
        .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
        .stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
        .stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
        .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
        .finalLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
    };
    const VkAttachmentReference ref = { 0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL };
    const VkSubpassDescription subpass = {
        .pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS,
        .colorAttachmentCount = 1,
        .pColorAttachments = &ref,
    };
    const VkRenderPassMultiviewCreateInfo multiview = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_MULTIVIEW_CREATE_INFO,
        .subpassCount = 1,
        .pViewMasks = &view_mask,
    };
    const VkRenderPassCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO,
        .pNext = view_mask ? &multiview : NULL,
        .attachmentCount = 1,
        .pAttachments = &color,
        .subpassCount = 1,
        .pSubpasses = &subpass,
    };
    return vkCreateRenderPass(device, &info, NULL, ret);
}

/* The same single-view pass through vkCreateRenderPass2 (Vulkan 1.2). */
static VkResult make_pass2(VkDevice device, VkRenderPass *ret)
{
    const VkAttachmentDescription2 color = {
        .sType = VK_STRUCTURE_TYPE_ATTACHMENT_DESCRIPTION_2,
        .format = VK_FORMAT_R8G8B8A8_UNORM,
        .samples = VK_SAMPLE_COUNT_1_BIT,
        .loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR,
        .storeOp = VK_ATTACHMENT_STORE_OP_STORE,
        .stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE,
        .stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE,
        .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
        .finalLayout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
    };
    const VkAttachmentReference2 ref = {
        .sType = VK_STRUCTURE_TYPE_ATTACHMENT_REFERENCE_2,
        .attachment = 0,
        .layout = VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
        .aspectMask = VK_IMAGE_ASPECT_COLOR_BIT,
    };
    const VkSubpassDescription2 subpass = {
        .sType = VK_STRUCTURE_TYPE_SUBPASS_DESCRIPTION_2,
        .pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS,
        .colorAttachmentCount = 1,
        .pColorAttachments = &ref,
    };
    const VkRenderPassCreateInfo2 info = {
        .sType = VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO_2,
        .attachmentCount = 1,
        .pAttachments = &color,
        .subpassCount = 1,
        .pSubpasses = &subpass,
    };
    return vkCreateRenderPass2(device, &info, NULL, ret);
}

/* An instance of API version api (with VK_EXT_debug_utils where asked) and a device on its
 * first GPU with one queue of family 0, no extension and the feature structs given. */
static int probe_open(uint32_t api, bool debug_utils, const void *features,
                      VkInstance *ret_instance, VkPhysicalDevice *ret_phys, VkDevice *ret_device)
{
    const VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "layer-probe",
        .apiVersion = api,
    };
    const char *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    const VkInstanceCreateInfo instance_info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
        .enabledExtensionCount = debug_utils ? 1 : 0,
        .ppEnabledExtensionNames = &ext,
    };
    PROBE_CHECK(vkCreateInstance(&instance_info, NULL, ret_instance));
    uint32_t count = 1;
    VkResult er = vkEnumeratePhysicalDevices(*ret_instance, &count, ret_phys);
    if ((er != VK_SUCCESS && er != VK_INCOMPLETE) || !count) {
        fprintf(stderr, "layer-probe: no physical device\n");
        return 1;
    }
    const float priority = 1.0f;
    const VkDeviceQueueCreateInfo queue_info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    const VkDeviceCreateInfo device_info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = features,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue_info,
    };
    PROBE_CHECK(vkCreateDevice(*ret_phys, &device_info, NULL, ret_device));
    return 0;
}

static int probe_functions(void)
{
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice device;
    if (probe_open(VK_API_VERSION_1_1, false, NULL, &instance, &phys, &device) != 0)
        return 1;
    static const char *const names[] = {
        "vkResetQueryPoolEXT", "vkGetCalibratedTimestampsEXT", "vkGetSemaphoreCounterValueKHR",
        "vkWaitSemaphoresKHR", "vkSignalSemaphoreKHR", "vkQueueSubmit",
    };
    for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        printf("%s=%s\n", names[i], vkGetDeviceProcAddr(device, names[i]) ? "set" : "NULL");
    vkDestroyDevice(device, NULL);
    vkDestroyInstance(instance, NULL);
    return 0;
}

struct walked {
    const char *name;
    bool device_level;
};

static const struct walked walked[] = {
#define GLOBAL(fn) {"vk" #fn, false},
#define DEVICE(fn) {"vk" #fn, true},
    GLOBAL_HOOKS(GLOBAL)
    INSTANCE_HOOKS(GLOBAL)
    DEVICE_HOOKS(DEVICE)
#undef GLOBAL
#undef DEVICE
};

enum { EXIT_NULL_JUMP = 3, EXIT_FAULT = 4 };
/* A call that would jump to NULL does so at once; one that blocks (a wait on a queue whose
 * threads the fork left behind) is not what the walk looks for. Two seconds: a call that
 * returns takes microseconds, with room for a sanitizer build beside two busy loops. */
#define CALL_SECONDS 2

/* A fault whose instruction address is in the first page is a call through a NULL pointer
 * (or a NULL table with a small offset); any other fault is the zeros being bad arguments. */
static void on_fault(int sig, siginfo_t *info, void *context)
{
    (void)sig;
    (void)info;
    const ucontext_t *uc = context;
    uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    _exit(ip < 4096 ? EXIT_NULL_JUMP : EXIT_FAULT);
}

/* Sixteen arguments, more than any hooked function takes (vkCmdPipelineBarrier takes ten):
 * those past the sixth go on the stack, and a function with more parameters than were passed
 * would read whatever lies there as counts and pointers. */
typedef uint64_t (*any_call)(void *, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                             uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                             uint64_t, uint64_t, uint64_t, uint64_t);

static const char *call_class(PFN_vkVoidFunction fn, void *first)
{
    static char text[32];
    if (!fn)
        return "none";
    fflush(stdout);
    pid_t child = fork();
    if (child < 0)
        return "fork-failed";
    if (child == 0) {
        struct sigaction sa = { .sa_sigaction = on_fault, .sa_flags = SA_SIGINFO };
        sigaction(SIGSEGV, &sa, NULL);
        sigaction(SIGBUS, &sa, NULL);
        sigaction(SIGILL, &sa, NULL);
        alarm(CALL_SECONDS);
        /* Every argument past the first is zero: counts of 0, NULL pointers, null handles.
         * The x86-64 calling convention lets one cast call any of them this way (the callee
         * ignores what it does not take). */
        ((any_call)(void *)fn)(first, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        _exit(0);
    }
    int status;
    if (waitpid(child, &status, 0) != child)
        return "wait-failed";
    if (WIFEXITED(status))
        switch (WEXITSTATUS(status)) {
        case 0: return "ok";
        case EXIT_NULL_JUMP: return "null";
        case EXIT_FAULT: return "crash";
        default: snprintf(text, sizeof(text), "exit-%d", WEXITSTATUS(status)); return text;
        }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        return "hang";
    snprintf(text, sizeof(text), "signal-%d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return text;
}

static bool in_layer(PFN_vkVoidFunction fn)
{
    Dl_info info;
    return fn && dladdr((void *)fn, &info) && info.dli_fname &&
           strstr(info.dli_fname, "VkLayer_framescope");
}

/* walk: every name layers/hook_list.h lists (the lists the layer hands its hooks out from),
 * over an instance of version api and a device with no extension enabled. */
static int probe_walk(uint32_t api)
{
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice device;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (probe_open(api, false, NULL, &instance, &phys, &device) != 0)
        return 1;
    VkQueue queue;
    vkGetDeviceQueue(device, 0, 0, &queue);
    const VkCommandPoolCreateInfo pool_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
    };
    VkCommandPool pool;
    VkCommandBuffer cb;
    const VkCommandBufferAllocateInfo cb_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    const VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
    };
    if (vkCreateCommandPool(device, &pool_info, NULL, &pool) != VK_SUCCESS) {
        fprintf(stderr, "layer-probe: vkCreateCommandPool failed\n");
        return 1;
    }
    VkCommandBufferAllocateInfo cb_alloc = cb_info;
    cb_alloc.commandPool = pool;
    if (vkAllocateCommandBuffers(device, &cb_alloc, &cb) != VK_SUCCESS ||
        vkBeginCommandBuffer(cb, &begin) != VK_SUCCESS) {
        fprintf(stderr, "layer-probe: no command buffer to record into\n");
        return 1;
    }

    for (unsigned i = 0; i < sizeof(walked) / sizeof(walked[0]); i++) {
        const char *name = walked[i].name;
        void *first = instance;
        if (walked[i].device_level)
            first = strncmp(name, "vkCmd", 5) == 0     ? (void *)cb
                    : strncmp(name, "vkQueue", 7) == 0 ? (void *)queue
                                                       : (void *)device;
        PFN_vkVoidFunction by_instance = vkGetInstanceProcAddr(instance, name);
        PFN_vkVoidFunction by_device =
            walked[i].device_level ? vkGetDeviceProcAddr(device, name) : NULL;
        printf("%s gipa=%d gdpa=%s ours=%d", name, by_instance != NULL,
               walked[i].device_level ? (by_device ? "1" : "0") : "-",
               in_layer(by_instance) || in_layer(by_device));
        printf(" call_gipa=%s", call_class(by_instance, first));
        printf(" call_gdpa=%s\n", call_class(by_device, first));
    }
    /* mpv's pattern (libplacebo): debug utils fetched and called with real arguments on a
     * device that never enabled the extension. Anything but a return kills this process. */
    PFN_vkSetDebugUtilsObjectNameEXT set_name =
        (PFN_vkSetDebugUtilsObjectNameEXT)vkGetDeviceProcAddr(device, "vkSetDebugUtilsObjectNameEXT");
    PFN_vkCmdBeginDebugUtilsLabelEXT label_begin =
        (PFN_vkCmdBeginDebugUtilsLabelEXT)vkGetDeviceProcAddr(device, "vkCmdBeginDebugUtilsLabelEXT");
    PFN_vkCmdEndDebugUtilsLabelEXT label_end =
        (PFN_vkCmdEndDebugUtilsLabelEXT)vkGetDeviceProcAddr(device, "vkCmdEndDebugUtilsLabelEXT");
    if (set_name) {
        const VkDebugUtilsObjectNameInfoEXT name_info = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT,
            .objectType = VK_OBJECT_TYPE_DEVICE,
            .objectHandle = (uint64_t)(uintptr_t)device,
            .pObjectName = "layer-probe device",
        };
        printf("debug-utils set_name=%d\n", (int)set_name(device, &name_info));
    }
    if (label_begin && label_end) {
        const VkDebugUtilsLabelEXT label = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
            .pLabelName = "layer-probe label",
        };
        label_begin(cb, &label);
        label_end(cb);
        printf("debug-utils label=returned\n");
    }
    vkEndCommandBuffer(cb);
    vkDestroyCommandPool(device, pool, NULL);
    vkDestroyDevice(device, NULL);
    vkDestroyInstance(instance, NULL);
    return 0;
}

enum probe_record {
    RECORD_EACH_ROUND, /* ONE_TIME_SUBMIT, recorded again for every submission */
    RECORD_ONCE,
    RECORD_SIMULTANEOUS, /* once, with SIMULTANEOUS_USE */
    RECORD_BEHIND,       /* once, two plain passes; behind another command buffer in odd rounds */
};

static int probe_multiview(int rounds, enum probe_record how)
{
    bool record_once = how != RECORD_EACH_ROUND, simultaneous = how == RECORD_SIMULTANEOUS;
    const VkPhysicalDeviceMultiviewFeatures multiview = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MULTIVIEW_FEATURES,
        .multiview = VK_TRUE,
    };
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice device;
    if (probe_open(VK_API_VERSION_1_2, true, &multiview, &instance, &phys, &device) != 0)
        return 1;
    PFN_vkCmdBeginDebugUtilsLabelEXT begin_label =
        (PFN_vkCmdBeginDebugUtilsLabelEXT)vkGetDeviceProcAddr(device,
                                                              "vkCmdBeginDebugUtilsLabelEXT");
    PFN_vkCmdEndDebugUtilsLabelEXT end_label =
        (PFN_vkCmdEndDebugUtilsLabelEXT)vkGetDeviceProcAddr(device, "vkCmdEndDebugUtilsLabelEXT");
    if (!begin_label || !end_label) {
        fprintf(stderr, "layer-probe: no debug-utils labels\n");
        return 1;
    }
    VkQueue queue;
    vkGetDeviceQueue(device, 0, 0, &queue);

    const VkImageCreateInfo image_info = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
        .imageType = VK_IMAGE_TYPE_2D,
        .format = VK_FORMAT_R8G8B8A8_UNORM,
        .extent = { 64, 64, 1 },
        .mipLevels = 1,
        .arrayLayers = 2,
        .samples = VK_SAMPLE_COUNT_1_BIT,
        .tiling = VK_IMAGE_TILING_OPTIMAL,
        .usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT,
    };
    VkImage image;
    PROBE_CHECK(vkCreateImage(device, &image_info, NULL, &image));
    VkMemoryRequirements req;
    vkGetImageMemoryRequirements(device, image, &req);
    VkPhysicalDeviceMemoryProperties mem;
    vkGetPhysicalDeviceMemoryProperties(phys, &mem);
    uint32_t type = 0;
    while (type < mem.memoryTypeCount && !(req.memoryTypeBits & (1u << type)))
        type++;
    const VkMemoryAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = type,
    };
    VkDeviceMemory memory;
    PROBE_CHECK(vkAllocateMemory(device, &alloc, NULL, &memory));
    PROBE_CHECK(vkBindImageMemory(device, image, memory, 0));
    VkImageViewCreateInfo view_info = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
        .image = image,
        .viewType = VK_IMAGE_VIEW_TYPE_2D_ARRAY,
        .format = VK_FORMAT_R8G8B8A8_UNORM,
        .subresourceRange = { VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 2 },
    };
    VkImageView views[2];
    PROBE_CHECK(vkCreateImageView(device, &view_info, NULL, &views[0]));
    view_info.viewType = VK_IMAGE_VIEW_TYPE_2D;
    view_info.subresourceRange.layerCount = 1;
    PROBE_CHECK(vkCreateImageView(device, &view_info, NULL, &views[1]));
    VkRenderPass passes[2];
    PROBE_CHECK(make_pass(device, 0x3, &passes[0]));
    PROBE_CHECK(make_pass2(device, &passes[1]));
    VkFramebuffer framebuffers[2];
    for (int i = 0; i < 2; i++) {
        const VkFramebufferCreateInfo fb_info = {
            .sType = VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO,
            .renderPass = passes[i],
            .attachmentCount = 1,
            .pAttachments = &views[i],
            .width = 64,
            .height = 64,
            .layers = 1,
        };
        PROBE_CHECK(vkCreateFramebuffer(device, &fb_info, NULL, &framebuffers[i]));
    }
    const VkCommandPoolCreateInfo pool_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
    };
    VkCommandPool pool;
    PROBE_CHECK(vkCreateCommandPool(device, &pool_info, NULL, &pool));
    const VkCommandBufferAllocateInfo cb_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    VkCommandBuffer cb, lead;
    PROBE_CHECK(vkAllocateCommandBuffers(device, &cb_info, &cb));
    PROBE_CHECK(vkAllocateCommandBuffers(device, &cb_info, &lead));
    if (how == RECORD_BEHIND) {
        const VkCommandBufferBeginInfo begin = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        };
        PROBE_CHECK(vkBeginCommandBuffer(lead, &begin));
        PROBE_CHECK(vkEndCommandBuffer(lead));
        VkPhysicalDeviceProperties props;
        vkGetPhysicalDeviceProperties(phys, &props);
        printf("device type: %s\n",
               props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? "cpu" : "gpu");
    }
    const VkFenceCreateInfo fence_info = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
    VkFence fence;
    PROBE_CHECK(vkCreateFence(device, &fence_info, NULL, &fence));

    static const char *const names[2][2] = { { "outer", "inside" }, { "plain outer", "plain" } };
    for (int round = 0; round < rounds; round++) {
        const VkCommandBufferBeginInfo begin = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
            .flags = simultaneous ? VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT
                     : record_once ? 0
                                   : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
        };
        if (record_once && round)
            goto submit;
        PROBE_CHECK(vkBeginCommandBuffer(cb, &begin));
        for (int i = 0; i < 2 && how == RECORD_BEHIND; i++) {
            const VkClearValue clear = { .color = { .float32 = { 0, 0, 0, 1 } } };
            const VkRenderPassBeginInfo pass = {
                .sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
                .renderPass = passes[1],
                .framebuffer = framebuffers[1],
                .renderArea = { { 0, 0 }, { 64, 64 } },
                .clearValueCount = 1,
                .pClearValues = &clear,
            };
            vkCmdBeginRenderPass(cb, &pass, VK_SUBPASS_CONTENTS_INLINE);
            vkCmdEndRenderPass(cb);
        }
        for (int i = 0; i < 2 && how != RECORD_BEHIND; i++) {
            VkDebugUtilsLabelEXT label = { .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
                                           .pLabelName = names[i][0] };
            begin_label(cb, &label);
            const VkClearValue clear = { .color = { .float32 = { 0, 0, 0, 1 } } };
            const VkRenderPassBeginInfo pass = {
                .sType = VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO,
                .renderPass = passes[i],
                .framebuffer = framebuffers[i],
                .renderArea = { { 0, 0 }, { 64, 64 } },
                .clearValueCount = 1,
                .pClearValues = &clear,
            };
            vkCmdBeginRenderPass(cb, &pass, VK_SUBPASS_CONTENTS_INLINE);
            label.pLabelName = names[i][1];
            begin_label(cb, &label);
            end_label(cb);
            vkCmdEndRenderPass(cb);
            end_label(cb);
        }
        PROBE_CHECK(vkEndCommandBuffer(cb));
    submit:;
        const VkCommandBuffer both[2] = { lead, cb };
        bool behind = how == RECORD_BEHIND && round % 2 && round < rounds - 1;
        const VkSubmitInfo submit = {
            .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
            .commandBufferCount = behind ? 2 : 1,
            .pCommandBuffers = behind ? both : &cb,
        };
        /* The fence can signal before the layer's own completion signal of the same batch
         * (lavapipe, on a loaded machine), and a run submitted then counts as maybe
         * overlapping the last one. The last run goes to an idle queue, so it is always
         * timed: the test's proof that such runs are timed at all. */
        if (simultaneous && round == rounds - 1)
            PROBE_CHECK(vkQueueWaitIdle(queue));
        PROBE_CHECK(vkQueueSubmit(queue, 1, &submit, fence));
        PROBE_CHECK(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX));
        PROBE_CHECK(vkResetFences(device, 1, &fence));
        if (how == RECORD_BEHIND)
            usleep(10000); /* time for the layer's reader (it wakes every few ms) */
    }
    vkDestroyFence(device, fence, NULL);
    vkDestroyCommandPool(device, pool, NULL);
    for (int i = 0; i < 2; i++) {
        vkDestroyFramebuffer(device, framebuffers[i], NULL);
        vkDestroyRenderPass(device, passes[i], NULL);
        vkDestroyImageView(device, views[i], NULL);
    }
    vkDestroyImage(device, image, NULL);
    vkFreeMemory(device, memory, NULL);
    vkDestroyDevice(device, NULL);
    vkDestroyInstance(instance, NULL);
    printf("%d rounds recorded and submitted\n", rounds);
    return 0;
}

/* N submissions held on the GPU by a wait on a timeline semaphore that the host signals once
 * all are submitted: N in flight at once, as an engine submitting hundreds of times a second
 * behind a long GPU frame has. */
static int probe_storm(int count)
{
    const VkPhysicalDeviceVulkan12Features features12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .timelineSemaphore = VK_TRUE,
    };
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice device;
    if (probe_open(VK_API_VERSION_1_2, false, &features12, &instance, &phys, &device) != 0)
        return 1;
    VkQueue queue;
    vkGetDeviceQueue(device, 0, 0, &queue);
    const VkSemaphoreTypeCreateInfo type = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
        .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
    };
    const VkSemaphoreCreateInfo sem_info = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
                                             .pNext = &type };
    VkSemaphore gate;
    PROBE_CHECK(vkCreateSemaphore(device, &sem_info, NULL, &gate));
    const uint64_t open_value = 1;
    const VkTimelineSemaphoreSubmitInfo wait_value = {
        .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
        .waitSemaphoreValueCount = 1,
        .pWaitSemaphoreValues = &open_value,
    };
    const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    const VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .pNext = &wait_value,
        .waitSemaphoreCount = 1,
        .pWaitSemaphores = &gate,
        .pWaitDstStageMask = &stage,
    };
    for (int i = 0; i < count; i++)
        PROBE_CHECK(vkQueueSubmit(queue, 1, &submit, VK_NULL_HANDLE));
    const VkSemaphoreSignalInfo open = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
        .semaphore = gate,
        .value = open_value,
    };
    PROBE_CHECK(vkSignalSemaphore(device, &open));
    PROBE_CHECK(vkQueueWaitIdle(queue));
    vkDestroySemaphore(device, gate, NULL);
    vkDestroyDevice(device, NULL);
    vkDestroyInstance(instance, NULL);
    printf("%d submissions in flight at once\n", count);
    return 0;
}

static int probe_closed_stderr(const char *path)
{
    const VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "layer-probe",
        .apiVersion = VK_API_VERSION_1_1,
    };
    const VkInstanceCreateInfo instance_info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
    };
    VkInstance instance;
    PROBE_CHECK(vkCreateInstance(&instance_info, NULL, &instance));
    close(1);
    close(2);
    for (int i = 0; i < 2; i++) {
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, "app data\n", 9) != 9)
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "functions") == 0)
        return probe_functions();
    if (argc == 2 && strcmp(argv[1], "families") == 0)
        return probe_families();
    if (argc == 3 && strcmp(argv[1], "negotiate") == 0)
        return probe_negotiate(argv[2]);
    if (argc == 3 && strcmp(argv[1], "multiview") == 0 && atoi(argv[2]) > 0)
        return probe_multiview(atoi(argv[2]), RECORD_EACH_ROUND);
    if (argc == 3 && strcmp(argv[1], "resubmit") == 0 && atoi(argv[2]) > 0)
        return probe_multiview(atoi(argv[2]), RECORD_ONCE);
    if (argc == 3 && strcmp(argv[1], "simultaneous") == 0 && atoi(argv[2]) > 0)
        return probe_multiview(atoi(argv[2]), RECORD_SIMULTANEOUS);
    if (argc == 3 && strcmp(argv[1], "behind") == 0 && atoi(argv[2]) > 0)
        return probe_multiview(atoi(argv[2]), RECORD_BEHIND);
    if (argc == 3 && strcmp(argv[1], "storm") == 0 && atoi(argv[2]) > 0)
        return probe_storm(atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "closed-stderr") == 0)
        return probe_closed_stderr(argv[2]);
    if (argc == 3 && strcmp(argv[1], "walk") == 0 && strcmp(argv[2], "1.0") == 0)
        return probe_walk(VK_API_VERSION_1_0);
    if (argc == 3 && strcmp(argv[1], "walk") == 0 && strcmp(argv[2], "1.3") == 0)
        return probe_walk(VK_API_VERSION_1_3);
    fprintf(stderr, "usage: layer-probe functions | families | negotiate LAYER_SO | "
            "multiview ROUNDS | resubmit ROUNDS | simultaneous ROUNDS | behind ROUNDS | "
            "storm SUBMISSIONS | "
            "closed-stderr FILE | walk 1.0|1.3\n");
    return 2;
}
