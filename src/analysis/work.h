/* How much work the analysis did, counted rather than timed (issue 35: every output and every
 * daemon job costs O(frames + events)). Each loop that reads the recording's events on behalf
 * of a frame (wake-ups, pause marks, GPU spans and zones, pipelines, command buffer
 * recordings) adds what it read; an index lookup (a binary search) counts one. A test and a
 * benchmark read it (tests/test-linear.c, tests/bench-report.c); no output prints it.
 *
 * Per thread, so that analyses side by side (the daemon's jobs, a test's threads) neither
 * race nor mix their counts; a plain add, so counting costs next to nothing. */
#ifndef FSCOPE_ANALYSIS_WORK_H
#define FSCOPE_ANALYSIS_WORK_H

#include <stdint.h>

extern _Thread_local uint64_t analysis_events_visited;

static inline void work_visited(uint64_t events)
{
    analysis_events_visited += events;
}

#endif
