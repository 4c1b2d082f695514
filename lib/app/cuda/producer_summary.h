/* SPDX-License-Identifier: Apache-2.0 */
/* producer_summary.h: the producer's outcome, said (producer_summary.c). */
#ifndef GPUIPC_APP_CUDA_PRODUCER_SUMMARY_H
#define GPUIPC_APP_CUDA_PRODUCER_SUMMARY_H

#include <stdint.h>

#include "core/err.h"

struct gpuipc_producer_run;

/* Ends the session with the verdict code and prints the outcome, then
 * writes --json's document; the run's tables are freed. Returns the exit
 * status. */
int gpuipc_app_producer_finish(struct gpuipc_producer_run *run, int code, uint64_t t0);

#endif
