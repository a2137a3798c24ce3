/* The summary as text: the full one (every line the analysis has) and the one screen printed
 * at exit. */
#include "summary.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "counters.h"
#include "engine.h"
#include "gpu_zones.h"
#include "hitches.h"
#include "kms.h"
#include "presentation.h"
#include "threads.h"

static void write_caps_text(FILE *f, const struct run_stats *s)
{
    const struct recording *rec = s->rec;
    unsigned n = rec->cap_count;
    for (unsigned i = 0; i < n; i++) {
        struct cap_stats c;
        if (!cap_compute(s, &rec->caps[i], &c))
            continue;
        fprintf(f, "  cap         %s: target %.3f Hz (%.3f ms); achieved mean interval %.3f ms; "
                "|interval - target| p50 %.1f  p99 %.1f  max %.1f us over %llu intervals; "
                "%llu resyncs\n", c.cap->label, c.target_hz, 1000.0 / c.target_hz,
                c.mean_interval_ms, c.err_us[0], c.err_us[1], c.err_us[2],
                (unsigned long long)c.intervals, (unsigned long long)c.resyncs);
        if (c.missed) {
            fprintf(f, "  cap missed  %llu frames missed their deadline because the work itself "
                    "was longer than the slice; bound by:", (unsigned long long)c.missed);
            for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++)
                if (c.missed_by_verdict[v])
                    fprintf(f, " %s %llu", verdict_name((enum fscope_verdict)v),
                            (unsigned long long)c.missed_by_verdict[v]);
            fputc('\n', f);
        }
    }
}

/* The kernel's split of the CPU part, per frame, over the frames that have it. */
static void write_kernel_text(FILE *f, const struct run_stats *s)
{
    const struct recording *rec = s->rec;
    if (rec->kernel_state == REC_KERNEL_OFF || rec->kernel_state == REC_KERNEL_UNAVAILABLE) {
        fprintf(f, "  kernel      not measured: %s\n", rec->kernel_why);
        return;
    }
    if (!s->kernel_frames)
        return;
    char thread[64];
    uint64_t n = s->kernel_frames;
    fprintf(f, "  kernel      thread %s: CPU part %.3f = busy %.3f + starved %.3f + blocked "
            "outside Vulkan %.3f ms per frame; whole frame: on CPU %.3f, runnable %.3f, asleep "
            "%.3f ms (%llu frames)\n",
            recording_thread_label(rec, s->kernel_tid, thread, sizeof(thread)),
            ms_per_frame(s->kernel_cpu, n), ms_per_frame(s->cpu_busy, n),
            ms_per_frame(s->cpu_starved, n), ms_per_frame(s->cpu_blocked, n),
            ms_per_frame(s->oncpu, n), ms_per_frame(s->runnable, n), ms_per_frame(s->asleep, n),
            (unsigned long long)n);
}

/* How the run ended and what the recording lost, when it says so. */
/* How the run ended when it did not end at its own exit, in plain words; false when it did. */
static bool end_text(const struct recording *rec, char *buf, size_t len)
{
    if (rec->state == REC_STATE_ENDED)
        return false;
    if (rec->end_signal) {
        snprintf(buf, len, "killed by signal %d (%s) before its exit: the recording holds what "
                 "it had written until then", rec->end_signal, strsignal(rec->end_signal));
    } else if (rec->end_status) {
        int status = rec->end_status - 1;
        char how[96] = "";
        if (status == 124)
            snprintf(how, sizeof(how), " (what timeout(1) returns when its time runs out)");
        else if (status > 128 && status < 128 + 65)
            snprintf(how, sizeof(how), " (128 + %d: a death by signal %s, as a shell reports "
                     "it)", status - 128, strsignal(status - 128));
        snprintf(buf, len, "%s ended without reaching its own exit; the command framescope ran "
                 "exited with status %d%s: the recording holds what it had written until then",
                 rec->app[0] ? rec->app : "the app", status, how);
    } else {
        snprintf(buf, len, "still running or cut short: the recording holds what it had written "
                 "until then");
    }
    return true;
}

/* How the run ended and what the recording lost, when it says so. */
static void write_recording_notes(FILE *f, const struct recording *rec)
{
    char ended[512];
    if (end_text(rec, ended, sizeof(ended)))
        fprintf(f, "  ended       %s\n", ended);
    if (rec->items_dropped || rec->alloc_failures)
        fprintf(f, "  recording   full: %llu frames, GPU spans or cap waits were not recorded\n",
                (unsigned long long)rec->items_dropped);
}

