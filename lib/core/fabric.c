/* SPDX-License-Identifier: Apache-2.0 */
/* fabric.c: a GPU's fabric facts in words (core/fabric.h). */
#include "core/fabric.h"

#include <stdio.h>

const char *gpuipc_fabric_state_name(int state)
{
    static const char *const names[] = {"not supported", "not started", "in progress",
                                        "completed"};

    if (state < 0)
        return "not reported";
    return state <= GPUIPC_FABRIC_COMPLETED ? names[state] : "unknown";
}

const char *gpuipc_fabric_summary_name(int summary)
{
    static const char *const names[] = {"not supported", "healthy", "unhealthy",
                                        "limited capacity"};

    if (summary < 0)
        return "not reported";
    return summary <= 3 ? names[summary] : "unknown";
}

/* Appends one fault's words to buf, after a comma where it holds some. */
static void add(char *buf, size_t len, size_t *used, const char *what, unsigned code)
{
    int n;

    if (*used >= len)
        return;
    n = snprintf(buf + *used, len - *used, code ? "%s%s (code %u)" : "%s%s",
                 *used ? ", " : "", what, code);
    *used = n < 0 ? len : *used + (size_t)n;
}

int gpuipc_fabric_health_faults(unsigned mask, int summary, char *buf, size_t len)
{
    static const char *const pairs[] = {"bandwidth degraded", "route recovery in progress",
                                        "route unhealthy", "access timeout recovery in progress"};
    static const char *const config[] = {"incorrect configuration: system GUID",
                                         "incorrect configuration: chassis serial number",
                                         "incorrect configuration: no partition",
                                         "incorrect configuration: too few NVLinks"};
    unsigned i, conf = (mask >> 8) & 0xfu;
    size_t used = 0;

    if (len > 0)
        buf[0] = '\0';
    /* Each two-bit field: 0 not supported, 1 true (the fault), 2 false. */
    for (i = 0; i < 4; i++)
        if (((mask >> (2 * i)) & 3u) == 1)
            add(buf, len, &used, pairs[i], 0);
    /* 0 not supported, 1 none, 2 to 5 named, above: a code this program
     * does not know, said as one. */
    if (conf >= 2 && conf <= 5)
        add(buf, len, &used, config[conf - 2], 0);
    else if (conf > 5)
        add(buf, len, &used, "incorrect configuration", conf);
    if (summary == 2 || summary == 3)
        add(buf, len, &used, summary == 2 ? "health summary unhealthy"
                                          : "health summary limited capacity", 0);
    return used > 0;
}
