/* SPDX-License-Identifier: Apache-2.0 */
/* json.c: the streaming JSON writer, through a sink (json.h). */
#include "core/json.h"

#include <errno.h>
#include <math.h>
#include <string.h>

void gpuipc_json_init(gpuipc_json *j, gpuipc_sink *out)
{
    memset(j, 0, sizeof(*j));
    j->out = out;
}

/* Text of any length into the sink, its buffer written out as it fills. */
static void put(gpuipc_json *j, const char *s)
{
    gpuipc_sbuf *b = &j->out->b;
    size_t n = strlen(s);

    while (n > 0) {
        size_t room;

        gpuipc_sink_room(j->out, 1);
        room = b->cap - b->len - 1;
        if (room > n)
            room = n;
        memcpy(b->p + b->len, s, room);
        b->len += room;
        b->p[b->len] = '\0';
        s += room;
        n -= room;
    }
}

static void put_char(gpuipc_json *j, char c)
{
    char t[2] = {c, '\0'};

    put(j, t);
}

static void indent(gpuipc_json *j)
{
    int i;

    for (i = 0; i < j->depth; i++)
        put(j, "  ");
}

static void put_string(gpuipc_json *j, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;

    put_char(j, '"');
    for (; *p != '\0'; p++) {
        switch (*p) {
        case '"':
            put(j, "\\\"");
            break;
        case '\\':
            put(j, "\\\\");
            break;
        case '\n':
            put(j, "\\n");
            break;
        case '\t':
            put(j, "\\t");
            break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                char u[7] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15], '\0'};

                put(j, u);
            } else {
                put_char(j, (char)*p);
            }
        }
    }
    put_char(j, '"');
}

/* Starts a member: the comma, the line, the indentation and the key. */
static void member(gpuipc_json *j, const char *key)
{
    if (j->depth > 0) {
        put(j, j->count[j->depth] > 0 ? ",\n" : "\n");
        j->count[j->depth]++;
        indent(j);
    } else if (j->count[0]++ > 0) {
        j->error = 1; /* a second top-level value */
    }
    if (key != NULL) {
        put_string(j, key);
        put(j, ": ");
    }
}

static void json_open(gpuipc_json *j, const char *key, char c)
{
    member(j, key);
    put_char(j, c);
    if (j->depth + 1 >= GPUIPC_JSON_DEPTH) {
        j->error = 1;
        return;
    }
    j->depth++;
    j->count[j->depth] = 0;
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
        put_char(j, '\n');
        j->depth--;
        indent(j);
    } else {
        j->depth--;
    }
    put_char(j, close);
}

void gpuipc_json_string(gpuipc_json *j, const char *key, const char *value)
{
    member(j, key);
    if (value == NULL)
        put(j, "null");
    else
        put_string(j, value);
}

void gpuipc_json_int(gpuipc_json *j, const char *key, long long value)
{
    member(j, key);
    gpuipc_sink_room(j->out, 24);
    gpuipc_sbuf_int(&j->out->b, value);
}

void gpuipc_json_bool(gpuipc_json *j, const char *key, int value)
{
    member(j, key);
    put(j, value ? "true" : "false");
}

static void put_double(gpuipc_json *j, double v)
{
    if (isfinite(v)) {
        gpuipc_sink_room(j->out, 32);
        gpuipc_sbuf_double(&j->out->b, v);
    } else {
        put(j, "null");
    }
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
    put_char(j, '[');
    for (i = 0; i < n; i++) {
        if (i > 0)
            put(j, ", ");
        put_double(j, v[i]);
    }
    put_char(j, ']');
}

int gpuipc_json_finish(gpuipc_json *j)
{
    int e;

    put_char(j, '\n');
    if ((e = gpuipc_sink_finish(j->out)) < 0) {
        errno = -e;
        return -1;
    }
    return j->error || j->depth != 0 ? -1 : 0;
}
