/* SPDX-License-Identifier: Apache-2.0 */
/* scenario_ask.h: one scenario of the producer's run, as its probe, its
 * Check test (rounds.c) and the summary use it (scenario_ask.c): its
 * connection, what the consumer is asked and on which devices, a pair's link
 * judged, the consumer's figures after it. */
#ifndef GPUIPC_APP_CUDA_SCENARIO_ASK_H
#define GPUIPC_APP_CUDA_SCENARIO_ASK_H

#include <stddef.h>
#include <stdint.h>

#include "core/account.h"
#include "core/err.h"
#include "session/mech.h"
#include "session/producer.h"
#include "wire/wire.h"

struct gpuipc_producer_run;

/* A destructive mechanism talks to the sacrificial consumer: returns the
 * connection m's scenarios go over (run's, NULL where it is gone). */
gpuipc_wire *gpuipc_app_wire_for(const struct gpuipc_producer_run *run, const gpuipc_mech *m);

/* The devices of one scenario, which its ask points to. */
typedef struct gpuipc_app_devices {
    uint8_t uuid[GPUIPC_UUID_LEN];      /* the producer's */
    uint8_t peer_uuid[GPUIPC_UUID_LEN]; /* the consumer's where another (--pairs); zero */
} gpuipc_app_devices;

/* Fills ask for scenario i: its mechanism, --size, --chunks, its number,
 * and its devices in dev (for a --pairs scenario, its GPU opened and made
 * current). Returns 0 or a negative errno with why. */
int gpuipc_app_scenario_ask(struct gpuipc_producer_run *run, size_t i, gpuipc_scenario_ask *ask,
                            gpuipc_app_devices *dev, gpuipc_err *err);

/* The same, pointing env (a phase's worker's, on its own thread) at the
 * cell's GPUs instead of the run's own env. */
int gpuipc_app_scenario_ask_on(struct gpuipc_producer_run *run, gpuipc_env *env, size_t i,
                               gpuipc_scenario_ask *ask, gpuipc_app_devices *dev,
                               gpuipc_err *err);

/* Runs cell i (asked by gpuipc_app_scenario_ask_on) over w in env, with
 * --json's step times into t (its figures into the cells' steps, then the
 * flag a watchdog reads them by), into the cell's result. Returns 1 if its
 * BEGIN could go (the GPUs were found), 0 if not (the result says why). */
int gpuipc_app_drive_cell(struct gpuipc_producer_run *run, size_t i, gpuipc_env *env,
                          gpuipc_wire *w, gpuipc_timing *t);

/* Whether scenario i asks the consumer for the link's figures
 * (GPUIPC_BEGIN_LINK): under --pairs, across two GPUs, over device memory
 * (host memory has no GPU link to measure). Returns 1 or 0. */
int gpuipc_app_asks_link(const struct gpuipc_producer_run *run, size_t i);

/* Across GPUs, after scenario i ran: names its link and the GB/s the
 * consumer read and wrote across it in the result's detail line (under
 * --pairs the link's figures, session/link.h; elsewhere the scenario's one
 * pass each way, said so), and fails a passed scenario slower than
 * --min-gbps in a direction it measured. */
void gpuipc_app_judge_pair(struct gpuipc_producer_run *run, size_t i);

/* The consumer's figures after the last scenario that passed, into *f.
 * Returns 1 if there is one, else 0 (f untouched). */
int gpuipc_app_consumer_figures(const struct gpuipc_producer_run *run, gpuipc_usage_figures *f);

#endif
