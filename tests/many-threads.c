/* An app with more threads alive at once than the kernel sampler follows: THREADS threads
 * wait while the main thread marks frames for SECONDS, then all end.
 *
 *   many-threads THREADS SECONDS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "framescope.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static int done;

static void *waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    while (!done)
        pthread_cond_wait(&done_cond, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int count = argc == 3 ? atoi(argv[1]) : 0;
    if (count <= 0 || count > 4096 || atof(argv[2]) <= 0) {
        fprintf(stderr, "usage: many-threads THREADS SECONDS\n");
        return 2;
    }
    FSCOPE_FRAME_MARK();
    pthread_t *threads = calloc((size_t)count, sizeof(*threads));
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    int made = 0;
    while (threads && made < count && pthread_create(&threads[made], &attr, waiter, NULL) == 0)
        made++;
    double end = now_s() + atof(argv[2]);
    while (now_s() < end) {
        struct timespec pause = { 0, 1000000 };
        nanosleep(&pause, NULL);
        FSCOPE_FRAME_MARK();
    }
    pthread_mutex_lock(&lock);
    done = 1;
    pthread_cond_broadcast(&done_cond);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < made; i++)
        pthread_join(threads[i], NULL);
    printf("%d threads\n", made);
    return made == count ? 0 : 1;
}
