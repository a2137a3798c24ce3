/* The outputs written from a run's statistics (run.h): the summary as text and as JSON, and
 * frames.csv. */
#ifndef FSCOPE_SUMMARY_H
#define FSCOPE_SUMMARY_H

#include <stdio.h>

#include "run.h"

/* Every line of the summary (framescope report --full). */
void summary_write_text_full(FILE *f, const struct run_stats *s);
/* summary.json. */
void summary_write_json(FILE *f, const struct run_stats *s);
/* frames.csv. */
void frames_write_csv(FILE *f, const struct run_stats *s);

#endif
