/* SPDX-License-Identifier: Apache-2.0 */
/* producer_end.h: the end of the producer's session (producer_end.c): the
 * causes named, the last checks, BYE, the consumers' exits. */
#ifndef GPUIPC_APP_CUDA_PRODUCER_END_H
#define GPUIPC_APP_CUDA_PRODUCER_END_H

#include <stddef.h>

#include "core/err.h"
#include "session/env.h"

struct gpuipc_producer_run;

/* Ends the session with the verdict code and lets go of it, without a word
 * of the outcome: the causes of its failures and skips named, the last
 * checks, BYE and the consumer's answer (and a forked consumer's exit),
 * the connection and the GPUs closed. How the consumer ended goes into
 * consumer (len bytes). Returns the session's status. The results stay in
 * run until gpuipc_app_scenarios_free. --ranks ends each pair's session so;
 * gpuipc_app_producer_finish calls it. */
int gpuipc_app_producer_end(struct gpuipc_producer_run *run, int code, char *consumer,
                            size_t len);

/* env->reap_peer: waits for the sacrificial consumer's exit (env->reap_arg
 * is its run). Returns 0 if it exited 0, else -ECHILD with how it ended in
 * err. */
int gpuipc_app_reap_sacrificial(gpuipc_env *env, gpuipc_err *err);

#endif
