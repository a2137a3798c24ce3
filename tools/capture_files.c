/* The files of a capture that diff and compare read: each a regular file of bounded size,
 * frames.csv and zones.csv as our writer emits them, summary.json with jansson. Text from the
 * files is made printable where it is read. */
#include "capture_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "util/config.h"
#include "util/text.h"

/* The largest summary.json we read: ours is a few kilobytes, plus one diagnosis line per
 * problem; anything near this is not ours. */
#define SUMMARY_MAX_BYTES (64u << 20)
/* The largest frames.csv and zones.csv we read. Each is held whole while it is parsed, so this
 * is also what a file costs diff in memory (a 4 GiB sparse frames.csv cost 4.2 GB of RSS when
 * nothing bounded it). A recording has no frame limit short of its 16 GiB arena (21M frames
 * of 792 bytes), and frames.csv rows are ~425 bytes (the demo's, 97 columns, measured here),
 * so no bound derived from the format would keep memory sane; 1 GiB holds about 2.5 million
 * frames, 11 hours at 60 fps. zones.csv has a row per thread and zone path, far fewer. */
#define CSV_MAX_BYTES (1u << 30)
static const char *const frame_column_names[FRAME_COLUMN_COUNT] = {
    "frame_ms", "cpu_ms", "gpu_busy_ms", "acquire_ms", "present_ms", "present_wait_ms",
    "fence_ms", "semaphore_ms", "idle_ms", "cap_ms",
};

const struct frame_stat frame_stats[FRAME_STAT_COUNT] = {
    { "mean", -1 }, { "p50", 0.50 }, { "p95", 0.95 }, { "p99", 0.99 }, { "max", 1 },
};

const char *const capture_file_names[CAPTURE_FILE_COUNT] = {
    "summary.json", "frames.csv", "zones.csv",
};

/* ---- files ---- */

/* path for a message: control characters escaped, never cut (the file name is at its end). */
const char *capture_files_shown_path(const char *path, char *buf, size_t len)
{
    size_t n = 0;
    for (const unsigned char *c = (const unsigned char *)path; *c && n + 5 < len; c++) {
        if (*c < 0x20 || *c == 0x7f)
            n += (size_t)snprintf(buf + n, len - n, "\\x%02x", *c);
        else
            buf[n++] = (char)*c;
    }
    buf[n] = '\0';
    return buf;
}

/* What a file that is not a capture's regular file is, for the message that refuses it. */
static const char *file_kind(mode_t mode)
{
    return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO"
           : S_ISSOCK(mode) ? "a socket" : S_ISCHR(mode) ? "a character device"
           : S_ISBLK(mode) ? "a block device" : "a special file";
}

/* Reads a regular file whole, NUL-terminated, into *ret_text: one of at most max_bytes, which
 * max_why explains in the message refusing a larger one. False with the reason in error. */
static bool read_file(const char *path, size_t max_bytes, const char *max_why, char **ret_text,
                      size_t *ret_len, char *error, size_t error_len)
{
    /* Opened without waiting (a FIFO there would wait for a writer for ever, a terminal could
     * become ours), then judged on the descriptor itself: only a regular file is read. A link
     * is followed, as it always was: a capture copied with links is still a capture. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(error, error_len, "%s", errno == ENOENT ? "missing" : strerror(errno));
        return false;
    }
    struct stat st;
    char *text = NULL;
    if (fstat(fd, &st) != 0) {
        snprintf(error, error_len, "%s", strerror(errno));
        goto error_fd;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(error, error_len, "%s, not a regular file", file_kind(st.st_mode));
        goto error_fd;
    }
    /* Reads of a regular file do not wait anyway; the flag is dropped so that no filesystem
     * that passes it on (FUSE) can answer a read with EAGAIN. */
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        snprintf(error, error_len, "%s", strerror(errno));
        goto error_fd;
    }
    /* Refused before anything is allocated: a sparse file claims any size for free. */
    if ((unsigned long long)st.st_size > max_bytes) {
        snprintf(error, error_len, "%lld bytes, more than the %zu %s", (long long)st.st_size,
                 max_bytes, max_why);
        goto error_fd;
    }
    size_t size = (size_t)st.st_size, len = 0;
    text = malloc(size + 1);
    if (!text) {
        snprintf(error, error_len, "out of memory for %zu bytes", size);
        goto error_fd;
    }
    while (len < size) {
        ssize_t n = read(fd, text + len, size - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(error, error_len, "%s", strerror(errno));
            goto error_text;
        }
        if (n == 0)
            break; /* shrank while read: what is there is parsed */
        len += (size_t)n;
    }
    text[len] = '\0';
    close(fd);
    *ret_text = text;
    *ret_len = len;
    return true;

