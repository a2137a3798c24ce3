/* Loader plumbing: negotiation, proc-address lookup, instance/device/queue bookkeeping.
 *
 * Lookups are lock-free scans of small arrays of atomic pointers; the lock only serialises
 * writers and is never held across a call down the chain. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "layer.h"
#include "log.h"
#include "report.h"

static struct instance_data *_Atomic instances[MAX_INSTANCES];
static struct device_data *_Atomic devices[MAX_DEVICES];
static struct surface_data *_Atomic surfaces[MAX_SURFACES];
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;

struct layer_config layer_config = { .gpu_timing = true, .presentation = true };

#define TABLE_LOOKUP(table, field, value)                                                      \
    do {                                                                                       \
        for (unsigned i_ = 0; i_ < sizeof(table) / sizeof(table[0]); i_++) {                   \
            __typeof__(table[0]) e_ = atomic_load_explicit(&table[i_], memory_order_acquire);  \
            if (e_ && e_->field == (value))                                                    \
                return e_;                                                                     \
        }                                                                                      \
        return NULL;                                                                           \
    } while (0)

/* Puts item in the first empty entry; false when the table is full. */
#define TABLE_INSERT(table, item, ok)                                                          \
    do {                                                                                       \
        ok = false;                                                                            \
        pthread_mutex_lock(&tables_lock);                                                      \
        for (unsigned i_ = 0; i_ < sizeof(table) / sizeof(table[0]) && !ok; i_++) {            \
            if (!atomic_load(&table[i_])) {                                                    \
                atomic_store_explicit(&table[i_], item, memory_order_release);                 \
                ok = true;                                                                     \
            }                                                                                  \
        }                                                                                      \
        pthread_mutex_unlock(&tables_lock);                                                    \
    } while (0)

#define TABLE_REMOVE(table, item)                                                              \
    do {                                                                                       \
        pthread_mutex_lock(&tables_lock);                                                      \
        for (unsigned i_ = 0; i_ < sizeof(table) / sizeof(table[0]); i_++)                     \
            if (atomic_load(&table[i_]) == (item))                                             \
                atomic_store(&table[i_], NULL);                                                \
        pthread_mutex_unlock(&tables_lock);                                                    \
    } while (0)

struct instance_data *instance_lookup(const void *dispatchable)
{
    void *key = dispatch_key(dispatchable);
    TABLE_LOOKUP(instances, key, key);
}

struct device_data *device_lookup(const void *dispatchable)
{
    void *key = dispatch_key(dispatchable);
    TABLE_LOOKUP(devices, key, key);
}

struct queue_data *queue_lookup(struct device_data *dev, VkQueue queue)
{
    TABLE_LOOKUP(dev->queues, queue, queue);
}

struct swapchain_data *swapchain_lookup(struct device_data *dev, VkSwapchainKHR swapchain)
{
    TABLE_LOOKUP(dev->swapchains, swapchain, swapchain);
}

struct surface_data *surface_lookup(VkSurfaceKHR surface)
{
    TABLE_LOOKUP(surfaces, surface, surface);
}

struct surface_data *surface_add(struct instance_data *inst, VkSurfaceKHR surface,
                                 enum surface_kind kind, void *wl_display, void *wl_surface)
{
    struct surface_data *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->surface = surface;
    s->instance = inst;
    s->kind = kind;
    s->wl_display = wl_display;
    s->wl_surface = wl_surface;
    bool ok;
    TABLE_INSERT(surfaces, s, ok);
    if (!ok) {
        free(s);
        return NULL;
    }
    return s;
}

void surface_remove(VkSurfaceKHR surface)
{
    struct surface_data *s = surface_lookup(surface);
    if (!s)
        return;
    /* The app's display is still alive here: the last safe moment to tear Wayland down. */
    fscope_frame_log_untrack(s->frames);
    TABLE_REMOVE(surfaces, s);
    /* The frame log lives on for the summary; the bookkeeping goes. A racing reader is an
     * app bug (using a surface while destroying it), so freeing here is safe. */
    free(s);
}

/* ---- configuration ---------------------------------------------------------------------- */

