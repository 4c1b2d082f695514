/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_fd.c: CUDA VMM device memory, exported as a POSIX file descriptor
 * and passed with SCM_RIGHTS: the path PyTorch's expandable segments, NCCL
 * and UCX use. Every step is the plain one in vmm.c.
 *
 *   P1 probe: VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
 *   P2 alloc: cuMemCreate (POSIX FD handle type), reserve, map, set access
 *   P3 export: cuMemExportToShareableHandle -> 1 FD, sent with SCM_RIGHTS
 *   C1 import: cuMemImportFromShareableHandle(FD), properties, reserve, map, access
 *   both: release */
#include "session/mech.h"
#include "mech/cuda/vmm.h"

static int vmm_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                      unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    return gpuipc_vmm_fd_import(sc, offer, fds, nfds, 0, buf, err);
}

const gpuipc_mech gpuipc_mech_vmm = {
    .name = "vmm",
    .summary = "CUDA VMM device memory: cuMemCreate, POSIX FD over SCM_RIGHTS, cuMemMap",
    .needs_cuda = 1,
    .by_default = 1,
    .reference = 1,
    .cross_device = 1,
    .probe = gpuipc_vmm_fd_probe,
    .alloc = gpuipc_vmm_fd_alloc,
    .export = gpuipc_vmm_fd_export,
    .import = vmm_import,
    .release = gpuipc_vmm_release,
};
