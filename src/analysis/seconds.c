/* seconds.csv: one row per second of the run, for the whole of a run of hours whose rows of
 * detail are kept only for its last minutes and around its hitches (keep.h). Each second's
 * frames are judged by the same budget as frames.csv's, so its columns add up to the run's:
 * frames to summary.json's frames, hitches to its hitch count, shown and discarded to its
 * presentation totals. */
#include "summary.h"

#include <errno.h>
#include <stdlib.h>

#include "emit.h"
#include "frames.h"
#include "hitches.h"
#include "stats.h"
#include "work.h"

/* The sums of one second's frames. */
struct second {
    uint64_t index; /* seconds since the first frame's start */
    uint64_t frames, gpu_frames, shown, discarded, hitches;
    int64_t frame_max, cpu, gpu_busy, block[FSCOPE_BLOCK_COUNT];
    uint64_t verdict_frames[FSCOPE_VERDICT_COUNT];
    int64_t verdict_ns[FSCOPE_VERDICT_COUNT];
    int64_t *times; /* the frames' lengths, for the percentiles */
    size_t capacity;
};

static void write_header(FILE *f)
{
    fputs("start_s,frames,fps,frame_p50_ms,frame_p99_ms,frame_max_ms,cpu_ms,gpu_busy_ms", f);
    for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++)
        fprintf(f, ",%s_ms", block_name((enum fscope_block)k));
    fputs(",verdict", f);
    for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++)
        fprintf(f, ",frames_%s", verdict_name((enum fscope_verdict)v));
    fputs(",shown,discarded,hitches\n", f);
}

/* Writes the second's row; run_end_ns: when the run's last frame ended, from the origin. */
static void write_row(FILE *f, struct second *sec, int64_t run_end_ns)
{
    double from_s = (double)sec->index;
    double covered = (double)run_end_ns / 1e9 - from_s;
    if (covered > 1 || covered <= 0)
        covered = 1;
    uint64_t n = sec->frames;
    stats_sort_i64(sec->times, n);
    fprintf(f, "%llu,%llu,%.3f", (unsigned long long)sec->index, (unsigned long long)n,
            (double)n / covered);
    csv_write_ms(f, sec->times[stats_rank(n, 0.5)]);
    csv_write_ms(f, sec->times[stats_rank(n, 0.99)]);
    csv_write_ms(f, sec->frame_max);
    csv_write_ms(f, sec->cpu / (int64_t)n);
    if (sec->gpu_frames)
        csv_write_ms(f, sec->gpu_busy / (int64_t)sec->gpu_frames);
    else
        fputc(',', f); /* no frame of it GPU-timed: unknown, not idle */
    for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++)
        csv_write_ms(f, sec->block[k] / (int64_t)n);
    /* The verdict that held the most of its judged frames' time; none judged: empty. */
    unsigned best = 0;
    uint64_t judged = 0;
    for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++) {
        judged += sec->verdict_frames[v];
        if (sec->verdict_ns[v] > sec->verdict_ns[best])
            best = v;
    }
    fprintf(f, ",%s", judged ? verdict_name((enum fscope_verdict)best) : "");
    for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++)
        fprintf(f, ",%llu", (unsigned long long)sec->verdict_frames[v]);
    fprintf(f, ",%llu,%llu,%llu\n", (unsigned long long)sec->shown,
            (unsigned long long)sec->discarded, (unsigned long long)sec->hitches);
}

/* Adds a frame to its second; false when memory ran out. */
static bool second_add(struct second *sec, const struct frame_budget_ns *b,
                       const struct fscope_frame *fr, bool judged, bool hitch)
{
    if (sec->frames == sec->capacity) {
        size_t capacity = sec->capacity ? 2 * sec->capacity : 256;
        int64_t *times = realloc(sec->times, capacity * sizeof(*times));
        if (!times)
            return false;
        sec->times = times;
        sec->capacity = capacity;
    }
    sec->times[sec->frames++] = b->frame;
    if (b->frame > sec->frame_max)
        sec->frame_max = b->frame;
    sec->cpu = ns_sum(sec->cpu, b->cpu);
    for (unsigned k = 0; k < FSCOPE_BLOCK_COUNT; k++)
        sec->block[k] = ns_sum(sec->block[k], b->block[k]);
    if (judged && b->gpu_timed) {
        sec->gpu_frames++;
        sec->gpu_busy = ns_sum(sec->gpu_busy, b->gpu_busy);
    }
    if (judged) {
        enum fscope_verdict v = frame_verdict(b);
        sec->verdict_frames[v]++;
        sec->verdict_ns[v] = ns_sum(sec->verdict_ns[v], b->frame);
    }
    sec->shown += fr->present_state == FRAME_PRESENT_PRESENTED;
    sec->discarded += fr->present_state == FRAME_PRESENT_DISCARDED;
    sec->hitches += hitch;
    return true;
}

