/* Command line of framescope-demo. Every bad value is one line on stderr and exit status 2. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
    "  --lock-wait-ms F        every frame, wait on a mutex a worker thread holds for F ms\n"
    "                          (sleeping outside Vulkan, as a render thread waits for a\n"
    "                          worker's lock)\n"
    "  --sleep-limit HZ        the app's own frame limiter: after each present, sleep on a\n"
    "                          timer until the next 1/HZ deadline (1-1000), as games that\n"
    "                          cap themselves do\n"
    "  --frame-callback        ask for a wl_surface.frame callback before each present and\n"
    "                          wait for it after (in poll, outside Vulkan), as video players\n"
    "                          and toolkits pace themselves; wayland only, not with\n"
    "                          --thread-split or --no-fence-wait\n"
    "  --fault-mb N            every frame, map N MiB of a file whose pages were just dropped\n"
    "                          from the page cache and touch every page (page faults, major\n"
    "                          ones read from disk, as streamed assets do)\n"
    "  --cpu-hog               a thread that spins for the whole run (run the demo under\n"
    "                          taskset -c N to make it compete for one CPU)\n"
    "  --gpu-iters N           fragment shader loops N ALU iterations on 1/16 of the pixels\n"
    "                          (default 0; lavapipe caps all loops of a shader\n"
    "                          at 65535 iterations in total)\n"
    "  --passes NAME:N,...     the frame as up to 4 render passes, each in a VK_EXT_debug_utils\n"
    "                          label region NAME, each with N --gpu-iters (single-thread\n"
    "                          frames; replaces --gpu-iters)\n"
    "  --stall-at F            sleep once, before recording frame F (0-based) ...\n"
    "  --stall-ms M            ... for M ms, like a load screen (both are needed)\n"
    "  --cpu-spike F:M         busy-loop M ms once, before recording frame F (0-based)\n"
    "  --fork-helper-at F      before recording frame F, fork a child that does not exec and\n"
    "                          outlives the demo (a crash handler's helper); it prints\n"
    "                          \"helper PID\" on stdout and exits when its stdin closes\n"
    "  --alloc-at F:MB         once, before recording frame F, allocate MB MiB of host-visible\n"
    "                          device memory, write every page, and free it (a streamed\n"
    "                          level's buffers)\n"
    "  --pass-spike F:N        in frame F, the first of --passes runs N iterations (a GPU\n"
    "                          spike in one pass)\n"
    "  --faults-at F:MB        once, before recording frame F, map MB MiB of a file whose\n"
    "                          pages were just dropped from the page cache and touch every\n"
    "                          page (a page-fault storm, as a streamed level's assets)\n"
    "  --pipelines-at F:N      create N graphics pipelines (and their shader modules) with no\n"
    "                          cache once, before recording frame F, then destroy them (a\n"
    "                          level loading its materials mid-run)\n"
    "  --frames-in-flight K    frames the CPU may run ahead of the GPU (1-8, default 2)\n"
    "  --leak-kb K             every frame, vkAllocateMemory K KiB of device memory (device-\n"
    "                          local where there is such) named \"leak N\" for frame N, kept\n"
    "                          until exit: live device memory grows frame by frame (0-1048576,\n"
    "                          default 0 = off). At exit prints \"leaked K KiB a frame, L\n"
    "                          allocations\", even with --quiet\n"
    "\n"
    "Many draws\n"
    "  --draws N               every frame also records N small indexed draws over the image\n"
    "                          in a render pass of their own, in a VK_EXT_debug_utils label\n"
    "                          region 'cubes' (0-1000000, default 0 = off). Each command\n"
    "                          buffer binds the pipeline and sets viewport and a 4x4-pixel\n"
    "                          scissor once, then per draw binds a vertex buffer, an index\n"
    "                          buffer and a descriptor set and draws 3 indices. At exit\n"
    "                          prints, even with --quiet, the binds per frame in those\n"
    "                          command buffers (the frame's own pass binds one more pipeline)\n"
    "                          and their recording time per vkCmd* call. Not with --threads,\n"
    "                          --no-fence-wait or --self-timestamps\n"
    "  --record-threads T      record the draws on T threads: the render thread and T - 1\n"
    "                          workers, each with a command pool of its own per frame slot\n"
    "                          (no RESET_COMMAND_BUFFER), reset once a frame; thread t draws\n"
    "                          N / T, the first N % T one more (1-16, at most --draws,\n"
    "                          default 1)\n"
    "  --secondary             record the draws into secondary command buffers, executed by\n"
    "                          the frame's command buffer in a render pass begun with\n"
    "                          SECONDARY_COMMAND_BUFFERS (default: primaries with a render\n"
    "                          pass each, submitted after the frame's in the same batch)\n"
    "  --redundant-binds       every draw binds the same vertex buffer, index buffer and\n"
    "                          descriptor set, so all binds but a command buffer's first\n"
    "                          set what is bound (default: two of each, alternated)\n"
    "  --wide-binds            each draw binds two vertex buffers in one call and two\n"
    "                          descriptor sets in one call, the second with a dynamic uniform\n"
    "                          buffer at the mesh's offset: the same sets in every draw, so\n"
    "                          without --redundant-binds only the offset changes\n"
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
    "  --api-version 1.0|1.1|1.2|1.3\n"
    "                          the instance's VkApplicationInfo.apiVersion (default: the\n"
    "                          loader's, at most 1.3); with 1.0 the demo calls nothing that\n"
    "                          is newer than Vulkan 1.0\n"
    "  --submit2               submit with vkQueueSubmit2 (Vulkan 1.3 or\n"
    "                          VK_KHR_synchronization2) instead of vkQueueSubmit; with\n"
    "                          --api-version, needs 1.3\n"
    "  --vk12-features         chain a VkPhysicalDeviceVulkan12Features with every feature\n"
    "                          off into VkDeviceCreateInfo, except timelineSemaphore when\n"
    "                          --host-delay-ms or --late-signal needs it (Vulkan 1.2 or 1.3)\n"
    "  --threads N             N worker threads each record and submit one horizontal band of\n"
    "                          every frame from their own command pool; the main thread\n"
    "                          acquires and presents (1-64, default 1 = no workers)\n"
    "  --instances N           create N VkInstances, each with a device; only the first\n"
    "                          renders (1-16, default 1)\n"
    "  --device-cycles N       before rendering, create a VkDevice, render 3 offscreen frames\n"
    "                          (not marked as frames) and destroy it, N times (default 0)\n"
    "  --devices N             1 or 2 (default 1). 2: a second VkDevice renders offscreen on\n"
    "                          a thread of its own for the whole run and marks no frames\n"
    "  --second-device-gpu-iters N\n"
    "                          --gpu-iters of the second device (default 0); needs\n"
    "                          --devices 2\n"
    "  --no-destroy            exit without destroying any Vulkan object\n"
    "  --submits N             every submission the demo makes becomes N: N - 1 batches of\n"
    "                          one empty command buffer, each in a vkQueueSubmit of its own,\n"
    "                          before it (an\n"
    "                          engine that submits dozens of times a frame, as DXVK, vkd3d\n"
    "                          and zink do; 1-256, default 1)\n"
    "  --transfer-queue        also submit an empty batch every frame to a queue of a family\n"
    "                          without graphics (the one with the fewest timestamp bits: an\n"
    "                          upload queue, as DXVK and vkd3d use); not with --thread-split\n"
    "  --self-timestamps       time each frame's own render pass with timestamps the demo\n"
    "                          writes itself and print the mean GPU time per frame at the\n"
    "                          end (a reference for a profiler's GPU busy); not with\n"
    "                          --threads, --no-fence-wait or --thread-split\n"
    "\n"
    "Engine patterns\n"
    "  --serial                wait on each frame's fence right after submitting it: one\n"
    "                          frame in flight, so CPU and GPU take turns; not with\n"
    "                          --frames-in-flight\n"
    "  --no-fence-wait         submit with no fence at all; throttle only on a fence given to\n"
    "                          vkAcquireNextImageKHR (no semaphore), waited on before the\n"
    "                          submit. One command buffer per swapchain image, recorded once\n"
    "                          (SIMULTANEOUS_USE) and again only when the swapchain is\n"
    "                          recreated, after vkDeviceWaitIdle. Wayland only; not with\n"
    "                          --threads, --serial, --thread-split or --frames-in-flight\n"
    "  --record-once MODE      offscreen: one command buffer per frame slot (and its image),\n"
    "                          recorded once and submitted again every time the slot comes\n"
    "                          round, after its fence; MODE slot: without SIMULTANEOUS_USE,\n"
    "                          simultaneous: with it (as vkcube records). Offscreen only (on\n"
    "                          Wayland --no-fence-wait records once); not with --threads,\n"
    "                          --thread-split, --passes, --draws or --self-timestamps\n"
    "  --thread-split          DXVK-like: the main thread acquires (and spends --cpu-ms and\n"
    "                          --stall-ms), a submit thread submits and then waits on that\n"
    "                          submission's fence, a present thread presents; wayland only\n"
    "  --host-delay-ms F       each frame's first submission also waits (all-commands) on a\n"
    "                          timeline semaphore value that a helper thread signals F ms\n"
    "                          after the submit returned; the frame's present first waits\n"
    "                          for that signal (0-60000, Vulkan 1.2 or 1.3)\n"
    "  --late-signal           each frame's first submission waits on a timeline semaphore\n"
    "                          value that the submitting thread signals only after a second,\n"
    "                          empty vkQueueSubmit, before presenting (Vulkan 1.2 or 1.3;\n"
    "                          not with --host-delay-ms)\n"
    "  --disconnect-early      at exit, wl_display_disconnect() after the swapchain is\n"
    "                          destroyed but before vkDestroySurfaceKHR; wayland only, not\n"
    "                          with --no-destroy. Mesa's own Wayland WSI crashes in that\n"
    "                          vkDestroySurfaceKHR (seen with 22.3 lavapipe, Debian 12)\n"
    "  --die SIGNAL            after the last of --frames N frames was presented, die of\n"
    "                          SIGNAL (kill, term, int, segv: a real invalid write, abrt)\n"
    "                          with its default action: no clean-up, as a killed or crashed\n"
    "                          game ends\n"
    "  --fork-child            after the 10th frame, fork(); the child calls exit(0) at once\n"
    "                          and the parent waits for it, then goes on (needs --frames 0\n"
    "                          or at least 10)\n"
    "\n"
    "Other\n"
    "  --quiet                 print nothing at the end (default: frames, seconds, fps), but\n"
    "                          what --self-timestamps, --draws and --leak-kb report\n"
    "  --help                  print this help and exit\n"
    "\n"
    "Exit status: 0 on success, 1 when Vulkan or Wayland fails, 2 on a bad command line\n"
    "(including a present mode the surface does not offer).\n";

enum option_id {
    OPTION_FRAMES = 256,
    OPTION_CPU_MS,
    OPTION_GPU_ITERS,
    OPTION_PASSES,
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
    OPTION_FORK_HELPER_AT,
    OPTION_STALL_MS,
    OPTION_CPU_SPIKE,
    OPTION_PIPELINES_AT,
    OPTION_FAULTS_AT,
    OPTION_PASS_SPIKE,
    OPTION_ALLOC_AT,
    OPTION_FRAMES_IN_FLIGHT,
    OPTION_QUIET,
    OPTION_HELP,
    OPTION_API_VERSION,
    OPTION_VK12_FEATURES,
    OPTION_NO_FENCE_WAIT,
    OPTION_RECORD_ONCE,
    OPTION_THREAD_SPLIT,
    OPTION_SERIAL,
    OPTION_HOST_DELAY_MS,
    OPTION_LATE_SIGNAL,
    OPTION_DEVICES,
    OPTION_SECOND_DEVICE_GPU_ITERS,
    OPTION_DISCONNECT_EARLY,
    OPTION_FORK_CHILD,
    OPTION_DIE,
    OPTION_LOCK_WAIT_MS,
    OPTION_SLEEP_LIMIT,
    OPTION_FRAME_CALLBACK,
    OPTION_CPU_HOG,
    OPTION_FAULT_MB,
    OPTION_SELF_TIMESTAMPS,
    OPTION_TRANSFER_QUEUE,
    OPTION_SUBMITS,
    OPTION_DRAWS,
    OPTION_RECORD_THREADS,
    OPTION_SECONDARY,
    OPTION_REDUNDANT_BINDS,
    OPTION_WIDE_BINDS,
    OPTION_LEAK_KB,
};

static const struct option long_options[] = {
    { "frames", required_argument, NULL, OPTION_FRAMES },
    { "cpu-ms", required_argument, NULL, OPTION_CPU_MS },
    { "lock-wait-ms", required_argument, NULL, OPTION_LOCK_WAIT_MS },
    { "sleep-limit", required_argument, NULL, OPTION_SLEEP_LIMIT },
    { "frame-callback", no_argument, NULL, OPTION_FRAME_CALLBACK },
    { "cpu-hog", no_argument, NULL, OPTION_CPU_HOG },
    { "fault-mb", required_argument, NULL, OPTION_FAULT_MB },
    { "gpu-iters", required_argument, NULL, OPTION_GPU_ITERS },
    { "passes", required_argument, NULL, OPTION_PASSES },
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
    { "fork-helper-at", required_argument, NULL, OPTION_FORK_HELPER_AT },
    { "stall-ms", required_argument, NULL, OPTION_STALL_MS },
    { "cpu-spike", required_argument, NULL, OPTION_CPU_SPIKE },
    { "pipelines-at", required_argument, NULL, OPTION_PIPELINES_AT },
    { "faults-at", required_argument, NULL, OPTION_FAULTS_AT },
    { "pass-spike", required_argument, NULL, OPTION_PASS_SPIKE },
    { "alloc-at", required_argument, NULL, OPTION_ALLOC_AT },
    { "frames-in-flight", required_argument, NULL, OPTION_FRAMES_IN_FLIGHT },
    { "quiet", no_argument, NULL, OPTION_QUIET },
    { "help", no_argument, NULL, OPTION_HELP },
    { "api-version", required_argument, NULL, OPTION_API_VERSION },
    { "vk12-features", no_argument, NULL, OPTION_VK12_FEATURES },
    { "no-fence-wait", no_argument, NULL, OPTION_NO_FENCE_WAIT },
    { "record-once", required_argument, NULL, OPTION_RECORD_ONCE },
    { "thread-split", no_argument, NULL, OPTION_THREAD_SPLIT },
    { "serial", no_argument, NULL, OPTION_SERIAL },
    { "host-delay-ms", required_argument, NULL, OPTION_HOST_DELAY_MS },
    { "late-signal", no_argument, NULL, OPTION_LATE_SIGNAL },
    { "devices", required_argument, NULL, OPTION_DEVICES },
    { "second-device-gpu-iters", required_argument, NULL, OPTION_SECOND_DEVICE_GPU_ITERS },
    { "disconnect-early", no_argument, NULL, OPTION_DISCONNECT_EARLY },
    { "fork-child", no_argument, NULL, OPTION_FORK_CHILD },
    { "die", required_argument, NULL, OPTION_DIE },
    { "self-timestamps", no_argument, NULL, OPTION_SELF_TIMESTAMPS },
    { "transfer-queue", no_argument, NULL, OPTION_TRANSFER_QUEUE },
    { "submits", required_argument, NULL, OPTION_SUBMITS },
    { "draws", required_argument, NULL, OPTION_DRAWS },
    { "record-threads", required_argument, NULL, OPTION_RECORD_THREADS },
    { "secondary", no_argument, NULL, OPTION_SECONDARY },
    { "redundant-binds", no_argument, NULL, OPTION_REDUNDANT_BINDS },
    { "wide-binds", no_argument, NULL, OPTION_WIDE_BINDS },
    { "leak-kb", required_argument, NULL, OPTION_LEAK_KB },
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

/* "FRAME:REST": the frame (0-based) in *ret_frame and what follows the colon in *ret_rest;
 * false after a line naming what the option takes (rest_name: "MS", "COUNT"). */