void summary_write_text_full(FILE *f, const struct run_stats *s)
{
    const struct recording *rec = s->rec;
    char clock[160];
    fprintf(f, "framescope: summary for %s (pid %d)\n", rec->app, rec->pid);
    for (unsigned i = 0; i < rec->device_count; i++) {
        const struct rec_device *d = &rec->devices[i];
        if (d->count == 1)
            fprintf(f, "  device      #%u %s, driver %s\n", d->first_id, d->name, d->driver);
        else
            fprintf(f, "  device      #%u..#%u %s, driver %s (%u devices created)\n",
                    d->first_id, d->last_id, d->name, d->driver, d->count);
    }
    fprintf(f, "  clock       %s\n", recording_clock_describe(rec, clock, sizeof(clock)));
    if (!s->frames) {
        fprintf(f, "  frames      0 (nothing was presented and no frame was marked)\n");
        gpu_zones_write_text(f, rec, 0);
    } else {
        fprintf(f, "  frames      %llu in %.3f s, %.1f fps\n", (unsigned long long)s->frames,
                s->duration_s, s->fps);
        fprintf(f, "  frame time  mean %.3f  p50 %.3f  p95 %.3f  p99 %.3f  max %.3f ms; "
                "1%% low %.1f fps, 0.1%% low %.1f fps\n", s->mean_ms, s->p50_ms, s->p95_ms,
                s->p99_ms, s->max_ms, s->low1_fps, s->low01_fps);
        const double *b = s->budget_ms;
        const struct frame_budget_ns *t = &s->total;
        const struct sampling_bias *sb = &s->sampling;
        if (sb->corrected)
            fprintf(f, "  sampled     GPU timed in %llu of %llu frames (FRAMESCOPE_GPU_SAMPLE), "
                    "which timing slowed: blocks and verdict below are the %llu others', mean "
                    "frame %.3f ms; gpu busy the timed frames' %.3f less %.3f ms\n",
                    (unsigned long long)sb->timed_frames, (unsigned long long)s->frames,
                    (unsigned long long)sb->untimed_frames,
                    ms_per_frame(t->frame, s->basis_frames), sb->gpu_busy_timed_ms,
                    sb->difference_ms);
        else if (sb->undecided)
            fprintf(f, "  sampled     GPU timed in %llu of %llu frames (FRAMESCOPE_GPU_SAMPLE), "
                    "too few to decide (their two leading verdicts' shares %.2f apart, standard "
                    "error %.2f): blocks and verdict below are the %llu others', mean frame "
                    "%.3f ms; gpu busy the timed frames'\n",
                    (unsigned long long)sb->timed_frames, (unsigned long long)s->frames,
                    sb->timed_margin, sb->timed_margin_se,
                    (unsigned long long)sb->untimed_frames,
                    ms_per_frame(t->frame, s->basis_frames));
        else if (s->basis_frames < s->frames)
            fprintf(f, "  sampled     GPU timed in %llu of %llu frames (FRAMESCOPE_GPU_SAMPLE): "
                    "gpu busy, blocks and verdict below are theirs, mean frame %.3f ms\n",
                    (unsigned long long)s->basis_frames, (unsigned long long)s->frames,
                    ms_per_frame(t->frame, s->basis_frames));
        if (sb->compared)
            fprintf(f, "  sampling    timed frames' median %.3f ms, the others' %.3f ms (%llu and "
                    "%llu frames): %+.3f ms, z %.1f by ranks, %s; verdict of the timed %s, of "
                    "the others %s\n", sb->timed_median_ms, sb->untimed_median_ms,
                    (unsigned long long)sb->timed_frames, (unsigned long long)sb->untimed_frames,
                    sb->difference_ms, sb->z,
                    sb->corrected ? "timing slowed its frames" : "no slowdown beyond the noise",
                    verdict_name(sb->timed_verdict), verdict_name(sb->untimed_verdict));
        fprintf(f, "  budget      cpu %.3f | blocked: acquire %.3f  present %.3f  present wait "
                "%.3f  fence %.3f  other wait %.3f  cap %.3f | gpu busy %.3f ms per frame\n",
                b[0], b[2 + FSCOPE_BLOCK_ACQUIRE], b[2 + FSCOPE_BLOCK_PRESENT],
                b[2 + FSCOPE_BLOCK_PRESENT_WAIT], b[2 + FSCOPE_BLOCK_FENCE],
                b[2 + FSCOPE_BLOCK_SEMAPHORE] + b[2 + FSCOPE_BLOCK_IDLE],
                b[2 + FSCOPE_BLOCK_CAP], b[1]);
        fprintf(f, "  blocks      acquire/present: GPU working %.3f, display wait %.3f, present "
                "overhead %.3f | fence/semaphore/idle: GPU working %.3f, GPU idle %.3f ms per "
                "frame\n",
                ms_per_frame(t->block_gpu[FSCOPE_BLOCK_ACQUIRE] + t->block_gpu[FSCOPE_BLOCK_PRESENT] +
                                 t->block_gpu[FSCOPE_BLOCK_PRESENT_WAIT], s->basis_frames),
                ms_per_frame(t->display_wait, s->basis_frames),
                ms_per_frame(t->present_overhead, s->basis_frames),
                ms_per_frame(t->gpu_in_waits, s->basis_frames),
                ms_per_frame(t->gpu_idle_in_waits, s->basis_frames));
        fprintf(f, "  other       waits on other threads: fence %.3f  semaphore %.3f  idle %.3f ms "
                "per frame (not in the budget: they overlap the presenting thread)\n",
                ms_per_frame(s->all.other_wait[0], s->frames),
                ms_per_frame(s->all.other_wait[1], s->frames),
                ms_per_frame(s->all.other_wait[2], s->frames));
        write_kernel_text(f, s);
        char thread[64];
        counters_write_text(f, rec, &s->counters,
                            recording_thread_label(rec, s->kernel_tid, thread, sizeof(thread)));
        gpu_zones_write_text(f, rec, s->zone_frames);
        threads_write_text(f, rec);
        drm_write_text(f, rec);
        kms_write_text(f, rec);
        fprintf(f, "  work        %.1f submits, %.1f command buffers, %.1f draws, %.1f dispatches, "
                "%.1f render passes per frame\n", s->count_mean[FSCOPE_COUNT_SUBMITS],
                s->count_mean[FSCOPE_COUNT_COMMAND_BUFFERS], s->count_mean[FSCOPE_COUNT_DRAWS],
                s->count_mean[FSCOPE_COUNT_DISPATCHES], s->count_mean[FSCOPE_COUNT_RENDER_PASSES]);
        engine_write_text(f, rec, &s->engine, s->count_mean);
        fprintf(f, "  verdict     %s-bound: %s\n", verdict_name(s->run_verdict), s->reason);
        fprintf(f, "  frames by verdict:");
        for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT; v++)
            fprintf(f, " %s %.1f%%", verdict_name((enum fscope_verdict)v),
                    100.0 * (double)s->verdict_frames[v] / (double)s->basis_frames);
        fputc('\n', f);
    }
    presentation_write_text(rec, f, &s->presentation);
    hitches_write_text(f, rec, &s->hitches);
    const struct frame_keep *k = &s->keep;
    if (k->cut)
        fprintf(f, "  kept        rows of %llu of %llu frames in frames.csv, presentmon.csv, "
                "mangohud.csv, report.html and threads.csv: the last %g min (%llu frames) and %u "
                "either side of %llu of %llu hitches (%llu more); seconds.csv has every second\n",
                (unsigned long long)k->kept_frames, (unsigned long long)k->frames,
                k->window_ms / 60000.0, (unsigned long long)k->window_frames, KEEP_AROUND_HITCH,
                (unsigned long long)k->hitches_kept, (unsigned long long)k->hitches,
                (unsigned long long)k->hitch_frames);
    write_caps_text(f, s);
    write_recording_notes(f, rec);
    for (unsigned i = 0; i < rec->note_count; i++)
        fprintf(f, "  note        %s\n", rec->notes[i]);
}

