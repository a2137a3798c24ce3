/* framescope run [OPTIONS] [--] [COMMAND [ARGS...]]
 *
 * Runs COMMAND (the bundled demo workload when none is given) with VK_LAYER_FRAMESCOPE
 * enabled, starting a private headless Weston when there is no display at all, and returns
 * the command's exit status; then analyses what it recorded, however it ended. */
#include "commands.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/keep.h"
#include "analysis/report.h"
#include "child.h"
#include "cli.h"
#include "compositor.h"
#include "observed_recording.h"
#include "run_checks.h"
#include "util/config.h"

extern char **environ;

#ifndef FRAMESCOPE_BINDIR
#define FRAMESCOPE_BINDIR "/usr/local/bin"
#endif

static char self_dir[PATH_MAX];

static void find_self_dir(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) {
        snprintf(self_dir, sizeof(self_dir), "%s", FRAMESCOPE_BINDIR);
        return;
    }
    exe[n] = '\0';
    snprintf(self_dir, sizeof(self_dir), "%s", dirname(exe));
}

static bool file_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Prepends value to a colon-separated variable unless it is already there. */
static int env_prepend(const char *name, const char *value)
{
    const char *old = getenv(name);
    if (!old || !*old)
        return setenv(name, value, 1);
    size_t len = strlen(value);
    for (const char *p = old; (p = strstr(p, value)); p += len)
        if ((p == old || p[-1] == ':') && (p[len] == '\0' || p[len] == ':'))
            return 0;
    char *joined;
    if (asprintf(&joined, "%s:%s", value, old) < 0)
        return -1;
    int r = setenv(name, joined, 1);
    free(joined);
    return r;
}

/* The layer from the build tree when this binary runs from it, else the installed one. */
static int enable_layer(void)
{
    char dev[PATH_MAX + 64];
    snprintf(dev, sizeof(dev), "%s/../layers/dev/VkLayer_framescope.json", self_dir);
    if (file_exists(dev)) {
        char dir[PATH_MAX + 64];
        snprintf(dir, sizeof(dir), "%s/../layers/dev", self_dir);
        char resolved[PATH_MAX];
        if (!realpath(dir, resolved) || env_prepend("VK_ADD_LAYER_PATH", resolved) != 0)
            return -1;
    }
    return env_prepend("VK_INSTANCE_LAYERS", "VK_LAYER_FRAMESCOPE");
}

static const char *find_demo(char *buf, size_t len)
{
    snprintf(buf, len, "%s/demo/framescope-demo", self_dir);
    if (access(buf, X_OK) == 0)
        return buf;
    snprintf(buf, len, "%s/framescope-demo", self_dir);
    if (access(buf, X_OK) == 0)
        return buf;
    return NULL;
}

static bool wayland_session_reachable(void)
{
    const char *display = getenv("WAYLAND_DISPLAY");
    if (!display || !*display)
        return false;
    if (display[0] == '/')
        return file_exists(display);
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    if (!runtime)
        return false;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", runtime, display);
    return file_exists(path);
}

/* An X server the command can reach: $DISPLAY set, and for a local display (":N") its socket
 * there. A remote or unusual display is trusted as given. */
static bool x11_display_reachable(void)
{
    const char *display = getenv("DISPLAY");
    if (!display || !*display)
        return false;
    if (display[0] != ':')
        return true;
    char *end;
    long number = strtol(display + 1, &end, 10);
    if (end == display + 1 || number < 0 || number > 65535)
        return true;
    char path[64];
    snprintf(path, sizeof(path), "/tmp/.X11-unix/X%ld", number);
    return file_exists(path);
}

/* Runs argv (tools/child.h); a signal that came first is said here. */
static int run_command(char **argv, int *ret_signal, bool *ret_ran)
{
    int status = child_run(argv, environ, ret_signal, ret_ran);
    if (!*ret_ran && child_stop_signal)
        fprintf(stderr, "framescope: %s before %s started\n", strsignal(child_stop_signal),
                argv[0]);
    return status;
}

/* What run's options ask for. */
struct run_options {
    const char *output;         /* --output; NULL: the default name, or none */
    const char *summary_option; /* --summary: "off", "stderr", "full" or a path; NULL: none */
    bool capture;               /* false with --no-capture */
    bool compositor_auto;       /* false with --compositor never */
};

/* Reads run's options into *o (--cap goes straight into FRAMESCOPE_CAP) and leaves optind at
 * the command. Returns -1 to go on, else the exit status: 0 for --help, 2 for a usage error
 * (said on stderr). */
