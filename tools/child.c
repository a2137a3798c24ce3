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
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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
    /* Ignored SIGCHLD, inherited from whoever started us, has the kernel reap our children
     * itself: waitid() then finds no command to wait for (run exited 125, "No child
     * processes", whatever the command did). Waiting for children needs it at its default. */
    struct sigaction child_default = { .sa_handler = SIG_DFL };
    sigemptyset(&child_default.sa_mask);
    if (sigaction(SIGCHLD, &child_default, NULL) != 0)
        return -1;
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

/* In the child, between fork and exec: only async-signal-safe calls. */
static void child_setup_and_exec(char **argv, char **env, const struct child_spawn_opts *o,
                                 pid_t parent, int report_fd)
{
    /* pass_on must not run in the child: with child_pid 0 here it would swallow a signal meant
     * for the command (a terminal's ^C to the whole group between fork and exec), and the
     * command would run on as if never interrupted. The default action, which exec gives it
     * anyway, ends the child as the signal would have ended the command. child_run forks with
     * the signals blocked, so none slips in before this. */
    for (unsigned i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++) {
        struct sigaction old;
        if (sigaction(stop_signals[i], NULL, &old) == 0 && (old.sa_flags & SA_SIGINFO) &&
            old.sa_sigaction == pass_on) {
            struct sigaction action = { .sa_handler = SIG_DFL };
            sigemptyset(&action.sa_mask);
            sigaction(stop_signals[i], &action, NULL);
        }
    }
    int e = 0;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        e = errno;
    else if (getppid() != parent)
        _exit(127); /* the parent is already gone: die with it now */
    if (!e && o->new_group && setpgid(0, 0) != 0)
        e = errno;
    for (int signo = 1; !e && o->defaults && signo < NSIG; signo++) {
        if (sigismember(o->defaults, signo) == 1) {
            struct sigaction action = { .sa_handler = SIG_DFL };
            sigemptyset(&action.sa_mask);
            sigaction(signo, &action, NULL);
        }
    }
    if (!e && o->log_path) {
        /* The child's standard descriptors, meant to survive exec (no O_CLOEXEC). */
        int in = open("/dev/null", O_RDONLY);
        int out = open(o->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || out < 0 || dup2(in, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 ||
            dup2(out, STDERR_FILENO) < 0)
            e = errno;
        if (in > STDERR_FILENO)
            close(in);
        if (out > STDERR_FILENO)
            close(out);
    }
    if (!e) {
        sigprocmask(SIG_SETMASK, o->mask, NULL);
        execvpe(argv[0], argv, env);
        e = errno;
    }
    while (write(report_fd, &e, sizeof(e)) < 0 && errno == EINTR)
        ;
    _exit(127);
}

int child_spawn(pid_t *ret_pid, char **argv, char **env, const struct child_spawn_opts *o)
{
    /* exec's failure comes back through a pipe that exec itself closes on success. */
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0)
        return errno;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(report[0]);
        close(report[1]);
        return e;
    }
    if (pid == 0) {
        close(report[0]);
        child_setup_and_exec(argv, env, o, parent, report[1]);
    }
    close(report[1]);
    int e = 0;
    ssize_t n;
    while ((n = read(report[0], &e, sizeof(e))) < 0 && errno == EINTR)
        ;
    close(report[0]);
    if (n == (ssize_t)sizeof(e)) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        return e ? e : ECHILD;
    }
    *ret_pid = pid;
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
    const struct child_spawn_opts opts = { .mask = &unblocked };
    pid_t pid = 0;
    int r = child_spawn(&pid, argv, env, &opts);
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
