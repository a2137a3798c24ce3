/* framescope diff and framescope compare. See compare.h.
 *
 * Both read captures (summary.json, frames.csv, zones.csv) into rows: one per summary metric
 * and two per zone (calls per frame, mean ms), keyed by name, and zones by thread name and
 * path, never by position: between two runs the tree changes shape, and a positional key would
 * set one scope against another. */
#include "compare.h"

#include "child.h"
#include "cli.h"
#include "commands.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "util/config.h"
#include "util/text.h"

extern char **environ;

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
#define ERROR_LEN 512

/* A row's name holds "verdict.shares." and a key of summary.json's budget_ms or verdict.shares;
 * ours are at most 12 bytes ("present_wait"). */
#define ROW_NAME_LEN 64
#define SUMMARY_KEY_MAX (ROW_NAME_LEN - sizeof("verdict.shares."))
/* Keys of one of those objects: ours has 10 (budget_ms). The bound keeps a hostile file from
 * making the rows' name lookup quadratic. */
#define SUMMARY_KEYS_MAX 64
/* The app's name as diff prints it: a process name or an executable's, far shorter. */
#define APP_SHOWN_LEN 256

enum direction { LOWER_IS_BETTER, HIGHER_IS_BETTER, NO_DIRECTION };

/* The per-frame columns of frames.csv that a summary metric is the mean of. */
enum frame_column {
    COLUMN_FRAME, COLUMN_CPU, COLUMN_GPU_BUSY, COLUMN_ACQUIRE, COLUMN_PRESENT,
    COLUMN_PRESENT_WAIT, COLUMN_FENCE, COLUMN_SEMAPHORE, COLUMN_IDLE, COLUMN_CAP,
    FRAME_COLUMN_COUNT
};
static const char *const frame_column_names[FRAME_COLUMN_COUNT] = {
    "frame_ms", "cpu_ms", "gpu_busy_ms", "acquire_ms", "present_ms", "present_wait_ms",
    "fence_ms", "semaphore_ms", "idle_ms", "cap_ms",
};

struct zone_total {
    char *thread, *path;
    double calls, inclusive_ms;
};

/* A number of budget_ms or verdict.shares, its key made printable. */
struct keyed_number {
    char key[SUMMARY_KEY_MAX + 1];
    double value;
};

/* The frame_ms statistics of summary.json, in the order of the rows. */
#define FRAME_STAT_COUNT 5
static const struct {
    const char *key;
    double quantile; /* -1: the mean; 1: the maximum */
} frame_stats[FRAME_STAT_COUNT] = {
    { "mean", -1 }, { "p50", 0.50 }, { "p95", 0.95 }, { "p99", 0.99 }, { "max", 1 },
};

/* What diff and compare take from a capture: summary.json's numbers and the frames.csv and
 * zones.csv they are weighed with. Text from the files is made printable where it is read. */
struct capture {
    const char *dir; /* names the capture in messages */
    char app[APP_SHOWN_LEN];
    double frames; /* summary.json's count, for calls per frame */
    double fps;
    double frame_ms[FRAME_STAT_COUNT];
    struct keyed_number budget[SUMMARY_KEYS_MAX], shares[SUMMARY_KEYS_MAX];
    size_t budget_count, share_count;
    size_t frame_rows;
    double *columns[FRAME_COLUMN_COUNT]; /* frame_rows values each */
    double *sorted_frame_ms;
    struct zone_total *zones; /* sorted by thread, then path; one entry per key */
    size_t zone_count;
    /* Its hitches (absent from captures made before they were counted). */
    bool has_hitches;
    double hitch_count;
    struct keyed_number hitch_causes[SUMMARY_KEYS_MAX];
    size_t hitch_cause_count;
};

/* One line of the comparison, with a value per capture. */
struct row {
    char name[ROW_NAME_LEN];
    const char *thread, *path; /* a zone's key (owned by a capture); NULL for a summary metric */
    enum direction direction;
    bool present[3];
    double value[3];
    /* Half the width of each side's ~95% interval for the value (2 standard errors for a
     * mean); NAN where there is none, and no_noise_why says why. */
    double noise[3];
    const char *no_noise_why;
};

struct rows {
    struct row *items;
    size_t count, capacity;
};

/* ---- files ---- */

/* path for a message: control characters escaped, never cut (the file name is at its end). */
static const char *shown_path(const char *path, char *buf, size_t len)
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
    ok = true;
out:
    json_decref(root);
    return ok;
}

/* ---- captures ---- */

enum capture_file { FILE_SUMMARY, FILE_FRAMES, FILE_ZONES, CAPTURE_FILE_COUNT };
static const char *const capture_file_names[CAPTURE_FILE_COUNT] = {
    "summary.json", "frames.csv", "zones.csv",
};
static const struct {
    size_t bytes;
    const char *why; /* ends "N bytes, more than the MAX ..." */
} capture_file_max[CAPTURE_FILE_COUNT] = {
    { SUMMARY_MAX_BYTES, "a framescope summary can hold" },
    { CSV_MAX_BYTES, "diff and compare read of a frames.csv (1 GiB, about 2.5 million frames)" },
    { CSV_MAX_BYTES, "diff and compare read of a zones.csv (1 GiB)" },
};

static void capture_finish(struct capture *c)
{
    for (int k = 0; k < FRAME_COLUMN_COUNT; k++)
        free(c->columns[k]);
    free(c->sorted_frame_ms);
    for (size_t i = 0; i < c->zone_count; i++) {
        free(c->zones[i].thread);
        free(c->zones[i].path);
    }
    free(c->zones);
    memset(c, 0, sizeof(*c));
}

/* Reads one file of a capture from its text: len bytes and one writable byte after them (a
 * CSV file is decoded in place). False with the reason in error. */
