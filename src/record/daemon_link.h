/* The app's side of framescoped (tools/framescoped.c): where the daemon's socket exists when
 * frames start, the app registers its recording with it (the memfd and stream file as
 * SCM_RIGHTS) and keeps the connection open; a thread of ours checks it once a second and
 * registers again when the daemon comes back after a restart. No socket: nothing is started
 * and nothing changes. FRAMESCOPE_DAEMON=off keeps the app away from it. */
#ifndef FSCOPE_RECORD_DAEMON_LINK_H
#define FSCOPE_RECORD_DAEMON_LINK_H

/* With the first frame log (once). */
void daemon_link_start(void);
/* At exit: closes the connection (the daemon learns the app ended from the process itself). */
void daemon_link_stop(void);

#endif
