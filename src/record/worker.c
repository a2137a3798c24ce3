#include "worker.h"

#include <errno.h>
#include <signal.h>
#include <time.h>

FSCOPE_EXPORT int fscope_worker_spawn(pthread_t *ret, const char *name, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t thread;
    int err = pthread_create(&thread, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err == 0) {
        pthread_setname_np(thread, name);
        *ret = thread;
    }
    return err;
}

FSCOPE_EXPORT void fscope_worker_cond_init(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->stopping) {
        pthread_mutex_unlock(&w->lock);
        w->tick(w->arg, false);
        pthread_mutex_lock(&w->lock);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += w->period_ms / 1000;
        until.tv_nsec += (long)(w->period_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!w->stopping && pthread_cond_timedwait(&w->wake, &w->lock, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&w->lock);
    w->tick(w->arg, true);
    return NULL;
}

bool worker_start(struct worker *w, const char *name, unsigned period_ms,
                  void (*tick)(void *arg, bool final), void *arg)
{
    fscope_worker_cond_init(&w->wake);
    w->period_ms = period_ms;
    w->tick = tick;
    w->arg = arg;
    pthread_mutex_lock(&w->lock);
    w->running = fscope_worker_spawn(&w->thread, name, worker_main, w) == 0;
    pthread_mutex_unlock(&w->lock);
    return w->running;
}

void worker_stop(struct worker *w)
{
    pthread_mutex_lock(&w->lock);
    bool join = w->running;
    w->running = false;
    w->stopping = true;
    if (join)
        pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    if (join)
        pthread_join(w->thread, NULL);
}
