/* SPDX-License-Identifier: Apache-2.0 */
/* cause.c: a cause and its fix, and the one line they make. */
#include "core/cause.h"

#include <string.h>

#include "core/watch.h"

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
    gpuipc_sbuf b;

    gpuipc_sbuf_init(&b, buf, len);
    if (c->what[0] == '\0')
        return buf;
    gpuipc_sbuf_str(&b, "cause: ");
    gpuipc_sbuf_str(&b, c->what);
    if (c->fix[0] != '\0') {
        gpuipc_sbuf_str(&b, "; fix: ");
        gpuipc_sbuf_str(&b, c->fix);
    }
    return buf;
}

int gpuipc_cause_same(const gpuipc_cause *a, const gpuipc_cause *b)
{
    return strcmp(a->what, b->what) == 0 && strcmp(a->fix, b->fix) == 0;
}
