/* SPDX-License-Identifier: Apache-2.0 */
/* consumer.h: the consumer's side of the session. */
#ifndef GPUIPC_CONSUMER_H
#define GPUIPC_CONSUMER_H

#include <stddef.h>

#include "session/env.h"
#include "session/mech.h"
#include "wire/wire.h"

/* How a session ended, seen from the consumer. */
typedef struct gpuipc_session_end {
    int code;                    /* the session's exit status, as both sides agree on it */
    int said_bye;                /* the producer ended it with BYE */
    gpuipc_msg_bye bye;          /* the producer's verdict and counts, if it did */
    int own;                     /* this side: GPUIPC_PASS, or GPUIPC_FAIL */
    char reason[GPUIPC_ERR_LEN]; /* this side's first failure, if any */
    int met;                     /* HELLO went both ways */
    int errnum;                  /* the errno of a wait for the producer that ended the
                                  * session (ETIMEDOUT: it stalled), or 0 */
} gpuipc_session_end;

/* Answers HELLO, then serves scenario after scenario with the mechanisms in
 * mechs[0..n) until BYE, which it answers with its last checks (BYE_ACK).
 * Returns the session's exit status, also in end->code: the producer's
 * verdict from BYE if this side's scenarios and last checks passed, else
 * GPUIPC_FAIL; GPUIPC_FAIL too if the connection was lost (reported as
 * "peer gone during <step>"). A sacrificial consumer (a destructive
 * mechanism) returns after its one scenario with its own side's status. */
int gpuipc_consumer_serve(gpuipc_env *env, gpuipc_wire *w, const gpuipc_mech *const *mechs,
                          size_t n, gpuipc_session_end *end);

#endif
