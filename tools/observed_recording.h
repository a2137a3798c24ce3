/* framescope run's recording (tools/observed_recording.c). */
#ifndef FSCOPE_TOOLS_OBSERVED_RECORDING_H
#define FSCOPE_TOOLS_OBSERVED_RECORDING_H

#include "analysis/report.h"

/* The recording run hands to the command (src/record/format.h): a memfd the command's
 * framescope writes into and we keep, so we can analyse it however the command ends. */
struct observed_recording {
    int fd;       /* ours, close-on-exec */
    int child_fd; /* the command's copy, named in FRAMESCOPE_RECORDING_FD */
    /* The unnamed file the command streams sealed chunks to (src/record/stream.c). */
    int stream_fd, child_stream_fd;
    struct rec_header *header;
    /* Its streamed chunks read ahead as the command runs (recording_follow.c); NULL: none. */
    struct recording_early *early;
    struct recording_follow *follow;
};

/* Creates the recording and names it to the command in FRAMESCOPE_RECORDING_FD. Returns 0 or
 * -errno; observed_recording_close() follows either way. */
int observed_recording_create(struct observed_recording *r);
/* Closes what observed_recording_create() opened, however far it got. */
void observed_recording_close(struct observed_recording *r);
/* Analyses the command's recording once it has ended (exit status, or the signal that killed
 * it): the summary and the capture, as the command would have written them at its own exit.
 * Returns 0, 1 when the capture or summary could not be written (said on stderr), or 3 when
 * there was nothing to analyse. */
int observed_recording_analyse(struct observed_recording *r, int exit_status, int signal,
                               enum report_summary where, const char *summary_path,
                               const char *output);

#endif
