/* Command line of framescope-demo. Every bad value is one line on stderr and exit status 2. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"

static const char usage_text[] =
    "Usage: " DEMO_NAME " [OPTION]...\n"
    "A small Vulkan workload for framescope: a fullscreen triangle per frame, with knobs\n"
    "that make frames CPU-bound, GPU-bound or display-bound.\n"
    "\n"
    "Frames\n"
    "  --frames N              render N frames, then exit (default 300; 0 = until SIGINT\n"
    "                          or SIGTERM, which end the loop and tear down cleanly)\n"
    "  --cpu-ms F              busy-loop F ms on CLOCK_MONOTONIC in every frame (default 0)\n"
    "  --gpu-iters N           fragment shader loops N ALU iterations on 1/16 of the pixels\n"
    "                          (default 0; lavapipe caps all loops of a shader\n"
    "                          at 65535 iterations in total)\n"
    "  --stall-at F            sleep once, before recording frame F (0-based) ...\n"
    "  --stall-ms M            ... for M ms, like a load screen (both are needed)\n"
    "  --frames-in-flight K    frames the CPU may run ahead of the GPU (1-8, default 2)\n"
    "\n"
    "Output\n"
    "  --output wayland|offscreen\n"
    "                          wayland (default): an xdg_toplevel window and a swapchain on\n"
    "                          $WAYLAND_DISPLAY. offscreen: no window; each frame renders to\n"
    "                          an image of its own frame slot and calls fscope_frame_mark()\n"
    "                          when framescope is loaded\n"
    "  --present-mode fifo|mailbox|immediate\n"
    "                          swapchain present mode (default fifo); wayland only\n"
    "  --width W, --height H   image size in pixels (default 256x256)\n"
    "  --recreate-every N      destroy and recreate the swapchain every N frames, passing\n"
    "                          oldSwapchain (default 0 = only when out of date); wayland only\n"
    "\n"
    "Vulkan usage\n"
    "  --submit2               submit with vkQueueSubmit2 (Vulkan 1.3 or\n"
    "                          VK_KHR_synchronization2) instead of vkQueueSubmit\n"
    "  --threads N             N worker threads each record and submit one horizontal band of\n"
    "                          every frame from their own command pool; the main thread\n"
    "                          acquires and presents (1-64, default 1 = no workers)\n"
    "  --instances N           create N VkInstances, each with a device; only the first\n"
    "                          renders (1-16, default 1)\n"
    "  --device-cycles N       before rendering, create a VkDevice, render 3 offscreen frames\n"
    "                          (not marked as frames) and destroy it, N times (default 0)\n"
    "  --no-destroy            exit without destroying any Vulkan object\n"
    "\n"
    "Other\n"
    "  --quiet                 print nothing at the end (default: frames, seconds, fps)\n"
    "  --help                  print this help and exit\n"
    "\n"
    "Exit status: 0 on success, 1 when Vulkan or Wayland fails, 2 on a bad command line\n"
    "(including a present mode the surface does not offer).\n";

enum option_id {
    OPTION_FRAMES = 256,
    OPTION_CPU_MS,
    OPTION_GPU_ITERS,
    OPTION_PRESENT_MODE,
    OPTION_OUTPUT,
    OPTION_WIDTH,
    OPTION_HEIGHT,
    OPTION_SUBMIT2,
    OPTION_THREADS,
    OPTION_RECREATE_EVERY,
    OPTION_INSTANCES,
    OPTION_DEVICE_CYCLES,
    OPTION_NO_DESTROY,
    OPTION_STALL_AT,
    OPTION_STALL_MS,
    OPTION_FRAMES_IN_FLIGHT,
    OPTION_QUIET,
    OPTION_HELP,
};

static const struct option long_options[] = {
    { "frames", required_argument, NULL, OPTION_FRAMES },
    { "cpu-ms", required_argument, NULL, OPTION_CPU_MS },
    { "gpu-iters", required_argument, NULL, OPTION_GPU_ITERS },
    { "present-mode", required_argument, NULL, OPTION_PRESENT_MODE },
    { "output", required_argument, NULL, OPTION_OUTPUT },
    { "width", required_argument, NULL, OPTION_WIDTH },
    { "height", required_argument, NULL, OPTION_HEIGHT },
    { "submit2", no_argument, NULL, OPTION_SUBMIT2 },
    { "threads", required_argument, NULL, OPTION_THREADS },
    { "recreate-every", required_argument, NULL, OPTION_RECREATE_EVERY },
    { "instances", required_argument, NULL, OPTION_INSTANCES },
    { "device-cycles", required_argument, NULL, OPTION_DEVICE_CYCLES },
    { "no-destroy", no_argument, NULL, OPTION_NO_DESTROY },
    { "stall-at", required_argument, NULL, OPTION_STALL_AT },
    { "stall-ms", required_argument, NULL, OPTION_STALL_MS },
    { "frames-in-flight", required_argument, NULL, OPTION_FRAMES_IN_FLIGHT },
    { "quiet", no_argument, NULL, OPTION_QUIET },
    { "help", no_argument, NULL, OPTION_HELP },
    { NULL, 0, NULL, 0 },
};

static bool parse_uint(const char *option, const char *text, uint64_t min, uint64_t max,
                       uint64_t *ret_value)
{
    char *end;
    errno = 0;
    /* strtoull accepts "-1" and wraps it; refuse any sign up front. */
    unsigned long long value = strtoull(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno == ERANGE ||
        value < min || value > max) {
        if (max >= INT64_MAX)
            fprintf(stderr, DEMO_NAME ": --%s: expected an integer of at least %" PRIu64
                    ", got '%s'\n", option, min, text);
        else
            fprintf(stderr, DEMO_NAME ": --%s: expected an integer from %" PRIu64 " to %"
                    PRIu64 ", got '%s'\n", option, min, max, text);
        return false;
    }
    *ret_value = value;
    return true;
}

