/* SPDX-License-Identifier: Apache-2.0 */
/* cutrack.c: the driver calls that take or give back memory, wrapped so that
 * the ledger counts every object this process holds. The wrappers replace
 * the table's entries once the driver is loaded, so every caller (each
 * mechanism, the kernels' self-test, the bench) is counted without knowing
 * it. A call is counted only when it succeeds: an object the driver did not
 * create is not held, and one it failed to release still is. */
#include "gpu/cutrack.h"

#include <stdint.h>

#include "core/ledger.h"

/* The driver's own entry points, as they were before the swap. */
static gpuipc_cudrv real;

static CUresult CUDAAPI t_cuMemCreate(CUmemGenericAllocationHandle *h, size_t size,
                                      const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult rc = real.cuMemCreate(h, size, prop, flags);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_add(GPUIPC_LEDGER_HANDLE, (uint64_t)*h, size);
    return rc;
}

static CUresult CUDAAPI t_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h,
                                                         void *os_handle,
                                                         CUmemAllocationHandleType type)
{
    CUresult rc = real.cuMemImportFromShareableHandle(h, os_handle, type);

    /* The importer is not told the allocation's size. */
    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_add(GPUIPC_LEDGER_HANDLE, (uint64_t)*h, 0);
    return rc;
}

static CUresult CUDAAPI t_cuMemRelease(CUmemGenericAllocationHandle h)
{
    CUresult rc = real.cuMemRelease(h);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_remove(GPUIPC_LEDGER_HANDLE, (uint64_t)h);
    return rc;
}

static CUresult CUDAAPI t_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align,
                                              CUdeviceptr addr, unsigned long long flags)
{
    CUresult rc = real.cuMemAddressReserve(ptr, size, align, addr, flags);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_add(GPUIPC_LEDGER_RANGE, (uint64_t)*ptr, size);
    return rc;
}

static CUresult CUDAAPI t_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CUresult rc = real.cuMemAddressFree(ptr, size);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_remove(GPUIPC_LEDGER_RANGE, (uint64_t)ptr);
    return rc;
}

static CUresult CUDAAPI t_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                   CUmemGenericAllocationHandle h, unsigned long long flags)
{
    CUresult rc = real.cuMemMap(ptr, size, offset, h, flags);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_add(GPUIPC_LEDGER_MAPPING, (uint64_t)ptr, size);
    return rc;
}

/* One unmap may cover several mappings: every one inside the range goes. */
static CUresult CUDAAPI t_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult rc = real.cuMemUnmap(ptr, size);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_remove_range(GPUIPC_LEDGER_MAPPING, (uint64_t)ptr, size);
    return rc;
}

static CUresult CUDAAPI t_cuMemAlloc(CUdeviceptr *ptr, size_t size)
{
    CUresult rc = real.cuMemAlloc(ptr, size);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_add(GPUIPC_LEDGER_ALLOC, (uint64_t)*ptr, size);
    return rc;
}

static CUresult CUDAAPI t_cuMemAllocFromPoolAsync(CUdeviceptr *ptr, size_t size, CUmemoryPool pool,
                                                  CUstream stream)
{
    CUresult rc = real.cuMemAllocFromPoolAsync(ptr, size, pool, stream);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_add(GPUIPC_LEDGER_ALLOC, (uint64_t)*ptr, size);
    return rc;
}

static CUresult CUDAAPI t_cuMemPoolImportPointer(CUdeviceptr *ptr, CUmemoryPool pool,
                                                 CUmemPoolPtrExportData *data)
{
    CUresult rc = real.cuMemPoolImportPointer(ptr, pool, data);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_add(GPUIPC_LEDGER_ALLOC, (uint64_t)*ptr, 0);
    return rc;
}

static CUresult CUDAAPI t_cuMemFree(CUdeviceptr ptr)
{
    CUresult rc = real.cuMemFree(ptr);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_remove(GPUIPC_LEDGER_ALLOC, (uint64_t)ptr);
    return rc;
}

/* The free completes in stream order; from here on the process no longer
 * holds the pointer. */
static CUresult CUDAAPI t_cuMemFreeAsync(CUdeviceptr ptr, CUstream stream)
{
    CUresult rc = real.cuMemFreeAsync(ptr, stream);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_remove(GPUIPC_LEDGER_ALLOC, (uint64_t)ptr);
    return rc;
}

