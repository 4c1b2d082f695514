/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_pfn.h: the function-pointer type of each driver entry point in
 * GPUIPC_CU_FUNCS (cudrv.h), named as the toolkit's cudaTypedefs.h names it:
 * PFN_<function>_v<ABI version>, the signature of that function at that
 * version (cuMemAlloc_v3020 takes a 64-bit CUdeviceptr; cuMemAlloc_v2000 took
 * a 32-bit one). A new entry in GPUIPC_CU_FUNCS needs its type here.
 *
 * This file only names types (those of cuda_api.h) and defines nothing of
 * its own, so that tests/cuda_check.c can instantiate it over the toolkit's
 * cuda.h and compare each type with cudaTypedefs.h's. */
#ifndef GPUIPC_CUDA_PFN_H
#define GPUIPC_CUDA_PFN_H

#include "gpu/cuda_api.h"

/* Errors, the driver, devices. */
typedef CUresult (CUDAAPI *PFN_cuGetErrorName_v6000)(CUresult error, const char **pStr);
typedef CUresult (CUDAAPI *PFN_cuDriverGetVersion_v2020)(int *driverVersion);
typedef CUresult (CUDAAPI *PFN_cuInit_v2000)(unsigned int Flags);
typedef CUresult (CUDAAPI *PFN_cuDeviceGet_v2000)(CUdevice *device, int ordinal);
typedef CUresult (CUDAAPI *PFN_cuDeviceGetCount_v2000)(int *count);
typedef CUresult (CUDAAPI *PFN_cuDeviceGetName_v2000)(char *name, int len, CUdevice dev);
typedef CUresult (CUDAAPI *PFN_cuDeviceGetUuid_v11040)(CUuuid *uuid, CUdevice dev);
typedef CUresult (CUDAAPI *PFN_cuDeviceGetAttribute_v2000)(int *pi, CUdevice_attribute attrib,
                                                           CUdevice dev);
typedef CUresult (CUDAAPI *PFN_cuDeviceCanAccessPeer_v4000)(int *canAccessPeer, CUdevice dev,
                                                            CUdevice peerDev);
typedef CUresult (CUDAAPI *PFN_cuDeviceGetPCIBusId_v4010)(char *pciBusId, int len, CUdevice dev);
typedef CUresult (CUDAAPI *PFN_cuDeviceGetP2PAttribute_v8000)(int *value,
                                                              CUdevice_P2PAttribute attrib,
                                                              CUdevice srcDevice,
                                                              CUdevice dstDevice);

/* Contexts. */
typedef CUresult (CUDAAPI *PFN_cuDevicePrimaryCtxRetain_v7000)(CUcontext *pctx, CUdevice dev);
typedef CUresult (CUDAAPI *PFN_cuDevicePrimaryCtxRelease_v11000)(CUdevice dev);
typedef CUresult (CUDAAPI *PFN_cuCtxSetCurrent_v4000)(CUcontext ctx);
/* The 2000 ABI: no argument (cuCtxSynchronize_v2 of CUDA 13 takes one). */
typedef CUresult (CUDAAPI *PFN_cuCtxSynchronize_v2000)(void);

/* Memory allocated with cuMemAlloc, and copies. */
typedef CUresult (CUDAAPI *PFN_cuMemGetInfo_v3020)(size_t *free, size_t *total);
typedef CUresult (CUDAAPI *PFN_cuMemAlloc_v3020)(CUdeviceptr *dptr, size_t bytesize);
typedef CUresult (CUDAAPI *PFN_cuMemFree_v3020)(CUdeviceptr dptr);
typedef CUresult (CUDAAPI *PFN_cuMemGetAddressRange_v3020)(CUdeviceptr *pbase, size_t *psize,
                                                           CUdeviceptr dptr);
typedef CUresult (CUDAAPI *PFN_cuMemcpyHtoD_v3020)(CUdeviceptr dstDevice, const void *srcHost,
                                                   size_t ByteCount);
typedef CUresult (CUDAAPI *PFN_cuMemcpyDtoH_v3020)(void *dstHost, CUdeviceptr srcDevice,
                                                   size_t ByteCount);
typedef CUresult (CUDAAPI *PFN_cuMemcpyDtoDAsync_v3020)(CUdeviceptr dstDevice,
                                                        CUdeviceptr srcDevice, size_t ByteCount,
                                                        CUstream hStream);
typedef CUresult (CUDAAPI *PFN_cuMemsetD32_v3020)(CUdeviceptr dstDevice, unsigned int ui,
                                                  size_t N);
typedef CUresult (CUDAAPI *PFN_cuPointerGetAttribute_v4000)(void *data,
                                                            CUpointer_attribute attribute,
                                                            CUdeviceptr ptr);

/* Modules and kernels. */
typedef CUresult (CUDAAPI *PFN_cuModuleLoadData_v2000)(CUmodule *module, const void *image);
typedef CUresult (CUDAAPI *PFN_cuModuleUnload_v2000)(CUmodule hmod);
typedef CUresult (CUDAAPI *PFN_cuModuleGetFunction_v2000)(CUfunction *hfunc, CUmodule hmod,
                                                          const char *name);
typedef CUresult (CUDAAPI *PFN_cuLaunchKernel_v4000)(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra);

