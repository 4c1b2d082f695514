/* SPDX-License-Identifier: Apache-2.0 */
/* devices.h: the driver started once, and the devices this process sees,
 * without a context: their count, ordinals and UUIDs, names, bus ids and
 * compute modes, the device an offer names, and the path between two
 * devices. */
#ifndef GPUIPC_GPU_DEVICES_H
#define GPUIPC_GPU_DEVICES_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "run/plan.h"
#include "session/scenario.h"
#include "wire/msg.h"

/* The driver's variable for the number of hardware work queues of a
 * context, which gpuipc_gpu_init() sets to 1 when the user has not set it;
 * gpuipc_gpu_connections_set says whether it did. */
#define GPUIPC_GPU_CONNECTIONS_ENV "CUDA_DEVICE_MAX_CONNECTIONS"
extern int gpuipc_gpu_connections_set;

/* Sets CUDA_DEVICE_MAX_CONNECTIONS=1 unless the user set it (see
 * gpuipc_gpu_init); call it before any thread exists. */
void gpuipc_gpu_set_connections(void);

/* Loads the driver and calls cuInit(0), once per process; later calls return
 * the first result. Before cuInit it sets CUDA_DEVICE_MAX_CONNECTIONS=1 if
 * unset (a context then starts and ends in half the time) and, in the host's
 * PID namespace, starts NVML on a thread of its own (gpuipc_nvml_start), so
 * call it before any other thread. Returns 0; -ENOENT (no
 * driver) or -ENODEV (no device), which mean nothing can run here; or
 * another negative errno for a driver that is present but failed. err says
 * which, with the fix. */
int gpuipc_gpu_init(gpuipc_err *err);

/* Stores the number of visible devices in *count. Returns 0 or negative errno. */
int gpuipc_gpu_count(int *count, gpuipc_err *err);

/* How long cuInit took in this process (0 before gpuipc_gpu_init), for a
 * device's open times (gpu.h's gpuipc_gpu_open_times). */
uint64_t gpuipc_gpu_init_ns(void);

/* Finds the ordinal under which this process sees the device with uuid.
 * Returns 0, or -ENODEV naming the UUID and the likely cause. */
int gpuipc_gpu_find_uuid(const uint8_t uuid[GPUIPC_UUID_LEN], int *ordinal, gpuipc_err *err);

/* The name and the PCI bus id of the device at ordinal, without a context
 * ("" where the driver does not say). */
void gpuipc_gpu_describe_ordinal(int ordinal, char *name, size_t nlen, char *bus, size_t blen);

/* The compute mode of the device at ordinal (CU_COMPUTEMODE_...), read
 * without a context, or -1 where the driver does not say. */
int gpuipc_gpu_compute_mode(int ordinal);

/* Reads the UUID of the device at ordinal. Returns 0 or a negative errno. */
int gpuipc_gpu_uuid_of(int ordinal, uint8_t uuid[GPUIPC_UUID_LEN], gpuipc_err *err);

/* Consumer: checks that an offer names the device that BEGIN named as the
 * memory's (sc->home_uuid). Returns 0, or -EPROTO naming the offered one. */
int gpuipc_gpu_check_offer(const gpuipc_scenario *sc, const uint8_t uuid[GPUIPC_UUID_LEN],
                           gpuipc_err *err);

/* Describes the link from GPU a to GPU b (ordinals) into buf: NVML's view
 * (NVLink and its version and active links, or PCIe and the topology
 * between them) and the driver's P2P attributes (peer access, native
 * atomics, performance rank). Says why where a part is not known. */
void gpuipc_gpu_link_describe(int a, int b, char *buf, size_t len);

/* Whether the driver claims peer access from GPU a to GPU b (ordinals):
 * CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED; 1, 0, or -1 where it cannot say. */
int gpuipc_gpu_peer_claimed(int a, int b);

/* What decides whether GPU b (ordinal) can reach GPU a's memory, for
 * run/plan.h's rule (gpuipc_plan_no_peer_path): the driver's word for b
 * accessing a, and whether NVML shows an NVLink between them. */
void gpuipc_gpu_peer_facts(int a, int b, gpuipc_plan_peer *f);

#endif