error_text:
    free(text);
error_fd:
    close(fd);
    return false;
}

/* ---- CSV, as our writer emits it: a header, ',' between fields, '"' quoting with '""' ---- */

struct csv {
    char *p, *end; /* the text, decoded in place: a field never grows */
    unsigned line;
    char **fields;
    size_t count, capacity;
};

/* The next record into csv->fields: 1, or 0 at the end, or -1 with the reason in error. The
 * buffer must have one byte after end, for the last field's NUL. */
static int csv_next(struct csv *csv, char *error, size_t error_len)
{
    if (csv->p >= csv->end)
        return 0;
    csv->line++;
    csv->count = 0;
    for (;;) {
        if (csv->count == csv->capacity) {
            size_t grown = csv->capacity ? csv->capacity * 2 : 64;
            char **fields = realloc(csv->fields, grown * sizeof(*fields));
            if (!fields) {
                snprintf(error, error_len, "line %u: out of memory", csv->line);
                return -1;
            }
            csv->fields = fields;
            csv->capacity = grown;
        }
        char *field = csv->p, *out = csv->p;
        if (csv->p < csv->end && *csv->p == '"') {
            unsigned first_line = csv->line;
            csv->p++;
            for (;;) {
                if (csv->p >= csv->end) {
                    snprintf(error, error_len, "line %u: a quoted field is not closed",
                             first_line);
                    return -1;
                }
                if (*csv->p == '"') {
                    if (csv->p + 1 < csv->end && csv->p[1] == '"') {
                        *out++ = '"';
                        csv->p += 2;
                        continue;
                    }
                    csv->p++;
                    break;
                }
                csv->line += *csv->p == '\n';
                *out++ = *csv->p++;
            }
            if (csv->p < csv->end && *csv->p != ',' && *csv->p != '\n' && *csv->p != '\r') {
                snprintf(error, error_len, "line %u: text after a quoted field's closing quote",
                         csv->line);
                return -1;
            }
        } else {
            while (csv->p < csv->end && *csv->p != ',' && *csv->p != '\n' && *csv->p != '\r') {
                if (*csv->p == '"') {
                    snprintf(error, error_len, "line %u: a quote inside an unquoted field",
                             csv->line);
                    return -1;
                }
                *out++ = *csv->p++;
            }
        }
        char separator = csv->p < csv->end ? *csv->p : '\n';
        *out = '\0'; /* may overwrite the separator, which is kept above */
        csv->fields[csv->count++] = field;
        if (csv->p < csv->end)
            csv->p++;
        if (separator == ',')
            continue;
        if (separator == '\r' && csv->p < csv->end && *csv->p == '\n')
            csv->p++;
        return 1;
    }
}

/* A plain decimal number as our writer prints it ("-0.5", "12", "1e-05"): no spaces, hex,
 * inf or nan, which strtod alone would take. */
static bool parse_number(const char *text, double *ret)
{
    if (!*text || !(*text == '-' || (*text >= '0' && *text <= '9')))
        return false;
    for (const char *c = text; *c; c++)
        if (!strchr("0123456789.eE+-", *c))
            return false;
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (*end || errno == ERANGE || !isfinite(value))
        return false;
    *ret = value;
    return true;
}

/* Starts reading a CSV file's text (len bytes and one writable byte after them) at its
 * header; the column of each name in names goes to ret_index. False with the reason in error. */
static bool csv_start(struct csv *csv, char *text, size_t len, const char *const *names,
                      size_t name_count, int *ret_index, char *error, size_t error_len)
{
    *csv = (struct csv){ .p = text, .end = text + len };
    int r = csv_next(csv, error, error_len);
    if (r == 0)
        snprintf(error, error_len, "empty: no header line");
    if (r <= 0)
        return false;
    for (size_t i = 0; i < name_count; i++) {
        ret_index[i] = -1;
        for (size_t f = 0; f < csv->count; f++)
            if (strcmp(csv->fields[f], names[i]) == 0)
                ret_index[i] = (int)f;
        if (ret_index[i] < 0) {
            snprintf(error, error_len, "line 1: no column named %s", names[i]);
            return false;
        }
    }
    return true;
}