static bool capture_parse(struct capture *c, enum capture_file file, char *text, size_t len,
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
static bool capture_load(struct capture *c, const char *dir)
{
    char path[PATH_MAX + 32], shown[4 * (PATH_MAX + 32)], error[ERROR_LEN] = "";
    *c = (struct capture){ .dir = dir };
    struct stat st;
    const char *why = stat(dir, &st) != 0 ? (errno == ENOENT ? "no such capture directory"
                                                              : strerror(errno))
                      : !S_ISDIR(st.st_mode) ? "not a directory"
                                             : NULL;
    if (why) {
        fprintf(stderr, "framescope: %s: %s\n", shown_path(dir, shown, sizeof(shown)), why);
        return false;
    }
    for (int f = 0; f < CAPTURE_FILE_COUNT; f++) {
        snprintf(path, sizeof(path), "%s/%s", dir, capture_file_names[f]);
        char *text;
        size_t len;
        if (!read_file(path, capture_file_max[f].bytes, capture_file_max[f].why, &text, &len,
                       error, sizeof(error)))
            goto error_file;
        bool parsed = capture_parse(c, (enum capture_file)f, text, len, error, sizeof(error));
        free(text);
        if (!parsed)
            goto error_file;
    }
    return true;

error_file:
    fprintf(stderr, "framescope: %s: %s\n", shown_path(path, shown, sizeof(shown)), error);
    capture_finish(c);
    return false;
}

/* ---- noise ---- */

/* Twice the standard error of a column's mean: sample standard deviation / sqrt(n). It takes
 * frames as independent; consecutive frames are correlated (a slow stretch lasts), so this is
 * the least noise there can be, and a difference it flags is worth a second run. */
/* Of the values that are known: a frame GPU timing sampled out has no GPU busy (NAN). */
static double mean_noise(const double *values, size_t count)
{
    double sum = 0, sum_sq = 0;
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (!isnan(values[i])) {
            sum += values[i];
            n++;
        }
    if (n < 2)
        return NAN;
    double mean = sum / (double)n;
    for (size_t i = 0; i < count; i++)
        if (!isnan(values[i]))
            sum_sq += (values[i] - mean) * (values[i] - mean);
    return 2 * sqrt(sum_sq / (double)(n - 1) / (double)n);
}

/*
 * Half the width of a distribution-free ~95% interval for the q-quantile, from order
 * statistics, without a bootstrap: the number of frames at or below the true quantile is
 * Binomial(n, q), so the ranks n*q -/+ 2*sqrt(n*q*(1-q)) bracket it about 95% of the time, and
 * the frame times at those ranks bracket the quantile whatever the shape of the distribution.
 * The width then reflects how sparse the frames are around that percentile, which a mean's
 * standard error cannot. When a rank falls outside 1..n (p99 of fewer than about 400 frames)
 * there are too few frames to bound it, and no estimate is given.
 */
static double quantile_noise(const double *sorted, size_t n, double q)
{
    double center = (double)n * q, spread = 2 * sqrt((double)n * q * (1 - q));
    double low_rank = floor(center - spread), high_rank = ceil(center + spread);
    if (n < 2 || low_rank < 1 || high_rank > (double)n)
        return NAN;
    return (sorted[(size_t)high_rank - 1] - sorted[(size_t)low_rank - 1]) / 2;
}

/* ---- rows ---- */

static struct row *rows_add(struct rows *rows, const char *name, enum direction direction)
{
    if (rows->count == rows->capacity) {
        size_t grown = rows->capacity ? rows->capacity * 2 : 64;
        struct row *items = realloc(rows->items, grown * sizeof(*items));
        if (!items)
            return NULL;
        rows->items = items;
        rows->capacity = grown;
    }
    struct row *row = &rows->items[rows->count++];
    *row = (struct row){ .direction = direction };
    snprintf(row->name, sizeof(row->name), "%s", name);
    for (int i = 0; i < 3; i++)
        row->noise[i] = NAN;
    return row;
}

/* The number of key in a capture's budget_ms or verdict.shares, or NULL. */
static const struct keyed_number *keyed_find(const struct capture *c, bool shares,
                                             const char *key)
{
    const struct keyed_number *numbers = shares ? c->shares : c->budget;
    size_t count = shares ? c->share_count : c->budget_count;
    for (size_t i = 0; i < count; i++)
        if (strcmp(numbers[i].key, key) == 0)
            return &numbers[i];
    return NULL;
}

/* The frames.csv column whose mean a budget_ms entry is; -1 for other_wait, the sum of two. */
static int budget_column(const char *key)
{
    static const struct { const char *key; enum frame_column column; } map[] = {
        { "cpu", COLUMN_CPU }, { "gpu_busy", COLUMN_GPU_BUSY }, { "acquire", COLUMN_ACQUIRE },
        { "present", COLUMN_PRESENT }, { "present_wait", COLUMN_PRESENT_WAIT },
        { "fence", COLUMN_FENCE }, { "semaphore", COLUMN_SEMAPHORE }, { "idle", COLUMN_IDLE },
        { "cap", COLUMN_CAP },
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(map[i].key, key) == 0)
            return (int)map[i].column;
    return strcmp(key, "other_wait") == 0 ? -1 : -2;
}

/* Adds the rows of budget_ms, or of verdict.shares: every key any capture has; a key one
 * capture lacks makes its summary malformed. False after one line on err. */
static bool add_keyed_rows(struct rows *rows, const struct capture *caps, int cap_count,
                           bool shares, FILE *err)
{
    const char *object = shares ? "verdict.shares" : "budget_ms";
    for (int owner = 0; owner < cap_count; owner++) {
        const struct keyed_number *keys = shares ? caps[owner].shares : caps[owner].budget;
        size_t key_count = shares ? caps[owner].share_count : caps[owner].budget_count;
        for (size_t k = 0; k < key_count; k++) {
            const char *key = keys[k].key;
            char name[ROW_NAME_LEN];
            snprintf(name, sizeof(name), "%s.%s", object, key);
            bool seen = false;
            for (size_t r = 0; r < rows->count && !seen; r++)
                seen = strcmp(rows->items[r].name, name) == 0;
            if (seen)
                continue;
            /* Less CPU work or GPU work per frame is better; a wait or a verdict's share has
             * no direction (less CPU work shows up as more time waiting for the display). */
            enum direction direction = !shares && (strcmp(key, "cpu") == 0 ||
                                                   strcmp(key, "gpu_busy") == 0)
                                           ? LOWER_IS_BETTER : NO_DIRECTION;
            struct row *row = rows_add(rows, name, direction);
            if (!row) {
                fprintf(err, "framescope: out of memory\n");
                return false;
            }
            for (int i = 0; i < cap_count; i++) {
                const struct capture *c = &caps[i];
                const struct keyed_number *found = keyed_find(c, shares, key);
                if (!found) {
                    char path[PATH_MAX + 32], shown[4 * (PATH_MAX + 32)];
                    snprintf(path, sizeof(path), "%s/summary.json", c->dir);
                    fprintf(err, "framescope: %s: no number at %s\n",
                            shown_path(path, shown, sizeof(shown)), name);
                    return false;
                }
                row->value[i] = found->value;
                row->present[i] = true;
                size_t n = c->frame_rows;
                if (shares) {
                    double p = row->value[i];
                    if (n > 0 && p >= 0 && p <= 1)
                        row->noise[i] = 2 * sqrt(p * (1 - p) / (double)n);
                    else
                        row->no_noise_why = "no frames";
                    continue;
                }
                int column = budget_column(key);
                if (column >= 0) {
                    row->noise[i] = mean_noise(c->columns[column], n);
                } else if (column == -1 && n) {
                    double *sum = malloc(n * sizeof(double));
                    if (!sum) {
                        fprintf(err, "framescope: out of memory\n");
                        return false;
                    }
                    for (size_t f = 0; f < n; f++)
                        sum[f] = c->columns[COLUMN_SEMAPHORE][f] + c->columns[COLUMN_IDLE][f];
                    row->noise[i] = mean_noise(sum, n);
                    free(sum);
                } else {
                    row->no_noise_why = "no per-frame column for it";
                }
                if (isnan(row->noise[i]) && !row->no_noise_why)
                    row->no_noise_why = "fewer than 2 frames";
            }
        }
    }
    return true;
}

static const struct zone_total *zone_find(const struct capture *c, const char *thread,
                                          const char *path)
{
    struct zone_total key = { .thread = (char *)thread, .path = (char *)path };
    if (c->zone_count == 0)
        return NULL;
    return bsearch(&key, c->zones, c->zone_count, sizeof(key), zone_order);
}

/* Two rows per zone of any capture: calls per frame and mean ms, with no noise estimate:
 * zones.csv holds one total per zone, not one per frame, so there is no spread to read. */
static bool add_zone_rows(struct rows *rows, const struct capture *caps, int cap_count)
{
    for (int owner = 0; owner < cap_count; owner++) {
        for (size_t z = 0; z < caps[owner].zone_count; z++) {
            const struct zone_total *zone = &caps[owner].zones[z];
            bool earlier = false;
            for (int i = 0; i < owner && !earlier; i++)
                earlier = zone_find(&caps[i], zone->thread, zone->path) != NULL;
            if (earlier)
                continue;
            struct row *calls = rows_add(rows, "calls/frame", NO_DIRECTION);
            struct row *mean = calls ? rows_add(rows, "mean_ms", NO_DIRECTION) : NULL;
            if (!mean)
                return false;
            calls = mean - 1; /* rows_add may have moved the array */
            for (int i = 0; i < cap_count; i++) {
                const struct zone_total *found = zone_find(&caps[i], zone->thread, zone->path);
                calls->present[i] = mean->present[i] = found != NULL;
                if (!found)
                    continue;
                calls->value[i] = caps[i].frames > 0 ? found->calls / caps[i].frames : NAN;
                mean->value[i] = found->calls > 0 ? found->inclusive_ms / found->calls : NAN;
            }
            calls->thread = mean->thread = zone->thread;
            calls->path = mean->path = zone->path;
            calls->no_noise_why = mean->no_noise_why = "zones.csv holds totals, not frames";
        }
    }
    return true;
}

/* The hitch count and each cause's excess, where every capture has them (a capture made
 * before hitches were counted has none: no rows rather than rows half empty). Fewer is
 * better; a count's noise is a Poisson count's (2 sqrt(n)), an excess in ms has none. False
 * when out of memory. */
static bool add_hitch_rows(struct rows *rows, const struct capture *caps, int cap_count)
{
    for (int i = 0; i < cap_count; i++)
        if (!caps[i].has_hitches)
            return true;
    struct row *row = rows_add(rows, "hitches.count", LOWER_IS_BETTER);
    if (!row)
        return false;
    for (int i = 0; i < cap_count; i++) {
        row->value[i] = caps[i].hitch_count;
        row->present[i] = true;
        row->noise[i] = 2 * sqrt(caps[i].hitch_count > 1 ? caps[i].hitch_count : 1);
    }
    for (size_t k = 0; k < caps[0].hitch_cause_count; k++) {
        char name[ROW_NAME_LEN];
        snprintf(name, sizeof(name), "hitches.causes_ms.%s", caps[0].hitch_causes[k].key);
        bool everywhere = true;
        double values[3] = { 0 };
        for (int i = 0; i < cap_count && everywhere; i++) {
            everywhere = false;
            for (size_t j = 0; j < caps[i].hitch_cause_count; j++)
                if (strcmp(caps[i].hitch_causes[j].key, caps[0].hitch_causes[k].key) == 0) {
                    values[i] = caps[i].hitch_causes[j].value;
                    everywhere = true;
                }
        }
        if (!everywhere)
            continue;
        if (!(row = rows_add(rows, name, LOWER_IS_BETTER)))
            return false;
        row->no_noise_why = "a hitch's excess is one event, not a distribution";
        for (int i = 0; i < cap_count; i++) {
            row->value[i] = values[i];
            row->present[i] = true;
        }
    }
    return true;
}

/* Every row for cap_count captures. False after one line on err. */
static bool rows_build(struct rows *rows, const struct capture *caps, int cap_count, FILE *err)
{
    struct row *row = rows_add(rows, "fps", HIGHER_IS_BETTER);
    if (!row)
        goto error_memory;
    for (int i = 0; i < cap_count; i++) {
        const struct capture *c = &caps[i];
        row->value[i] = c->fps;
        row->present[i] = true;
        /* fps is frames over their summed time, 1000 / the mean frame time: a relative error
         * in the mean is the same relative error in fps (to first order). */
        double mean_ms = 0;
        for (size_t f = 0; f < c->frame_rows; f++)
            mean_ms += c->columns[COLUMN_FRAME][f] / (double)c->frame_rows;
        if (mean_ms > 0)
            row->noise[i] = row->value[i] * mean_noise(c->columns[COLUMN_FRAME],
                                                       c->frame_rows) / mean_ms;
        if (isnan(row->noise[i]))
            row->no_noise_why = "fewer than 2 frames";
    }
    for (int s = 0; s < FRAME_STAT_COUNT; s++) {
        char name[ROW_NAME_LEN];
        snprintf(name, sizeof(name), "frame_ms.%s", frame_stats[s].key);
        if (!(row = rows_add(rows, name, LOWER_IS_BETTER)))
            goto error_memory;
        for (int i = 0; i < cap_count; i++) {
            const struct capture *c = &caps[i];
            row->value[i] = c->frame_ms[s];
            row->present[i] = true;
            double q = frame_stats[s].quantile;
            if (q < 0)
                row->noise[i] = mean_noise(c->columns[COLUMN_FRAME], c->frame_rows);
            else if (q < 1)
                row->noise[i] = quantile_noise(c->sorted_frame_ms, c->frame_rows, q);
        }
        if (frame_stats[s].quantile >= 1)
            row->no_noise_why = "a maximum has no distribution-free interval";
        else if (frame_stats[s].quantile > 0)
            row->no_noise_why = "too few frames for an order-statistic interval";
        else
            row->no_noise_why = "fewer than 2 frames";
    }
    if (!add_keyed_rows(rows, caps, cap_count, false, err) ||
        !add_keyed_rows(rows, caps, cap_count, true, err))
        return false;
    if (!add_zone_rows(rows, caps, cap_count) || !add_hitch_rows(rows, caps, cap_count))
        goto error_memory;
    return true;

error_memory:
    fprintf(err, "framescope: out of memory\n");
    return false;
}

/* ---- output ---- */

static const char *direction_name(enum direction direction)
{
    return direction == LOWER_IS_BETTER    ? "lower-is-better"
           : direction == HIGHER_IS_BETTER ? "higher-is-better"
                                           : "none";
}

/* What a change beyond the noise or the drift means: better, worse, or for a metric with no
 * direction, higher or lower. */
static const char *change_name(enum direction direction, double change)
{
    if (direction == NO_DIRECTION)
        return change > 0 ? "higher" : "lower";
    return (change < 0) == (direction == LOWER_IS_BETTER) ? "better" : "worse";
}

static void print_number(FILE *out, double value)
{
    if (isfinite(value))
        fprintf(out, "%.9g", value);
    else
        fputs("null", out);
}

static void print_cell(FILE *out, double value, bool present)
{
    if (present && isfinite(value))
        fprintf(out, " %12.4f", value);
    else
        fprintf(out, " %12s", present ? "-" : "absent");
}

/* text as a JSON string. Text that is not UTF-8 (a path from the command line), which jansson
 * refuses, goes as its printable form (util/text.h), which is. */
static void print_json_string(FILE *out, const char *text)
{
    json_t *string = json_string(text);
    if (!string) {
        size_t len = strlen(text);
        char *shown = malloc(4 * len + 1);
        if (shown)
            string = json_string(fscope_text_printable(shown, 4 * len + 1, text, len));
        free(shown);
    }
    if (!string || json_dumpf(string, out, JSON_ENCODE_ANY) != 0)
        fputs("null", out); /* out of memory */
    json_decref(string);
}

/* Zone rows come in pairs under one heading; returns whether this row starts a new zone. */
static bool zone_heading(const struct row *rows, size_t i)
{
    return rows[i].thread && (i == 0 || rows[i - 1].thread != rows[i].thread ||
                              rows[i - 1].path != rows[i].path);
}

struct diff_result {
    double difference, threshold;
    bool has_threshold, exceeds;
};

/* The difference B - A and whether it exceeds 2 * sqrt(seA^2 + seB^2), i.e. the two sides'
 * 2-standard-error half-widths added in quadrature. */
static struct diff_result diff_row(const struct row *row)
{
    struct diff_result d = { .difference = row->value[1] - row->value[0] };
    d.has_threshold = !isnan(row->noise[0]) && !isnan(row->noise[1]);
    if (d.has_threshold) {
        d.threshold = sqrt(row->noise[0] * row->noise[0] + row->noise[1] * row->noise[1]);
        d.exceeds = fabs(d.difference) > d.threshold;
    }
    return d;
}

static void print_diff_text(FILE *out, const struct rows *rows, const struct capture *caps)
{
    char shown[4 * PATH_MAX];
    fputs("framescope diff\n", out);
    for (int i = 0; i < 2; i++)
        fprintf(out, "  %c  %s: %s, %.0f frames\n", 'A' + i,
                shown_path(caps[i].dir, shown, sizeof(shown)), caps[i].app, caps[i].frames);
    fputs("  noise: a difference counts when it exceeds 2*sqrt(seA^2 + seB^2), the standard "
          "errors from frames.csv\n\n", out);
    fprintf(out, "%-24s %12s %12s %12s %12s\n", "metric", "A", "B", "B - A", "noise");
    bool zones_started = false;
    for (size_t i = 0; i < rows->count; i++) {
        const struct row *row = &rows->items[i];
        if (row->thread && !(row->present[0] && row->present[1]))
            continue; /* listed as added or removed below */
        if (zone_heading(rows->items, i)) {
            if (!zones_started)
                fputs("\nzones (thread / path): no noise estimate, zones.csv holds totals, "
                      "not frames\n", out);
            zones_started = true;
            fprintf(out, "%s / %s\n", row->thread, row->path);
        }
        struct diff_result d = diff_row(row);
        fprintf(out, row->thread ? "  %-22s" : "%-24s", row->name);
        print_cell(out, row->value[0], true);
        print_cell(out, row->value[1], true);
        if (isfinite(d.difference))
            fprintf(out, " %+12.4f", d.difference);
        else
            fprintf(out, " %12s", "-");
        if (!d.has_threshold && row->thread)
            fprintf(out, " %12s  no noise estimate\n", "-");
        else if (!d.has_threshold)
            fprintf(out, " %12s  no noise estimate (%s)\n", "-", row->no_noise_why);
        else if (d.exceeds)
            fprintf(out, " %12.4f  beyond noise: %s\n", d.threshold,
                    change_name(row->direction, d.difference));
        else
            fprintf(out, " %12.4f  within noise\n", d.threshold);
    }
    for (int side = 0; side < 2; side++) {
        for (size_t i = 0; i < rows->count; i++) {
            const struct row *row = &rows->items[i];
            if (!zone_heading(rows->items, i) || row->present[0] == row->present[1] ||
                row->present[1] != (side == 0))
                continue;
            const struct row *mean = row + 1;
            int present = row->present[0] ? 0 : 1;
            fprintf(out, "%s in B: %s / %s (calls/frame %.4f, mean_ms %.4f)\n",
                    side == 0 ? "added" : "removed", row->thread, row->path,
                    row->value[present], mean->value[present]);
        }
    }
}

static void print_row_key(FILE *out, const struct row *row)
{
    fputs("{\"name\": ", out);
    print_json_string(out, row->name);
    if (row->thread) {
        fputs(", \"thread\": ", out);
        print_json_string(out, row->thread);
        fputs(", \"path\": ", out);
        print_json_string(out, row->path);
    }
    fprintf(out, ", \"direction\": \"%s\"", direction_name(row->direction));
}

static void print_diff_json(FILE *out, const struct rows *rows, const struct capture *caps)
{
    fputs("{\"schema\": \"framescope-diff-1\", \"a\": ", out);
    print_json_string(out, caps[0].dir);
    fputs(", \"b\": ", out);
    print_json_string(out, caps[1].dir);
    fputs(",\n \"rows\": [", out);
    for (size_t i = 0; i < rows->count; i++) {
        const struct row *row = &rows->items[i];
        fprintf(out, "%s\n  ", i ? "," : "");
        print_row_key(out, row);
        const char *status = row->present[0] && row->present[1] ? "both"
                             : row->present[1]                   ? "added"
                                                                 : "removed";
        fprintf(out, ", \"status\": \"%s\", \"a\": ", status);
        print_number(out, row->present[0] ? row->value[0] : NAN);
        fputs(", \"b\": ", out);
        print_number(out, row->present[1] ? row->value[1] : NAN);
        struct diff_result d = diff_row(row);
        fputs(", \"difference\": ", out);
        print_number(out, row->present[0] && row->present[1] ? d.difference : NAN);
        fputs(", \"noise\": ", out);
        print_number(out, d.has_threshold ? d.threshold : NAN);
        if (d.has_threshold) {
            fprintf(out, ", \"exceeds_noise\": %s", d.exceeds ? "true" : "false");
            fputs(", \"change\": ", out);
            if (d.exceeds)
                fprintf(out, "\"%s\"", change_name(row->direction, d.difference));
            else
                fputs("null", out);
        } else {
            fputs(", \"exceeds_noise\": null, \"change\": null, \"no_noise_why\": ", out);
            print_json_string(out, row->no_noise_why);
        }
        fputs("}", out);
    }
    fputs("\n ]}\n", out);
}

/* diff's table of caps[0] (A) against caps[1] (B) on out. Returns 0, or 2 after one line on
 * err. */
static int write_diff(const struct capture caps[2], bool json, FILE *out, FILE *err)
{
    struct rows rows = { 0 };
    int status = 2;
    if (rows_build(&rows, caps, 2, err)) {
        if (json)
            print_diff_json(out, &rows, caps);
        else
            print_diff_text(out, &rows, caps);
        status = 0;
    }
    free(rows.items);
    return status;
}

int cmd_diff(int argc, char **argv)
{
    static const struct option options[] = {
        { "format", required_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    bool json = false;
    int opt;
    opterr = 0; /* one line of ours instead of getopt's and the usage */
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (opt) {
        case 'f':
            if (!cli_parse_format(optarg, &json)) {
                cli_bad_format(optarg);
                return 2;
            }
            break;
        case 'h':
            printf("usage: framescope diff [--format text|json] A B\n");
            return 0;
        default:
            cli_unknown_option(argv[optind - 1]);
            return 2;
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "framescope: diff takes two capture directories, A and B (got %d)\n",
                argc - optind);
        return 2;
    }
    struct capture caps[2];
    if (!capture_load(&caps[0], argv[optind]))
        return 2;
    if (!capture_load(&caps[1], argv[optind + 1])) {
        capture_finish(&caps[0]);
        return 2;
    }
    int status = write_diff(caps, json, stdout, stderr);
    capture_finish(&caps[1]);
    capture_finish(&caps[0]);
    return status;
}

/* ---- compare: A1, X, A2 ---- */

/* A configuration's environment changes: at most this many, a bound that only exists so the
 * changes fit one array; a comparison varies one or two. */
#define MAX_ENV_CHANGES 64

struct variant {
    const char *text; /* as given, for the report */
    char *storage;    /* a copy of text, cut into the assignments */
    char *assignments[MAX_ENV_CHANGES];
    size_t count;
};

/* Parses 'VAR=VALUE ...' (whitespace between assignments; a value holds no whitespace).
 * False after one line on stderr. */
static bool variant_parse(struct variant *v, const char *flag, const char *text)
{
    char shown[FSCOPE_ESCAPE_SIZE];
    free(v->storage);
    *v = (struct variant){ .text = text, .storage = strdup(text) };
    if (!v->storage) {
        fprintf(stderr, "framescope: out of memory\n");
        return false;
    }
    char *save = NULL;
    for (char *word = strtok_r(v->storage, " \t\n", &save); word;
         word = strtok_r(NULL, " \t\n", &save)) {
        char *equals = strchr(word, '=');
        bool valid = equals && equals > word && !(*word >= '0' && *word <= '9');
        for (char *c = word; valid && c < equals; c++)
            valid = *c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
                    (*c >= '0' && *c <= '9');
        if (!valid) {
            fprintf(stderr, "framescope: %s takes 'VAR=VALUE ...' with VAR a variable name "
                    "(got '%s')\n", flag, fscope_config_escape(word, shown, sizeof(shown)));
            return false;
        }
        size_t name_len = (size_t)(equals - word);
        if ((name_len == 17 && strncmp(word, "FRAMESCOPE_OUTPUT", 17) == 0) ||
            (name_len == 23 && strncmp(word, "FRAMESCOPE_RECORDING_FD", 23) == 0)) {
            fprintf(stderr, "framescope: %s: compare sets %.*s for each run itself\n", flag,
                    (int)name_len, word);
            return false;
        }
        if (v->count == MAX_ENV_CHANGES) {
            fprintf(stderr, "framescope: %s: more than %d variables\n", flag, MAX_ENV_CHANGES);
            return false;
        }
        v->assignments[v->count++] = word;
    }
    return true;
}

/* environ with the variant's assignments in place of the same names. Free the array only. */
static char **variant_environment(const struct variant *v)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = malloc((n + v->count + 1) * sizeof(*env));
    if (!env)
        return NULL;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        bool replaced = false;
        for (size_t a = 0; a < v->count && !replaced; a++) {
            size_t name_len = (size_t)(strchr(v->assignments[a], '=') - v->assignments[a]) + 1;
            replaced = strncmp(environ[i], v->assignments[a], name_len) == 0;
        }
        if (!replaced)
            env[kept++] = environ[i];
    }
    for (size_t a = 0; a < v->count; a++)
        env[kept++] = v->assignments[a];
    env[kept] = NULL;
    return env;
}

