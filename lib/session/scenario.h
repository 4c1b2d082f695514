/* SPDX-License-Identifier: Apache-2.0 */
/* scenario.h: one scenario as a role runs it: what it shares and where (the
 * mechanism, the size, the devices), the connection it runs over, what it
 * holds until it releases it, and its verdict so far. A role makes one per
 * BEGIN and hands it to the mechanism's operations; the process it runs in
 * (gpuipc_env) is only read through it. */
#ifndef GPUIPC_SCENARIO_H
#define GPUIPC_SCENARIO_H

#include <stdint.h>

#include "core/account.h"
#include "core/err.h"
#include "session/env.h"
#include "session/laps.h"
#include "session/mech.h"
#include "wire/wire.h"

typedef struct gpuipc_scenario {
    gpuipc_env *env;         /* the process: fixed after set-up */
    gpuipc_wire *w;          /* the connection the scenario runs over */
    const gpuipc_mech *mech; /* NULL: the consumer has no mechanism by that name */
    const char *name;        /* the mechanism's name, for the step log */
    uint64_t size;           /* bytes asked for */
    unsigned chunks;         /* chunked mechanisms: allocations to make; 0: the default */

    /* The devices. This side works on uuid (all zero: none). The producer
     * names the consumer's in peer_uuid where it is another one (--pairs);
     * the consumer keeps the device that holds the memory, the producer's,
     * in home_uuid, and its ordinal here in home_ordinal. */
    uint8_t uuid[GPUIPC_UUID_LEN];
    uint8_t peer_uuid[GPUIPC_UUID_LEN];
    uint8_t home_uuid[GPUIPC_UUID_LEN];
    int home_ordinal;

    /* --bench: the consumer's laps, which the mechanisms add to; the
     * producer's request and figures (also for --json's step times). NULL
     * otherwise. */
    gpuipc_laps *laps;
    gpuipc_timing *timing;

    /* What it holds, released on every path. */
    gpuipc_buf buf;
    int have_buf;
    int fds[GPUIPC_WIRE_MAX_FDS];
    unsigned nfds;
    gpuipc_usage before; /* what this process held at the start: the leak check's */
    int have_before;

    /* Its verdict so far: this side's, and the peer's word, which can only
     * lower it. The first failure of each is kept. */
    gpuipc_status mine;
    gpuipc_status theirs;
    gpuipc_written wrote; /* what this side's fill wrote */
    gpuipc_err err;       /* the last operation's reason */
} gpuipc_scenario;

/* Returns 1 while neither side has failed or skipped the scenario. */
static inline int gpuipc_scenario_ok(const gpuipc_scenario *sc)
{
    return sc->mine.code == GPUIPC_PASS && sc->theirs.code == GPUIPC_PASS;
}

#endif
