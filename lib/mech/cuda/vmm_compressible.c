/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_compressible.c: VMM device memory requested compressible
 * (CU_MEM_ALLOCATION_COMP_GENERIC), shared by FD as vmm is. Whether the
 * driver granted compression is reported as the producer sees it and as the
 * importer's cuMemGetAllocationPropertiesFromHandle shows it; the bytes are
 * verified either way.
 *
 *   P probe: as vmm, and GENERIC_COMPRESSION_SUPPORTED
 *   P alloc: granularity for the compressible properties; cuMemCreate, map
 *   C import: as vmm; the handle's compressionType is what the importer got */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu/cudrv.h"
#include "session/scenario.h"
#include "gpu/gpu.h"
#include "session/mech.h"
#include "mech/cuda/vmm.h"

#define NAME "vmm-compressible"

static int comp_probe(gpuipc_scenario *sc, gpuipc_err *why)
{
    int rc = gpuipc_vmm_fd_probe(sc, why);
    int comp = 0;

    if (rc < 0)
        return rc;
    if (gpuipc_gpu_attr(sc->env->gpu, CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, &comp, why) !=
        CUDA_SUCCESS)
        return -EIO;
    if (!comp)
        return gpuipc_err_set(why, -ENOTSUP, "CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED "
                              "is 0 on GPU %d (%s): no compressible memory on this device",
                              gpuipc_gpu_ordinal(sc->env->gpu), gpuipc_gpu_name(sc->env->gpu));
    return 0;
}

/* Appends what the allocation's properties say about compression to detail. */
static void note_compression(gpuipc_buf *buf, const char *who)
{
    CUmemAllocationProp prop;
    size_t used = strlen(buf->detail);

    if (gpuipc_vmm_props(buf, &prop, NULL) != CUDA_SUCCESS)
        snprintf(buf->detail + used, sizeof(buf->detail) - used, "; compression unknown");
    else
        snprintf(buf->detail + used, sizeof(buf->detail) - used,
                 "; compression %s %s (compressionType %u)", who,
                 prop.allocFlags.compressionType == CU_MEM_ALLOCATION_COMP_GENERIC
                     ? "granted" : "not granted",
                 (unsigned)prop.allocFlags.compressionType);
}

static int comp_alloc(gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    CUmemAllocationProp prop;
    int rc;

    gpuipc_vmm_prop(sc->env->gpu, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    CU_MEM_ALLOCATION_COMP_GENERIC, &prop);
    rc = gpuipc_vmm_create(sc, &prop, size, buf, err);
    if (rc == 0)
        note_compression(buf, "to the producer:");
    return rc;
}

static int comp_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                       unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    int rc = gpuipc_vmm_fd_import(sc, offer, fds, nfds, 0, buf, err);

    if (rc == 0)
        note_compression(buf, "as the importer sees it:");
    return rc;
}

const gpuipc_mech gpuipc_mech_vmm_compressible = {
    .name = NAME,
    .summary = "CUDA VMM memory requested compressible (COMP_GENERIC), shared by FD",
    .needs_cuda = 1,
    .by_default = 1,
    .cross_device = 1,
    .probe = comp_probe,
    .alloc = comp_alloc,
    .export = gpuipc_vmm_fd_export,
    .import = comp_import,
    .release = gpuipc_vmm_release,
};
