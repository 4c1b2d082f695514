/* SPDX-License-Identifier: Apache-2.0 */
/* kernels.c: the pattern kernels in PTX, and their launches.
 *
 * PTX ISA 6.5 is CUDA 10.2's, the release that introduced the VMM API, and
 * target sm_50 is below every GPU that supports VMM, so every driver that can
 * run a VMM scenario can JIT this. Each thread moves 16 bytes per iteration
 * (st/ld.global.v2.u64) in a grid-stride loop, with enough resident threads
 * to keep HBM busy. Both kernels count the words they touch and sum their
 * digest in registers, then add them up across the warp with shuffles and
 * add the warp's total to the result words with one atomic each, so that a
 * fill proves how many words it wrote and a verify how many it read, and the
 * two digests can be compared across processes. Verify keeps its mismatch
 * count and first bad index in registers too, and touches those result words
 * only if it found a mismatch. The shuffles need PTX ISA 6.0 and sm_30, below
 * what the header names. */
#include "gpu/kernels.h"

#include "gpu/cudrv.h"
#include "session/pattern.h"

#define THREADS 256
#define BLOCKS_PER_SM 8 /* 2048 resident threads per SM on sm_80 and later */

/* What the kernels assume of THREADS: whole warps, so every shuffle has 32 lanes. */
_Static_assert(THREADS % 32 == 0, "blocks must be whole warps");

/* pattern(w) = x ^ (x >> SHIFT) with x = (w ^ seed) * MUL, for w in a
 * register, seed in %rd4, result in the named register; %rd9 is scratch. */
#define PATTERN(out, w)                                                                   \
    "\txor.b64 " out ", " w ", %rd4;\n"                                                   \
    "\tmul.lo.u64 " out ", " out ", " GPUIPC_PATTERN_MUL_TEXT ";\n"                       \
    "\tshr.u64 %rd9, " out ", " GPUIPC_PATTERN_SHIFT_TEXT ";\n"                           \
    "\txor.b64 " out ", " out ", %rd9;\n"

/* digest += pattern(word ^ index, DIGEST_KEY), gpuipc_pattern_digest_term:
 * word and index in registers, the sum in %rd23; %rd24 and %rd9 scratch. */
#define DIGEST(word, index)                                                               \
    "\txor.b64 %rd24, " word ", " index ";\n"                                             \
    "\txor.b64 %rd24, %rd24, " GPUIPC_DIGEST_KEY_TEXT ";\n"                               \
    "\tmul.lo.u64 %rd24, %rd24, " GPUIPC_PATTERN_MUL_TEXT ";\n"                           \
    "\tshr.u64 %rd9, %rd24, " GPUIPC_PATTERN_SHIFT_TEXT ";\n"                             \
    "\txor.b64 %rd24, %rd24, %rd9;\n"                                                     \
    "\tadd.u64 %rd23, %rd23, %rd24;\n"

/* Loads the parameters and the first pair index; %rd1 = base address,
 * %rd2 = pairs, %rd3 = first word, %rd4 = seed, %rd5 = this thread's pair,
 * %rd6 = stride in pairs, %rd16 = the result words (global). The counts of
 * words (%rd22) and the digest (%rd23) start at 0. */
#define PROLOGUE                                                                          \
    "\tld.param.u64 %rd1, [ptr];\n"                                                       \
    "\tld.param.u64 %rd2, [npairs];\n"                                                    \
    "\tld.param.u64 %rd3, [first];\n"                                                     \
    "\tld.param.u64 %rd4, [seed];\n"                                                      \
    "\tld.param.u64 %rd16, [result];\n"                                                   \
    "\tcvta.to.global.u64 %rd1, %rd1;\n"                                                  \
    "\tcvta.to.global.u64 %rd16, %rd16;\n"                                                \
    "\tmov.u32 %r1, %ctaid.x;\n"                                                          \
    "\tmov.u32 %r2, %ntid.x;\n"                                                           \
    "\tmov.u32 %r3, %tid.x;\n"                                                            \
    "\tmov.u32 %r4, %nctaid.x;\n"                                                         \
    "\tmul.wide.u32 %rd5, %r1, %r2;\n"                                                    \
    "\tcvt.u64.u32 %rd6, %r3;\n"                                                          \
    "\tadd.u64 %rd5, %rd5, %rd6;\n"                                                       \
    "\tmul.wide.u32 %rd6, %r4, %r2;\n"                                                    \
    "\tmov.u64 %rd22, 0;\n"                                                               \
    "\tmov.u64 %rd23, 0;\n"

/* reg += reg of the lane off places up, for a warp-wide sum in lane 0; the
 * 64-bit value travels as two 32-bit shuffles. Every lane of the warp runs
 * it (full mask), which the launch guarantees: blocks are whole warps and
 * every thread reaches the epilogue. */
#define WARP_ADD(reg, off)                                                                \
    "\tmov.b64 {%r5, %r6}, " reg ";\n"                                                    \
    "\tshfl.sync.down.b32 %r7, %r5, " off ", 31, -1;\n"                                   \
    "\tshfl.sync.down.b32 %r8, %r6, " off ", 31, -1;\n"                                   \
    "\tmov.b64 %rd25, {%r7, %r8};\n"                                                      \
    "\tadd.u64 " reg ", " reg ", %rd25;\n"

