/* framescope snapshot: has framescoped write a capture of a running app's recent frames. */
#include "commands.h"

#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "daemon_client.h"
#include "util/config.h"

static const char snapshot_usage[] =
    "usage: framescope snapshot PID|NAME [--last SECONDS]\n"
    "Writes a capture of a running profiled app's recent frames and flight recorder without\n"
    "stopping it, under $XDG_STATE_HOME/framescope (framescoped writes it); prints its path.\n"
    "--last SECONDS keeps the frames of the last SECONDS only (default: all it has).\n";

int cmd_snapshot(int argc, char **argv)
{
    static const struct option options[] = {
        { "last", required_argument, NULL, 'l' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    double last = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'l':
            if (!fscope_config_parse_double(optarg, 0.001, 86400, &last)) {
                fprintf(stderr, "framescope snapshot: --last takes seconds, 0.001..86400\n");
                return 2;
            }
            break;
        case 'h': fputs(snapshot_usage, stdout); return 0;
        default: fputs(snapshot_usage, stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fputs(snapshot_usage, stderr);
        return 2;
    }
    struct fscoped_request req;
    daemon_request_init(&req, FSCOPED_SNAPSHOT);
    req.last_ms = (uint32_t)(last * 1000 + 0.5);
    long pid;
    const char *target = argv[optind];
    if (fscope_config_parse_long(target, 1, 1 << 30, &pid)) {
        req.pid = (int32_t)pid;
    } else if (!target[0] || strlen(target) >= sizeof(req.name)) {
        fprintf(stderr, "framescope snapshot: '%s' is neither a pid nor an app name (up to %zu "
                "bytes)\n", target, sizeof(req.name) - 1);
        return 2;
    } else {
        snprintf(req.name, sizeof(req.name), "%s", target);
    }
    char *reply = daemon_ask(&req);
    if (!reply)
        return 1;
    json_t *root = daemon_reply_parse(reply);
    free(reply);
    if (!root)
        return 1;
    char capture[4 * PATH_MAX], error[1024];
    int status = 1;
    if (daemon_reply_text(root, "capture", capture, sizeof(capture))[0]) {
        printf("%s\n", capture);
        status = 0;
    } else {
        fprintf(stderr, "framescope snapshot: %s\n",
                daemon_reply_text(root, "error", error, sizeof(error)));
    }
    json_decref(root);
    return status;
}
