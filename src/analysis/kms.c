#include "kms.h"

#include <string.h>

#include "emit.h"

/* A measured refresh needs this much of the run between the first and last vblank read. */
#define MEASURE_MIN_NS 500000000

static const char *state_name(uint32_t state)
{
    switch (state) {
    case REC_KMS_READ: return "read";
    case REC_KMS_NO_DEVICE: return "no-device";
    case REC_KMS_UNAVAILABLE: return "unavailable";
    default: return "unknown";
    }
}

/* The vblank rate over the run in Hz; 0 when too short to say. */
/* Nanoseconds between the first and last vblank read (as recorded: any two numbers). */
static double vblank_span_ns(const struct rec_kms_output *o)
{
    return (double)o->last_ns - (double)o->first_ns;
}

static double measured_hz(const struct rec_kms_output *o)
{
    if (!o->vblanks || vblank_span_ns(o) < MEASURE_MIN_NS)
        return 0;
    return (double)(o->last_seq - o->first_seq) * 1e9 / vblank_span_ns(o);
}

/* The compositor's output of the same name (connector names are what wl_output.name gives on
 * most compositors), else the only one when both sides have exactly one. */
static const struct rec_output *claimed(const struct recording *rec,
                                        const struct rec_kms_output *o)
{
    for (unsigned i = 0; i < rec->output_count; i++)
        if (strcmp(rec->outputs[i].name, o->connector) == 0)
            return &rec->outputs[i];
    if (rec->output_count == 1 && rec->kernel.kms.count == 1)
        return &rec->outputs[0];
    return NULL;
}

static const char *vrr_text(uint8_t v)
{
    return v == KMS_UNKNOWN ? "unknown" : v ? "yes" : "no";
}

void kms_write_text(FILE *f, const struct recording *rec)
{
    const struct rec_kms *k = &rec->kernel.kms;
    if (!rec->kernel.present || k->state == REC_KMS_UNKNOWN)
        return;
    if (k->state != REC_KMS_READ) {
        fprintf(f, "  kms         not read: %s\n", k->why);
        return;
    }
    for (unsigned i = 0; i < k->count; i++) {
        const struct rec_kms_output *o = &k->outputs[i];
        double hz = measured_hz(o);
        fprintf(f, "  kms         %s %s %dx%d: mode %.3f Hz", o->card, o->connector, o->width,
                o->height, o->mode_refresh_mhz / 1e3);
        if (hz > 0)
            fprintf(f, ", vblanks %.3f Hz over %.1f s", hz, vblank_span_ns(o) / 1e9);
        else
            fputs(", vblanks not measured (counter not readable, or under 0.5 s)", f);
        fprintf(f, "; VRR capable %s, enabled %s", vrr_text(o->vrr_capable),
                vrr_text(o->vrr_enabled));
        const struct rec_output *c = claimed(rec, o);
        if (c && c->refresh_mhz)
            fprintf(f, "; the compositor's %s says %.3f Hz", c->name, c->refresh_mhz / 1e3);
        fputc('\n', f);
        if (c && c->refresh_mhz && hz > 0 &&
            (hz * 1e3 > c->refresh_mhz * 1.01 || hz * 1e3 < c->refresh_mhz * 0.99))
            fprintf(f, "  diagnosis   %s refreshes at %.3f Hz by the kernel's vblank count, the "
                    "compositor says %.3f Hz: pacing judged against the claim is off by %.1f%%%s\n",
                    o->connector, hz, c->refresh_mhz / 1e3,
                    100.0 * (hz * 1e3 - c->refresh_mhz) / c->refresh_mhz,
                    o->vrr_enabled == 1 ? " (VRR is on: the rate follows the frames)" : "");
    }
}

void kms_write_json(FILE *f, const struct recording *rec)
{
    const struct rec_kms *k = &rec->kernel.kms;
    fputs("  \"kms\": {\"state\": ", f);
    json_write_string(f, rec->kernel.present ? state_name(k->state) : "unknown");
    fputs(", \"why\": ", f);
    json_write_string(f, rec->kernel.present ? k->why : "");
    fputs(", \"outputs\": [", f);
    for (unsigned i = 0; rec->kernel.present && i < k->count; i++) {
        const struct rec_kms_output *o = &k->outputs[i];
        const struct rec_output *c = claimed(rec, o);
        static const char *const tri[] = { "false", "true", "null" };
        fputs(i ? ", {\"card\": " : "{\"card\": ", f);
        json_write_string(f, o->card);
        fputs(", \"connector\": ", f);
        json_write_string(f, o->connector);
        fprintf(f, ", \"width\": %d, \"height\": %d, \"mode_hz\": %.3f, \"measured_hz\": ",
                o->width, o->height, o->mode_refresh_mhz / 1e3);
        double hz = measured_hz(o);
        if (hz > 0)
            fprintf(f, "%.4f", hz);
        else
            fputs("null", f);
        fprintf(f, ", \"vrr_capable\": %s, \"vrr_enabled\": %s, \"compositor_hz\": ",
                tri[o->vrr_capable], tri[o->vrr_enabled]);
        if (c && c->refresh_mhz)
            fprintf(f, "%.3f}", c->refresh_mhz / 1e3);
        else
            fputs("null}", f);
    }
    fputs("]},\n", f);
}
