/* kernels.h: the fill and verify kernels, PTX text embedded in the binary and
 * compiled by the driver's JIT, so that building and running need no nvcc. */
#ifndef GPUIPC_KERNELS_H
#define GPUIPC_KERNELS_H

#include <cuda.h>
#include <stdint.h>

#include "err.h"

typedef struct gpuipc_kernels {
    CUmodule module;
    CUfunction fill;
    CUfunction verify;
    unsigned max_blocks; /* enough resident blocks to fill every SM */
} gpuipc_kernels;

/* Returns the PTX source (NUL-terminated, ISA 6.5, target sm_50). */
const char *gpuipc_kernels_ptx(void);

/* JIT-compiles the PTX in the current context and looks up both kernels.
 * sm_count is the device's multiprocessor count. Returns CUDA_SUCCESS or the
 * failing call's CUresult, recorded in err. */
CUresult gpuipc_kernels_load(gpuipc_kernels *k, int sm_count, gpuipc_err *err);

/* Unloads the module. Returns its CUresult. */
CUresult gpuipc_kernels_unload(gpuipc_kernels *k);

/* Launches fill over nwords 64-bit words at dptr (nwords even, dptr 16-byte
 * aligned) on the default stream; word k gets pattern(first + k, seed).
 * Does not wait. Returns the launch's CUresult, recorded in err. */
CUresult gpuipc_kernels_fill(const gpuipc_kernels *k, CUdeviceptr dptr, uint64_t nwords,
                             uint64_t first, uint64_t seed, gpuipc_err *err);

/* Launches verify likewise. It adds the mismatch count to the u64 at result
 * and lowers the u64 at result + 8 to the first bad index, so both must be
 * set to 0 and UINT64_MAX first. Does not wait. */
CUresult gpuipc_kernels_verify(const gpuipc_kernels *k, CUdeviceptr dptr, uint64_t nwords,
                               uint64_t first, uint64_t seed, CUdeviceptr result,
                               gpuipc_err *err);

#endif