/* Whether posix_spawnp can find name: a path, or a file in $PATH that we may execute. */
static bool command_found(const char *name)
{
    if (strchr(name, '/'))
        return access(name, X_OK) == 0;
    const char *search = getenv("PATH");
    if (!search || !*search)
        search = "/usr/local/bin:/usr/bin:/bin";
    while (*search) {
        size_t len = strcspn(search, ":");
        char candidate[PATH_MAX];
        if (snprintf(candidate, sizeof(candidate), "%.*s/%s", (int)len, len ? search : ".",
                     name) < (int)sizeof(candidate) &&
            access(candidate, X_OK) == 0)
            return true;
        search += len + (search[len] == ':');
    }
    return false;
}

/* The comparison's directory: a new one (its parent must exist) or one of ours that only we
 * can write, holding no earlier A1, X or A2 (run checks each of those as it does any --output).
 * False after one line on stderr. */
static bool make_output_dir(const char *dir)
{
    char shown[4 * PATH_MAX];
    if (strlen(dir) + sizeof("/A1") > PATH_MAX) {
        fprintf(stderr, "framescope: --output %s: the path is too long\n",
                shown_path(dir, shown, sizeof(shown)));
        return false;
    }
    if (mkdir(dir, 0755) == 0)
        return true;
    const char *why = strerror(errno);
    struct stat st;
    if (errno == EEXIST) {
        why = lstat(dir, &st) != 0       ? strerror(errno)
              : !S_ISDIR(st.st_mode)     ? "it exists and is not a directory"
              : st.st_uid != geteuid()   ? "it is owned by another user"
              : st.st_mode & (S_IWGRP | S_IWOTH) ? "others can write to it"
                                                 : NULL;
        if (!why) {
            char probe[PATH_MAX];
            const char *const runs[] = { "A1", "X", "A2" };
            for (int i = 0; i < 3 && !why; i++) {
                snprintf(probe, sizeof(probe), "%s/%s", dir, runs[i]);
                if (lstat(probe, &st) == 0)
                    why = "it already holds a comparison (A1, X or A2)";
            }
        }
        if (!why)
            return true;
    }
    fprintf(stderr, "framescope: --output %s: %s\n", shown_path(dir, shown, sizeof(shown)), why);
    return false;
}

