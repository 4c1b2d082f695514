/* SPDX-License-Identifier: Apache-2.0 */
/* cudrv.h: the CUDA driver, loaded at run time with dlopen() and resolved
 * with cuGetProcAddress() into one table, so that nothing links libcuda and
 * the program starts on machines without a driver. */
#ifndef GPUIPC_CUDRV_H
#define GPUIPC_CUDRV_H

#include "core/err.h"
#include "core/watch.h"
#include "gpu/cuda_api.h"
#include "gpu/cuda_pfn.h"

/* Every driver entry point the project calls, with the CUDA version of the
 * ABI it is called with. cuGetProcAddress() is asked for exactly that
 * version, and the member has the type cuda_pfn.h declares for it (the one
 * cudaTypedefs.h gives it; make cuda-check compares), so the pointer always
 * matches the call. Asking for the toolkit's own version instead is a
 * trap: for cuCtxSynchronize, CUDA 13.0 returns cuCtxSynchronize_v2(CUcontext)
 * while cuda.h still declares cuCtxSynchronize(void), and the call then fails
 * with CUDA_ERROR_CONTEXT_IS_DESTROYED (seen on an H100, driver 580). */
#define GPUIPC_CU_FUNCS(X)                                                                \
    X(cuGetErrorName, 6000) X(cuDriverGetVersion, 2020) X(cuInit, 2000)                   \
    X(cuDeviceGet, 2000) X(cuDeviceGetCount, 2000) X(cuDeviceGetName, 2000)               \
    X(cuDeviceGetUuid, 11040) X(cuDeviceGetAttribute, 2000)                               \
    X(cuDevicePrimaryCtxRetain, 7000) X(cuDevicePrimaryCtxRelease, 11000)                 \
    X(cuCtxSetCurrent, 4000) X(cuCtxSynchronize, 2000) X(cuMemGetInfo, 3020)              \
    X(cuMemAlloc, 3020) X(cuMemFree, 3020) X(cuMemcpyHtoD, 3020) X(cuMemcpyDtoH, 3020)    \
    X(cuModuleLoadData, 2000) X(cuModuleUnload, 2000) X(cuModuleGetFunction, 2000)        \
    X(cuLaunchKernel, 4000) X(cuMemCreate, 10020) X(cuMemRelease, 10020)                  \
    X(cuMemAddressReserve, 10020) X(cuMemAddressFree, 10020) X(cuMemMap, 10020)           \
    X(cuMemUnmap, 10020) X(cuMemSetAccess, 10020) X(cuMemGetAllocationGranularity, 10020) \
    X(cuMemExportToShareableHandle, 10020) X(cuMemImportFromShareableHandle, 10020)       \
    X(cuMemGetAllocationPropertiesFromHandle, 10020) X(cuMemGetAddressRange, 3020)          \
    X(cuStreamSynchronize, 2000) X(cuIpcGetMemHandle, 4010) X(cuIpcOpenMemHandle, 11000)  \
    X(cuIpcCloseMemHandle, 4010) X(cuMemPoolCreate, 11020) X(cuMemPoolDestroy, 11020)     \
    X(cuMemPoolSetAccess, 11020) X(cuMemPoolExportToShareableHandle, 11020)               \
    X(cuMemPoolImportFromShareableHandle, 11020) X(cuMemPoolExportPointer, 11020)         \
    X(cuMemPoolImportPointer, 11020) X(cuMemAllocFromPoolAsync, 11020)                    \
    X(cuMemFreeAsync, 11020) X(cuMemGetAccess, 10020) X(cuMemsetD32, 3020)                \
    X(cuDeviceCanAccessPeer, 4000) X(cuEventCreate, 2000) X(cuEventRecord, 2000)             \
    X(cuEventSynchronize, 2000) X(cuEventElapsedTime, 2000) X(cuEventDestroy, 4000)        \
    X(cuMemcpyDtoDAsync, 3020) X(cuIpcGetEventHandle, 4010) X(cuIpcOpenEventHandle, 4010)       \
    X(cuStreamWaitEvent, 3020) X(cuDeviceGetP2PAttribute, 8000)                           \
    X(cuDeviceGetPCIBusId, 4010) X(cuPointerGetAttribute, 4000)

/* The newest ABI version in the table: the driver must support at least it. */
#define GPUIPC_CU_MIN_DRIVER 11040