/* Reads one record of a file whose header had header_count fields. 1, 0 at the end, -1 with
 * the reason in error. */
static int csv_record(struct csv *csv, size_t header_count, char *error, size_t error_len)
{
    int r = csv_next(csv, error, error_len);
    if (r > 0 && csv->count != header_count) {
        snprintf(error, error_len, "line %u: %zu fields where the header has %zu", csv->line,
                 csv->count, header_count);
        return -1;
    }
    return r;
}

static bool csv_number(struct csv *csv, int index, const char *name, double *ret, char *error,
                       size_t error_len)
{
    if (parse_number(csv->fields[index], ret))
        return true;
    char shown[FSCOPE_ESCAPE_SIZE];
    snprintf(error, error_len, "line %u: %s is '%s', not a number", csv->line, name,
             fscope_config_escape(csv->fields[index], shown, sizeof(shown)));
    return false;
}

static int double_order(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Reads frames.csv's columns from its text (len bytes and one writable byte after them; the
 * text is decoded in place). False with the reason in error. */
static bool frames_parse(struct capture *c, char *text, size_t len, char *error,
                         size_t error_len)
{
    struct csv csv = { 0 };
    int index[FRAME_COLUMN_COUNT];
    size_t capacity = 0;
    bool ok = false;
    if (!csv_start(&csv, text, len, frame_column_names, FRAME_COLUMN_COUNT, index, error,
                   error_len))
        goto out;
    size_t header_count = csv.count;
    int r;
    while ((r = csv_record(&csv, header_count, error, error_len)) > 0) {
        if (c->frame_rows == capacity) {
            capacity = capacity ? capacity * 2 : 1024;
            for (int k = 0; k < FRAME_COLUMN_COUNT; k++) {
                double *grown = realloc(c->columns[k], capacity * sizeof(double));
                if (!grown) {
                    snprintf(error, error_len, "out of memory at line %u", csv.line);
                    goto out;
                }
                c->columns[k] = grown;
            }
        }
        for (int k = 0; k < FRAME_COLUMN_COUNT; k++) {
            /* Empty GPU busy: a frame GPU timing sampled out (FRAMESCOPE_GPU_SAMPLE). */
            if (k == COLUMN_GPU_BUSY && !csv.fields[index[k]][0]) {
                c->columns[k][c->frame_rows] = NAN;
                continue;
            }
            if (!csv_number(&csv, index[k], frame_column_names[k],
                            &c->columns[k][c->frame_rows], error, error_len))
                goto out;
        }
        c->frame_rows++;
    }
    if (r < 0)
        goto out;
    if (c->frame_rows) {
        c->sorted_frame_ms = malloc(c->frame_rows * sizeof(double));
        if (!c->sorted_frame_ms) {
            snprintf(error, error_len, "out of memory");
            goto out;
        }
        memcpy(c->sorted_frame_ms, c->columns[COLUMN_FRAME], c->frame_rows * sizeof(double));
        qsort(c->sorted_frame_ms, c->frame_rows, sizeof(double), double_order);
    }
    ok = true;
out:
    free(csv.fields);
    return ok;
}

static int zone_order(const void *a, const void *b)
{
    const struct zone_total *x = a, *y = b;
    int by_thread = strcmp(x->thread, y->thread);
    return by_thread ? by_thread : strcmp(x->path, y->path);
}

const struct zone_total *capture_files_zone_find(const struct capture *c, const char *thread,
                                                 const char *path)
{
    struct zone_total key = { .thread = (char *)thread, .path = (char *)path };
    if (c->zone_count == 0)
        return NULL;
    return bsearch(&key, c->zones, c->zone_count, sizeof(key), zone_order);
}

/* Threads of one name (a pool's workers, several GPU queues' tracks) are one key: summed. */
static void zones_merge_same_key(struct capture *c)
{
    if (c->zone_count == 0)
        return; /* qsort takes no NULL array, even empty */
    qsort(c->zones, c->zone_count, sizeof(*c->zones), zone_order);
    size_t kept = 0;
    for (size_t i = 0; i < c->zone_count; i++) {
        if (kept && zone_order(&c->zones[kept - 1], &c->zones[i]) == 0) {
            c->zones[kept - 1].calls += c->zones[i].calls;
            c->zones[kept - 1].inclusive_ms += c->zones[i].inclusive_ms;
            free(c->zones[i].thread);
            free(c->zones[i].path);
        } else {
            c->zones[kept++] = c->zones[i];
        }
    }
    c->zone_count = kept;
}