static void layer_read_config(void)
{
    const char *gpu = secure_getenv("FRAMESCOPE_GPU");
    if (gpu && *gpu) {
        if (strcmp(gpu, "on") == 0 || strcmp(gpu, "1") == 0)
            layer_config.gpu_timing = true;
        else if (strcmp(gpu, "off") == 0 || strcmp(gpu, "0") == 0)
            layer_config.gpu_timing = false;
        else
            fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_GPU=%s is not on or off; using on", gpu);
    }
    const char *present = secure_getenv("FRAMESCOPE_PRESENT");
    if (present && *present) {
        if (strcmp(present, "on") == 0 || strcmp(present, "1") == 0)
            layer_config.presentation = true;
        else if (strcmp(present, "off") == 0 || strcmp(present, "0") == 0)
            layer_config.presentation = false;
        else
            fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_PRESENT=%s is not on or off; using on",
                       present);
    }
    const char *cap = secure_getenv("FRAMESCOPE_CAP");
    double hz;
    if (!cap) {
        layer_config.cap_mode = CAP_OFF;
    } else if (strcmp(cap, "off") == 0) {
        layer_config.cap_mode = CAP_OFF;
    } else if (strcmp(cap, "auto") == 0) {
        layer_config.cap_mode = CAP_AUTO;
    } else if (fscope_config_parse_double(cap, CAP_MIN_HZ, CAP_MAX_HZ, &hz)) {
        layer_config.cap_mode = CAP_FIXED;
        layer_config.cap_hz = hz;
    } else {
        fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_CAP=%s is not a rate in %.0f..%.0f Hz, auto or "
                   "off; the cap is off", cap, CAP_MIN_HZ, CAP_MAX_HZ);
    }
    const char *fault = secure_getenv("FRAMESCOPE_TEST_FAULT");
    if (fault && *fault) {
        if (strcmp(fault, "skip-query-reset") == 0)
            layer_config.fault_skip_query_reset = true;
        else
            fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_TEST_FAULT=%s is not skip-query-reset; "
                       "ignored", fault);
    }
}

static pthread_once_t config_once = PTHREAD_ONCE_INIT;

/* ---- instance ---------------------------------------------------------------------------- */

static VkLayerInstanceCreateInfo *instance_chain_info(const VkInstanceCreateInfo *info,
                                                      VkLayerFunction func)
{
    for (const VkBaseInStructure *s = info->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO &&
            ((VkLayerInstanceCreateInfo *)s)->function == func)
            return (VkLayerInstanceCreateInfo *)s;
    }
    return NULL;
}

