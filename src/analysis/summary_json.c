/* summary.json: the summary's numbers for programs (schema framescope-summary-1). */
#include "summary.h"

#include <stdio.h>
#include <stdlib.h>

#include "counters.h"
#include "emit.h"
#include "engine.h"
#include "gpu_busy.h"
#include "gpu_zones.h"
#include "hitches.h"
#include "kms.h"
#include "presentation.h"
#include "threads.h"

static void write_caps_json(FILE *f, const struct run_stats *s)
{
    fputs("  \"caps\": [", f);
    const struct recording *rec = s->rec;
    unsigned n = rec->cap_count;
    bool first = true;
    for (unsigned i = 0; i < n; i++) {
        struct cap_stats c;
        if (!cap_compute(s, &rec->caps[i], &c))
            continue;
        fputs(first ? "{\"label\": " : ", {\"label\": ", f);
        first = false;
        json_write_string(f, c.cap->label);
        fprintf(f, ", \"target_hz\": %.6f, \"waits\": %llu, \"intervals\": %llu, "
                "\"mean_interval_ms\": %.6f, \"error_us\": {\"p50\": %.3f, \"p99\": %.3f, "
                "\"max\": %.3f}, \"resyncs\": %llu, \"missed\": %llu, \"missed_bound_by\": {",
                c.target_hz, (unsigned long long)c.waits, (unsigned long long)c.intervals,
                c.mean_interval_ms, c.err_us[0], c.err_us[1], c.err_us[2],
                (unsigned long long)c.resyncs, (unsigned long long)c.missed);
        for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++)
            fprintf(f, "%s\"%s\": %llu", v ? ", " : "", verdict_name((enum fscope_verdict)v),
                    (unsigned long long)c.missed_by_verdict[v]);
        fputs("}}", f);
    }
    fputs("],\n", f);
}

static const char *kernel_state_name(enum rec_kernel_state state)
{
    switch (state) {
    case REC_KERNEL_ON: return "on";
    case REC_KERNEL_OFF: return "off";
    case REC_KERNEL_UNAVAILABLE: return "unavailable";
    default: return "unknown";
    }
}

