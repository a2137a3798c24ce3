/* Hitches: which frames stuttered, and the recorded evidence for why each did.
 *
 * A hitch is a frame at least HITCH_RATIO times the median of the HITCH_WINDOW frames around
 * it (its neighbours on the same surface, itself left out) and at least HITCH_FLOOR_MS over
 * that median: a spike against what came just before and after, so a run of steady slow
 * frames has none, and a 1 ms wobble at 1,000 fps is not one.
 *
 * Its excess over the median is split over the parts of the frame the recording measures
 * (struct frame_budget_ns: the CPU part split by the kernel's view, waits with the GPU busy,
 * waits for the display, ...): each part's growth against its own median over the same
 * neighbours, in proportion. When the parts' growth does not account for at least half the
 * excess, the hitch is unexplained: nothing is guessed.
 *
 * Animation error (PresentMon 2's measure of smoothness): for each shown frame, how far the
 * time between it and the previous shown frame strays from the time between their starts
 * (when the app sampled its simulation clock). Needs presentation feedback. */
#ifndef FSCOPE_HITCHES_H
#define FSCOPE_HITCHES_H

#include <stdint.h>
#include <stdio.h>

#include "late.h"
#include "recording.h"
#include "report.h"
#include "sorter.h"
#include "wakeups.h"

#define HITCH_WINDOW 30
#define HITCH_RATIO 2.0
#define HITCH_FLOOR_MS 4.0
#define HITCH_WORST 5

enum hitch_cause {
    HITCH_CPU_WORK,  /* on a CPU, the presenting thread's own work */
    HITCH_STARVED,   /* runnable with no CPU: other work ran instead */
    HITCH_ASLEEP,    /* asleep outside Vulkan: a lock, I/O, a page fault, another thread */
    HITCH_CPU,       /* the CPU part, not split (no kernel view of the frame) */
    HITCH_GPU,       /* waiting while the GPU worked */
    HITCH_DISPLAY,   /* waiting for the display */
    HITCH_PRESENT,   /* in acquire/present with the GPU idle and no display pacing */
    HITCH_SYNC,      /* fence, semaphore or idle waits with the GPU idle */
    HITCH_CAP,       /* the frame cap's wait */
    HITCH_UNEXPLAINED,
    HITCH_CAUSE_COUNT,
};

struct hitch {
    unsigned log;
    uint64_t frame;     /* index in its log */
    uint64_t end_ticks; /* its present call */
    double at_s;        /* from the first frame's start */
    int64_t frame_ns, median_ns;
    int64_t part_ns[HITCH_CAUSE_COUNT]; /* the excess split; sums to frame - median */
    enum hitch_cause cause;             /* the largest part */
    int tid;                            /* the thread that closed the frame; 0 unknown */
    /* What the app's threads (all of them) did in the frame that stalls a frame where it is
     * done on its critical path: evidence beside the parts, not a part of its own. */
    uint64_t pipelines, shaders, memory_calls;
    /* Pipeline creation feedback: how many of the pipelines the driver reported on, how many
     * of those came from the app's pipeline cache, and the driver's own time for them. */
    uint64_t pipelines_reported, pipeline_cache_hits;
    int64_t pipeline_driver_ns;
    /* The slowest pipeline made in the frame (the driver's time where it said, else its
     * create call's) and the name the app gave it ("" none); slowest_ns 0: none made. */
    int64_t slowest_ns;
    char slowest_name[OBJECT_NAME_SIZE];
    bool slowest_cache_hit;
    int64_t pipeline_ns, shader_ns, memory_ns, swapchain_ns, submit_ns;
    /* The closing thread's kernel evidence over the frame (with kernel_valid, else 0):
     * page faults that read from disk, block reads, times preempted. */
    bool kernel;
    uint64_t major_faults, block_reads, preempted;
    /* The GPU zone that grew most against its median over the GPU-timed neighbours (its spans
     * that ended in the frame, summed), when it grew by a tenth of the excess at least:
     * index into the recording's zone names, else -1. */
    int zone;
    int64_t zone_ns, zone_median_ns;
    struct wakeup_view wake;
    /* The latest frame of it and the three before it (frames still queued to the display
     * when it began) shown late although ready, and by how many refreshes; 0 none. */
    uint64_t late_frame;
    int late_refreshes;
};

struct hitch_stats {
    uint64_t frames_judged; /* frames with enough neighbours to judge */
    uint64_t count;
    int64_t excess_ns;
    int64_t cause_ns[HITCH_CAUSE_COUNT];
    /* Every hitch (struct hitch), in log and frame order: a spool, on disk past a run's bytes,
     * read through hitches_open. */
    struct sorter hitches;
    struct hitch worst[HITCH_WORST];
    unsigned worst_count;
    /* Frames shown one or more refreshes after they were ready (hitches_late_refreshes), of
     * the frames judged: shown after another shown frame and GPU-timed, so that when each was
     * ready is known (with GPU timing sampled, the timed ones only); late_shown: every frame
     * shown, the judged among them. */
    uint64_t late_judged, late_frames, late_refreshes, late_shown;
    uint64_t animation_samples;
    double animation_error_ms[3]; /* mean |error|, p95, p99 */
    /* The wake-up chain, every frame of every log: by why it is unknown ([WAKEUP_KNOWN]: how
     * many it is known for), and how many threads it followed. */
    uint64_t wake_frames, wake_coverage[WAKEUP_COVERAGE_COUNT];
    unsigned wake_threads;
};

const char *hitch_cause_name(enum hitch_cause c);  /* for JSON: "cpu_work", ... */
const char *hitch_cause_words(enum hitch_cause c); /* for people */
/* Finds the hitches of every log (ev: display evidence per log, as report.c computes it). */
void hitches_compute(const struct recording *rec, const struct display_evidence *ev,
                     struct hitch_stats *ret);
void hitches_free(struct hitch_stats *s);
/* A pass over s's hitches in log and frame order (sorter_next gives each): false when there
 * is none, or memory ran out (said by s->count), and c then holds nothing to close. */
bool hitches_open(struct sorter_cursor *c, const struct hitch_stats *s);

void hitches_write_text(FILE *f, const struct recording *rec, const struct hitch_stats *s);
/* Returns 0, or -ENOMEM when the list of every hitch could not be read back whole. */
int hitches_write_json(FILE *f, const struct recording *rec, const struct hitch_stats *s);

#endif
