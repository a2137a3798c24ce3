/* What the first store to a page of the recording costs the thread that makes it, by how the
 * stream thread prepared the page (src/record/recording.c, recording_prefault). A memfd the
 * size of the arena's next few megabytes is mapped shared, as the arena is; a helper thread
 * prepares it, then this thread stores one byte into each page, as a frame record's first
 * field does, and the same again (the page now hot: the floor):
 *   none       nothing prepared: each first store is a page fault
 *   populated  MADV_POPULATE_WRITE by the helper (the page tables filled in)
 *   read       populated, then one byte of each page read by the helper (what prefault does)
 * Prints nanoseconds a page for each, and each against the floor, from one run. Under a
 * hypervisor that maps guest pages on first access (shadow paging), "populated" stays
 * microseconds a page and "read" is the floor; on bare metal both are the floor. A kernel
 * without MADV_POPULATE_WRITE (before 5.14) exits 77. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define PAGES 4096
#define TRIALS 5

enum prepare { PREPARE_NONE, PREPARE_POPULATED, PREPARE_READ };

struct region {
    char *base;
    size_t page, size;
    enum prepare how;
    int error;
};

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *prepare(void *arg)
{
    struct region *r = arg;
    if (r->how == PREPARE_NONE)
        return NULL;
    if (madvise(r->base, r->size, MADV_POPULATE_WRITE) != 0) {
        r->error = errno;
        return NULL;
    }
    if (r->how == PREPARE_READ)
        for (size_t at = 0; at < r->size; at += r->page)
            (void)*(volatile const char *)(r->base + at);
    return NULL;
}

/* ns a page of the first stores and of the second, best of TRIALS fresh regions. */
static int measure(enum prepare how, double *first, double *second)
{
    *first = *second = 1e18;
    for (int trial = 0; trial < TRIALS; trial++) {
        struct region r = { .page = (size_t)sysconf(_SC_PAGESIZE), .how = how };
        r.size = r.page * PAGES;
        int fd = memfd_create("bench-first-touch", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, (off_t)r.size) != 0) {
            perror("bench-first-touch: memfd");
            return 1;
        }
        r.base = mmap(NULL, r.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (r.base == MAP_FAILED) {
            perror("bench-first-touch: mmap");
            return 1;
        }
        pthread_t helper;
        if (pthread_create(&helper, NULL, prepare, &r) != 0) {
            fprintf(stderr, "bench-first-touch: cannot start the helper thread\n");
            return 1;
        }
        pthread_join(helper, NULL);
        if (r.error) {
            fprintf(stderr, "bench-first-touch: MADV_POPULATE_WRITE: %s\n", strerror(r.error));
            munmap(r.base, r.size);
            return r.error == EINVAL ? 77 : 1;
        }
        uint64_t t0 = now_ns();
        for (size_t i = 0; i < PAGES; i++)
            r.base[i * r.page + 8] = 1;
        uint64_t t1 = now_ns();
        for (size_t i = 0; i < PAGES; i++)
            r.base[i * r.page + 72] = 1;
        uint64_t t2 = now_ns();
        munmap(r.base, r.size);
        double f = (double)(t1 - t0) / PAGES, s = (double)(t2 - t1) / PAGES;
        *first = f < *first ? f : *first;
        *second = s < *second ? s : *second;
    }
    return 0;
}

int main(void)
{
    static const char *const names[] = { "none", "populated", "read" };
    double first[3], second[3];
    for (int how = 0; how < 3; how++) {
        int rc = measure((enum prepare)how, &first[how], &second[how]);
        if (rc)
            return rc;
    }
    double floor_ns = second[0];
    for (int how = 1; how < 3; how++)
        floor_ns = second[how] < floor_ns ? second[how] : floor_ns;
    printf("first store to a page of a shared memfd, by what another thread did first "
           "(%d pages, best of %d):\n", PAGES, TRIALS);
    for (int how = 0; how < 3; how++)
        printf("  %-10s %9.0f ns a page  (%.0fx a store to a page already touched, %.0f ns)\n",
               names[how], first[how], first[how] / floor_ns, floor_ns);
    return 0;
}
