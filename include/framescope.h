/* framescope: CPU zones, an always-on flight recorder and frame marks.
 *
 * Link libframescope (pkg-config framescope). Every macro here vanishes when the program is
 * built with -DFRAMESCOPE_DISABLE: no zone names end up in the binary. The functions stay
 * declared so code that calls them directly still links.
 *
 * Everything here is safe to call from any thread, before or after any other call, and never
 * aborts the program. A zone's identity is the address of its static location record.
 */
#ifndef FRAMESCOPE_H
#define FRAMESCOPE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Detail levels a zone is given at compile time. Zones at or below the threshold in force on
 * their path are recorded; the default threshold is FSCOPE_LEVEL_PHASE. */
#define FSCOPE_LEVEL_LANDMARK 0
#define FSCOPE_LEVEL_PHASE 1
#define FSCOPE_LEVEL_INNER 2

/* Static description of one zone site. Define with FSCOPE_LOC; never build one at run time:
 * its address is the zone's identity and the recorder keeps pointers to it. */
struct fscope_loc {
    const char *name;
    const char *file;
    uint32_t line;
    uint8_t level;
    uint8_t flags; /* FSCOPE_LOC_* */
};

/* The record marks a point in time (an instant), not an interval. */
#define FSCOPE_LOC_INSTANT 0x1

/* Opens a zone on the calling thread. Costs a comparison and a push/pop when loc->level is
 * above the threshold in force; otherwise two clock reads in total with its end. */
void fscope_zone_begin(const struct fscope_loc *loc);

/* Closes the innermost zone the calling thread opened. An end without a begin is ignored. */
void fscope_zone_end(void);

/* Marks the end of a frame on the calling thread, for programs that do not present through
 * Vulkan. Blocks measured on this thread since the previous mark are charged to the frame. */
void fscope_frame_mark(void);

/* Names the calling thread in reports and traces. Copies at most 31 bytes. */
void fscope_thread_name(const char *name);

/* Sets the detail threshold for the children of the node at path ("frame/render"; "" is the
 * root), on every thread, now and for paths that appear later. level -1 clears the override
 * so the node inherits its parent's threshold again. Returns 0, or -EINVAL for a bad level
 * or path, or -ENOSPC when the override table is full. */
int fscope_detail_set(const char *path, int level);

/* Writes the flight recorder of every thread, live or exited, as Chrome Trace Event JSON
 * (loadable by Perfetto and speedscope). Returns 0 or -errno; on failure nothing recorded is
 * lost and no partial file is left at path. */
int fscope_trace_dump(const char *path);

/* The frame cap: paces fscope_cap_wait() callers to hz frames per second (0 turns it off).
 * Returns 0 or -EINVAL. */
int fscope_cap_set_hz(double hz);

/* Waits until the next frame deadline of the cap, if one is set. Call once per frame. */
void fscope_cap_wait(void);

enum fscope_log_level {
    FSCOPE_LOG_ERROR = 0,
    FSCOPE_LOG_WARN,
    FSCOPE_LOG_INFO,
    FSCOPE_LOG_DEBUG,
};

/* Receives every message at or below the level in force (FRAMESCOPE_LOG, default warn), one
 * line without a trailing newline. NULL restores the default, which writes to stderr. */
typedef void (*fscope_log_fn)(enum fscope_log_level level, const char *line, void *user);
void fscope_log_set_handler(fscope_log_fn fn, void *user);

#ifndef FRAMESCOPE_DISABLE

#define FSCOPE_CAT2_(a, b) a##b
#define FSCOPE_CAT_(a, b) FSCOPE_CAT2_(a, b)

static inline void fscope_zone_cleanup_(int *unused)
{
    (void)unused;
    fscope_zone_end();
}

/* Defines a static location record named var. */
#define FSCOPE_LOC(var, zone_name, zone_level)                                                 \
    static const struct fscope_loc var = { (zone_name), __FILE__, __LINE__, (zone_level), 0 }

/* A zone from here to the end of the enclosing block. */
#define FSCOPE_ZONE_L(zone_name, zone_level)                                                   \
    FSCOPE_LOC(FSCOPE_CAT_(fscope_loc_, __LINE__), zone_name, zone_level);                     \
    fscope_zone_begin(&FSCOPE_CAT_(fscope_loc_, __LINE__));                                    \
    int FSCOPE_CAT_(fscope_guard_, __LINE__) __attribute__((cleanup(fscope_zone_cleanup_),      \
                                                            unused)) = 0

#define FSCOPE_ZONE(zone_name) FSCOPE_ZONE_L(zone_name, FSCOPE_LEVEL_PHASE)

/* Explicit pair for code that cannot use a scoped zone. */
#define FSCOPE_ZONE_BEGIN(zone_name, zone_level)                                               \
    do {                                                                                       \
        FSCOPE_LOC(fscope_loc_pair_, zone_name, zone_level);                                   \
        fscope_zone_begin(&fscope_loc_pair_);                                                  \
    } while (0)
#define FSCOPE_ZONE_END() fscope_zone_end()
#define FSCOPE_FRAME_MARK() fscope_frame_mark()
#define FSCOPE_THREAD_NAME(n) fscope_thread_name(n)

#else /* FRAMESCOPE_DISABLE */

#define FSCOPE_LOC(var, zone_name, zone_level) struct fscope_loc_disabled_
#define FSCOPE_ZONE_L(zone_name, zone_level) do { } while (0)
#define FSCOPE_ZONE(zone_name) do { } while (0)
#define FSCOPE_ZONE_BEGIN(zone_name, zone_level) do { } while (0)
#define FSCOPE_ZONE_END() do { } while (0)
#define FSCOPE_FRAME_MARK() do { } while (0)
#define FSCOPE_THREAD_NAME(n) do { } while (0)

#endif /* FRAMESCOPE_DISABLE */

#ifdef __cplusplus
}
#endif

#endif /* FRAMESCOPE_H */