/* A copy of text made printable (fscope_text_shown), to free; NULL when out of memory. */
static char *printable_copy(const char *text)
{
    size_t len = strlen(text);
    char *copy = malloc(4 * len + 1); /* "\xNN" for each byte at most */
    return copy ? fscope_text_shown(copy, 4 * len + 1, text, len) : NULL;
}

/* Reads zones.csv's totals from its text (len bytes and one writable byte after them; the text
 * is decoded in place). False with the reason in error. */
static bool zones_parse(struct capture *c, char *text, size_t len, char *error, size_t error_len)
{
    static const char *const names[] = { "thread", "path", "calls", "inclusive_ms" };
    struct csv csv = { 0 };
    int index[4];
    size_t capacity = 0;
    bool ok = false;
    if (!csv_start(&csv, text, len, names, 4, index, error, error_len))
        goto out;
    size_t header_count = csv.count;
    int r;
    while ((r = csv_record(&csv, header_count, error, error_len)) > 0) {
        if (c->zone_count == capacity) {
            capacity = capacity ? capacity * 2 : 64;
            struct zone_total *grown = realloc(c->zones, capacity * sizeof(*grown));
            if (!grown) {
                snprintf(error, error_len, "out of memory at line %u", csv.line);
                goto out;
            }
            c->zones = grown;
        }
        struct zone_total z = { 0 };
        if (!csv_number(&csv, index[2], names[2], &z.calls, error, error_len) ||
            !csv_number(&csv, index[3], names[3], &z.inclusive_ms, error, error_len))
            goto out;
        /* Names others chose (a game's zones and threads), printed by diff and compare. */
        z.thread = printable_copy(csv.fields[index[0]]);
        z.path = printable_copy(csv.fields[index[1]]);
        if (!z.thread || !z.path) {
            free(z.thread);
            free(z.path);
            snprintf(error, error_len, "out of memory at line %u", csv.line);
            goto out;
        }
        c->zones[c->zone_count++] = z;
    }
    if (r < 0)
        goto out;
    zones_merge_same_key(c);
    ok = true;
out:
    free(csv.fields);
    return ok;
}

/* ---- summary.json, read with jansson ---- */

static const char *json_kind(const json_t *value)
{
    switch (json_typeof(value)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: break;
    }
    return "null";
}

/* The value at path in root, members of nested objects joined by '.' ("frame_ms.p50"); NULL
 * when a part is absent or not an object. */
static json_t *summary_get(json_t *root, const char *path)
{
    json_t *value = root;
    while (value && *path) {
        char member[32]; /* our paths' parts are short */
        size_t len = strcspn(path, ".");
        snprintf(member, sizeof(member), "%.*s", (int)len, path);
        value = json_object_get(value, member);
        path += len + (path[len] == '.');
    }
    return value;
}

/* The number at path. False with the reason in error: absent, or not a number. */
static bool summary_number(json_t *root, const char *path, double *ret, char *error,
                           size_t error_len)
{
    json_t *value = summary_get(root, path);
    if (!value)
        snprintf(error, error_len, "\"%s\" is missing", path);
    else if (!json_is_number(value))
        snprintf(error, error_len, "\"%s\" is %s, not a number", path, json_kind(value));
    else
        *ret = json_number_value(value);
    return json_is_number(value);
}

/* The numbers of the object at path (budget_ms, verdict.shares) into ret (SUMMARY_KEYS_MAX at
 * most), their keys made printable (fscope_text_shown). False with the reason in error. */
