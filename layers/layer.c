/* Loader plumbing: negotiation, proc-address lookup, instance/device/queue bookkeeping, and
 * dispatch from each file's hook table. The tables it registers objects in are objects.c's,
 * the configuration config.c's, surfaces and swapchains surfaces.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "record/clock.h"
#include "record/gpu_zones.h"
#include "device_plan.h"
#include "layer.h"
#include "util/log.h"
#include "library.h"
#include "record/meta.h"

static _Atomic uint32_t devices_created;
static pid_t layer_pid;

static pthread_once_t config_once = PTHREAD_ONCE_INIT;

static void layer_init(void)
{
    layer_config_read();
    /* A forked child (which libframescope keeps silent) has none of our reader threads. */
    layer_pid = getpid();
}

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
    pthread_once(&config_once, layer_init);
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
    inst->api_version = info->pApplicationInfo && info->pApplicationInfo->apiVersion
                            ? info->pApplicationInfo->apiVersion
                            : VK_API_VERSION_1_0;
    for (uint32_t i = 0; i < info->enabledExtensionCount; i++)
        if (strcmp(info->ppEnabledExtensionNames[i],
                   VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME) == 0)
            inst->properties2 = true;
    /* A Vulkan 1.0 app that did not enable properties2 gets it from us, so its devices can
     * have what GPU timing needs (host query reset, timeline semaphores, calibration: all
     * depend on it). The loader hides it from the app, which never asked for it. */
    VkInstanceCreateInfo ours = *info;
    const char **names = NULL;
    bool add_properties2 = layer_config.gpu_timing && !inst->properties2 &&
                           inst->api_version < VK_API_VERSION_1_1;
    if (add_properties2 && (names = calloc(info->enabledExtensionCount + 1, sizeof(*names)))) {
        if (info->enabledExtensionCount)
            memcpy(names, info->ppEnabledExtensionNames,
                   info->enabledExtensionCount * sizeof(*names));
        names[ours.enabledExtensionCount++] = VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME;
        ours.ppEnabledExtensionNames = names;
    }
    /* Advance the chain for the next layer; restored before returning. */
    VkLayerInstanceLink *link = chain->u.pLayerInfo;
    chain->u.pLayerInfo = link->pNext;
    VkResult r = create(&ours, alloc, ret);
    if (names && r == VK_ERROR_EXTENSION_NOT_PRESENT) {
        /* Ours to lose, not the app's instance: create it as asked. */
        fscope_log(FSCOPE_LOG_INFO, "the loader refused %s for this Vulkan 1.0 app; GPU timing "
                   "takes its slow path", VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME);
        free(names);
        names = NULL;
        r = create(info, alloc, ret);
    }
    chain->u.pLayerInfo = link;
    inst->properties2_ours = names != NULL;
    inst->properties2 |= inst->properties2_ours;
    free(names);
    if (r != VK_SUCCESS) {
        free(inst);
        return r;
    }
    inst->instance = *ret;
    inst->key = dispatch_key(*ret);
#define X(name) inst->vk.name = (PFN_vk##name)gipa(*ret, "vk" #name);
    INSTANCE_FUNCTIONS(X)
#undef X
    if (!objects_instance_add(inst)) {
        /* Without an entry every call on this instance would find no dispatch table: fail
         * its creation cleanly rather than hand the app an instance that crashes later. */
        fscope_log(FSCOPE_LOG_ERROR, "more than %d live instances; refusing another (set "
                   "DISABLE_FRAMESCOPE=1 to run without framescope)", MAX_INSTANCES);
        inst->vk.DestroyInstance(*ret, alloc);
        free(inst);
        *ret = VK_NULL_HANDLE;
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    }
    fscope_record_gpu_timing(layer_config.gpu_timing);
    fscope_record_enable();
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
    objects_instance_remove(inst);
    /* Devices the app never destroyed: their budget is read through this instance. */
    for (unsigned i = 0; i < MAX_DEVICES; i++) {
        struct device_data *dev = objects_device_at(i);
        if (dev && dev->instance == inst)
            resources_device_finish(dev);
    }
    surfaces_instance_finish(inst);
    free(inst);
    destroy(instance, alloc);
}

/* ---- device ------------------------------------------------------------------------------ */

