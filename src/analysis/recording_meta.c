/* What a recording says of its run (struct rec_meta), copied for the reader with every string
 * the app wrote made printable. */
#include <ctype.h>
#include <string.h>

#include "recording_check.h"

void recording_meta_read(struct recording *rec, const struct rec_meta *m)
{
    rec->enabled = atomic_load(&m->enabled) != 0;
    rec->gpu_timing = atomic_load(&m->gpu_timing) != 0;
    rec->device_count = atomic_load(&m->device_count);
    if (rec->device_count > REC_MAX_DEVICES)
        rec->device_count = REC_MAX_DEVICES;
    for (unsigned i = 0; i < rec->device_count; i++) {
        struct rec_device *d = &rec->devices[i];
        *d = m->devices[i];
        make_printable(d->name, sizeof(d->name));
        make_printable(d->driver, sizeof(d->driver));
    }
    /* A note's slots joined (REC_NOTE_CONTINUES), then made printable. */
    unsigned slots = atomic_load(&m->note_count);
    if (slots > REC_MAX_NOTES)
        slots = REC_MAX_NOTES;
    rec->note_count = 0;
    for (unsigned i = 0; i < slots;) {
        char raw[REC_NOTE_MAX];
        size_t used = 0;
        do {
            bool continued = used > 0;
            size_t len = strnlen(m->notes[i] + continued, REC_NOTE_SIZE - continued);
            if (len > sizeof(raw) - 1 - used)
                len = sizeof(raw) - 1 - used;
            memcpy(raw + used, m->notes[i] + continued, len);
            used += len;
        } while (++i < slots && m->notes[i][0] == REC_NOTE_CONTINUES);
        copy_string(rec->notes[rec->note_count], sizeof(rec->notes[rec->note_count]), raw, used);
        rec->note_count++;
    }
    rec->output_count = atomic_load(&m->output_count);
    if (rec->output_count > REC_MAX_OUTPUTS)
        rec->output_count = REC_MAX_OUTPUTS;
    for (unsigned i = 0; i < rec->output_count; i++) {
        rec->outputs[i] = m->outputs[i];
        make_printable(rec->outputs[i].name, sizeof(rec->outputs[i].name));
    }
    uint32_t kernel = atomic_load(&m->kernel_state);
    rec->kernel_state = kernel <= REC_KERNEL_UNAVAILABLE ? (enum rec_kernel_state)kernel
                                                         : REC_KERNEL_UNKNOWN;
    copy_string(rec->kernel_why, sizeof(rec->kernel_why), m->kernel_why, sizeof(m->kernel_why));
    const struct rec_counters *c = &m->counters;
    uint32_t counters = atomic_load(&c->state);
    rec->counters.state = counters <= REC_COUNTERS_UNAVAILABLE ? (enum rec_counter_state)counters
                                                               : REC_COUNTERS_UNKNOWN;
    rec->counters.count = c->count <= FRAME_COUNTERS ? c->count : FRAME_COUNTERS;
    for (unsigned k = 0; k < rec->counters.count; k++) {
        char *name = rec->counters.names[k];
        copy_string(name, sizeof(rec->counters.names[k]), c->names[k], sizeof(c->names[k]));
        /* libpfm4's names are words, "::", ':' and '=': anything else would break a CSV
         * header or a summary line. */
        for (char *p = name; *p; p++)
            if (!isalnum((unsigned char)*p) && !strchr(":=_.-", *p))
                *p = '?';
        rec->counters.kinds[k] = c->kinds[k] <= COUNTER_INSTRUCTIONS ? (enum counter_kind)c->kinds[k]
                                                                     : COUNTER_OTHER;
    }
    copy_string(rec->counters.why, sizeof(rec->counters.why), c->why, sizeof(c->why));
    if (atomic_load(&m->system_known)) {
        const struct rec_system *s = &m->system;
        copy_string(rec->system.os, sizeof(rec->system.os), s->os, sizeof(s->os));
        copy_string(rec->system.cpu, sizeof(rec->system.cpu), s->cpu, sizeof(s->cpu));
        copy_string(rec->system.ram_kib, sizeof(rec->system.ram_kib), s->ram_kib,
                    sizeof(s->ram_kib));
        copy_string(rec->system.kernel, sizeof(rec->system.kernel), s->kernel, sizeof(s->kernel));
        copy_string(rec->system.scheduler, sizeof(rec->system.scheduler), s->scheduler,
                    sizeof(s->scheduler));
    }
}
