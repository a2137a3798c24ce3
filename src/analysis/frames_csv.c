/* frames.csv: one row per frame, every number the analysis has of it. */
#include "summary.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "emit.h"
#include "engine.h"
#include "frames.h"
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
    struct frame_cursor *cursor; /* over the log's frames, at fr */
    const struct fscope_frame *fr;
    uint64_t index, origin;
    struct frame_budget_ns b;
    bool outside; /* GPU timing sampled it out */
    struct engine_window *recordings;
};

/* ",N": a count. */
static void emit_csv_count(struct emit *e, uint64_t count)
{
    emit_char(e, ',');
    emit_u64(e, count);
}

/* frame .. verdict, cap: the frame's budget. */
static void row_budget(struct emit *e, const struct row *r)
{
    const struct recording *rec = r->rec;
    const struct fscope_frame *fr = r->fr;
    const struct frame_budget_ns *b = &r->b;
    unsigned l = (unsigned)(r->log - rec->logs);
    bool outside = r->outside;
    emit_u64(e, r->index);
    emit_char(e, ',');
    emit_u64(e, l);
    emit_char(e, ',');
    emit_u64(e, fr->swapchain_serial);
    emit_char(e, ',');
    emit_scaled(e, recording_ns(rec, fr->start_ticks - r->origin), 6);
    emit_csv_ms(e, b->frame);
    emit_csv_ms(e, b->cpu);
    /* A frame GPU timing sampled out has no GPU busy and no verdict (the run's are
     * its GPU-timed frames'): empty, never 0. */
    if (outside)
        emit_char(e, ',');
    else
        emit_csv_ms(e, b->gpu_busy);
    for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++)
        emit_csv_ms(e, b->block[k]);
    emit_csv_ms(e, ticks_ns(rec, fr->counts[FSCOPE_COUNT_RECORD_TICKS]));
    emit_csv_count(e, fr->counts[FSCOPE_COUNT_SUBMITS]);
    emit_csv_count(e, fr->counts[FSCOPE_COUNT_COMMAND_BUFFERS]);
    emit_csv_count(e, fr->counts[FSCOPE_COUNT_DRAWS]);
    emit_csv_count(e, fr->counts[FSCOPE_COUNT_DISPATCHES]);
    emit_csv_count(e, fr->counts[FSCOPE_COUNT_RENDER_PASSES]);
    emit_char(e, ',');
    emit_str(e, outside ? "" : verdict_name(frame_verdict(b)));
    emit_char(e, ',');
    emit_str(e, fr->cap_flags & CAP_FLAG_RESYNC   ? "resync,"
                : fr->cap_flags & CAP_FLAG_MISSED ? "missed,"
                : fr->cap_flags & CAP_FLAG_CAPPED ? "capped,"
                                                  : ",");
}

/* present .. output: what became of the frame on the display. */
static void row_presentation(struct emit *e, const struct row *r)
{
    const struct recording *rec = r->rec;
    const struct fscope_frame *fr = r->fr;
    uint64_t origin = r->origin;
    emit_str(e, frame_present_state_name(r->cursor, r->index));
    if (fr->present_state == FRAME_PRESENT_PRESENTED && fr->presented_ticks > origin) {
        /* In ns, negated before the division to ms, as -(ns / 1e6) is (-ns) / 1e6 exactly. */
        double latency = fr->presented_ticks > fr->end_ticks
                             ? recording_ns(rec, fr->presented_ticks - fr->end_ticks)
                             : -recording_ns(rec, fr->end_ticks - fr->presented_ticks);
        double from_return = fr->presented_ticks > fr->present_return_ticks
                                 ? recording_ns(rec, fr->presented_ticks -
                                                      fr->present_return_ticks)
                                 : -recording_ns(rec, fr->present_return_ticks -
                                                       fr->presented_ticks);
        const double ms[] = { recording_ns(rec, fr->presented_ticks - origin), latency,
                              from_return, fr->refresh_ns };
        for (unsigned k = 0; k < 4; k++) {
            emit_char(e, ',');
            emit_scaled(e, ms[k], 6);
        }
        emit_char(e, ',');
        emit_u64(e, fr->present_seq);
        emit_char(e, ',');
        emit_u64(e, fr->present_flags);
        emit_char(e, ',');
        emit_i64(e, fr->output_index);
    } else {
        emit_str(e, ",,,,,,,");
    }
}