static void describe_device(struct instance_data *inst, VkPhysicalDevice phys,
                            struct device_data *dev)
{
    VkPhysicalDeviceProperties props;
    inst->vk.GetPhysicalDeviceProperties(phys, &props);
    dev->timestamp_period = props.limits.timestampPeriod;
    dev->cpu_device = props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
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
    fscope_record_device(dev->id, props.deviceName, driver);
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

    VkResult r = VK_ERROR_OUT_OF_HOST_MEMORY;
    struct device_data *dev = calloc(1, sizeof(*dev));
    if (!dev)
        goto error;
    struct device_plan *plan = calloc(1, sizeof(*plan));
    if (!plan)
        goto error_dev;
    pthread_mutex_init(&dev->lock, NULL);
    gpu_sample_init(dev);
    dev->instance = inst;
    dev->physical = phys;
    dev->set_loader_data = loader_cb->u.pfnSetDeviceLoaderData;
    dev->id = atomic_fetch_add(&devices_created, 1) + 1;
    describe_device(inst, phys, dev);

    /* Advance the chain for the next layer first, so a copy of it (device_plan) carries the
     * advanced link too; restored before returning. */
    VkLayerDeviceLink *link = chain->u.pLayerInfo;
    chain->u.pLayerInfo = link->pNext;
    if (!device_plan_make(plan, inst, phys, info, layer_config.gpu_timing,
                          !layer_config.fault_no_timeline,
                          layer_config.gpu_zones && layer_config.pipeline_stats)) {
        chain->u.pLayerInfo = link;
        goto error_plan;
    }
    r = create(phys, &plan->info, alloc, ret);
    if (device_plan_changes_anything(plan, info) &&
        (r == VK_ERROR_EXTENSION_NOT_PRESENT || r == VK_ERROR_FEATURE_NOT_PRESENT)) {
        /* What we added is ours to lose, not the app's device: create it as asked. */
        fscope_record_note("the driver refused the extensions or features framescope adds for "
                           "GPU timing (%d); timing without them", r);
        fscope_log(FSCOPE_LOG_INFO, "the driver refused what GPU timing adds (%d); creating the "
                   "device as the app asked", r);
        r = create(phys, info, alloc, ret);
        plan->host_reset = plan->timeline = plan->calibration = plan->pipeline_stats = false;
        plan->creation_feedback = plan->api >= VK_API_VERSION_1_3 || plan->app_feedback_ext;
    }
    chain->u.pLayerInfo = link;
    if (r != VK_SUCCESS)
        goto error_plan;
    if (plan->unknown_struct)
        fscope_record_note("device %u: its create chain holds a structure framescope cannot "
                           "copy (sType %d) before the features it needs; GPU timing resets its "
                           "queries in the command buffer and waits on fences instead",
                           dev->id, plan->unknown_struct);

    dev->device = *ret;
    dev->key = dispatch_key(*ret);
#define X(name) dev->vk.name = (PFN_vk##name)gdpa(*ret, "vk" #name);
    DEVICE_FUNCTIONS(X)
#undef X
    /* As the loader fills its own table: debug utils' terminators unwrap the handles the
     * loader wraps, and exist whether or not the driver has the functions. */
#define X(name) dev->vk.name = (PFN_vk##name)inst->vk.GetInstanceProcAddr(inst->instance, "vk" #name);
    INSTANCE_CHAIN_HOOKS(X)
#undef X
    bool core12 = plan->api >= VK_API_VERSION_1_2;
    dev->calibrated_timestamps = plan->calibration && dev->vk.GetCalibratedTimestampsEXT;
    dev->creation_feedback = plan->creation_feedback;
    dev->pipeline_stats = plan->pipeline_stats;
    if (plan->pipeline_stats_asked)
        fscope_gpu_pass_stats_state(plan->pipeline_stats ? REC_PIPELINE_STATS_ON
                                                         : REC_PIPELINE_STATS_UNSUPPORTED);
    if (plan->host_reset && !layer_config.fault_stale_read)
        dev->reset_query_pool = core12 ? dev->vk.ResetQueryPool : dev->vk.ResetQueryPoolEXT;
    if (plan->timeline) {
        dev->get_counter = core12 ? dev->vk.GetSemaphoreCounterValue
                                  : dev->vk.GetSemaphoreCounterValueKHR;
        dev->wait_semaphores = core12 ? dev->vk.WaitSemaphores : dev->vk.WaitSemaphoresKHR;
        dev->timeline_semaphores = dev->get_counter && dev->wait_semaphores;
    }
    dev->app_calibrated_timestamps = plan->app_calibration_ext;
    dev->app_host_query_reset = plan->app_host_reset_ext;
    dev->app_timeline_semaphore = plan->app_timeline_ext;
    if (layer_config.gpu_timing)
        fscope_log(FSCOPE_LOG_INFO, "device %u: GPU timing resets queries %s, completes by %s, "
                   "maps GPU time %s", dev->id,
                   dev->reset_query_pool ? "from the host" : "in command buffers",
                   dev->timeline_semaphores ? "a timeline semaphore" : "events",
                   dev->calibrated_timestamps && !layer_config.fault_no_calibration
                       ? "by calibrated timestamps"
                       : "by when spans are seen done (no calibration)");
    device_plan_finish(plan);
    free(plan);

