#include "meta.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "recording.h"

/* Serialises writers; readers in other processes take no lock (they check what they read). */
static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;

FSCOPE_EXPORT void fscope_record_enable(void)
{
    struct rec_meta *m = recording_meta();
    if (m)
        atomic_store(&m->enabled, 1);
}

FSCOPE_EXPORT void fscope_record_gpu_timing(bool on)
{
    struct rec_meta *m = recording_meta();
    if (m)
        atomic_store(&m->gpu_timing, on);
}

FSCOPE_EXPORT void fscope_record_device(uint32_t id, const char *device, const char *driver)
{
    struct rec_meta *m = recording_meta();
    if (!m)
        return;
    device = device ? device : "";
    driver = driver ? driver : "";
    pthread_mutex_lock(&meta_lock);
    uint32_t n = atomic_load_explicit(&m->device_count, memory_order_relaxed);
    struct rec_device *d = NULL;
    for (uint32_t i = 0; i < n && !d; i++)
        if (strcmp(m->devices[i].name, device) == 0 && strcmp(m->devices[i].driver, driver) == 0)
            d = &m->devices[i];
    if (!d && n < REC_MAX_DEVICES) {
        d = &m->devices[n];
        snprintf(d->name, sizeof(d->name), "%s", device);
        snprintf(d->driver, sizeof(d->driver), "%s", driver);
        d->first_id = id;
        d->last_id = id;
        d->count = 1;
        atomic_store_explicit(&m->device_count, n + 1, memory_order_release);
    } else if (d) {
        d->count++;
        d->last_id = id;
    }
    pthread_mutex_unlock(&meta_lock);
}

/* The note in slot i and the slots that continue it, joined into buf (len bytes, cut there);
 * returns the slot after them. */
static uint32_t note_join(const struct rec_meta *m, uint32_t i, uint32_t count, char *buf,
                          size_t len)
{
    size_t used = 0;
    do {
        const char *piece = m->notes[i] + (used ? 1 : 0);
        size_t piece_len = strnlen(piece, REC_NOTE_SIZE - (used ? 1 : 0));
        if (piece_len > len - 1 - used)
            piece_len = len - 1 - used;
        memcpy(buf + used, piece, piece_len);
        used += piece_len;
    } while (++i < count && m->notes[i][0] == REC_NOTE_CONTINUES);
    buf[used] = '\0';
    return i;
}

FSCOPE_EXPORT void fscope_record_note(const char *fmt, ...)
{
    struct rec_meta *m = recording_meta();
    if (!m)
        return;
    char line[REC_NOTE_MAX], seen_note[REC_NOTE_MAX];
    va_list ap;
    va_start(ap, fmt);
    int wanted = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (wanted < 0)
        return;
    size_t len = strlen(line);
    if ((size_t)wanted >= sizeof(line)) {
        /* Longer than any note of ours: cut at a word, and say so. */
        static const char cut[] = " [...]";
        len = sizeof(line) - sizeof(cut);
        while (len > 0 && line[len] != ' ')
            len--;
        memcpy(line + len, cut, sizeof(cut));
        len += sizeof(cut) - 1;
    }
    if (line[0] == REC_NOTE_CONTINUES)
        line[0] = '?';
    /* The first slot holds REC_NOTE_SIZE - 1 bytes, each one after it one fewer (its mark). */
    uint32_t slots = len < REC_NOTE_SIZE ? 1
                     : 1 + (uint32_t)((len - (REC_NOTE_SIZE - 1) + REC_NOTE_SIZE - 3) /
                                      (REC_NOTE_SIZE - 2));
    pthread_mutex_lock(&meta_lock);
    uint32_t n = atomic_load_explicit(&m->note_count, memory_order_relaxed);
    bool seen = false;
    for (uint32_t i = 0; i < n && !seen;) {
        i = note_join(m, i, n, seen_note, sizeof(seen_note));
        seen = strcmp(seen_note, line) == 0;
    }
    if (!seen && n + slots <= REC_MAX_NOTES) {
        size_t at = 0;
        for (uint32_t k = 0; k < slots; k++) {
            char *slot = m->notes[n + k];
            size_t room = REC_NOTE_SIZE - 1 - (k ? 1 : 0);
            size_t piece = len - at < room ? len - at : room;
            if (k)
                *slot++ = REC_NOTE_CONTINUES;
            memcpy(slot, line + at, piece);
            slot[piece] = '\0';
            at += piece;
        }
        /* Readers take the count, then the slots: every piece is there before it grows. */
        atomic_store_explicit(&m->note_count, n + slots, memory_order_release);
    }
    pthread_mutex_unlock(&meta_lock);
}

void record_outputs(const struct rec_output *outputs, size_t count)
{
    struct rec_meta *m = recording_meta();
    if (!m)
        return;
    if (count > REC_MAX_OUTPUTS)
        count = REC_MAX_OUTPUTS;
    pthread_mutex_lock(&meta_lock);
    /* Readers take count first: shrink it before rewriting, grow it after. */
    atomic_store_explicit(&m->output_count, 0, memory_order_release);
    memcpy(m->outputs, outputs, count * sizeof(*outputs));
    atomic_store_explicit(&m->output_count, (uint32_t)count, memory_order_release);
    pthread_mutex_unlock(&meta_lock);
}
