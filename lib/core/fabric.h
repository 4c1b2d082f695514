/* SPDX-License-Identifier: Apache-2.0 */
/* fabric.h: a GPU's fabric facts as NVML reports them
 * (nvmlGpuFabricInfo_v3: state, status, cluster, clique, health mask and
 * summary), said in words, and whether their health lets FABRIC memory
 * cross nodes. Numbers only: gpu/nvml reads them, launch/job carries them
 * in the GPU cards, and the outputs print them. */
#ifndef GPUIPC_FABRIC_H
#define GPUIPC_FABRIC_H

#include <stddef.h>

/* nvmlGpuFabricState_t. */
#define GPUIPC_FABRIC_NOT_SUPPORTED 0
#define GPUIPC_FABRIC_NOT_STARTED 1
#define GPUIPC_FABRIC_IN_PROGRESS 2
#define GPUIPC_FABRIC_COMPLETED 3

/* A state's words: "not supported", "not started", "in progress",
 * "completed"; "not reported" for -1 and "unknown" above 3. */
const char *gpuipc_fabric_state_name(int state);

/* The health summary (NVML_GPU_FABRIC_HEALTH_SUMMARY_*, v3 drivers): -1
 * not reported (an older driver), 0 not supported, 1 healthy, 2 unhealthy,
 * 3 limited capacity. Its words ("unknown" past 3). */
const char *gpuipc_fabric_summary_name(int summary);

/* What the health mask (NVML_GPU_FABRIC_HEALTH_MASK_*: two bits each for
 * degraded bandwidth, route recovery, route unhealthy and access timeout
 * recovery, 1 meaning true; four bits of incorrect configuration from bit
 * 8, 1 meaning none) and the summary say is wrong, as
 * "bandwidth degraded, route unhealthy" into buf (len bytes; "" where
 * nothing is). Returns 1 where anything is wrong, else 0. */
int gpuipc_fabric_health_faults(unsigned mask, int summary, char *buf, size_t len);

#endif
