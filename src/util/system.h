/* What machine this is, as MangoHud's log names it. */
#ifndef FSCOPE_UTIL_SYSTEM_H
#define FSCOPE_UTIL_SYSTEM_H

/* Strings as read, NUL-terminated; "" where a field cannot be read. */
struct system_description {
    char os[128];       /* PRETTY_NAME of /etc/os-release */
    char cpu[128];      /* the first "model name" of /proc/cpuinfo */
    char ram_kib[32];   /* MemTotal of /proc/meminfo */
    char kernel[128];   /* uname's release */
    char scheduler[64]; /* cpu0's cpufreq governor */
};

/* Reads the OS name, CPU model, memory, kernel release and CPU governor. Reads files: never on
 * a hot path. */
void system_describe(struct system_description *ret);

#endif
