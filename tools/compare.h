/* framescope diff and framescope compare: captures side by side, each difference weighed
 * against the run-to-run noise (diff) or against the drift of a bracketing A/X/A (compare). */
#ifndef FSCOPE_TOOLS_COMPARE_H
#define FSCOPE_TOOLS_COMPARE_H

/* framescope diff [--format text|json] A B. argv[0] is "diff". Returns the exit status: 0, or
 * 2 after one line on stderr for a bad argument, directory or file. */
int cmd_diff(int argc, char **argv);

/* framescope compare [OPTIONS] -- COMMAND [ARGS...]. argv[0] is "compare". Runs COMMAND as
 * A1, X, A2 through this binary's `run` and returns the exit status: 0, 2 for a usage error
 * (nothing run), 1 when a run or its capture failed, 128+N when stopped by signal N. */
int cmd_compare(int argc, char **argv);

#endif
