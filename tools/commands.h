/* The subcommands of framescope, one file each; tools/framescope.c dispatches to them. Each
 * takes the arguments from its own name on (argv[0] is "run", "report", ...) and returns the
 * process exit status. */
#ifndef FSCOPE_TOOLS_COMMANDS_H
#define FSCOPE_TOOLS_COMMANDS_H

/* framescope run [OPTIONS] [--] [COMMAND [ARGS...]] (tools/run.c): the command's own status,
 * 128+N if it died of signal N, 125 if framescope failed before running it, 2 for a usage
 * error. */
int cmd_run(int argc, char **argv);

/* framescope report [--format FORMAT] DIR (tools/report.c). */
int cmd_report(int argc, char **argv);

/* framescope diff [--format text|json] A B (tools/diff.c): 0, or 2 after one line on stderr
 * for a bad argument, directory or file. */
int cmd_diff(int argc, char **argv);

/* framescope compare [OPTIONS] -- COMMAND [ARGS...] (tools/compare.c). Runs COMMAND as A1, X,
 * A2 through this binary's `run`: 0, 2 for a usage error (nothing run), 1 when a run or its
 * capture failed, 128+N when stopped by signal N. */
int cmd_compare(int argc, char **argv);

/* framescope top [--once] [--json] [--interval SECONDS] (tools/top.c) and framescope snapshot
 * PID|NAME [--last SECONDS] (tools/snapshot.c): questions to framescoped. */
int cmd_top(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);

#endif
