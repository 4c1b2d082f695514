/* SPDX-License-Identifier: Apache-2.0 */
/* prom.h: --prom FILE, the run in the Prometheus text format (0.0.4) as
 * node-exporter's textfile collector reads it: gauges named gpuipc_test_*,
 * each with its HELP and TYPE lines, no sample timestamps (the collector
 * refuses them); the times are gauges of their own (_timestamp_seconds).
 * Every value comes from the outcome: nothing is assumed. */
#ifndef GPUIPC_RUN_PROM_H
#define GPUIPC_RUN_PROM_H

#include "run/outcome.h"

/* Writes oc to fd. A running outcome has no verdict series (success, exit
 * status, counts, scenarios): a run under way says only that it is, so that
 * neither a pass nor a failure is claimed before it ends. System calls
 * only. Returns 0, or a negative errno of the write that failed. */
int gpuipc_prom_write(int fd, const gpuipc_outcome *oc);

#endif