static VkLayerDeviceCreateInfo *device_chain_info(const VkDeviceCreateInfo *info,
                                                  VkLayerFunction func)
{
    for (const VkBaseInStructure *s = info->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO &&
            ((VkLayerDeviceCreateInfo *)s)->function == func)
            return (VkLayerDeviceCreateInfo *)s;
    }
    return NULL;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateInstance(
    const VkInstanceCreateInfo *info, const VkAllocationCallbacks *alloc, VkInstance *ret)
{
    pthread_once(&config_once, layer_read_config);
    VkLayerInstanceCreateInfo *chain = instance_chain_info(info, VK_LAYER_LINK_INFO);
    if (!chain || !chain->u.pLayerInfo)
        return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = chain->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    PFN_vkCreateInstance create = (PFN_vkCreateInstance)gipa(VK_NULL_HANDLE, "vkCreateInstance");
    if (!create)
        return VK_ERROR_INITIALIZATION_FAILED;
    struct instance_data *inst = calloc(1, sizeof(*inst));
    if (!inst)
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    /* Advance the chain for the next layer; restored before returning. */
    VkLayerInstanceLink *link = chain->u.pLayerInfo;
    chain->u.pLayerInfo = link->pNext;
    VkResult r = create(info, alloc, ret);
    chain->u.pLayerInfo = link;
    if (r != VK_SUCCESS) {
        free(inst);
        return r;
    }
    inst->instance = *ret;
    inst->key = dispatch_key(*ret);
    inst->api_version = info->pApplicationInfo && info->pApplicationInfo->apiVersion
                            ? info->pApplicationInfo->apiVersion
                            : VK_API_VERSION_1_0;
#define X(name) inst->vk.name = (PFN_vk##name)gipa(*ret, "vk" #name);
    INSTANCE_FUNCTIONS(X)
#undef X
    bool ok;
    TABLE_INSERT(instances, inst, ok);
    if (!ok) {
        /* Without an entry every call on this instance would find no dispatch table: fail
         * its creation cleanly rather than hand the app an instance that crashes later. */
        fscope_log(FSCOPE_LOG_ERROR, "more than %d live instances; refusing another (set "
                   "DISABLE_FRAMESCOPE=1 to run without framescope)", MAX_INSTANCES);
        inst->vk.DestroyInstance(*ret, alloc);
        free(inst);
        *ret = VK_NULL_HANDLE;
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    }
    fscope_report_enable();
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL framescope_DestroyInstance(VkInstance instance,
                                                             const VkAllocationCallbacks *alloc)
{
    if (!instance)
        return;
    struct instance_data *inst = instance_lookup(instance);
    if (!inst)
        return;
    PFN_vkDestroyInstance destroy = inst->vk.DestroyInstance;
    TABLE_REMOVE(instances, inst);
    pthread_mutex_lock(&tables_lock);
    for (unsigned i = 0; i < MAX_SURFACES; i++) {
        struct surface_data *s = atomic_load(&surfaces[i]);
        if (s && s->instance == inst) {
            atomic_store(&surfaces[i], NULL);
            fscope_frame_log_untrack(s->frames);
            free(s);
        }
    }
    pthread_mutex_unlock(&tables_lock);
    free(inst);
    destroy(instance, alloc);
}

/* ---- device ------------------------------------------------------------------------------ */

static bool has_extension(const VkExtensionProperties *props, uint32_t count, const char *name)
{
    for (uint32_t i = 0; i < count; i++)
        if (strcmp(props[i].extensionName, name) == 0)
            return true;
    return false;
}

static bool device_has_extension(struct instance_data *inst, VkPhysicalDevice phys,
                                 const char *name)
{
    uint32_t count = 0;
    if (!inst->vk.EnumerateDeviceExtensionProperties ||
        inst->vk.EnumerateDeviceExtensionProperties(phys, NULL, &count, NULL) != VK_SUCCESS)
        return false;
    VkExtensionProperties *props = calloc(count ? count : 1, sizeof(*props));
    if (!props)
        return false;
    bool found = inst->vk.EnumerateDeviceExtensionProperties(phys, NULL, &count, props) ==
                     VK_SUCCESS &&
                 has_extension(props, count, name);
    free(props);
    return found;
}

static bool device_supports_calibration(struct instance_data *inst, VkPhysicalDevice phys)
{
    if (!device_has_extension(inst, phys, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME) ||
        !inst->vk.GetPhysicalDeviceCalibrateableTimeDomainsEXT)
        return false;
    VkTimeDomainEXT domains[8];
    uint32_t count = 8;
    VkResult r = inst->vk.GetPhysicalDeviceCalibrateableTimeDomainsEXT(phys, &count, domains);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE)
        return false;
    bool device = false, mono = false;
    for (uint32_t i = 0; i < count; i++) {
        device |= domains[i] == VK_TIME_DOMAIN_DEVICE_EXT;
        mono |= domains[i] == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
    }
    return device && mono;
}

static bool extension_enabled(const VkDeviceCreateInfo *info, const char *name)
{
    for (uint32_t i = 0; i < info->enabledExtensionCount; i++)
        if (strcmp(info->ppEnabledExtensionNames[i], name) == 0)
            return true;
    return false;
}

enum host_reset_plan {
    HOST_RESET_NONE,    /* reset queries inside the submission */
    HOST_RESET_ADD,     /* enable VK_EXT_host_query_reset and its feature ourselves */
    HOST_RESET_ENABLED, /* the app already enabled the feature */
};

/* The app's own feature structs decide: adding ours beside a Vulkan12Features struct would be
 * invalid, so then we use host reset only if the app turned it on itself. */
static enum host_reset_plan plan_host_reset(struct instance_data *inst, VkPhysicalDevice phys,
                                            const VkDeviceCreateInfo *info)
{
    for (const VkBaseInStructure *s = info->pNext; s; s = s->pNext) {
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES)
            return ((const VkPhysicalDeviceVulkan12Features *)s)->hostQueryReset
                       ? HOST_RESET_ENABLED : HOST_RESET_NONE;
        if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES)
            return ((const VkPhysicalDeviceHostQueryResetFeatures *)s)->hostQueryReset
                       ? HOST_RESET_ENABLED : HOST_RESET_NONE;
    }
    /* The extension's only feature is required wherever the extension is offered. */
    return device_has_extension(inst, phys, VK_EXT_HOST_QUERY_RESET_EXTENSION_NAME)
               ? HOST_RESET_ADD : HOST_RESET_NONE;
}

