/* The zone trees of a recording: paths and the aggregate of every thread and external track. */
#ifndef FSCOPE_ZONES_H
#define FSCOPE_ZONES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "recording.h"

/* A zone's name from the recording's location table ("?" when the table lacked it). */
const char *zone_name(const struct recording *rec, const void *loc);
/* Builds the path of node index of t ("frame/render") into buf. */
void zone_path(const struct recording *rec, const struct recording_thread *t, uint32_t index,
               char *buf, size_t len);
/* zones.csv: one row per node of every thread and external track. */
void zones_write_csv(FILE *f, const struct recording *rec);


#endif
