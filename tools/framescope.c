/* framescope: the command-line front end.
 *
 *   framescope run [OPTIONS] [--] [COMMAND [ARGS...]]
 *
 * Runs COMMAND (the bundled demo workload when none is given) with VK_LAYER_FRAMESCOPE
 * enabled, starting a private headless Weston when there is no Wayland session, and returns
 * the command's exit status. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
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

/* The one parser of every framescope value, compiled in: the CLI does not load libframescope
 * (its constructor would start profiling the CLI itself). */
#include "../src/config.c"

extern char **environ;

#ifndef FRAMESCOPE_VERSION
#define FRAMESCOPE_VERSION "unknown"
#endif
#ifndef FRAMESCOPE_BINDIR
#define FRAMESCOPE_BINDIR "/usr/local/bin"
#endif

static const char usage[] =
    "usage: framescope run [OPTIONS] [--] [COMMAND [ARGS...]]\n"
    "       framescope --help | --version\n"
    "\n"
    "Runs COMMAND under the framescope Vulkan layer and prints, when it exits, what held its\n"
    "frames back (CPU, GPU, display, cap, or CPU-GPU serialisation) with the numbers behind\n"
    "the verdict. With no COMMAND, profiles the bundled demo workload (framescope-demo).\n"
    "\n"
    "options for run:\n"
    "  -o, --output DIR     write the capture (summary.json, frames.csv, zones.csv,\n"
    "                       trace.json) to DIR\n"
    "                       (default: ./framescope-APP-YYYYMMDD-HHMMSS)\n"
    "      --no-capture     print the summary only; write no capture\n"
    "      --summary WHERE  off, stderr (default) or a file path for the summary\n"
    "      --cap RATE       cap the frame rate: HZ (1-1000), auto (the refresh of the output\n"
    "                       the frames are shown on) or off (default)\n"
    "      --compositor MODE  auto (default): start a private headless Weston when no\n"
    "                       Wayland session is reachable; never: do not start one\n"
    "  -h, --help           this text\n"
    "\n"
    "The environment variables the layer reads (FRAMESCOPE_*) pass through; see README.md.\n"
    "Exit status: the command's own, 128+N if it died of signal N, 125 if framescope failed\n"
    "before running it, 2 for a usage error.\n";

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

struct compositor {
    pid_t pid;
    char runtime_dir[64];
};

