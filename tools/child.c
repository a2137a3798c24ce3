/*
 * Signals for the command. It stays in our process group, so the terminal treats it as it
 * would the command run on its own: it can read the terminal, ^Z stops it with us and fg
 * resumes both, and ^C reaches it exactly once, straight from the terminal, which signals the
 * whole foreground group. Such a signal (the terminal's keys, its hangup) comes from the
 * kernel, which sends these three only to a whole process group, the command's included
 * (si_code SI_KERNEL): it is not passed on, or the command would get it twice. One that a
 * process sent to us (kill, sigqueue: si_code <= 0) is passed on, once.
 * In a process group of its own the command would get every signal through us alone, but it
 * would be stopped when it reads the terminal unless we handed the terminal over and back and
 * relayed ^Z as a shell does. Left over: a process that signals our whole group
 * (kill -INT -PGID) reaches the command both directly and through us.
 */
#include "child.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };
static volatile sig_atomic_t child_pid; /* the command, not yet reaped; 0 when none */
volatile sig_atomic_t child_stop_signal;

static void pass_on(int signo, siginfo_t *info, void *context)
{
    (void)context;
    int saved_errno = errno;
    child_stop_signal = signo;
    if (child_pid > 0 && info->si_code != SI_KERNEL)
        kill(child_pid, signo);
    errno = saved_errno;
}

void child_stop_signal_set(sigset_t *ret_set)
{
    sigemptyset(ret_set);
    for (unsigned i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
        sigaddset(ret_set, stop_signals[i]);
}

int child_catch_stop_signals(void)
{
    for (unsigned i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++) {
        struct sigaction old;
        if (sigaction(stop_signals[i], NULL, &old) != 0)
            return -1;
        if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN)
            continue;
        struct sigaction action = { .sa_sigaction = pass_on,
                                    .sa_flags = SA_SIGINFO | SA_RESTART };
        sigemptyset(&action.sa_mask);
        if (sigaction(stop_signals[i], &action, NULL) != 0)
            return -1;
    }
    return 0;
}

int child_run(char **argv, char **env, int *ret_signal, bool *ret_ran)
{
    *ret_signal = 0;
    *ret_ran = false;
    sigset_t stops, unblocked;
    child_stop_signal_set(&stops);
    /* Blocked from the last look at child_stop_signal until child_pid is set, so that a
     * signal in between is passed on as soon as the command exists. The command gets our
     * mask as it was, not this one. */
    sigprocmask(SIG_BLOCK, &stops, &unblocked);
    if (child_stop_signal) {
        int signo = child_stop_signal;
        sigprocmask(SIG_SETMASK, &unblocked, NULL);
        return 128 + signo;
    }
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &unblocked);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    pid_t pid;
    int r = posix_spawnp(&pid, argv[0], NULL, &attr, argv, env);
    posix_spawnattr_destroy(&attr);
    if (r == 0)
        child_pid = pid;
    sigprocmask(SIG_SETMASK, &unblocked, NULL);
    if (r != 0) {
        fprintf(stderr, "framescope: cannot run %s: %s\n", argv[0], strerror(r));
        return 125;
    }
    *ret_ran = true;
    /* Waited for without reaping: until child_pid is cleared the pid stays the command's (a
     * zombie's), never that of a new process the handler could signal. */
    siginfo_t info = { 0 };
    int w;
    while ((w = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT)) != 0 && errno == EINTR)
        ;
    int wait_errno = errno;
    child_pid = 0;
    if (w != 0) {
        fprintf(stderr, "framescope: cannot wait for %s: %s\n", argv[0], strerror(wait_errno));
        return 125;
    }
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    if (info.si_code == CLD_EXITED)
        return info.si_status;
    *ret_signal = info.si_status;
    return 128 + info.si_status;
}
