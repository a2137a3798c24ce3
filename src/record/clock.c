#include "clock.h"

#include <cpuid.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "recording.h"

struct clock_calibration {
    uint64_t base_ticks;
    int64_t base_ns;
    double ns_per_tick;
};

static bool use_tsc;
/* Written by clock_refine under a seqlock-free scheme: readers copy the whole struct through
 * a version counter; a torn read is retried. Refinement is rare. */
/* A seqlock: readers retry while a refinement is being stored. The fields are atomics (relaxed)
 * so a read racing a store is a retried read, not a data race. */
static struct {
    _Atomic uint64_t base_ticks;
    _Atomic int64_t base_ns;
    _Atomic uint64_t ns_per_tick_bits; /* the double's bits */
} calib;
static _Atomic unsigned calib_version;
static _Atomic int64_t last_refine_ns;

int64_t clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

FSCOPE_IFUNC_RESOLVER static bool cpu_has_invariant_tsc(void)
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(0x80000000, &eax, &ebx, &ecx, &edx) || eax < 0x80000007)
        return false;
    if (!__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx))
        return false;
    return (edx >> 8) & 1;
}

static uint64_t now_tsc(void)
{
    return __rdtsc();
}

static uint64_t now_mono(void)
{
    return (uint64_t)clock_mono_ns();
}

/* Resolved once by the dynamic linker, before any constructor runs. */
FSCOPE_IFUNC_RESOLVER static uint64_t (*resolve_now(void))(void)
{
    __builtin_cpu_init();
    return cpu_has_invariant_tsc() ? now_tsc : now_mono;
}

FSCOPE_EXPORT uint64_t fscope_now(void) __attribute__((ifunc("resolve_now")));

static void calib_load(struct clock_calibration *ret)
{
    unsigned v0, v1;
    do {
        v0 = atomic_load_explicit(&calib_version, memory_order_acquire);
        ret->base_ticks = atomic_load_explicit(&calib.base_ticks, memory_order_relaxed);
        ret->base_ns = atomic_load_explicit(&calib.base_ns, memory_order_relaxed);
        uint64_t bits = atomic_load_explicit(&calib.ns_per_tick_bits, memory_order_relaxed);
        memcpy(&ret->ns_per_tick, &bits, sizeof(bits));
        atomic_thread_fence(memory_order_acquire);
        v1 = atomic_load_explicit(&calib_version, memory_order_relaxed);
    } while ((v0 & 1) || v0 != v1);
}

static void calib_store(const struct clock_calibration *c)
{
    atomic_fetch_add_explicit(&calib_version, 1, memory_order_acq_rel);
    atomic_thread_fence(memory_order_release);
    uint64_t bits;
    memcpy(&bits, &c->ns_per_tick, sizeof(bits));
    atomic_store_explicit(&calib.base_ticks, c->base_ticks, memory_order_relaxed);
    atomic_store_explicit(&calib.base_ns, c->base_ns, memory_order_relaxed);
    atomic_store_explicit(&calib.ns_per_tick_bits, bits, memory_order_relaxed);
    atomic_fetch_add_explicit(&calib_version, 1, memory_order_release);
    /* The recording's copy, so its ticks can be read without this process. */
    struct rec_header *h = recording_header();
    if (h) {
        struct rec_clock *rc = &h->clock;
        atomic_fetch_add_explicit(&rc->seq, 1, memory_order_acq_rel);
        atomic_thread_fence(memory_order_release);
        rc->tsc = use_tsc;
        atomic_store_explicit(&rc->base_ticks, c->base_ticks, memory_order_relaxed);
        atomic_store_explicit(&rc->base_ns, c->base_ns, memory_order_relaxed);
        atomic_store_explicit(&rc->ns_per_tick_bits, bits, memory_order_relaxed);
        atomic_fetch_add_explicit(&rc->seq, 1, memory_order_release);
    }
}

/* A (tsc, mono) pair read as close together as the machine allows: the tightest of a few. */
static void sample_pair(uint64_t *ret_ticks, int64_t *ret_ns)
{
    uint64_t best_width = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t t0 = fscope_now();
        int64_t ns = clock_mono_ns();
        uint64_t t1 = fscope_now();
        if (t1 - t0 < best_width) {
            best_width = t1 - t0;
            *ret_ticks = t0 + (t1 - t0) / 2;
            *ret_ns = ns;
        }
    }
}

void clock_init(void)
{
    use_tsc = cpu_has_invariant_tsc();
    struct clock_calibration c = { 0, 0, 1.0 };
    if (!use_tsc) {
        calib_store(&c);
        return;
    }
    /* A first rate over 2 ms; clock_refine stretches the baseline as the process runs. */
    sample_pair(&c.base_ticks, &c.base_ns);
    uint64_t t1;
    int64_t ns1;
    do
        sample_pair(&t1, &ns1);
    while (ns1 - c.base_ns < 2000000);
    c.ns_per_tick = (double)(ns1 - c.base_ns) / (double)(t1 - c.base_ticks);
    calib_store(&c);
    atomic_store(&last_refine_ns, ns1);
}

void clock_refine(void)
{
    if (!use_tsc)
        return;
    int64_t now_ns = clock_mono_ns();
    int64_t last = atomic_load_explicit(&last_refine_ns, memory_order_relaxed);
    if (now_ns - last < 250000000 ||
        !atomic_compare_exchange_strong(&last_refine_ns, &last, now_ns))
        return;
    struct clock_calibration c;
    calib_load(&c);
    uint64_t t;
    int64_t ns;
    sample_pair(&t, &ns);
    if (t <= c.base_ticks || ns <= c.base_ns)
        return;
    /* Keep base: conversions of old ticks stay anchored, only the slope sharpens. */
    c.ns_per_tick = (double)(ns - c.base_ns) / (double)(t - c.base_ticks);
    calib_store(&c);
}

/* Formatted when asked (by reports), from the calibration in force, so refining the rate on
 * a present never writes a string another thread may be reading. */
FSCOPE_EXPORT const char *fscope_clock_describe(void)
{
    static __thread char description[160];
    if (!use_tsc) {
        snprintf(description, sizeof(description),
                 "clock_gettime(CLOCK_MONOTONIC) (no invariant TSC: readings carry its cost)");
    } else {
        struct clock_calibration c;
        calib_load(&c);
        snprintf(description, sizeof(description),
                 "tsc (invariant, %.4f GHz calibrated against CLOCK_MONOTONIC)",
                 1.0 / c.ns_per_tick);
    }
    return description;
}

FSCOPE_EXPORT int64_t fscope_ticks_to_mono_ns(uint64_t ticks)
{
    struct clock_calibration c;
    calib_load(&c);
    return c.base_ns + (int64_t)((double)(int64_t)(ticks - c.base_ticks) * c.ns_per_tick);
}

FSCOPE_EXPORT uint64_t fscope_mono_ns_to_ticks(int64_t mono_ns)
{
    struct clock_calibration c;
    calib_load(&c);
    return c.base_ticks + (uint64_t)(int64_t)((double)(mono_ns - c.base_ns) / c.ns_per_tick);
}

FSCOPE_EXPORT double fscope_ticks_to_ns(uint64_t ticks)
{
    struct clock_calibration c;
    calib_load(&c);
    return (double)ticks * c.ns_per_tick;
}

FSCOPE_EXPORT uint64_t fscope_ns_to_ticks(double ns)
{
    struct clock_calibration c;
    calib_load(&c);
    return ns <= 0 ? 0 : (uint64_t)(ns / c.ns_per_tick);
}
