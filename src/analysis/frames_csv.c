/* frames.csv: one row per frame, every number the analysis has of it. */
#include "summary.h"

#include <stdio.h>
#include <stdlib.h>

#include "emit.h"
#include "engine.h"
#include "hitches.h"
#include "keep.h"

static void write_header(FILE *f, const struct recording *rec)
{
    fputs("frame,surface,swapchain,start_ms,frame_ms,cpu_ms,gpu_busy_ms", f);
    for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++)
        fprintf(f, ",%s_ms", block_name((enum fscope_block)k));
    fputs(",record_ms,submits,command_buffers,draws,dispatches,render_passes,verdict,"
          "cap,present,presented_ms,latency_ms,latency_from_return_ms,refresh_ms,seq,flags,"
          "output,device,display_gpu_ms,display_wait_ms,present_overhead_ms,waits_gpu_ms,"
          "waits_gpu_idle_ms,other_fence_ms,other_semaphore_ms,other_idle_ms,cpu_busy_ms,"
          "cpu_starved_ms,cpu_blocked_ms,oncpu_ms,runnable_ms,asleep_ms,kernel_tid,"
          "pipelines,pipeline_ms,shader_modules,shader_module_ms,memory_calls,memory_ms,"
          "swapchain_ms,submit_ms,major_faults,block_reads,preempted,voluntary_switches,"
          "late_refreshes,pipelines_reported,pipeline_cache_hits,pipeline_driver_ms,"
          "ran_instead,ran_instead_ms,woken_by,woken_after_ms,io_wait_ms,recordings,"
          "record_secondary_ms,record_threads,record_busiest_thread_ms,commands,pool_ms,"
          "vertices,indices,instances,indirect_draws", f);
    for (unsigned k = 0; k < BIND_KINDS; k++)
        fprintf(f, ",binds_%s,redundant_%s", engine_bind_key(k), engine_bind_key(k));
    fputs(",memory_allocations,memory_allocated_bytes,memory_frees,descriptor_sets", f);
    counters_write_csv_header(f, rec);
    fputc('\n', f);
}

/* What a row's parts read: the frame, its budget, and the run's. */
struct row {
    const struct run_stats *s;
    const struct recording *rec;
    const struct recording_log *log;
    const struct fscope_frame *fr;
    uint64_t index, origin;
    struct frame_budget_ns b;
    bool outside; /* GPU timing sampled it out */
};

/* frame .. verdict, cap: the frame's budget. */
static void row_budget(FILE *f, const struct row *r)
{
    const struct recording *rec = r->rec;
    const struct fscope_frame *fr = r->fr;
    const struct frame_budget_ns *b = &r->b;
    uint64_t i = r->index, origin = r->origin;
    unsigned l = (unsigned)(r->log - rec->logs);
    bool outside = r->outside;
    fprintf(f, "%llu,%u,%u,%.6f", (unsigned long long)i, l, fr->swapchain_serial,
            recording_ns(rec, fr->start_ticks - origin) / 1e6);
    csv_write_ms(f, b->frame);
    csv_write_ms(f, b->cpu);
    /* A frame GPU timing sampled out has no GPU busy and no verdict (the run's are
     * its GPU-timed frames'): empty, never 0. */
    if (outside)
        fputc(',', f);
    else
        csv_write_ms(f, b->gpu_busy);
    for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++)
        csv_write_ms(f, b->block[k]);
    csv_write_ms(f, ticks_ns(rec, fr->counts[FSCOPE_COUNT_RECORD_TICKS]));
    fprintf(f, ",%llu,%llu,%llu,%llu,%llu,%s,",
            (unsigned long long)fr->counts[FSCOPE_COUNT_SUBMITS],
            (unsigned long long)fr->counts[FSCOPE_COUNT_COMMAND_BUFFERS],
            (unsigned long long)fr->counts[FSCOPE_COUNT_DRAWS],
            (unsigned long long)fr->counts[FSCOPE_COUNT_DISPATCHES],
            (unsigned long long)fr->counts[FSCOPE_COUNT_RENDER_PASSES],
            outside ? "" : verdict_name(frame_verdict(b)));
    fputs(fr->cap_flags & CAP_FLAG_RESYNC   ? "resync,"
          : fr->cap_flags & CAP_FLAG_MISSED ? "missed,"
          : fr->cap_flags & CAP_FLAG_CAPPED ? "capped,"
                                            : ",", f);
}

