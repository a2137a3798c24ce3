/* The layer's configuration: FRAMESCOPE_* read once, at the first instance, from the
 * environment (secure_getenv: we live in someone else's process), and said once in the log. */
#include <stdio.h>
#include <stdlib.h>

#include "layer.h"
#include "util/config.h"
#include "util/log.h"

struct layer_config layer_config = { .gpu_timing = true, .gpu_zones = true, .presentation = true,
                                     .gpu_sample_rate = GPU_SAMPLE_DEFAULT,
                                     .gpu_sample_auto = true };

void layer_config_read(void)
{
    char shown[FSCOPE_ESCAPE_SIZE];
    const char *gpu = secure_getenv("FRAMESCOPE_GPU");
    if (gpu && *gpu && !fscope_config_parse_switch(gpu, &layer_config.gpu_timing))
        fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_GPU='%s' is not on or off; using on",
                   fscope_config_escape(gpu, shown, sizeof(shown)));
    const char *zones = secure_getenv("FRAMESCOPE_GPU_ZONES");
    if (zones && *zones && fscope_config_keyword(zones, "host"))
        layer_config.gpu_zones_host = true;
    else if (zones && *zones && !fscope_config_parse_switch(zones, &layer_config.gpu_zones))
        fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_GPU_ZONES='%s' is not on, off or host; using on",
                   fscope_config_escape(zones, shown, sizeof(shown)));
    const char *stats = secure_getenv("FRAMESCOPE_PIPELINE_STATS");
    if (stats && *stats && !fscope_config_parse_switch(stats, &layer_config.pipeline_stats))
        fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_PIPELINE_STATS='%s' is not on or off; using off",
                   fscope_config_escape(stats, shown, sizeof(shown)));
    const char *sample = secure_getenv("FRAMESCOPE_GPU_SAMPLE");
    long rate;
    if (!sample || !*sample || fscope_config_keyword(sample, "auto")) {
        ;
    } else if (fscope_config_keyword(sample, "all")) {
        layer_config.gpu_sample_rate = 0;
        layer_config.gpu_sample_auto = false;
    } else if (fscope_config_parse_long(sample, 1, GPU_SAMPLE_MAX, &rate)) {
        layer_config.gpu_sample_rate = (uint32_t)rate;
        layer_config.gpu_sample_auto = false;
    } else {
        fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_GPU_SAMPLE='%s' is not auto, all or a number of "
                   "timed submissions a second in 1..%d; using auto",
                   fscope_config_escape(sample, shown, sizeof(shown)), GPU_SAMPLE_MAX);
    }
    const char *present = secure_getenv("FRAMESCOPE_PRESENT");
    if (present && *present && !fscope_config_parse_switch(present, &layer_config.presentation))
        fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_PRESENT='%s' is not on or off; using on",
                   fscope_config_escape(present, shown, sizeof(shown)));
    const char *cap = secure_getenv("FRAMESCOPE_CAP");
    double hz;
    if (!cap || fscope_config_keyword(cap, "off")) {
        layer_config.cap_mode = CAP_OFF;
    } else if (fscope_config_keyword(cap, "auto")) {
        layer_config.cap_mode = CAP_AUTO;
    } else if (fscope_config_parse_double(cap, CAP_MIN_HZ, CAP_MAX_HZ, &hz)) {
        layer_config.cap_mode = CAP_FIXED;
        layer_config.cap_hz = hz;
    } else {
        fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_CAP='%s' is not a rate in %.0f..%.0f Hz, auto "
                   "or off; the cap is off", fscope_config_escape(cap, shown, sizeof(shown)),
                   CAP_MIN_HZ, CAP_MAX_HZ);
    }
    const char *fault = secure_getenv("FRAMESCOPE_TEST_FAULT");
    if (fault && *fault) {
        if (fscope_config_keyword(fault, "skip-query-reset"))
            layer_config.fault_skip_query_reset = true;
        else if (fscope_config_keyword(fault, "no-calibration"))
            layer_config.fault_no_calibration = true;
        else if (fscope_config_keyword(fault, "no-timeline"))
            layer_config.fault_no_timeline = true;
        else if (fscope_config_keyword(fault, "stale-read"))
            layer_config.fault_stale_read = true;
        else
            fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_TEST_FAULT='%s' is not skip-query-reset, "
                       "no-calibration, no-timeline or stale-read; ignored",
                       fscope_config_escape(fault, shown, sizeof(shown)));
    }
    /* Once, at the first instance: what this run measures, whichever way it was chosen. */
    char cap_text[64] = "off";
    if (layer_config.cap_mode == CAP_AUTO)
        snprintf(cap_text, sizeof(cap_text), "auto (the refresh of the output shown on)");
    else if (layer_config.cap_mode == CAP_FIXED)
        snprintf(cap_text, sizeof(cap_text), "%g Hz", layer_config.cap_hz);
    char sample_text[80] = "";
    if (layer_config.gpu_timing && layer_config.gpu_sample_rate)
        snprintf(sample_text, sizeof(sample_text), " (sampled: %s%u timed submissions a second)",
                 layer_config.gpu_sample_auto ? "auto, up to " : "", layer_config.gpu_sample_rate);
    fscope_log(FSCOPE_LOG_INFO, "layer enabled: GPU timing %s%s, presentation tracking %s, frame "
               "cap %s", layer_config.gpu_timing ? "on" : "off", sample_text,
               layer_config.presentation ? "on" : "off", cap_text);
}