/* The drift rule (an A1/X/A2 bracket): X - mean(A1, A2) supports a directional claim only
 * when it is larger than the drift |A1 - A2| between the two controls. */
struct drift_result {
    double drift, change;
    const char *verdict;
};

static struct drift_result drift_row(const struct row *row)
{
    struct drift_result d = { .drift = fabs(row->value[0] - row->value[2]),
                              .change = row->value[1] - (row->value[0] + row->value[2]) / 2 };
    if (!isfinite(d.drift) || !isfinite(d.change))
        d.verdict = "no value";
    else if (fabs(d.change) > d.drift)
        d.verdict = change_name(row->direction, d.change);
    else
        d.verdict = "inconclusive";
    return d;
}

static const char *const run_names[3] = { "A1", "X", "A2" };

/* A configuration as the report names it: its environment changes as given. */
static const char *setting_name(const char *setting)
{
    return *setting ? setting : "(environment unchanged)";
}

static void print_compare_text(FILE *out, const struct rows *rows, const struct capture *caps,
                               const char *a_setting, const char *b_setting)
{
    char shown[4 * PATH_MAX];
    fputs("framescope compare: A1, X, A2 in turn\n", out);
    for (int i = 0; i < 3; i++)
        fprintf(out, "  %-2s  %s: %s %s, %.0f frames\n", run_names[i],
                shown_path(caps[i].dir, shown, sizeof(shown)), i == 1 ? "B" : "A",
                setting_name(i == 1 ? b_setting : a_setting), caps[i].frames);
    fputs("  drift = |A1 - A2|; X is better or worse only when |X - mean(A1, A2)| exceeds the "
          "drift, else inconclusive\n\n", out);
    fprintf(out, "%-24s %12s %12s %12s %12s %12s  %s\n", "metric", "A1", "X", "A2", "drift",
            "X - mean(A)", "verdict");
    bool zones_started = false;
    for (size_t i = 0; i < rows->count; i++) {
        const struct row *row = &rows->items[i];
        if (row->thread && !(row->present[0] && row->present[1] && row->present[2]))
            continue;
        if (zone_heading(rows->items, i)) {
            if (!zones_started)
                fputs("\nzones (thread / path)\n", out);
            zones_started = true;
            fprintf(out, "%s / %s\n", row->thread, row->path);
        }
        struct drift_result d = drift_row(row);
        fprintf(out, row->thread ? "  %-22s" : "%-24s", row->name);
        for (int r = 0; r < 3; r++)
            print_cell(out, row->value[r], true);
        print_cell(out, d.drift, true);
        if (isfinite(d.change))
            fprintf(out, " %+12.4f", d.change);
        else
            fprintf(out, " %12s", "-");
        fprintf(out, "  %s\n", d.verdict);
    }
    for (size_t i = 0; i < rows->count; i++) {
        const struct row *row = &rows->items[i];
        if (!zone_heading(rows->items, i) || (row->present[0] && row->present[1] &&
                                              row->present[2]))
            continue;
        fprintf(out, "not in every run: %s / %s (in%s%s%s)\n", row->thread, row->path,
                row->present[0] ? " A1" : "", row->present[1] ? " X" : "",
                row->present[2] ? " A2" : "");
    }
}

