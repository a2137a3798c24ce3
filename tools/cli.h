/* What the framescope subcommands share (tools/cli.c). */
#ifndef FSCOPE_TOOLS_CLI_H
#define FSCOPE_TOOLS_CLI_H

#include <stdbool.h>

/* framescope --help: every subcommand, and run's options in full. */
extern const char cli_usage[];

/* A usage error from getopt: the argument it stopped at (an unknown option, or one missing its
 * value), in one line on stderr. */
void cli_unknown_option(const char *arg);
/* --format text|json (diff, compare): false for anything else, *ret_json untouched. */
bool cli_parse_format(const char *text, bool *ret_json);
/* The line on stderr for a --format value cli_parse_format refused. */
void cli_bad_format(const char *text);

#endif
