/* The kernel's view of the threads that close frames: at each frame close, the closing thread
 * reads its own schedstat (one pread of a file it opened once): time on a CPU and time
 * runnable but waiting for one, so analysis can split the frame's CPU part into work,
 * starvation and sleep outside Vulkan. FRAMESCOPE_KERNEL=off turns it off; a kernel without
 * schedstat (or no /proc) is said once in the summary. */
#ifndef FSCOPE_RECORD_KERNEL_H
#define FSCOPE_RECORD_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

struct fscope_collector;

/* Reads FRAMESCOPE_KERNEL (library start-up). */
void kernel_init(void);
/* The calling thread's totals since it started. False when off or unavailable. */
struct kernel_thread_view {
    uint64_t oncpu_ns, runnable_ns;          /* schedstat */
    uint64_t major_faults, block_reads;      /* getrusage(RUSAGE_THREAD) */
    uint64_t preempted, waits;               /* involuntary and voluntary context switches */
};
bool kernel_thread_times(struct fscope_collector *c, struct kernel_thread_view *ret);
/* Closes the thread's file (at its exit). */
void kernel_thread_exit(struct fscope_collector *c);

/* The sampler: one thread of ours that, every KERNEL_TICK_MS, reads every thread's schedstat
 * and perf counters (context switches, migrations, page faults) and records a sample per
 * thread. Started with the first frame log; stopped at exit. */
#define KERNEL_TICK_MS 100
void kernel_sampler_start(void);
void kernel_sampler_stop(void);

#endif
