/* The display as the kernel's KMS saw it (src/record/kms.c): each connected output's mode and
 * VRR state, the refresh its vblank counter measured over the run, and the compositor's claim
 * for the output of the same name beside it. */
#ifndef FSCOPE_ANALYSIS_KMS_H
#define FSCOPE_ANALYSIS_KMS_H

#include <stdio.h>

#include "recording.h"

/* "  kms ..." lines (and a diagnosis where the measured refresh and the claim disagree). */
void kms_write_text(FILE *f, const struct recording *rec);
/* The "kms" member of summary.json (with its trailing ",\n"). */
void kms_write_json(FILE *f, const struct recording *rec);

#endif