static bool summary_keyed(json_t *root, const char *path, struct keyed_number *ret,
                          size_t *ret_count, char *error, size_t error_len)
{
    json_t *object = summary_get(root, path);
    if (!object) {
        snprintf(error, error_len, "\"%s\" is missing", path);
        return false;
    }
    if (!json_is_object(object)) {
        snprintf(error, error_len, "\"%s\" is %s, not an object", path, json_kind(object));
        return false;
    }
    if (json_object_size(object) > SUMMARY_KEYS_MAX) {
        snprintf(error, error_len, "\"%s\" has %zu members, more than the %d a framescope "
                 "summary's has room for", path, json_object_size(object), SUMMARY_KEYS_MAX);
        return false;
    }
    size_t count = 0;
    const char *key;
    json_t *value;
    json_object_foreach(object, key, value) {
        /* Made printable, a key is at least as long as it was. */
        char shown[4 * SUMMARY_KEY_MAX + 1];
        size_t key_len = strlen(key);
        if (key_len > SUMMARY_KEY_MAX ||
            strlen(fscope_text_shown(shown, sizeof(shown), key, key_len)) > SUMMARY_KEY_MAX) {
            snprintf(error, error_len, "\"%s\" has a member name of %zu bytes, longer than a "
                     "framescope summary's", path, key_len);
            return false;
        }
        if (!json_is_number(value)) {
            snprintf(error, error_len, "\"%s.%s\" is %s, not a number", path, shown,
                     json_kind(value));
            return false;
        }
        memcpy(ret[count].key, shown, strlen(shown) + 1);
        ret[count++].value = json_number_value(value);
    }
    *ret_count = count;
    return true;
}

/* hitches.all's frame numbers into c->hitch_frames; none when absent (a capture made before
 * they were listed). False with the reason in error when it is there and malformed, or out
 * of memory. */
static bool summary_hitch_frames(struct capture *c, json_t *root, char *error, size_t error_len)
{
    json_t *all = summary_get(root, "hitches.all");
    if (!all)
        return true;
    if (!json_is_array(all)) {
        snprintf(error, error_len, "\"hitches.all\" is %s, not an array", json_kind(all));
        return false;
    }
    size_t count = json_array_size(all);
    c->hitch_frames = count ? malloc(count * sizeof(*c->hitch_frames)) : NULL;
    if (count && !c->hitch_frames) {
        snprintf(error, error_len, "out of memory");
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        json_t *frame = json_object_get(json_array_get(all, i), "frame");
        if (!json_is_number(frame)) {
            snprintf(error, error_len, "\"hitches.all\" item %zu has no frame number", i);
            return false;
        }
        c->hitch_frames[i] = json_number_value(frame);
    }
    c->hitch_frame_count = count;
    return true;
}

/* Reads what diff and compare take from summary.json's text (len bytes) into c. False with the
 * reason in error. */
static bool summary_parse(struct capture *c, const char *text, size_t len, char *error,
                          size_t error_len)
{
    /* Numbers are doubles however they are written (an integer past int64 too), as our writer
     * means them; a member given twice makes a file that reads two ways, refused; so is a NUL
     * in a string (no JSON_ALLOW_NUL) and a top that is not an object or array (no
     * JSON_DECODE_ANY). jansson bounds nesting itself (JSON_PARSER_MAX_DEPTH, 2048 levels in
     * Debian's build) and the paths read here are two deep at most. */
    json_error_t json_error;
    json_t *root = json_loadb(text, len, JSON_DECODE_INT_AS_REAL | JSON_REJECT_DUPLICATES,
                             &json_error);
    if (!root) {
        /* The message quotes the file ("near '...'"): made printable, and cut where a hostile
         * quote would make it long. */
        char shown[256];
        fscope_text_shown(shown, sizeof(shown), json_error.text, sizeof(json_error.text));
        enum json_error_code code = json_error_code(&json_error);
        snprintf(error, error_len, "line %d, column %d: %s%s", json_error.line,
                 json_error.column,
                 code == json_error_stack_overflow ? "nested too deeply: "
                 : code == json_error_null_character ? "a NUL in a string: " : "", shown);
        return false;
    }
    bool ok = false;
    json_t *schema = json_object_get(root, "schema");
    if (!json_is_string(schema) ||
        strcmp(json_string_value(schema), "framescope-summary-1") != 0) {
        snprintf(error, error_len, "not a framescope summary (schema framescope-summary-1 "
                 "expected)");
        goto out;
    }
    json_t *app = json_object_get(root, "app");
    if (app && !json_is_string(app)) {
        snprintf(error, error_len, "\"app\" is %s, not a string", json_kind(app));
        goto out;
    }
    if (app)
        fscope_text_shown(c->app, sizeof(c->app), json_string_value(app), json_string_length(app));
    else
        snprintf(c->app, sizeof(c->app), "?");
    if (!summary_number(root, "frames", &c->frames, error, error_len) ||
        !summary_number(root, "fps", &c->fps, error, error_len))
        goto out;
    if (c->frames < 0) {
        snprintf(error, error_len, "\"frames\" is %g, not a frame count", c->frames);
        goto out;
    }
    for (int s = 0; s < FRAME_STAT_COUNT; s++) {
        char path[32];
        snprintf(path, sizeof(path), "frame_ms.%s", frame_stats[s].key);
        if (!summary_number(root, path, &c->frame_ms[s], error, error_len))
            goto out;
    }
    if (!summary_keyed(root, "budget_ms", c->budget, &c->budget_count, error, error_len) ||
        !summary_keyed(root, "verdict.shares", c->shares, &c->share_count, error, error_len))
        goto out;
    c->has_hitches = summary_get(root, "hitches") != NULL;
    if (c->has_hitches &&
        (!summary_number(root, "hitches.count", &c->hitch_count, error, error_len) ||
         !summary_keyed(root, "hitches.causes_ms", c->hitch_causes, &c->hitch_cause_count,
                        error, error_len)))
        goto out;
    if (c->has_hitches && !summary_hitch_frames(c, root, error, error_len))
        goto out;
    ok = true;
out:
    json_decref(root);
    return ok;
}

