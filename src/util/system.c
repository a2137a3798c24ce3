#include "system.h"

#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

/* The value after prefix on the first line of path that starts with it, quotes and
 * separators trimmed. */
static void read_field(const char *path, const char *prefix, char *ret, size_t len)
{
    ret[0] = '\0';
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[512];
    size_t prefix_len = strlen(prefix);
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, prefix, prefix_len) != 0)
            continue;
        char *value = line + prefix_len;
        value += strspn(value, " \t:\"");
        value[strcspn(value, "\"\n")] = '\0';
        snprintf(ret, len, "%s", value);
        break;
    }
    fclose(f);
}

void system_describe(struct system_description *ret)
{
    memset(ret, 0, sizeof(*ret));
    read_field("/etc/os-release", "PRETTY_NAME=", ret->os, sizeof(ret->os));
    read_field("/proc/cpuinfo", "model name", ret->cpu, sizeof(ret->cpu));
    read_field("/proc/meminfo", "MemTotal:", ret->ram_kib, sizeof(ret->ram_kib));
    ret->ram_kib[strspn(ret->ram_kib, "0123456789")] = '\0'; /* kB, as MangoHud writes it */
    read_field("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "", ret->scheduler,
               sizeof(ret->scheduler));
    struct utsname uts;
    if (uname(&uts) == 0)
        snprintf(ret->kernel, sizeof(ret->kernel), "%s", uts.release);
}
