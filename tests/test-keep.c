/* Which frames a long run keeps rows for (analysis/keep.c): the last window's, and those around
 * its hitches, the latest hitches first up to KEEP_HITCH_FRAMES_MAX frames. The hitches are a
 * spool read forward (issue 35: never the whole list in memory), so the keep walks them
 * forward twice; here it is held to the rule read the plain way, latest hitch first, over the
 * list copied into memory: every frame's bit, the counts and the spans of time kept.
 *
 * The synthetic recording (tests/synth-recording.h) has a hitch every 50 frames of 16 ms, each
 * adding 50 frames to those kept: windows of 1 s and 30 s reach the cap of 20,000 frames long
 * before the first hitch; all (0) and 2 hours keep every frame. 250,000 frames give 5,000
 * hitches, more than a spool holds in memory: the walk reads them back from its file. Then
 * every third hitch only: 150 frames apart, so that each keeps a span of time of its own.
 *
 * test-keep [N]: N frames (250,000 unless given). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/frames.h"
#include "analysis/hitches.h"
#include "analysis/keep.h"
#include "analysis/run.h"
#include "check.h"
#include "synth-recording.h"

struct span {
    uint64_t from, to;
};

static int span_compare(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return x->from < y->from ? -1 : x->from > y->from;
}

/* The frames kept, as keep.h states the rule: the window's, then each hitch from the latest
 * (in the list's order, backwards) with the frames around it not kept yet, while they fit. */
static void expect_keep(const struct recording *rec, const struct hitch *h, uint64_t count,
                        uint32_t window_ms, uint8_t **bits, uint64_t *hitch_frames,
                        uint64_t *hitches_kept, struct span *spans, size_t *span_count)
{
    uint64_t newest = 0;
    for (unsigned l = 0; l < rec->log_count; l++)
        if (rec->logs[l].last_end_ticks > newest)
            newest = rec->logs[l].last_end_ticks;
    uint64_t span = (uint64_t)((double)window_ms * 1e6 / rec->ns_per_tick);
    uint64_t from = span < newest ? newest - span : 0;
    *span_count = 0;
    spans[(*span_count)++] = (struct span){ from, newest };
    for (unsigned l = 0; l < rec->log_count; l++) {
        struct frame_cursor c;
        CHECK(frame_cursor_open(&c, rec, &rec->logs[l]));
        for (uint64_t i = 0; i < rec->logs[l].frame_count; i++)
            if (frame_at(&c, i)->end_ticks >= from)
                bits[l][i / 8] |= (uint8_t)(1u << (i % 8));
        frame_cursor_close(&c);
    }
    *hitch_frames = *hitches_kept = 0;
    for (uint64_t n = count; n-- > 0;) {
        const struct hitch *x = &h[n];
        uint64_t frames = rec->logs[x->log].frame_count;
        uint64_t first = x->frame > KEEP_AROUND_HITCH ? x->frame - KEEP_AROUND_HITCH : 0;
        uint64_t last = x->frame + KEEP_AROUND_HITCH < frames ? x->frame + KEEP_AROUND_HITCH
                                                              : frames - 1;
        uint64_t added = 0;
        for (uint64_t i = first; i <= last; i++)
            added += !(bits[x->log][i / 8] >> (i % 8) & 1);
        if (*hitch_frames + added > KEEP_HITCH_FRAMES_MAX)
            break;
        for (uint64_t i = first; i <= last; i++)
            bits[x->log][i / 8] |= (uint8_t)(1u << (i % 8));
        *hitch_frames += added;
        (*hitches_kept)++;
        struct frame_cursor c;
        CHECK(frame_cursor_open(&c, rec, &rec->logs[x->log]));
        spans[(*span_count)++] = (struct span){ frame_at(&c, first)->start_ticks,
                                                frame_at(&c, last)->end_ticks };
        frame_cursor_close(&c);
    }
    qsort(spans, *span_count, sizeof(*spans), span_compare);
    size_t out = 0;
    for (size_t i = 1; i < *span_count; i++) {
        if (spans[i].from <= spans[out].to + 1) {
            if (spans[i].to > spans[out].to)
                spans[out].to = spans[i].to;
        } else {
            spans[++out] = spans[i];
        }
    }
    *span_count = out + 1;
}

