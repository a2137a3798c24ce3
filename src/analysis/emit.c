#include "emit.h"

#include <stdbool.h>

static void write_escaped(FILE *f, const char *s, bool in_script)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (!in_script && *p == '\n')
            fputs("\\n", f);
        else if (!in_script && *p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20 || (in_script && (*p == '<' || *p == '>' || *p == '&')))
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void json_write_string(FILE *f, const char *s)
{
    write_escaped(f, s, false);
}

void json_write_script_string(FILE *f, const char *s)
{
    write_escaped(f, s, true);
}

void csv_write_ms(FILE *f, int64_t ns)
{
    uint64_t magnitude = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
    fprintf(f, ",%s%llu.%06llu", ns < 0 ? "-" : "", (unsigned long long)(magnitude / 1000000),
            (unsigned long long)(magnitude % 1000000));
}

void csv_quoted(FILE *f, const char *text)
{
    fputc('"', f);
    for (const char *p = text; *p; p++) {
        if (*p == '"')
            fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}