/* The one-screen summary: at most SUMMARY_LINES lines (with the capture's) of at most
 * SUMMARY_COLUMNS bytes, whatever the app. Each line is built whole, then written by
 * brief_line, which wraps it on spaces within its share of lines and ends what does not fit
 * with "..." (every line is in the full summary). */
#define BRIEF_INDENT "              " /* under the text of "  verdict     " */

static void brief_line(FILE *f, const char *first, const char *text, unsigned max_lines)
{
    size_t len = strlen(text);
    const char *prefix = first;
    for (unsigned line = 0; line < max_lines && len; line++) {
        size_t room = SUMMARY_COLUMNS - strlen(prefix);
        bool last = line + 1 == max_lines;
        size_t take = len;
        if (len > room) {
            /* The last line keeps room for " ...". */
            size_t limit = last ? room - 4 : room;
            take = limit;
            while (take > limit / 2 && text[take] != ' ')
                take--;
            if (text[take] != ' ')
                take = limit; /* one long word (a path): cut it */
        }
        fprintf(f, "%s%.*s%s\n", prefix, (int)take, text, len > take && last ? " ..." : "");
        text += take;
        len -= take;
        while (len && *text == ' ') {
            text++;
            len--;
        }
        prefix = BRIEF_INDENT;
    }
}

