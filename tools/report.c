/* framescope report DIR [--format F]: every output of a capture, recomputed from the recording
 * it keeps (recording.fsr) by the same analysis that wrote it. */
#include "commands.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <getopt.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analysis/keep.h"
#include "analysis/recording.h"
#include "analysis/report.h"
#include "util/config.h"

static const char report_usage[] =
    "usage: framescope report [--full | --format text|full|json|csv|seconds|zones|trace|\n"
    "                          perfetto|threads|presentmon|mangohud|html]\n"
    "                         [--keep-minutes N|all] DIR\n"
    "Recomputes an output of the capture in DIR from its recording (recording.fsr): text (the\n"
    "default) is the one-screen summary as printed when the run ended, byte for byte; full\n"
    "(--full) is every line of the summary (FRAMESCOPE_SUMMARY=full); json, csv, seconds,\n"
    "zones, trace, perfetto, threads, presentmon, mangohud and html are summary.json,\n"
    "frames.csv, seconds.csv, zones.csv, trace.json, trace.perfetto-trace, threads.csv,\n"
    "presentmon.csv, mangohud.csv and report.html. Written to stdout. --keep-minutes: the\n"
    "rows of frames kept, as run's (default: the capture's own, keep.json, else\n"
    "FRAMESCOPE_KEEP_MINUTES, else 5 minutes).\n"
    "Exit status 0, 1 when the output could not be written, 2 for a bad argument or an\n"
    "unreadable recording.\n";

int cmd_report(int argc, char **argv)
{
    static const struct option options[] = {
        { "format", required_argument, NULL, 'f' },
        { "full", no_argument, NULL, 'F' },
        { "keep-minutes", required_argument, NULL, 'k' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    enum report_format format = REPORT_TEXT;
    const char *keep_option = NULL;
    uint32_t keep_ms = 0;
    char shown[FSCOPE_ESCAPE_SIZE];
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "f:h", options, NULL)) != -1) {
        switch (opt) {
        case 'f':
            if (!report_format_parse(optarg, &format)) {
                fprintf(stderr, "framescope: --format takes text, full, json, csv, seconds, "
                        "zones, trace, threads, presentmon, mangohud or html (got '%s')\n",
                        fscope_config_escape(optarg, shown, sizeof(shown)));
                return 2;
            }
            break;
        case 'F':
            format = REPORT_TEXT_FULL;
            break;
        case 'k':
            if (!report_keep_parse(optarg, &keep_ms)) {
                fprintf(stderr, "framescope: --keep-minutes takes minutes from %g to %u or all "
                        "(got '%s')\n", KEEP_MIN_MS / 60000.0, KEEP_MAX_MS / 60000,
                        fscope_config_escape(optarg, shown, sizeof(shown)));
                return 2;
            }
            keep_option = optarg;
            break;
        case 'h':
            fputs(report_usage, stdout);
            return 0;
        default:
            fprintf(stderr, "framescope: report: unknown option '%s'\n",
                    fscope_config_escape(argv[optind - 1], shown, sizeof(shown)));
            return 2;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "framescope: report takes one capture directory (got %d)\n",
                argc - optind);
        return 2;
    }
    const char *dir = argv[optind];
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    /* Opened without waiting (a FIFO there would wait for a writer for ever), then checked
     * on the descriptor itself: only a regular file is a recording. */
    int fd = dir_fd < 0 ? -1 : openat(dir_fd, REPORT_RECORDING_FILE,
                                      O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
    int open_errno = errno;
    char window_why[128] = "";
    int64_t window_ms = dir_fd < 0 || fd < 0 ? 0 : report_read_window(dir_fd, window_why,
                                                                       sizeof(window_why));
    char keep_why[128] = "";
    uint32_t capture_keep_ms = 0;
    int capture_keep = dir_fd < 0 || fd < 0 || window_ms < 0
                           ? 0 : report_read_keep(dir_fd, &capture_keep_ms, keep_why,
                                                  sizeof(keep_why));
    if (dir_fd >= 0)
        close(dir_fd);
    if (capture_keep < 0) {
        fprintf(stderr, "framescope: %s/%s\n", fscope_config_escape(dir, shown, sizeof(shown)),
                keep_why);
        close(fd);
        return 2;
    }
    if (window_ms < 0) {
        fprintf(stderr, "framescope: %s/%s\n", fscope_config_escape(dir, shown, sizeof(shown)),
                window_why);
        close(fd);
        return 2;
    }
    if (fd < 0) {
        fprintf(stderr, "framescope: %s: %s%s\n", fscope_config_escape(dir, shown, sizeof(shown)),
                dir_fd < 0 ? "" : REPORT_RECORDING_FILE ": ", strerror(open_errno));
        return 2;
    }
    struct stat st;
    const char *not_file = fstat(fd, &st) != 0 ? strerror(errno)
                           : S_ISDIR(st.st_mode) ? "a directory, not a recording"
                           : !S_ISREG(st.st_mode) ? "not a regular file"
                                                  : NULL;
    if (not_file) {
        fprintf(stderr, "framescope: %s/%s: %s\n", fscope_config_escape(dir, shown, sizeof(shown)),
                REPORT_RECORDING_FILE, not_file);
        close(fd);
        return 2;
    }
    struct recording *rec = NULL;
    char why[256];
    int e = recording_read_fd(fd, &rec, why, sizeof(why));
    close(fd);
    if (e) {
        fprintf(stderr, "framescope: %s/%s: %s\n", fscope_config_escape(dir, shown, sizeof(shown)),
                REPORT_RECORDING_FILE, why[0] ? why : strerror(-e));
        return 2;
    }
    struct report *report = report_create_window(rec, (uint32_t)window_ms);
    int status = 1;
    if (report) {
        report_set_trace_window_from(report, getenv("FRAMESCOPE_TRACE_WINDOW"));
        /* The rows the capture kept, unless asked for others. */
        report_set_keep_window_from(report, getenv("FRAMESCOPE_KEEP_MINUTES"));
        if (capture_keep > 0)
            report_set_keep_window(report, capture_keep_ms);
        if (keep_option)
            report_set_keep_window(report, keep_ms);
        e = report_write(stdout, report, format);
        /* The summary as printed at the end of the run names the capture it was written to. */
        if (e == 0 && (format == REPORT_TEXT || format == REPORT_TEXT_FULL))
            report_write_capture_line(stdout, report, dir, format == REPORT_TEXT_FULL);
        if (e == 0 && (fflush(stdout) != 0 || ferror(stdout)))
            e = -EIO;
        if (e)
            fprintf(stderr, "framescope: cannot write the %s report: %s\n",
                    report_format_name(format), strerror(-e));
        status = e ? 1 : 0;
    }
    report_destroy(report);
    recording_free(rec);
    return status;
}