/* ---- captures ---- */

static const struct {
    size_t bytes;
    const char *why; /* ends "N bytes, more than the MAX ..." */
} capture_file_max[CAPTURE_FILE_COUNT] = {
    { SUMMARY_MAX_BYTES, "a framescope summary can hold" },
    { CSV_MAX_BYTES, "diff and compare read of a frames.csv (1 GiB, about 2.5 million frames)" },
    { CSV_MAX_BYTES, "diff and compare read of a zones.csv (1 GiB)" },
};

void capture_files_finish(struct capture *c)
{
    for (int k = 0; k < FRAME_COLUMN_COUNT; k++)
        free(c->columns[k]);
    free(c->sorted_frame_ms);
    for (size_t i = 0; i < c->zone_count; i++) {
        free(c->zones[i].thread);
        free(c->zones[i].path);
    }
    free(c->zones);
    free(c->hitch_frames);
    memset(c, 0, sizeof(*c));
}

/* Reads one file of a capture from its text: len bytes and one writable byte after them (a
 * CSV file is decoded in place). False with the reason in error. */
bool capture_files_parse(struct capture *c, enum capture_file file, char *text, size_t len,
                          char *error, size_t error_len)
{
    switch (file) {
    case FILE_SUMMARY: return summary_parse(c, text, len, error, error_len);
    case FILE_FRAMES: return frames_parse(c, text, len, error, error_len);
    case FILE_ZONES: return zones_parse(c, text, len, error, error_len);
    case CAPTURE_FILE_COUNT: break;
    }
    return false;
}

/* Loads the capture in dir. False after one line on stderr naming the file and the fault. */
bool capture_files_load(struct capture *c, const char *dir)
{
    char path[PATH_MAX + 32], shown[4 * (PATH_MAX + 32)], error[ERROR_LEN] = "";
    *c = (struct capture){ .dir = dir };
    struct stat st;
    const char *why = stat(dir, &st) != 0 ? (errno == ENOENT ? "no such capture directory"
                                                              : strerror(errno))
                      : !S_ISDIR(st.st_mode) ? "not a directory"
                                             : NULL;
    if (why) {
        fprintf(stderr, "framescope: %s: %s\n",
                capture_files_shown_path(dir, shown, sizeof(shown)), why);
        return false;
    }
    for (int f = 0; f < CAPTURE_FILE_COUNT; f++) {
        snprintf(path, sizeof(path), "%s/%s", dir, capture_file_names[f]);
        char *text;
        size_t len;
        if (!read_file(path, capture_file_max[f].bytes, capture_file_max[f].why, &text, &len,
                       error, sizeof(error)))
            goto error_file;
        bool parsed = capture_files_parse(c, (enum capture_file)f, text, len, error, sizeof(error));
        free(text);
        if (!parsed)
            goto error_file;
    }
    return true;

error_file:
    fprintf(stderr, "framescope: %s: %s\n",
            capture_files_shown_path(path, shown, sizeof(shown)), error);
    capture_files_finish(c);
    return false;
}

