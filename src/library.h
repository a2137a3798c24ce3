/* The library's exit (library.c). */
#ifndef FSCOPE_LIBRARY_H
#define FSCOPE_LIBRARY_H

#define FSCOPE_EXPORT __attribute__((visibility("default")))

/* Flushes the recording and marks it ended; with no observer, analyses it and prints the
 * summary and writes the capture. Runs once per process; later calls do nothing. Called by the
 * layer's and the library's destructors. */
FSCOPE_EXPORT void fscope_report_finish(void);

#endif
