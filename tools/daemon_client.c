/* framescope top and framescope snapshot: questions to framescoped (tools/framescoped.c) over
 * its socket, one request and one reply each. */
#include "daemon_client.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "util/config.h"
#include "util/daemon_proto.h"
#include "util/text.h"

/* The daemon has this long to answer (a snapshot analyses a recording). */
#define REPLY_TIMEOUT_S 60
#define REPLY_TIMEOUT_MS (REPLY_TIMEOUT_S * 1000)
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

/* Sends req and returns the reply (NUL-terminated, to free) or NULL with a message said. */
static char *ask(const struct fscoped_request *req)
{
    char path[108];
    if (!fscoped_socket_path(path, sizeof(path))) {
        fprintf(stderr, "framescope: XDG_RUNTIME_DIR is unset or not absolute: cannot find "
                "framescoped's socket\n");
        return NULL;
    }
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    memcpy(addr.sun_path, path, strlen(path) + 1);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        fprintf(stderr, "framescope: framescoped is not running (%s: %s); start it with "
                "'systemctl --user enable --now framescoped.socket'\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    /* The reply: packets until the daemon closes (src/util/daemon_proto.h). */
    char *reply = NULL;
    size_t len = 0, cap = 0;
    ssize_t n = -1;
    const char *fault = NULL;
    if (send(fd, req, sizeof(*req), MSG_NOSIGNAL) == (ssize_t)sizeof(*req)) {
        struct timespec start;
        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            long left = REPLY_TIMEOUT_MS - (long)((now.tv_sec - start.tv_sec) * 1000 +
                                                  (now.tv_nsec - start.tv_nsec) / 1000000);
            struct pollfd p = { .fd = fd, .events = POLLIN };
            if (left <= 0 || poll(&p, 1, (int)left) != 1) {
                fault = "it did not finish its answer within " STRINGIFY(REPLY_TIMEOUT_S) " s";
                break;
            }
            if (cap - len < FSCOPED_REPLY_PACKET + 1) {
                if (cap >= FSCOPED_REPLY_MAX) {
                    fault = "its answer is longer than we take";
                    break;
                }
                cap = cap ? 2 * cap : 4 * FSCOPED_REPLY_PACKET;
                char *grown = realloc(reply, cap);
                if (!grown) {
                    fault = "out of memory";
                    break;
                }
                reply = grown;
            }
            n = recv(fd, reply + len, FSCOPED_REPLY_PACKET, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            len += (size_t)n;
        }
    }
    int e = errno;
    close(fd);
    if (fault || n < 0 || len == 0) {
        fprintf(stderr, "framescope: no answer from framescoped: %s\n",
                fault ? fault
                : n < 0 ? strerror(e)
                        : "it closed the connection without one (it refused us: another "
                          "user's daemon, or a request it did not take; its log says which)");
        free(reply);
        return NULL;
    }
    reply[len] = '\0';
    return reply;
}

static void request_init(struct fscoped_request *req, enum fscoped_kind kind)
{
    memset(req, 0, sizeof(*req));
    memcpy(req->magic, FSCOPED_MAGIC, sizeof(req->magic));
    req->kind = kind;
}

/* framescoped's reply read as JSON: an object, or NULL after one line on stderr. Whoever holds
 * the socket wrote it, so it is read as any file from someone else: with jansson, a member
 * twice refused, and what it says made printable before it is printed. */
static json_t *reply_parse(const char *reply)
{
    json_error_t error;
    json_t *root = json_loads(reply, JSON_DECODE_INT_AS_REAL | JSON_REJECT_DUPLICATES, &error);
    if (!root) {
        char shown[256];
        fprintf(stderr, "framescope: framescoped's answer is not JSON: line %d, column %d: %s\n",
                error.line, error.column,
                fscope_text_shown(shown, sizeof(shown), error.text, sizeof(error.text)));
    } else if (!json_is_object(root)) {
        fprintf(stderr, "framescope: framescoped's answer is not a JSON object\n");
        json_decref(root);
        root = NULL;
    }
    return root;
}

/* The number at key in object; 0 when absent or not a number (not measured yet). */
static double number(const json_t *object, const char *key)
{
    return json_number_value(json_object_get(object, key));
}

/* The string at key in object made printable in buf (fscope_text_shown), cut at a whole
 * character to fit it (a column's width); "" when absent or not a string. */
static const char *text(const json_t *object, const char *key, char *buf, size_t len)
{
    const json_t *value = json_object_get(object, key);
    const char *string = json_string_value(value);
    return fscope_text_shown(buf, len, string ? string : "", json_string_length(value));
}

/* Whether framescoped answered with an error instead (it is busy, a job timed out): said on
 * stderr, in its own words, made printable. */
static bool reply_is_error(const json_t *root)
{
    if (!json_is_string(json_object_get(root, "error")))
        return false;
    char error[1024];
    fprintf(stderr, "framescope top: framescoped says: %s\n",
            text(root, "error", error, sizeof(error)));
    return true;
}

/* One screen of top: a line per app. */
static int print_table(const char *reply, bool clear)
{
    json_t *root = reply_parse(reply);
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
                 text(a, "verdict", verdict_name, sizeof(verdict_name)),
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
        text(a, "error", error, sizeof(error));
        printf("%-8.0f %-16s %8.1f %8.2f %8.2f %-22s %7s %7s%s%s\n", number(a, "pid"),
               text(a, "name", name, sizeof(name)), number(a, "fps"), number(a, "p50_ms"),
               number(a, "p99_ms"), verdict, shown, cap, error[0] ? "  " : "", error);
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
    json_t *root = reply_parse(reply);
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
    request_init(&req, FSCOPED_LIST);
    for (;;) {
        char *reply = ask(&req);
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
    request_init(&req, FSCOPED_SNAPSHOT);
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
    char *reply = ask(&req);
    if (!reply)
        return 1;
    json_t *root = reply_parse(reply);
    free(reply);
    if (!root)
        return 1;
    char capture[4 * PATH_MAX], error[1024];
    int status = 1;
    if (text(root, "capture", capture, sizeof(capture))[0]) {
        printf("%s\n", capture);
        status = 0;
    } else {
        fprintf(stderr, "framescope snapshot: %s\n", text(root, "error", error, sizeof(error)));
    }
    json_decref(root);
    return status;
}
