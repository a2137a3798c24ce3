/* Questions to framescoped (tools/framescoped.c) over its socket, one request and one reply
 * each: what framescope top and framescope snapshot share. */
#include "daemon_client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "util/text.h"

/* The daemon has this long to answer (a snapshot analyses a recording). */
#define REPLY_TIMEOUT_S 60
#define REPLY_TIMEOUT_MS (REPLY_TIMEOUT_S * 1000)
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

/* Sends req and returns the reply (NUL-terminated, to free) or NULL with a message said. */
char *daemon_ask(const struct fscoped_request *req)
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

void daemon_request_init(struct fscoped_request *req, enum fscoped_kind kind)
{
    memset(req, 0, sizeof(*req));
    memcpy(req->magic, FSCOPED_MAGIC, sizeof(req->magic));
    req->kind = kind;
}

/* framescoped's reply read as JSON: an object, or NULL after one line on stderr. Whoever holds
 * the socket wrote it, so it is read as any file from someone else: with jansson, a member
 * twice refused, and what it says made printable before it is printed. */
json_t *daemon_reply_parse(const char *reply)
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

/* The string at key in object made printable in buf (fscope_text_shown), cut at a whole
 * character to fit it (a column's width); "" when absent or not a string. */
const char *daemon_reply_text(const json_t *object, const char *key, char *buf, size_t len)
{
    const json_t *value = json_object_get(object, key);
    const char *string = json_string_value(value);
    return fscope_text_shown(buf, len, string ? string : "", json_string_length(value));
}
