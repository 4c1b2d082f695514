/* SPDX-License-Identifier: Apache-2.0 */
/* gpu_churn.c: another user of the GPU, for the GPU suite: it allocates,
 * touches and frees SIZE bytes on device 0 in a loop for SECONDS, so that
 * the device's free memory keeps moving under the runs being tested. It
 * prints "churning" once it loops, and the count of rounds at the end.
 *   gpu_churn [SECONDS [MIB]]   (default 30 s, 64 MiB) */
#include <stdio.h>
#include <stdlib.h>

#include "core/clock.h"
#include "gpu/cudrv.h"

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 30.0;
    size_t size = (size_t)(argc > 2 ? atoi(argv[2]) : 64) << 20;
    uint64_t end, rounds = 0;
    CUcontext ctx;
    CUdevice dev;
    gpuipc_err err;
    CUresult rc;

    if (gpuipc_cudrv_load(&err) < 0) {
        printf("gpu_churn: %s\n", err.msg);
        return 77;
    }
    if ((rc = gpuipc_cu.cuInit(0)) != CUDA_SUCCESS ||
        (rc = gpuipc_cu.cuDeviceGet(&dev, 0)) != CUDA_SUCCESS ||
        (rc = gpuipc_cu.cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS ||
        (rc = gpuipc_cu.cuCtxSetCurrent(ctx)) != CUDA_SUCCESS) {
        printf("gpu_churn: starting CUDA: %s\n", gpuipc_cudrv_error_name(rc));
        return 1;
    }
    printf("gpu_churn: churning %zu MiB on GPU 0 for %.1f s\n", size >> 20, seconds);
    fflush(stdout);
    end = gpuipc_clock_deadline((uint64_t)(seconds * 1e9));
    while (gpuipc_clock_ms_left(end) > 0) {
        CUdeviceptr p;

        if ((rc = gpuipc_cu.cuMemAlloc(&p, size)) != CUDA_SUCCESS ||
            (rc = gpuipc_cu.cuMemsetD32(p, 0x5a5a5a5a, size / 4)) != CUDA_SUCCESS ||
            (rc = gpuipc_cu.cuCtxSynchronize()) != CUDA_SUCCESS ||
            (rc = gpuipc_cu.cuMemFree(p)) != CUDA_SUCCESS) {
            printf("gpu_churn: round %llu: %s\n", (unsigned long long)rounds,
                   gpuipc_cudrv_error_name(rc));
            return 1;
        }
        rounds++;
    }
    printf("gpu_churn: %llu rounds of alloc, touch, free\n", (unsigned long long)rounds);
    gpuipc_cu.cuDevicePrimaryCtxRelease(dev);
    return 0;
}