static void print_compare_json(FILE *out, const struct rows *rows, const struct capture *caps,
                               const char *a_setting, const char *b_setting)
{
    fputs("{\"schema\": \"framescope-compare-1\", \"a\": ", out);
    print_json_string(out, a_setting);
    fputs(", \"b\": ", out);
    print_json_string(out, b_setting);
    fputs(", \"runs\": {", out);
    for (int i = 0; i < 3; i++) {
        fprintf(out, "%s\"%s\": ", i ? ", " : "", run_names[i]);
        print_json_string(out, caps[i].dir);
    }
    fputs("},\n \"rows\": [", out);
    for (size_t i = 0; i < rows->count; i++) {
        const struct row *row = &rows->items[i];
        fprintf(out, "%s\n  ", i ? "," : "");
        print_row_key(out, row);
        for (int r = 0; r < 3; r++) {
            fprintf(out, ", \"%s\": ", r == 0 ? "a1" : r == 1 ? "x" : "a2");
            print_number(out, row->present[r] ? row->value[r] : NAN);
        }
        if (row->present[0] && row->present[1] && row->present[2]) {
            struct drift_result d = drift_row(row);
            fputs(", \"drift\": ", out);
            print_number(out, d.drift);
            fputs(", \"x_minus_mean_a\": ", out);
            print_number(out, d.change);
            fprintf(out, ", \"verdict\": \"%s\"}", d.verdict);
        } else {
            fputs(", \"drift\": null, \"x_minus_mean_a\": null, \"verdict\": \"not in every "
                  "run\"}", out);
        }
    }
    fputs("\n ]}\n", out);
}

