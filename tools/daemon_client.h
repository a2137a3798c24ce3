/* Questions to framescoped for framescope top and snapshot (tools/daemon_client.c). */
#ifndef FSCOPE_TOOLS_DAEMON_CLIENT_H
#define FSCOPE_TOOLS_DAEMON_CLIENT_H

#include <stddef.h>

#include <jansson.h>

#include "util/daemon_proto.h"

/* req zeroed, with the protocol's magic and kind. */
void daemon_request_init(struct fscoped_request *req, enum fscoped_kind kind);
/* Sends req and returns the reply (NUL-terminated, to free) or NULL with a message said. */
char *daemon_ask(const struct fscoped_request *req);
/* framescoped's reply read as JSON: an object (to json_decref), or NULL after one line on
 * stderr. Whoever holds the socket wrote it, so it is read as any file from someone else. */
json_t *daemon_reply_parse(const char *reply);
/* The string at key in object made printable in buf (fscope_text_shown), cut at a whole
 * character to fit it (a column's width); "" when absent or not a string. */
const char *daemon_reply_text(const json_t *object, const char *key, char *buf, size_t len);

#endif
