/* SPDX-License-Identifier: Apache-2.0 */
/* outcome.c: what the renderers of --prom and --junit share (outcome.h). */
#include "run/outcome.h"

#include <errno.h>
#include <string.h>

#include "core/err.h"
#include "core/status.h"

const char *gpuipc_outcome_verdict(int status)
{
    return gpuipc_status_name(status);
}

const char *gpuipc_outcome_uuid(const gpuipc_outcome *oc, int g)
{
    if (g < 0 || oc->uuids == NULL || (size_t)g >= oc->nuuids || oc->uuids[g][0] == '\0')
        return NULL;
    return oc->uuids[g];
}

void gpuipc_sink_init(gpuipc_sink *s, int fd, char *mem, size_t cap)
{
    s->fd = fd;
    s->err = 0;
    gpuipc_sbuf_init(&s->b, mem, cap);
}

static void flush(gpuipc_sink *s)
{
    if (s->b.len == 0 && !s->b.dropped)
        return;
    if (gpuipc_sbuf_write(&s->b, s->fd) < 0 && s->err == 0)
        s->err = errno != 0 ? errno : EIO;
    gpuipc_sbuf_init(&s->b, s->b.p, s->b.cap);
}

void gpuipc_sink_maybe_flush(gpuipc_sink *s)
{
    if (s->b.len > s->b.cap / 2 || s->b.dropped)
        flush(s);
}

int gpuipc_sink_finish(gpuipc_sink *s)
{
    flush(s);
    return -s->err;
}
