/* Perf counters per frame on the thread that closes frames: cycles, instructions (for IPC),
 * cache and branch misses by default, or the events FRAMESCOPE_COUNTERS names (libpfm4 event
 * names, encoded and checked by libpfm4 at start-up). The closing thread opens one perf group
 * for itself at its first frame close and reads it (one read()) at every close after; the
 * names, and what could not be counted and why, go into the recording's rec_counters. */
#ifndef FSCOPE_RECORD_COUNTERS_H
#define FSCOPE_RECORD_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"

struct fscope_collector;

/* What a frame close reads: the group's totals since it opened. */
struct counter_reading {
    uint8_t counted; /* bit k: event k is in the thread's group (the kernel took it) */
    uint64_t enabled_ns, running_ns; /* running < enabled: the kernel multiplexed the group */
    uint64_t values[FRAME_COUNTERS];
};

/* Reads FRAMESCOPE_COUNTERS and encodes its events (library start-up). kernel_on false: the
 * kernel view is off, and the counters with it. */
void counters_init(bool kernel_on);
/* The calling thread's totals, opening its group on first use. False when nothing is counted
 * on this thread. */
bool counters_read(struct fscope_collector *c, struct counter_reading *ret);
/* Closes the thread's group (at its exit, or when its slot is reset). */
void counters_thread_exit(struct fscope_collector *c);

#endif
