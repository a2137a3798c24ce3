/* framescope report (tools/report.c). */
#ifndef FSCOPE_TOOLS_REPORT_H
#define FSCOPE_TOOLS_REPORT_H

/* Returns the process exit status. */
int cmd_report(int argc, char **argv);

#endif
