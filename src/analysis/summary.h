/* The outputs written from a run's statistics (run.h): the summary as text and as JSON, and
 * frames.csv. */
#ifndef FSCOPE_SUMMARY_H
#define FSCOPE_SUMMARY_H

#include <stdio.h>

#include "run.h"

/* The one-screen summary printed at exit: at most SUMMARY_LINES lines with its capture line,
 * each at most SUMMARY_COLUMNS bytes, on any app. */
#define SUMMARY_LINES 20
#define SUMMARY_COLUMNS 100
void summary_write_text(FILE *f, const struct run_stats *s);
/* Its capture line (dir as shown: printable), at most two lines. */
void summary_write_capture(FILE *f, const char *shown_dir);
/* Every line of the summary (framescope report --full). */
void summary_write_text_full(FILE *f, const struct run_stats *s);
/* summary.json. */
int summary_write_json(FILE *f, const struct run_stats *s); /* 0 or -ENOMEM */
/* frames.csv: a row per frame kept (s->keep). Returns 0 or -ENOMEM. */
int frames_write_csv(FILE *f, const struct run_stats *s);
/* seconds.csv: a row per second of the run that has frames. Returns 0 or -ENOMEM. */
int seconds_write_csv(FILE *f, const struct run_stats *s);

#endif
