/* What the app, framescoped and the CLI say to each other over the daemon's socket: a
 * SOCK_SEQPACKET Unix socket at $XDG_RUNTIME_DIR/framescope/framescoped.sock, in a 0700
 * directory, that only the daemon's own user may use (SO_PEERCRED).
 *
 * Every request is one message holding exactly one struct fscoped_request. A registration
 * carries the app's recording (a memfd) and, where it has one, its stream file, as
 * SCM_RIGHTS, sealed at least against shrinking (F_SEAL_SHRINK: the daemon refuses it
 * otherwise); the app keeps the connection open while it runs. Every other request gets a
 * reply of JSON text, as many messages of at most FSCOPED_REPLY_PACKET bytes as it takes,
 * ended by the daemon closing the connection: the client reads to the end. */
#ifndef FSCOPE_DAEMON_PROTO_H
#define FSCOPE_DAEMON_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FSCOPED_MAGIC "FSCOPED1" /* 8 bytes, no NUL in the message */
#define FSCOPED_SOCKET_DIR "framescope"
#define FSCOPED_SOCKET_NAME "framescoped.sock"
#define FSCOPED_REPLY_PACKET (32 * 1024)
#define FSCOPED_REPLY_MAX (64 * 1024 * 1024) /* what a client takes in all */

enum fscoped_kind {
    FSCOPED_REGISTER = 1, /* fds: recording, [stream file] */
    FSCOPED_LIST = 2,     /* reply: every profiled app, live */
    FSCOPED_SNAPSHOT = 3, /* reply: where the capture of a running app's recent frames went */
};

#define FSCOPED_OBSERVED 0x1 /* REGISTER: framescope run analyses this app itself */

struct fscoped_request {
    char magic[8];
    uint32_t kind;     /* enum fscoped_kind */
    uint32_t flags;    /* FSCOPED_* */
    int32_t pid;       /* REGISTER: the sender itself; SNAPSHOT: the app, or 0 to go by name */
    uint32_t last_ms;  /* SNAPSHOT: how much of the recent run, 0: all still in memory */
    char name[64];     /* REGISTER: the app's name; SNAPSHOT: the app's name when pid is 0 */
    char exe[256];     /* REGISTER: its executable */
};

/* The daemon's socket path for this user: false when XDG_RUNTIME_DIR is unset, relative or
 * too long. */
bool fscoped_socket_path(char *buf, size_t len);

#endif
