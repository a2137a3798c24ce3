/* Running a command with SIGINT, SIGTERM and SIGHUP passed on to it: for framescope run (the
 * profiled command) and framescope compare (its three runs). */
#ifndef FSCOPE_TOOLS_CHILD_H
#define FSCOPE_TOOLS_CHILD_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

/* The last of the three signals this process received; 0 while none. */
extern volatile sig_atomic_t child_stop_signal;

/* The three signals, for blocking them around a spawn of our own (a compositor). */
void child_stop_signal_set(sigset_t *ret_set);
/* From here on this process does not die of them: each is passed on to the running command
 * or, before one runs, remembered in child_stop_signal. One ignored when we started (nohup)
 * stays ignored. SIGCHLD is set to its default (for us and so for the command), which waiting
 * for children needs. Returns 0 or -1 (errno set). */
int child_catch_stop_signals(void);
/* How a child is started (child_spawn). */
struct child_spawn_opts {
    const sigset_t *mask;     /* its signal mask */
    const sigset_t *defaults; /* signals given their default action (NULL: as inherited) */
    bool new_group;           /* a process group of its own */
    const char *log_path;     /* stdin from /dev/null and stdout, stderr to this new file;
                               * NULL: ours */
};
/* Starts argv (argv[0] looked up in PATH) with env, as posix_spawnp would, and so that it dies
 * with us (SIGKILL when this process is gone, however it went: a SIGKILLed `framescope run`
 * leaves no orphaned game or compositor behind). Returns 0 and *ret_pid, or the errno of why
 * it could not be started (exec's own included). */
int child_spawn(pid_t *ret_pid, char **argv, char **env, const struct child_spawn_opts *o);
/* Runs argv (argv[0] looked up in PATH) with env and returns its exit status as a shell
 * reports it: 128+N if it died of signal N (N in *ret_signal, else 0). When one of the three
 * signals came first it is not started: 128+N and *ret_ran false. 125 (with *ret_ran false
 * and a line on stderr) when it could not be run. */
int child_run(char **argv, char **env, int *ret_signal, bool *ret_ran);

#endif
