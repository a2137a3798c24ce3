/* framescope run's checks of where the layer will write (tools/run_checks.c). */
#ifndef FSCOPE_TOOLS_RUN_CHECKS_H
#define FSCOPE_TOOLS_RUN_CHECKS_H

#include <stdbool.h>

/* The capture directory, checked by the rules the layer applies when it writes the capture at
 * exit: a directory it can create, or an existing one of ours that only we can write, holding
 * at most an earlier capture. what names it in the message. False after one line on stderr. */
bool check_output(const char *what, const char *path);
/* A summary file (FRAMESCOPE_SUMMARY naming a path): one the layer can write at exit. False
 * after one line on stderr. */
bool check_summary_file(const char *path);

#endif