static bool parse_frame_and(const char *option, const char *text, const char *rest_name,
                            uint64_t *ret_frame, const char **ret_rest)
{
    char frame[32];
    const char *colon = strchr(text, ':');
    if (!colon || (size_t)(colon - text) >= sizeof(frame)) {
        fprintf(stderr, DEMO_NAME ": --%s takes FRAME:%s, not '%s'\n", option, rest_name, text);
        return false;
    }
    memcpy(frame, text, (size_t)(colon - text));
    frame[colon - text] = '\0';
    *ret_rest = colon + 1;
    return parse_uint(option, frame, 0, INT64_MAX, ret_frame);
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

/* "NAME:N,NAME:N": up to DEMO_MAX_PASSES passes, names of 1..31 printable bytes without ':'
 * or ','. Prints what is wrong. */
static bool parse_passes(const char *text, struct demo_options *options)
{
    char copy[256];
    if (strlen(text) >= sizeof(copy)) {
        fprintf(stderr, DEMO_NAME ": --passes: too long\n");
        return false;
    }
    snprintf(copy, sizeof(copy), "%s", text);
    options->pass_count = 0;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(item, ':');
        uint64_t iters;
        size_t len = colon ? (size_t)(colon - item) : 0;
        if (options->pass_count == DEMO_MAX_PASSES || !colon || len == 0 ||
            len >= sizeof(options->passes[0].name)) {
            fprintf(stderr, DEMO_NAME ": --passes: expected up to %d NAME:N separated by ',', "
                    "names of 1..31 bytes, not '%s'\n", DEMO_MAX_PASSES, text);
            return false;
        }
        if (!parse_uint("passes", colon + 1, 0, 65535, &iters))
            return false;
        struct demo_pass *pass = &options->passes[options->pass_count++];
        memcpy(pass->name, item, len);
        pass->name[len] = '\0';
        pass->gpu_iters = (uint32_t)iters;
    }
    if (!options->pass_count) {
        fprintf(stderr, DEMO_NAME ": --passes: no pass given\n");
        return false;
    }
    return true;
}

