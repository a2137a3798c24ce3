#include "presentation.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "emit.h"
#include "stats.h"
#include "values.h"

#define MAX_OUTPUTS REC_MAX_OUTPUTS

struct output {
    char name[64];
    double refresh_hz;
    int32_t width, height, scale;
};

static unsigned outputs_known(const struct recording *rec, struct output *out)
{
    for (unsigned i = 0; i < rec->output_count; i++) {
        const struct rec_output *o = &rec->outputs[i];
        snprintf(out[i].name, sizeof(out[i].name), "%.63s", o->name[0] ? o->name : "?");
        out[i].refresh_hz = o->refresh_mhz / 1000.0;
        out[i].width = o->width;
        out[i].height = o->height;
        out[i].scale = o->scale;
    }
    return rec->output_count;
}

bool frame_recreation_discard(struct frame_cursor *c, uint64_t index)
{
    const struct fscope_frame *f = frame_at(c, index);
    if (f->present_state != FRAME_PRESENT_DISCARDED || index + 1 >= c->log->frame_count)
        return false;
    return frame_at(c, index + 1)->swapchain_serial != f->swapchain_serial;
}

const char *frame_present_state_name(struct frame_cursor *c, uint64_t index)
{
    switch (frame_at(c, index)->present_state) {
    case FRAME_PRESENT_PENDING: return "pending";
    case FRAME_PRESENT_PRESENTED: return "presented";
    case FRAME_PRESENT_DISCARDED:
        return frame_recreation_discard(c, index) ? "discarded-recreation" : "discarded";
    case FRAME_PRESENT_REQUEST_FAILED: return "request-failed";
    case FRAME_PRESENT_CALL_FAILED: return "present-failed";
    default: return "untracked";
    }
}

/* Mean, p50, p95, p99 of v (sum: theirs, in the frames' order). */
static void distribution(const struct values *v, double sum, double ret[4])
{
    memset(ret, 0, 4 * sizeof(double));
    uint64_t n = values_count(v);
    if (!n)
        return;
    ret[0] = sum / (double)n;
    uint64_t ranks[3] = { stats_rank(n, 0.50), stats_rank(n, 0.95), stats_rank(n, 0.99) };
    values_at(v, ranks, 3, ret + 1);
}

