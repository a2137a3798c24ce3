#include "unnamed_file.h"

#include <fcntl.h>

int unnamed_file_create(const char *tmpdir)
{
    const char *dirs[] = { tmpdir, "/var/tmp", "/tmp" };
    for (unsigned i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        if (!dirs[i] || dirs[i][0] != '/')
            continue;
        int fd = open(dirs[i], O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0)
            return fd;
    }
    return -1;
}
