/* SPDX-License-Identifier: Apache-2.0 */
/* devices.h: the devices this process sees, without a context: ordinals and
 * UUIDs, names, bus ids and compute modes, the device an offer names, and
 * the path between two devices. */
#ifndef GPUIPC_GPU_DEVICES_H
#define GPUIPC_GPU_DEVICES_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "session/scenario.h"
#include "wire/msg.h"

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

/* Consumer, once sc->env->gpu is its device: finds the device that holds
 * the memory (sc->home_uuid) by UUID, sets sc->home_ordinal, and where that
 * is another device, checks with cuDeviceCanAccessPeer that this one can
 * reach its memory. Returns 0, -ENOTSUP with why (no peer path), or an
 * errno. */
int gpuipc_gpu_peer_check(gpuipc_scenario *sc, gpuipc_err *err);

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

#endif
