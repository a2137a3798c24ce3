#include "pio.h"

#include <errno.h>
#include <unistd.h>

int fscope_pread_all(int fd, void *to, size_t len, uint64_t offset)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = pread(fd, (char *)to + done, len - done, (off_t)(offset + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : 1;
        done += (size_t)n;
    }
    return 0;
}

int fscope_pwrite_all(int fd, const void *from, size_t len, uint64_t offset)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = pwrite(fd, (const char *)from + done, len - done, (off_t)(offset + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -ENOSPC;
        done += (size_t)n;
    }
    return 0;
}
