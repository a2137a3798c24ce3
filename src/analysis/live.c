#include "live.h"

#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "stats.h"

/* The newest frame end over every log, in ticks. */
static uint64_t newest_end(const struct recording *rec)
{
    uint64_t newest = 0;
    for (unsigned l = 0; l < rec->log_count; l++) {
        const struct recording_log *log = &rec->logs[l];
        if (log->frame_count && log->frames[log->frame_count - 1].end_ticks > newest)
            newest = log->frames[log->frame_count - 1].end_ticks;
    }
    return newest;
}

static uint64_t window_ticks(const struct recording *rec, double seconds)
{
    if (rec->ns_per_tick <= 0)
        return 0;
    /* Any rate the recording claims: a window past uint64_t's ticks is all of them. */
    double ticks = seconds * 1e9 / rec->ns_per_tick;
    return ticks < 18446744073709549568.0 ? (uint64_t)ticks : UINT64_MAX;
}

void live_stats_compute(const struct recording *rec, double window_s, struct live_stats *ret)
{
    *ret = (struct live_stats){ .verdict = "none" };
    uint64_t newest = newest_end(rec);
    uint64_t from = newest - (window_ticks(rec, window_s) < newest ? window_ticks(rec, window_s)
                                                                    : newest);
    uint64_t total = 0;
    for (unsigned l = 0; l < rec->log_count; l++)
        total += rec->logs[l].frame_count;
    double *ms = total ? malloc(total * sizeof(*ms)) : NULL;
    uint64_t verdicts[FSCOPE_VERDICT_COUNT] = { 0 };
    uint64_t first = UINT64_MAX, n = 0;
    for (unsigned l = 0; ms && l < rec->log_count; l++) {
        const struct recording_log *log = &rec->logs[l];
        for (uint64_t i = 0; i < log->frame_count; i++) {
            const struct fscope_frame *f = &log->frames[i];
            if (f->end_ticks < from || f->end_ticks > newest)
                continue;
            struct frame_budget_ns b;
            frame_budget(rec, f, NULL, &b);
            ms[n++] = (double)b.frame / 1e6;
            verdicts[frame_verdict(&b)]++;
            if (f->start_ticks < first)
                first = f->start_ticks;
            if (f->present_state == FRAME_PRESENT_PRESENTED)
                ret->shown++;
            if (f->present_state == FRAME_PRESENT_PRESENTED ||
                f->present_state == FRAME_PRESENT_DISCARDED)
                ret->resolved++;
        }
    }
    if (n) {
        ret->frames = n;
        ret->window_s = recording_ns(rec, newest - first) / 1e9;
        ret->fps = ret->window_s > 0 ? (double)n / ret->window_s : 0;
        stats_sort(ms, n);
        ret->p50_ms = ms[stats_rank(n, 0.50)];
        ret->p99_ms = ms[stats_rank(n, 0.99)];
        unsigned most = 0;
        for (unsigned v = 1; v < FSCOPE_VERDICT_COUNT; v++)
            if (verdicts[v] > verdicts[most])
                most = v;
        ret->verdict = verdict_name((enum fscope_verdict)most);
        ret->verdict_share = (double)verdicts[most] / (double)n;
    }
    free(ms);
    for (unsigned c = 0; c < rec->cap_count; c++) {
        const struct recording_cap *cap = &rec->caps[c];
        if (cap->event_count && cap->events[cap->event_count - 1].target_ns)
            ret->cap_hz = 1e9 / cap->events[cap->event_count - 1].target_ns;
    }
}

void recording_keep_recent(struct recording *rec, double seconds)
{
    uint64_t newest = newest_end(rec), span = window_ticks(rec, seconds);
    uint64_t from = span < newest ? newest - span : 0;
    for (unsigned l = 0; l < rec->log_count; l++) {
        struct recording_log *log = &rec->logs[l];
        uint64_t skip = 0;
        while (skip < log->frame_count && log->frames[skip].end_ticks < from)
            skip++;
        if (!skip)
            continue;
        memmove(log->frames, log->frames + skip, (log->frame_count - skip) * sizeof(*log->frames));
        log->frame_count -= skip;
    }
}
