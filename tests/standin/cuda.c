/* SPDX-License-Identifier: Apache-2.0 */
/* cuda.c: a stand-in for the driver's libcuda.so.1, built by the tests as
 * build/tests/standin/libcuda.so.1 and found through LD_LIBRARY_PATH (the
 * program dlopens the bare soname). It shows GPUs and nothing more: cuInit,
 * the device count (GPUIPC_STANDIN_CUDA_GPUS, 1 unless set), devices, their
 * names, bus ids and UUIDs (the last byte the launcher's rank, so that the
 * ranks of one test hold GPUs of their own), and error names. Every other
 * entry point answers CUDA_ERROR_NOT_SUPPORTED: a run that reaches one fails
 * or skips saying so, which the tests that use it never do (tests/ranks.sh:
 * the plan by NVLink domain, which decides before any allocation). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_NOT_SUPPORTED 801

typedef int CUresult;

static int gpus(void)
{
    const char *n = getenv("GPUIPC_STANDIN_CUDA_GPUS");

    return n != NULL ? atoi(n) : 1;
}

static CUresult not_supported(void)
{
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult init(unsigned int flags)
{
    (void)flags;
    return CUDA_SUCCESS;
}

static CUresult device_count(int *n)
{
    *n = gpus();
    return CUDA_SUCCESS;
}

static CUresult device_get(int *dev, int ordinal)
{
    if (ordinal < 0 || ordinal >= gpus())
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

static CUresult device_name(char *name, int len, int dev)
{
    snprintf(name, (size_t)len, "Stand-in GPU %d", dev);
    return CUDA_SUCCESS;
}

static CUresult device_bus(char *bus, int len, int dev)
{
    snprintf(bus, (size_t)len, "0000:%02x:00.0", 0x10 + dev);
    return CUDA_SUCCESS;
}

static CUresult device_uuid(unsigned char uuid[16], int dev)
{
    const char *r = getenv("PMIX_RANK");
    int i;

    for (i = 0; i < 16; i++)
        uuid[i] = (unsigned char)(0x50 + i);
    uuid[14] = (unsigned char)dev;
    uuid[15] = (unsigned char)(r != NULL ? atoi(r) : 0);
    return CUDA_SUCCESS;
}

static CUresult error_name(CUresult rc, const char **name)
{
    switch (rc) {
    case CUDA_SUCCESS:
        *name = "CUDA_SUCCESS";
        return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_DEVICE:
        *name = "CUDA_ERROR_INVALID_DEVICE";
        return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_SUPPORTED:
        *name = "CUDA_ERROR_NOT_SUPPORTED";
        return CUDA_SUCCESS;
    default:
        *name = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuDriverGetVersion(int *version)
{
    *version = 12080;
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                             unsigned long long flags, int *status)
{
    static const struct {
        const char *name;
        void *fn;
    } known[] = {
        {"cuInit", (void *)init},
        {"cuDeviceGetCount", (void *)device_count},
        {"cuDeviceGet", (void *)device_get},
        {"cuDeviceGetName", (void *)device_name},
        {"cuDeviceGetPCIBusId", (void *)device_bus},
        {"cuDeviceGetUuid", (void *)device_uuid},
        {"cuGetErrorName", (void *)error_name},
        {"cuDriverGetVersion", (void *)cuDriverGetVersion},
    };
    size_t i;

    (void)version;
    (void)flags;
    *pfn = (void *)not_supported;
    for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(symbol, known[i].name) == 0)
            *pfn = known[i].fn;
    if (status != NULL)
        *status = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
    return CUDA_SUCCESS;
}
