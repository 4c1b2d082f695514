/* SPDX-License-Identifier: Apache-2.0 */
/* deadline.h: --deadline for each role (deadline.c): the watchdog started
 * with run/deadline.h's view of the run, which the mode owns. */
#ifndef GPUIPC_APP_CUDA_DEADLINE_H
#define GPUIPC_APP_CUDA_DEADLINE_H

#include <stdint.h>

#include "app/cuda/producer_run.h"
#include "app/options.h"
#include "run/deadline.h"

/* How long after the deadline the forked consumer ends itself, where the
 * producer, which speaks for the run, did not end it. */
#define GPUIPC_APP_DEADLINE_BACKSTOP_NS (3000ull * 1000000ull)

/* The producer's watchdog for --deadline (none without one), for the run
 * that started at t0: at the deadline it ends the run whatever is stuck,
 * with the verdicts so far, the stuck process, step and call named, the
 * consumers killed and the --json document written (run/deadline.h says how).
 * Call after the fork. Its view is run->deadline (NULL where it could
 * not be made), which gpuipc_app_deadline_done frees. Returns 0, or -1
 * after saying why. */
int gpuipc_app_deadline_producer(gpuipc_producer_run *run, uint64_t t0);

/* Prepares again the document that watchdog writes, now that run knows
 * more (the peer's facts, its GPU, its place so far). */
void gpuipc_app_deadline_document(gpuipc_producer_run *run);

/* Frees dl (NULL: nothing) and what the watchdog's document was prepared
 * in, once the run has claimed its end (gpuipc_watch_claim: the watchdog
 * reads nothing of it then). */
void gpuipc_app_deadline_done(gpuipc_deadline *dl);

/* The consumer's: forked, a backstop a little after the deadline, which
 * the producer should have ended the run by; with --connect, at the
 * deadline, reporting this side. Its view goes into *made (NULL where it
 * could not be made), for gpuipc_app_deadline_done. Returns 0, or -1 after
 * saying why. */
int gpuipc_app_deadline_consumer(const gpuipc_options *o, uint64_t t0,
                                 gpuipc_deadline **made);

#endif