static int compositor_start(struct compositor *c)
{
    const char *weston = "weston";
    snprintf(c->runtime_dir, sizeof(c->runtime_dir), "/tmp/framescope-XXXXXX");
    if (!mkdtemp(c->runtime_dir)) {
        fprintf(stderr, "framescope: cannot create a runtime directory: %s\n", strerror(errno));
        return -1;
    }
    chmod(c->runtime_dir, 0700);
    setenv("XDG_RUNTIME_DIR", c->runtime_dir, 1);
    char log_path[128];
    snprintf(log_path, sizeof(log_path), "%s/weston.log", c->runtime_dir);
    char *argv[] = { (char *)weston, "--backend=headless-backend.so", "--socket=framescope-0",
                     "--use-pixman", "--idle-time=0", NULL };
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    int r = posix_spawnp(&c->pid, weston, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (r != 0) {
        fprintf(stderr, "framescope: no Wayland session, and weston could not be started (%s);"
                " install it (apt-get install weston) or pass --compositor never\n", strerror(r));
        rmdir(c->runtime_dir);
        c->pid = 0;
        return -1;
    }
    char socket[128];
    snprintf(socket, sizeof(socket), "%s/framescope-0", c->runtime_dir);
    for (int i = 0; i < 200 && !file_exists(socket); i++) {
        int status;
        if (waitpid(c->pid, &status, WNOHANG) == c->pid) {
            fprintf(stderr, "framescope: headless weston exited at start-up; its log is %s\n",
                    log_path);
            c->pid = 0;
            return -1;
        }
        usleep(50000);
    }
    if (!file_exists(socket)) {
        fprintf(stderr, "framescope: headless weston did not open its socket within 10 s\n");
        return -1;
    }
    setenv("WAYLAND_DISPLAY", "framescope-0", 1);
    fprintf(stderr, "framescope: no Wayland session; started a headless Weston "
            "(WAYLAND_DISPLAY=framescope-0, XDG_RUNTIME_DIR=%s)\n", c->runtime_dir);
    return 0;
}

static void compositor_stop(struct compositor *c)
{
    if (c->pid > 0) {
        kill(c->pid, SIGTERM);
        waitpid(c->pid, NULL, 0);
    }
    if (c->runtime_dir[0]) {
        char path[128];
        const char *leftovers[] = { "weston.log", "framescope-0", "framescope-0.lock" };
        for (unsigned i = 0; i < sizeof(leftovers) / sizeof(leftovers[0]); i++) {
            snprintf(path, sizeof(path), "%s/%s", c->runtime_dir, leftovers[i]);
            unlink(path);
        }
        rmdir(c->runtime_dir);
    }
}

static int run_command(char **argv)
{
    pid_t pid;
    int r = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
    if (r != 0) {
        fprintf(stderr, "framescope: cannot run %s: %s\n", argv[0], strerror(r));
        return 125;
    }
    /* The terminal's ^C reaches the child too; we wait for it to finish its summary. */
    signal(SIGINT, SIG_IGN);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return 125;
    }
    signal(SIGINT, SIG_DFL);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

static int cmd_run(int argc, char **argv)
{
    enum { OPT_NO_CAPTURE = 256, OPT_SUMMARY, OPT_COMPOSITOR, OPT_CAP };
    static const struct option options[] = {
        { "output", required_argument, NULL, 'o' },
        { "no-capture", no_argument, NULL, OPT_NO_CAPTURE },
        { "summary", required_argument, NULL, OPT_SUMMARY },
        { "compositor", required_argument, NULL, OPT_COMPOSITOR },
        { "cap", required_argument, NULL, OPT_CAP },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *output = NULL;
    bool capture = true, compositor_auto = true;
    int opt;
    /* '+': stop at the first non-option so the command's own options stay its own. */
    while ((opt = getopt_long(argc, argv, "+o:h", options, NULL)) != -1) {
        switch (opt) {
        case 'o':
            if (!*optarg) {
                fprintf(stderr, "framescope: --output needs a directory\n");
                return 2;
            }
            output = optarg;
            break;
        case OPT_NO_CAPTURE:
            capture = false;
            break;
        case OPT_SUMMARY: {
            /* Keywords go on in lower case: the layer takes any, a script reading it may not. */
            const char *summary = NULL;
            if (fscope_config_keyword(optarg, "off"))
                summary = "off";
            else if (fscope_config_keyword(optarg, "stderr"))
                summary = "stderr";
            else if (fscope_config_is_path(optarg))
                summary = optarg;
            if (!summary) {
                char shown[FSCOPE_ESCAPE_SIZE];
                fprintf(stderr, "framescope: --summary takes off, stderr or a path starting "
                        "with / or ./ (got '%s')\n",
                        fscope_config_escape(optarg, shown, sizeof(shown)));
                return 2;
            }
            setenv("FRAMESCOPE_SUMMARY", summary, 1);
            break;
        }
        case OPT_COMPOSITOR:
            if (fscope_config_keyword(optarg, "auto")) {
                compositor_auto = true;
            } else if (fscope_config_keyword(optarg, "never")) {
                compositor_auto = false;
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
            else if (fscope_config_parse_double(optarg, 1, 1000, &hz)) /* src/cap.h's limits */
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
        case 'h':
            fputs(usage, stdout);
            return 0;
        default:
            fputs(usage, stderr);
            return 2;
        }
    }
    if (output && !capture) {
        fprintf(stderr, "framescope: --output and --no-capture contradict each other\n");
        return 2;
    }

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

    char default_output[PATH_MAX];
    if (capture && !output) {
        char stamp[32];
        time_t now = time(NULL);
        strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&now));
        char app[PATH_MAX];
        snprintf(app, sizeof(app), "%s", command[0]);
        snprintf(default_output, sizeof(default_output), "framescope-%s-%s", basename(app),
                 stamp);
        output = default_output;
    }
    if (output)
        setenv("FRAMESCOPE_OUTPUT", output, 1);

    if (enable_layer() != 0) {
        fprintf(stderr, "framescope: cannot set up the layer environment: %s\n",
                strerror(errno));
        return 125;
    }

    struct compositor compositor = { 0 };
    if (compositor_auto && !wayland_session_reachable() && compositor_start(&compositor) != 0) {
        compositor_stop(&compositor);
        return 125;
    }
    int status = run_command(command);
    compositor_stop(&compositor);
    if (output && status != 125) {
        char summary[PATH_MAX + 32];
        snprintf(summary, sizeof(summary), "%s/summary.json", output);
        if (file_exists(summary))
            fprintf(stderr, "framescope: capture in %s (open trace.json in ui.perfetto.dev)\n",
                    output);
        else
            fprintf(stderr, "framescope: the command wrote no capture to %s (did it use "
                    "Vulkan?)\n", output);
    }
    return status;
}

int main(int argc, char **argv)
{
    find_self_dir();
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        fputs(usage, stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("framescope %s\n", FRAMESCOPE_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    fprintf(stderr, "framescope: unknown command '%s'\n\n%s", argv[1], usage);
    return 2;
}