static void describe_device(struct instance_data *inst, VkPhysicalDevice phys,
                            struct device_data *dev)
{
    VkPhysicalDeviceProperties props;
    inst->vk.GetPhysicalDeviceProperties(phys, &props);
    dev->timestamp_period = props.limits.timestampPeriod;
    char driver[2 * VK_MAX_DRIVER_NAME_SIZE + 2];
    VkPhysicalDeviceDriverProperties driver_props = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
    };
    VkPhysicalDeviceProperties2 props2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
        .pNext = &driver_props,
    };
    if (inst->vk.GetPhysicalDeviceProperties2 && inst->api_version >= VK_API_VERSION_1_1 &&
        props.apiVersion >= VK_API_VERSION_1_2) {
        inst->vk.GetPhysicalDeviceProperties2(phys, &props2);
        snprintf(driver, sizeof(driver), "%s %s", driver_props.driverName,
                 driver_props.driverInfo);
    } else if (props.vendorID == 0x10de) { /* NVIDIA packs 10.8.8.6 bits */
        uint32_t v = props.driverVersion;
        snprintf(driver, sizeof(driver), "NVIDIA %u.%u.%u", v >> 22, (v >> 14) & 0xff,
                 (v >> 6) & 0xff);
    } else {
        uint32_t v = props.driverVersion;
        snprintf(driver, sizeof(driver), "version %u.%u.%u (vendor 0x%x)", VK_VERSION_MAJOR(v),
                 VK_VERSION_MINOR(v), VK_VERSION_PATCH(v), props.vendorID);
    }
    fscope_report_set_device(props.deviceName, driver);
    uint32_t count = 16;
    inst->vk.GetPhysicalDeviceQueueFamilyProperties(phys, &count, dev->families);
    dev->family_count = count;
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateDevice(VkPhysicalDevice phys,
                                                              const VkDeviceCreateInfo *info,
                                                              const VkAllocationCallbacks *alloc,
                                                              VkDevice *ret)
{
    struct instance_data *inst = instance_lookup(phys);
    VkLayerDeviceCreateInfo *chain = device_chain_info(info, VK_LAYER_LINK_INFO);
    VkLayerDeviceCreateInfo *loader_cb = device_chain_info(info, VK_LOADER_DATA_CALLBACK);
    if (!inst || !chain || !chain->u.pLayerInfo || !loader_cb)
        return VK_ERROR_INITIALIZATION_FAILED;
    PFN_vkGetInstanceProcAddr gipa = chain->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    PFN_vkGetDeviceProcAddr gdpa = chain->u.pLayerInfo->pfnNextGetDeviceProcAddr;
    PFN_vkCreateDevice create = (PFN_vkCreateDevice)gipa(inst->instance, "vkCreateDevice");
    if (!create)
        return VK_ERROR_INITIALIZATION_FAILED;

    struct device_data *dev = calloc(1, sizeof(*dev));
    if (!dev)
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    pthread_mutex_init(&dev->lock, NULL);
    dev->instance = inst;
    dev->physical = phys;
    dev->set_loader_data = loader_cb->u.pfnSetDeviceLoaderData;
    describe_device(inst, phys, dev);

    /* Enable what GPU timing needs and the app did not: VK_EXT_calibrated_timestamps, and
     * VK_EXT_host_query_reset with its feature. */
    VkDeviceCreateInfo modified = *info;
    const char **names = calloc(info->enabledExtensionCount + 2, sizeof(*names));
    if (!names) {
        free(dev);
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    }
    memcpy(names, info->ppEnabledExtensionNames, info->enabledExtensionCount * sizeof(*names));
    modified.ppEnabledExtensionNames = names;
    bool want_calibration = layer_config.gpu_timing && device_supports_calibration(inst, phys);
    if (want_calibration && !extension_enabled(info, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME))
        names[modified.enabledExtensionCount++] = VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME;
    VkPhysicalDeviceHostQueryResetFeatures host_reset = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES,
        .hostQueryReset = VK_TRUE,
    };
    enum host_reset_plan plan = layer_config.gpu_timing ? plan_host_reset(inst, phys, info)
                                                        : HOST_RESET_NONE;
    if (plan == HOST_RESET_ADD) {
        if (!extension_enabled(info, VK_EXT_HOST_QUERY_RESET_EXTENSION_NAME))
            names[modified.enabledExtensionCount++] = VK_EXT_HOST_QUERY_RESET_EXTENSION_NAME;
        host_reset.pNext = (void *)info->pNext;
        modified.pNext = &host_reset;
    }

    VkLayerDeviceLink *link = chain->u.pLayerInfo;
    chain->u.pLayerInfo = link->pNext;
    VkResult r = create(phys, &modified, alloc, ret);
    bool modified_any = modified.enabledExtensionCount != info->enabledExtensionCount ||
                        modified.pNext != info->pNext;
    if (modified_any && (r == VK_ERROR_EXTENSION_NOT_PRESENT || r == VK_ERROR_FEATURE_NOT_PRESENT)) {
        /* What we added is ours to lose, not the app's device: create it as asked. */
        fscope_report_note("the driver refused the extensions framescope adds for GPU timing "
                           "(%d); timing without them", r);
        r = create(phys, info, alloc, ret);
        want_calibration = false;
        plan = HOST_RESET_NONE;
    }
    chain->u.pLayerInfo = link;
    free(names);
    if (r != VK_SUCCESS) {
        free(dev);
        return r;
    }
    dev->device = *ret;
    dev->key = dispatch_key(*ret);
