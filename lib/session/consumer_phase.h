/* SPDX-License-Identifier: Apache-2.0 */
/* consumer_phase.h: the consumer's side of the forked mode's phases
 * (consumer_phase.c); only consumer.c includes it. */
#ifndef GPUIPC_CONSUMER_PHASE_H
#define GPUIPC_CONSUMER_PHASE_H

#include <stddef.h>

#include "session/consumer_scenario.h"
#include "wire/msg.h"

/* Answers PHASE p with PHASE_ACK: at a beginning (the first with nfds
 * connections in fds, one per worker, which it starts serving on threads
 * of their own; it owns the FDs), what this process holds now; at an end,
 * once the workers have ended p->cells scenarios over the run (within
 * --timeout), what grew since the beginning, a failure naming it. Returns
 * 0, or a negative errno if the session's connection broke (err). */
int gpuipc_consumer_phase(gpuipc_consumer_session *cs, const gpuipc_msg_phase *p, int *fds,
                          unsigned nfds, gpuipc_err *err);

/* At BYE, after the producer closed the workers' connections: waits for
 * each worker to end (within --timeout), adds their scenarios to cs's
 * counts. Returns 0, or -1 with why where a worker's scenario failed, its
 * connection broke or it did not end. */
int gpuipc_consumer_workers_end(gpuipc_consumer_session *cs, char *why, size_t len);

#endif