/* "asleep outside Vulkan" of "asleep outside Vulkan (a lock, I/O, ...)". */
static void cause_short(enum hitch_cause c, char *buf, size_t len)
{
    const char *words = hitch_cause_words(c);
    const char *paren = strstr(words, " (");
    int n = paren ? (int)(paren - words) : (int)strlen(words);
    snprintf(buf, len, "%.*s", n, words);
}

static void brief_hitches(FILE *f, const struct recording *rec, const struct hitch_stats *h)
{
    char line[512];
    if (!h->frames_judged)
        return;
    if (!h->count) {
        snprintf(line, sizeof(line), "none in %llu frames", (unsigned long long)h->frames_judged);
        brief_line(f, "  hitches     ", line, 1);
        return;
    }
    int at = snprintf(line, sizeof(line), "%llu in %llu frames, +%.1f ms in all",
                      (unsigned long long)h->count, (unsigned long long)h->frames_judged,
                      (double)h->excess_ns / 1e6);
    /* The causes by share, largest first. */
    bool used[HITCH_CAUSE_COUNT] = { false };
    for (unsigned shown = 0; shown < 3; shown++) {
        int best = -1;
        for (unsigned c = 0; c < HITCH_CAUSE_COUNT; c++)
            if (!used[c] && h->cause_ns[c] > 0 && (best < 0 || h->cause_ns[c] > h->cause_ns[best]))
                best = (int)c;
        if (best < 0 || at < 0 || (size_t)at >= sizeof(line))
            break;
        used[best] = true;
        at += snprintf(line + at, sizeof(line) - (size_t)at, "%s %s %.0f%%",
                       shown ? "," : ":", hitch_cause_name((enum hitch_cause)best),
                       100.0 * (double)h->cause_ns[best] / (double)h->excess_ns);
    }
    brief_line(f, "  hitches     ", line, 1);
    for (unsigned i = 0; i < h->worst_count && i < 3; i++) {
        const struct hitch *w = &h->worst[i];
        char cause[64];
        cause_short(w->cause, cause, sizeof(cause));
        snprintf(line, sizeof(line), "frame %llu at %.3f s: %.1f ms, +%.1f over %.1f; %s +%.1f ms",
                 (unsigned long long)w->frame, w->at_s, (double)w->frame_ns / 1e6,
                 (double)(w->frame_ns - w->median_ns) / 1e6, (double)w->median_ns / 1e6, cause,
                 (double)w->part_ns[w->cause] / 1e6);
        brief_line(f, "  hitch       ", line, 1);
    }
    (void)rec;
}

