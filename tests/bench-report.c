/* What report generation costs at N and 10N frames (issue 35: every output linear in frames
 * and events): a synthetic recording whose closing thread changes halfway
 * (tests/synth-recording.h), analysed and written in every format, then top's live view.
 * Prints each format's time and the whole's at N and 10N, and the ratio: 10 when linear;
 * and the memory the analysis and the outputs added at their peak to what the recording
 * itself holds (VmHWM, reset through /proc/self/clear_refs once the recording is built).
 *
 * bench-report [N]: N frames first (20,000 unless given). The test that holds the count of
 * work done, not the time, is test-linear.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "analysis/work.h"
#include "check.h"
#include "peak-memory.h"
#include "synth-recording.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double run(uint64_t frames, long *ret_peak_kib)
{
    struct recording *rec = synth_recording(frames);
    CHECK(rec);
    long held_kib;
    bool measured = peak_reset(&held_kib);
    FILE *null = fopen("/dev/null", "we");
    CHECK(null);
    uint64_t work = analysis_events_visited;
    double begin = now_s();
    struct report *report = report_create(rec);
    CHECK(report);
    double at = now_s();
    printf("%" PRIu64 " frames, %" PRIu64 " events (%" PRIu64 " wake-up chain):\n  analysis %.3f s",
           frames, synth_events(rec), rec->kernel.sched_count, at - begin);
    for (unsigned i = 0; i < REPORT_FORMAT_COUNT; i++) {
        CHECK(report_write(null, report, (enum report_format)i) == 0);
        double t = now_s();
        printf(", %s %.3f s", report_format_name((enum report_format)i), t - at);
        at = t;
    }
    struct live_stats live;
    live_stats_compute(rec, 1.0, &live);
    report_destroy(report);
    double total = now_s() - begin;
    printf(", live %.3f s\n  all %.3f s, %" PRIu64 " events visited\n", now_s() - at, total,
           analysis_events_visited - work);
    *ret_peak_kib = measured ? peak_added_kib(held_kib) : -1;
    if (measured)
        printf("  memory: the recording %.1f MiB, the analysis and outputs +%.1f MiB at their "
               "peak\n", held_kib / 1024.0, *ret_peak_kib / 1024.0);
    else
        printf("  memory: not measured (no /proc/self/clear_refs)\n");
    fflush(stdout);
    fclose(null);
    recording_free(rec);
    return total;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000;
    CHECK(n >= 100);
    long peak, peak10;
    double one = run(n, &peak), ten = run(10 * n, &peak10);
    printf("10N against N: %.1fx the time (10x when linear)", ten / one);
    if (peak >= 0 && peak10 >= 0)
        printf(", %+.1f MiB at the peak", (peak10 - peak) / 1024.0);
    printf("\n");
    return 0;
}
