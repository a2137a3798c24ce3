/* The Perfetto trace (trace.perfetto-trace): the events of trace.json and more, as Perfetto's
 * stable TracePacket, TrackDescriptor and TrackEvent messages, which ui.perfetto.dev opens
 * directly.
 *
 * Tracks: the process; a thread track per thread (its zones and waits as slices, frame marks
 * and hitches as instants); under each thread a "command buffers" track (recordings and
 * command pool calls); a track per GPU queue ("gpu 1": its submissions as the GPU ran them,
 * each the end of a flow from the vkQueueSubmit that sent it); "gpu zones (device N)" (the
 * GPU zones, split over more tracks, "... lane K", where two overlap without nesting); a
 * "frames" track per surface (an instant "frame" at each frame's present); and a counter
 * track per counter of trace.json, plus "frame time" (a duration's in nanoseconds, named
 * without trace.json's " ms": "cpu", "gpu busy").
 *
 * Timestamps are CLOCK_MONOTONIC nanoseconds, as trace.json's microseconds. Event names are
 * interned on one packet sequence; packets go out in deflate-compressed batches
 * (TracePacket.compressed_packets) when zlib was there at build time. */
#ifndef FSCOPE_ANALYSIS_TRACE_PERFETTO_H
#define FSCOPE_ANALYSIS_TRACE_PERFETTO_H

#include <stdio.h>

#include "recording.h"
#include "trace.h"

/* Writes the whole Perfetto trace of rec to f (binary). run as trace_write_run takes it,
 * window_ns aside (this trace holds everything). Returns 0 or -errno. */
int trace_perfetto_write(FILE *f, const struct recording *rec, const struct trace_run *run);

#endif
