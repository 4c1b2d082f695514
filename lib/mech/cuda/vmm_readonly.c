/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_readonly.c: the consumer maps the imported VMM handle with
 * CU_MEM_ACCESS_FLAGS_PROT_READ. Its kernels read the producer's pattern;
 * instead of writing, it proves that writes are refused: cuMemGetAccess must
 * report read-only, and copy-engine writes (cuMemcpyHtoD, cuMemsetD32) must
 * fail at once (CUDA_ERROR_INVALID_VALUE on the H100, context intact). The
 * producer then checks that its own pattern is unchanged. A kernel store
 * into the mapping would fault and poison the context, so none is tried. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu/cudrv.h"
#include "session/scenario.h"
#include "gpu/gpu.h"
#include "session/mech.h"
#include "mech/cuda/vmm.h"

static int ro_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                     unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    int rc = gpuipc_vmm_fd_import(sc, offer, fds, nfds, GPUIPC_VMM_READ_ONLY, buf, err);

    if (rc == 0) {
        size_t used = strlen(buf->detail);

        snprintf(buf->detail + used, sizeof(buf->detail) - used, ", mapped read-only");
    }
    return rc;
}

static int ro_prove(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err)
{
    const uint32_t junk[4] = {0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef};
    unsigned long long flags = 0;
    CUresult copy, set, rc;
    CUmemLocation here;

    memset(&here, 0, sizeof(here));
    here.type = CU_MEM_LOCATION_TYPE_DEVICE;
    here.id = gpuipc_gpu_ordinal(sc->env->gpu);
    rc = GPUIPC_CU_CALL(cuMemGetAccess, &flags, &here, buf->view.dev);
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuMemGetAccess", rc, __FILE__,
                                                    __LINE__));
    if (flags != CU_MEM_ACCESS_FLAGS_PROT_READ)
        return gpuipc_err_set(err, -EPROTO, "cuMemGetAccess reports flags %llu for this GPU, not "
                              "CU_MEM_ACCESS_FLAGS_PROT_READ (%d)", flags,
                              (int)CU_MEM_ACCESS_FLAGS_PROT_READ);
    copy = GPUIPC_CU_CALL(cuMemcpyHtoD, buf->view.dev, junk, sizeof(junk));
    set = GPUIPC_CU_CALL(cuMemsetD32, buf->view.dev, 0xdeadbeef, 4);
    if (copy == CUDA_SUCCESS || set == CUDA_SUCCESS)
        return gpuipc_err_set(err, -EPROTO, "a write into the read-only mapping was accepted: "
                              "cuMemcpyHtoD %s, cuMemsetD32 %s",
                              gpuipc_cudrv_error_name(copy), gpuipc_cudrv_error_name(set));
    /* A refusal must leave the context usable. */
    rc = GPUIPC_CU_CALL(cuCtxSynchronize, );
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuCtxSynchronize after the refused "
                                                    "writes", rc, __FILE__, __LINE__));
    return gpuipc_err_set(err, 0, "cuMemGetAccess PROT_READ; cuMemcpyHtoD %s; cuMemsetD32 %s",
                          gpuipc_cudrv_error_name(copy), gpuipc_cudrv_error_name(set));
}

const gpuipc_mech gpuipc_mech_vmm_readonly = {
    .name = "vmm-readonly",
    .summary = "imported VMM memory mapped read-only: reads pass, writes must be refused",
    .needs_cuda = 1,
    .by_default = 1,
    .cross_device = 1,
    .read_only = 1,
    .probe = gpuipc_vmm_fd_probe,
    .alloc = gpuipc_vmm_fd_alloc,
    .export = gpuipc_vmm_fd_export,
    .import = ro_import,
    .release = gpuipc_vmm_release,
    .prove_read_only = ro_prove,
};
