/* An ended run's recording read (its streamed chunks from the stream file, recording_stream.c)
 * and the machine's description written into it: the steps between a run's end and its
 * analysis, over the reader's checks. */
#include "recording.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recording_check.h"
#include "util/system.h"

void recording_system_from(struct rec_system *ret, const struct system_description *machine)
{
    memset(ret, 0, sizeof(*ret));
    snprintf(ret->os, sizeof(ret->os), "%s", machine->os);
    snprintf(ret->cpu, sizeof(ret->cpu), "%s", machine->cpu);
    snprintf(ret->ram_kib, sizeof(ret->ram_kib), "%s", machine->ram_kib);
    snprintf(ret->kernel, sizeof(ret->kernel), "%s", machine->kernel);
    snprintf(ret->scheduler, sizeof(ret->scheduler), "%s", machine->scheduler);
}

int recording_read_ended(void *bytes, size_t len, int stream_fd,
                         const struct system_description *machine,
                         struct recording_early *early, struct recording **ret, char *why,
                         size_t why_len)
{
    int e = 0;
    if (machine) {
        struct rec_system system;
        recording_system_from(&system, machine);
        e = recording_set_system(bytes, len, &system, why, why_len);
    }
    if (e == 0)
        e = recording_read_streamed(bytes, len, stream_fd, early, ret, why, why_len);
    return e;
}


int recording_set_system(void *bytes, size_t len, const struct rec_system *sys, char *why,
                         size_t why_len)
{
    struct reader r = { .bytes = bytes, .len = len, .why = why, .why_len = why_len };
    if (why_len)
        why[0] = '\0';
    const struct rec_header *h = bytes;
    int e = reader_check_header(&r, h);
    for (uint32_t i = 0; !e && i < reader_directory_entries(h); i++) {
        uint32_t type;
        struct rec_meta *m;
        if ((e = reader_directory_object(&r, h, i, &type, (void **)&m)) || type != REC_OBJ_META)
            continue;
        if (!atomic_load(&m->system_known)) {
            m->system = *sys;
            atomic_store(&m->system_known, 1);
        }
        break;
    }
    return e;
}