static int run_parse_options(int argc, char **argv, struct run_options *o)
{
    enum { OPT_NO_CAPTURE = 256, OPT_SUMMARY, OPT_COMPOSITOR, OPT_CAP, OPT_KEEP };
    static const struct option options[] = {
        { "output", required_argument, NULL, 'o' },
        { "no-capture", no_argument, NULL, OPT_NO_CAPTURE },
        { "summary", required_argument, NULL, OPT_SUMMARY },
        { "compositor", required_argument, NULL, OPT_COMPOSITOR },
        { "cap", required_argument, NULL, OPT_CAP },
        { "keep-minutes", required_argument, NULL, OPT_KEEP },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    *o = (struct run_options){ .capture = true, .compositor_auto = true };
    int opt;
    /* '+': stop at the first non-option so the command's own options stay its own. */
    while ((opt = getopt_long(argc, argv, "+o:h", options, NULL)) != -1) {
        switch (opt) {
        case 'o':
            if (!*optarg) {
                fprintf(stderr, "framescope: --output needs a directory\n");
                return 2;
            }
            o->output = optarg;
            break;
        case OPT_NO_CAPTURE:
            o->capture = false;
            break;
        case OPT_SUMMARY: {
            /* Keywords go on in lower case: the layer takes any, a script reading it may not. */
            const char *summary = NULL;
            if (fscope_config_keyword(optarg, "off"))
                summary = "off";
            else if (fscope_config_keyword(optarg, "stderr"))
                summary = "stderr";
            else if (fscope_config_keyword(optarg, "full"))
                summary = "full";
            else if (fscope_config_is_path(optarg))
                summary = optarg;
            if (!summary) {
                char shown[FSCOPE_ESCAPE_SIZE];
                fprintf(stderr, "framescope: --summary takes off, stderr, full or a path starting "
                        "with / or ./ (got '%s')\n",
                        fscope_config_escape(optarg, shown, sizeof(shown)));
                return 2;
            }
            o->summary_option = summary;
            break;
        }
        case OPT_COMPOSITOR:
            if (fscope_config_keyword(optarg, "auto")) {
                o->compositor_auto = true;
            } else if (fscope_config_keyword(optarg, "never")) {
                o->compositor_auto = false;
            } else {
                char shown[FSCOPE_ESCAPE_SIZE];
                fprintf(stderr, "framescope: --compositor takes auto or never (got '%s')\n",
                        fscope_config_escape(optarg, shown, sizeof(shown)));
                return 2;
            }
            break;
        case OPT_CAP: {
            double hz;
            const char *cap = NULL;
            if (fscope_config_keyword(optarg, "auto"))
                cap = "auto";
            else if (fscope_config_keyword(optarg, "off"))
                cap = "off";
            else if (fscope_config_parse_double(optarg, 1, 1000, &hz)) /* src/record/cap.h's limits */
                cap = optarg;
            if (!cap) {
                char shown[FSCOPE_ESCAPE_SIZE];
                fprintf(stderr, "framescope: --cap takes a rate in 1..1000 Hz, auto or off "
                        "(got '%s')\n", fscope_config_escape(optarg, shown, sizeof(shown)));
                return 2;
            }
            setenv("FRAMESCOPE_CAP", cap, 1);
            break;
        }
        case OPT_KEEP: {
            /* Read where the analysis reads it: here and in the app (its own exit). */
            uint32_t keep_ms;
            if (!report_keep_parse(optarg, &keep_ms)) {
                char shown[FSCOPE_ESCAPE_SIZE];
                fprintf(stderr, "framescope: --keep-minutes takes minutes from %g to %u or all "
                        "(got '%s')\n", KEEP_MIN_MS / 60000.0, KEEP_MAX_MS / 60000,
                        fscope_config_escape(optarg, shown, sizeof(shown)));
                return 2;
            }
            setenv("FRAMESCOPE_KEEP_MINUTES", optarg, 1);
            break;
        }
        case 'h':
            fputs(cli_usage, stdout);
            return 0;
        default:
            fputs(cli_usage, stderr);
            return 2;
        }
    }
    if (o->output && !o->capture) {
        fprintf(stderr, "framescope: --output and --no-capture contradict each other\n");
        return 2;
    }
    return -1;
}

/* Where the run's results go: the capture directory (NULL: none) and the summary. */
struct run_outputs {
    const char *output;
    char default_output[PATH_MAX];
    const char *summary_text; /* --summary or an inherited FRAMESCOPE_SUMMARY; NULL: neither */
    enum report_summary where;
};

/*
 * Names the capture directory (./framescope-APP-YYYYMMDD-HHMMSS unless --output or
 * --no-capture) and the summary's destination, and checks both now, not found out when the
 * command exits with its run lost. Then takes FRAMESCOPE_SUMMARY and FRAMESCOPE_OUTPUT out of
 * the command's environment. Returns 0, or 2 after one line on stderr.
 */
static int run_prepare_outputs(const struct run_options *o, const char *command,
                               struct run_outputs *ret)
{
    ret->output = o->output;
    if (o->capture && !ret->output) {
        char stamp[32];
        time_t now = time(NULL);
        strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&now));
        char app[PATH_MAX];
        snprintf(app, sizeof(app), "%s", command);
        snprintf(ret->default_output, sizeof(ret->default_output), "framescope-%s-%s",
                 basename(app), stamp);
        ret->output = ret->default_output;
    }
    if (ret->output &&
        !check_output(ret->output == ret->default_output ? "capture directory" : "--output",
                      ret->output))
        return 2;
    /* The summary goes where --summary says, else where an inherited FRAMESCOPE_SUMMARY does
     * (read as the layer reads it). */
    ret->summary_text = o->summary_option ? o->summary_option : getenv("FRAMESCOPE_SUMMARY");
    ret->where = REPORT_SUMMARY_STDERR;
    if (ret->summary_text && fscope_config_keyword(ret->summary_text, "off"))
        ret->where = REPORT_SUMMARY_OFF;
    else if (ret->summary_text && fscope_config_keyword(ret->summary_text, "full"))
        ret->where = REPORT_SUMMARY_FULL;
    else if (ret->summary_text && fscope_config_is_path(ret->summary_text))
        ret->where = REPORT_SUMMARY_PATH;
    if (ret->where == REPORT_SUMMARY_PATH && !check_summary_file(ret->summary_text))
        return 2;
    /* We write the summary and the capture from the recording; a process of the command that
     * does not record into it (one it starts) prints its own summary and writes no capture. */
    unsetenv("FRAMESCOPE_SUMMARY");
    unsetenv("FRAMESCOPE_OUTPUT");
    return 0;
}

