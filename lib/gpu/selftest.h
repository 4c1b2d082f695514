/* SPDX-License-Identifier: Apache-2.0 */
/* selftest.h: the kernels' self-test, which gpu.c runs when a device opens. */
#ifndef GPUIPC_GPU_SELFTEST_H
#define GPUIPC_GPU_SELFTEST_H

#include <stddef.h>

#include "core/err.h"
#include "gpu/cuda_api.h"
#include "gpu/kernels.h"

/* For gpu.c, which runs it when a device opens, its kernels k loaded and
 * their result words allocated at result, in the device's context: proves
 * that the kernels compute the same pattern as the CPU, that every word of
 * a buffer is written and read however the grid-stride loop divides it, and
 * that verify reports planted errors at the right index, and writes what it
 * proved, in one line, into summary (len bytes). Returns 0, or a negative
 * errno with err (its text begins "self-test"). */
int gpuipc_selftest_run(const gpuipc_kernels *k, CUdeviceptr result, char *summary, size_t len,
                        gpuipc_err *err);

#endif