/* The log whose next frame starts first; logs when every log is done. */
static unsigned next_log(const struct recording *rec, struct frame_cursor *logs,
                         const uint64_t *next)
{
    unsigned best = rec->log_count;
    uint64_t best_start = 0;
    for (unsigned l = 0; l < rec->log_count; l++) {
        if (next[l] >= rec->logs[l].frame_count)
            continue;
        uint64_t start = frame_at(&logs[l], next[l])->start_ticks;
        if (best == rec->log_count || start < best_start) {
            best = l;
            best_start = start;
        }
    }
    return best;
}

int seconds_write_csv(FILE *f, const struct run_stats *s)
{
    const struct recording *rec = s->rec;
    const struct hitch_stats *hs = &s->hitches;
    write_header(f);
    unsigned logs = rec->log_count;
    if (!s->frames)
        return 0;
    uint64_t origin = frames_origin_ticks(rec), newest = 0;
    /* Per log: its next frame, and the next of its hitches (they come in log, then frame
     * order). Every log's frames are merged by their start, so that each second holds every
     * surface's frames that started in it. */
    uint64_t *next = calloc(logs, sizeof(*next));
    struct frame_cursor *cursors = calloc(logs, sizeof(*cursors));
    /* Each log's hitches through a cursor of its own, at its next hitch (NULL: none left). */
    struct sorter_cursor *hitch_cursors = calloc(logs, sizeof(*hitch_cursors));
    const struct hitch **hitch_next = calloc(logs, sizeof(*hitch_next));
    bool hitches = hs->count > 0;
    unsigned opened = 0;
    while (next && cursors && hitch_cursors && hitch_next && opened < logs &&
           frame_cursor_open(&cursors[opened], rec, &rec->logs[opened])) {
        if (hitches && !hitches_open(&hitch_cursors[opened], hs)) {
            frame_cursor_close(&cursors[opened]);
            break;
        }
        opened++;
    }
    if (opened < logs) {
        while (opened-- > 0) {
            frame_cursor_close(&cursors[opened]);
            if (hitches)
                sorter_cursor_close(&hitch_cursors[opened]);
        }
        free(hitch_next);
        free(hitch_cursors);
        free(cursors);
        free(next);
        return -ENOMEM;
    }
    for (unsigned l = 0; l < logs; l++) {
        const struct recording_log *log = &rec->logs[l];
        if (log->frame_count && log->last_end_ticks > newest)
            newest = log->last_end_ticks;
        /* Past the hitches of the logs before (a log's hitches come together). */
        const struct hitch *h = NULL;
        while (hitches && (h = sorter_next(&hitch_cursors[l])) && h->log < l)
            work_visited(1);
        hitch_next[l] = h;
    }
    int64_t run_end_ns = newest > origin ? ticks_ns(rec, newest - origin) : 0;
    struct second sec = { 0 };
    int e = 0;
    for (unsigned l; (l = next_log(rec, cursors, next)) < logs;) {
        uint64_t i = next[l]++;
        const struct fscope_frame *fr = frame_at(&cursors[l], i);
        int64_t start_ns = fr->start_ticks > origin ? ticks_ns(rec, fr->start_ticks - origin) : 0;
        uint64_t index = (uint64_t)(start_ns / 1000000000);
        /* A frame that started before the second being summed (never, as surfaces present in
         * order) is counted in it, so that every frame is counted once. */
        if (sec.frames && index > sec.index) {
            write_row(f, &sec, run_end_ns);
            int64_t *times = sec.times;
            size_t capacity = sec.capacity;
            sec = (struct second){ .times = times, .capacity = capacity };
        }
        if (!sec.frames)
            sec.index = index;
        const struct hitch **h = &hitch_next[l];
        while (*h && (*h)->log == l && (*h)->frame < i)
            *h = sorter_next(&hitch_cursors[l]);
        bool hitch = *h && (*h)->log == l && (*h)->frame == i;
        struct frame_budget_ns b;
        frame_budget(rec, fr, frame_extra_at(&cursors[l], i),
                     s->evidence ? &s->evidence[l] : NULL, &b);
        bool judged = !(s->basis_frames < s->frames && fr->gpu_unsampled);
        if (!second_add(&sec, &b, fr, judged, hitch)) {
            e = -ENOMEM;
            break;
        }
    }
    if (!e && sec.frames)
        write_row(f, &sec, run_end_ns);
    free(sec.times);
    for (unsigned l = 0; l < logs; l++) {
        frame_cursor_close(&cursors[l]);
        if (hitches) {
            e = e ? e : hitch_cursors[l].failed ? -EIO : 0;
            sorter_cursor_close(&hitch_cursors[l]);
        }
    }
    free(hitch_next);
    free(hitch_cursors);
    free(cursors);
    free(next);
    return e;
}