#define X(name) dev->vk.name = (PFN_vk##name)gdpa(*ret, "vk" #name);
    DEVICE_FUNCTIONS(X)
#undef X
    dev->calibrated_timestamps = want_calibration && dev->vk.GetCalibratedTimestampsEXT;
    if (plan != HOST_RESET_NONE)
        dev->reset_query_pool = dev->vk.ResetQueryPoolEXT ? dev->vk.ResetQueryPoolEXT
                                                          : dev->vk.ResetQueryPool;
    bool ok;
    TABLE_INSERT(devices, dev, ok);
    if (!ok) {
        fscope_log(FSCOPE_LOG_ERROR, "more than %d live devices; refusing another (set "
                   "DISABLE_FRAMESCOPE=1 to run without framescope)", MAX_DEVICES);
        dev->vk.DestroyDevice(*ret, alloc);
        pthread_mutex_destroy(&dev->lock);
        free(dev);
        *ret = VK_NULL_HANDLE;
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    }
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL framescope_DestroyDevice(VkDevice device,
                                                           const VkAllocationCallbacks *alloc)
{
    if (!device)
        return;
    struct device_data *dev = device_lookup(device);
    if (!dev)
        return;
    TABLE_REMOVE(devices, dev);
    for (unsigned i = 0; i < MAX_QUEUES; i++) {
        struct queue_data *q = atomic_load(&dev->queues[i]);
        if (q) {
            gpu_queue_finish(dev, q);
            free(q->scratch);
            free(q);
        }
    }
    for (unsigned i = 0; i < MAX_SWAPCHAINS; i++)
        free(atomic_load(&dev->swapchains[i]));
    PFN_vkDestroyDevice destroy = dev->vk.DestroyDevice;
    pthread_mutex_destroy(&dev->lock);
    free(dev);
    destroy(device, alloc);
}

static void queue_register(struct device_data *dev, VkQueue queue, uint32_t family)
{
    if (!queue || queue_lookup(dev, queue))
        return;
    struct queue_data *q = calloc(1, sizeof(*q));
    if (!q)
        return;
    q->queue = queue;
    q->device = dev;
    q->family = family;
    gpu_queue_init(dev, q);
    pthread_mutex_lock(&dev->lock);
    bool stored = false;
    if (!queue_lookup(dev, queue)) {
        for (unsigned i = 0; i < MAX_QUEUES && !stored; i++) {
            if (!atomic_load(&dev->queues[i])) {
                atomic_store_explicit(&dev->queues[i], q, memory_order_release);
                stored = true;
            }
        }
    }
    pthread_mutex_unlock(&dev->lock);
    if (!stored) {
        gpu_queue_finish(dev, q);
        free(q);
    }
}

