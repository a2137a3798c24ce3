#include "zones.h"

#include "emit.h"
#include "gpu_zones.h"

/* Paths deeper than this are cut: the recorder never nests deeper. */
#define ZONE_MAX_DEPTH 64
#define ZONE_MAX_PATH 256

const char *zone_name(const struct recording *rec, const void *loc)
{
    const struct rec_loc *l = recording_loc_find(rec, loc);
    return l ? l->name : "?";
}

void zone_path(const struct recording *rec, const struct recording_thread *t, uint32_t index,
               char *buf, size_t len)
{
    uint32_t chain[ZONE_MAX_DEPTH + 1];
    unsigned n = 0;
    /* The reader checked that parents come before their children: this walk ends. */
    for (uint32_t i = index; i != 0 && i < t->node_count && n <= ZONE_MAX_DEPTH;
         i = t->nodes[i].parent)
        chain[n++] = i;
    size_t used = 0;
    buf[0] = '\0';
    while (n-- > 0 && used < len) {
        int w = snprintf(buf + used, len - used, "%s%s", used ? "/" : "",
                         zone_name(rec, t->nodes[chain[n]].loc));
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

void zones_write_csv(FILE *f, const struct recording *rec)
{
    fputs("thread_id,thread,path,level,calls,inclusive_ms,exclusive_ms,mean_ms,max_ms\n", f);
    char path[ZONE_MAX_PATH];
    for (unsigned s = 0; s < rec->thread_count; s++) {
        const struct recording_thread *t = &rec->threads[s];
        for (uint32_t i = 1; i < t->node_count; i++) {
            const struct zone_node *node = &t->nodes[i];
            const struct rec_loc *loc = recording_loc_find(rec, node->loc);
            zone_path(rec, t, i, path, sizeof(path));
            double inclusive = recording_ns(rec, node->inclusive_ticks) / 1e6;
            uint64_t exclusive_ticks = node->inclusive_ticks > node->child_ticks
                                           ? node->inclusive_ticks - node->child_ticks : 0;
            /* Names are the program's own strings: quote them for CSV. */
            fprintf(f, "%d,", t->tid);
            csv_quoted(f, t->name);
            fputc(',', f);
            csv_quoted(f, path);
            fprintf(f, ",%u,%llu,%.6f,%.6f,%.6f,%.6f\n", loc ? loc->level : 0,
                    (unsigned long long)node->calls, inclusive,
                    recording_ns(rec, exclusive_ticks) / 1e6,
                    node->calls ? inclusive / (double)node->calls : 0.0,
                    recording_ns(rec, node->max_ticks) / 1e6);
        }
    }
    gpu_zones_write_csv(f, rec);
}
