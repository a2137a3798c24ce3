/* A recursive-descent JSON reader, bounded by JSON_MAX_DEPTH. See json.h. */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct parser {
    const char *start, *p, *end;
    char *error;
    size_t error_len;
    int depth;
};

/* Records the first error, with the line it is on; always returns false. */
static bool fail(struct parser *parser, const char *format, ...)
{
    if (parser->error[0])
        return false;
    unsigned line = 1;
    for (const char *c = parser->start; c < parser->p && c < parser->end; c++)
        line += *c == '\n';
    int n = snprintf(parser->error, parser->error_len, "line %u: ", line);
    if (n < 0 || (size_t)n >= parser->error_len)
        return false;
    va_list args;
    va_start(args, format);
    vsnprintf(parser->error + n, parser->error_len - (size_t)n, format, args);
    va_end(args);
    return false;
}

static void skip_space(struct parser *parser)
{
    while (parser->p < parser->end &&
           (*parser->p == ' ' || *parser->p == '\t' || *parser->p == '\n' || *parser->p == '\r'))
        parser->p++;
}

/* What a message calls the byte at the cursor. */
static const char *found(const struct parser *parser, char *buf, size_t len)
{
    if (parser->p >= parser->end)
        return "the end of the file";
    unsigned char c = (unsigned char)*parser->p;
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, len, "'%c'", c);
    else
        snprintf(buf, len, "byte 0x%02x", c);
    return buf;
}

static void value_finish(struct json_value *value)
{
    free(value->string);
    for (size_t i = 0; i < value->count; i++) {
        value_finish(&value->items[i]);
        if (value->keys)
            free(value->keys[i]);
    }
    free(value->items);
    free(value->keys);
    memset(value, 0, sizeof(*value));
}

static bool parse_value(struct parser *parser, struct json_value *ret);

static bool literal(struct parser *parser, const char *word)
{
    size_t len = strlen(word);
    if ((size_t)(parser->end - parser->p) < len || memcmp(parser->p, word, len) != 0)
        return fail(parser, "expected a value, found something starting with '%c'", *parser->p);
    parser->p += len;
    return true;
}

/* The JSON number grammar exactly (no '+', leading zero, hex, inf or nan, which strtod alone
 * would take), then strtod for the value: the CLI never sets a locale, so '.' is the point. */
static bool parse_number(struct parser *parser, struct json_value *ret)
{
    const char *c = parser->p, *end = parser->end;
    if (c < end && *c == '-')
        c++;
    if (c < end && *c == '0') {
        c++;
    } else if (c < end && *c >= '1' && *c <= '9') {
        while (c < end && *c >= '0' && *c <= '9')
            c++;
    } else {
        return fail(parser, "a number needs a digit after its sign");
    }
    if (c < end && *c == '.') {
        c++;
        if (c >= end || *c < '0' || *c > '9')
            return fail(parser, "a number needs a digit after its decimal point");
        while (c < end && *c >= '0' && *c <= '9')
            c++;
    }
    if (c < end && (*c == 'e' || *c == 'E')) {
        c++;
        if (c < end && (*c == '+' || *c == '-'))
            c++;
        if (c >= end || *c < '0' || *c > '9')
            return fail(parser, "a number needs a digit in its exponent");
        while (c < end && *c >= '0' && *c <= '9')
            c++;
    }
    char text[64]; /* our writer's longest number is about 20 characters */
    size_t len = (size_t)(c - parser->p);
    if (len >= sizeof(text))
        return fail(parser, "a number of %zu characters is longer than any we write", len);
    memcpy(text, parser->p, len);
    text[len] = '\0';
    errno = 0;
    double number = strtod(text, NULL);
    if (errno == ERANGE && isinf(number))
        return fail(parser, "the number %s is out of range", text);
    ret->type = JSON_NUMBER;
    ret->number = number;
    parser->p = c;
    return true;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool parse_hex4(struct parser *parser, unsigned *ret)
{
    if (parser->end - parser->p < 4)
        return fail(parser, "a \\u escape needs four hex digits");
    unsigned code = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_digit(parser->p[i]);
        if (digit < 0)
            return fail(parser, "a \\u escape needs four hex digits");
        code = code * 16 + (unsigned)digit;
    }
    parser->p += 4;
    *ret = code;
    return true;
}

