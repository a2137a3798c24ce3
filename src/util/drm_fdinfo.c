#include "drm_fdinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "<uint> [unit]" as the usage stats write it; false when no number starts the value. */
static bool parse_value(const char *value, const char *unit_default, uint64_t *ret)
{
    while (*value == ' ' || *value == '\t')
        value++;
    if (*value < '0' || *value > '9')
        return false;
    char *end;
    unsigned long long n = strtoull(value, &end, 10);
    while (*end == ' ' || *end == '\t')
        end++;
    const char *unit = *end && *end != '\n' ? end : unit_default;
    uint64_t scale = 1;
    if (strncmp(unit, "KiB", 3) == 0)
        scale = 1024;
    else if (strncmp(unit, "MiB", 3) == 0)
        scale = 1024 * 1024;
    else if (strncmp(unit, "GiB", 3) == 0)
        scale = 1024ull * 1024 * 1024;
    *ret = (uint64_t)n * scale;
    return true;
}

/* The entry for name in a table of count, added when missing and room is left; NULL else. */
static int find_or_add(char (*names)[DRM_FDINFO_NAME], size_t stride, unsigned *count,
                       unsigned max, const char *name, size_t name_len)
{
    if (name_len == 0 || name_len >= DRM_FDINFO_NAME)
        return -1;
    for (unsigned i = 0; i < *count; i++) {
        const char *entry = (const char *)names + i * stride;
        if (strlen(entry) == name_len && strncmp(entry, name, name_len) == 0)
            return (int)i;
    }
    if (*count >= max)
        return -1;
    char *entry = (char *)names + *count * stride;
    memcpy(entry, name, name_len);
    entry[name_len] = '\0';
    return (int)(*count)++;
}

bool drm_fdinfo_parse(const char *text, struct drm_fdinfo *ret)
{
    memset(ret, 0, sizeof(*ret));
    bool driver = false;
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *colon = strchr(line, ':');
        const char *eol = strchr(line, '\n');
        if (!colon || (eol && colon > eol))
            continue;
        size_t key_len = (size_t)(colon - line);
        const char *value = colon + 1;
        uint64_t n;
#define KEY_IS(k) (key_len == sizeof(k) - 1 && strncmp(line, k, key_len) == 0)
#define KEY_HAS(p) (key_len > sizeof(p) - 1 && strncmp(line, p, sizeof(p) - 1) == 0)
        if (KEY_IS("drm-driver")) {
            while (*value == ' ' || *value == '\t')
                value++;
            size_t len = strcspn(value, "\n");
            snprintf(ret->driver, sizeof(ret->driver), "%.*s", (int)len, value);
            driver = true;
        } else if (KEY_IS("drm-client-id")) {
            if (parse_value(value, "", &n))
                ret->client_id = n;
        } else if (KEY_HAS("drm-engine-capacity-")) {
            const char *name = line + sizeof("drm-engine-capacity-") - 1;
            int i = find_or_add(&ret->engines[0].name, sizeof(ret->engines[0]),
                                &ret->engine_count, DRM_FDINFO_ENGINES, name,
                                key_len - (sizeof("drm-engine-capacity-") - 1));
            if (i >= 0 && parse_value(value, "", &n))
                ret->engines[i].capacity = (uint32_t)n;
        } else if (KEY_HAS("drm-engine-")) {
            const char *name = line + sizeof("drm-engine-") - 1;
            int i = find_or_add(&ret->engines[0].name, sizeof(ret->engines[0]),
                                &ret->engine_count, DRM_FDINFO_ENGINES, name,
                                key_len - (sizeof("drm-engine-") - 1));
            if (i >= 0 && parse_value(value, "ns", &n))
                ret->engines[i].busy_ns = n;
        } else if (KEY_HAS("drm-total-") || KEY_HAS("drm-resident-") || KEY_HAS("drm-memory-")) {
            size_t prefix = KEY_HAS("drm-total-") ? sizeof("drm-total-") - 1
                            : KEY_HAS("drm-resident-") ? sizeof("drm-resident-") - 1
                                                       : sizeof("drm-memory-") - 1;
            int i = find_or_add(&ret->regions[0].name, sizeof(ret->regions[0]),
                                &ret->region_count, DRM_FDINFO_REGIONS, line + prefix,
                                key_len - prefix);
            if (i >= 0 && parse_value(value, "", &n)) {
                if (prefix == sizeof("drm-total-") - 1)
                    ret->regions[i].total_bytes = n;
                else
                    ret->regions[i].resident_bytes = n;
            }
        }
#undef KEY_IS
#undef KEY_HAS
    }
    for (unsigned i = 0; i < ret->engine_count; i++)
        if (!ret->engines[i].capacity)
            ret->engines[i].capacity = 1;
    return driver;
}
