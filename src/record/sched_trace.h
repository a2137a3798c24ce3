/* The wake-up chain of the thread that closes frames, from the kernel's sched tracepoints
 * (sched_trace.c). Driven by the kernel sampler's thread. */
#ifndef FSCOPE_RECORD_SCHED_TRACE_H
#define FSCOPE_RECORD_SCHED_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "format.h"

struct sched_trace;

/* Nothing is opened until a thread to follow is known. NULL: out of memory. */
struct sched_trace *sched_trace_new(struct rec_kernel *rec);
/* At each tick: opens the events once tid (the thread that closes frames; 0 none yet) is
 * known, follows it when another thread takes over (a new set of events, its frames unknown
 * until then), and records what the rings hold. final: the last tick; t is freed. */
void sched_trace_tick(struct sched_trace *t, int tid, bool final);
/* The thread that closed the latest frame (frame.c sets it; 0 before any), and how many frames
 * were closed (for the frame rate that pauses the events). */
extern _Atomic int fscope_sched_closer_tid;
extern _Atomic uint64_t fscope_sched_frames;

#endif