/* compare's table of caps (A1, X, A2) on out; a_setting and b_setting are the environment
 * changes of A and B as given. Returns 0, or 1 after one line on err. */
static int write_compare(const struct capture caps[3], const char *a_setting,
                         const char *b_setting, bool json, FILE *out, FILE *err)
{
    struct rows rows = { 0 };
    int status = 1;
    if (rows_build(&rows, caps, 3, err)) {
        if (json)
            print_compare_json(out, &rows, caps, a_setting, b_setting);
        else
            print_compare_text(out, &rows, caps, a_setting, b_setting);
        status = 0;
    }
    free(rows.items);
    return status;
}

static const char compare_usage[] =
    "usage: framescope compare [--runs-frames N] [--a 'VAR=VALUE ...'] [--b 'VAR=VALUE ...']\n"
    "                          [-o DIR] [--format text|json] -- COMMAND [ARGS...]\n";

int cmd_compare(int argc, char **argv)
{
    enum { OPT_RUNS_FRAMES = 256, OPT_A, OPT_B, OPT_FORMAT };
    static const struct option options[] = {
        { "runs-frames", required_argument, NULL, OPT_RUNS_FRAMES },
        { "a", required_argument, NULL, OPT_A },
        { "b", required_argument, NULL, OPT_B },
        { "output", required_argument, NULL, 'o' },
        { "format", required_argument, NULL, OPT_FORMAT },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct variant a = { .text = "" }, b = { .text = "" };
    const char *output = NULL;
    long runs_frames = 1;
    bool json = false;
    int status = 2, opt;
    char shown[FSCOPE_ESCAPE_SIZE];
    opterr = 0; /* one line of ours instead of getopt's and the usage */
    /* '+': the command's own options stay its own. */
    while ((opt = getopt_long(argc, argv, "+o:h", options, NULL)) != -1) {
        switch (opt) {
        case OPT_RUNS_FRAMES:
            if (!fscope_config_parse_long(optarg, 1, 1000000000, &runs_frames)) {
                fprintf(stderr, "framescope: --runs-frames takes a frame count in "
                        "1..1000000000 (got '%s')\n",
                        fscope_config_escape(optarg, shown, sizeof(shown)));
                goto out;
            }
            break;
        case OPT_A:
        case OPT_B:
            if (!variant_parse(opt == OPT_A ? &a : &b, opt == OPT_A ? "--a" : "--b", optarg))
                goto out;
            break;
        case 'o':
            if (!*optarg) {
                fprintf(stderr, "framescope: --output needs a directory\n");
                goto out;
            }
            output = optarg;
            break;
        case OPT_FORMAT:
            if (!cli_parse_format(optarg, &json)) {
                cli_bad_format(optarg);
                goto out;
            }
            break;
        case 'h':
            fputs(compare_usage, stdout);
            status = 0;
            goto out;
        default:
            cli_unknown_option(argv[optind - 1]);
            goto out;
        }
    }
    char **command = argv + optind;
    int command_count = argc - optind;
    if (command_count > 0 && !command_found(command[0])) {
        fprintf(stderr, "framescope: cannot find the command %s\n",
                fscope_config_escape(command[0], shown, sizeof(shown)));
        goto out;
    }
    char default_output[64], self[PATH_MAX];
    if (!output) {
        char stamp[32];
        time_t now = time(NULL);
        strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&now));
        snprintf(default_output, sizeof(default_output), "framescope-compare-%s", stamp);
        output = default_output;
    }
    ssize_t self_len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (self_len <= 0) {
        fprintf(stderr, "framescope: cannot find this program (/proc/self/exe): %s\n",
                strerror(errno));
        status = 1;
        goto out;
    }
    self[self_len] = '\0';
    if (!make_output_dir(output))
        goto out;

    /* Caught before the first run, so that a signal between runs stops the next one. A
     * terminal's (si_code SI_KERNEL) already reached the run through the process group; one
     * sent to us alone is passed on (tools/child.c). */
    if (child_catch_stop_signals() != 0) {
        fprintf(stderr, "framescope: cannot catch signals: %s\n", strerror(errno));
        status = 1;
        goto out;
    }
    const struct variant *variants[3] = { &a, &b, &a };
    static char run_dirs[3][PATH_MAX];
    struct capture caps[3] = { 0 };
    int loaded = 0;
    status = 1;
    for (int i = 0; i < 3; i++) {
        snprintf(run_dirs[i], sizeof(run_dirs[i]), "%s/%s", output, run_names[i]);
        /* The run's summary is in its summary.json; three on stderr would bury the answer. */
        char *fixed[] = { self, "run", "--summary", "off", "--output", run_dirs[i], "--" };
        size_t fixed_count = sizeof(fixed) / sizeof(fixed[0]);
        char **run_argv = calloc(fixed_count + (size_t)command_count + 1, sizeof(char *));
        char **env = variant_environment(variants[i]);
        if (!run_argv || !env) {
            free(run_argv);
            free(env);
            fprintf(stderr, "framescope: out of memory\n");
            goto out_captures;
        }
        memcpy(run_argv, fixed, sizeof(fixed));
        memcpy(run_argv + fixed_count, command, (size_t)command_count * sizeof(char *));
        fprintf(stderr, "framescope: compare: run %s (%d of 3), %s %s\n", run_names[i], i + 1,
                i == 1 ? "B" : "A", setting_name(variants[i]->text));
        int run_signal;
        bool ran;
        int run_status = child_run(run_argv, env, &run_signal, &ran);
        free(run_argv);
        free(env);
        if (child_stop_signal) {
            fprintf(stderr, "framescope: compare stopped by %s during run %s\n",
                    strsignal(child_stop_signal), run_names[i]);
            status = 128 + child_stop_signal;
            goto out_captures;
        }
        if (run_status != 0) {
            fprintf(stderr, "framescope: compare: run %s ended with status %d; no comparison\n",
                    run_names[i], run_status);
            goto out_captures;
        }
    }
    for (; loaded < 3; loaded++)
        if (!capture_load(&caps[loaded], run_dirs[loaded]))
            goto out_captures;
    for (int i = 0; i < 3; i++) {
        if (caps[i].frames < (double)runs_frames) {
            fprintf(stderr, "framescope: compare: run %s recorded %.0f frames, fewer than "
                    "--runs-frames %ld\n", run_names[i], caps[i].frames, runs_frames);
            goto out_captures;
        }
    }
    status = write_compare(caps, a.text, b.text, json, stdout, stderr);
