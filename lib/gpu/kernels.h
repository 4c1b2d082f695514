/* SPDX-License-Identifier: Apache-2.0 */
/* kernels.h: the fill and verify kernels, PTX text embedded in the binary and
 * compiled by the driver's JIT, so that building and running need no nvcc. */
#ifndef GPUIPC_KERNELS_H
#define GPUIPC_KERNELS_H

#include <stdint.h>

#include "core/err.h"
#include "gpu/cuda_api.h"

typedef struct gpuipc_kernels {
    CUmodule module;
    CUfunction fill;
    CUfunction verify;
    unsigned max_blocks; /* enough resident blocks to fill every SM */
    unsigned threads;    /* per block */
} gpuipc_kernels;

/* Returns the PTX source (NUL-terminated, ISA 6.5, target sm_50). */
const char *gpuipc_kernels_ptx(void);

/* JIT-compiles the PTX in the current context and looks up both kernels.
 * sm_count is the device's multiprocessor count. Returns CUDA_SUCCESS or the
 * failing call's CUresult, recorded in err. */
CUresult gpuipc_kernels_load(gpuipc_kernels *k, int sm_count, gpuipc_err *err);

/* Unloads the module. Returns its CUresult. */
CUresult gpuipc_kernels_unload(gpuipc_kernels *k);

/* The result words that fill and verify add to: zero them (and set
 * GPUIPC_KERNELS_FIRST_BAD to UINT64_MAX) before a launch. */
enum {
    GPUIPC_KERNELS_MISMATCHES = 0, /* verify: words that differ from the pattern */
    GPUIPC_KERNELS_FIRST_BAD = 1,  /* verify: lowest bad pattern index (atomic min) */
    GPUIPC_KERNELS_WORDS = 2,      /* both: words written or read */
    GPUIPC_KERNELS_DIGEST = 3,     /* both: digest of what was written or read */
    GPUIPC_KERNELS_RESULT_WORDS = 4
};

/* Launches fill over nwords 64-bit words at dptr (nwords even, dptr 16-byte
 * aligned) on the default stream; word k gets pattern(first + k, seed). It
 * adds the words it wrote and their digest to result's words (see above).
 * blocks is the grid (0: enough to fill the device; fewer only in tests, to
 * make each thread go round its loop many times). Does not wait. Returns the
 * launch's CUresult, recorded in err. */
CUresult gpuipc_kernels_fill(const gpuipc_kernels *k, CUdeviceptr dptr, uint64_t nwords,
                             uint64_t first, uint64_t seed, CUdeviceptr result, unsigned blocks,
                             gpuipc_err *err);

/* Launches verify likewise. It adds the mismatch count, the words read and
 * their digest to result's words, and lowers its first-bad word to the
 * lowest bad index. Does not wait. */
CUresult gpuipc_kernels_verify(const gpuipc_kernels *k, CUdeviceptr dptr, uint64_t nwords,
                               uint64_t first, uint64_t seed, CUdeviceptr result,
                               unsigned blocks, gpuipc_err *err);

/* Launches fill (verify: 0) or verify (1) over nwords at dptr with blocks
 * (0: the device's grid), with result's words reset first, after the event
 * after (if not NULL) on the GPU side only; waits for it in the current
 * context, and reads result's words into r. Returns 0 or a negative errno
 * with err. */
int gpuipc_kernels_run(const gpuipc_kernels *k, CUdeviceptr result, int verify, CUdeviceptr dptr,
                       uint64_t nwords, uint64_t first, uint64_t seed, unsigned blocks,
                       CUevent after, uint64_t r[GPUIPC_KERNELS_RESULT_WORDS], gpuipc_err *err);

#endif
