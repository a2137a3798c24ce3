/* Probes the layer's contract with the loader and the app directly.
 *
 *   layer-probe functions       a Vulkan 1.1 app that enables no extension: prints what
 *                               vkGetDeviceProcAddr gives for functions of extensions the
 *                               layer may enable for itself (they must be NULL)
 *   layer-probe negotiate SO    dlopens the layer and negotiates interface versions 1, 2, 5
 *   layer-probe families        prints every GPU's queue families and timestamp valid bits
 *
 * Exit status 0 when the probe ran (the test reads the output), 1 on a failure to run. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

static int probe_functions(void)
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
    if (vkCreateInstance(&instance_info, NULL, &instance) != VK_SUCCESS) {
        fprintf(stderr, "layer-probe: vkCreateInstance failed\n");
        return 1;
    }
    uint32_t count = 1;
    VkPhysicalDevice phys;
    VkResult r = vkEnumeratePhysicalDevices(instance, &count, &phys);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || count == 0) {
        fprintf(stderr, "layer-probe: no physical device\n");
        vkDestroyInstance(instance, NULL);
        return 1;
    }
    const float priority = 1.0f;
    const VkDeviceQueueCreateInfo queue = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = 0,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    const VkDeviceCreateInfo device_info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue,
    };
    VkDevice device;
    if (vkCreateDevice(phys, &device_info, NULL, &device) != VK_SUCCESS) {
        fprintf(stderr, "layer-probe: vkCreateDevice failed\n");
        vkDestroyInstance(instance, NULL);
        return 1;
    }
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

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "functions") == 0)
        return probe_functions();
    if (argc == 2 && strcmp(argv[1], "families") == 0)
        return probe_families();
    if (argc == 3 && strcmp(argv[1], "negotiate") == 0)
        return probe_negotiate(argv[2]);
    fprintf(stderr, "usage: layer-probe functions | families | negotiate LAYER_SO\n");
    return 2;
}