static bool parse_ms(const char *option, const char *text, double max, double *ret_value)
{
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(value) ||
        value < 0.0 || value > max) {
        fprintf(stderr, DEMO_NAME ": --%s: expected milliseconds from 0 to %g, got '%s'\n",
                option, max, text);
        return false;
    }
    *ret_value = value;
    return true;
}

/* getopt_long answers '?' both for an unknown word and for a value given to a flag. */
static void report_bad_option(const char *word)
{
    const char *equals = strchr(word, '=');
    if (strncmp(word, "--", 2) == 0 && equals) {
        size_t length = (size_t)(equals - word) - 2;
        for (const struct option *o = long_options; o->name; o++) {
            if (o->has_arg == no_argument && strlen(o->name) == length &&
                strncmp(o->name, word + 2, length) == 0) {
                fprintf(stderr, DEMO_NAME ": --%s: takes no value\n", o->name);
                return;
            }
        }
    }
    fprintf(stderr, DEMO_NAME ": %s: unknown or ambiguous option (see --help)\n", word);
}

const char *demo_present_mode_name(VkPresentModeKHR mode)
{
    switch (mode) {
    case VK_PRESENT_MODE_FIFO_KHR: return "fifo";
    case VK_PRESENT_MODE_MAILBOX_KHR: return "mailbox";
    case VK_PRESENT_MODE_IMMEDIATE_KHR: return "immediate";
    case VK_PRESENT_MODE_FIFO_RELAXED_KHR: return "fifo-relaxed";
    case VK_PRESENT_MODE_SHARED_DEMAND_REFRESH_KHR: return "shared-demand-refresh";
    case VK_PRESENT_MODE_SHARED_CONTINUOUS_REFRESH_KHR: return "shared-continuous-refresh";
    default: return "unknown";
    }
}

enum demo_parse_result demo_options_parse(struct demo_options *ret_options, int argc, char **argv)
{
    struct demo_options options = {
        .frames = 300,
        .present_mode = VK_PRESENT_MODE_FIFO_KHR,
        .output = DEMO_OUTPUT_WAYLAND,
        .width = 256,
        .height = 256,
        .threads = 1,
        .instances = 1,
        .stall_at = -1,
        .frames_in_flight = 2,
    };
    bool present_mode_given = false, stall_ms_given = false;
    uint64_t value;