int summary_write_json(FILE *f, const struct run_stats *s)
{
    const struct recording *rec = s->rec;
    char clock[160];
    fputs("{\n  \"schema\": \"framescope-summary-1\",\n  \"app\": ", f);
    json_write_string(f, rec->app);
    fprintf(f, ",\n  \"pid\": %d,\n  \"device\": ", rec->pid);
    json_write_string(f, rec->device_count ? rec->devices[0].name : "");
    fputs(",\n  \"driver\": ", f);
    json_write_string(f, rec->device_count ? rec->devices[0].driver : "");
    fputs(",\n  \"devices\": [", f);
    for (unsigned i = 0; i < rec->device_count; i++) {
        const struct rec_device *d = &rec->devices[i];
        fputs(i ? ", {\"name\": " : "{\"name\": ", f);
        json_write_string(f, d->name);
        fputs(", \"driver\": ", f);
        json_write_string(f, d->driver);
        fprintf(f, ", \"first_id\": %u, \"last_id\": %u, \"created\": %u}", d->first_id,
                d->last_id, d->count);
    }
    fputs("]", f);
    /* GPU time per device, kept apart: a frame's GPU busy is its presenting device's. The
     * devices that have spans, not every id up to the largest (a recording names any). */
    fputs(",\n  \"device_gpu\": [", f);
    struct device_gpu_total *gpu;
    size_t gpu_count = device_gpu_totals(rec, &gpu);
    bool first_gpu = true;
    for (size_t i = 0; i < gpu_count; i++) {
        if (gpu[i].device_id == 0)
            continue;
        fprintf(f, "%s{\"id\": %u, \"spans\": %llu, \"busy_ms\": %.6f}", first_gpu ? "" : ", ",
                gpu[i].device_id, (unsigned long long)gpu[i].spans,
                recording_ns(rec, gpu[i].busy_ticks) / 1e6);
        first_gpu = false;
    }
    free(gpu);
    fputs("]", f);
    fputs(",\n  \"clock\": ", f);
    json_write_string(f, recording_clock_describe(rec, clock, sizeof(clock)));
    fprintf(f, ",\n  \"frames\": %llu,\n  \"duration_s\": %.6f,\n  \"fps\": %.3f,\n",
            (unsigned long long)s->frames, s->duration_s, s->fps);
    fprintf(f, "  \"frame_ms\": {\"mean\": %.6f, \"p50\": %.6f, \"p95\": %.6f, \"p99\": %.6f, "
            "\"max\": %.6f},\n", s->mean_ms, s->p50_ms, s->p95_ms, s->p99_ms, s->max_ms);
    fprintf(f, "  \"low_fps\": {\"1%%\": %.3f, \"0.1%%\": %.3f},\n", s->low1_fps, s->low01_fps);
    const double *b = s->budget_ms;
    fprintf(f, "  \"budget_ms\": {\"cpu\": %.6f, \"gpu_busy\": %.6f, \"acquire\": %.6f, "
            "\"present\": %.6f, \"present_wait\": %.6f, \"fence\": %.6f, \"semaphore\": %.6f, "
            "\"idle\": %.6f, \"other_wait\": %.6f, \"cap\": %.6f},\n", b[0], b[1],
            b[2 + FSCOPE_BLOCK_ACQUIRE], b[2 + FSCOPE_BLOCK_PRESENT],
            b[2 + FSCOPE_BLOCK_PRESENT_WAIT], b[2 + FSCOPE_BLOCK_FENCE],
            b[2 + FSCOPE_BLOCK_SEMAPHORE], b[2 + FSCOPE_BLOCK_IDLE],
            b[2 + FSCOPE_BLOCK_SEMAPHORE] + b[2 + FSCOPE_BLOCK_IDLE], b[2 + FSCOPE_BLOCK_CAP]);
    const struct frame_budget_ns *t = &s->total;
    uint64_t nf = s->basis_frames ? s->basis_frames : 1;
    fprintf(f, "  \"blocks_ms\": {\"display_gpu_working\": %.6f, \"display_wait\": %.6f, "
            "\"present_overhead\": %.6f, \"waits_gpu_working\": %.6f, \"waits_gpu_idle\": %.6f, "
            "\"other_threads\": {\"fence\": %.6f, \"semaphore\": %.6f, \"idle\": %.6f}},\n",
            ms_per_frame(t->block_gpu[FSCOPE_BLOCK_ACQUIRE] + t->block_gpu[FSCOPE_BLOCK_PRESENT] +
                             t->block_gpu[FSCOPE_BLOCK_PRESENT_WAIT], nf),
            ms_per_frame(t->display_wait, nf), ms_per_frame(t->present_overhead, nf),
            ms_per_frame(t->gpu_in_waits, nf), ms_per_frame(t->gpu_idle_in_waits, nf),
            ms_per_frame(s->all.other_wait[0], s->frames ? s->frames : 1),
            ms_per_frame(s->all.other_wait[1], s->frames ? s->frames : 1),
            ms_per_frame(s->all.other_wait[2], s->frames ? s->frames : 1));
    fprintf(f, "  \"gpu_timed\": %s,\n", t->gpu_timed ? "true" : "false");
    const struct sampling_bias *sb = &s->sampling;
    fprintf(f, "  \"gpu_sampled\": {\"sampled\": %s, \"basis_frames\": %llu, "
            "\"unsampled_frames\": %llu, \"basis_frame_ms\": %.6f, \"bias\": ",
            s->unsampled_frames ? "true" : "false", (unsigned long long)s->basis_frames,
            (unsigned long long)s->unsampled_frames, ms_per_frame(t->frame, nf));
    if (sb->compared)
        fprintf(f, "{\"timed_frames\": %llu, \"untimed_frames\": %llu, \"timed_median_ms\": "
                "%.6f, \"untimed_median_ms\": %.6f, \"difference_ms\": %.6f, \"z\": "
                "%.3f, \"timed_verdict\": \"%s\", \"untimed_verdict\": \"%s\", \"corrected\": "
                "%s, \"gpu_busy_timed_ms\": %.6f, \"undecided\": %s, \"timed_margin\": %.6f, "
                "\"timed_margin_se\": %.6f}},\n",
                (unsigned long long)sb->timed_frames, (unsigned long long)sb->untimed_frames,
                sb->timed_median_ms, sb->untimed_median_ms, sb->difference_ms, sb->z,
                verdict_name(sb->timed_verdict), verdict_name(sb->untimed_verdict),
                sb->corrected ? "true" : "false", sb->gpu_busy_timed_ms,
                sb->undecided ? "true" : "false", sb->timed_margin, sb->timed_margin_se);
    else
        fputs("null},\n", f);
    {
        char thread[64];
        uint64_t kn = s->kernel_frames ? s->kernel_frames : 1;
        fputs("  \"kernel\": {\"state\": ", f);
        json_write_string(f, kernel_state_name(rec->kernel_state));
        fputs(", \"why\": ", f);
        json_write_string(f, rec->kernel_why);
        fputs(", \"thread\": ", f);
        json_write_string(f, s->kernel_frames ? recording_thread_label(rec, s->kernel_tid, thread,
                                                              sizeof(thread)) : "");
        fprintf(f, ", \"frames\": %llu, \"cpu_ms\": %.6f, \"cpu_busy_ms\": %.6f, "
                "\"cpu_starved_ms\": %.6f, \"cpu_blocked_ms\": %.6f, \"oncpu_ms\": %.6f, "
                "\"runnable_ms\": %.6f, \"asleep_ms\": %.6f},\n",
                (unsigned long long)s->kernel_frames, ms_per_frame(s->kernel_cpu, kn),
                ms_per_frame(s->cpu_busy, kn), ms_per_frame(s->cpu_starved, kn),
                ms_per_frame(s->cpu_blocked, kn), ms_per_frame(s->oncpu, kn),
                ms_per_frame(s->runnable, kn), ms_per_frame(s->asleep, kn));
    }
    counters_write_json(f, rec, &s->counters);
    fprintf(f, "  \"per_frame\": {\"submits\": %.3f, \"command_buffers\": %.3f, \"draws\": %.3f, "
            "\"dispatches\": %.3f, \"render_passes\": %.3f},\n",
            s->count_mean[FSCOPE_COUNT_SUBMITS], s->count_mean[FSCOPE_COUNT_COMMAND_BUFFERS],
            s->count_mean[FSCOPE_COUNT_DRAWS], s->count_mean[FSCOPE_COUNT_DISPATCHES],
            s->count_mean[FSCOPE_COUNT_RENDER_PASSES]);
    engine_write_json(f, rec, &s->engine, s->count_mean);
    fputs("  \"verdict\": {\"run\": ", f);
    json_write_string(f, s->frames ? verdict_name(s->run_verdict) : "none");
    fputs(", \"reason\": ", f);
    json_write_string(f, s->reason);
    fputs(", \"shares\": {", f);
    for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++)
        fprintf(f, "%s\"%s\": %.6f", v ? ", " : "", verdict_name((enum fscope_verdict)v),
                s->basis_frames ? (double)s->verdict_frames[v] / (double)s->basis_frames : 0.0);
    fputs("}},\n", f);
    presentation_write_json(rec, f, &s->presentation);
    int e = hitches_write_json(f, rec, &s->hitches);
    threads_write_json(f, rec);
    drm_write_json(f, rec);
    kms_write_json(f, rec);
    gpu_zones_write_json(f, rec, s->zone_frames);
    write_caps_json(f, s);
    /* Only when rows were left out: a run shorter than the window reads as it always did. */
    const struct frame_keep *k = &s->keep;
    if (k->cut)
        fprintf(f, "  \"kept\": {\"files\": [\"frames.csv\", \"presentmon.csv\", "
                "\"mangohud.csv\", \"report.html\", \"threads.csv\"], \"window_minutes\": %g, "
                "\"frames\": %llu, \"of\": %llu, \"in_window\": %llu, \"around_hitches\": %llu, "
                "\"frames_each_side\": %u, \"hitches\": %llu, \"hitches_total\": %llu},\n",
                k->window_ms / 60000.0, (unsigned long long)k->kept_frames,
                (unsigned long long)k->frames, (unsigned long long)k->window_frames,
                (unsigned long long)k->hitch_frames, KEEP_AROUND_HITCH,
                (unsigned long long)k->hitches_kept, (unsigned long long)k->hitches);
    fputs("  \"surfaces\": [", f);
    unsigned logs = rec->log_count;
    for (unsigned l = 0; l < logs; l++) {
        fputs(l ? ", {\"label\": " : "{\"label\": ", f);
        const struct recording_log *log = &rec->logs[l];
        json_write_string(f, log->label);
        struct presentation_accounting a = { 0 };
        if (s->presentation.logs)
            a = s->presentation.logs[l].account;
        fprintf(f, ", \"frames\": %llu, \"presentation_tracked\": %s, \"requested\": %llu, "
                "\"presented\": %llu, \"discarded\": %llu, \"discarded_recreation\": %llu, "
                "\"pending\": %llu, \"untracked_reason\": ",
                (unsigned long long)log->frame_count,
                log->tracked ? "true" : "false", (unsigned long long)a.requested,
                (unsigned long long)a.presented, (unsigned long long)a.discarded,
                (unsigned long long)a.discarded_recreation, (unsigned long long)a.pending);
        json_write_string(f, log->untracked_why);
        if (s->evidence) {
            const struct display_evidence *ev = &s->evidence[l];
            fprintf(f, ", \"display_paces\": %s, \"display_confirmed\": %s, \"display_evidence\": ",
                    ev->paces ? "true" : "false", ev->confirmed ? "true" : "false");
            json_write_string(f, ev->why);
        }
        fputc('}', f);
    }
    fputs("],\n  \"notes\": [", f);
    for (unsigned i = 0; i < rec->note_count; i++) {
        if (i)
            fputs(", ", f);
        json_write_string(f, rec->notes[i]);
    }
    fputs("]\n}\n", f);
    return e;
}