static void check_window(struct recording *rec, const struct hitch_stats *hs,
                         const struct hitch *h, uint32_t window_ms)
{
    struct frame_keep k;
    keep_compute(rec, hs, window_ms, &k);
    uint64_t frames = rec->logs[0].frame_count;
    uint8_t *bits = calloc(frames / 8 + 1, 1);
    struct span *spans = calloc(hs->count + 1, sizeof(*spans));
    CHECK(bits && spans);
    uint64_t hitch_frames, hitches_kept;
    size_t span_count;
    expect_keep(rec, h, hs->count, window_ms, &bits, &hitch_frames, &hitches_kept, spans,
                &span_count);
    uint64_t kept = 0, differ = 0;
    for (uint64_t i = 0; i < frames; i++) {
        bool want = window_ms == 0 || !k.cut || (bits[i / 8] >> (i % 8) & 1);
        kept += keep_frame(&k, 0, i);
        differ += keep_frame(&k, 0, i) != want;
    }
    printf("window %u ms: %s, %llu of %llu frames kept (%llu in the window, %llu around %llu of "
           "%llu hitches; expected %llu around %llu), %zu spans (expected %zu), %llu differ\n",
           window_ms, k.cut ? "cut" : "every frame", (unsigned long long)kept,
           (unsigned long long)frames, (unsigned long long)k.window_frames,
           (unsigned long long)k.hitch_frames, (unsigned long long)k.hitches_kept,
           (unsigned long long)k.hitches, (unsigned long long)hitch_frames,
           (unsigned long long)hitches_kept, k.span_count, span_count,
           (unsigned long long)differ);
    CHECK(differ == 0);
    CHECK(k.hitches == hs->count);
    CHECK(k.kept_frames == kept);
    if (k.cut) {
        CHECK(k.hitch_frames == hitch_frames && k.hitches_kept == hitches_kept);
        CHECK(k.span_count == span_count);
        for (size_t i = 0; i < span_count; i++)
            CHECK(k.spans[i].from == spans[i].from && k.spans[i].to == spans[i].to);
    } else {
        CHECK(k.kept_frames == frames && k.hitches_kept == k.hitches);
    }
    keep_finish(&k);
    free(spans);
    free(bits);
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 250000;
    CHECK(n >= 1000);
    struct recording *rec = synth_recording(n);
    CHECK(rec && rec->log_count == 1);
    recording_compute_gpu_busy(rec);
    struct run_stats s;
    run_stats_compute(rec, &s);
    /* The list read forward into memory: here only, for the rule read backwards. */
    struct hitch *h = calloc(s.hitches.count + 1, sizeof(*h));
    CHECK(h);
    struct sorter_cursor c;
    uint64_t read = 0;
    CHECK(hitches_open(&c, &s.hitches));
    for (const struct hitch *x; (x = sorter_next(&c)); read++)
        h[read] = *x;
    sorter_cursor_close(&c);
    printf("%llu frames, %llu hitches (%s)\n", (unsigned long long)n,
           (unsigned long long)s.hitches.count,
           sorter_spilled(&s.hitches.hitches) ? "spooled to disk" : "in memory");
    CHECK(read == s.hitches.count && read >= n / 50 - 2);
    CHECK(n < 250000 || sorter_spilled(&s.hitches.hitches));
    for (uint64_t i = 1; i < read; i++)
        CHECK(h[i].log > h[i - 1].log || (h[i].log == h[i - 1].log && h[i].frame > h[i - 1].frame));
    static const uint32_t windows[] = { 1000, 30000, 600000, 7200000, 0 };
    for (size_t w = 0; w < sizeof(windows) / sizeof(*windows); w++)
        check_window(rec, &s.hitches, h, windows[w]);
    /* Every third hitch only: 150 frames apart, each its own span of time (121 frames). */
    struct hitch_stats third = { 0 };
    sorter_init(&third.hitches, sizeof(struct hitch), sorter_as_pushed, 0);
    for (uint64_t i = 0; i < read; i += 3) {
        CHECK(sorter_push(&third.hitches, &h[i]));
        h[third.count++] = h[i];
    }
    CHECK(sorter_finish(&third.hitches));
    printf("every third hitch, %llu:\n", (unsigned long long)third.count);
    for (size_t w = 0; w < sizeof(windows) / sizeof(*windows); w++)
        check_window(rec, &third, h, windows[w]);
    hitches_free(&third);
    free(h);
    run_stats_finish(&s);
    recording_free(rec);
    return 0;
}
