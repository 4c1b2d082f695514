/* SPDX-License-Identifier: Apache-2.0 */
/* producer_devices.h: the producer's GPUs, chosen and opened before a
 * consumer takes part (producer_devices.c). */
#ifndef GPUIPC_APP_CUDA_PRODUCER_DEVICES_H
#define GPUIPC_APP_CUDA_PRODUCER_DEVICES_H

struct gpuipc_producer_run;

/* What the producer decides before a consumer takes part (the GPU, --size).
 * Returns 0, GPUIPC_USAGE (said on stderr), or, where every selected
 * scenario needs a GPU that cannot be had, GPUIPC_SKIP or GPUIPC_FAIL with
 * the reason in run->cuda_why. */
int gpuipc_app_producer_open(struct gpuipc_producer_run *run);

#endif
