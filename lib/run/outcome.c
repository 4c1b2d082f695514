/* SPDX-License-Identifier: Apache-2.0 */
/* outcome.c: what the renderers of --prom and --junit share (outcome.h). */
#include "run/outcome.h"

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
