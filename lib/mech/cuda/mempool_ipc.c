/* SPDX-License-Identifier: Apache-2.0 */
/* mempool_ipc.c: memory-pool IPC, as cudaMallocAsync-based programs
 * (PyTorch's CUDA caching allocator backends, cuda.core) share memory: a pool
 * created shareable as a POSIX FD, the pool's FD sent with SCM_RIGHTS, and
 * the allocation's 64-byte export data in the message.
 *
 *   P probe: MEMORY_POOLS_SUPPORTED, MEMPOOL_SUPPORTED_HANDLE_TYPES has POSIX_FD
 *   P alloc: cuMemPoolCreate(POSIX_FD), cuMemAllocFromPoolAsync, then a
 *            stream synchronize: the importer must not touch the pointer
 *            before the allocation has completed in the exporter
 *   P export: cuMemPoolExportToShareableHandle -> 1 FD; cuMemPoolExportPointer
 *   C import: cuMemPoolImportFromShareableHandle, cuMemPoolSetAccess (this
 *            device, read-write), cuMemPoolImportPointer
 *   C release: cuMemFree of the imported pointer, cuMemPoolDestroy: before
 *            the producer frees, as the driver requires
 *   P release: cuMemFreeAsync, stream synchronize, cuMemPoolDestroy */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/cudrv.h"
#include "session/scenario.h"
#include "gpu/gpu.h"
#include "session/mech.h"
#include "core/step.h"

#define NAME "mempool-ipc"
#define ROUND (2ull << 20) /* pools hand out 2 MiB pages on current GPUs */

typedef struct pool_priv {
    CUmemoryPool pool;
    CUdeviceptr ptr;
    uint64_t size;
    int imported;
} pool_priv;

