/* framescope's own threads inside the app (the GPU timestamp reader, the stream thread, the
 * kernel sampler): started with every signal blocked (signals are the app's business), named,
 * and waiting on CLOCK_MONOTONIC so a clock change never stretches a wait. */
#ifndef FSCOPE_RECORD_WORKER_H
#define FSCOPE_RECORD_WORKER_H

#include <pthread.h>
#include <stdbool.h>

#define FSCOPE_EXPORT __attribute__((visibility("default")))

/* Exported for the layer's GPU timestamp reader. Starts fn(arg) on a new thread that takes no signal, named name (15 bytes at most).
 * Returns 0 or the error pthread_create gave; *ret is written only on success. */
FSCOPE_EXPORT int fscope_worker_spawn(pthread_t *ret, const char *name, void *(*fn)(void *), void *arg);
/* Initialises cond to time its waits on CLOCK_MONOTONIC. */
FSCOPE_EXPORT void fscope_worker_cond_init(pthread_cond_t *cond);

/* A thread that runs tick(arg, false) at once and then every period_ms until stopped, then
 * tick(arg, true) once: the final tick does what must happen last (a last sample, freeing its
 * state). */
struct worker {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool running, stopping;
    unsigned period_ms;
    void (*tick)(void *arg, bool final);
    void *arg;
};
#define WORKER_INIT { .lock = PTHREAD_MUTEX_INITIALIZER }

/* Starts w. False when the thread could not start (tick never runs). */
bool worker_start(struct worker *w, const char *name, unsigned period_ms,
                  void (*tick)(void *arg, bool final), void *arg);
/* Wakes w, lets it run its final tick and joins it. Does nothing for a worker never started
 * (or already stopped). */
void worker_stop(struct worker *w);

#endif
