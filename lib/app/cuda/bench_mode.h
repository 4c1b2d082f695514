/* SPDX-License-Identifier: Apache-2.0 */
/* bench_mode.h: --bench's parts (bench_mode.c): the whole-process runs before any
 * CUDA call, and the measurements. */
#ifndef GPUIPC_APP_CUDA_BENCH_MODE_H
#define GPUIPC_APP_CUDA_BENCH_MODE_H

#include "app/cuda/producer_run.h"
#include "app/options.h"
#include "core/err.h"

/* The default one-shot runs, timed as whole processes before this process
 * touches CUDA, and the bare context's peak RSS, into *os (zeroed first). */
void gpuipc_app_bench_oneshots(const gpuipc_options *o, gpuipc_app_oneshots *os);

/* --bench in the producer, once both sides have probed. Returns the exit
 * status. */
int gpuipc_app_run_bench(gpuipc_producer_run *run, int cuda, const gpuipc_err *cuda_why);

#endif
