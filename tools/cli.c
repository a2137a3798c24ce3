/* What the framescope subcommands share: the usage text (framescope --help, and run's own
 * --help) and the one-line complaints of option parsing. */
#include "cli.h"

#include <stdio.h>

#include "util/config.h"

const char cli_usage[] =
    "usage: framescope run [OPTIONS] [--] [COMMAND [ARGS...]]\n"
    "       framescope report [--full | --format FORMAT] [--keep-minutes N|all] DIR\n"
    "       framescope diff [--format text|json] A B\n"
    "       framescope compare [--runs-frames N] [--a 'VAR=VALUE ...'] [--b 'VAR=VALUE ...']\n"
    "                          [-o DIR] [--format text|json] -- COMMAND [ARGS...]\n"
    "       framescope top [--once] [--json] [--interval SECONDS]\n"
    "       framescope snapshot PID|NAME [--last SECONDS]\n"
    "       framescope --help | --version\n"
    "\n"
    "Runs COMMAND under the framescope Vulkan layer and prints, when it exits, what held its\n"
    "frames back (CPU, GPU, display, cap, or CPU-GPU serialisation) with the numbers behind\n"
    "the verdict. With no COMMAND, profiles the bundled demo workload (framescope-demo).\n"
    "\n"
    "options for run:\n"
    "  -o, --output DIR     write the capture (recording.fsr, summary.json, frames.csv,\n"
    "                       seconds.csv, zones.csv, trace.json, threads.csv,\n"
    "                       presentmon.csv, mangohud.csv, report.html) to DIR\n"
    "                       (default: ./framescope-APP-YYYYMMDD-HHMMSS)\n"
    "      --no-capture     print the summary only; write no capture\n"
    "      --summary WHERE  off, stderr (default: one screen), full (every line, on\n"
    "                       stderr) or a file path for the one-screen summary\n"
    "      --keep-minutes N|all  keep every frame's row (frames.csv, presentmon.csv,\n"
    "                       mangohud.csv, report.html, threads.csv) for the run's last N\n"
    "                       minutes (a fraction allowed; default 5) and around each hitch;\n"
    "                       all: every frame (FRAMESCOPE_KEEP_MINUTES)\n"
    "      --cap RATE       cap the frame rate: HZ (1-1000), auto (the refresh of the output\n"
    "                       the frames are shown on) or off (default)\n"
    "      --compositor MODE  auto (default): start a private headless Weston only when\n"
    "                       there is no display at all (no reachable Wayland session and no\n"
    "                       X display in DISPLAY; the bundled demo, which draws only on\n"
    "                       Wayland, whenever no Wayland session is reachable); never: do\n"
    "                       not start one\n"
    "  -h, --help           this text\n"
    "\n"
    "The command records into shared memory that framescope keeps: when it ends, however it\n"
    "ends (a crash or SIGKILL included), framescope analyses the recording, prints the summary\n"
    "and writes the capture.\n"
    "\n"
    "report: recomputes an output of a capture from its recording.fsr: FORMAT is text (the\n"
    "one-screen summary, byte for byte as printed when the run ended; default), full (every\n"
    "line of it; --full), json, csv, seconds, zones, trace, threads, presentmon, mangohud or\n"
    "html; --keep-minutes as run's (default: the capture's own).\n"
    "diff: two captures side by side, per metric (fps, frame_ms, budget_ms, verdict shares)\n"
    "and per zone (thread and path), each difference marked when it exceeds the run-to-run\n"
    "noise, 2*sqrt(seA^2 + seB^2) with standard errors from frames.csv.\n"
    "compare: runs COMMAND three times under run: A1 with --a's variables, X with --b's, A2\n"
    "with --a's again, captures in DIR/A1, DIR/X, DIR/A2 (default:\n"
    "./framescope-compare-YYYYMMDD-HHMMSS); X is better or worse than A only by more than the\n"
    "drift |A1 - A2|, else inconclusive. --runs-frames N: each run must record N frames.\n"
    "top: every app profiled on this desktop, live, from framescoped (the per-user daemon):\n"
    "fps, frame time p50/p99 over the last second, verdict, share of frames shown, cap.\n"
    "snapshot: has framescoped write a capture of a running app's recent frames (all it holds,\n"
    "or the last SECONDS) without stopping it, and prints the capture's path.\n"
    "diff exits 0, or 2 for a bad directory or file (not a regular file, a frames.csv or\n"
    "zones.csv past 1 GiB, a summary.json past 64 MiB); compare 0, 1 when a run or its\n"
    "capture failed, 2 for a usage error (before anything runs).\n"
    "\n"
    "The environment variables the layer reads (FRAMESCOPE_*) pass through, but for\n"
    "FRAMESCOPE_SUMMARY and FRAMESCOPE_OUTPUT, which run applies itself (as --summary and\n"
    "--output); see framescope(1), ENVIRONMENT.\n"
    "SIGINT, SIGTERM and SIGHUP sent to framescope go on to the command, which ends as it\n"
    "would on its own; a private Weston is stopped and its directory removed in every case.\n"
    "Exit status: the command's own, 128+N if it died of signal N, 125 if framescope failed\n"
    "before running it, 2 for a usage error.\n";

void cli_unknown_option(const char *arg)
{
    char shown[FSCOPE_ESCAPE_SIZE];
    fprintf(stderr, "framescope: unknown option or missing value: '%s' (see framescope --help)\n",
            fscope_config_escape(arg, shown, sizeof(shown)));
}

bool cli_parse_format(const char *text, bool *ret_json)
{
    if (fscope_config_keyword(text, "text"))
        *ret_json = false;
    else if (fscope_config_keyword(text, "json"))
        *ret_json = true;
    else
        return false;
    return true;
}

void cli_bad_format(const char *text)
{
    char shown[FSCOPE_ESCAPE_SIZE];
    fprintf(stderr, "framescope: --format takes text or json (got '%s')\n",
            fscope_config_escape(text, shown, sizeof(shown)));
}