/* The engine-pattern options against each other and the rest. Prints the first conflict. */
static bool check_combinations(const struct demo_options *options, bool frames_in_flight_given,
                               bool second_device_gpu_iters_given, bool record_threads_given)
{
    bool wayland = options->output == DEMO_OUTPUT_WAYLAND;
    /* 0 is the loader's version, checked when the device is made. */
    uint32_t api_version = options->api_version;

    if (options->submit2 && api_version && api_version < VK_API_VERSION_1_3) {
        fprintf(stderr, DEMO_NAME ": --submit2: needs --api-version 1.3\n");
        return false;
    }
    if (options->vk12_features && api_version && api_version < VK_API_VERSION_1_2) {
        fprintf(stderr, DEMO_NAME ": --vk12-features: needs --api-version 1.2 or 1.3\n");
        return false;
    }
    const char *timeline_user = options->host_delay ? "--host-delay-ms"
                                : options->late_signal ? "--late-signal" : NULL;
    if (timeline_user && api_version && api_version < VK_API_VERSION_1_2) {
        fprintf(stderr, DEMO_NAME ": %s: timeline semaphores need --api-version 1.2 or 1.3\n",
                timeline_user);
        return false;
    }
    if (options->host_delay && options->late_signal) {
        fprintf(stderr, DEMO_NAME ": --late-signal: cannot be combined with --host-delay-ms\n");
        return false;
    }

    if (options->no_fence_wait) {
        const char *conflict = !wayland ? "--output offscreen"
                               : options->threads > 1 ? "--threads above 1"
                               : options->serial ? "--serial"
                               : options->thread_split ? "--thread-split"
                               : frames_in_flight_given ? "--frames-in-flight" : NULL;
        if (conflict) {
            fprintf(stderr, DEMO_NAME ": --no-fence-wait: cannot be combined with %s\n",
                    conflict);
            return false;
        }
    }
    if (options->record_once) {
        const char *conflict = wayland ? "--output wayland (there, --no-fence-wait records once)"
                               : options->threads > 1 ? "--threads above 1"
                               : options->thread_split ? "--thread-split"
                               : options->pass_count ? "--passes"
                               : options->draws ? "--draws"
                               : options->self_timestamps ? "--self-timestamps" : NULL;
        if (conflict) {
            fprintf(stderr, DEMO_NAME ": --record-once: cannot be combined with %s\n",
                    conflict);
            return false;
        }
    }
    if (options->frame_callback && (!wayland || options->thread_split ||
                                    options->no_fence_wait)) {
        fprintf(stderr, DEMO_NAME ": --frame-callback: needs --output wayland, without "
                "--thread-split or --no-fence-wait\n");
        return false;
    }
    if (options->thread_split && !wayland) {
        fprintf(stderr, DEMO_NAME ": --thread-split: needs --output wayland\n");
        return false;
    }
    if (options->serial && frames_in_flight_given) {
        fprintf(stderr, DEMO_NAME ": --serial: cannot be combined with --frames-in-flight "
                "(it keeps one frame in flight)\n");
        return false;
    }
    if (options->pass_spike_at >= 0 && !options->pass_count) {
        fprintf(stderr, DEMO_NAME ": --pass-spike: needs --passes (it spikes the first pass)\n");
        return false;
    }
    if (options->pass_count &&
        (options->threads > 1 || options->no_fence_wait || options->thread_split)) {
        fprintf(stderr, DEMO_NAME ": --passes: records the single-thread frame, so not with "
                "--threads, --no-fence-wait or --thread-split\n");
        return false;
    }
    if (second_device_gpu_iters_given && options->devices < 2) {
        fprintf(stderr, DEMO_NAME ": --second-device-gpu-iters: needs --devices 2\n");
        return false;
    }
    if (options->disconnect_early && !wayland) {
        fprintf(stderr, DEMO_NAME ": --disconnect-early: needs --output wayland\n");
        return false;
    }
    if (options->disconnect_early && options->no_destroy) {
        fprintf(stderr, DEMO_NAME ": --disconnect-early: cannot be combined with "
                "--no-destroy\n");
        return false;
    }
    if (options->self_timestamps &&
        (options->threads > 1 || options->no_fence_wait || options->thread_split)) {
        fprintf(stderr, DEMO_NAME ": --self-timestamps: times the single-thread frame, so not "
                "with --threads, --no-fence-wait or --thread-split\n");
        return false;
    }
    if (options->transfer_queue && options->thread_split) {
        fprintf(stderr, DEMO_NAME ": --transfer-queue: not with --thread-split\n");
        return false;
    }
    if (options->die_signal && options->frames == 0) {
        fprintf(stderr, DEMO_NAME ": --die: dies after --frames N, so needs N > 0\n");
        return false;
    }
    if (!options->draws) {
        const char *needs_draws = record_threads_given ? "--record-threads"
                                  : options->secondary ? "--secondary"
                                  : options->redundant_binds ? "--redundant-binds"
                                  : options->wide_binds ? "--wide-binds" : NULL;
        if (needs_draws) {
            fprintf(stderr, DEMO_NAME ": %s: needs --draws\n", needs_draws);
            return false;
        }
    } else {
        /* The draws join the single-thread frame, recorded afresh in every frame. */
        const char *conflict = options->threads > 1 ? "--threads above 1 (its workers record "
                                                      "bands; use --record-threads)"
                               : options->no_fence_wait ? "--no-fence-wait (it records once "
                                                          "per image)"
                               : options->self_timestamps ? "--self-timestamps (it times the "
                                                            "frame's own pass)" : NULL;
        if (conflict) {
            fprintf(stderr, DEMO_NAME ": --draws: cannot be combined with %s\n", conflict);
            return false;
        }
        if (options->record_threads > options->draws) {
            fprintf(stderr, DEMO_NAME ": --record-threads: %" PRIu32 " threads need at least "
                    "as many --draws, got %" PRIu32 "\n", options->record_threads,
                    options->draws);
            return false;
        }
    }
    if (options->fork_child && options->frames > 0 && options->frames < 10) {
        fprintf(stderr, DEMO_NAME ": --fork-child: forks after the 10th frame, so needs "
                "--frames 0 or at least 10\n");
        return false;
    }
    return true;
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
        .fork_helper_at = -1,
        .cpu_spike_at = -1,
        .pipelines_at = -1,
        .faults_at = -1,
        .pass_spike_at = -1,
        .alloc_at = -1,
        .frames_in_flight = 2,
        .submits = 1,
        .devices = 1,
        .record_threads = 1,
    };
    bool present_mode_given = false, stall_ms_given = false, frames_in_flight_given = false;
    bool second_device_gpu_iters_given = false, record_threads_given = false;
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
        case OPTION_PASSES:
            if (!parse_passes(optarg, &options))
                return DEMO_PARSE_EXIT_USAGE;
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
        case OPTION_FORK_HELPER_AT:
            if (!parse_uint(name, optarg, 0, INT64_MAX, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.fork_helper_at = (int64_t)value;
            break;
        case OPTION_STALL_AT:
            if (!parse_uint(name, optarg, 0, INT64_MAX, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.stall_at = (int64_t)value;
            break;
        case OPTION_CPU_SPIKE: {
            const char *rest;
            if (!parse_frame_and(name, optarg, "MS", &value, &rest) ||
                !parse_ms(name, rest, 60000.0, &options.cpu_spike_ms))
                return DEMO_PARSE_EXIT_USAGE;
            options.cpu_spike_at = (int64_t)value;
            break;
        }
        case OPTION_ALLOC_AT: {
            const char *rest;
            uint64_t mb;
            if (!parse_frame_and(name, optarg, "MB", &value, &rest) ||
                !parse_uint(name, rest, 1, 4096, &mb))
                return DEMO_PARSE_EXIT_USAGE;
            options.alloc_at = (int64_t)value;
            options.alloc_mb = (uint32_t)mb;
            break;
        }
        case OPTION_PASS_SPIKE: {
            const char *rest;
            uint64_t iters;
            if (!parse_frame_and(name, optarg, "N", &value, &rest) ||
                !parse_uint(name, rest, 0, 65535, &iters))
                return DEMO_PARSE_EXIT_USAGE;
            options.pass_spike_at = (int64_t)value;
            options.pass_spike_iters = (uint32_t)iters;
            break;
        }
        case OPTION_FAULTS_AT: {
            const char *rest;
            uint64_t mb;
            if (!parse_frame_and(name, optarg, "MB", &value, &rest) ||
                !parse_uint(name, rest, 1, 1024, &mb))
                return DEMO_PARSE_EXIT_USAGE;
            options.faults_at = (int64_t)value;
            options.faults_mb = (uint32_t)mb;
            break;
        }
        case OPTION_PIPELINES_AT: {
            const char *rest;
            uint64_t count;
            if (!parse_frame_and(name, optarg, "COUNT", &value, &rest) ||
                !parse_uint(name, rest, 1, 1000, &count))
                return DEMO_PARSE_EXIT_USAGE;
            options.pipelines_at = (int64_t)value;
            options.pipelines = (uint32_t)count;
            break;
        }
        case OPTION_STALL_MS:
            if (!parse_ms(name, optarg, 600000.0, &options.stall_ms))
                return DEMO_PARSE_EXIT_USAGE;
            stall_ms_given = true;
            break;
        case OPTION_FRAMES_IN_FLIGHT:
            if (!parse_uint(name, optarg, 1, DEMO_MAX_FRAMES_IN_FLIGHT, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.frames_in_flight = (uint32_t)value;
            frames_in_flight_given = true;
            break;
        case OPTION_QUIET:
            options.quiet = true;
            break;
        case OPTION_HELP:
            fputs(usage_text, stdout);
            return DEMO_PARSE_EXIT_SUCCESS;
        case OPTION_API_VERSION:
            if (strcmp(optarg, "1.0") == 0) {
                options.api_version = VK_API_VERSION_1_0;
            } else if (strcmp(optarg, "1.1") == 0) {
                options.api_version = VK_API_VERSION_1_1;
            } else if (strcmp(optarg, "1.2") == 0) {
                options.api_version = VK_API_VERSION_1_2;
            } else if (strcmp(optarg, "1.3") == 0) {
                options.api_version = VK_API_VERSION_1_3;
            } else {
                fprintf(stderr, DEMO_NAME ": --api-version: expected 1.0, 1.1, 1.2 or 1.3, "
                        "got '%s'\n", optarg);
                return DEMO_PARSE_EXIT_USAGE;
            }
            break;
        case OPTION_VK12_FEATURES:
            options.vk12_features = true;
            break;
        case OPTION_NO_FENCE_WAIT:
            options.no_fence_wait = true;
            break;
        case OPTION_RECORD_ONCE:
            if (strcmp(optarg, "slot") == 0) {
                options.record_once = DEMO_RECORD_ONCE_SLOT;
            } else if (strcmp(optarg, "simultaneous") == 0) {
                options.record_once = DEMO_RECORD_ONCE_SIMULTANEOUS;
            } else {
                fprintf(stderr, DEMO_NAME ": --record-once: expected slot or simultaneous, got "
                        "'%s'\n", optarg);
                return DEMO_PARSE_EXIT_USAGE;
            }
            break;
        case OPTION_THREAD_SPLIT:
            options.thread_split = true;
            break;
        case OPTION_SERIAL:
            options.serial = true;
            break;
        case OPTION_HOST_DELAY_MS:
            if (!parse_ms(name, optarg, 60000.0, &options.host_delay_ms))
                return DEMO_PARSE_EXIT_USAGE;
            options.host_delay = true;
            break;
        case OPTION_LATE_SIGNAL:
            options.late_signal = true;
            break;
        case OPTION_DEVICES:
            if (!parse_uint(name, optarg, 1, 2, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.devices = (uint32_t)value;
            break;
        case OPTION_SECOND_DEVICE_GPU_ITERS:
            if (!parse_uint(name, optarg, 0, UINT32_MAX, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.second_device_gpu_iters = (uint32_t)value;
            second_device_gpu_iters_given = true;
            break;
        case OPTION_DISCONNECT_EARLY:
            options.disconnect_early = true;
            break;
        case OPTION_FORK_CHILD:
            options.fork_child = true;
            break;
        case OPTION_LOCK_WAIT_MS:
            if (!parse_ms(name, optarg, 60000.0, &options.lock_wait_ms))
                return DEMO_PARSE_EXIT_USAGE;
            break;
        case OPTION_SLEEP_LIMIT: {
            uint64_t hz;
            if (!parse_uint(name, optarg, 1, 1000, &hz))
                return DEMO_PARSE_EXIT_USAGE;
            options.sleep_limit_hz = (uint32_t)hz;
            break;
        }
        case OPTION_FRAME_CALLBACK:
            options.frame_callback = true;
            break;
        case OPTION_CPU_HOG:
            options.cpu_hog = true;
            break;
        case OPTION_FAULT_MB:
            if (!parse_uint(name, optarg, 1, 1024, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.fault_mb = (uint32_t)value;
            break;
        case OPTION_DIE: {
            static const struct { const char *name; int signo; } signals[] = {
                { "kill", SIGKILL }, { "term", SIGTERM }, { "int", SIGINT },
                { "segv", SIGSEGV }, { "abrt", SIGABRT },
            };
            options.die_signal = 0;
            for (unsigned i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
                if (strcasecmp(optarg, signals[i].name) == 0)
                    options.die_signal = signals[i].signo;
            if (!options.die_signal) {
                fprintf(stderr, DEMO_NAME ": --die takes kill, term, int, segv or abrt (got "
                        "'%s')\n", optarg);
                return DEMO_PARSE_EXIT_USAGE;
            }
            break;
        }
        case OPTION_SELF_TIMESTAMPS:
            options.self_timestamps = true;
            break;
        case OPTION_TRANSFER_QUEUE:
            options.transfer_queue = true;
            break;
        case OPTION_SUBMITS:
            if (!parse_uint(name, optarg, 1, 256, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.submits = (uint32_t)value;
            break;
        case OPTION_DRAWS:
            if (!parse_uint(name, optarg, 0, 1000000, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.draws = (uint32_t)value;
            break;
        case OPTION_RECORD_THREADS:
            if (!parse_uint(name, optarg, 1, DEMO_MAX_RECORD_THREADS, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.record_threads = (uint32_t)value;
            record_threads_given = true;
            break;
        case OPTION_SECONDARY:
            options.secondary = true;
            break;
        case OPTION_REDUNDANT_BINDS:
            options.redundant_binds = true;
            break;
        case OPTION_WIDE_BINDS:
            options.wide_binds = true;
            break;
        case OPTION_LEAK_KB:
            if (!parse_uint(name, optarg, 0, 1048576, &value))
                return DEMO_PARSE_EXIT_USAGE;
            options.leak_kb = (uint32_t)value;
            break;
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
    if (!check_combinations(&options, frames_in_flight_given, second_device_gpu_iters_given,
                            record_threads_given))
        return DEMO_PARSE_EXIT_USAGE;
    if (options.threads > options.height) {
        fprintf(stderr, DEMO_NAME ": --threads: %" PRIu32 " bands do not fit in a height of %"
                PRIu32 " rows\n", options.threads, options.height);
        return DEMO_PARSE_EXIT_USAGE;
    }

    /* One frame in flight is what --serial means; the offscreen images follow the slots. */
    if (options.serial)
        options.frames_in_flight = 1;
    *ret_options = options;
    return DEMO_PARSE_RUN;
}
