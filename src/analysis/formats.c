#include "formats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "emit.h"
#include "frames.h"
#include "threads.h"

/* A value for a CSV that neither quotes nor escapes (both tools' logs): no commas, quotes or
 * line breaks. */
static void csv_plain(const char *text, char *ret, size_t len)
{
    snprintf(ret, len, "%s", text ? text : "");
    for (char *p = ret; *p; p++)
        if (*p == ',' || *p == '"' || *p == '\n' || *p == '\r')
            *p = ' ';
}

/* DXGI's sync interval: frames a present waits for the display (FIFO one), -1 unknown. */
static int sync_interval(int32_t present_mode)
{
    if (present_mode == PRESENT_FIFO || present_mode == PRESENT_FIFO_RELAXED)
        return 1;
    return present_mode == PRESENT_IMMEDIATE || present_mode == PRESENT_MAILBOX ? 0 : -1;
}

/* Modes that may show part of a frame: immediate always, FIFO relaxed when a frame is late. */
static int allows_tearing(int32_t present_mode)
{
    return present_mode == PRESENT_IMMEDIATE || present_mode == PRESENT_FIFO_RELAXED;
}

/* "0x%llX". */
static void emit_hex(struct emit *e, uint64_t value)
{
    char digits[16];
    unsigned len = 0;
    do {
        digits[len++] = "0123456789ABCDEF"[value & 15];
        value >>= 4;
    } while (value);
    emit_bytes(e, "0x", 2);
    while (len)
        emit_char(e, digits[--len]);
}

/* ",ms", or ",NA" where there is none. */
static void emit_ms_or_na(struct emit *e, bool known, int64_t ns)
{
    if (known)
        emit_csv_ms(e, ns);
    else
        emit_bytes(e, ",NA", 3);
}

int formats_write_presentmon(FILE *f, const void *arg)
{
    const struct formats_run *run = arg;
    const struct recording *rec = run->rec;
    char app[64];
    csv_plain(run->app, app, sizeof(app));
    struct emit e;
    emit_init(&e, f);
    emit_str(&e, "Application,ProcessID,SwapChainAddress,PresentRuntime,SyncInterval,"
                 "PresentFlags,AllowsTearing,PresentMode,CPUStartTime,FrameTime,CPUBusy,CPUWait,"
                 "GPULatency,GPUTime,GPUBusy,GPUWait,DisplayLatency,DisplayedTime,"
                 "AnimationError\n");
    uint64_t origin = frames_origin_ticks(rec);
    unsigned logs = rec->log_count;
    for (unsigned l = 0; l < logs; l++) {
        const struct recording_log *log = &rec->logs[l];
        uint64_t count = log->frame_count;
        /* The last frame shown before the current one. */
        bool previous_shown = false;
        uint64_t previous_start = 0, previous_presented = 0;
        uint64_t next_shown = 0; /* the first shown frame after the current one, or count */
        uint64_t next_presented_ticks = 0;
        struct frame_cursor c, ahead; /* the current frame, and the search for the next shown */
        if (!frame_cursor_open(&c, rec, log))
            return -ENOMEM;
        if (!frame_cursor_open(&ahead, rec, log)) {
            frame_cursor_close(&c);
            return -ENOMEM;
        }
        for (uint64_t i = 0; i < count; i++) {
            const struct fscope_frame *fr = frame_at(&c, i);
            /* A row left out still counts as the previous shown frame of the next. */
            if (!keep_frame(run->keep, l, i)) {
                if (frame_shown(fr, origin)) {
                    previous_shown = true;
                    previous_start = fr->start_ticks;
                    previous_presented = fr->presented_ticks;
                }
                continue;
            }
            struct frame_budget_ns b;
            frame_budget(rec, fr, frame_extra_at(&c, i), log_evidence(run, l), &b);
            /* There is no swapchain address to give: the surface's number and the swapchain's
             * serial (recreations) name it instead. */
            uint64_t swapchain = (uint64_t)(l + 1) << 32 | fr->swapchain_serial;
            /* PresentMon's own word for a mode it cannot classify: what the compositor did
             * with a Vulkan swapchain (flip, copy, overlay) is not known here. */
            emit_str(&e, app);
            emit_char(&e, ',');
            emit_i64(&e, run->pid);
            emit_char(&e, ',');
            emit_hex(&e, swapchain);
            emit_bytes(&e, ",Vulkan,", 8);
            emit_i64(&e, sync_interval(fr->present_mode));
            emit_bytes(&e, ",0,", 3);
            emit_i64(&e, allows_tearing(fr->present_mode));
            emit_bytes(&e, ",Other,", 7);
            /* Seconds since the first frame, as PresentMon's CPUStartTime by default. */
            int64_t start_ns = ticks_ns(rec, fr->start_ticks - origin);
            if (start_ns >= 0)
                e.len += emit_format_fixed(emit_room(&e, EMIT_NUMBER_SIZE), (uint64_t)start_ns,
                                           false, 9);
            else
                emit_printf(&e, "%lld.%09lld", (long long)(start_ns / 1000000000),
                            (long long)(start_ns % 1000000000));
            emit_csv_ms(&e, b.frame);
            emit_csv_ms(&e, b.cpu);
            emit_csv_ms(&e, b.frame - b.cpu);
            /* When the GPU started on the frame is not measured, only how long it was busy
             * within it; PresentMon's GPUTime is GPUBusy + GPUWait. */
            emit_bytes(&e, ",NA", 3);
            emit_ms_or_na(&e, b.gpu_timed, b.frame);
            emit_ms_or_na(&e, b.gpu_timed, b.gpu_busy);
            emit_ms_or_na(&e, b.gpu_timed, b.frame - b.gpu_busy);
            if (!frame_shown(fr, origin)) {
                emit_str(&e, ",NA,NA,NA\n");
                continue;
            }
            emit_csv_ms(&e, ticks_between_ns(rec, fr->start_ticks, fr->presented_ticks));
            if (next_shown <= i) {
                for (next_shown = i + 1; next_shown < count &&
                                         !frame_shown(frame_at(&ahead, next_shown), origin);
                     next_shown++)
                    ;
                if (next_shown < count)
                    next_presented_ticks = frame_at(&ahead, next_shown)->presented_ticks;
            }
            emit_ms_or_na(&e, next_shown < count,
                          next_shown < count
                              ? ticks_between_ns(rec, fr->presented_ticks, next_presented_ticks)
                              : 0);
            /* How far the time the frame was made for (its CPU start) moved, against how far
             * the display moved, since the previous frame shown. */
            emit_ms_or_na(&e, previous_shown,
                          previous_shown
                              ? ticks_between_ns(rec, previous_start, fr->start_ticks) -
                                    ticks_between_ns(rec, previous_presented,
                                                     fr->presented_ticks)
                              : 0);
            emit_char(&e, '\n');
            previous_shown = true;
            previous_start = fr->start_ticks;
            previous_presented = fr->presented_ticks;
        }
        frame_cursor_close(&ahead);
        frame_cursor_close(&c);
    }
    emit_flush(&e);
    return 0;
}

