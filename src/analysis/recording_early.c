/* The app's own recording read ahead of its exit: each frame log's chunks checked and packed
 * (frames.h), the engine's command buffer recordings, pool calls, budgets and gauges checked
 * and pushed to their sorters, and every span log's GPU spans to the one sorter they share,
 * on the stream thread as it moves them to disk, so that the exit decodes and takes only the
 * last few chunks. What the reader adopts is exactly what it would have read: the same bytes
 * the stream file got, the same checks, the same packing and sorters, pushed in the same
 * order (the spans' in another, which their order never shows), each array's first chunks
 * only. */
#include "recording.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frames.h"
#include "recording_check.h"
#include "util/private_fd.h"

struct early_array {
    uint32_t entry;  /* the object's directory entry */
    size_t field;    /* the array's offset in its object */
    uint32_t item_size, chunk_items;
    uint64_t chunks; /* taken, in order from the first */
    bool dropped;    /* something went wrong, or it was adopted: nothing to give */
    bool frames;     /* a frame log's frames, else a sorter's items */
    bool shared;     /* into early->shared, not a sorter of its own (GPU spans) */
    const struct chunked *live; /* shared: the array in the arena, for its streamed chunks */
    struct recording_log log;  /* frames: the frame store only */
    struct sorter sorter;      /* else, as the reader makes it ready */
    reader_item_check check;
};

struct recording_early {
    pid_t pid; /* a forked child's copy is not its recording's */
    struct early_array *arrays;
    size_t count, capacity;
    struct fscope_frame *frames; /* a chunk's, checked */
    size_t frames_capacity;
    struct recording_early_counts counts;
    /* Every span log's spans, in one sorter as the reader's: given to it whole before any span
     * log is read (recording_early_adopt_shared), or to none. */
    struct sorter shared;
    bool shared_ready, shared_dropped, shared_adopted;
};

struct recording_early *recording_early_create(void)
{
    struct recording_early *early = calloc(1, sizeof(*early));
    if (early)
        early->pid = getpid();
    return early;
}

bool recording_early_wants(uint32_t type, size_t field)
{
    struct sorter sorter;
    reader_item_check check;
    bool shared;
    return (type == REC_OBJ_FRAME_LOG && field == offsetof(struct rec_frame_log, frames)) ||
           reader_sorted_array(type, field, &sorter, &check, &shared);
}

/* Whether a sorter's file is still ours: the app may close what it did not open. */
static bool sorter_file_ours(const struct sorter *s)
{
    return !s->fd_made || fscope_fd_still_held(s->fd);
}

/* Drops every span log's read-ahead: they share one sorter. */
static void shared_drop(struct recording_early *early)
{
    early->shared_dropped = true;
    sorter_free(&early->shared);
    for (size_t i = 0; i < early->count; i++)
        if (early->arrays[i].shared)
            early->arrays[i].dropped = true;
}

/* Gives back what the array holds (a spill file that is no longer ours, the app having
 * closed it, is let go of, never closed: frame_store_free, sorter_free). */
static void array_drop(struct recording_early *early, struct early_array *a)
{
    a->dropped = true;
    if (a->frames)
        frame_store_free(&a->log);
    else if (a->shared)
        shared_drop(early);
    else
        sorter_free(&a->sorter);
}

/* Whether the array's files are still ours. */
static bool files_ours(const struct recording_early *early, const struct early_array *a)
{
    if (a->frames)
        return !a->log.spill_open || fscope_fd_still_held(a->log.spill_fd);
    return sorter_file_ours(a->shared ? &early->shared : &a->sorter);
}

static struct early_array *array_find(struct recording_early *early, uint32_t entry,
                                      size_t field)
{
    for (size_t i = 0; early && early->pid == getpid() && i < early->count; i++)
        if (early->arrays[i].entry == entry && early->arrays[i].field == field)
            return &early->arrays[i];
    return NULL;
}

