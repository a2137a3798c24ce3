/* Zone tree accounting, detail levels and overrides, through the public API; the tree is
 * read through the library's internal view (this test links its objects). */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "framescope.h"
#include "util/log.h"
#include "record/registry.h"

#include "check.h"

/* Finds a node by path in the calling thread's tree; NULL if absent. */
static const struct zone_node *find(const char *path)
{
    struct fscope_collector *c = fscope_thread_collector();
    char buf[256];
    uint32_t count = atomic_load(&c->rec.node_count);
    for (uint32_t i = 1; i < count; i++) {
        registry_node_path(c, i, buf, sizeof(buf));
        if (strcmp(buf, path) == 0)
            return &c->nodes[i];
    }
    return NULL;
}

static uint64_t calls(const char *path)
{
    const struct zone_node *n = find(path);
    return n ? n->calls : 0;
}

static void inner_work(void)
{
    FSCOPE_ZONE_L("inner", FSCOPE_LEVEL_INNER);
    for (volatile int i = 0; i < 100; i++)
        ;
}

static void frame(void)
{
    FSCOPE_ZONE_L("frame", FSCOPE_LEVEL_LANDMARK);
    {
        FSCOPE_ZONE("render");
        inner_work();
        inner_work();
    }
    {
        FSCOPE_ZONE("update");
        inner_work();
    }
}

static void test_tree_accounting(void)
{
    for (int i = 0; i < 10; i++)
        frame();
    CHECK(calls("frame") == 10);
    CHECK(calls("frame/render") == 10);
    CHECK(calls("frame/update") == 10);
    const struct zone_node *f = find("frame");
    const struct zone_node *r = find("frame/render");
    const struct zone_node *u = find("frame/update");
    CHECK(f->child_ticks == r->inclusive_ticks + u->inclusive_ticks);
    CHECK(f->inclusive_ticks >= f->child_ticks);
    CHECK(r->max_ticks <= r->inclusive_ticks && r->max_ticks > 0);
}

static void test_detail_levels(void)
{
    /* FRAMESCOPE_DETAIL (set by meson for this test) raised frame/update before it existed. */
    CHECK(calls("frame/update/inner") == 10);
    /* Default threshold is 1: level-2 zones under render are gated off. */
    CHECK(calls("frame/render/inner") == 0);
    CHECK(find("frame/render/inner") == NULL);

    CHECK(fscope_detail_set("frame/render", 2) == 0);
    frame();
    CHECK(calls("frame/render/inner") == 2);

    CHECK(fscope_detail_set("frame/render", -1) == 0);
    frame();
    frame();
    CHECK(calls("frame/render/inner") == 2); /* node stays, stops counting */

    /* Lowering a branch below the default gates phase zones too. */
    CHECK(fscope_detail_set("frame", 0) == 0);
    uint64_t before = calls("frame/render");
    frame();
    CHECK(calls("frame/render") == before);
    CHECK(fscope_detail_set("frame", -1) == 0);
    frame();
    CHECK(calls("frame/render") == before + 1);

    CHECK(fscope_detail_set("frame", 3) == -EINVAL);
    CHECK(fscope_detail_set("frame", -2) == -EINVAL);
    CHECK(fscope_detail_set(NULL, 1) == -EINVAL);
}

static void test_explicit_pair_and_stray_end(void)
{
    static const struct fscope_loc loc = { "pair", __FILE__, __LINE__, 1, 0 };
    fscope_zone_end(); /* an end with nothing open is ignored */
    fscope_zone_begin(&loc);
    fscope_zone_end();
    CHECK(calls("pair") == 1);
}

static void test_unwritable_dump(void)
{
    int r = fscope_trace_dump("/nonexistent-dir/trace.json");
    CHECK(r == -ENOENT);
    char path[] = "/tmp/fscope-zones-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK(fscope_trace_dump(path) == 0);
    FILE *f = fopen(path, "r");
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    unlink(path);
    CHECK(strstr(buf, "\"name\":\"frame\"") != NULL); /* the failed dump lost nothing */
}

/* Run with FRAMESCOPE_DETAIL="frame/render=2,bogus,x=9,update=abc" FRAMESCOPE_RING_EVENTS=abc:
 * the good token is used, the rest are warned about (checked by the caller) and ignored. */
static int bad_env_mode(void)
{
    CHECK(registry_ring_events() == FSCOPE_DEFAULT_RING_EVENTS);
    frame();
    CHECK(calls("frame/render/inner") == 2);
    CHECK(calls("frame/update/inner") == 0);
    printf("ok\n");
    return 0;
}

static int handled;
static char last_line[512];

static void capture_log(enum fscope_log_level level, const char *line, void *user)
{
    (void)level;
    handled += *(int *)user;
    snprintf(last_line, sizeof(last_line), "%s", line);
}

/* The embedding program redirects log lines; levels above the one in force are not sent. */
static void test_log_handler(void)
{
    int weight = 1;
    fscope_log_set_handler(capture_log, &weight);
    fscope_log(FSCOPE_LOG_WARN, "ring of %d events", 64);
    CHECK(handled == 1);
    CHECK(strcmp(last_line, "framescope: warning: ring of 64 events") == 0);
    fscope_log(FSCOPE_LOG_DEBUG, "not at the default level");
    CHECK(handled == 1);
    fscope_log_set_handler(NULL, NULL);
    fscope_log(FSCOPE_LOG_ERROR, "back to stderr (expected in this test's output)");
    CHECK(handled == 1);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--bad-env") == 0)
        return bad_env_mode();
    fscope_thread_name("zones-test");
    test_tree_accounting();
    test_detail_levels();
    test_explicit_pair_and_stray_end();
    test_unwritable_dump();
    test_log_handler();
    printf("ok\n");
    return 0;
}
