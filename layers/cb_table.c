/* The command buffer table (cb_table.h): its storage. */
#include "cb_table.h"

struct cb_entry cb_table[CB_TABLE_SIZE];
_Atomic uint64_t cb_table_full;
