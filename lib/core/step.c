/* SPDX-License-Identifier: Apache-2.0 */
/* step.c: names of scenario steps and of the roles that act in them. */
#include "core/step.h"

#include <string.h>

#define P GPUIPC_ROLE_PRODUCER
#define C GPUIPC_ROLE_CONSUMER

static const struct {
    const char *name;
    unsigned roles;
} steps[GPUIPC_STEP_COUNT] = {
    [GPUIPC_STEP_NONE] = {"none", 0},
    [GPUIPC_STEP_HELLO] = {"hello", P | C},
    [GPUIPC_STEP_BEGIN] = {"begin", P},
    [GPUIPC_STEP_PROBE] = {"probe", P | C},
    [GPUIPC_STEP_READY] = {"ready", C},
    [GPUIPC_STEP_ALLOC] = {"alloc", P},
    [GPUIPC_STEP_FILL] = {"fill", P},
    [GPUIPC_STEP_EXPORT] = {"export", P},
    [GPUIPC_STEP_OFFER] = {"offer", P},
    [GPUIPC_STEP_IMPORT] = {"import", C},
    [GPUIPC_STEP_VERIFY] = {"verify", C},
    [GPUIPC_STEP_WRITE] = {"write", C},
    [GPUIPC_STEP_REPORT] = {"report", C},
    [GPUIPC_STEP_CHECK] = {"check", P},
    [GPUIPC_STEP_RELEASE] = {"release", P | C},
    [GPUIPC_STEP_END] = {"end", P},
    [GPUIPC_STEP_END_ACK] = {"end-ack", C},
    [GPUIPC_STEP_BYE] = {"bye", P},
    [GPUIPC_STEP_BYE_ACK] = {"bye-ack", C},
};

const char *gpuipc_step_name(unsigned step)
{
    return step < GPUIPC_STEP_COUNT ? steps[step].name : "?";
}

int gpuipc_step_parse(const char *name)
{
    int i;

    for (i = 1; i < GPUIPC_STEP_COUNT; i++)
        if (strcmp(steps[i].name, name) == 0)
            return i;
    return -1;
}

unsigned gpuipc_step_roles(unsigned step)
{
    return step < GPUIPC_STEP_COUNT ? steps[step].roles : 0;
}

const char *gpuipc_role_name(int role)
{
    return role == GPUIPC_ROLE_PRODUCER ? "producer" : "consumer";
}
