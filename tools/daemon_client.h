/* framescope top and framescope snapshot (tools/daemon_client.c): questions to framescoped. */
#ifndef FSCOPE_TOOLS_DAEMON_CLIENT_H
#define FSCOPE_TOOLS_DAEMON_CLIENT_H

/* Each returns the process exit status. */
int cmd_top(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);

#endif
