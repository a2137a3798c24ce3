/* GPU timing's counts, for the summary: what was timed, what was not and why. */
#include "gpu.h"
#include "record/meta.h"
#include "util/log.h"

struct gpu_stats gpu_stats;

void gpu_report_notes(void)
{
    uint64_t measured = atomic_load(&gpu_stats.measured);
    uint64_t no_slot = atomic_load(&gpu_stats.unmeasured_no_slot);
    uint64_t unsupported = atomic_load(&gpu_stats.unmeasured_unsupported);
    uint64_t unreadable = atomic_load(&gpu_stats.unmeasured_unreadable);
    uint64_t in_flight = atomic_load(&gpu_stats.in_flight_at_teardown);
    if (!layer_config.gpu_timing) {
        fscope_record_note("GPU timing off (FRAMESCOPE_GPU=off): no GPU busy time was measured");
        return;
    }
    fscope_record_note("GPU timing: %llu submissions timed; untimed: %llu (no free query slot), "
                       "%llu (device-group or protected), %llu (unreadable), %llu (in flight at "
                       "teardown)", (unsigned long long)measured, (unsigned long long)no_slot,
                       (unsigned long long)unsupported, (unsigned long long)unreadable,
                       (unsigned long long)in_flight);
    uint64_t unsampled = atomic_load(&gpu_stats.unsampled);
    if (layer_config.gpu_sample_rate)
        fscope_record_note("GPU timing sampled (FRAMESCOPE_GPU_SAMPLE=%s%u timed submissions a "
                           "second): %llu windows of timed frames; %llu submissions left untimed "
                           "between them, whose frames are unmeasured, not idle",
                           layer_config.gpu_sample_auto ? "auto: from " : "",
                           layer_config.gpu_sample_rate,
                           (unsigned long long)atomic_load(&gpu_stats.sample_windows),
                           (unsigned long long)unsampled);
    uint64_t in_ns = atomic_load(&gpu_stats.sample_in_ns), out_ns = atomic_load(&gpu_stats.sample_out_ns);
    char probes[160] = "";
    if (atomic_load(&gpu_stats.sample_probes))
        snprintf(probes, sizeof(probes), "; every frame timed but %llu short runs of untimed "
                 "frames that keep measuring it", (unsigned long long)atomic_load(&gpu_stats.sample_probes));
    if (layer_config.gpu_sample_rate && layer_config.gpu_sample_auto && in_ns && out_ns)
        fscope_record_note("GPU timing's cost measured as it ran: %.3f ms a frame (present to "
                           "present, or frame mark to mark) in timed frames and the 3 after "
                           "them, %.3f ms in the others; %llu timed submissions a second "
                           "allowed at the end (timed frames' change of time, either way, at "
                           "most %.1f%% of the app's, one window a second at least)%s%s",
                           (double)in_ns / 1e6, (double)out_ns / 1e6,
                           (unsigned long long)atomic_load(&gpu_stats.sample_rate),
                           GPU_SAMPLE_COST_SHARE * 100, probes,
                           in_ns < out_ns ? "; timed frames ran faster: the driver works "
                                            "differently around our timestamps (lavapipe "
                                            "starts its rasterizer at each)"
                                          : "");
    if (atomic_load(&gpu_stats.zones_sampled_out))
        fscope_record_note("GPU zones left out of %llu command buffers recorded again between "
                           "windows of timed frames (their timestamps would cost the device "
                           "for nothing); %llu timed submissions carried one, their zones "
                           "unknown", (unsigned long long)atomic_load(&gpu_stats.zones_sampled_out),
                           (unsigned long long)atomic_load(&gpu_stats.zones_dark_timed));
    fscope_log(FSCOPE_LOG_DEBUG, "GPU timestamp readers: %llu read passes, %llu woken by a submit",
               (unsigned long long)atomic_load(&gpu_stats.reader_wakes),
               (unsigned long long)atomic_load(&gpu_stats.reader_woken));
    if (atomic_load(&gpu_stats.slots_grown))
        fscope_record_note("GPU timing added query slots %llu times while the app ran (more "
                           "submissions in flight than it had), %llu of them on a submitting "
                           "thread that found none free",
                           (unsigned long long)atomic_load(&gpu_stats.slots_grown),
                           (unsigned long long)atomic_load(&gpu_stats.slots_grown_on_app));
    if (atomic_load(&gpu_stats.calibrated_queues))
        fscope_record_note("GPU clock mapped with VK_EXT_calibrated_timestamps, re-calibrated "
                           "every second");
    if (atomic_load(&gpu_stats.estimated_queues))
        fscope_record_note("GPU clock not calibrated (no VK_EXT_calibrated_timestamps): span "
                           "durations are exact; placement is re-anchored every second from "
                           "when each span was seen complete");
    if (atomic_load(&gpu_stats.backwards))
        fscope_record_note("%llu GPU spans began older than the one before on their queue: "
                           "stale query results (a framescope bug, please report)",
                           (unsigned long long)atomic_load(&gpu_stats.backwards));
    if (atomic_load(&gpu_stats.clamped))
        fscope_record_note("%llu GPU spans overlapped the previous one on their queue and were "
                           "clamped", (unsigned long long)atomic_load(&gpu_stats.clamped));
    fscope_record_note("a submission's GPU span runs from its first command's start to its last "
                       "command's end, so it includes any semaphore wait inside it");
}

