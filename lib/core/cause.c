/* SPDX-License-Identifier: Apache-2.0 */
/* cause.c: a cause and its fix, and the one line they make. */
#include "core/cause.h"

#include <stdio.h>
#include <string.h>

int gpuipc_cause_said(int what_len, int fix_len)
{
    (void)fix_len;
    return what_len;
}

void gpuipc_cause_clear(gpuipc_cause *c)
{
    c->what[0] = '\0';
    c->fix[0] = '\0';
}

const char *gpuipc_cause_line(const gpuipc_cause *c, char *buf, size_t len)
{
    if (len == 0)
        return buf;
    if (c->what[0] == '\0')
        buf[0] = '\0';
    else if (c->fix[0] == '\0')
        snprintf(buf, len, "cause: %s", c->what);
    else
        snprintf(buf, len, "cause: %s; fix: %s", c->what, c->fix);
    return buf;
}

int gpuipc_cause_same(const gpuipc_cause *a, const gpuipc_cause *b)
{
    return strcmp(a->what, b->what) == 0 && strcmp(a->fix, b->fix) == 0;
}
