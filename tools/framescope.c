/* framescope: the command-line front end. Each subcommand lives in a file of its own
 * (tools/commands.h); this file hands the arguments to it.
 *
 *   framescope run|report|diff|compare|top|snapshot ...   (framescope --help, tools/cli.c) */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "util/log.h"

#ifndef FRAMESCOPE_VERSION
#define FRAMESCOPE_VERSION "unknown"
#endif

int main(int argc, char **argv)
{
    log_init();
    if (argc < 2) {
        fputs(cli_usage, stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        fputs(cli_usage, stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("framescope %s\n", FRAMESCOPE_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(argv[1], "report") == 0)
        return cmd_report(argc - 1, argv + 1);
    if (strcmp(argv[1], "diff") == 0)
        return cmd_diff(argc - 1, argv + 1);
    if (strcmp(argv[1], "compare") == 0)
        return cmd_compare(argc - 1, argv + 1);
    if (strcmp(argv[1], "top") == 0)
        return cmd_top(argc - 1, argv + 1);
    if (strcmp(argv[1], "snapshot") == 0)
        return cmd_snapshot(argc - 1, argv + 1);
    fprintf(stderr, "framescope: unknown command '%s'\n\n%s", argv[1], cli_usage);
    return 2;
}