static VKAPI_ATTR void VKAPI_CALL framescope_GetDeviceQueue(VkDevice device, uint32_t family,
                                                            uint32_t index, VkQueue *ret)
{
    struct device_data *dev = device_lookup(device);
    dev->vk.GetDeviceQueue(device, family, index, ret);
    queue_register(dev, *ret, family);
}

static VKAPI_ATTR void VKAPI_CALL framescope_GetDeviceQueue2(VkDevice device,
                                                             const VkDeviceQueueInfo2 *info,
                                                             VkQueue *ret)
{
    struct device_data *dev = device_lookup(device);
    dev->vk.GetDeviceQueue2(device, info, ret);
    queue_register(dev, *ret, info->queueFamilyIndex);
}

/* ---- surfaces and swapchains ------------------------------------------------------------- */

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateWaylandSurfaceKHR(
    VkInstance instance, const VkWaylandSurfaceCreateInfoKHR *info,
    const VkAllocationCallbacks *alloc, VkSurfaceKHR *ret)
{
    struct instance_data *inst = instance_lookup(instance);
    VkResult r = inst->vk.CreateWaylandSurfaceKHR(instance, info, alloc, ret);
    if (r == VK_SUCCESS)
        surface_add(inst, *ret, SURFACE_WAYLAND, info->display, info->surface);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL framescope_DestroySurfaceKHR(VkInstance instance,
                                                              VkSurfaceKHR surface,
                                                              const VkAllocationCallbacks *alloc)
{
    struct instance_data *inst = instance_lookup(instance);
    surface_remove(surface);
    inst->vk.DestroySurfaceKHR(instance, surface, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL framescope_CreateSwapchainKHR(
    VkDevice device, const VkSwapchainCreateInfoKHR *info, const VkAllocationCallbacks *alloc,
    VkSwapchainKHR *ret)
{
    struct device_data *dev = device_lookup(device);
    VkResult r = dev->vk.CreateSwapchainKHR(device, info, alloc, ret);
    if (r != VK_SUCCESS)
        return r;
    struct surface_data *surface = surface_lookup(info->surface);
    if (!surface) /* XCB, Xlib, display, headless: not hooked, learned here */
        surface = surface_add(dev->instance, info->surface, SURFACE_OTHER, NULL, NULL);
    if (!surface)
        return r;
    if (!surface->frames) {
        char label[64];
        static _Atomic unsigned surfaces_seen;
        snprintf(label, sizeof(label), "%s surface %u",
                 surface->kind == SURFACE_WAYLAND ? "wayland" : "non-wayland",
                 atomic_fetch_add(&surfaces_seen, 1));
        surface->frames = fscope_frame_log_create(label);
        if (surface->kind != SURFACE_WAYLAND)
            fscope_frame_log_untrackable(surface->frames, "not a Wayland surface (XCB, Xlib, "
                                         "display or headless): frames are timed at present");
        else if (!layer_config.presentation)
            fscope_frame_log_untrackable(surface->frames, "off (FRAMESCOPE_PRESENT=off)");
        else
            fscope_frame_log_track_wayland(surface->frames, surface->wl_display,
                                           surface->wl_surface);
        fscope_frame_log_open(surface->frames, fscope_now());
        if (layer_config.cap_mode != CAP_OFF) {
            char cap_label[96];
            if (layer_config.cap_mode == CAP_AUTO)
                snprintf(cap_label, sizeof(cap_label), "FRAMESCOPE_CAP=auto on %s", label);
            else
                snprintf(cap_label, sizeof(cap_label), "FRAMESCOPE_CAP=%g on %s",
                         layer_config.cap_hz, label);
            surface->cap = fscope_cap_create(cap_label);
            if (layer_config.cap_mode == CAP_FIXED)
                fscope_cap_target_hz(surface->cap, layer_config.cap_hz);
            else if (!layer_config.presentation || surface->kind != SURFACE_WAYLAND)
                fscope_report_note("FRAMESCOPE_CAP=auto needs presentation feedback to learn "
                                   "the output's refresh; %s has none, so it is not capped", label);
        }
    }
    struct swapchain_data *sc = calloc(1, sizeof(*sc));
    if (!sc)
        return r;
    sc->swapchain = *ret;
    sc->surface = surface;
    sc->serial = surface->swapchains_created++;
    pthread_mutex_lock(&dev->lock);
    bool stored = false;
    for (unsigned i = 0; i < MAX_SWAPCHAINS && !stored; i++) {
        if (!atomic_load(&dev->swapchains[i])) {
            atomic_store_explicit(&dev->swapchains[i], sc, memory_order_release);
            stored = true;
        }
    }
    pthread_mutex_unlock(&dev->lock);
    if (!stored)
        free(sc);
    return r;
}

static VKAPI_ATTR void VKAPI_CALL framescope_DestroySwapchainKHR(
    VkDevice device, VkSwapchainKHR swapchain, const VkAllocationCallbacks *alloc)
{
    struct device_data *dev = device_lookup(device);
    struct swapchain_data *sc = swapchain ? swapchain_lookup(dev, swapchain) : NULL;
    if (sc) {
        fscope_frame_log_drain(sc->surface->frames);
        pthread_mutex_lock(&dev->lock);
        for (unsigned i = 0; i < MAX_SWAPCHAINS; i++)
            if (atomic_load(&dev->swapchains[i]) == sc)
                atomic_store(&dev->swapchains[i], NULL);
        pthread_mutex_unlock(&dev->lock);
        free(sc);
    }
    dev->vk.DestroySwapchainKHR(device, swapchain, alloc);
}

/* ---- proc addresses ---------------------------------------------------------------------- */

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL framescope_GetDeviceProcAddr(VkDevice device,
                                                                             const char *name);

static PFN_vkVoidFunction plumbing_device_proc(const char *name)
{
#define HOOK(fn)                                                                               \
    if (strcmp(name, "vk" #fn) == 0)                                                           \
        return (PFN_vkVoidFunction)framescope_##fn;
    HOOK(GetDeviceProcAddr)
    HOOK(DestroyDevice)
    HOOK(GetDeviceQueue)
    HOOK(GetDeviceQueue2)
    HOOK(CreateSwapchainKHR)
    HOOK(DestroySwapchainKHR)
    return NULL;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL framescope_GetDeviceProcAddr(VkDevice device,
                                                                             const char *name)
{
    struct device_data *dev = device_lookup(device);
    if (!dev)
        return NULL;
    /* Only hook what the chain below provides: a function of an extension the app did not
     * enable stays NULL. */
    PFN_vkVoidFunction next = dev->vk.GetDeviceProcAddr(device, name);
    if (!next)
        return NULL;
    PFN_vkVoidFunction ours = plumbing_device_proc(name);
    if (!ours)
        ours = hooks_device_proc(name);
    return ours ? ours : next;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
framescope_GetInstanceProcAddr(VkInstance instance, const char *name)
{
    HOOK(GetInstanceProcAddr)
    HOOK(CreateInstance)
    HOOK(DestroyInstance)
    HOOK(CreateDevice)
    if (!instance)
        return NULL;
    struct instance_data *inst = instance_lookup(instance);
    if (!inst)
        return NULL;
    PFN_vkVoidFunction next = inst->vk.GetInstanceProcAddr(instance, name);
    if (!next)
        return NULL;
    HOOK(CreateWaylandSurfaceKHR)
    HOOK(DestroySurfaceKHR)
    PFN_vkVoidFunction ours = plumbing_device_proc(name);
    if (!ours)
        ours = hooks_device_proc(name);
    return ours ? ours : next;
#undef HOOK
}

LAYER_EXPORT VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v)
{
    if (!v || v->sType != LAYER_NEGOTIATE_INTERFACE_STRUCT)
        return VK_ERROR_INITIALIZATION_FAILED;
    if (v->loaderLayerInterfaceVersion >= 2) {
        v->pfnGetInstanceProcAddr = framescope_GetInstanceProcAddr;
        v->pfnGetDeviceProcAddr = framescope_GetDeviceProcAddr;
        v->pfnGetPhysicalDeviceProcAddr = NULL;
    }
    if (v->loaderLayerInterfaceVersion > 2)
        v->loaderLayerInterfaceVersion = 2;
    return VK_SUCCESS;
}

/* The loader unloads a layer when its last instance goes; -z nodelete keeps us loaded so the
 * summary is printed once, at exit, also when the app never destroys its instance. */
__attribute__((destructor)) static void layer_destructor(void)
{
    gpu_report_notes();
    hooks_report_notes();
    fscope_report_finish();
}