#define WARP_SUM(reg)                                                                     \
    WARP_ADD(reg, "16") WARP_ADD(reg, "8") WARP_ADD(reg, "4") WARP_ADD(reg, "2")          \
    WARP_ADD(reg, "1")

/* Adds the warp's words and digest to result[2] and result[3], once per
 * warp (one atomic per warp, not per thread). */
#define EPILOGUE(label)                                                                   \
    WARP_SUM("%rd22")                                                                     \
    WARP_SUM("%rd23")                                                                     \
    "\tmov.u32 %r9, %laneid;\n"                                                           \
    "\tsetp.ne.u32 %p1, %r9, 0;\n"                                                        \
    "\t@%p1 bra " label ";\n"                                                             \
    "\tatom.global.add.u64 %rd17, [%rd16+16], %rd22;\n"                                   \
    "\tatom.global.add.u64 %rd17, [%rd16+24], %rd23;\n"                                   \
    label ":\n"                                                                           \
    "\tret;\n"

/* The registers both kernels declare. */
#define REGISTERS                                                                          \
    "\t.reg .pred %p<4>;\n"                                                                 \
    "\t.reg .b32 %r<10>;\n"                                                                 \
    "\t.reg .b64 %rd<26>;\n"

static const char ptx[] =
    ".version 6.5\n"
    ".target sm_50\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry gpuipc_fill(.param .u64 ptr, .param .u64 npairs, .param .u64 first,\n"
    "                            .param .u64 seed, .param .u64 result)\n"
    "{\n"
    REGISTERS
    PROLOGUE
    "\tsetp.ge.u64 %p1, %rd5, %rd2;\n"
    "\t@%p1 bra FILL_SUM;\n"
    "FILL_LOOP:\n"
    "\tshl.b64 %rd7, %rd5, 1;\n"
    "\tadd.u64 %rd7, %rd7, %rd3;\n"
    PATTERN("%rd8", "%rd7")
    "\tadd.u64 %rd11, %rd7, 1;\n"
    PATTERN("%rd10", "%rd11")
    "\tshl.b64 %rd12, %rd5, 4;\n"
    "\tadd.u64 %rd12, %rd1, %rd12;\n"
    "\tst.global.v2.u64 [%rd12], {%rd8, %rd10};\n"
    DIGEST("%rd8", "%rd7")
    DIGEST("%rd10", "%rd11")
    "\tadd.u64 %rd22, %rd22, 2;\n"
    "\tadd.u64 %rd5, %rd5, %rd6;\n"
    "\tsetp.lt.u64 %p1, %rd5, %rd2;\n"
    "\t@%p1 bra FILL_LOOP;\n"
    "FILL_SUM:\n"
    EPILOGUE("FILL_DONE")
    "}\n"
    "\n"
    ".visible .entry gpuipc_verify(.param .u64 ptr, .param .u64 npairs, .param .u64 first,\n"
    "                              .param .u64 seed, .param .u64 result)\n"
    "{\n"
    REGISTERS
    PROLOGUE
    "\tmov.u64 %rd20, 0;\n"
    "\tmov.u64 %rd21, -1;\n"
    "\tsetp.ge.u64 %p1, %rd5, %rd2;\n"
    "\t@%p1 bra VERIFY_FLUSH;\n"
    "VERIFY_LOOP:\n"
    "\tshl.b64 %rd12, %rd5, 4;\n"
    "\tadd.u64 %rd12, %rd1, %rd12;\n"
    "\tld.global.v2.u64 {%rd13, %rd14}, [%rd12];\n"
    "\tshl.b64 %rd7, %rd5, 1;\n"
    "\tadd.u64 %rd7, %rd7, %rd3;\n"
    PATTERN("%rd8", "%rd7")
    "\tadd.u64 %rd11, %rd7, 1;\n"
    PATTERN("%rd10", "%rd11")
    "\tsetp.ne.u64 %p2, %rd13, %rd8;\n"
    "\t@%p2 add.u64 %rd20, %rd20, 1;\n"
    "\t@%p2 min.u64 %rd21, %rd21, %rd7;\n"
    "\tsetp.ne.u64 %p3, %rd14, %rd10;\n"
    "\t@%p3 add.u64 %rd20, %rd20, 1;\n"
    "\t@%p3 min.u64 %rd21, %rd21, %rd11;\n"
    /* The digest is of what was read, not of what was expected. */
    DIGEST("%rd13", "%rd7")
    DIGEST("%rd14", "%rd11")
    "\tadd.u64 %rd22, %rd22, 2;\n"
    "\tadd.u64 %rd5, %rd5, %rd6;\n"
    "\tsetp.lt.u64 %p1, %rd5, %rd2;\n"
    "\t@%p1 bra VERIFY_LOOP;\n"
    "VERIFY_FLUSH:\n"
    /* Mismatches are rare: only a thread that found one touches them. */
    "\tsetp.eq.u64 %p1, %rd20, 0;\n"
    "\t@%p1 bra VERIFY_SUM;\n"
    "\tatom.global.add.u64 %rd17, [%rd16], %rd20;\n"
    "\tatom.global.min.u64 %rd17, [%rd16+8], %rd21;\n"
    "VERIFY_SUM:\n"
    EPILOGUE("VERIFY_DONE")
    "}\n";