static CUresult CUDAAPI t_cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    CUresult rc = real.cuMemPoolCreate(pool, props);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_add(GPUIPC_LEDGER_POOL, (uint64_t)(uintptr_t)*pool, 0);
    return rc;
}

static CUresult CUDAAPI t_cuMemPoolImportFromShareableHandle(CUmemoryPool *pool, void *handle,
                                                             CUmemAllocationHandleType type,
                                                             unsigned long long flags)
{
    CUresult rc = real.cuMemPoolImportFromShareableHandle(pool, handle, type, flags);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_add(GPUIPC_LEDGER_POOL, (uint64_t)(uintptr_t)*pool, 0);
    return rc;
}

static CUresult CUDAAPI t_cuMemPoolDestroy(CUmemoryPool pool)
{
    CUresult rc = real.cuMemPoolDestroy(pool);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_remove(GPUIPC_LEDGER_POOL, (uint64_t)(uintptr_t)pool);
    return rc;
}

static CUresult CUDAAPI t_cuIpcOpenMemHandle(CUdeviceptr *ptr, CUipcMemHandle h, unsigned flags)
{
    CUresult rc = real.cuIpcOpenMemHandle(ptr, h, flags);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_add(GPUIPC_LEDGER_IPC, (uint64_t)*ptr, 0);
    return rc;
}

static CUresult CUDAAPI t_cuIpcCloseMemHandle(CUdeviceptr ptr)
{
    CUresult rc = real.cuIpcCloseMemHandle(ptr);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_remove(GPUIPC_LEDGER_IPC, (uint64_t)ptr);
    return rc;
}

static CUresult CUDAAPI t_cuEventCreate(CUevent *ev, unsigned flags)
{
    CUresult rc = real.cuEventCreate(ev, flags);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_add(GPUIPC_LEDGER_EVENT, (uint64_t)(uintptr_t)*ev, 0);
    return rc;
}

/* An opened IPC event is this process's to destroy, like one it created. */
static CUresult CUDAAPI t_cuIpcOpenEventHandle(CUevent *ev, CUipcEventHandle h)
{
    CUresult rc = real.cuIpcOpenEventHandle(ev, h);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_add(GPUIPC_LEDGER_EVENT, (uint64_t)(uintptr_t)*ev, 0);
    return rc;
}

static CUresult CUDAAPI t_cuEventDestroy(CUevent ev)
{
    CUresult rc = real.cuEventDestroy(ev);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_remove(GPUIPC_LEDGER_EVENT, (uint64_t)(uintptr_t)ev);
    return rc;
}

static CUresult CUDAAPI t_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    CUresult rc = real.cuDevicePrimaryCtxRetain(ctx, dev);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_add(GPUIPC_LEDGER_CONTEXT, (uint64_t)dev, 0);
    return rc;
}

static CUresult CUDAAPI t_cuDevicePrimaryCtxRelease(CUdevice dev)
{
    CUresult rc = real.cuDevicePrimaryCtxRelease(dev);

    if (rc == CUDA_SUCCESS)
        gpuipc_ledger_remove(GPUIPC_LEDGER_CONTEXT, (uint64_t)dev);
    return rc;
}

void gpuipc_cutrack_install(gpuipc_cudrv *cu)
{
    real = *cu;
#define SWAP(fn) cu->fn = t_##fn
    SWAP(cuMemCreate);
    SWAP(cuMemImportFromShareableHandle);
    SWAP(cuMemRelease);
    SWAP(cuMemAddressReserve);
    SWAP(cuMemAddressFree);
    SWAP(cuMemMap);
    SWAP(cuMemUnmap);
    SWAP(cuMemAlloc);
    SWAP(cuMemAllocFromPoolAsync);
    SWAP(cuMemPoolImportPointer);
    SWAP(cuMemFree);
    SWAP(cuMemFreeAsync);
    SWAP(cuMemPoolCreate);
    SWAP(cuMemPoolImportFromShareableHandle);
    SWAP(cuMemPoolDestroy);
    SWAP(cuIpcOpenMemHandle);
    SWAP(cuIpcCloseMemHandle);
    SWAP(cuEventCreate);
    SWAP(cuIpcOpenEventHandle);
    SWAP(cuEventDestroy);
    SWAP(cuDevicePrimaryCtxRetain);
    SWAP(cuDevicePrimaryCtxRelease);
#undef SWAP
}
