#include "unnamed_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

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

int sealed_memfd_create(const char *name, uint64_t size)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -errno;
    if (ftruncate(fd, (off_t)size) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}
