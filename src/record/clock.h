/* The profiler clock: raw ticks on the hot path, converted to nanoseconds only when read out.
 *
 * Ticks are TSC cycles when the CPU has an invariant TSC, else CLOCK_MONOTONIC nanoseconds.
 * The choice is made once at load time (an ifunc), so no read ever branches on it. */
#ifndef FSCOPE_CLOCK_H
#define FSCOPE_CLOCK_H

/* For ifunc resolvers and what they call: they run while the dynamic linker relocates, before
 * any sanitizer runtime is ready, so they must not be instrumented. */
#define FSCOPE_IFUNC_RESOLVER __attribute__((no_sanitize_thread, no_sanitize_address))

#include <stdbool.h>
#include <stdint.h>

#define FSCOPE_EXPORT __attribute__((visibility("default")))

/* Current time in ticks. */
FSCOPE_EXPORT uint64_t fscope_now(void);

/* Converts ticks to CLOCK_MONOTONIC nanoseconds and back. One conversion, used everywhere:
 * external clocks (GPU, compositor) are brought to CLOCK_MONOTONIC first, then here. */
FSCOPE_EXPORT int64_t fscope_ticks_to_mono_ns(uint64_t ticks);
FSCOPE_EXPORT uint64_t fscope_mono_ns_to_ticks(int64_t mono_ns);
/* A duration in ticks, in nanoseconds. */
FSCOPE_EXPORT double fscope_ticks_to_ns(uint64_t ticks);
FSCOPE_EXPORT uint64_t fscope_ns_to_ticks(double ns);

/* "tsc (invariant, 2.100 GHz calibrated)" or "clock_gettime(CLOCK_MONOTONIC) (...reason)". */
FSCOPE_EXPORT const char *fscope_clock_describe(void);

/* Refines the tick rate against CLOCK_MONOTONIC over the time since start-up. Cheap to call
 * often: it does work at most once every 250 ms. */
void clock_refine(void);
void clock_init(void);

/* Reads CLOCK_MONOTONIC in nanoseconds. */
int64_t clock_mono_ns(void);

#endif
