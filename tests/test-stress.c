/* Stress: 8 threads, zones nested to depth 6, rings wrapping many times, threads exiting
 * mid-run. Dumps the trace and writes the tree's zone counts beside it, for check-trace.py. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "framescope.h"
#include "record/registry.h"

#define THREADS 8
#define DEPTH 6

static const struct fscope_loc levels[DEPTH] = {
    { "d0", __FILE__, __LINE__, 0, 0 }, { "d1", __FILE__, __LINE__, 1, 0 },
    { "d2", __FILE__, __LINE__, 1, 0 }, { "d3", __FILE__, __LINE__, 1, 0 },
    { "d4", __FILE__, __LINE__, 1, 0 }, { "d5", __FILE__, __LINE__, 1, 0 },
};

struct worker {
    int index;
    int iterations;
    pthread_t thread;
    struct fscope_collector *collector;
};

static void nest(int depth)
{
    fscope_zone_begin(&levels[depth]);
    if (depth + 1 < DEPTH)
        nest(depth + 1);
    fscope_zone_end();
}

static void *run(void *arg)
{
    struct worker *w = arg;
    char name[32];
    snprintf(name, sizeof(name), "worker-%d", w->index);
    fscope_thread_name(name);
    w->collector = fscope_thread_collector();
    for (int i = 0; i < w->iterations; i++)
        nest(0);
    /* Leave one zone open on half the threads: the dump must close it, not leave it hanging. */
    if (w->index % 2)
        fscope_zone_begin(&levels[0]);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s TRACE.json COUNTS.txt\n", argv[0]);
        return 2;
    }
    struct worker workers[THREADS];
    /* Odd threads exit early (few iterations, no wrap); even ones wrap their ring many times.
     * All have exited by the dump: their trees and rings must still be there. */
    for (int i = 0; i < THREADS; i++) {
        workers[i].index = i;
        workers[i].iterations = (i % 2) ? 20 : 20000;
        pthread_create(&workers[i].thread, NULL, run, &workers[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(workers[i].thread, NULL);

    int r = fscope_trace_dump(argv[1]);
    if (r < 0) {
        fprintf(stderr, "dump failed: %d\n", r);
        return 1;
    }
    FILE *f = fopen(argv[2], "w");
    if (!f)
        return 1;
    fprintf(f, "ring_events %u\n", registry_ring_events());
    for (int i = 0; i < THREADS; i++) {
        struct fscope_collector *c = workers[i].collector;
        uint32_t count = atomic_load(&c->rec.node_count);
        fprintf(f, "thread %d worker-%d written %llu state %d\n", c->rec.tid, i,
                (unsigned long long)atomic_load(&c->rec.ring_head), atomic_load(&c->rec.state));
        for (uint32_t n = 1; n < count; n++) {
            char path[256];
            registry_node_path(c, n, path, sizeof(path));
            fprintf(f, "zone %d %s %llu\n", c->rec.tid, path, (unsigned long long)c->nodes[n].calls);
        }
    }
    fclose(f);
    return 0;
}
