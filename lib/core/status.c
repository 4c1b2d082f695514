/* SPDX-License-Identifier: Apache-2.0 */
/* status.c: the statuses' words and names, and the exit statuses'. */
#include "core/status.h"

#include <stddef.h>

#include "core/err.h"

#define NOT_RUN -1

static const struct {
    int status;
    const char *word, *name;
} statuses[] = {
    {GPUIPC_PASS, "PASS", "pass"},
    {GPUIPC_FAIL, "FAIL", "fail"},
    {GPUIPC_SKIP, "SKIP", "skip"},
    {GPUIPC_STOPPED, "STOPPED", "stopped"},
    {NOT_RUN, "NOT RUN", "not run"},
};

static const struct {
    int code;
    const char *word, *meaning;
} exits[] = {
    {GPUIPC_PASS, "PASS", "all that ran passed"},
    {GPUIPC_FAIL, "FAIL", "a failure"},
    {GPUIPC_USAGE, "USAGE ERROR", "usage error"},
    {GPUIPC_SKIP, "SKIP", "nothing could run here (no driver or GPU)"},
    {128 + 1, "STOPPED", "stopped by SIGHUP"},
    {128 + 2, "STOPPED", "stopped by SIGINT"},
    {128 + 15, "STOPPED", "stopped by SIGTERM"},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static size_t status_at(int status)
{
    size_t i;

    for (i = 0; i < COUNT(statuses); i++)
        if (statuses[i].status == status)
            return i;
    return COUNT(statuses) - 1; /* not run */
}

int gpuipc_status_known(int status)
{
    return statuses[status_at(status)].status == status;
}

int gpuipc_status_verdict(unsigned long passed, unsigned long failed, unsigned long stopped)
{
    return failed ? GPUIPC_FAIL : stopped ? GPUIPC_STOPPED : passed ? GPUIPC_PASS : GPUIPC_SKIP;
}

const char *gpuipc_status_word(int status)
{
    return statuses[status_at(status)].word;
}

const char *gpuipc_status_name(int status)
{
    return statuses[status_at(status)].name;
}

const char *gpuipc_exit_word(int code)
{
    size_t i;

    for (i = 0; i < COUNT(exits); i++)
        if (exits[i].code == code)
            return exits[i].word;
    return code > 128 ? "STOPPED" : "FAIL";
}

const char *gpuipc_exit_meaning(int code)
{
    size_t i;

    for (i = 0; i < COUNT(exits); i++)
        if (exits[i].code == code)
            return exits[i].meaning;
    return "unknown";
}
