/* SPDX-License-Identifier: Apache-2.0 */
/* fabric.c: VMM device memory exported as a FABRIC handle, a 64-byte
 * value that travels in the message itself (no FD), for sharing across
 * processes and, with IMEX, across nodes of an NVLink domain. Both sides
 * need an IMEX channel; where there is none the probe says which piece is
 * missing, in the order a person would check them.
 *
 *   probe: HANDLE_TYPE_FABRIC_SUPPORTED; nvidia-caps-imex-channels in
 *          /proc/devices; a usable /dev/nvidia-caps-imex-channels/channel*;
 *          then a trial cuMemCreate with the FABRIC handle type, which is
 *          CUDA_ERROR_NOT_PERMITTED without a channel
 *   P export: cuMemExportToShareableHandle -> CUmemFabricHandle, in the offer
 *   C import: cuMemImportFromShareableHandle(&handle, FABRIC), map as vmm */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu/cudrv.h"
#include "session/scenario.h"
#include "gpu/gpu.h"
#include "mech/imex.h"
#include "session/mech.h"
#include "mech/cuda/vmm.h"

#define NAME "fabric"

/* Creates and releases the smallest FABRIC allocation: the one test that
 * says whether this process was granted a channel. */
static CUresult trial_create(gpuipc_scenario *sc, gpuipc_err *err)
{
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop;
    size_t gran = 0;
    CUresult rc;

    gpuipc_vmm_prop(sc->env->gpu, CU_MEM_HANDLE_TYPE_FABRIC, CU_MEM_ALLOCATION_COMP_NONE, &prop);
    GPUIPC_CU_GOTO(rc, err, out, cuMemGetAllocationGranularity, &gran, &prop,
                   CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    GPUIPC_CU_GOTO(rc, err, out, cuMemCreate, &h, gran, &prop, 0);
    GPUIPC_CU_CALL(cuMemRelease, h);
out:
    return rc;
}

static int fabric_probe(gpuipc_scenario *sc, gpuipc_err *why)
{
    gpuipc_err files, trial;
    int no_channel, rc;
    CUresult cr;

    rc = gpuipc_vmm_probe(sc, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED,
                          "HANDLE_TYPE_FABRIC", why);
    if (rc < 0)
        return rc;
    no_channel = gpuipc_imex_check(GPUIPC_IMEX_DEVICES, GPUIPC_IMEX_CHANNELS, &files) < 0;
    cr = trial_create(sc, &trial);
    if (cr == CUDA_SUCCESS)
        return 0;
    if (cr != CUDA_ERROR_NOT_PERMITTED)
        return gpuipc_err_wrap(why, &trial, gpuipc_cudrv_errno(cr), "trial %s", trial.msg);
    if (no_channel)
        return gpuipc_err_wrap(why, &trial, -ENOTSUP, "%.250s; and cuMemCreate with "
                               "CU_MEM_HANDLE_TYPE_FABRIC returns CUDA_ERROR_NOT_PERMITTED",
                               files.msg);
    return gpuipc_err_wrap(why, &trial, -ENOTSUP, "cuMemCreate with CU_MEM_HANDLE_TYPE_FABRIC "
                           "returns CUDA_ERROR_NOT_PERMITTED although an IMEX channel file is "
                           "there: this process was not granted that channel");
}

static int fabric_alloc(gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    CUmemAllocationProp prop;

    gpuipc_vmm_prop(sc->env->gpu, CU_MEM_HANDLE_TYPE_FABRIC, CU_MEM_ALLOCATION_COMP_NONE, &prop);
    return gpuipc_vmm_create(sc, &prop, size, buf, err);
}

static int fabric_export(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                         unsigned *nfds, gpuipc_err *err)
{
    gpuipc_vmm *v = buf->priv;
    CUmemFabricHandle handle;
    CUresult rc;

    (void)fds;
    GPUIPC_CU_GOTO(rc, err, out, cuMemExportToShareableHandle, &handle, v->handle,
                   CU_MEM_HANDLE_TYPE_FABRIC, 0);
    *nfds = 0;
    gpuipc_vmm_offer(sc, buf, offer);
    memcpy(offer->blob, handle.data, sizeof(handle.data));
    offer->blob_len = sizeof(handle.data);
    return 0;
out:
    return gpuipc_cudrv_errno(rc);
}

static int fabric_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                         unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    CUmemFabricHandle handle;
    int rc;

    (void)fds;
    if ((rc = gpuipc_mech_offer_shape("fabric", offer, nfds, 0, sizeof(handle.data), err)) < 0)
        return rc;
    memcpy(handle.data, offer->blob, sizeof(handle.data));
    return gpuipc_vmm_import(sc, &handle, CU_MEM_HANDLE_TYPE_FABRIC, 0, offer, buf, err);
}

const gpuipc_mech gpuipc_mech_fabric = {
    .name = NAME,
    .summary = "CUDA VMM memory as a FABRIC handle, sent in-band (needs an IMEX channel)",
    .needs_cuda = 1,
    .by_default = 1,
    .cross_device = 1,
    .cross_node = 1,
    .probe = fabric_probe,
    .alloc = fabric_alloc,
    .export = fabric_export,
    .import = fabric_import,
    .release = gpuipc_vmm_release,
};
