/* Walks every entry point the layer hooks (layers/hook_list.h, the same lists the layer builds
 * its lookups from) over an instance of the given API version and a device that enable no
 * extension, as an app sees them:
 *
 *   hook-walk 1.0|1.3
 *
 * For each name, one line:
 *
 *   NAME gipa=0|1 gdpa=0|1|- ours=0|1 call_gipa=CLASS call_gdpa=CLASS
 *
 * gipa and gdpa: whether vkGetInstanceProcAddr / vkGetDeviceProcAddr gave a function ("-":
 * a global or instance name, not asked of the device); ours: whether either points into the
 * framescope layer. Each function obtained is called once, in a child of its own, with its
 * first handle (the command buffer, in recording state, for vkCmd*; the queue for vkQueue*;
 * the device, or the instance for instance-level names) and zeros for the rest, so CLASS
 * says what happens when an app calls it: "none" (nothing to call), "ok" (it returned),
 * "null" (it jumped to address 0: a NULL function pointer called somewhere down the chain),
 * "crash" (another fault: zeros are not valid arguments for most functions), "signal N" or
 * "hang" (no return within a few seconds). tests/test_layer.py (hook_walk) compares a run
 * with the layer against one without it.
 *
 * Then debug utils as mpv calls them (real arguments, the extension not enabled): one line
 * "debug-utils set_name=RESULT" and one "debug-utils label=returned" for each that exists.
 *
 * Exit status 0 when the walk ran, 1 when it could not start. */
#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <vulkan/vulkan.h>

#include "hook_list.h"

enum first_handle { FIRST_INSTANCE, FIRST_DEVICE, FIRST_QUEUE, FIRST_COMMAND_BUFFER };

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
 * threads the fork left behind) is not what the walk looks for, so a second is enough. */
#define CALL_SECONDS 1

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

typedef uint64_t (*any_call)(void *, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
                             uint64_t, uint64_t);

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
         * The x86-64 calling convention lets one cast call any of them this way. */
        ((any_call)(void *)fn)(first, 0, 0, 0, 0, 0, 0, 0);
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

int main(int argc, char **argv)
{
    uint32_t api = 0;
    if (argc == 2 && strcmp(argv[1], "1.0") == 0)
        api = VK_API_VERSION_1_0;
    else if (argc == 2 && strcmp(argv[1], "1.3") == 0)
        api = VK_API_VERSION_1_3;
    if (!api) {
        fprintf(stderr, "usage: hook-walk 1.0|1.3\n");
        return 1;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    const VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "hook-walk",
        .apiVersion = api,
    };
    const VkInstanceCreateInfo instance_info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
    };
    VkInstance instance;
    if (vkCreateInstance(&instance_info, NULL, &instance) != VK_SUCCESS) {
        fprintf(stderr, "hook-walk: vkCreateInstance failed\n");
        return 1;
    }
    uint32_t count = 1;
    VkPhysicalDevice phys;
    VkResult r = vkEnumeratePhysicalDevices(instance, &count, &phys);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || count == 0) {
        fprintf(stderr, "hook-walk: no physical device\n");
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
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue_info,
    };
    VkDevice device;
    if (vkCreateDevice(phys, &device_info, NULL, &device) != VK_SUCCESS) {
        fprintf(stderr, "hook-walk: vkCreateDevice failed\n");
        return 1;
    }
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
        fprintf(stderr, "hook-walk: vkCreateCommandPool failed\n");
        return 1;
    }
    VkCommandBufferAllocateInfo cb_alloc = cb_info;
    cb_alloc.commandPool = pool;
    if (vkAllocateCommandBuffers(device, &cb_alloc, &cb) != VK_SUCCESS ||
        vkBeginCommandBuffer(cb, &begin) != VK_SUCCESS) {
        fprintf(stderr, "hook-walk: no command buffer to record into\n");
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
            .pObjectName = "hook-walk device",
        };
        printf("debug-utils set_name=%d\n", (int)set_name(device, &name_info));
    }
    if (label_begin && label_end) {
        const VkDebugUtilsLabelEXT label = {
            .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
            .pLabelName = "hook-walk label",
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
