/* SPDX-License-Identifier: Apache-2.0 */
/* json.c: the streaming JSON writer. */
#include "core/json.h"

#include <math.h>
#include <string.h>

void gpuipc_json_init(gpuipc_json *j, FILE *out)
{
    memset(j, 0, sizeof(*j));
    j->out = out;
}

static void indent(gpuipc_json *j)
{
    int i;

    for (i = 0; i < j->depth; i++)
        fputs("  ", j->out);
}

static void put_string(gpuipc_json *j, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    fputc('"', j->out);
    for (; *p != '\0'; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", j->out);
            break;
        case '\\':
            fputs("\\\\", j->out);
            break;
        case '\n':
            fputs("\\n", j->out);
            break;
        case '\t':
            fputs("\\t", j->out);
            break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(j->out, "\\u%04x", *p);
            else
                fputc(*p, j->out);
        }
    }
    fputc('"', j->out);
}

/* Starts a member: the comma, the line, the indentation and the key. */
static void member(gpuipc_json *j, const char *key)
{
    if (j->depth > 0) {
        fputs(j->count[j->depth] > 0 ? ",\n" : "\n", j->out);
        j->count[j->depth]++;
        indent(j);
    } else if (j->count[0]++ > 0) {
        j->error = 1; /* a second top-level value */
    }
    if (key != NULL) {
        put_string(j, key);
        fputs(": ", j->out);
    }
}

static void json_open(gpuipc_json *j, const char *key, char c)
{
    member(j, key);
    fputc(c, j->out);
    if (j->depth + 1 >= GPUIPC_JSON_DEPTH) {
        j->error = 1;
        return;
    }
    j->depth++;
    j->count[j->depth] = 0;
}

void gpuipc_json_raw(gpuipc_json *j, const char *key, const char *text)
{
    member(j, key);
    fputs(text, j->out);
}

void gpuipc_json_object(gpuipc_json *j, const char *key)
{
    json_open(j, key, '{');
}

void gpuipc_json_array(gpuipc_json *j, const char *key)
{
    json_open(j, key, '[');
}

void gpuipc_json_end(gpuipc_json *j, char close)
{
    if (j->depth == 0) {
        j->error = 1;
        return;
    }
    if (j->count[j->depth] > 0) {
        fputc('\n', j->out);
        j->depth--;
        indent(j);
    } else {
        j->depth--;
    }
    fputc(close, j->out);
}

void gpuipc_json_string(gpuipc_json *j, const char *key, const char *value)
{
    member(j, key);
    if (value == NULL)
        fputs("null", j->out);
    else
        put_string(j, value);
}

void gpuipc_json_int(gpuipc_json *j, const char *key, long long value)
{
    member(j, key);
    fprintf(j->out, "%lld", value);
}

void gpuipc_json_bool(gpuipc_json *j, const char *key, int value)
{
    member(j, key);
    fputs(value ? "true" : "false", j->out);
}

static void put_double(gpuipc_json *j, double v)
{
    if (isfinite(v))
        fprintf(j->out, "%.15g", v);
    else
        fputs("null", j->out);
}

void gpuipc_json_double(gpuipc_json *j, const char *key, double value)
{
    member(j, key);
    put_double(j, value);
}

void gpuipc_json_numbers(gpuipc_json *j, const char *key, const double *v, size_t n)
{
    size_t i;

    member(j, key);
    fputc('[', j->out);
    for (i = 0; i < n; i++) {
        if (i > 0)
            fputs(", ", j->out);
        put_double(j, v[i]);
    }
    fputc(']', j->out);
}

int gpuipc_json_finish(gpuipc_json *j)
{
    fputc('\n', j->out);
    if (fflush(j->out) != 0 || ferror(j->out))
        return -1;
    return j->error || j->depth != 0 ? -1 : 0;
}
