/* A small JSON reader for the files framescope writes itself (summary.json): objects, arrays,
 * strings with escapes, numbers, true, false and null. It reads what our writer emits and
 * refuses anything else with a message that says where and what; nesting is bounded, so a
 * hostile or truncated file gives an error, never a crash. */
#ifndef FSCOPE_TOOLS_JSON_H
#define FSCOPE_TOOLS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* summary.json nests four levels deep (presentation.latency_ms); the margin is for later
 * keys, the bound for a file that is not ours. */
#define JSON_MAX_DEPTH 32

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json_value {
    enum json_type type;
    bool boolean;
    double number;
    char *string;              /* JSON_STRING: UTF-8, NUL-terminated (no NUL inside) */
    size_t count;              /* JSON_ARRAY, JSON_OBJECT: elements or members */
    struct json_value *items;  /* the elements, or the members' values, in file order */
    char **keys;               /* JSON_OBJECT: the members' names, in file order */
};

/* Parses the len bytes at text as one JSON value. Returns a tree to free with json_destroy,
 * or NULL with a one-line reason ("line 3: expected ':' after a member name") in error. */
struct json_value *json_parse(const char *text, size_t len, char *error, size_t error_len);

/* Frees a tree from json_parse; accepts NULL. */
void json_destroy(struct json_value *value);

/* The member key of object, or NULL when object is not an object or has no such member. */
const struct json_value *json_get(const struct json_value *object, const char *key);

/* Writes text as a JSON string, quoted and escaped. */
void json_print_string(FILE *f, const char *text);

#endif