out_captures:
    for (int i = loaded - 1; i >= 0; i--)
        capture_finish(&caps[i]);
out:
    free(a.storage);
    free(b.storage);
    return status;
}

/* ---- captures given as text ---- */

int compare_texts(struct compare_capture_text captures[2], FILE *out, FILE *err)
{
    static const char *const names[2] = { "A", "B" };
    struct capture caps[2];
    char error[ERROR_LEN];
    int loaded, status = 2;
    for (loaded = 0; loaded < 2; loaded++) {
        struct compare_capture_text *text = &captures[loaded];
        char *const texts[CAPTURE_FILE_COUNT] = { text->summary_json, text->frames_csv,
                                                  text->zones_csv };
        const size_t lens[CAPTURE_FILE_COUNT] = { text->summary_json_len, text->frames_csv_len,
                                                  text->zones_csv_len };
        caps[loaded] = (struct capture){ .dir = names[loaded] };
        for (int f = 0; f < CAPTURE_FILE_COUNT; f++) {
            if (!capture_parse(&caps[loaded], (enum capture_file)f, texts[f], lens[f], error,
                               sizeof(error))) {
                fprintf(err, "framescope: %s/%s: %s\n", names[loaded], capture_file_names[f],
                        error);
                capture_finish(&caps[loaded]);
                goto out;
            }
        }
    }
    /* A as A1 and A2 of a comparison: copies that share A's memory, never finished. */
    const struct capture runs[3] = { caps[0], caps[1], caps[0] };
    status = 0;
    for (int json = 0; json < 2; json++)
        if (write_diff(caps, json, out, err) != 0 ||
            write_compare(runs, "A=1", "", json, out, err) != 0)
            status = 2;
out:
    while (loaded-- > 0)
        capture_finish(&caps[loaded]);
    return status;
}