/* device .. kernel_tid: how the blocks split, and the kernel's view of the frame. */
static void row_blocks(struct emit *e, const struct row *r)
{
    const struct fscope_frame *fr = r->fr;
    const struct frame_budget_ns *b = &r->b;
    emit_char(e, ',');
    emit_u64(e, fr->device_id);
    emit_csv_ms(e, b->block_gpu[FSCOPE_BLOCK_ACQUIRE] + b->block_gpu[FSCOPE_BLOCK_PRESENT] +
                       b->block_gpu[FSCOPE_BLOCK_PRESENT_WAIT]);
    emit_csv_ms(e, b->display_wait);
    emit_csv_ms(e, b->present_overhead);
    emit_csv_ms(e, b->gpu_in_waits);
    emit_csv_ms(e, b->gpu_idle_in_waits);
    for (unsigned k = 0; k < 3; k++)
        emit_csv_ms(e, b->other_wait[k]);
    if (b->kernel) {
        const int64_t kernel[] = { b->cpu_busy, b->cpu_starved, b->cpu_blocked, b->oncpu,
                                   b->runnable, b->asleep };
        for (unsigned k = 0; k < 6; k++)
            emit_csv_ms(e, kernel[k]);
        emit_char(e, ',');
        emit_i64(e, fr->kernel_tid);
    } else {
        emit_str(e, ",,,,,,,");
    }
}

/* pipelines .. pipeline_driver_ms: the calls that stall a frame, and when it was shown. */
static void row_calls(struct emit *e, const struct row *r, int late)
{
    const struct recording *rec = r->rec;
    const struct fscope_frame *fr = r->fr;
    emit_csv_count(e, fr->counts[FSCOPE_COUNT_PIPELINES]);
    emit_csv_ms(e, ticks_ns(rec, fr->counts[FSCOPE_COUNT_PIPELINE_TICKS]));
    emit_csv_count(e, fr->counts[FSCOPE_COUNT_SHADERS]);
    emit_csv_ms(e, ticks_ns(rec, fr->counts[FSCOPE_COUNT_SHADER_TICKS]));
    emit_csv_count(e, fr->counts[FSCOPE_COUNT_MEMORY_CALLS]);
    emit_csv_ms(e, ticks_ns(rec, fr->counts[FSCOPE_COUNT_MEMORY_TICKS]));
    emit_csv_ms(e, ticks_ns(rec, fr->counts[FSCOPE_COUNT_SWAPCHAIN_TICKS]));
    emit_csv_ms(e, ticks_ns(rec, fr->counts[FSCOPE_COUNT_SUBMIT_TICKS]));
    if (fr->kernel_valid) {
        emit_csv_count(e, fr->kernel_major_faults);
        emit_csv_count(e, fr->kernel_block_reads);
        emit_csv_count(e, fr->kernel_preempted);
        emit_csv_count(e, fr->kernel_waits);
    } else {
        emit_str(e, ",,,,");
    }
    emit_char(e, ',');
    if (late >= 0)
        emit_i64(e, late);
    emit_csv_count(e, fr->counts[FSCOPE_COUNT_PIPELINES_FEEDBACK]);
    emit_csv_count(e, fr->counts[FSCOPE_COUNT_PIPELINE_CACHE_HITS]);
    emit_csv_ms(e, fr->counts[FSCOPE_COUNT_PIPELINE_DRIVER_NS] < (uint64_t)INT64_MAX
                       ? (int64_t)fr->counts[FSCOPE_COUNT_PIPELINE_DRIVER_NS]
                       : INT64_MAX);
}

/* A thread's name as a field of its own: commas and quotes made spaces. */
static void emit_comm(struct emit *e, const char *comm)
{
    for (const char *c = comm; *c; c++)
        emit_char(e, *c == ',' || *c == '"' ? ' ' : *c);
}

/* ran_instead .. io_wait_ms: the wake-up chain. */
static void row_wakeups(struct emit *e, const struct row *r, struct sched_window *sched)
{
    /* The wake-up chain: empty where it was not recorded for the frame's thread; a
     * name, or empty with 0 ms, where nothing preempted or woke it. */
    struct wakeup_view wake;
    frame_wakeups(r->rec, sched, r->fr, &wake);
    if (wake.known) {
        emit_char(e, ',');
        if (wake.ran_tid)
            emit_comm(e, wake.ran_comm);
        emit_csv_ms(e, wake.ran_ns);
        emit_char(e, ',');
        if (wake.slept_ns)
            emit_comm(e, wake.waker_comm);
        emit_csv_ms(e, wake.slept_ns);
        emit_csv_ms(e, wake.io_wait_ns);
    } else {
        emit_str(e, ",,,,,");
    }
}

