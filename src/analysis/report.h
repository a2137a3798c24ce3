/* Analysis of a recording: budget, verdict, presentation, cap accuracy, statistics, and every
 * output format (the summary, the capture's files). Pure: it reads only the recording it is
 * given (analysis/recording.h) and writes only to the files it is handed, so the app at exit
 * and `framescope run` / `framescope report` after it produce the same bytes. */
#ifndef FSCOPE_REPORT_H
#define FSCOPE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "recording.h"

#include "budget.h"
#include "gpu_busy.h"

/* The capture keeps the recording under this name; `framescope report` reads it back. */
#define REPORT_RECORDING_FILE "recording.fsr"
/* In a snapshot's capture: the window of the recording its outputs cover ({"last_ms": N}, the
 * frames that ended in the last N ms before the newest one), so that `framescope report`
 * recomputes the same outputs from the whole recording kept beside it. */
#define REPORT_WINDOW_FILE "snapshot.json"
/* In a capture whose keep window (keep.h) is not the default: {"keep_ms": N} (0: every
 * frame), so that `framescope report` keeps the same rows. */
#define REPORT_KEEP_FILE "keep.json"

enum report_format {
    REPORT_TEXT,  /* the one-screen summary printed at exit */
    REPORT_TEXT_FULL, /* every line of the summary */
    REPORT_JSON,  /* summary.json */
    REPORT_CSV,   /* frames.csv */
    REPORT_SECONDS, /* seconds.csv */
    REPORT_ZONES, /* zones.csv */
    REPORT_TRACE, /* trace.json */
    REPORT_PERFETTO, /* trace.perfetto-trace */
    REPORT_THREADS, /* threads.csv */
    REPORT_PRESENTMON,
    REPORT_MANGOHUD,
    REPORT_HTML,
    REPORT_FORMAT_COUNT,
};

struct report;

/* Analyses rec, filling its frames' GPU fields. rec must outlive the report. NULL when memory
 * ran out. */
struct report *report_create(struct recording *rec);
/* The same over the frames that ended in the last last_ms before the newest one (rec is cut
 * to them; 0: all), and a capture written from it says so (REPORT_WINDOW_FILE). */
struct report *report_create_window(struct recording *rec, uint32_t last_ms);
/* REPORT_WINDOW_FILE's window, from the capture directory dir_fd: 0 when there is none, or
 * -1 with why when it is there and unreadable or malformed. */
int64_t report_read_window(int dir_fd, char *why, size_t why_len);
void report_destroy(struct report *r);
bool report_has_frames(const struct report *r);
/* The run's frames and verdict ("none" without frames), as its summary gives them. */
void report_headline(const struct report *r, uint64_t *frames, const char **verdict);
/* trace.json holds the last window_ns of the run (0: all of it); TRACE_WINDOW_DEFAULT_S
 * unless set. */
void report_set_trace_window(struct report *r, int64_t window_ns);
/* FRAMESCOPE_TRACE_WINDOW's value: whole seconds from 1 to TRACE_WINDOW_MAX_S, or "all" (any
 * case; 0 ns). ret_ns is written only on success. */
bool report_trace_window_parse(const char *text, int64_t *ret_ns);
/* report_set_trace_window from FRAMESCOPE_TRACE_WINDOW's value (NULL or "": the default is
 * kept); a malformed one is said in a warning, and the default kept. */
void report_set_trace_window_from(struct report *r, const char *text);
/* The per-frame outputs keep the frames of the last window_ms of the run (0: all of them)
 * and those around its hitches (keep.h); KEEP_DEFAULT_MS unless set. */
void report_set_keep_window(struct report *r, uint32_t window_ms);
/* FRAMESCOPE_KEEP_MINUTES's value and --keep-minutes': minutes, a fraction allowed, from
 * KEEP_MIN_MS to KEEP_MAX_MS, or "all" (any case; 0). ret_ms is written only on success. */
bool report_keep_parse(const char *text, uint32_t *ret_ms);
/* report_set_keep_window from FRAMESCOPE_KEEP_MINUTES's value (NULL or "": the window is
 * kept); a malformed one is said in a warning, and the window kept. */
void report_set_keep_window_from(struct report *r, const char *text);
/* REPORT_KEEP_FILE's window, from the capture directory dir_fd: 1 with *ret_ms, 0 when there
 * is none, or -1 with why when it is there and unreadable or malformed. */
int report_read_keep(int dir_fd, uint32_t *ret_ms, char *why, size_t why_len);

/* Writes one format. Returns 0 or -errno. */
int report_write(FILE *f, const struct report *r, enum report_format format);
/* "json", "html", ... as --format takes them (any case). */
bool report_format_parse(const char *name, enum report_format *ret);
const char *report_format_name(enum report_format format);

/* Writes the capture into output_dir, all of it or nothing (capture_dir.h): the recording's
 * bytes and every format with a file. On success the summary (if any) gets the capture line,
 * on failure a line naming the error. Returns 0 or -errno. */
int report_write_capture(const struct report *r, const void *recording, size_t recording_len,
                         const char *output_dir, FILE *summary);
/* The summary's line for a capture written to dir: the one-screen summary's, or with full
 * the full summary's, which lists the files (and says when trace.json holds only the last
 * part of the run). */
void report_write_capture_line(FILE *f, const struct report *r, const char *dir, bool full);

/* Where the summary goes: stderr (one screen), nowhere, a file (one screen), or stderr with
 * every line (FRAMESCOPE_SUMMARY=full). */
enum report_summary {
    REPORT_SUMMARY_STDERR,
    REPORT_SUMMARY_OFF,
    REPORT_SUMMARY_PATH,
    REPORT_SUMMARY_FULL,
};

/* A run's end, the same in the app and in framescope run: the summary where asked (a file is
 * written whole, the capture line with it, or printed on err with the error), and the
 * capture when output_dir is set. err is where "stderr" goes (NULL: nowhere, as when the app
 * closed its stderr and no copy of it is left). Returns 0, or -errno of the capture (else of
 * the summary file) that failed; *ret_capture_error is the capture's alone. */
int report_deliver(const struct report *r, const void *recording, size_t recording_len,
                   enum report_summary where, const char *summary_path, const char *output_dir,
                   FILE *err, int *ret_capture_error);

#endif