    if (!objects_device_add(dev)) {
        fscope_log(FSCOPE_LOG_ERROR, "more than %d live devices; refusing another (set "
                   "DISABLE_FRAMESCOPE=1 to run without framescope)", MAX_DEVICES);
        dev->vk.DestroyDevice(*ret, alloc);
        *ret = VK_NULL_HANDLE;
        r = VK_ERROR_OUT_OF_HOST_MEMORY;
        goto error_mutex;
    }
    resources_device_init(dev);
    gpu_reader_start(dev);
    return VK_SUCCESS;

error_plan:
    device_plan_finish(plan);
    free(plan);
error_mutex:
    pthread_mutex_destroy(&dev->lock);
error_dev:
    free(dev);
error:
    return r;
}

static VKAPI_ATTR void VKAPI_CALL framescope_DestroyDevice(VkDevice device,
                                                           const VkAllocationCallbacks *alloc)
{
    if (!device)
        return;
    struct device_data *dev = device_lookup(device);
    if (!dev)
        return;
    objects_device_remove(dev);
    resources_device_finish(dev);
    zones_device_finish_runs(dev);
    /* Reads back what the GPU finished (the app idled the device first, as it must) before
     * our pools go. */
    gpu_reader_stop(dev);
    for (unsigned i = 0; i < MAX_QUEUES; i++) {
        struct queue_data *q = atomic_load(&dev->queues[i].item);
        if (q) {
            gpu_queue_finish(dev, q);
            free(q->scratch);
            free(q);
        }
    }
    for (unsigned i = 0; i < MAX_SWAPCHAINS; i++)
        free(atomic_load(&dev->swapchains[i].item));
    for (unsigned i = 0; i < MAX_RENDER_PASSES; i++)
        free(atomic_load(&dev->render_passes[i].item));
    zones_device_destroy(dev);
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
    /* Two threads may get the same queue at once: the second insert finds it there. */
    if (!table_insert(dev->queues, MAX_QUEUES, &dev->lock, (uintptr_t)queue, q)) {
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

/* ---- proc addresses ---------------------------------------------------------------------- */

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL framescope_GetDeviceProcAddr(VkDevice device,
                                                                             const char *name);

static const struct layer_hook plumbing_rows[] = {
    PLUMBING_HOOKS(LAYER_HOOK_ROW)
};
static const struct layer_hook_table plumbing_table = LAYER_HOOK_TABLE(plumbing_rows);

/* Every device-level hook, in the tables each file exports from hook_list.h's lists. */
static const struct layer_hook *hook_find(const char *name)
{
    const struct layer_hook_table *tables[] = {
        &plumbing_table,      &surfaces_hook_table, &hooks_table, &commands_hook_table,
        &commands_recorded_hook_table, &resources_hook_table,
    };
    for (unsigned t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
        for (unsigned i = 0; i < tables[t]->count; i++)
            if (strcmp(name, tables[t]->rows[i].name) == 0)
                return &tables[t]->rows[i];
    return NULL;
}

static PFN_vkVoidFunction hook_call_down(const struct device_data *dev,
                                         const struct layer_hook *hook)
{
    PFN_vkVoidFunction call_down;
    memcpy(&call_down, (const char *)&dev->vk + hook->call_down, sizeof(call_down));
    return call_down;
}

/* Functions of extensions we enabled for ourselves, which the app did not: it must see NULL,
 * as it would without us. */
static bool hidden_from_app(const struct device_data *dev, const char *name)
{
    if (strcmp(name, "vkResetQueryPoolEXT") == 0)
        return !dev->app_host_query_reset;
    if (strcmp(name, "vkGetCalibratedTimestampsEXT") == 0)
        return !dev->app_calibrated_timestamps;
    if (strcmp(name, "vkGetSemaphoreCounterValueKHR") == 0 ||
        strcmp(name, "vkWaitSemaphoresKHR") == 0 || strcmp(name, "vkSignalSemaphoreKHR") == 0)
        return !dev->app_timeline_semaphore;
    return false;
}

/* The rule for every hook: the app gets it only where the function it calls down to exists,
 * fetched from the chain the loader itself resolves that name through (the device chain, or
 * the instance chain for debug utils), so what the app gets and what its call does are the
 * same as without the layer. Everything else is the chain's own answer. */
static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL framescope_GetDeviceProcAddr(VkDevice device,
                                                                             const char *name)
{
    struct device_data *dev = device_lookup(device);
    if (!dev || !name || hidden_from_app(dev, name))
        return NULL;
    const struct layer_hook *hook = hook_find(name);
    if (!hook)
        return dev->vk.GetDeviceProcAddr(device, name);
    return hook_call_down(dev, hook) ? hook->hook : NULL;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
framescope_GetInstanceProcAddr(VkInstance instance, const char *name)
{
#define HOOK(fn)                                                                               \
    if (strcmp(name, "vk" #fn) == 0)                                                           \
        return (PFN_vkVoidFunction)framescope_##fn;
    if (!name)
        return NULL;
    GLOBAL_HOOKS(HOOK)
    if (!instance)
        return NULL;
    struct instance_data *inst = instance_lookup(instance);
    if (!inst)
        return NULL;
    PFN_vkVoidFunction next = inst->vk.GetInstanceProcAddr(instance, name);
    if (!next)
        return NULL;
    for (unsigned i = 0; i < surfaces_instance_hook_table.count; i++)
        if (strcmp(name, surfaces_instance_hook_table.rows[i].name) == 0)
            return surfaces_instance_hook_table.rows[i].hook;
    HOOK(GetDeviceProcAddr)
#undef HOOK
    /* Device-level names: the loader asks an instance chain only for device commands of
     * instance extensions (debug utils), whose call-downs every device takes from this same
     * chain. For any other, the instance chain's answer may be a loader trampoline that is no
     * call-down for a device that lacks the function: pass it through untouched. */
    const struct layer_hook *hook = hook_find(name);
    return hook && hook->instance_chain ? hook->hook : next;
}

LAYER_EXPORT VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v)
{
    /* Version 2 is the first with this entry point; a loader that offers less cannot use us. */
    if (!v || v->sType != LAYER_NEGOTIATE_INTERFACE_STRUCT || v->loaderLayerInterfaceVersion < 2)
        return VK_ERROR_INITIALIZATION_FAILED;
    v->pfnGetInstanceProcAddr = framescope_GetInstanceProcAddr;
    v->pfnGetDeviceProcAddr = framescope_GetDeviceProcAddr;
    v->pfnGetPhysicalDeviceProcAddr = NULL;
    v->loaderLayerInterfaceVersion = 2;
    return VK_SUCCESS;
}

/* The loader unloads a layer when its last instance goes; -z nodelete keeps us loaded so the
 * summary is printed once, at exit, also when the app never destroys its instance. */
__attribute__((destructor)) static void layer_destructor(void)
{
    if (layer_pid && getpid() != layer_pid)
        return; /* a forked child: none of our threads exist here, and the run is the parent's */
    /* Devices the app never destroyed: stop their readers so the report reads still logs. */
    for (unsigned i = 0; i < MAX_DEVICES; i++) {
        struct device_data *dev = objects_device_at(i);
        if (dev) {
            resources_device_finish(dev);
            gpu_reader_stop_at_exit(dev);
        }
    }
    gpu_report_notes();
    commands_report_notes();
    fscope_report_finish();
}
