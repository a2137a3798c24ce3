/* A synthetic recording, made in memory as analysis/recording.h models one (what
 * recording_read returns), for the tests and benchmarks of the analysis' cost (issue 35):
 * test-linear.c counts its work, bench-report.c times it.
 *
 * frames frames of 16 ms on one Wayland surface, every 50th a 60 ms hitch; each frame with a
 * GPU span, two GPU zones, a pipeline made, a command buffer recorded, presentation feedback,
 * the kernel's view and five wake-up chain events of the thread that closed it (preempted,
 * asleep, woken). That thread changes halfway through the run, as when a game's render thread
 * hands over, and the events pause for two frames every 200 (FRAMESCOPE_WAKEUPS=auto): the
 * patterns that made frames.csv cost frames x events. The events are stored as the sampler
 * drains its per-CPU rings: two interleaved halves, not in time order. */
#ifndef FSCOPE_TEST_SYNTH_RECORDING_H
#define FSCOPE_TEST_SYNTH_RECORDING_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/frames.h"
#include "analysis/live.h"
#include "analysis/recording.h"
#include "analysis/report.h"

#define SYNTH_FRAME_NS 16000000u
#define SYNTH_HITCH_NS 60000000u
#define SYNTH_SCHED_PER_FRAME 5
#define SYNTH_FIRST_TID 100
#define SYNTH_SECOND_TID 200

static inline void synth_sched(struct sched_event *e, uint64_t ticks, int tid, int other, uint8_t kind,
                        uint8_t state, const char *comm)
{
    memset(e, 0, sizeof(*e));
    e->ticks = ticks;
    e->tid = tid;
    e->other_tid = other;
    e->kind = kind;
    e->state = state;
    snprintf(e->other_comm, sizeof(e->other_comm), "%s", comm);
}

static inline bool synth_paused(uint64_t i)
{
    return i % 200 == 100 || i % 200 == 101;
}