const char *gpuipc_kernels_ptx(void)
{
    return ptx;
}

CUresult gpuipc_kernels_load(gpuipc_kernels *k, int sm_count, gpuipc_err *err)
{
    CUresult rc;

    k->module = NULL;
    k->max_blocks = (unsigned)(sm_count > 0 ? sm_count : 1) * BLOCKS_PER_SM;
    k->threads = THREADS;
    GPUIPC_CU_GOTO(rc, err, out, cuModuleLoadData, &k->module, ptx);
    GPUIPC_CU_GOTO(rc, err, out_unload, cuModuleGetFunction, &k->fill, k->module,
                   "gpuipc_fill");
    GPUIPC_CU_GOTO(rc, err, out_unload, cuModuleGetFunction, &k->verify, k->module,
                   "gpuipc_verify");
    return CUDA_SUCCESS;

out_unload:
    GPUIPC_CU_CALL(cuModuleUnload, k->module);
    k->module = NULL;
out:
    return rc;
}

CUresult gpuipc_kernels_unload(gpuipc_kernels *k)
{
    CUresult rc = CUDA_SUCCESS;

    if (k->module != NULL)
        rc = GPUIPC_CU_CALL(cuModuleUnload, k->module);
    k->module = NULL;
    return rc;
}

static unsigned grid_for(const gpuipc_kernels *k, uint64_t npairs, unsigned blocks)
{
    uint64_t need = (npairs + THREADS - 1) / THREADS;

    if (blocks == 0 || blocks > k->max_blocks)
        blocks = k->max_blocks;
    if (need < blocks)
        blocks = (unsigned)need;
    return blocks ? blocks : 1;
}

/* Launches fill or verify (they take the same arguments) over nwords. */
static CUresult launch_pattern(const gpuipc_kernels *k, CUfunction fn, CUdeviceptr dptr,
                               uint64_t nwords, uint64_t first, uint64_t seed,
                               CUdeviceptr result, unsigned blocks, gpuipc_err *err)
{
    uint64_t npairs = nwords / 2;
    void *args[] = {&dptr, &npairs, &first, &seed, &result};
    CUresult rc;

    GPUIPC_CU_GOTO(rc, err, out, cuLaunchKernel, fn, grid_for(k, npairs, blocks), 1, 1, THREADS,
                   1, 1, 0, NULL, args, NULL);
out:
    return rc;
}

CUresult gpuipc_kernels_fill(const gpuipc_kernels *k, CUdeviceptr dptr, uint64_t nwords,
                             uint64_t first, uint64_t seed, CUdeviceptr result, unsigned blocks,
                             gpuipc_err *err)
{
    return launch_pattern(k, k->fill, dptr, nwords, first, seed, result, blocks, err);
}

CUresult gpuipc_kernels_verify(const gpuipc_kernels *k, CUdeviceptr dptr, uint64_t nwords,
                               uint64_t first, uint64_t seed, CUdeviceptr result,
                               unsigned blocks, gpuipc_err *err)
{
    return launch_pattern(k, k->verify, dptr, nwords, first, seed, result, blocks, err);
}

/* Launches fill (verify: 0) or verify (1) over nwords at dptr with blocks
 * (0: the device's grid), after the event after (if not NULL) on the GPU
 * side only, waits, and reads the result words into r. */
int gpuipc_kernels_run(const gpuipc_kernels *k, CUdeviceptr result, int verify, CUdeviceptr dptr,
                       uint64_t nwords, uint64_t first, uint64_t seed, unsigned blocks,
                       CUevent after, uint64_t r[GPUIPC_KERNELS_RESULT_WORDS], gpuipc_err *err)
{
    uint64_t fresh[GPUIPC_KERNELS_RESULT_WORDS] = {0, UINT64_MAX, 0, 0};
    CUresult rc;

    /* The result words are reset before the wait, so that the host waits
     * for nothing but its own kernel at the end. */
    GPUIPC_CU_GOTO(rc, err, out, cuMemcpyHtoD, result, fresh, sizeof(fresh));
    if (after != NULL)
        GPUIPC_CU_GOTO(rc, err, out, cuStreamWaitEvent, NULL, after, 0);
    rc = verify ? gpuipc_kernels_verify(k, dptr, nwords, first, seed, result, blocks, err)
                : gpuipc_kernels_fill(k, dptr, nwords, first, seed, result, blocks, err);
    if (rc != CUDA_SUCCESS)
        goto out;
    GPUIPC_CU_GOTO(rc, err, out, cuCtxSynchronize);
    GPUIPC_CU_GOTO(rc, err, out, cuMemcpyDtoH, r, result, sizeof(fresh));
out:
    return gpuipc_cudrv_errno(rc);
}