void summary_write_text(FILE *f, const struct run_stats *s)
{
    const struct recording *rec = s->rec;
    char line[1200];
    snprintf(line, sizeof(line), "summary for %s (pid %d)", rec->app, rec->pid);
    brief_line(f, "framescope: ", line, 1);
    if (rec->device_count) {
        const struct rec_device *d = &rec->devices[0];
        int at = snprintf(line, sizeof(line), "%s, driver %s", d->name, d->driver);
        if (rec->device_count > 1 && at > 0 && (size_t)at < sizeof(line))
            snprintf(line + at, sizeof(line) - (size_t)at, " (and %u more)",
                     rec->device_count - 1);
        brief_line(f, "  device      ", line, 1);
    }
    if (!s->frames) {
        brief_line(f, "  frames      ", "0 (nothing was presented and no frame was marked)", 1);
    } else {
        snprintf(line, sizeof(line), "%s-bound: %s", verdict_name(s->run_verdict),
                 s->brief_reason);
        brief_line(f, "  verdict     ", line, 3);
        int at = 0;
        for (unsigned v = 0; v < FSCOPE_VERDICT_COUNT && at >= 0 && (size_t)at < sizeof(line); v++)
            at += snprintf(line + at, sizeof(line) - (size_t)at, "%s%s %.1f%%", v ? " " : "",
                           verdict_name((enum fscope_verdict)v),
                           100.0 * (double)s->verdict_frames[v] / (double)s->basis_frames);
        brief_line(f, "  frames by verdict: ", line, 1);
        const struct sampling_bias *sb = &s->sampling;
        if (sb->corrected) {
            snprintf(line, sizeof(line), "GPU timed in %llu of %llu frames, %.3f ms (%.0f%%) "
                     "slower than the others: verdict from the others, GPU busy less %.3f ms",
                     (unsigned long long)sb->timed_frames, (unsigned long long)s->frames,
                     sb->difference_ms, 100.0 * sb->difference_ms / sb->untimed_median_ms,
                     sb->difference_ms);
            brief_line(f, "  sampled     ", line, 2);
        } else if (sb->undecided) {
            snprintf(line, sizeof(line), "GPU timed in %llu of %llu frames, too few to decide "
                     "between two verdicts: verdict from the others",
                     (unsigned long long)sb->timed_frames, (unsigned long long)s->frames);
            brief_line(f, "  sampled     ", line, 1);
        } else if (s->basis_frames < s->frames) {
            snprintf(line, sizeof(line), "GPU timed in %llu of %llu frames: the verdict and GPU "
                     "busy are theirs", (unsigned long long)s->basis_frames,
                     (unsigned long long)s->frames);
            brief_line(f, "  sampled     ", line, 1);
        }
        snprintf(line, sizeof(line), "%llu in %.3f s, %.1f fps; frame time p50 %.3f  p99 %.3f  "
                 "max %.3f ms", (unsigned long long)s->frames, s->duration_s, s->fps, s->p50_ms,
                 s->p99_ms, s->max_ms);
        brief_line(f, "  frames      ", line, 1);
        /* The budget's parts that hold time, in the full summary's order. */
        const double *b = s->budget_ms;
        at = snprintf(line, sizeof(line), "cpu %.3f", b[0]);
        static const enum fscope_block order[] = {
            FSCOPE_BLOCK_ACQUIRE, FSCOPE_BLOCK_PRESENT, FSCOPE_BLOCK_PRESENT_WAIT,
            FSCOPE_BLOCK_FENCE, FSCOPE_BLOCK_SEMAPHORE, FSCOPE_BLOCK_IDLE, FSCOPE_BLOCK_CAP,
        };
        for (unsigned i = 0; i < sizeof(order) / sizeof(order[0]); i++)
            if (b[2 + order[i]] >= 0.0005 && at >= 0 && (size_t)at < sizeof(line))
                at += snprintf(line + at, sizeof(line) - (size_t)at, "  %s %.3f",
                               block_name(order[i]), b[2 + order[i]]);
        if (at >= 0 && (size_t)at < sizeof(line))
            snprintf(line + at, sizeof(line) - (size_t)at, " | gpu busy %.3f ms per frame", b[1]);
        brief_line(f, "  budget      ", line, 1);
    }
    const struct presentation_accounting *t = &s->presentation.total;
    if (s->presentation.tracked) {
        snprintf(line, sizeof(line), "%llu of %llu frames presented, %llu discarded, %llu never "
                 "resolved, %llu untracked", (unsigned long long)t->presented,
                 (unsigned long long)(t->requested + t->untracked),
                 (unsigned long long)t->discarded, (unsigned long long)t->pending,
                 (unsigned long long)t->untracked);
        brief_line(f, "  shown       ", line, 1);
    } else if (rec->log_count && rec->logs[0].untracked_why[0]) {
        snprintf(line, sizeof(line), "not known: %s", rec->logs[0].untracked_why);
        brief_line(f, "  shown       ", line, 1);
    }
    brief_hitches(f, rec, &s->hitches);
    /* Its two lines, one when the recording-full line needs the other: 20 in all at most. */
    bool full_recording = rec->items_dropped || rec->alloc_failures;
    if (end_text(rec, line, sizeof(line)))
        brief_line(f, "  ended       ", line, full_recording ? 1 : 2);
    if (full_recording)
        brief_line(f, "  recording   ", "full: some frames, GPU spans or cap waits were not "
                   "recorded", 1);
    brief_line(f, "  more        ", "every line: framescope report --full DIR, or FRAMESCOPE_SUMMARY=full", 1);
}

void summary_write_capture(FILE *f, const char *shown_dir)
{
    brief_line(f, "  capture     ", shown_dir, 2);
}