/* The recording, the layer in the command's environment, and the signals passed on to it.
 * Returns 0, or 125 after one line on stderr. */
static int run_prepare_command(struct observed_recording *recording)
{
    int e = observed_recording_create(recording);
    if (e != 0) {
        fprintf(stderr, "framescope: cannot create the recording: %s\n", strerror(-e));
        return 125;
    }
    if (enable_layer() != 0) {
        fprintf(stderr, "framescope: cannot set up the layer environment: %s\n",
                strerror(errno));
        return 125;
    }
    if (child_catch_stop_signals() != 0) {
        fprintf(stderr, "framescope: cannot catch signals: %s\n", strerror(errno));
        return 125;
    }
    return 0;
}

/*
 * Runs the command, under a private compositor only where there is no display at all: a game
 * on an X11 desktop keeps the user's display and XDG_RUNTIME_DIR (its audio and D-Bus sockets,
 * and `top`). The bundled demo draws only on Wayland, so it gets one whenever no Wayland
 * session is reachable. Returns the command's status as run_command() does, or 125 (128+N
 * after signal N) when the compositor could not be started.
 */
static int run_with_display(char **command, bool is_demo, bool compositor_auto,
                            int *ret_signal, bool *ret_ran)
{
    /* Every way out goes through compositor_stop(). */
    struct compositor compositor = { 0 };
    int status;
    bool need_compositor = !wayland_session_reachable() && (is_demo || !x11_display_reachable());
    if (compositor_auto && need_compositor && compositor_start(&compositor) != 0)
        status = child_stop_signal ? 128 + child_stop_signal : 125;
    else
        status = run_command(command, ret_signal, ret_ran);
    compositor_stop(&compositor);
    return status;
}

/* Analyses what the command recorded and says where its capture went; returns the exit
 * status: the command's, or 1 where it succeeded but its capture or summary was lost. */
static int run_analyse(struct observed_recording *recording, int status, int command_signal,
                       bool ran, const struct run_outputs *out)
{
    int analysed = ran ? observed_recording_analyse(recording, command_signal ? 0 : status,
                                                    command_signal, out->where,
                                                    out->summary_text, out->output)
                       : 3;
    if (ran && analysed == 3) {
        fprintf(stderr, "framescope: the command recorded nothing (did it use Vulkan?)%s\n",
                out->output ? "; no capture written" : "");
    } else if (ran && analysed == 1) {
        if (status == 0)
            status = 1; /* said on stderr: the run's capture or summary is lost */
    } else if (out->output && ran) {
        if (command_signal)
            fprintf(stderr, "framescope: the command died of signal %d (%s); its capture, up "
                    "to then, is in %s\n", command_signal, strsignal(command_signal),
                    out->output);
        else
            fprintf(stderr, "framescope: capture in %s (open trace.perfetto-trace in ui.perfetto.dev, "
                    "report.html in a browser)\n", out->output);
    }
    return status;
}

int cmd_run(int argc, char **argv)
{
    find_self_dir();
    struct run_options options;
    int status = run_parse_options(argc, argv, &options);
    if (status >= 0)
        return status;

    char demo[PATH_MAX + 32];
    char *demo_argv[] = { demo, NULL };
    char **command = argv + optind;
    if (optind >= argc) {
        if (!find_demo(demo, sizeof(demo))) {
            fprintf(stderr, "framescope: no COMMAND given and the demo workload "
                    "(framescope-demo) is not installed beside %s\n", self_dir);
            return 125;
        }
        command = demo_argv;
    }

    struct run_outputs outputs;
    if (run_prepare_outputs(&options, command[0], &outputs) != 0)
        return 2;
    struct observed_recording recording;
    status = run_prepare_command(&recording);
    if (status == 0) {
        int command_signal = 0;
        bool ran = false;
        status = run_with_display(command, command == demo_argv, options.compositor_auto,
                                  &command_signal, &ran);
        status = run_analyse(&recording, status, command_signal, ran, &outputs);
    }
    observed_recording_close(&recording);
    return status;
}