/* Streams and events. */
typedef CUresult (CUDAAPI *PFN_cuStreamSynchronize_v2000)(CUstream hStream);
typedef CUresult (CUDAAPI *PFN_cuEventCreate_v2000)(CUevent *phEvent, unsigned int Flags);
typedef CUresult (CUDAAPI *PFN_cuEventRecord_v2000)(CUevent hEvent, CUstream hStream);
typedef CUresult (CUDAAPI *PFN_cuEventSynchronize_v2000)(CUevent hEvent);
typedef CUresult (CUDAAPI *PFN_cuEventElapsedTime_v2000)(float *pMilliseconds, CUevent hStart,
                                                         CUevent hEnd);
typedef CUresult (CUDAAPI *PFN_cuEventDestroy_v4000)(CUevent hEvent);

/* Virtual memory management. */
typedef CUresult (CUDAAPI *PFN_cuMemCreate_v10020)(CUmemGenericAllocationHandle *handle,
                                                   size_t size,
                                                   const CUmemAllocationProp *prop,
                                                   unsigned long long flags);
typedef CUresult (CUDAAPI *PFN_cuMemRelease_v10020)(CUmemGenericAllocationHandle handle);
typedef CUresult (CUDAAPI *PFN_cuMemAddressReserve_v10020)(CUdeviceptr *ptr, size_t size,
                                                           size_t alignment, CUdeviceptr addr,
                                                           unsigned long long flags);
typedef CUresult (CUDAAPI *PFN_cuMemAddressFree_v10020)(CUdeviceptr ptr, size_t size);
typedef CUresult (CUDAAPI *PFN_cuMemMap_v10020)(CUdeviceptr ptr, size_t size, size_t offset,
                                                CUmemGenericAllocationHandle handle,
                                                unsigned long long flags);
typedef CUresult (CUDAAPI *PFN_cuMemUnmap_v10020)(CUdeviceptr ptr, size_t size);
typedef CUresult (CUDAAPI *PFN_cuMemSetAccess_v10020)(CUdeviceptr ptr, size_t size,
                                                      const CUmemAccessDesc *desc, size_t count);
typedef CUresult (CUDAAPI *PFN_cuMemGetAccess_v10020)(unsigned long long *flags,
                                                      const CUmemLocation *location,
                                                      CUdeviceptr ptr);
typedef CUresult (CUDAAPI *PFN_cuMemGetAllocationGranularity_v10020)(
    size_t *granularity, const CUmemAllocationProp *prop,
    CUmemAllocationGranularity_flags option);
typedef CUresult (CUDAAPI *PFN_cuMemExportToShareableHandle_v10020)(
    void *shareableHandle, CUmemGenericAllocationHandle handle,
    CUmemAllocationHandleType handleType, unsigned long long flags);
typedef CUresult (CUDAAPI *PFN_cuMemImportFromShareableHandle_v10020)(
    CUmemGenericAllocationHandle *handle, void *osHandle, CUmemAllocationHandleType shHandleType);
typedef CUresult (CUDAAPI *PFN_cuMemGetAllocationPropertiesFromHandle_v10020)(
    CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle);

/* Legacy IPC. */
typedef CUresult (CUDAAPI *PFN_cuIpcGetMemHandle_v4010)(CUipcMemHandle *pHandle,
                                                        CUdeviceptr dptr);
typedef CUresult (CUDAAPI *PFN_cuIpcOpenMemHandle_v11000)(CUdeviceptr *pdptr,
                                                          CUipcMemHandle handle,
                                                          unsigned int Flags);
typedef CUresult (CUDAAPI *PFN_cuIpcCloseMemHandle_v4010)(CUdeviceptr dptr);
typedef CUresult (CUDAAPI *PFN_cuIpcGetEventHandle_v4010)(CUipcEventHandle *pHandle,
                                                          CUevent event);
typedef CUresult (CUDAAPI *PFN_cuIpcOpenEventHandle_v4010)(CUevent *phEvent,
                                                           CUipcEventHandle handle);
typedef CUresult (CUDAAPI *PFN_cuStreamWaitEvent_v3020)(CUstream hStream, CUevent hEvent,
                                                        unsigned int Flags);

/* Memory pools. */
typedef CUresult (CUDAAPI *PFN_cuMemPoolCreate_v11020)(CUmemoryPool *pool,
                                                       const CUmemPoolProps *poolProps);
typedef CUresult (CUDAAPI *PFN_cuMemPoolDestroy_v11020)(CUmemoryPool pool);
typedef CUresult (CUDAAPI *PFN_cuMemPoolSetAccess_v11020)(CUmemoryPool pool,
                                                          const CUmemAccessDesc *map,
                                                          size_t count);
typedef CUresult (CUDAAPI *PFN_cuMemPoolExportToShareableHandle_v11020)(
    void *handle_out, CUmemoryPool pool, CUmemAllocationHandleType handleType,
    unsigned long long flags);
typedef CUresult (CUDAAPI *PFN_cuMemPoolImportFromShareableHandle_v11020)(
    CUmemoryPool *pool_out, void *handle, CUmemAllocationHandleType handleType,
    unsigned long long flags);
typedef CUresult (CUDAAPI *PFN_cuMemPoolExportPointer_v11020)(
    CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr);
typedef CUresult (CUDAAPI *PFN_cuMemPoolImportPointer_v11020)(CUdeviceptr *ptr_out,
                                                              CUmemoryPool pool,
                                                              CUmemPoolPtrExportData *shareData);
typedef CUresult (CUDAAPI *PFN_cuMemAllocFromPoolAsync_v11020)(CUdeviceptr *dptr,
                                                               size_t bytesize,
                                                               CUmemoryPool pool,
                                                               CUstream hStream);
typedef CUresult (CUDAAPI *PFN_cuMemFreeAsync_v11020)(CUdeviceptr dptr, CUstream hStream);

#endif
