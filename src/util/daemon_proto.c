#include "daemon_proto.h"

#include <stdio.h>
#include <stdlib.h>

bool fscoped_socket_path(char *buf, size_t len)
{
    const char *dir = secure_getenv("XDG_RUNTIME_DIR");
    if (!dir || dir[0] != '/')
        return false;
    int n = snprintf(buf, len, "%s/" FSCOPED_SOCKET_DIR "/" FSCOPED_SOCKET_NAME, dir);
    /* sun_path holds 108 bytes with its NUL */
    return n > 0 && (size_t)n < len && n < 108;
}
