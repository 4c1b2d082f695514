/* SPDX-License-Identifier: Apache-2.0 */
/* producer.h: the producer's side of the session: HELLO, one scenario per
 * call, BYE. */
#ifndef GPUIPC_PRODUCER_H
#define GPUIPC_PRODUCER_H

#include <stdint.h>

#include "core/cause.h"
#include "core/err.h"
#include "session/env.h"
#include "session/laps.h"
#include "session/link.h"
#include "session/mech.h"
#include "wire/wire.h"

/* The outcome of one scenario, as both sides agreed on it. */
typedef struct gpuipc_result {
    const char *mech;           /* the scenario's name: "vmm", or "vmm 0->1" across GPUs */
    const char *mechanism;      /* its mechanism's name alone ("vmm"), or NULL: mech */
    /* Where it ran, for runs over several GPUs: the summary's heading of its
     * group ("" or NULL: no heading), and the exporter's and the importer's
     * GPU (-1: none, host memory, or the run's one GPU). */
    const char *group;
    int gpu, peer_gpu;
    int status; /* GPUIPC_PASS, GPUIPC_FAIL, GPUIPC_SKIP, GPUIPC_STOPPED, or -1: not run */
    char reason[GPUIPC_ERR_LEN]; /* the first failure, or why it was skipped */
    gpuipc_cause cause;         /* what explains it, from both sides' facts (core/cause.h) */
    uint64_t size;              /* bytes shared (after rounding to granularity) */
    gpuipc_check forward;       /* the consumer's check of the producer's bytes */
    gpuipc_check backward;      /* the producer's check of the consumer's bytes */
    gpuipc_written consumer_wrote; /* what the consumer's fill wrote, and in how long */
    /* --pairs: the consumer's figures of the link, as both sides judged them
     * (link.passes 0: none measured) */
    gpuipc_link_figures link;
    char detail[512];           /* a line under the row, for any result ("" for none) */
    uint64_t ns;                /* wall time of the scenario */
    gpuipc_usage_figures consumer_usage; /* what the consumer held after it (END_ACK) */
    /* The failure or skip as data, for the rules that name its cause and
     * for --brief, which never read the reason's text: the side it happened
     * on (enum gpuipc_role; 0 for a pass) and its status as that side
     * recorded it (step, call, errno, CUresult, its own reason). */
    int failed_side;
    gpuipc_status failure;
} gpuipc_result;

/* Sets r's verdict: status, its reason (formatted), the side it happened on
 * (enum gpuipc_role), and its failure as data, at step, with what failed
 * from e (NULL: nothing). */
void gpuipc_result_set(gpuipc_result *r, int status, int side, unsigned step,
                       const gpuipc_err *e, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Sets r's verdict to status from st, the status side recorded: its
 * reason, "consumer " before it for the consumer's. */
void gpuipc_result_of_status(gpuipc_result *r, int status, int side, const gpuipc_status *st);

/* What the producer asks of one scenario. */
typedef struct gpuipc_scenario_ask {
    const gpuipc_mech *mech;
    uint64_t size;             /* bytes */
    unsigned index;            /* its number in the session */
    unsigned chunks;           /* chunked mechanisms: allocations; 0: the default */
    const uint8_t *uuid;       /* this side's device, or NULL: none */
    const uint8_t *peer_uuid;  /* the consumer's, where another (--pairs), or NULL */
    gpuipc_timing *timing;     /* --bench, --json and --pairs' link figures: what to ask
                                * of the consumer and where both sides' figures go; NULL
                                * for a plain scenario */
} gpuipc_scenario_ask;

/* Sends HELLO (with GPUIPC_HELLO_NEEDS_CUDA in flags if a scenario will use
 * CUDA) and waits for the consumer's. Stores its pid in *peer_pid. Returns 0
 * or a negative errno with the reason. */
int gpuipc_producer_hello(gpuipc_env *env, gpuipc_wire *w, unsigned flags, int *peer_pid,
                          gpuipc_err *err);

/* Asks the consumer whether it can run ask's mechanism on ask's devices,
 * and stores its answer in st: GPUIPC_PASS, GPUIPC_SKIP with the consumer's
 * reason (it cannot run here), or GPUIPC_FAIL. Returns 0, or a negative
 * errno if the connection broke (err says why). */
int gpuipc_producer_probe(gpuipc_env *env, gpuipc_wire *w, const gpuipc_scenario_ask *ask,
                          gpuipc_status *st, gpuipc_err *err);

/* Runs the scenario ask describes together with the consumer and fills res
 * (its group, gpu and peer_gpu, where it runs, are kept as the caller set
 * them). Every resource it takes is released on every path. If the
 * connection breaks, res says so and later calls fail at once. */
void gpuipc_producer_scenario(gpuipc_env *env, gpuipc_wire *w, const gpuipc_scenario_ask *ask,
                              gpuipc_result *res);

/* Ends the session: sends BYE with the verdict this side reached (an exit
 * status and the scenario counts) and waits for BYE_ACK, the consumer's last
 * checks, into *ack (GPUIPC_PASS, or GPUIPC_FAIL with its reason). Returns 0,
 * or a negative errno if the connection broke (err says why, naming the
 * step). */
int gpuipc_producer_bye(gpuipc_env *env, gpuipc_wire *w, const gpuipc_msg_bye *verdict,
                        gpuipc_status *ack, gpuipc_err *err);

#endif
