/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_offset.c: the consumer maps only part of an imported VMM
 * allocation, starting one granule in, with a non-zero cuMemMap offset
 * (cuda.h allows any granularity-aligned offset). A sub-allocator that hands
 * out pieces of one big exported allocation relies on it.
 *
 *   P1 probe: as vmm, then a trial in this process: export a two-granule
 *      allocation, import the FD, and map its second granule with offset =
 *      one granule. A driver that refuses (CUDA_ERROR_NOT_SUPPORTED: the
 *      H100's 580 driver does) lacks the capability: a skip that names the
 *      driver version, not a failure.
 *   P2 alloc: one granule more than --size; the producer's view is the part
 *      after the first granule, pattern word (granule / 8) first
 *   P3 export: 1 FD; the blob carries the offset (u64, little-endian)
 *   C1 import: cuMemImportFromShareableHandle, cuMemMap(offset), access
 * Both sides see the pattern indexed from the allocation's start, so a
 * mapping at the wrong offset shows up as bad words. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "session/mech.h"
#include "core/step.h"
#include "core/units.h"
#include "mech/cuda/vmm.h"

#define BLOB_LEN 8

/* Tries cuMemMap with offset gran into handle, imported or not; cleans up.
 * Returns the CUresult of cuMemMap, or of the step before it that failed
 * (err names it). */
static CUresult trial_map(CUmemGenericAllocationHandle handle, uint64_t gran, gpuipc_err *err)
{
    CUdeviceptr ptr = 0;
    CUresult rc;

    GPUIPC_CU_GOTO(rc, err, out, cuMemAddressReserve, &ptr, gran, gran, 0, 0);
    GPUIPC_CU_GOTO(rc, err, out_free, cuMemMap, ptr, gran, gran, handle, 0);
    GPUIPC_CU_CALL(cuMemUnmap, ptr, gran);
out_free:
    GPUIPC_CU_CALL(cuMemAddressFree, ptr, gran);
out:
    return rc;
}

/* The producer's trial (see the top of the file). Returns 0 if the driver
 * maps at an offset into an imported handle, -ENOTSUP with the reason if it
 * says it cannot, or another negative errno if the trial itself failed. */
static int trial(gpuipc_scenario *sc, gpuipc_err *why)
{
    CUmemGenericAllocationHandle own = 0, imported = 0;
    CUmemAllocationProp prop;
    CUresult rc, own_rc = CUDA_SUCCESS;
    char g[32], version[64];
    uint64_t gran;
    int fd = -1, ret = -EIO;

    gpuipc_vmm_prop(sc->env->gpu, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    CU_MEM_ALLOCATION_COMP_NONE, &prop);
    if ((gran = gpuipc_vmm_granularity(&prop, why)) == 0)
        return -EIO;
    GPUIPC_CU_GOTO(rc, why, out, cuMemCreate, &own, 2 * gran, &prop, 0);
    if ((fd = gpuipc_vmm_export_handle(sc, own, why)) < 0) {
        ret = fd;
        goto out_own;
    }
    GPUIPC_CU_GOTO(rc, why, out_fd, cuMemImportFromShareableHandle, &imported,
                   (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    rc = trial_map(imported, gran, why);
    if (rc == CUDA_ERROR_NOT_SUPPORTED) {
        /* Is it imports only, or offsets at all? Say which. */
        own_rc = trial_map(own, gran, NULL);
        ret = gpuipc_err_wrap(why, why, -ENOTSUP, "unsupported by driver %s: cuMemMap "
                             "with offset %s into an imported handle returns "
                             "CUDA_ERROR_NOT_SUPPORTED (trial in the producer; into the "
                             "creator's own handle it %s%s); cuda.h documents aligned offsets, "
                             "so a newer driver may allow it; map whole allocations instead",
                             gpuipc_cudrv_version(version, sizeof(version)),
                             gpuipc_units_format_size(gran, g, sizeof(g)),
                             own_rc == CUDA_SUCCESS ? "succeeds" : "returns ",
                             own_rc == CUDA_SUCCESS ? "" : gpuipc_cudrv_error_name(own_rc));
    } else if (rc == CUDA_SUCCESS) {
        ret = 0;
    } else {
        gpuipc_err_prefix(why, "offset trial");
    }
    GPUIPC_CU_CALL(cuMemRelease, imported);
out_fd:
    close(fd);
out_own:
    GPUIPC_CU_CALL(cuMemRelease, own);
out:
    /* A step of the trial that failed is a failure, never a skip: only the
     * refusal above may answer -ENOTSUP. */
    if (ret == -EIO && rc != CUDA_SUCCESS && gpuipc_cudrv_errno(rc) != -ENOTSUP)
        ret = gpuipc_cudrv_errno(rc);
    return ret;
}

static int offset_probe(gpuipc_scenario *sc, gpuipc_err *why)
{
    int rc = gpuipc_vmm_fd_probe(sc, why);

    if (rc < 0 || sc->env->role != GPUIPC_ROLE_PRODUCER)
        return rc;
    return trial(sc, why);
}

static int offset_alloc(gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    CUmemAllocationProp prop;
    uint64_t gran;
    gpuipc_vmm *v;
    char g[32];
    int rc;

    gpuipc_vmm_prop(sc->env->gpu, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    CU_MEM_ALLOCATION_COMP_NONE, &prop);
    if ((gran = gpuipc_vmm_granularity(&prop, err)) == 0)
        return -EIO;
    size = (size + gran - 1) / gran * gran;
    if ((rc = gpuipc_vmm_create(sc, &prop, size + gran, buf, err)) < 0)
        return rc;
    /* Both sides work on the part after the first granule. */
    v = buf->priv;
    gpuipc_gpu_view(sc->env->gpu, v->ptr + gran, size, gran / 8, &buf->view);
    snprintf(buf->detail + strlen(buf->detail), sizeof(buf->detail) - strlen(buf->detail),
             "; shared from offset %s", gpuipc_units_format_size(gran, g, sizeof(g)));
    return 0;
}

static int offset_export(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                         unsigned *nfds, gpuipc_err *err)
{
    int rc = gpuipc_vmm_fd_export(sc, buf, offer, fds, nfds, err);
    uint64_t off = buf->granularity;
    unsigned i;

    if (rc < 0)
        return rc;
    offer->blob_len = BLOB_LEN;
    for (i = 0; i < BLOB_LEN; i++)
        offer->blob[i] = (uint8_t)(off >> (8 * i));
    return 0;
}

static int offset_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                         unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    uint64_t off = 0;
    unsigned i;

    memset(buf, 0, sizeof(*buf));
    if (gpuipc_mech_offer_shape("vmm-offset", offer, nfds, 1, BLOB_LEN, err) < 0)
        return -EPROTO;
    for (i = 0; i < BLOB_LEN; i++)
        off |= (uint64_t)offer->blob[i] << (8 * i);
    if (off == 0)
        return gpuipc_err_set(err, -EPROTO, "vmm-offset offer names offset 0");
    return gpuipc_vmm_import_at(sc, (void *)(uintptr_t)fds[0],
                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0, off, offer, buf,
                                err);
}

const gpuipc_mech gpuipc_mech_vmm_offset = {
    .name = "vmm-offset",
    .summary = "the consumer maps part of an imported VMM allocation, with a non-zero "
               "cuMemMap offset",
    .needs_cuda = 1,
    .by_default = 1,
    .cross_device = 1,
    .probe = offset_probe,
    .alloc = offset_alloc,
    .export = offset_export,
    .import = offset_import,
    .release = gpuipc_vmm_release,
};