static struct early_array *array_add(struct recording_early *early, uint32_t entry,
                                     uint32_t type, size_t field)
{
    if (early->count == early->capacity) {
        size_t want = early->capacity ? 2 * early->capacity : 8;
        struct early_array *grown = realloc(early->arrays, want * sizeof(*grown));
        if (!grown)
            return NULL;
        early->arrays = grown;
        early->capacity = want;
    }
    struct early_array *a = &early->arrays[early->count];
    memset(a, 0, sizeof(*a));
    a->entry = entry;
    a->field = field;
    a->frames = type == REC_OBJ_FRAME_LOG;
    if (a->frames) {
        a->item_size = sizeof(struct fscope_frame);
    } else if (reader_sorted_array(type, field, &a->sorter, &a->check, &a->shared)) {
        a->item_size = (uint32_t)a->sorter.size;
        if (a->shared && early->shared_dropped)
            return NULL;
        if (a->shared && !early->shared_ready) {
            early->shared = a->sorter;
            early->shared_ready = true;
        }
    } else {
        return NULL;
    }
    early->count++;
    return a;
}

/* A frame chunk into the store, as the reader's frame sink takes it. */
static int take_frames(struct recording_early *early, struct early_array *a, uint64_t chunk,
                       const void *items)
{
    if (a->chunk_items > early->frames_capacity) {
        free(early->frames);
        early->frames_capacity = 0;
        if (!(early->frames = malloc(a->chunk_items * sizeof(*early->frames))))
            return -ENOMEM;
        early->frames_capacity = a->chunk_items;
    }
    char why[160];
    struct reader r = { .why = why, .why_len = sizeof(why) };
    return reader_frames_take(&r, &a->log, "", early->frames, items, chunk * a->chunk_items,
                              a->chunk_items, a->chunk_items);
}

/* A chunk's items into the sorter, as the reader's sorter sink takes them. */
static int take_sorted(struct early_array *a, struct sorter *sorter, const unsigned char *items)
{
    char why[160];
    struct reader r = { .why = why, .why_len = sizeof(why) };
    for (uint32_t i = 0; i < a->chunk_items; i++) {
        const unsigned char *item = items + (size_t)i * a->item_size;
        int e = a->check ? a->check(&r, item) : 0;
        if (e)
            return e;
        if (!sorter_push(sorter, item))
            return -ENOMEM;
    }
    return 0;
}

void recording_early_take(struct recording_early *early, uint32_t entry, uint32_t type,
                          size_t field, const struct chunked *shape,
                          const struct chunked *live, uint64_t chunk, const void *items)
{
    if (!early || early->pid != getpid())
        return;
    struct early_array *a = array_find(early, entry, field);
    if (!a && (chunk != 0 || !(a = array_add(early, entry, type, field))))
        return; /* first seen past its first chunk, or no memory: read whole at exit */
    if (a->dropped)
        return;
    if (shape->item_size != a->item_size || !shape->chunk_items ||
        (a->chunks && shape->chunk_items != a->chunk_items) || chunk != a->chunks ||
        !files_ours(early, a)) {
        array_drop(early, a);
        return;
    }
    a->chunk_items = shape->chunk_items;
    a->live = live;
    int e = a->frames ? take_frames(early, a, chunk, items)
                      : take_sorted(a, a->shared ? &early->shared : &a->sorter, items);
    if (e) {
        array_drop(early, a);
        return;
    }
    a->chunks++;
    *(a->frames ? &early->counts.frames_taken : &early->counts.items_taken) += a->chunk_items;
    if (a->shared)
        early->counts.spans_taken += a->chunk_items;
}

/* The array read ahead at entry and field, when its chunks are the first usable ones of the
 * reader's array; NULL (and dropped) when not. */