/* present .. output: what became of the frame on the display. */
static void row_presentation(FILE *f, const struct row *r)
{
    const struct recording *rec = r->rec;
    const struct fscope_frame *fr = r->fr;
    const struct recording_log *log = r->log;
    uint64_t origin = r->origin;
    fputs(frame_present_state_name(fr, log), f);
    if (fr->present_state == FRAME_PRESENT_PRESENTED && fr->presented_ticks > origin) {
        double latency = fr->presented_ticks > fr->end_ticks
                             ? recording_ns(rec, fr->presented_ticks - fr->end_ticks) / 1e6
                             : -recording_ns(rec, fr->end_ticks - fr->presented_ticks) / 1e6;
        double from_return = fr->presented_ticks > fr->present_return_ticks
                                 ? recording_ns(rec, fr->presented_ticks -
                                                      fr->present_return_ticks) / 1e6
                                 : -recording_ns(rec, fr->present_return_ticks -
                                                       fr->presented_ticks) / 1e6;
        fprintf(f, ",%.6f,%.6f,%.6f,%.6f,%llu,%u,%d",
                recording_ns(rec, fr->presented_ticks - origin) / 1e6, latency,
                from_return, fr->refresh_ns / 1e6, (unsigned long long)fr->present_seq,
                fr->present_flags, fr->output_index);
    } else {
        fputs(",,,,,,,", f);
    }
}

/* device .. kernel_tid: how the blocks split, and the kernel's view of the frame. */
static void row_blocks(FILE *f, const struct row *r)
{
    const struct fscope_frame *fr = r->fr;
    const struct frame_budget_ns *b = &r->b;
    fprintf(f, ",%u", fr->device_id);
    csv_write_ms(f, b->block_gpu[FSCOPE_BLOCK_ACQUIRE] + b->block_gpu[FSCOPE_BLOCK_PRESENT] +
                    b->block_gpu[FSCOPE_BLOCK_PRESENT_WAIT]);
    csv_write_ms(f, b->display_wait);
    csv_write_ms(f, b->present_overhead);
    csv_write_ms(f, b->gpu_in_waits);
    csv_write_ms(f, b->gpu_idle_in_waits);
    for (unsigned k = 0; k < 3; k++)
        csv_write_ms(f, b->other_wait[k]);
    if (b->kernel) {
        const int64_t kernel[] = { b->cpu_busy, b->cpu_starved, b->cpu_blocked, b->oncpu,
                                   b->runnable, b->asleep };
        for (unsigned k = 0; k < 6; k++)
            csv_write_ms(f, kernel[k]);
        fprintf(f, ",%d", fr->kernel_tid);
    } else {
        fputs(",,,,,,,", f);
    }
}

/* pipelines .. pipeline_driver_ms: the calls that stall a frame, and when it was shown. */
static void row_calls(FILE *f, const struct row *r, int late)
{
    const struct recording *rec = r->rec;
    const struct fscope_frame *fr = r->fr;
    fprintf(f, ",%llu", (unsigned long long)fr->counts[FSCOPE_COUNT_PIPELINES]);
    csv_write_ms(f, ticks_ns(rec, fr->counts[FSCOPE_COUNT_PIPELINE_TICKS]));
    fprintf(f, ",%llu", (unsigned long long)fr->counts[FSCOPE_COUNT_SHADERS]);
    csv_write_ms(f, ticks_ns(rec, fr->counts[FSCOPE_COUNT_SHADER_TICKS]));
    fprintf(f, ",%llu", (unsigned long long)fr->counts[FSCOPE_COUNT_MEMORY_CALLS]);
    csv_write_ms(f, ticks_ns(rec, fr->counts[FSCOPE_COUNT_MEMORY_TICKS]));
    csv_write_ms(f, ticks_ns(rec, fr->counts[FSCOPE_COUNT_SWAPCHAIN_TICKS]));
    csv_write_ms(f, ticks_ns(rec, fr->counts[FSCOPE_COUNT_SUBMIT_TICKS]));
    if (fr->kernel_valid)
        fprintf(f, ",%u,%u,%u,%u", fr->kernel_major_faults, fr->kernel_block_reads,
                fr->kernel_preempted, fr->kernel_waits);
    else
        fputs(",,,,", f);
    if (late >= 0)
        fprintf(f, ",%d", late);
    else
        fputc(',', f);
    fprintf(f, ",%llu,%llu",
            (unsigned long long)fr->counts[FSCOPE_COUNT_PIPELINES_FEEDBACK],
            (unsigned long long)fr->counts[FSCOPE_COUNT_PIPELINE_CACHE_HITS]);
    csv_write_ms(f, fr->counts[FSCOPE_COUNT_PIPELINE_DRIVER_NS] < (uint64_t)INT64_MAX
                        ? (int64_t)fr->counts[FSCOPE_COUNT_PIPELINE_DRIVER_NS]
                        : INT64_MAX);
}

