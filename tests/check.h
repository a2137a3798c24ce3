/* CHECK(cond): fail the test program with the file, line and condition. EXPECT(cond, ...):
 * say why (printf's arguments) and count it in check_failures, going on. test_random(): the
 * same pseudo-random sequence in every run (xorshift). */
#ifndef FSCOPE_TEST_CHECK_H
#define FSCOPE_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);           \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static int check_failures __attribute__((unused));

#define EXPECT(cond, ...)                                                                      \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
            check_failures++;                                                                  \
        }                                                                                      \
    } while (0)

static inline uint64_t test_random(void)
{
    static uint64_t state = 0x9e3779b97f4a7c15u;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

#endif