/* The member is named after the function, so that gpuipc_cu.cuMemGetInfo(...)
 * reads as the call. (Where the toolkit's cuda.h is included first, as in
 * the cross-check, its macros rename members the way they rename the
 * functions, cuMemGetInfo to cuMemGetInfo_v2, consistently everywhere.) */
typedef struct gpuipc_cudrv {
#define GPUIPC_CU_MEMBER(fn, version) PFN_##fn##_v##version fn;
    GPUIPC_CU_FUNCS(GPUIPC_CU_MEMBER)
#undef GPUIPC_CU_MEMBER
    int driver_version; /* from cuDriverGetVersion, e.g. 13000 */
} gpuipc_cudrv;

/* Writes the driver's version as users know it, "580.159.04 (CUDA 13.0)",
 * or "CUDA 13.0" where /proc/driver/nvidia/version cannot be read, into buf
 * and returns buf. Valid after gpuipc_cudrv_load() returned 0. */
char *gpuipc_cudrv_version(char *buf, size_t len);

/* The table; valid after gpuipc_cudrv_load() returned 0. */
extern gpuipc_cudrv gpuipc_cu;

/* Loads libcuda.so.1 and resolves every entry point; later calls return the
 * first call's result. It calls no CUDA function that needs cuInit. Returns
 * 0; -ENOENT if there is no driver library (nothing can run here); -ENOTSUP
 * if the driver is older than GPUIPC_CU_MIN_DRIVER; -ENOSYS if an entry
 * point is missing. err says which, with the fix. The library stays
 * loaded until the process exits: unloading the driver is never safe. */
int gpuipc_cudrv_load(gpuipc_err *err);

/* Returns the name of rc, such as "CUDA_ERROR_INVALID_DEVICE". */
const char *gpuipc_cudrv_error_name(CUresult rc);

/* Writes "<call>: <CUDA_ERROR_NAME> (<file>:<line>)" and, for errors with a
 * known cause, "; <cause and fix>" into err. Returns rc. */
CUresult gpuipc_cudrv_fail(gpuipc_err *err, const char *call, CUresult rc, const char *file,
                           int line);

/* Maps rc to the negative errno that library functions return for it: 0
 * for CUDA_SUCCESS, -ENOMEM, -ENOTSUP, -EACCES, -ENODEV, or -EIO. */
int gpuipc_cudrv_errno(CUresult rc);

/* For a sequence of calls that must all be tried (a teardown): if rc failed
 * and *first is still CUDA_SUCCESS, records the call in err as
 * gpuipc_cudrv_fail does and stores rc in *first. Returns rc. */
CUresult gpuipc_cudrv_note(CUresult *first, gpuipc_err *err, const char *call, CUresult rc,
                           const char *file, int line);

/* The end of a driver call made by GPUIPC_CU_CALL: nothing in flight. */
static inline CUresult gpuipc_cudrv_done(CUresult rc)
{
    gpuipc_watch_call(NULL);
    return rc;
}

/* Calls gpuipc_cu.fn(...) with its name on the watchdog's status page while
 * it runs, so that a driver call that never returns is named at the run's
 * deadline (watch.h). Every driver call goes through it. Evaluates to the
 * call's CUresult. */
#define GPUIPC_CU_CALL(fn, ...) (gpuipc_watch_call(#fn), gpuipc_cudrv_done(gpuipc_cu.fn(__VA_ARGS__)))

/* Calls gpuipc_cu.fn(...) and notes its failure in first and err, if it is
 * the first one. Evaluates to the call's CUresult. */
#define GPUIPC_CU_NOTE(first, err, fn, ...)                                               \
    gpuipc_cudrv_note(&(first), (err), #fn, GPUIPC_CU_CALL(fn, __VA_ARGS__), __FILE__,     \
                      __LINE__)

/* Calls gpuipc_cu.fn(...) into the CUresult variable rc; on failure records
 * the call in err (as gpuipc_cudrv_fail does) and jumps to label. */
#define GPUIPC_CU_GOTO(rc, err, label, fn, ...)                                           \
    do {                                                                                  \
        (rc) = GPUIPC_CU_CALL(fn, __VA_ARGS__);                                           \
        if ((rc) != CUDA_SUCCESS) {                                                       \
            gpuipc_cudrv_fail((err), #fn, (rc), __FILE__, __LINE__);                      \
            goto label;                                                                   \
        }                                                                                 \
    } while (0)

#endif
