/* SPDX-License-Identifier: Apache-2.0 */
/* cutrack.h: counting, in the ledger, every driver object this process
 * takes and gives back. */
#ifndef GPUIPC_CUTRACK_H
#define GPUIPC_CUTRACK_H

#include "gpu/cudrv.h"

/* Replaces the entries of cu that create or release memory, mappings,
 * address ranges, pools, IPC opens, events and contexts with wrappers that
 * call the driver's own and record each success in the ledger (ledger.h).
 * Called once, by gpuipc_cudrv_load(), after every entry is resolved. */
void gpuipc_cutrack_install(gpuipc_cudrv *cu);

#endif