/* Parses a string at the cursor (on its opening quote) into a new NUL-terminated buffer. */
static bool parse_string(struct parser *parser, char **ret)
{
    parser->p++;
    /* The decoded string is never longer than its escaped form. */
    const char *close = parser->p;
    while (close < parser->end && *close != '"')
        close += *close == '\\' && close + 1 < parser->end ? 2 : 1;
    if (close >= parser->end)
        return fail(parser, "a string is not closed before the end of the file");
    char *out = malloc((size_t)(close - parser->p) + 1);
    if (!out)
        return fail(parser, "out of memory");
    size_t n = 0;
    while (*parser->p != '"') {
        unsigned char c = (unsigned char)*parser->p;
        if (c < 0x20) {
            free(out);
            return fail(parser, "a string holds the control character 0x%02x; it must be "
                        "escaped", c);
        }
        parser->p++;
        if (c != '\\') {
            out[n++] = (char)c;
            continue;
        }
        char escape = *parser->p++;
        switch (escape) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            unsigned code;
            if (!parse_hex4(parser, &code)) {
                free(out);
                return false;
            }
            /* A surrogate pair would need 10 bytes of escape for 4 of UTF-8, so it fits. */
            if (code >= 0xd800 && code <= 0xdbff) {
                unsigned low;
                if (parser->end - parser->p < 2 || parser->p[0] != '\\' || parser->p[1] != 'u') {
                    free(out);
                    return fail(parser, "a \\u escape of a high surrogate is not followed by "
                                "its low surrogate");
                }
                parser->p += 2;
                if (!parse_hex4(parser, &low) || low < 0xdc00 || low > 0xdfff) {
                    free(out);
                    return fail(parser, "a \\u escape of a high surrogate is not followed by "
                                "its low surrogate");
                }
                code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
            } else if (code >= 0xdc00 && code <= 0xdfff) {
                free(out);
                return fail(parser, "a \\u escape holds a lone low surrogate");
            }
            if (code == 0) {
                free(out);
                return fail(parser, "a string holds \\u0000, which no name of ours contains");
            }
            if (code < 0x80) {
                out[n++] = (char)code;
            } else if (code < 0x800) {
                out[n++] = (char)(0xc0 | code >> 6);
                out[n++] = (char)(0x80 | (code & 0x3f));
            } else if (code < 0x10000) {
                out[n++] = (char)(0xe0 | code >> 12);
                out[n++] = (char)(0x80 | (code >> 6 & 0x3f));
                out[n++] = (char)(0x80 | (code & 0x3f));
            } else {
                out[n++] = (char)(0xf0 | code >> 18);
                out[n++] = (char)(0x80 | (code >> 12 & 0x3f));
                out[n++] = (char)(0x80 | (code >> 6 & 0x3f));
                out[n++] = (char)(0x80 | (code & 0x3f));
            }
            break;
        }
        default:
            free(out);
            parser->p--;
            return fail(parser, "a string holds an unknown escape");
        }
    }
    parser->p++; /* the closing quote */
    out[n] = '\0';
    *ret = out;
    return true;
}

/* Appends an element (and its key, for an object) to container. */
static struct json_value *append(struct parser *parser, struct json_value *container,
                                 size_t *capacity)
{
    if (container->count == *capacity) {
        size_t grown = *capacity ? *capacity * 2 : 8;
        struct json_value *items = realloc(container->items, grown * sizeof(*items));
        if (!items) {
            fail(parser, "out of memory");
            return NULL;
        }
        container->items = items;
        if (container->type == JSON_OBJECT) {
            char **keys = realloc(container->keys, grown * sizeof(*keys));
            if (!keys) {
                fail(parser, "out of memory");
                return NULL;
            }
            container->keys = keys;
        }
        *capacity = grown;
    }
    struct json_value *item = &container->items[container->count];
    memset(item, 0, sizeof(*item));
    return item;
}