    /* getopt's own messages do not name the value's option the way ours do. */
    opterr = 0;
    for (;;) {
        int previous_optind = optind;
        int id = getopt_long(argc, argv, ":", long_options, NULL);
        if (id == -1)
            break;
        const char *name = "";
        for (const struct option *o = long_options; o->name; o++) {
            if (o->val == id)
                name = o->name;
        }

        switch (id) {
        case OPTION_FRAMES:
            if (!parse_uint(name, optarg, 0, UINT64_MAX, &options.frames))
                return DEMO_PARSE_EXIT_USAGE;
            break;
        case OPTION_CPU_MS:
            if (!parse_ms(name, optarg, 60000.0, &options.cpu_ms))
                return DEMO_PARSE_EXIT_USAGE;
            break;
        case OPTION_GPU_ITERS:
            if (!parse_uint(name, optarg, 0, UINT32_MAX, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.gpu_iters = (uint32_t)value;
            break;
        case OPTION_PRESENT_MODE:
            if (strcmp(optarg, "fifo") == 0) {
                options.present_mode = VK_PRESENT_MODE_FIFO_KHR;
            } else if (strcmp(optarg, "mailbox") == 0) {
                options.present_mode = VK_PRESENT_MODE_MAILBOX_KHR;
            } else if (strcmp(optarg, "immediate") == 0) {
                options.present_mode = VK_PRESENT_MODE_IMMEDIATE_KHR;
            } else {
                fprintf(stderr, DEMO_NAME ": --present-mode: expected fifo, mailbox or "
                        "immediate, got '%s'\n", optarg);
                return DEMO_PARSE_EXIT_USAGE;
            }
            present_mode_given = true;
            break;
        case OPTION_OUTPUT:
            if (strcmp(optarg, "wayland") == 0) {
                options.output = DEMO_OUTPUT_WAYLAND;
            } else if (strcmp(optarg, "offscreen") == 0) {
                options.output = DEMO_OUTPUT_OFFSCREEN;
            } else {
                fprintf(stderr, DEMO_NAME ": --output: expected wayland or offscreen, "
                        "got '%s'\n", optarg);
                return DEMO_PARSE_EXIT_USAGE;
            }
            break;
        case OPTION_WIDTH:
        case OPTION_HEIGHT:
            if (!parse_uint(name, optarg, 1, 16384, &value))
                return DEMO_PARSE_EXIT_USAGE;
            *(id == OPTION_WIDTH ? &options.width : &options.height) = (uint32_t)value;
            break;
        case OPTION_SUBMIT2:
            options.submit2 = true;
            break;
        case OPTION_THREADS:
            if (!parse_uint(name, optarg, 1, DEMO_MAX_THREADS, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.threads = (uint32_t)value;
            break;
        case OPTION_RECREATE_EVERY:
            if (!parse_uint(name, optarg, 0, UINT64_MAX, &options.recreate_every))
                return DEMO_PARSE_EXIT_USAGE;
            break;
        case OPTION_INSTANCES:
            if (!parse_uint(name, optarg, 1, DEMO_MAX_INSTANCES, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.instances = (uint32_t)value;
            break;
        case OPTION_DEVICE_CYCLES:
            if (!parse_uint(name, optarg, 0, 1000, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.device_cycles = (uint32_t)value;
            break;
        case OPTION_NO_DESTROY:
            options.no_destroy = true;
            break;
        case OPTION_STALL_AT:
            if (!parse_uint(name, optarg, 0, INT64_MAX, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.stall_at = (int64_t)value;
            break;
        case OPTION_STALL_MS:
            if (!parse_ms(name, optarg, 600000.0, &options.stall_ms))
                return DEMO_PARSE_EXIT_USAGE;
            stall_ms_given = true;
            break;
        case OPTION_FRAMES_IN_FLIGHT:
            if (!parse_uint(name, optarg, 1, DEMO_MAX_FRAMES_IN_FLIGHT, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.frames_in_flight = (uint32_t)value;
            break;
        case OPTION_QUIET:
            options.quiet = true;
            break;
        case OPTION_HELP:
            fputs(usage_text, stdout);
            return DEMO_PARSE_EXIT_SUCCESS;
        case ':':
            fprintf(stderr, DEMO_NAME ": %s: needs a value (see --help)\n",
                    argv[previous_optind]);
            return DEMO_PARSE_EXIT_USAGE;
        default:
            /* optind has moved past the bad word unless it was glued to a short option. */
            report_bad_option(argv[optind > previous_optind ? optind - 1 : previous_optind]);
            return DEMO_PARSE_EXIT_USAGE;
        }
    }

    if (optind < argc) {
        fprintf(stderr, DEMO_NAME ": '%s': unexpected argument (see --help)\n", argv[optind]);
        return DEMO_PARSE_EXIT_USAGE;
    }
    if (options.output == DEMO_OUTPUT_OFFSCREEN && present_mode_given) {
        fprintf(stderr, DEMO_NAME ": --present-mode: needs --output wayland\n");
        return DEMO_PARSE_EXIT_USAGE;
    }
    if (options.output == DEMO_OUTPUT_OFFSCREEN && options.recreate_every > 0) {
        fprintf(stderr, DEMO_NAME ": --recreate-every: needs --output wayland\n");
        return DEMO_PARSE_EXIT_USAGE;
    }
    if (stall_ms_given != (options.stall_at >= 0)) {
        fprintf(stderr, DEMO_NAME ": %s: needs %s too\n",
                stall_ms_given ? "--stall-ms" : "--stall-at",
                stall_ms_given ? "--stall-at" : "--stall-ms");
        return DEMO_PARSE_EXIT_USAGE;
    }
    if (options.threads > options.height) {
        fprintf(stderr, DEMO_NAME ": --threads: %" PRIu32 " bands do not fit in a height of %"
                PRIu32 " rows\n", options.threads, options.height);
        return DEMO_PARSE_EXIT_USAGE;
    }

    *ret_options = options;
    return DEMO_PARSE_RUN;
}