static int pool_probe(gpuipc_scenario *sc, gpuipc_err *why)
{
    int pools = 0, types = 0, rc;

    if (sc->env->role == GPUIPC_ROLE_CONSUMER && (rc = gpuipc_gpu_attach(sc, why)) < 0)
        return rc;
    if (sc->env->gpu == NULL)
        return gpuipc_err_set(why, -ENODEV, "no GPU is open");
    if (gpuipc_gpu_attr(sc->env->gpu, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, &pools, why) !=
            CUDA_SUCCESS ||
        gpuipc_gpu_attr(sc->env->gpu, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, &types,
                        why) != CUDA_SUCCESS)
        return -EIO;
    if (!pools)
        return gpuipc_err_set(why, -ENOTSUP, "CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0 on "
                              "GPU %d: no memory pools (a CUDA 11.2+ driver is needed)",
                              gpuipc_gpu_ordinal(sc->env->gpu));
    if (!(types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        return gpuipc_err_set(why, -ENOTSUP, "CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES "
                              "is 0x%x on GPU %d: pools cannot be shared as POSIX FDs here",
                              (unsigned)types, gpuipc_gpu_ordinal(sc->env->gpu));
    return 0;
}

static void access_desc(const gpuipc_scenario *sc, CUmemAccessDesc *d)
{
    memset(d, 0, sizeof(*d));
    d->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d->location.id = gpuipc_gpu_ordinal(sc->env->gpu);
    d->flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
}

/* A pool set up as far as a failure rc: destroyed if it was made (with the
 * hint for a driver out of memory), and freed. Returns the errno for rc. */
static int pool_undo(gpuipc_scenario *sc, pool_priv *priv, CUresult rc, gpuipc_err *err)
{
    if (priv->pool != NULL) {
        gpuipc_gpu_note_oom(sc->env->gpu, rc, priv->size, err);
        GPUIPC_CU_CALL(cuMemPoolDestroy, priv->pool);
    }
    free(priv);
    return gpuipc_cudrv_errno(rc);
}

static int pool_alloc(gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    pool_priv *priv = calloc(1, sizeof(*priv));
    CUmemPoolProps props;
    CUresult rc;

    memset(buf, 0, sizeof(*buf));
    if (priv == NULL)
        return gpuipc_err_set(err, -ENOMEM, NAME ": out of memory");
    priv->size = (size + ROUND - 1) / ROUND * ROUND;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = gpuipc_gpu_ordinal(sc->env->gpu);
    GPUIPC_CU_GOTO(rc, err, out, cuMemPoolCreate, &priv->pool, &props);
    GPUIPC_CU_GOTO(rc, err, out, cuMemAllocFromPoolAsync, &priv->ptr, priv->size, priv->pool,
                   NULL);
    /* The consumer may use the pointer only once the allocation is complete. */
    GPUIPC_CU_GOTO(rc, err, out_free, cuStreamSynchronize, NULL);
    gpuipc_gpu_buf(sc->env->gpu, priv->ptr, priv->size, ROUND, priv, "from a POSIX-FD pool", buf);
    return 0;

out_free:
    GPUIPC_CU_CALL(cuMemFreeAsync, priv->ptr, NULL);
    GPUIPC_CU_CALL(cuStreamSynchronize, NULL);
out:
    return pool_undo(sc, priv, rc, err);
}

static int pool_export(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                       unsigned *nfds, gpuipc_err *err)
{
    pool_priv *priv = buf->priv;
    CUmemPoolPtrExportData data;
    int fd = -1;
    CUresult rc;

    GPUIPC_CU_GOTO(rc, err, out, cuMemPoolExportToShareableHandle, &fd, priv->pool,
                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
        int e = errno;

        close(fd);
        return gpuipc_err_set(err, -e, "fcntl FD_CLOEXEC on the pool's FD: %s", strerror(e));
    }
    GPUIPC_CU_GOTO(rc, err, out_close, cuMemPoolExportPointer, &data, priv->ptr);
    fds[0] = fd;
    *nfds = 1;
    offer->size = buf->size;
    offer->granularity = buf->granularity;
    memcpy(offer->uuid, gpuipc_gpu_uuid(sc->env->gpu), GPUIPC_UUID_LEN);
    memcpy(offer->blob, data.reserved, sizeof(data.reserved));
    offer->blob_len = sizeof(data.reserved);
    return 0;

out_close:
    close(fd);
out:
    return gpuipc_cudrv_errno(rc);
}

static int pool_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                       unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    CUmemPoolPtrExportData data;
    CUmemAccessDesc access;
    pool_priv *priv;
    CUresult rc;
    int ret;

    memset(buf, 0, sizeof(*buf));
    if (gpuipc_mech_offer_shape(NAME, offer, nfds, 1, sizeof(data.reserved), err) < 0)
        return -EPROTO;
    if (gpuipc_gpu_check_offer(sc, offer->uuid, err) < 0)
        return -EPROTO;
    priv = calloc(1, sizeof(*priv));
    if (priv == NULL)
        return gpuipc_err_set(err, -ENOMEM, NAME ": out of memory");
    memcpy(data.reserved, offer->blob, sizeof(data.reserved));
    rc = GPUIPC_CU_CALL(cuMemPoolImportFromShareableHandle, &priv->pool,
                        (void *)(uintptr_t)fds[0], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (rc != CUDA_SUCCESS) {
        gpuipc_cudrv_fail(err, "cuMemPoolImportFromShareableHandle", rc, __FILE__, __LINE__);
        gpuipc_mech_name_fd(err, fds[0]);
        goto out;
    }
    access_desc(sc, &access);
    GPUIPC_CU_GOTO(rc, err, out, cuMemPoolSetAccess, priv->pool, &access, 1);
    GPUIPC_CU_GOTO(rc, err, out, cuMemPoolImportPointer, &priv->ptr, priv->pool, &data);
    priv->imported = 1;
    /* The driver need not answer for an imported pool pointer: not strict. */
    if ((ret = gpuipc_gpu_check_opened(priv->ptr, offer->size, "cuMemPoolImportPointer", 0,
                                       err)) < 0) {
        GPUIPC_CU_CALL(cuMemFree, priv->ptr);
        GPUIPC_CU_CALL(cuMemPoolDestroy, priv->pool);
        free(priv);
        return ret;
    }
    priv->size = offer->size;
    gpuipc_gpu_buf(sc->env->gpu, priv->ptr, priv->size, ROUND, priv, "from the imported pool", buf);
    return 0;

out:
    return pool_undo(sc, priv, rc, err);
}

static int pool_release(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err)
{
    pool_priv *priv = buf->priv;
    CUresult first = CUDA_SUCCESS;

    (void)sc;
    if (priv == NULL)
        return 0;
    GPUIPC_CU_NOTE(first, err, cuCtxSynchronize);
    /* An imported pointer is freed with cuMemFree; the exporter's own with
     * cuMemFreeAsync, which must complete before the pool goes. */
    if (priv->imported)
        GPUIPC_CU_NOTE(first, err, cuMemFree, priv->ptr);
    else if (GPUIPC_CU_NOTE(first, err, cuMemFreeAsync, priv->ptr, NULL) == CUDA_SUCCESS)
        GPUIPC_CU_NOTE(first, err, cuStreamSynchronize, NULL);
    GPUIPC_CU_NOTE(first, err, cuMemPoolDestroy, priv->pool);
    free(priv);
    memset(buf, 0, sizeof(*buf));
    return gpuipc_cudrv_errno(first);
}

const gpuipc_mech gpuipc_mech_mempool_ipc = {
    .name = NAME,
    .summary = "memory pool (POSIX FD) over SCM_RIGHTS, pointer export data in-band",
    .needs_cuda = 1,
    .by_default = 1,
    .cross_device = 1,
    .probe = pool_probe,
    .alloc = pool_alloc,
    .export = pool_export,
    .import = pool_import,
    .release = pool_release,
};
