/* framescope top: every app profiled on this desktop, live, from framescoped. */
#include "commands.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "daemon_client.h"
#include "util/config.h"

/* The number at key in object; 0 when absent or not a number (not measured yet). */
static double number(const json_t *object, const char *key)
{
    return json_number_value(json_object_get(object, key));
}

/* Whether framescoped answered with an error instead (it is busy, a job timed out): said on
 * stderr, in its own words, made printable. */
static bool reply_is_error(const json_t *root)
{
    if (!json_is_string(json_object_get(root, "error")))
        return false;
    char error[1024];
    fprintf(stderr, "framescope top: framescoped says: %s\n",
            daemon_reply_text(root, "error", error, sizeof(error)));
    return true;
}

/* One screen of top: a line per app. */
static int print_table(const char *reply, bool clear)
{
    json_t *root = daemon_reply_parse(reply);
    if (!root)
        return 1;
    if (reply_is_error(root)) {
        json_decref(root);
        return 1;
    }
    const json_t *list = json_object_get(root, "apps");
    if (!json_is_array(list)) {
        fprintf(stderr, "framescope: framescoped's answer is not a list of apps: no \"apps\"\n");
        json_decref(root);
        return 1;
    }
    if (clear)
        fputs("\033[H\033[2J", stdout);
    printf("%-8s %-16s %8s %8s %8s %-22s %7s %7s\n", "PID", "APP", "FPS", "P50 MS", "P99 MS",
           "VERDICT (SHARE)", "SHOWN", "CAP");
    size_t i;
    const json_t *a;
    json_array_foreach(list, i, a) {
        char name[17], verdict_name[32], verdict[64], shown[16], cap[16], error[512];
        snprintf(verdict, sizeof(verdict), "%s (%.0f%%)",
                 daemon_reply_text(a, "verdict", verdict_name, sizeof(verdict_name)),
                 100 * number(a, "verdict_share"));
        double resolved = number(a, "resolved");
        if (resolved > 0)
            snprintf(shown, sizeof(shown), "%.0f%%", 100 * number(a, "shown") / resolved);
        else
            snprintf(shown, sizeof(shown), "-");
        if (number(a, "cap_hz") > 0)
            snprintf(cap, sizeof(cap), "%.0f Hz", number(a, "cap_hz"));
        else
            snprintf(cap, sizeof(cap), "off");
        daemon_reply_text(a, "error", error, sizeof(error));
        printf("%-8.0f %-16s %8.1f %8.2f %8.2f %-22s %7s %7s%s%s\n", number(a, "pid"),
               daemon_reply_text(a, "name", name, sizeof(name)), number(a, "fps"),
               number(a, "p50_ms"), number(a, "p99_ms"), verdict, shown, cap,
               error[0] ? "  " : "", error);
    }
    if (!json_array_size(list))
        printf("(no profiled app is running)\n");
    fflush(stdout);
    json_decref(root);
    return 0;
}

/* top --json: the reply as it came, once it is known to be JSON. Valid JSON holds no raw C0
 * control but its whitespace, yet may hold a raw DEL or C1 control (U+009B is CSI to some
 * terminals) in a string, and a carriage return between tokens: refused. */
static int print_reply(const char *reply)
{
    json_t *root = daemon_reply_parse(reply);
    if (!root)
        return 1;
    bool error = reply_is_error(root);
    json_decref(root);
    if (error)
        return 1;
    for (const unsigned char *c = (const unsigned char *)reply; *c; c++) {
        if (*c == '\r' || *c == 0x7f || (c[0] == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f)) {
            fprintf(stderr, "framescope: framescoped's answer holds a control character at "
                    "byte %zu\n", (size_t)(c - (const unsigned char *)reply));
            return 1;
        }
    }
    fputs(reply, stdout);
    fflush(stdout);
    return 0;
}

static const char top_usage[] =
    "usage: framescope top [--once] [--json] [--interval SECONDS]\n"
    "Every app profiled on this desktop (registered with framescoped), refreshed: frames per\n"
    "second, frame time p50/p99 over the last second, the verdict of most of those frames,\n"
    "the share of them shown (where presentation feedback arrived) and the cap.\n"
    "--once prints one table and exits; --json prints framescoped's answer as it is, once it\n"
    "is known to be JSON with no raw control character (names in the table are escaped).\n";

int cmd_top(int argc, char **argv)
{
    static const struct option options[] = {
        { "once", no_argument, NULL, 'o' },
        { "json", no_argument, NULL, 'j' },
        { "interval", required_argument, NULL, 'i' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    bool once = false, json = false;
    double interval = 1.0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'o': once = true; break;
        case 'j': json = true; break;
        case 'i':
            if (!fscope_config_parse_double(optarg, 0.1, 3600, &interval)) {
                fprintf(stderr, "framescope top: --interval takes seconds, 0.1..3600\n");
                return 2;
            }
            break;
        case 'h': fputs(top_usage, stdout); return 0;
        default: fputs(top_usage, stderr); return 2;
        }
    }
    if (optind < argc) {
        fputs(top_usage, stderr);
        return 2;
    }
    struct fscoped_request req;
    daemon_request_init(&req, FSCOPED_LIST);
    for (;;) {
        char *reply = daemon_ask(&req);
        if (!reply)
            return 1;
        int status = json ? print_reply(reply) : print_table(reply, !once && isatty(STDOUT_FILENO));
        free(reply);
        if (status || once)
            return status;
        struct timespec ts = { (time_t)interval,
                               (long)((interval - (double)(time_t)interval) * 1e9) };
        nanosleep(&ts, NULL);
    }
}
