/* What machine this is, as MangoHud's log names it (src/record/format.h, struct rec_system). */
#ifndef FSCOPE_UTIL_SYSTEM_H
#define FSCOPE_UTIL_SYSTEM_H

#include "record/format.h"

/* Reads the OS name, CPU model, memory, kernel release and CPU governor; a field that cannot be
 * read is "". Reads files: never on a hot path. */
void system_describe(struct rec_system *ret);

#endif
