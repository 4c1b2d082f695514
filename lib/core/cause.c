/* SPDX-License-Identifier: Apache-2.0 */
/* cause.c: a cause and its fix, and the one line they make. */
#include "core/cause.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/watch.h"

void gpuipc_cause_what(gpuipc_cause *c, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->what, sizeof(c->what), fmt, ap);
    va_end(ap);
}

void gpuipc_cause_fix(gpuipc_cause *c, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->fix, sizeof(c->fix), fmt, ap);
    va_end(ap);
}

int gpuipc_cause_set(gpuipc_cause *c, const char *what, const char *fix)
{
    gpuipc_cause_what(c, "%s", what);
    gpuipc_cause_fix(c, "%s", fix);
    return 1;
}

void gpuipc_cause_clear(gpuipc_cause *c)
{
    c->what[0] = '\0';
    c->fix[0] = '\0';
}

const char *gpuipc_cause_line_of(const char *what, const char *fix, char *buf, size_t len)
{
    gpuipc_sbuf b;

    gpuipc_sbuf_init(&b, buf, len);
    if (what[0] == '\0')
        return buf;
    gpuipc_sbuf_str(&b, "cause: ");
    gpuipc_sbuf_str(&b, what);
    if (fix[0] != '\0') {
        gpuipc_sbuf_str(&b, "; fix: ");
        gpuipc_sbuf_str(&b, fix);
    }
    return buf;
}

const char *gpuipc_cause_line(const gpuipc_cause *c, char *buf, size_t len)
{
    return gpuipc_cause_line_of(c->what, c->fix, buf, len);
}

int gpuipc_cause_same(const gpuipc_cause *a, const gpuipc_cause *b)
{
    return strcmp(a->what, b->what) == 0 && strcmp(a->fix, b->fix) == 0;
}