/* ran_instead .. io_wait_ms: the wake-up chain. */
static void row_wakeups(FILE *f, const struct row *r, const struct sched_index *sched)
{
    /* The wake-up chain: empty where it was not recorded for the frame's thread; a
     * name, or empty with 0 ms, where nothing preempted or woke it. */
    struct wakeup_view wake;
    frame_wakeups(r->rec, sched, r->fr, &wake);
    if (wake.known) {
        fputc(',', f);
        for (const char *c = wake.ran_comm; wake.ran_tid && *c; c++)
            fputc(*c == ',' || *c == '"' ? ' ' : *c, f);
        csv_write_ms(f, wake.ran_ns);
        fputc(',', f);
        for (const char *c = wake.waker_comm; wake.slept_ns && *c; c++)
            fputc(*c == ',' || *c == '"' ? ' ' : *c, f);
        csv_write_ms(f, wake.slept_ns);
        csv_write_ms(f, wake.io_wait_ns);
    } else {
        fputs(",,,,,", f);
    }
}

/* recordings .. descriptor_sets: the engine's view of the frame. */
static void row_engine(FILE *f, const struct row *r)
{
    const struct recording *rec = r->rec;
    const struct fscope_frame *fr = r->fr;
    const uint64_t *n = fr->counts;
    unsigned threads;
    uint64_t busiest;
    engine_frame_recording(&r->s->engine, rec, fr->start_ticks, fr->end_ticks, &threads,
                           &busiest);
    fprintf(f, ",%llu", (unsigned long long)n[FSCOPE_COUNT_RECORDINGS]);
    csv_write_ms(f, ticks_ns(rec, n[FSCOPE_COUNT_RECORD_SECONDARY_TICKS]));
    fprintf(f, ",%u", threads);
    csv_write_ms(f, ticks_ns(rec, busiest));
    fprintf(f, ",%llu", (unsigned long long)n[FSCOPE_COUNT_RECORD_COMMANDS]);
    csv_write_ms(f, ticks_ns(rec, n[FSCOPE_COUNT_POOL_TICKS]));
    fprintf(f, ",%llu,%llu,%llu,%llu", (unsigned long long)n[FSCOPE_COUNT_VERTICES],
            (unsigned long long)n[FSCOPE_COUNT_INDICES],
            (unsigned long long)n[FSCOPE_COUNT_INSTANCES],
            (unsigned long long)n[FSCOPE_COUNT_INDIRECT_DRAWS]);
    for (unsigned k = 0; k < BIND_KINDS; k++)
        fprintf(f, ",%llu,%llu", (unsigned long long)n[FSCOPE_COUNT_BINDS + k],
                (unsigned long long)n[FSCOPE_COUNT_REDUNDANT + k]);
    fprintf(f, ",%llu,%llu,%llu,%llu", (unsigned long long)n[FSCOPE_COUNT_MEMORY_ALLOCS],
            (unsigned long long)n[FSCOPE_COUNT_MEMORY_ALLOC_BYTES],
            (unsigned long long)n[FSCOPE_COUNT_MEMORY_FREES],
            (unsigned long long)n[FSCOPE_COUNT_DESCRIPTOR_SETS]);
}

void frames_write_csv(FILE *f, const struct run_stats *s)
{
    const struct recording *rec = s->rec;
    write_header(f, rec);
    unsigned logs = rec->log_count;
    uint64_t origin = frames_origin_ticks(rec);
    /* Indexed once for every surface: each frame reads only its own events. */
    struct sched_index sched;
    struct span_index spans;
    sched_index_build(rec, &sched);
    span_index_build(rec, &spans);
    for (unsigned l = 0; l < logs; l++) {
        const struct recording_log *log = &rec->logs[l];
        uint64_t count = log->frame_count;
        int *late = count ? malloc(count * sizeof(*late)) : NULL;
        if (late)
            hitches_late_refreshes(rec, &spans, l, s->evidence ? &s->evidence[l] : NULL, late);
        for (uint64_t i = 0; i < count; i++) {
            if (!keep_frame(&s->keep, l, i))
                continue;
            struct row r = { .s = s, .rec = rec, .log = log, .fr = &log->frames[i], .index = i,
                             .origin = origin };
            frame_budget(rec, r.fr, s->evidence ? &s->evidence[l] : NULL, &r.b);
            r.outside = s->basis_frames < s->frames && r.fr->gpu_unsampled;
            row_budget(f, &r);
            row_presentation(f, &r);
            row_blocks(f, &r);
            row_calls(f, &r, late ? late[i] : -1);
            row_wakeups(f, &r, &sched);
            row_engine(f, &r);
            counters_write_csv_row(f, rec, r.fr);
            fputc('\n', f);
        }
        free(late);
    }
    sched_index_free(&sched);
    span_index_free(&spans);
}
