/* What report generation costs at N and 10N frames (issue 35: every output linear in frames
 * and events): a synthetic recording whose closing thread changes halfway
 * (tests/synth-recording.h), analysed and written in every format, then top's live view.
 * Prints each format's time and the whole's at N and 10N, and the ratio: 10 when linear.
 *
 * bench-report [N]: N frames first (20,000 unless given). The test that holds the count of
 * work done, not the time, is test-linear.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "analysis/work.h"
#include "check.h"
#include "synth-recording.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double run(uint64_t frames)
{
    struct recording *rec = synth_recording(frames);
    CHECK(rec);
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
    fflush(stdout);
    fclose(null);
    recording_free(rec);
    return total;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000;
    CHECK(n >= 100);
    double one = run(n), ten = run(10 * n);
    printf("10N against N: %.1fx the time (10x when linear)\n", ten / one);
    return 0;
}
