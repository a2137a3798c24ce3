/* The app's own recording read ahead of its exit: each frame log's chunks checked and packed
 * (frames.h) on the stream thread as it moves them to disk, so that the exit decodes and packs
 * only the last few. At 1,000,000 frames that was most of the exit's reading (tests/bench/
 * README.md, 2026-12-07). What the reader adopts is exactly what it would have read: the same
 * bytes the stream file got, the same checks, the same packing, the log's first chunks only. */
#include "recording.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frames.h"
#include "recording_check.h"
#include "util/private_fd.h"

struct early_log {
    uint32_t entry;
    uint32_t chunk_items;
    uint64_t chunks; /* taken, in order from the first */
    bool dropped;    /* something went wrong: the exit reads this log whole */
    struct recording_log log; /* its frame store only */
};

struct recording_early {
    pid_t pid; /* a forked child's copy is not its recording's */
    struct early_log *logs;
    size_t log_count, log_capacity;
    struct fscope_frame *frames; /* a chunk's, checked */
    size_t frames_capacity;
    uint64_t taken, adopted; /* frames */
};

struct recording_early *recording_early_create(void)
{
    struct recording_early *early = calloc(1, sizeof(*early));
    if (early)
        early->pid = getpid();
    return early;
}

/* Gives back what the log holds (a spill file that is no longer ours, the app having closed
 * it, is let go of, never closed: frame_store_free). */
static void log_drop(struct early_log *l)
{
    l->dropped = true;
    frame_store_free(&l->log);
}

static struct early_log *log_find(struct recording_early *early, uint32_t entry)
{
    for (size_t i = 0; i < early->log_count; i++)
        if (early->logs[i].entry == entry)
            return &early->logs[i];
    return NULL;
}

static struct early_log *log_add(struct recording_early *early, uint32_t entry)
{
    if (early->log_count == early->log_capacity) {
        size_t want = early->log_capacity ? 2 * early->log_capacity : 4;
        struct early_log *grown = realloc(early->logs, want * sizeof(*grown));
        if (!grown)
            return NULL;
        early->logs = grown;
        early->log_capacity = want;
    }
    struct early_log *l = &early->logs[early->log_count++];
    memset(l, 0, sizeof(*l));
    l->entry = entry;
    return l;
}

void recording_early_take(struct recording_early *early, uint32_t entry,
                          const struct chunked *frames, uint64_t chunk, const void *items)
{
    if (!early || early->pid != getpid())
        return;
    struct early_log *l = log_find(early, entry);
    if (!l && (chunk != 0 || !(l = log_add(early, entry))))
        return; /* a log first seen past its first chunk (or no memory): read whole at exit */
    if (l->dropped)
        return;
    if (frames->item_size != sizeof(struct fscope_frame) || !frames->chunk_items ||
        (l->chunks && frames->chunk_items != l->chunk_items) || chunk != l->chunks ||
        (l->log.spill_open && !fscope_fd_still_held(l->log.spill_fd))) {
        log_drop(l);
        return;
    }
    if (frames->chunk_items > early->frames_capacity) {
        free(early->frames);
        early->frames_capacity = 0;
        if (!(early->frames = malloc(frames->chunk_items * sizeof(*early->frames)))) {
            log_drop(l);
            return;
        }
        early->frames_capacity = frames->chunk_items;
    }
    char why[160];
    struct reader r = { .why = why, .why_len = sizeof(why) };
    l->chunk_items = frames->chunk_items;
    if (reader_frames_take(&r, &l->log, "", early->frames, items, chunk * l->chunk_items,
                           l->chunk_items, l->chunk_items) != 0) {
        log_drop(l);
        return;
    }
    l->chunks++;
    early->taken += l->chunk_items;
}

uint64_t recording_early_adopt(struct recording_early *early, uint32_t entry,
                               const struct chunked *frames, uint64_t usable,
                               struct recording_log *log)
{
    struct early_log *l = early && early->pid == getpid() ? log_find(early, entry) : NULL;
    if (!l || l->dropped)
        return 0;
    /* Taken ahead of what the stream file holds (a write that failed after the chunk was
     * staged), of other chunks, or into a spill file that is no longer ours: read whole. */
    if (l->chunks > usable || l->chunk_items != frames->chunk_items ||
        frames->item_size != sizeof(struct fscope_frame) ||
        (l->log.spill_open && !fscope_fd_still_held(l->log.spill_fd))) {
        log_drop(l);
        return 0;
    }
    uint64_t chunks = l->chunks;
    early->adopted += chunks * l->chunk_items;
    frame_store_move(log, &l->log);
    l->dropped = true; /* given away: nothing left to adopt twice */
    return chunks;
}

uint64_t recording_early_frames(const struct recording_early *early, uint64_t *ret_taken)
{
    *ret_taken = early ? early->taken : 0;
    return early ? early->adopted : 0;
}

void recording_early_destroy(struct recording_early *early)
{
    if (!early)
        return;
    for (size_t i = 0; i < early->log_count; i++)
        if (!early->logs[i].dropped)
            log_drop(&early->logs[i]);
    free(early->logs);
    free(early->frames);
    free(early);
}