/* The recording (free with recording_free), NULL when memory ran out. */
static inline struct recording *synth_recording(uint64_t frames)
{
    struct recording *rec = calloc(1, sizeof(*rec));
    if (!rec)
        return NULL;
    snprintf(rec->app, sizeof(rec->app), "synthetic");
    rec->pid = 4242;
    rec->state = REC_STATE_ENDED;
    rec->end_status = 1;
    rec->ns_per_tick = 1.0;
    rec->clock_base_ticks = 1000000000u;
    rec->clock_base_ns = 1000000000;
    rec->enabled = rec->gpu_timing = true;
    rec->device_count = 1;
    snprintf(rec->devices[0].name, sizeof(rec->devices[0].name), "synthetic GPU");
    snprintf(rec->devices[0].driver, sizeof(rec->devices[0].driver), "none");
    rec->devices[0].first_id = rec->devices[0].last_id = rec->devices[0].count = 1;
    rec->kernel_state = REC_KERNEL_ON;
    rec->kernel.present = true;
    rec->kernel.tick_ms = 10;
    rec->kernel.sched_state = REC_SCHED_ON;
    rec->log_count = 1;
    rec->logs = calloc(1, sizeof(*rec->logs));
    rec->gpu_zone_name_count = 2;
    rec->gpu_zone_names = calloc(2, sizeof(*rec->gpu_zone_names));
    uint64_t marks = 2 * ((frames + 99) / 200);
    /* Two CPUs' rings, as recorded: even frames' events, then odd frames'. */
    struct sched_event *even = calloc(frames * SYNTH_SCHED_PER_FRAME + marks + 1, sizeof(*even));
    recording_kernel_init(&rec->kernel);
    recording_spans_init(rec);
    recording_engine_init(&rec->engine);
    if (!rec->logs || !rec->gpu_zone_names || !even)
        goto error;
    struct recording_log *log = &rec->logs[0];
    snprintf(log->label, sizeof(log->label), "synthetic surface");
    log->surface = FRAME_SURFACE_WAYLAND;
    log->tracked = true;
    /* The frames built here, then kept as analysis keeps them (frames.h). */
    struct fscope_frame *built = calloc(frames ? frames : 1, sizeof(*built));
    if (!built)
        goto error;
    snprintf(rec->gpu_zone_names[0], sizeof(rec->gpu_zone_names[0]), "frame");
    snprintf(rec->gpu_zone_names[1], sizeof(rec->gpu_zone_names[1]), "frame/draw");
    rec->engine.present = true;

    const uint64_t ms = 1000000;
    uint64_t t = rec->clock_base_ticks, sched = 0, samples = 0;
    /* The events of even frames first, then odd frames': two CPUs' rings drained in turn. */
    struct sched_event *odd = calloc(frames * SYNTH_SCHED_PER_FRAME + 1, sizeof(*odd));
    uint64_t odd_count = 0;
    if (!odd) {
        free(built);
        goto error;
    }
    for (uint64_t i = 0; i < frames; i++) {
        struct fscope_frame *f = &built[i];
        bool hitch = i % 50 == 25;
        uint64_t length = hitch ? SYNTH_HITCH_NS : SYNTH_FRAME_NS;
        int tid = i < frames / 2 ? SYNTH_FIRST_TID : SYNTH_SECOND_TID;
        f->index = i;
        f->start_ticks = t;
        f->end_ticks = t + length;
        f->block_ticks[FSCOPE_BLOCK_FENCE] = 2 * ms;
        f->block_ticks[FSCOPE_BLOCK_PRESENT] = 1 * ms;
        f->block_span_count = 1;
        f->block_span_kind[0] = FSCOPE_BLOCK_FENCE;
        f->block_span_start[0] = t + 6 * ms;
        f->block_span_end[0] = t + 8 * ms;
        f->counts[FSCOPE_COUNT_SUBMITS] = 1;
        f->counts[FSCOPE_COUNT_DRAWS] = 10;
        f->counts[FSCOPE_COUNT_PIPELINES] = 1;
        f->counts[FSCOPE_COUNT_PIPELINE_TICKS] = hitch ? 30 * ms : 1 * ms;
        f->device_id = 1;
        f->present_mode = PRESENT_FIFO;
        f->present_return_ticks = f->end_ticks + ms / 2;
        f->presented_ticks = f->end_ticks + 5 * ms;
        f->present_seq = i + 1;
        f->refresh_ns = SYNTH_FRAME_NS;
        f->present_state = FRAME_PRESENT_PRESENTED;
        f->output_index = -1;
        /* The same thread closed the frame before: the kernel's view is whole. */
        f->kernel_valid = i != 0 && i != frames / 2;
        f->kernel_tid = tid;
        f->kernel_oncpu_ns = length - 6 * ms;
        f->kernel_runnable_ns = 1 * ms;
        struct gpu_zone_span zone_spans[2] = {
            { t + 1 * ms, t + 9 * ms, 1, 0, 0, 0 },
            { t + 2 * ms, t + (hitch ? 38 : 8) * ms, 1, 1, 1, 0 },
        };
        struct gpu_span span = { t + 1 * ms, t + (hitch ? 40 : 9) * ms, 1, 0 };
        if (!sorter_push(&rec->spans, &span) || !sorter_push(&rec->gpu_zones, &zone_spans[0]) ||
            !sorter_push(&rec->gpu_zones, &zone_spans[1])) {
            free(built);
            free(odd);
            goto error;
        }
        struct pipeline_item created = { { t + 3 * ms, hitch ? 30 * ms : ms, 0, i + 1, 1, 0 },
                                         i };
        struct cmd_recording recorded = { .begin_ticks = t + ms / 2, .end_ticks = t + 3 * ms / 2,
                                          .cb = 1 + i % 3, .pool = 1, .device_id = 1,
                                          .tid = tid, .commands = 20, .draws = 10 };
        if (!sorter_push(&rec->pipelines, &created) ||
            !sorter_push(&rec->engine.recordings, &recorded)) {
            free(built);
            free(odd);
            goto error;
        }
        struct kernel_sample sample = { .ticks = t, .tid = tid, .oncpu_ns = i * 10 * ms,
                                        .runnable_ns = i * ms, .runs = i };
        if (i % 10 == 0 && !sorter_push(&rec->kernel.samples, &sample)) {
            free(built);
            free(odd);
            goto error;
        }
        samples += i % 10 == 0;
        struct sched_event *ring = i % 2 ? odd : even;
        uint64_t *at = i % 2 ? &odd_count : &sched;
        if (i % 200 == 100) {
            synth_sched(&ring[(*at)++], t, 0, 0, SCHED_EVENT_PAUSED, 0, "");
        } else if (i % 200 == 102) {
            synth_sched(&ring[(*at)++], t, 0, 0, SCHED_EVENT_RESUMED, 0, "");
        }
        if (!synth_paused(i)) {
            synth_sched(&ring[(*at)++], t + 2 * ms, tid, 300, SCHED_EVENT_OUT,
                        SCHED_OUT_RUNNABLE, "hog");
            synth_sched(&ring[(*at)++], t + 3 * ms, tid, 300, SCHED_EVENT_IN, 0, "hog");
            synth_sched(&ring[(*at)++], t + 5 * ms, tid, 0, SCHED_EVENT_OUT,
                        hitch ? SCHED_OUT_DISK : SCHED_OUT_SLEEP, "swapper/0");
            synth_sched(&ring[(*at)++], t + (hitch ? 40 : 7) * ms, tid, 400, SCHED_EVENT_WOKEN, 0,
                        "waker");
            synth_sched(&ring[(*at)++], t + (hitch ? 41 : 8) * ms, tid, 0, SCHED_EVENT_IN, 0,
                        "swapper/0");
        }
        t += length;
    }
    bool added = true;
    for (uint64_t k = 0; added && k < sched + odd_count; k++)
        added = recording_sched_add(&rec->kernel, k < sched ? &even[k] : &odd[k - sched]);
    free(even);
    even = NULL;
    free(odd);
    int stored = added ? frame_store_set(log, built, frames) : -ENOMEM;
    free(built);
    if (stored || !sorter_finish(&rec->kernel.sched_events) ||
        !sorter_finish(&rec->kernel.samples) || !sorter_finish(&rec->kernel.drm_samples))
        goto error;
    rec->kernel.sample_count = samples;
    rec->span_count = frames;
    rec->gpu_zone_count = 2 * frames;
    rec->pipeline_count = frames;
    rec->engine.recording_count = frames;
    if (!sorter_finish(&rec->engine.recordings) || !sorter_finish(&rec->engine.pool_ops) ||
        !sorter_finish(&rec->engine.budgets) || !sorter_finish(&rec->engine.gauges) ||
        !sorter_finish(&rec->engine.memory) ||
        !sorter_finish(&rec->spans) || !sorter_finish(&rec->gpu_zones) ||
        !sorter_finish(&rec->pipelines))
        goto error;
    return rec;
error:
    free(even);
    recording_free(rec);
    return NULL;
}

/* Every event of the recording that an output may read on behalf of a frame. */
static inline uint64_t synth_events(const struct recording *rec)
{
    return rec->kernel.sched_count + rec->kernel.sample_count + rec->span_count +
           rec->gpu_zone_count + rec->pipeline_count + rec->engine.recording_count;
}

/* What framescope report and framescoped's jobs do with a recording: the analysis, every
 * format (to /dev/null), and top's live view. Returns 0 or -errno. */
static inline int synth_outputs(struct recording *rec)
{
    FILE *null = fopen("/dev/null", "we");
    if (!null)
        return -1;
    struct report *report = report_create(rec);
    int e = report ? 0 : -12;
    for (unsigned i = 0; report && e == 0 && i < REPORT_FORMAT_COUNT; i++)
        e = report_write(null, report, (enum report_format)i);
    struct live_stats live;
    live_stats_compute(rec, 1.0, &live);
    report_destroy(report);
    fclose(null);
    return e;
}

#endif