/* An array or an object; the cursor is on its opening bracket. */
static bool parse_container(struct parser *parser, struct json_value *ret)
{
    bool object = *parser->p == '{';
    char close = object ? '}' : ']';
    const char *what = object ? "an object" : "an array";
    char shown[16];
    if (++parser->depth > JSON_MAX_DEPTH)
        return fail(parser, "nested more than %d levels deep", JSON_MAX_DEPTH);
    parser->p++;
    ret->type = object ? JSON_OBJECT : JSON_ARRAY;
    size_t capacity = 0;
    skip_space(parser);
    if (parser->p < parser->end && *parser->p == close) {
        parser->p++;
        parser->depth--;
        return true;
    }
    for (;;) {
        skip_space(parser);
        struct json_value *item = append(parser, ret, &capacity);
        if (!item)
            goto error_items;
        char *key = NULL;
        if (object) {
            if (parser->p >= parser->end || *parser->p != '"') {
                fail(parser, "expected a member name in quotes in %s, found %s", what,
                     found(parser, shown, sizeof(shown)));
                goto error_items;
            }
            if (!parse_string(parser, &key))
                goto error_items;
            skip_space(parser);
            if (parser->p >= parser->end || *parser->p != ':') {
                fail(parser, "expected ':' after the member name \"%s\", found %s", key,
                     found(parser, shown, sizeof(shown)));
                free(key);
                goto error_items;
            }
            parser->p++;
        }
        if (!parse_value(parser, item)) {
            free(key);
            goto error_items;
        }
        if (object)
            ret->keys[ret->count] = key;
        ret->count++;
        skip_space(parser);
        if (parser->p < parser->end && *parser->p == ',') {
            parser->p++;
            continue;
        }
        if (parser->p < parser->end && *parser->p == close) {
            parser->p++;
            break;
        }
        fail(parser, "expected ',' or '%c' in %s, found %s", close, what,
             found(parser, shown, sizeof(shown)));
        goto error_items;
    }
    parser->depth--;
    return true;

error_items:
    value_finish(ret);
    return false;
}

static bool parse_value(struct parser *parser, struct json_value *ret)
{
    char shown[16];
    skip_space(parser);
    if (parser->p >= parser->end)
        return fail(parser, "expected a value, found the end of the file");
    switch (*parser->p) {
    case '{':
    case '[':
        return parse_container(parser, ret);
    case '"':
        ret->type = JSON_STRING;
        return parse_string(parser, &ret->string);
    case 't':
        ret->type = JSON_BOOL;
        ret->boolean = true;
        return literal(parser, "true");
    case 'f':
        ret->type = JSON_BOOL;
        return literal(parser, "false");
    case 'n':
        ret->type = JSON_NULL;
        return literal(parser, "null");
    default:
        if (*parser->p == '-' || (*parser->p >= '0' && *parser->p <= '9'))
            return parse_number(parser, ret);
        return fail(parser, "expected a value, found %s", found(parser, shown, sizeof(shown)));
    }
}

struct json_value *json_parse(const char *text, size_t len, char *error, size_t error_len)
{
    char fallback[1];
    if (!error || error_len == 0) {
        error = fallback;
        error_len = sizeof(fallback);
    }
    error[0] = '\0';
    struct parser parser = { .start = text, .p = text, .end = text + len, .error = error,
                             .error_len = error_len };
    struct json_value *value = calloc(1, sizeof(*value));
    if (!value) {
        snprintf(error, error_len, "out of memory");
        return NULL;
    }
    if (!parse_value(&parser, value))
        goto error_value;
    skip_space(&parser);
    if (parser.p != parser.end) {
        char shown[16];
        fail(&parser, "%s after the end of the top-level value",
             found(&parser, shown, sizeof(shown)));
        goto error_value;
    }
    return value;

error_value:
    json_destroy(value);
    return NULL;
}

void json_destroy(struct json_value *value)
{
    if (!value)
        return;
    value_finish(value);
    free(value);
}

const struct json_value *json_get(const struct json_value *object, const char *key)
{
    if (!object || object->type != JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < object->count; i++)
        if (strcmp(object->keys[i], key) == 0)
            return &object->items[i];
    return NULL;
}

void json_print_string(FILE *f, const char *text)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)(text ? text : ""); *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c == '\n')
            fputs("\\n", f);
        else if (*c == '\t')
            fputs("\\t", f);
        else if (*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}
