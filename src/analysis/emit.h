/* Text every output writes alike: JSON string literals and CSV fields, escaped once, and
 * milliseconds written exactly, here. */
#ifndef FSCOPE_ANALYSIS_EMIT_H
#define FSCOPE_ANALYSIS_EMIT_H

#include <stdint.h>
#include <stdio.h>

/* Writes a JSON string literal (with quotes) for s (NULL: ""). */
void json_write_string(FILE *f, const char *s);
/* The same for a literal inside an HTML <script> element: '<', '>' and '&' are escaped too, so
 * no text of the program's ("</script>" in a zone name) can end the element, and every
 * control byte is a \u escape. */
void json_write_script_string(FILE *f, const char *s);

/* ",ms" with six decimals: exact nanoseconds, so columns sum exactly; negative values too. */
void csv_write_ms(FILE *f, int64_t ns);
/* Writes text as a quoted CSV field ("" inside for "). */
void csv_quoted(FILE *f, const char *text);

#endif
