/* The private headless Weston framescope run starts when there is no display at all. */
#ifndef FSCOPE_TOOLS_COMPOSITOR_H
#define FSCOPE_TOOLS_COMPOSITOR_H

#include <sys/types.h>

struct compositor {
    pid_t pid;
    char runtime_dir[64];
};

/* Starts Weston (headless, pixman) in a new runtime directory of its own and waits until its
 * socket takes connections, a forwarded signal arrives (tools/child.h) or 10 s pass; then sets
 * XDG_RUNTIME_DIR and WAYLAND_DISPLAY for the command. Returns 0, or -1 after saying why on
 * stderr; either way compositor_stop() must follow. c starts zeroed. */
int compositor_start(struct compositor *c);
/* Stops Weston and what it started and removes its runtime directory with everything in it.
 * Accepts a compositor that never started or failed half-way. */
void compositor_stop(struct compositor *c);

#endif
