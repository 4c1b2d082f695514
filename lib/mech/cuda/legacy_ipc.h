/* SPDX-License-Identifier: Apache-2.0 */
/* legacy_ipc.h: the legacy CUDA IPC pieces (legacy_ipc.c) that ipc-event
 * builds on: cuMemAlloc memory, its 64-byte handle at the start of the
 * offer's blob, cuIpcOpenMemHandle. */
#ifndef GPUIPC_LEGACY_IPC_H
#define GPUIPC_LEGACY_IPC_H

#include "session/scenario.h"
#include "session/mech.h"

#define GPUIPC_LEGACY_HANDLE_LEN 64 /* CU_IPC_HANDLE_SIZE */

/* Unified addressing, and (the consumer) the offered GPU opened. */
int gpuipc_legacy_probe(gpuipc_scenario *sc, gpuipc_err *why);

/* cuMemAlloc of size rounded up to 2 MiB. */
int gpuipc_legacy_alloc(gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err);

/* cuIpcGetMemHandle into blob[0..64) of the offer (blob_len 64), no FDs. */
int gpuipc_legacy_export(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                         unsigned *nfds, gpuipc_err *err);

/* The consumer: opens the handle in blob[0..64) of the offer, on the
 * offered GPU, and checks that it maps the offered size. */
int gpuipc_legacy_open(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, gpuipc_buf *buf,
                       gpuipc_err *err);

/* Both: cuIpcCloseMemHandle or cuMemFree, after a synchronize. */
int gpuipc_legacy_release(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err);

#endif
