/* The process's peak resident set, for tests and benchmarks that measure what a step adds to
 * it: the peak reset to the resident set now (through /proc/self/clear_refs), then read. */
#ifndef FSCOPE_TEST_PEAK_MEMORY_H
#define FSCOPE_TEST_PEAK_MEMORY_H

#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A line of /proc/self/status in KiB; -1 where there is none. */
static inline long status_kib(const char *key)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, key, strlen(key)) == 0)
            kib = strtol(line + strlen(key), NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

/* The resident set now (what was freed given back first), with the peak reset to it; false
 * where the kernel cannot reset it, or under AddressSanitizer, whose quarantine keeps freed
 * memory resident: no measure of what a step holds. */
static inline bool peak_reset(long *ret_kib)
{
    malloc_trim(0);
    FILE *f = fopen("/proc/self/clear_refs", "we");
    bool reset = f && fputs("5", f) >= 0;
    if (f)
        reset = fclose(f) == 0 && reset;
#ifdef __SANITIZE_ADDRESS__
    reset = false;
#endif
    *ret_kib = status_kib("VmRSS:");
    return reset && *ret_kib >= 0;
}

/* What the peak rose to over before (peak_reset's), in KiB. */
static inline long peak_added_kib(long before)
{
    long peak = status_kib("VmHWM:");
    return peak < 0 ? -1 : peak - before;
}

#endif