/* recordings .. descriptor_sets: the engine's view of the frame. */
static void row_engine(struct emit *e, const struct row *r)
{
    const struct recording *rec = r->rec;
    const struct fscope_frame *fr = r->fr;
    const uint64_t *n = fr->counts;
    unsigned threads;
    uint64_t busiest;
    engine_frame_recording(r->recordings, fr->start_ticks, fr->end_ticks, &threads, &busiest);
    emit_csv_count(e, n[FSCOPE_COUNT_RECORDINGS]);
    emit_csv_ms(e, ticks_ns(rec, n[FSCOPE_COUNT_RECORD_SECONDARY_TICKS]));
    emit_csv_count(e, threads);
    emit_csv_ms(e, ticks_ns(rec, busiest));
    emit_csv_count(e, n[FSCOPE_COUNT_RECORD_COMMANDS]);
    emit_csv_ms(e, ticks_ns(rec, n[FSCOPE_COUNT_POOL_TICKS]));
    emit_csv_count(e, n[FSCOPE_COUNT_VERTICES]);
    emit_csv_count(e, n[FSCOPE_COUNT_INDICES]);
    emit_csv_count(e, n[FSCOPE_COUNT_INSTANCES]);
    emit_csv_count(e, n[FSCOPE_COUNT_INDIRECT_DRAWS]);
    for (unsigned k = 0; k < BIND_KINDS; k++) {
        emit_csv_count(e, n[FSCOPE_COUNT_BINDS + k]);
        emit_csv_count(e, n[FSCOPE_COUNT_REDUNDANT + k]);
    }
    emit_csv_count(e, n[FSCOPE_COUNT_MEMORY_ALLOCS]);
    emit_csv_count(e, n[FSCOPE_COUNT_MEMORY_ALLOC_BYTES]);
    emit_csv_count(e, n[FSCOPE_COUNT_MEMORY_FREES]);
    emit_csv_count(e, n[FSCOPE_COUNT_DESCRIPTOR_SETS]);
}

int frames_write_csv(FILE *f, const struct run_stats *s)
{
    int error = 0;
    const struct recording *rec = s->rec;
    write_header(f, rec);
    unsigned logs = rec->log_count;
    uint64_t origin = frames_origin_ticks(rec);
    /* Indexed once for every surface: each frame reads only its own events. */
    struct sched_index sched;
    sched_index_build(rec, &sched);
    struct sched_window wakes;
    struct emit e;
    emit_init(&e, f);
    struct engine_window window;
    engine_window_init(&window, rec);
    for (unsigned l = 0; l < logs; l++) {
        const struct recording_log *log = &rec->logs[l];
        uint64_t count = log->frame_count;
        struct frame_cursor c;
        if (!frame_cursor_open(&c, rec, log)) {
            error = -ENOMEM;
            break;
        }
        sched_window_open(&wakes, &sched);
        for (uint64_t i = 0; i < count; i++) {
            if (!keep_frame(&s->keep, l, i))
                continue;
            struct row r = { .s = s, .rec = rec, .log = log, .cursor = &c, .fr = frame_at(&c, i),
                             .index = i, .origin = origin, .recordings = &window };
            const struct frame_extra *x = frame_extra_at(&c, i);
            frame_budget(rec, r.fr, x, s->evidence ? &s->evidence[l] : NULL, &r.b);
            r.outside = s->basis_frames < s->frames && r.fr->gpu_unsampled;
            row_budget(&e, &r);
            row_presentation(&e, &r);
            row_blocks(&e, &r);
            row_calls(&e, &r, x && x->late_judged ? x->late_refreshes : -1);
            row_wakeups(&e, &r, &wakes);
            row_engine(&e, &r);
            counters_emit_csv_row(&e, rec, r.fr);
            emit_char(&e, '\n');
        }
        sched_window_close(&wakes);
        frame_cursor_close(&c);
    }
    emit_flush(&e);
    engine_window_free(&window);
    sched_index_free(&sched);
    return error;
}
