/* Every output costs O(frames + events) (issue 35): the analysis' count of the events it
 * visited (analysis/work.h), not its time, over a synthetic recording of N and then 10N frames
 * whose closing thread changes halfway (tests/synth-recording.h), with every format written
 * and top's live view computed; then again with the rows of detail kept for the last second
 * and around the hitches (FRAMESCOPE_KEEP_MINUTES). frames.csv once cost frames x wake-up
 * events there: 96,000 frames with 476,000 scheduler events took 122 s.
 *
 * test-linear [N]: N frames first (20,000 unless given). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/work.h"
#include "check.h"
#include "peak-memory.h"
#include "synth-recording.h"

/* Events visited per frame and event of the recording, at most. What the outputs read per
 * frame (its GPU span, zones, pipeline, recording and wake-ups through their indexes or
 * windows, the hitches' windows of neighbours) is a few visits each, and each pass that reads
 * a stream of events (the wake-up chain's: the evidence, hitches, frames.csv, top's view) one
 * more per event; a lookup that restarts at the first event for every frame makes this
 * thousands. */
#define VISITS_PER_ITEM 10
/* Work at 10N against work at N: 10 when linear (100 when quadratic); the margin is the
 * indexes' logarithms and the run's fixed costs. */
#define MAX_GROWTH 12.0

/* The last row of frames.csv for rec: the second thread's wake-up chain, found. */
static void check_last_row(struct recording *rec)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f);
    struct report *report = report_create(rec);
    CHECK(report);
    CHECK(report_write(f, report, REPORT_CSV) == 0);
    report_destroy(report);
    CHECK(fclose(f) == 0);
    CHECK(len > 1);
    text[len - 1] = '\0';
    const char *last = strrchr(text, '\n');
    CHECK(last);
    if (!strstr(last, ",hog,") || !strstr(last, ",waker,")) {
        fprintf(stderr, "the last frame's wake-up chain is missing:%s\n", last);
        exit(1);
    }
    free(text);
}

/* Every format of rec written with its rows of detail kept for the last keep_ms. */
static int kept_outputs(struct recording *rec, uint32_t keep_ms)
{
    FILE *null = fopen("/dev/null", "we");
    CHECK(null);
    struct report *report = report_create(rec);
    CHECK(report);
    report_set_keep_window(report, keep_ms);
    int e = 0;
    for (unsigned i = 0; e == 0 && i < REPORT_FORMAT_COUNT; i++)
        e = report_write(null, report, (enum report_format)i);
    report_destroy(report);
    fclose(null);
    return e;
}

/* What top's view of the last second of a run of frames adds to the process's peak resident
 * set, in KiB; -1 where the kernel cannot reset the peak (/proc/self/clear_refs). Each pass
 * of the window starts at its first frame, late in the run: it holds what reaches it, not
 * every event before (GPU busy held every span read up to it). */
static long live_peak_kib(uint64_t frames)
{
    struct recording *rec = synth_recording(frames);
    CHECK(rec);
    long before;
    bool measured = peak_reset(&before);
    struct live_stats live;
    live_stats_compute(rec, 1.0, &live);
    long added = peak_added_kib(before);
    CHECK(live.frames > 0);
    recording_free(rec);
    if (!measured || added < 0)
        return -1;
    printf("%" PRIu64 " frames, top's view of the last second: +%ld KiB at the peak\n", frames,
           added);
    return added;
}

/* keep_ms 0: synth_outputs, the default window. */
static uint64_t visited(uint64_t frames, uint32_t keep_ms, uint64_t *ret_items)
{
    struct recording *rec = synth_recording(frames);
    CHECK(rec);
    uint64_t items = frames + synth_events(rec);
    uint64_t before = analysis_events_visited;
    CHECK((keep_ms ? kept_outputs(rec, keep_ms) : synth_outputs(rec)) == 0);
    uint64_t work = analysis_events_visited - before;
    printf("%" PRIu64 " frames, %" PRIu64 " events (%" PRIu64 " wake-up chain)%s: %" PRIu64
           " events visited, %.2f per frame and event\n", frames, items - frames,
           rec->kernel.sched_count, keep_ms ? ", rows kept for the last second" : "", work,
           (double)work / (double)items);
    fflush(stdout);
    if (work > VISITS_PER_ITEM * items) {
        fprintf(stderr, "more than %d visits per frame and event: not linear\n",
                VISITS_PER_ITEM);
        exit(1);
    }
    check_last_row(rec);
    recording_free(rec);
    *ret_items = items;
    return work;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000;
    CHECK(n >= 1000);
    for (uint32_t keep_ms = 0; keep_ms <= 1000; keep_ms += 1000) {
        uint64_t items, items10;
        uint64_t work = visited(n, keep_ms, &items);
        uint64_t work10 = visited(10 * n, keep_ms, &items10);
        double growth = (double)work10 / (double)work;
        printf("10x the frames and events (%.2fx): %.2fx the work\n",
               (double)items10 / (double)items, growth);
        CHECK(growth <= MAX_GROWTH);
    }
    /* At 10N a view that held the spans before its window (one a frame, 32 bytes) would take
     * their bytes more than at N; it may grow by what else the run has more of (the hitches'
     * index of pipelines, 8 bytes a pipeline, one a frame here), not by them. */
    long peak = live_peak_kib(n), peak10 = live_peak_kib(10 * n);
    long spans_kib = (long)(9 * n * sizeof(struct gpu_span) / 1024);
    if (peak < 0 || peak10 < 0)
        printf("top's view: not measured (no /proc/self/clear_refs, or AddressSanitizer)\n");
    else if (peak10 - peak >= spans_kib) {
        fprintf(stderr, "top's view of the last second took %ld KiB more at 10x the frames, "
                "as much as the %ld KiB of spans before it: it holds what came before its "
                "window\n", peak10 - peak, spans_kib);
        return 1;
    }
    return 0;
}