static void diagnose(struct presentation_stats *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void diagnose(struct presentation_stats *s, const char *fmt, ...)
{
    if (s->diagnosis_count >= MAX_DIAGNOSES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->diagnoses[s->diagnosis_count++], sizeof(s->diagnoses[0]), fmt, ap);
    va_end(ap);
}

/* The output whose refresh period is within 3% of period_ms, or -1. */
static int output_with_period(const struct output *outs, unsigned n, double period_ms)
{
    int best = -1;
    double best_err = 0.03;
    for (unsigned i = 0; i < n; i++) {
        if (outs[i].refresh_hz <= 0)
            continue;
        double err = fabs(1000.0 / outs[i].refresh_hz - period_ms) / period_ms;
        if (err < best_err) {
            best_err = err;
            best = (int)i;
        }
    }
    return best;
}

bool presentation_pacing_output(const struct recording *rec, double period_ms, char *ret_name, size_t name_len,
                                double *ret_hz)
{
    struct output outs[MAX_OUTPUTS];
    unsigned nout = outputs_known(rec, outs);
    int pacing = period_ms > 0 ? output_with_period(outs, nout, period_ms) : -1;
    if (pacing < 0)
        return false;
    snprintf(ret_name, name_len, "%s", outs[pacing].name);
    *ret_hz = outs[pacing].refresh_hz;
    return true;
}

unsigned presentation_primary_log(const struct recording *rec)
{
    unsigned primary = 0;
    bool tracked = false;
    for (unsigned l = 0; l < rec->log_count; l++) {
        const struct recording_log *log = &rec->logs[l];
        if ((log->tracked && !tracked) ||
            (log->tracked == tracked && log->frame_count > rec->logs[primary].frame_count)) {
            primary = l;
            tracked = log->tracked;
        }
    }
    return primary;
}

/* What the primary surface's analysis reads besides its facts, from the same pass. */
/* The primary surface's values, kept for its analysis (values.h). */
struct primary_arrays {
    struct values shown; /* intervals between presentations */
    double shown_sum;    /* theirs, in the frames' order */
    struct values lat, lat_ret;
    double lat_sum, lat_ret_sum;
    int output_votes[MAX_OUTPUTS + 1];
    bool ambiguous;
};

static void account_frame(struct presentation_accounting *a, struct frame_cursor *c,
                          uint64_t i, const struct fscope_frame *f)
{
    switch (f->present_state) {
    case FRAME_PRESENT_PENDING: a->requested++; a->pending++; break;
    case FRAME_PRESENT_PRESENTED: a->requested++; a->presented++; break;
    case FRAME_PRESENT_DISCARDED:
        a->requested++;
        a->discarded++;
        a->discarded_recreation += frame_recreation_discard(c, i);
        break;
    case FRAME_PRESENT_REQUEST_FAILED: a->failed++; break;
    case FRAME_PRESENT_CALL_FAILED: a->present_failed++; break;
    default: a->untracked++;
    }
}

/* One pass over a surface's frames: its facts (ret), and with p the primary surface's values
 * (p->shown and the latencies, made here; freed by the caller). False when memory ran out
 * (ret then holds what was counted before). */
static bool log_pass(const struct recording *rec, const struct recording_log *log,
                     struct presentation_log *ret, struct primary_arrays *p)
{
    memset(ret, 0, sizeof(*ret));
    uint64_t count = log->frame_count;
    struct values app, own_shown, claimed;
    struct values *shown = p ? &p->shown : &own_shown;
    values_init_double(&app);
    values_init_double(shown);
    values_init_double(&claimed);
    if (p) {
        values_init_double(&p->lat);
        values_init_double(&p->lat_ret);
    }
    struct frame_cursor c;
    bool ok = frame_cursor_open(&c, rec, log);
    uint64_t last_shown = 0;
    for (uint64_t i = 0; ok && i < count; i++) {
        const struct fscope_frame *f = frame_at(&c, i);
        values_add(&app, recording_ns(rec, f->end_ticks - f->start_ticks) / 1e6);
        ret->fifo += present_mode_fifo(f->present_mode);
        account_frame(&ret->account, &c, i, f);
        if (f->present_state != FRAME_PRESENT_PRESENTED)
            continue;
        if (f->refresh_ns)
            values_add(&claimed, f->refresh_ns / 1e6);
        ret->vsync += (f->present_flags & 0x1) != 0;
        if (p) {
            if (f->output_index >= 0 && f->output_index < MAX_OUTPUTS)
                p->output_votes[f->output_index]++;
            if (f->output_ambiguous)
                p->ambiguous = true;
            if (f->presented_ticks > f->end_ticks) {
                double lat = recording_ns(rec, f->presented_ticks - f->end_ticks) / 1e6;
                double lat_ret =
                    f->present_return_ticks && f->presented_ticks > f->present_return_ticks
                        ? recording_ns(rec, f->presented_ticks - f->present_return_ticks) / 1e6
                        : 0;
                values_add(&p->lat, lat);
                values_add(&p->lat_ret, lat_ret);
                p->lat_sum += lat;
                p->lat_ret_sum += lat_ret;
            }
        }
        /* Two frames shown at the same refresh are one presentation (the later replaces). */
        if (last_shown && f->presented_ticks > last_shown) {
            double interval = recording_ns(rec, f->presented_ticks - last_shown) / 1e6;
            values_add(shown, interval);
            if (p)
                p->shown_sum += interval;
        }
        if (f->presented_ticks > last_shown)
            last_shown = f->presented_ticks;
    }
    if (ok)
        frame_cursor_close(&c);
    ok = ok && values_finish(&app) && values_finish(shown) && values_finish(&claimed) &&
         (!p || (values_finish(&p->lat) && values_finish(&p->lat_ret)));
    if (ok) {
        ret->cadence.app_ms = values_median(&app);
        ret->near_cadence = values_count_within(&app, 0.9 * ret->cadence.app_ms,
                                                1.1 * ret->cadence.app_ms);
        ret->cadence.shown_intervals = values_count(shown);
        ret->cadence.shown_ms = values_median(shown);
        ret->claimed_ms = values_median(&claimed);
        ret->ok = true;
    }
    values_free(&app);
    if (!p)
        values_free(shown);
    values_free(&claimed);
    return ok;
}

static void analyse_primary(const struct recording *rec, struct presentation_stats *s,
                            const struct presentation_log *facts, struct primary_arrays *p)
{
    const struct values *shown = &p->shown;
    uint64_t nshown = facts->cadence.shown_intervals;
    uint64_t npresented = facts->account.presented, vsync = facts->vsync;
    int *output_votes = p->output_votes;
    s->shown_output_ambiguous = p->ambiguous;
    /* The cadences as every line that states them reads them (the surface's facts), not
     * the medians of the values here, which only judder and the refresh units use. */
    const struct presentation_cadence cadence = facts->cadence;
    s->app_interval_ms = cadence.app_ms;
    s->claimed_refresh_ms = facts->claimed_ms;
    s->vsync = npresented && vsync * 2 > npresented;
    s->latency_samples = values_count(&p->lat);
    distribution(&p->lat, p->lat_sum, s->latency_ms);
    distribution(&p->lat_ret, p->lat_ret_sum, s->latency_return_ms);
    double mean = nshown ? p->shown_sum / (double)nshown : 0;
    /* The refresh unit: the claimed refresh only when the compositor flags vsync; otherwise
     * what it does (Weston headless claims 60 Hz and repaints every ~25.7 ms). */
    s->presented_interval_ms = cadence.shown_ms;
    double measured_unit = values_percentile(shown, 0.10); /* the short, steady interval */
    s->unit_ms = s->vsync && s->claimed_refresh_ms > 0 ? s->claimed_refresh_ms : measured_unit;
    /* One pass over the intervals in order: their spread, and in refreshes. */
    double var = 0;
    uint64_t at_one = 0;
    struct values_cursor c;
    double interval;
    bool open = nshown && values_cursor_open(&c, shown);
    while (open && values_next(&c, &interval)) {
        var += (interval - mean) * (interval - mean);
        if (s->unit_ms > 0) {
            /* Refreshes in an interval, in any recording a count a long holds. */
            double ratio = interval / s->unit_ms;
            long units = ratio < 1.0 ? 1 : ratio < 1e15 ? lround(ratio) : (long)1e15;
            s->intervals_by_units[units >= 4 ? 3 : units - 1]++;
            s->missed_refreshes += (uint64_t)(units - 1);
            at_one += units == 1;
        }
    }
    if (open)
        values_cursor_close(&c);
    s->judder_ms = nshown ? sqrt(var / (double)nshown) : 0;
    if (s->unit_ms > 0)
        s->at_output_cadence = nshown && at_one * 10 >= nshown * 9;
    int best = -1;
    for (int i = 0; i < MAX_OUTPUTS; i++)
        if (output_votes[i] && (best < 0 || output_votes[i] > output_votes[best]))
            best = i;
    s->shown_output = best;
}

static void write_diagnoses(const struct recording *rec, struct presentation_stats *s)
{
    struct output outs[MAX_OUTPUTS];
    unsigned nout = outputs_known(rec, outs);
    const struct presentation_accounting *t = &s->total;
    uint64_t decided = t->presented + t->discarded;
    uint64_t pacing_losses = t->discarded - t->discarded_recreation;
    double discarded_pct = decided ? 100.0 * (double)pacing_losses / (double)decided : 0;

    if (pacing_losses) {
        if (s->presented_interval_ms > 0 && s->app_interval_ms < 0.9 * s->presented_interval_ms)
            diagnose(s, "%.1f%% of frames never shown: the app presents every %.2f ms and the "
                     "output shows a new frame every %.2f ms: it outruns the output",
                     discarded_pct, s->app_interval_ms, s->presented_interval_ms);
        else
            diagnose(s, "%.1f%% of frames never shown", discarded_pct);
    }
    if (t->discarded_recreation)
        diagnose(s, "%llu frame(s) discarded by swapchain recreation (expected: the old "
                 "swapchain's last frame), not counted as pacing losses",
                 (unsigned long long)t->discarded_recreation);

    /* What paced the app: an output whose period matches its cadence, if not the one it is
     * shown on, is the mixed-refresh trap (paced by a display it is not on). */
    int pacing = s->app_interval_ms > 0 ? output_with_period(outs, nout, s->app_interval_ms) : -1;
    int shown = s->shown_output >= 0 && (unsigned)s->shown_output < nout ? s->shown_output : -1;
    if (pacing >= 0 && shown >= 0 && pacing != shown &&
        fabs(outs[pacing].refresh_hz - outs[shown].refresh_hz) > 0.5) {
        diagnose(s, "paced at %.0f Hz (the refresh of output %s: the app presents every %.2f ms) "
                 "while shown on a %.0f Hz output (%s); %.1f%% of frames discarded",
                 outs[pacing].refresh_hz, outs[pacing].name, s->app_interval_ms,
                 outs[shown].refresh_hz, outs[shown].name, discarded_pct);
    } else if (s->presented_interval_ms > 0 && s->claimed_refresh_ms > 0 &&
               fabs(s->presented_interval_ms - s->claimed_refresh_ms) >
                   0.1 * s->claimed_refresh_ms) {
        /* The shown cadence is the compositor's (the app's own is in the diagnosis above when
         * it outruns the output): said as such, so the two never read as a contradiction. */
        bool faster = s->app_interval_ms < 0.9 * s->presented_interval_ms;
        diagnose(s, "the compositor shows a new frame every %.2f ms while the output claims "
                 "%.0f Hz (%.2f ms)%s; the app presents every %.2f ms%s",
                 s->presented_interval_ms, 1000.0 / s->claimed_refresh_ms,
                 s->claimed_refresh_ms, s->vsync ? "" : ", no vsync flag", s->app_interval_ms,
                 faster ? ", faster than it shows them" : ", at the cadence it is shown");
    }
}

void presentation_compute(const struct recording *rec, struct presentation_stats *s)
{
    memset(s, 0, sizeof(*s));
    s->shown_output = -1;
    unsigned logs = rec->log_count;
    /* The surface every cadence printed is of, the run's (presentation_primary_log). */
    const struct recording_log *primary = logs ? &rec->logs[presentation_primary_log(rec)] : NULL;
    if (primary && !primary->tracked)
        primary = NULL;
    struct frame_log_tracker_counts tracker_total = { 0 };
    bool any_counts = false, analysed = false;
    s->logs = calloc(logs ? logs : 1, sizeof(*s->logs));
    if (!s->logs)
        return;
    for (unsigned l = 0; l < logs; l++) {
        const struct recording_log *log = &rec->logs[l];
        if (log->tracked)
            s->tracked = true;
        struct primary_arrays p = { .shown_sum = 0 };
        bool ok = log_pass(rec, log, &s->logs[l], log == primary ? &p : NULL);
        if (ok && log == primary) {
            analyse_primary(rec, s, &s->logs[l], &p);
            analysed = true;
        }
        values_free(&p.shown);
        values_free(&p.lat);
        values_free(&p.lat_ret);
        const struct presentation_accounting *a = &s->logs[l].account;
        s->total.requested += a->requested;
        s->total.presented += a->presented;
        s->total.discarded += a->discarded;
        s->total.discarded_recreation += a->discarded_recreation;
        s->total.pending += a->pending;
        s->total.failed += a->failed;
        s->total.untracked += a->untracked;
        s->total.present_failed += a->present_failed;
        /* The tracker's tally is final only when the app reached its exit: a killed app's last
         * snapshot may lag its frames. */
        if (log->tracked && log->have_counts && rec->state == REC_STATE_ENDED) {
            const struct frame_log_tracker_counts c = log->counts;
            any_counts = true;
            tracker_total.requested += c.requested;
            tracker_total.presented += c.presented;
            tracker_total.discarded += c.discarded;
            tracker_total.pending += c.pending;
        }
    }
    const struct presentation_accounting *t = &s->total;
    if (t->requested != t->presented + t->discarded + t->pending) {
        s->mismatch = true;
        snprintf(s->mismatch_text, sizeof(s->mismatch_text),
                 "requested %llu != presented %llu + discarded %llu + pending %llu",
                 (unsigned long long)t->requested, (unsigned long long)t->presented,
                 (unsigned long long)t->discarded, (unsigned long long)t->pending);
    } else if (any_counts && (tracker_total.requested != t->requested ||
                              tracker_total.presented != t->presented ||
                              tracker_total.discarded != t->discarded)) {
        s->mismatch = true;
        snprintf(s->mismatch_text, sizeof(s->mismatch_text),
                 "frames say %llu requested/%llu presented/%llu discarded, the tracker says "
                 "%llu/%llu/%llu", (unsigned long long)t->requested,
                 (unsigned long long)t->presented, (unsigned long long)t->discarded,
                 (unsigned long long)tracker_total.requested,
                 (unsigned long long)tracker_total.presented,
                 (unsigned long long)tracker_total.discarded);
    }
    if (analysed)
        write_diagnoses(rec, s);
}

void presentation_finish(struct presentation_stats *s)
{
    free(s->logs);
    s->logs = NULL;
}

void presentation_write_text(const struct recording *rec, FILE *f,
                             const struct presentation_stats *s)
{
    unsigned logs = rec->log_count;
    for (unsigned l = 0; l < logs; l++) {
        const struct recording_log *log = &rec->logs[l];
        if (!log->tracked && log->untracked_why[0])
            fprintf(f, "  display     %s: presentation feedback unavailable: %s\n",
                    log->label, log->untracked_why);
        else if (log->untracked_why[0])
            fprintf(f, "  display     %s: presentation feedback stopped: %s\n", log->label,
                    log->untracked_why);
    }
    if (!s->tracked)
        return;
    /* Feedback that stopped (or a recording that ended) leaves pending frames that will never
     * be resolved: they are called what they are. */
    bool stopped = false;
    const char *why_unknown = "the compositor reported no presentation time";
    for (unsigned l = 0; l < logs; l++)
        if (rec->logs[l].untracked_why[0]) {
            stopped = true;
            why_unknown = rec->logs[l].untracked_why;
            break;
        }
    bool final = stopped || rec->state == REC_STATE_ENDED;
    const struct presentation_accounting *t = &s->total;
    fprintf(f, "  shown       %llu frames = presented %llu + discarded %llu (%llu by swapchain "
            "recreation) + %s %llu%s + untracked %llu%s%s\n",
            (unsigned long long)(t->requested + t->untracked), (unsigned long long)t->presented,
            (unsigned long long)t->discarded, (unsigned long long)t->discarded_recreation,
            final ? "never resolved" : "pending", (unsigned long long)t->pending,
            final && t->pending ? (stopped ? " (feedback stopped)" : " (the app ended first)")
                                : "",
            (unsigned long long)t->untracked,
            t->untracked ? " (no feedback asked for them)" : "",
            t->failed ? "; some feedback requests failed" : "");
    if (t->present_failed)
        fprintf(f, "  failed      %llu presents returned an error (out of date, surface lost): "
                "nothing was shown for them\n", (unsigned long long)t->present_failed);
    if (s->mismatch)
        fprintf(f, "  ACCOUNTING MISMATCH (a framescope bug, please report): %s\n",
                s->mismatch_text);
    struct output outs[MAX_OUTPUTS];
    unsigned nout = outputs_known(rec, outs);
    /* What was not reported is said unknown, with why, never printed as a measured zero. */
    char shown_every[48], claims[64];
    if (s->presented_interval_ms > 0)
        snprintf(shown_every, sizeof(shown_every), "%.3f ms", s->presented_interval_ms);
    else
        snprintf(shown_every, sizeof(shown_every), "unknown");
    if (s->claimed_refresh_ms > 0)
        snprintf(claims, sizeof(claims), "%.3f ms refresh%s", s->claimed_refresh_ms,
                 s->vsync ? " (vsync)" : "");
    else
        snprintf(claims, sizeof(claims), "no refresh");
    fprintf(f, "  cadence     app presents every %.3f ms; shown every %s; compositor claims %s",
            s->app_interval_ms, shown_every, claims);
    if (s->unit_ms > 0)
        fprintf(f, "; refresh unit %.3f ms (%s)\n", s->unit_ms,
                s->vsync ? "claimed, vsync-flagged" : "measured");
    else
        fprintf(f, "; refresh unit unknown (%s)\n", why_unknown);
    if (s->unit_ms > 0)
        fprintf(f, "  intervals   1 refresh %llu, 2: %llu, 3: %llu, 4+: %llu; missed refreshes "
                "%llu; judder %.3f ms\n", (unsigned long long)s->intervals_by_units[0],
                (unsigned long long)s->intervals_by_units[1],
                (unsigned long long)s->intervals_by_units[2],
                (unsigned long long)s->intervals_by_units[3],
                (unsigned long long)s->missed_refreshes, s->judder_ms);
    else
        fprintf(f, "  intervals   unknown: no refresh to count them in (%s)\n", why_unknown);
    if (s->latency_samples)
        fprintf(f, "  latency     present call to shown: mean %.3f  p50 %.3f  p95 %.3f  p99 %.3f "
                "ms; from its return: mean %.3f  p50 %.3f ms\n", s->latency_ms[0],
                s->latency_ms[1], s->latency_ms[2], s->latency_ms[3], s->latency_return_ms[0],
                s->latency_return_ms[1]);
    else
        fprintf(f, "  latency     unknown: no frame's presentation time was reported (%s)\n",
                why_unknown);
    if (s->shown_output >= 0 && (unsigned)s->shown_output < nout)
        fprintf(f, "  shown on    %s (%dx%d @ %.3f Hz, scale %d)%s\n", outs[s->shown_output].name,
                outs[s->shown_output].width, outs[s->shown_output].height,
                outs[s->shown_output].refresh_hz, outs[s->shown_output].scale,
                s->shown_output_ambiguous ? "; matched by refresh, several outputs share it" : "");
    fprintf(f, "  outputs    ");
    for (unsigned i = 0; i < nout; i++) {
        fprintf(f, " %s %dx%d", outs[i].name, outs[i].width, outs[i].height);
        if (outs[i].refresh_hz > 0)
            fprintf(f, "@%.2fHz", outs[i].refresh_hz);
        else
            fputs(" (refresh not reported)", f);
        fprintf(f, " scale %d;", outs[i].scale);
    }
    fprintf(f, "%s\n", nout ? "" : " unknown");
    for (unsigned i = 0; i < s->diagnosis_count; i++)
        fprintf(f, "  diagnosis   %s\n", s->diagnoses[i]);
}

void presentation_write_json(const struct recording *rec, FILE *f,
                             const struct presentation_stats *s)
{
    const struct presentation_accounting *t = &s->total;
    fprintf(f, "  \"presentation\": {\"tracked\": %s, \"requested\": %llu, \"presented\": %llu, "
            "\"discarded\": %llu, \"discarded_recreation\": %llu, \"pending\": %llu, "
            "\"request_failed\": %llu, \"present_failed\": %llu, \"untracked\": %llu, "
            "\"accounting_ok\": %s,\n",
            s->tracked ? "true" : "false", (unsigned long long)t->requested,
            (unsigned long long)t->presented, (unsigned long long)t->discarded,
            (unsigned long long)t->discarded_recreation, (unsigned long long)t->pending,
            (unsigned long long)t->failed, (unsigned long long)t->present_failed,
            (unsigned long long)t->untracked,
            s->mismatch ? "false" : "true");
    fprintf(f, "    \"app_interval_ms\": %.6f, \"presented_interval_ms\": %.6f, "
            "\"claimed_refresh_ms\": %.6f, \"vsync\": %s, \"refresh_unit_ms\": %.6f,\n",
            s->app_interval_ms, s->presented_interval_ms, s->claimed_refresh_ms,
            s->vsync ? "true" : "false", s->unit_ms);
    fprintf(f, "    \"intervals_by_refreshes\": {\"1\": %llu, \"2\": %llu, \"3\": %llu, \"4+\": %llu}, "
            "\"missed_refreshes\": %llu, \"judder_ms\": %.6f, \"at_output_cadence\": %s,\n",
            (unsigned long long)s->intervals_by_units[0],
            (unsigned long long)s->intervals_by_units[1],
            (unsigned long long)s->intervals_by_units[2],
            (unsigned long long)s->intervals_by_units[3],
            (unsigned long long)s->missed_refreshes, s->judder_ms,
            s->at_output_cadence ? "true" : "false");
    fprintf(f, "    \"latency_ms\": {\"mean\": %.6f, \"p50\": %.6f, \"p95\": %.6f, \"p99\": %.6f}, "
            "\"latency_from_return_ms\": {\"mean\": %.6f, \"p50\": %.6f, \"p95\": %.6f, "
            "\"p99\": %.6f},\n", s->latency_ms[0], s->latency_ms[1], s->latency_ms[2],
            s->latency_ms[3], s->latency_return_ms[0], s->latency_return_ms[1],
            s->latency_return_ms[2], s->latency_return_ms[3]);
    struct output outs[MAX_OUTPUTS];
    unsigned nout = s->tracked ? outputs_known(rec, outs) : 0;
    fputs("    \"outputs\": [", f);
    for (unsigned i = 0; i < nout; i++) {
        fputs(i ? ", {\"name\": " : "{\"name\": ", f);
        json_write_string(f, outs[i].name);
        fprintf(f, ", \"width\": %d, \"height\": %d, \"refresh_hz\": %.3f, \"scale\": %d}",
                outs[i].width, outs[i].height, outs[i].refresh_hz, outs[i].scale);
    }
    fputs("],\n    \"shown_on\": ", f);
    json_write_string(f, s->shown_output >= 0 && (unsigned)s->shown_output < nout
                             ? outs[s->shown_output].name : "");
    fputs(",\n    \"diagnosis\": [", f);
    for (unsigned i = 0; i < s->diagnosis_count; i++) {
        if (i)
            fputs(", ", f);
        json_write_string(f, s->diagnoses[i]);
    }
    fputs("]},\n", f);
}