/* The process's CPU load at a moment, in percent of one CPU (top's %CPU): its time on a CPU
 * over the sampler's ticks either side of the moment (the first or last two ticks outside
 * them); 0 with fewer than two ticks. *at is a cursor, for moments in time order. */
static double process_load_pct(const struct recording *rec, const struct process_cpu_point *p,
                               size_t count, size_t *at, uint64_t ticks)
{
    if (count < 2)
        return 0.0;
    while (*at + 2 < count && p[*at + 1].ticks <= ticks)
        (*at)++;
    const struct process_cpu_point *from = &p[*at], *to = &p[*at + 1];
    int64_t span = ticks_between_ns(rec, from->ticks, to->ticks);
    if (span <= 0 || to->oncpu_ns < from->oncpu_ns)
        return 0.0;
    return 100.0 * (double)(to->oncpu_ns - from->oncpu_ns) / (double)span;
}

/* The process's resident set at moments in time order, from the gauges read once. */
struct rss_cursor {
    struct sorter_cursor c;
    bool open, have_next;
    struct gauge_sample now, next; /* now: 0 bytes without gauges */
};

static void rss_step(struct rss_cursor *r)
{
    const struct gauge_sample *s = r->open ? sorter_next(&r->c) : NULL;
    r->have_next = s != NULL;
    if (s)
        r->next = *s;
}

static void rss_open(struct rss_cursor *r, const struct recording_engine *g)
{
    memset(r, 0, sizeof(*r));
    r->open = g->gauge_count && sorter_cursor_open(&r->c, &g->gauges);
    rss_step(r);
    if (r->have_next) {
        r->now = r->next;
        rss_step(r);
    }
}

/* The last gauge at or before the moment (the first one before any), in bytes. */
static uint64_t process_rss_bytes(struct rss_cursor *r, uint64_t ticks)
{
    while (r->have_next && r->next.ticks <= ticks) {
        r->now = r->next;
        rss_step(r);
    }
    return r->now.rss_bytes;
}

