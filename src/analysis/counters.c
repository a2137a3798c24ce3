#include "counters.h"

#include "emit.h"
#include "frames.h"

static const char *state_name(enum rec_counter_state state)
{
    switch (state) {
    case REC_COUNTERS_ON: return "on";
    case REC_COUNTERS_OFF: return "off";
    case REC_COUNTERS_UNAVAILABLE: return "unavailable";
    default: return "unknown";
    }
}

void counters_compute(const struct recording *rec, struct counter_stats *ret)
{
    const struct recording_counters *c = &rec->counters;
    *ret = (struct counter_stats){ .ipc = -1 };
    double sum[FRAME_COUNTERS] = { 0 };
    for (unsigned l = 0; l < rec->log_count; l++) {
        const struct recording_log *log = &rec->logs[l];
        struct frame_cursor fc;
        if (!frame_cursor_open(&fc, rec, log))
            continue;
        for (uint64_t i = 0; i < log->frame_count; i++) {
            const struct fscope_frame *f = frame_at(&fc, i);
            if (!(f->counters_valid & ((1u << c->count) - 1)))
                continue;
            ret->frames++;
            for (unsigned k = 0; k < c->count; k++) {
                if (f->counters_valid & (1u << k)) {
                    ret->counted[k]++;
                    sum[k] += (double)f->counter_values[k];
                }
            }
        }
        frame_cursor_close(&fc);
    }
    if (!ret->frames)
        return;
    double cycles = 0, instructions = 0;
    for (unsigned k = 0; k < c->count; k++) {
        if (!ret->counted[k])
            continue;
        ret->mean[k] = sum[k] / (double)ret->counted[k];
        if (c->kinds[k] == COUNTER_CYCLES)
            cycles = ret->mean[k];
        else if (c->kinds[k] == COUNTER_INSTRUCTIONS)
            instructions = ret->mean[k];
    }
    /* Both are counted in one group, so over the same frames. */
    if (cycles > 0 && instructions > 0)
        ret->ipc = instructions / cycles;
}

/* 12345678 -> "12.35 M": counts per frame span six orders of magnitude. */
static const char *count_text(double v, char *buf, size_t len)
{
    if (v >= 1e9)
        snprintf(buf, len, "%.2f G", v / 1e9);
    else if (v >= 1e6)
        snprintf(buf, len, "%.2f M", v / 1e6);
    else if (v >= 1e3)
        snprintf(buf, len, "%.2f k", v / 1e3);
    else
        snprintf(buf, len, "%.1f", v);
    return buf;
}

void counters_write_text(FILE *f, const struct recording *rec, const struct counter_stats *s,
                         const char *thread)
{
    const struct recording_counters *c = &rec->counters;
    if (c->state == REC_COUNTERS_OFF || (!c->count && !c->why[0]))
        return;
    if (!s->frames) {
        fprintf(f, "  counters    not counted: %s\n",
                c->why[0] ? c->why : "no frame was closed twice by one thread");
        return;
    }
    fprintf(f, "  counters    thread %s, per frame:", thread);
    for (unsigned k = 0, shown = 0; k < c->count; k++) {
        char value[32];
        if (s->counted[k])
            fprintf(f, "%s %s %s", shown++ ? "," : "", c->names[k],
                    count_text(s->mean[k], value, sizeof(value)));
    }
    if (s->ipc >= 0)
        fprintf(f, " (IPC %.2f)", s->ipc);
    fprintf(f, " (%llu frames)", (unsigned long long)s->frames);
    if (c->why[0])
        fprintf(f, "; not counted: %s", c->why);
    fputc('\n', f);
}

void counters_write_json(FILE *f, const struct recording *rec, const struct counter_stats *s)
{
    const struct recording_counters *c = &rec->counters;
    fputs("  \"counters\": {\"state\": ", f);
    json_write_string(f, state_name(c->state));
    fputs(", \"why\": ", f);
    json_write_string(f, c->why);
    fprintf(f, ", \"frames\": %llu, \"per_frame\": {", (unsigned long long)s->frames);
    for (unsigned k = 0, shown = 0; k < c->count; k++) {
        if (!s->counted[k])
            continue;
        fputs(shown++ ? ", " : "", f);
        json_write_string(f, c->names[k]);
        fprintf(f, ": %.3f", s->mean[k]);
    }
    fputs("}, \"ipc\": ", f);
    if (s->ipc >= 0)
        fprintf(f, "%.4f", s->ipc);
    else
        fputs("null", f);
    fputs("},\n", f);
}

void counters_write_csv_header(FILE *f, const struct recording *rec)
{
    for (unsigned k = 0; k < rec->counters.count; k++)
        fprintf(f, ",counter:%s", rec->counters.names[k]);
}

void counters_emit_csv_row(struct emit *e, const struct recording *rec,
                           const struct fscope_frame *fr)
{
    for (unsigned k = 0; k < rec->counters.count; k++) {
        emit_char(e, ',');
        if (fr->counters_valid & (1u << k))
            emit_u64(e, fr->counter_values[k]);
    }
}
