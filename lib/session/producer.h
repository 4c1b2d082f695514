/* producer.h: the producer's side of the session: HELLO, one scenario per
 * call, BYE. */
#ifndef GPUIPC_PRODUCER_H
#define GPUIPC_PRODUCER_H

#include <stdint.h>

#include "session/env.h"
#include "core/err.h"
#include "session/mech.h"
#include "wire/wire.h"

/* The outcome of one scenario, as both sides agreed on it. */
typedef struct gpuipc_result {
    const char *mech;
    int status;                 /* GPUIPC_PASS, GPUIPC_FAIL, GPUIPC_SKIP, or -1: not run */
    char reason[GPUIPC_ERR_LEN]; /* the first failure, or why it was skipped */
    char cause[GPUIPC_ERR_LEN];  /* "cause: ...; fix: ..." from both sides' facts, or "" */
    uint64_t size;              /* bytes shared (after rounding to granularity) */
    gpuipc_check forward;       /* the consumer's check of the producer's bytes */
    gpuipc_check backward;      /* the producer's check of the consumer's bytes */
    gpuipc_written consumer_wrote; /* what the consumer's fill wrote, and in how long */
    char detail[512];           /* a line under the row, for any result ("" for none) */
    uint64_t ns;                /* wall time of the scenario */
    gpuipc_usage_figures consumer_usage; /* what the consumer held after it (END_ACK) */
} gpuipc_result;

/* Sends HELLO (with GPUIPC_HELLO_NEEDS_CUDA in flags if a scenario will use
 * CUDA) and waits for the consumer's. Stores its pid in *peer_pid. Returns 0
 * or a negative errno with the reason. */
int gpuipc_producer_hello(gpuipc_env *env, gpuipc_wire *w, unsigned flags, int *peer_pid,
                          gpuipc_err *err);

/* Asks the consumer whether it can run mech on env->uuid, and stores its
 * answer in st: GPUIPC_PASS, GPUIPC_SKIP with the consumer's reason (it
 * cannot run here), or GPUIPC_FAIL. Returns 0, or a negative errno if the
 * connection broke (err says why). */
int gpuipc_producer_probe(gpuipc_env *env, gpuipc_wire *w, const gpuipc_mech *mech,
                          gpuipc_status *st, gpuipc_err *err);

/* Runs scenario index with mech over size bytes together with the consumer
 * and fills res. Every resource it takes is released on every path. If the
 * connection breaks, res says so and later calls fail at once. */
void gpuipc_producer_scenario(gpuipc_env *env, gpuipc_wire *w, const gpuipc_mech *mech,
                              uint64_t size, unsigned index, gpuipc_result *res);

/* Ends the session: sends BYE with the verdict this side reached (an exit
 * status and the scenario counts) and waits for BYE_ACK, the consumer's last
 * checks, into *ack (GPUIPC_PASS, or GPUIPC_FAIL with its reason). Returns 0,
 * or a negative errno if the connection broke (err says why, naming the
 * step). */
int gpuipc_producer_bye(gpuipc_env *env, gpuipc_wire *w, const gpuipc_msg_bye *verdict,
                        gpuipc_status *ack, gpuipc_err *err);

#endif