static struct early_array *adoptable(struct recording_early *early, uint32_t entry,
                                     size_t field, const struct chunked *array, uint64_t usable)
{
    struct early_array *a = array_find(early, entry, field);
    if (!a || a->dropped)
        return NULL;
    /* Taken ahead of what the stream file holds (a write that failed after the chunk was
     * staged), of another size, or into a file that is no longer ours: read whole. */
    if (a->chunks > usable || a->chunk_items != array->chunk_items ||
        a->item_size != array->item_size || !files_ours(early, a)) {
        array_drop(early, a);
        return NULL;
    }
    return a;
}

bool recording_early_adopt_shared(struct recording_early *early, struct sorter *sorter)
{
    if (!early || early->pid != getpid() || !early->shared_ready || early->shared_dropped ||
        early->shared_adopted)
        return false;
    /* All of them or none: the reader has read no span log yet, so each must hold only chunks
     * its stream file holds (the stream thread is gone: the arena's counts are final). */
    bool whole = sorter_file_ours(&early->shared) && sorter->size == early->shared.size &&
                 sorter->compare == early->shared.compare &&
                 sorter->run_items == early->shared.run_items && !sorter->count &&
                 !sorter->finished;
    for (size_t i = 0; whole && i < early->count; i++) {
        const struct early_array *a = &early->arrays[i];
        if (a->shared && !a->dropped)
            whole = a->chunks <= atomic_load(&a->live->streamed_chunks) &&
                    a->chunk_items == a->live->chunk_items;
    }
    if (!whole) {
        shared_drop(early);
        return false;
    }
    sorter_free(sorter);
    *sorter = early->shared;
    memset(&early->shared, 0, sizeof(early->shared));
    early->shared_adopted = true;
    return true;
}

uint64_t recording_early_adopt_frames(struct recording_early *early, uint32_t entry,
                                      const struct chunked *frames, uint64_t usable,
                                      struct recording_log *log)
{
    struct early_array *a =
        adoptable(early, entry, offsetof(struct rec_frame_log, frames), frames, usable);
    if (!a || !a->frames)
        return 0;
    frame_store_move(log, &a->log);
    a->dropped = true; /* given away */
    early->counts.frames_adopted += a->chunks * a->chunk_items;
    return a->chunks;
}

uint64_t recording_early_adopt_sorted(struct recording_early *early, uint32_t entry,
                                      size_t field, const struct chunked *array,
                                      uint64_t usable, struct sorter *sorter)
{
    struct early_array *a = array_find(early, entry, field);
    if (a && a->shared) {
        /* Its spans are in the reader's sorter already, or not at all. */
        if (a->dropped || !early->shared_adopted)
            return 0;
        a->dropped = true;
        early->counts.items_adopted += a->chunks * a->chunk_items;
        early->counts.spans_adopted += a->chunks * a->chunk_items;
        return a->chunks;
    }
    a = adoptable(early, entry, field, array, usable);
    if (!a || a->frames)
        return 0;
    /* Only into the sorter the reader made ready as this one was, before any push. */
    if (sorter->size != a->sorter.size || sorter->compare != a->sorter.compare ||
        sorter->run_items != a->sorter.run_items || sorter->count || sorter->finished) {
        array_drop(early, a);
        return 0;
    }
    sorter_free(sorter);
    *sorter = a->sorter;
    memset(&a->sorter, 0, sizeof(a->sorter));
    a->dropped = true; /* given away */
    early->counts.items_adopted += a->chunks * a->chunk_items;
    return a->chunks;
}

void recording_early_counts(const struct recording_early *early,
                            struct recording_early_counts *ret)
{
    if (early)
        *ret = early->counts;
    else
        memset(ret, 0, sizeof(*ret));
}

void recording_early_destroy(struct recording_early *early)
{
    if (!early)
        return;
    for (size_t i = 0; i < early->count; i++)
        if (!early->arrays[i].dropped)
            array_drop(early, &early->arrays[i]);
    sorter_free(&early->shared);
    free(early->arrays);
    free(early->frames);
    free(early);
}
