/* SPDX-License-Identifier: Apache-2.0 */
/* consumer_scenario.h: within the consumer's side, what its session
 * (consumer.c) and one scenario (consumer_scenario.c) share: the session's
 * state, a mechanism's probe and the run of one scenario. Only those two
 * files include it. */
#ifndef GPUIPC_CONSUMER_SCENARIO_H
#define GPUIPC_CONSUMER_SCENARIO_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "session/env.h"
#include "session/mech.h"
#include "session/role.h"
#include "wire/wire.h"

/* The session, as this side keeps it from scenario to scenario. */
typedef struct gpuipc_consumer_session {
    gpuipc_env *env;
    gpuipc_wire *w;
    const gpuipc_mech *const *mechs;
    size_t n;
    unsigned passed;             /* scenarios this side saw pass */
    unsigned producer_failed;    /* scenarios whose END said the producer failed */
    char first_fail[GPUIPC_ERR_LEN];
    /* The last probe's refusal, said once for the mechanisms that share it. */
    char last_reason[GPUIPC_WIRE_REASON_LEN];
    char last_name[GPUIPC_WIRE_NAME_LEN];
    int said_accounting;         /* whether NVML's view was said */
    uint64_t hwm;                /* the peak RSS of scenarios that reset it for their own */
    struct gpuipc_consumer_workers *workers; /* the phases' workers (consumer_phase.c) */
    int phase_refused;           /* a PHASE out of its order came (first_fail says which) */
} gpuipc_consumer_session;

/* Points sc at the devices a PROBE or BEGIN names (the memory lives on
 * uuid; this side works on consumer_uuid where one is named), finds
 * mechanism name among cs's and lets it probe (opening the device if need
 * be), and logs the answer. Fills st: PASS, SKIP (the mechanism cannot run
 * here, and why) or FAIL, with what failed as data, and err with the
 * probe's own reason. */
void gpuipc_consumer_probe(gpuipc_consumer_session *cs, gpuipc_scenario *sc, const char *name,
                           const uint8_t *uuid, const uint8_t *consumer_uuid, gpuipc_status *st,
                           gpuipc_err *err);

/* Runs the scenario that begin starts (C1 to C7). Sets *own to this side's
 * verdict (GPUIPC_PASS or GPUIPC_FAIL, whose reason goes into
 * cs->first_fail if it is the first) and *passed to 1 if this side saw it
 * pass (its own checks and the producer's END). Returns 0, or -1 if the
 * connection broke (which ends the session; cs->first_fail then says why). */
int gpuipc_consumer_scenario(gpuipc_consumer_session *cs, const gpuipc_msg_begin *begin, int *own,
                             int *passed);

#endif
