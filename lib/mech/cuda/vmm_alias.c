/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_alias.c: one imported VMM handle mapped at two addresses in the
 * consumer. The consumer's kernel writes through the first; once that kernel
 * has completed, a kernel reads through the second and must find the same
 * bytes (and it reads the producer's pattern through both before that).
 *
 *   as vmm, and C import: a second cuMemAddressReserve, cuMemMap of the same
 *   handle, cuMemSetAccess; both unmapped at release */
#include "session/mech.h"
#include "mech/cuda/vmm.h"

static int alias_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                        unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    int rc = gpuipc_vmm_fd_import(sc, offer, fds, nfds, 0, buf, err);

    if (rc < 0)
        return rc;
    rc = gpuipc_vmm_map_alias(sc, buf, err);
    if (rc < 0)
        gpuipc_vmm_release(sc, buf, NULL);
    return rc;
}

const gpuipc_mech gpuipc_mech_vmm_alias = {
    .name = "vmm-alias",
    .summary = "one imported VMM handle mapped twice: written through one, read through the other",
    .needs_cuda = 1,
    .by_default = 1,
    .cross_device = 1,
    .probe = gpuipc_vmm_fd_probe,
    .alloc = gpuipc_vmm_fd_alloc,
    .export = gpuipc_vmm_fd_export,
    .import = alias_import,
    .release = gpuipc_vmm_release,
};
