/* cudrv.h: the CUDA driver, loaded at run time with dlopen() and resolved
 * with cuGetProcAddress() into one table, so that nothing links libcuda and
 * the program starts on machines without a driver. */
#ifndef GPUIPC_CUDRV_H
#define GPUIPC_CUDRV_H

#include <cuda.h>

#include "err.h"

/* Every driver entry point the project calls. The table member takes the
 * versioned name that cuda.h maps each one to (cuMemGetInfo_v2, ...), and
 * cuGetProcAddress is asked for the base name at CUDA_VERSION, so the ABI is
 * the one these headers describe. */
#define GPUIPC_CU_FUNCS(X)                                                                \
    X(cuGetErrorName) X(cuDriverGetVersion) X(cuInit) X(cuDeviceGet)                      \
    X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceGetUuid) X(cuDeviceGetAttribute)     \
    X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)          \
    X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree)     \
    X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuModuleLoadData) X(cuModuleUnload)                 \
    X(cuModuleGetFunction) X(cuLaunchKernel) X(cuMemCreate) X(cuMemRelease)               \
    X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemMap) X(cuMemUnmap)                  \
    X(cuMemSetAccess) X(cuMemGetAllocationGranularity) X(cuMemExportToShareableHandle)    \
    X(cuMemImportFromShareableHandle) X(cuMemGetAllocationPropertiesFromHandle)           \
    X(cuMemGetAddressRange)

typedef struct gpuipc_cudrv {
#define GPUIPC_CU_MEMBER(fn) __typeof__(&fn) fn;
    GPUIPC_CU_FUNCS(GPUIPC_CU_MEMBER)
#undef GPUIPC_CU_MEMBER
    int driver_version; /* from cuDriverGetVersion, e.g. 13000 */
} gpuipc_cudrv;

/* The table; valid after gpuipc_cudrv_load() returned 0. */
extern gpuipc_cudrv gpuipc_cu;

/* Loads libcuda.so.1 and resolves every entry point; later calls return the
 * first call's result. It calls no CUDA function that needs cuInit. Returns
 * 0; -ENOENT if there is no driver library (nothing can run here); -ENOTSUP
 * if the driver is older than the headers this was built with; -ENOSYS if an
 * entry point is missing. err says which, with the fix. The library stays
 * loaded until the process exits: unloading the driver is never safe. */
int gpuipc_cudrv_load(gpuipc_err *err);

/* Returns the name of rc, such as "CUDA_ERROR_INVALID_DEVICE". */
const char *gpuipc_cudrv_error_name(CUresult rc);

/* Writes "<call>: <CUDA_ERROR_NAME> (<file>:<line>)" and, for errors with a
 * known cause, "; <cause and fix>" into err. Returns rc. */
CUresult gpuipc_cudrv_fail(gpuipc_err *err, const char *call, CUresult rc, const char *file,
                           int line);

/* Maps rc to the negative errno that library functions return for it:
 * -ENOMEM, -ENOTSUP, -EACCES, -ENODEV, or -EIO. */
int gpuipc_cudrv_errno(CUresult rc);

/* Calls gpuipc_cu.fn(...) into the CUresult variable rc; on failure records
 * the call in err (as gpuipc_cudrv_fail does) and jumps to label. */
#define GPUIPC_CU_GOTO(rc, err, label, fn, ...)                                           \
    do {                                                                                  \
        (rc) = gpuipc_cu.fn(__VA_ARGS__);                                                 \
        if ((rc) != CUDA_SUCCESS) {                                                       \
            gpuipc_cudrv_fail((err), #fn, (rc), __FILE__, __LINE__);                      \
            goto label;                                                                   \
        }                                                                                 \
    } while (0)

#endif
