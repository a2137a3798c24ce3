/* A capture as framescope diff and compare read it: summary.json's numbers and the frames.csv
 * and zones.csv they are weighed with (tools/capture_files.c). */
#ifndef FSCOPE_TOOLS_CAPTURE_FILES_H
#define FSCOPE_TOOLS_CAPTURE_FILES_H

#include <stdbool.h>
#include <stddef.h>

/* Room for the reason a file is refused. */
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

/* The per-frame columns of frames.csv that a summary metric is the mean of. */
enum frame_column {
    COLUMN_FRAME, COLUMN_CPU, COLUMN_GPU_BUSY, COLUMN_ACQUIRE, COLUMN_PRESENT,
    COLUMN_PRESENT_WAIT, COLUMN_FENCE, COLUMN_SEMAPHORE, COLUMN_IDLE, COLUMN_CAP,
    FRAME_COLUMN_COUNT
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
struct frame_stat {
    const char *key;
    double quantile; /* -1: the mean; 1: the maximum */
};
extern const struct frame_stat frame_stats[FRAME_STAT_COUNT];

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
    /* Each hitch's frame number (hitches.all), for where in the run they fell; none when the
     * summary does not list them. */
    double *hitch_frames;
    size_t hitch_frame_count;
};

enum capture_file { FILE_SUMMARY, FILE_FRAMES, FILE_ZONES, CAPTURE_FILE_COUNT };
/* Each file's name in a capture directory. */
extern const char *const capture_file_names[CAPTURE_FILE_COUNT];

/* path for a message: control characters escaped, never cut (the file name is at its end). */
const char *capture_files_shown_path(const char *path, char *buf, size_t len);
/* Frees what a capture holds and zeroes it; one zeroed, or half-read, is fine. */
void capture_files_finish(struct capture *c);
/* Reads one file of a capture from its text: len bytes and one writable byte after them (a
 * CSV file is decoded in place). False with the reason in error. */
bool capture_files_parse(struct capture *c, enum capture_file file, char *text, size_t len,
                         char *error, size_t error_len);
/* The capture's zone of that thread name and path; NULL when it has none. */
const struct zone_total *capture_files_zone_find(const struct capture *c, const char *thread,
                                                 const char *path);
/* Loads the capture in dir. False after one line on stderr naming the file and the fault. */
bool capture_files_load(struct capture *c, const char *dir);

#endif