static void rss_close(struct rss_cursor *r)
{
    if (r->open)
        sorter_cursor_close(&r->c);
    r->open = false;
}

int formats_write_mangohud(FILE *f, const void *arg)
{
    const struct formats_run *run = arg;
    const struct recording *rec = run->rec;
    /* The machine the run was on, as recorded (not the one reading the recording). */
    const struct rec_system *sys = &rec->system;
    char os[128], cpu[128], gpu[128], ram[32], kernel[128], driver[128], scheduler[64];
    csv_plain(sys->os, os, sizeof(os));
    csv_plain(sys->cpu, cpu, sizeof(cpu));
    csv_plain(sys->ram_kib, ram, sizeof(ram));
    csv_plain(sys->kernel, kernel, sizeof(kernel));
    csv_plain(sys->scheduler, scheduler, sizeof(scheduler));
    csv_plain(run->device, gpu, sizeof(gpu));
    csv_plain(run->driver, driver, sizeof(driver));
    fprintf(f, "os,cpu,gpu,ram,kernel,driver,cpuscheduler\n%s,%s,%s,%s,%s,%s,%s\n", os, cpu, gpu,
            ram, kernel, driver, scheduler);
    fputs("fps,frametime,cpu_load,gpu_load,cpu_temp,gpu_temp,gpu_core_clock,gpu_mem_clock,"
          "gpu_vram_used,gpu_power,ram_used,elapsed\n", f);
    if (run->primary_log >= rec->log_count)
        return 0;
    uint64_t origin = frames_origin_ticks(rec);
    const struct recording_log *log = &rec->logs[run->primary_log];
    uint64_t count = log->frame_count;
    struct process_cpu_point *cpu_points;
    size_t cpu_count = threads_process_cpu(rec, &cpu_points), cpu_at = 0;
    struct frame_cursor c;
    if (!frame_cursor_open(&c, rec, log)) {
        free(cpu_points);
        return -ENOMEM;
    }
    struct rss_cursor rss;
    rss_open(&rss, &rec->engine);
    struct emit e;
    emit_init(&e, f);
    for (uint64_t i = 0; i < count; i++) {
        if (!keep_frame(run->keep, run->primary_log, i))
            continue;
        const struct fscope_frame *fr = frame_at(&c, i);
        struct frame_budget_ns b;
        frame_budget(rec, fr, frame_extra_at(&c, i), log_evidence(run, run->primary_log),
                     &b);
        long long gpu_load = b.gpu_timed && b.frame > 0
                                 ? llround(100.0 * (double)b.gpu_busy / (double)b.frame) : 0;
        /* The app's own CPU load and resident set where the frame ended, from the kernel
         * sampler's ticks: MangoHud gives the machine's (its CPU load over all CPUs, its RAM
         * in use), which were not recorded. */
        double cpu_load = process_load_pct(rec, cpu_points, cpu_count, &cpu_at, fr->end_ticks);
        double ram_gib = (double)process_rss_bytes(&rss, fr->end_ticks) /
                         1073741824.0;
        /* MangoHud 0.6.8 (Debian 12's) writes frametime in microseconds, cpu_load in percent,
         * ram_used in GiB and elapsed in nanoseconds since logging began; the frame time here
         * keeps its nanoseconds. What is not measured (the GPU's temperature, clocks, memory
         * and power, the CPU's temperature) is 0, as MangoHud writes a sensor it cannot
         * read. */
        emit_general(&e, b.frame > 0 ? 1e9 / (double)b.frame : 0.0);
        emit_char(&e, ',');
        if (b.frame >= 0)
            e.len += emit_format_fixed(emit_room(&e, EMIT_NUMBER_SIZE), (uint64_t)b.frame, false,
                                       3);
        else
            emit_printf(&e, "%lld.%03lld", (long long)(b.frame / 1000),
                        (long long)(b.frame % 1000));
        emit_char(&e, ',');
        emit_decimal(&e, cpu_load, 2);
        emit_char(&e, ',');
        emit_i64(&e, gpu_load);
        emit_str(&e, ",0,0,0,0,0,0,");
        emit_decimal(&e, ram_gib, 6);
        emit_char(&e, ',');
        emit_i64(&e, ticks_ns(rec, fr->end_ticks - origin));
        emit_char(&e, '\n');
    }
    frame_cursor_close(&c);
    rss_close(&rss);
    emit_flush(&e);
    free(cpu_points);
    return 0;
}
