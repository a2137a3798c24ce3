#include "work.h"

_Thread_local uint64_t analysis_events_visited;
