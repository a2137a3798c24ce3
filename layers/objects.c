/* The layer's per-object tables: instances, devices, surfaces, and each device's queues and
 * swapchains, keyed on the loader's dispatch pointer or the handle. Every file of the layer
 * looks its objects up here; nothing here calls back into them.
 *
 * Lookups are lock-free scans of small arrays of atomic pointers; the lock only serialises
 * writers and is never held across a call down the chain. */
#include <stdlib.h>

#include "layer.h"

static struct table_entry instances[MAX_INSTANCES];
static struct table_entry devices[MAX_DEVICES];
static struct table_entry surfaces[MAX_SURFACES];
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;

/* Lookups compare the key stored in the table, never a field of an entry another thread may
 * be freeing (destroying one swapchain while presenting another is legal). The item is
 * re-checked against the key, so a slot reused between the two loads is not mistaken. */
void *table_find(struct table_entry *table, unsigned size, uint64_t key)
{
    for (unsigned i = 0; i < size; i++) {
        if (atomic_load_explicit(&table[i].key, memory_order_acquire) != key)
            continue;
        void *item = atomic_load_explicit(&table[i].item, memory_order_acquire);
        if (item && atomic_load_explicit(&table[i].key, memory_order_acquire) == key)
            return item;
    }
    return NULL;
}

/* Writers serialise on lock. False when the table is full. */
bool table_insert(struct table_entry *table, unsigned size, pthread_mutex_t *lock,
                  uint64_t key, void *item)
{
    bool ok = false;
    pthread_mutex_lock(lock);
    for (unsigned i = 0; i < size; i++) {
        if (atomic_load(&table[i].key) == key) {
            pthread_mutex_unlock(lock);
            return false; /* already there: another thread registered it first */
        }
    }
    for (unsigned i = 0; i < size && !ok; i++) {
        if (atomic_load(&table[i].item) || atomic_load(&table[i].key))
            continue;
        atomic_store_explicit(&table[i].item, item, memory_order_release);
        atomic_store_explicit(&table[i].key, key, memory_order_release);
        ok = true;
    }
    pthread_mutex_unlock(lock);
    return ok;
}

void table_remove(struct table_entry *table, unsigned size, pthread_mutex_t *lock, void *item)
{
    pthread_mutex_lock(lock);
    for (unsigned i = 0; i < size; i++) {
        if (atomic_load(&table[i].item) != item)
            continue;
        atomic_store_explicit(&table[i].key, 0, memory_order_release);
        atomic_store_explicit(&table[i].item, NULL, memory_order_release);
    }
    pthread_mutex_unlock(lock);
}

struct instance_data *instance_lookup(const void *dispatchable)
{
    return table_find(instances, MAX_INSTANCES, (uintptr_t)dispatch_key(dispatchable));
}

struct device_data *device_lookup(const void *dispatchable)
{
    return table_find(devices, MAX_DEVICES, (uintptr_t)dispatch_key(dispatchable));
}

struct queue_data *queue_lookup(struct device_data *dev, VkQueue queue)
{
    return table_find(dev->queues, MAX_QUEUES, (uintptr_t)queue);
}

struct swapchain_data *swapchain_lookup(struct device_data *dev, VkSwapchainKHR swapchain)
{
    return table_find(dev->swapchains, MAX_SWAPCHAINS, (uint64_t)swapchain);
}

struct surface_data *surface_lookup(VkSurfaceKHR surface)
{
    return table_find(surfaces, MAX_SURFACES, (uint64_t)surface);
}

bool objects_instance_add(struct instance_data *inst)
{
    return table_insert(instances, MAX_INSTANCES, &tables_lock, (uintptr_t)inst->key, inst);
}

void objects_instance_remove(struct instance_data *inst)
{
    table_remove(instances, MAX_INSTANCES, &tables_lock, inst);
}

bool objects_device_add(struct device_data *dev)
{
    return table_insert(devices, MAX_DEVICES, &tables_lock, (uintptr_t)dev->key, dev);
}

void objects_device_remove(struct device_data *dev)
{
    table_remove(devices, MAX_DEVICES, &tables_lock, dev);
}

struct device_data *objects_device_at(unsigned index)
{
    return index < MAX_DEVICES ? atomic_load(&devices[index].item) : NULL;
}

bool objects_surface_add(struct surface_data *surface)
{
    return table_insert(surfaces, MAX_SURFACES, &tables_lock, (uint64_t)surface->surface,
                        surface);
}

void objects_surface_remove(struct surface_data *surface)
{
    table_remove(surfaces, MAX_SURFACES, &tables_lock, surface);
}

unsigned objects_surfaces_take(const struct instance_data *inst,
                               struct surface_data *ret[MAX_SURFACES])
{
    unsigned count = 0;
    pthread_mutex_lock(&tables_lock);
    for (unsigned i = 0; i < MAX_SURFACES; i++) {
        struct surface_data *s = atomic_load(&surfaces[i].item);
        if (s && s->instance == inst) {
            atomic_store(&surfaces[i].key, 0);
            atomic_store(&surfaces[i].item, NULL);
            ret[count++] = s;
        }
    }
    pthread_mutex_unlock(&tables_lock);
    return count;
}
