#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"

static enum fscope_log_level threshold = FSCOPE_LOG_WARN;
static fscope_log_fn handler;
static void *handler_user;
static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void log_init(void)
{
    const char *value = secure_getenv("FRAMESCOPE_LOG");
    if (!value || !*value)
        return;
    for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (fscope_config_keyword(value, level_names[i])) {
            threshold = (enum fscope_log_level)i;
            return;
        }
    }
    char shown[FSCOPE_ESCAPE_SIZE];
    fscope_log(FSCOPE_LOG_WARN, "FRAMESCOPE_LOG='%s' is not one of error|warn|info|debug; using "
               "warn", fscope_config_escape(value, shown, sizeof(shown)));
}

FSCOPE_EXPORT bool fscope_log_enabled(enum fscope_log_level level)
{
    return level <= threshold;
}

FSCOPE_EXPORT void fscope_log_set_handler(fscope_log_fn fn, void *user)
{
    pthread_mutex_lock(&handler_lock);
    handler = fn;
    handler_user = user;
    pthread_mutex_unlock(&handler_lock);
}

FSCOPE_EXPORT void fscope_log(enum fscope_log_level level, const char *fmt, ...)
{
    if (level > threshold)
        return;
    char line[512];
    static const char *const prefixes[] = { "error: ", "warning: ", "", "debug: " };
    int prefix_len = snprintf(line, sizeof(line), "framescope: %s", prefixes[level]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + prefix_len, sizeof(line) - (size_t)prefix_len, fmt, ap);
    va_end(ap);

    pthread_mutex_lock(&handler_lock);
    if (handler)
        handler(level, line, handler_user);
    else
        fprintf(stderr, "%s\n", line);
    pthread_mutex_unlock(&handler_lock);
}
