/* SPDX-License-Identifier: Apache-2.0 */
/* views.c: the pattern kernels run over device memory: a fill or verify
 * waited for, fills launched without waiting, the delay, the self-test that
 * proves the kernels when a device opens, and device views for the roles. */
#include "gpu/views.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/units.h"
#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "gpu/kernels.h"
#include "session/pattern.h"

/* Launches fill (verify: 0) or verify (1) over nwords at dptr with blocks
 * (0: the device's grid), after the event after (if not NULL) on the GPU
 * side only, waits, and reads the result words into r. */
static int run_kernel_after(gpuipc_gpu *gpu, int verify, CUdeviceptr dptr, uint64_t nwords,
                            uint64_t first, uint64_t seed, unsigned blocks, CUevent after,
                            uint64_t r[GPUIPC_KERNELS_RESULT_WORDS], gpuipc_err *err)
{
    const gpuipc_kernels *k = gpuipc_gpu_kernels(gpu);
    CUdeviceptr result = gpuipc_gpu_result(gpu);
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

static int run_kernel(gpuipc_gpu *gpu, int verify, CUdeviceptr dptr, uint64_t nwords,
                      uint64_t first, uint64_t seed, unsigned blocks,
                      uint64_t r[GPUIPC_KERNELS_RESULT_WORDS], gpuipc_err *err)
{
    return run_kernel_after(gpu, verify, dptr, nwords, first, seed, blocks, NULL, r, err);
}

int gpuipc_gpu_fill_async(gpuipc_gpu *gpu, CUdeviceptr dptr, uint64_t nwords, uint64_t first,
                          uint64_t seed, unsigned blocks, int reset, gpuipc_err *err)
{
    CUdeviceptr result = gpuipc_gpu_result(gpu);
    uint64_t fresh[GPUIPC_KERNELS_RESULT_WORDS] = {0, UINT64_MAX, 0, 0};
    CUresult rc = CUDA_SUCCESS;

    if (reset)
        GPUIPC_CU_GOTO(rc, err, out, cuMemcpyHtoD, result, fresh, sizeof(fresh));
    if (nwords == 0)
        goto out; /* the reset alone */
    rc = gpuipc_kernels_fill(gpuipc_gpu_kernels(gpu), dptr, nwords, first, seed, result, blocks,
                             err);
out:
    return gpuipc_cudrv_errno(rc);
}

/* The delay is the verify kernel on one block, reading the memory and
 * writing only its own result words into the last 32 bytes of it, which
 * the fill that follows overwrites. */
static CUresult delay_once(gpuipc_gpu *gpu, CUdeviceptr dptr, uint64_t nwords, gpuipc_err *err)
{
    return gpuipc_kernels_verify(gpuipc_gpu_kernels(gpu), dptr,
                                 nwords - GPUIPC_KERNELS_RESULT_WORDS, 0, 0,
                                 dptr + (nwords - GPUIPC_KERNELS_RESULT_WORDS) * 8, 1, err);
}

int gpuipc_gpu_delay(gpuipc_gpu *gpu, CUdeviceptr dptr, uint64_t nwords, uint64_t ns,
                     unsigned *runs, gpuipc_err *err)
{
    uint64_t t, took;
    CUresult rc;
    unsigned i;

    if (nwords <= 2 * GPUIPC_KERNELS_RESULT_WORDS)
        return gpuipc_err_set(err, -EINVAL, "delay: %llu words are too few",
                              (unsigned long long)nwords);
    /* One, timed, to know how many make ns. */
    t = gpuipc_clock_ns();
    if ((rc = delay_once(gpu, dptr, nwords, err)) != CUDA_SUCCESS)
        goto out;
    GPUIPC_CU_GOTO(rc, err, out, cuCtxSynchronize);
    took = gpuipc_clock_ns() - t;
    *runs = (unsigned)(ns / (took ? took : 1)) + 1;
    if (*runs > 4096)
        *runs = 4096;
    for (i = 0; i < *runs; i++)
        if ((rc = delay_once(gpu, dptr, nwords, err)) != CUDA_SUCCESS)
            goto out;
out:
    return gpuipc_cudrv_errno(rc);
}

int gpuipc_gpu_fill_result(gpuipc_gpu *gpu, gpuipc_written *wrote, gpuipc_err *err)
{
    uint64_t r[GPUIPC_KERNELS_RESULT_WORDS];
    CUresult rc;

    GPUIPC_CU_GOTO(rc, err, out, cuCtxSynchronize);
    GPUIPC_CU_GOTO(rc, err, out, cuMemcpyDtoH, r, gpuipc_gpu_result(gpu), sizeof(r));
    wrote->words = r[GPUIPC_KERNELS_WORDS];
    wrote->digest = r[GPUIPC_KERNELS_DIGEST];
out:
    return gpuipc_cudrv_errno(rc);
}

/* One self-test case: fill nwords at scratch with the pattern from first on
 * a grid of blocks (0: the device's), and check the fill's own count and
 * digest against the CPU's; then plant wrong words at the indexes in plant
 * (through host, which holds the CPU's copy when check_all is set, else only
 * the planted words are written), verify on the same grid, and check that
 * it counted every word, found exactly the planted ones with the lowest
 * first, and read the digest the CPU expects. */
static int self_test_case(gpuipc_gpu *gpu, CUdeviceptr scratch, uint64_t *host, uint64_t nwords,
                          unsigned blocks, const uint64_t *plant, unsigned nplant,
                          int check_all, gpuipc_err *err)
{
    const gpuipc_kernels *k = gpuipc_gpu_kernels(gpu);
    const uint64_t first = 1000003, seed = 0x0123456789abcdefull;
    uint64_t r[GPUIPC_KERNELS_RESULT_WORDS], digest, i;
    char what[96];
    gpuipc_check check;
    CUresult rc;
    int ret;

    snprintf(what, sizeof(what), "%llu words on %u block%s of %u threads",
             (unsigned long long)nwords, blocks ? blocks : k->max_blocks,
             blocks == 1 ? "" : "s", k->threads);
    if ((ret = run_kernel(gpu, 0, scratch, nwords, first, seed, blocks, r, err)) < 0)
        return ret;
    digest = gpuipc_pattern_digest(nwords, first, seed);
    if (r[GPUIPC_KERNELS_WORDS] != nwords || r[GPUIPC_KERNELS_DIGEST] != digest)
        return gpuipc_err_set(err, -EIO, "self-test, %s: the fill kernel counted %llu words "
                              "and digest 0x%016llx; the CPU expects %llu and 0x%016llx", what,
                              (unsigned long long)r[GPUIPC_KERNELS_WORDS],
                              (unsigned long long)r[GPUIPC_KERNELS_DIGEST],
                              (unsigned long long)nwords, (unsigned long long)digest);
    if (check_all) {
        /* The CPU's own indexing, independent of the kernels' grid-stride
         * loop, reads every word the GPU wrote. */
        GPUIPC_CU_GOTO(rc, err, out, cuMemcpyDtoH, host, scratch, nwords * sizeof(uint64_t));
        if (gpuipc_pattern_verify(host, nwords, first, seed, &check) != 0) {
            char text[256];

            return gpuipc_err_set(err, -EIO, "self-test, %s: the GPU fill kernel disagrees "
                                  "with the CPU pattern: %s", what,
                                  gpuipc_pattern_describe(&check, first, text, sizeof(text)));
        }
    }
    for (i = 0; i < nplant; i++) {
        uint64_t good = gpuipc_pattern_word(first + plant[i], seed), bad = good ^ (1ull << 17);

        digest += gpuipc_pattern_digest_term(first + plant[i], bad) -
                  gpuipc_pattern_digest_term(first + plant[i], good);
        GPUIPC_CU_GOTO(rc, err, out, cuMemcpyHtoD, scratch + plant[i] * sizeof(uint64_t), &bad,
                       sizeof(bad));
    }
    if ((ret = run_kernel(gpu, 1, scratch, nwords, first, seed, blocks, r, err)) < 0)
        return ret;
    if (r[GPUIPC_KERNELS_MISMATCHES] != nplant || r[GPUIPC_KERNELS_FIRST_BAD] !=
                                                      first + plant[0] ||
        r[GPUIPC_KERNELS_WORDS] != nwords || r[GPUIPC_KERNELS_DIGEST] != digest)
        return gpuipc_err_set(err, -EIO, "self-test, %s: the verify kernel reported %llu "
                              "mismatches (first at %llu) in %llu words, digest 0x%016llx, for "
                              "%u planted (first at %llu) in %llu words, digest 0x%016llx", what,
                              (unsigned long long)r[GPUIPC_KERNELS_MISMATCHES],
                              (unsigned long long)r[GPUIPC_KERNELS_FIRST_BAD],
                              (unsigned long long)r[GPUIPC_KERNELS_WORDS],
                              (unsigned long long)r[GPUIPC_KERNELS_DIGEST], nplant,
                              (unsigned long long)(first + plant[0]), (unsigned long long)nwords,
                              (unsigned long long)digest);
    return 0;
out:
    return gpuipc_cudrv_errno(rc);
}

/* Proves on this device, before any scenario, that the kernels compute the
 * same pattern as the CPU, that every word of a buffer is written and read
 * however the grid-stride loop divides it, and that verify reports planted
 * errors at the right index: a GPU or JIT problem then shows up as itself,
 * not as a sharing failure. Two cases:
 *   - 2 blocks over 5.07 times their threads' reach (a size that is not a
 *     multiple of the grid), every word read back by the CPU, errors planted
 *     at the first word, in the fourth round of the loop, and at the last;
 *   - the device's own grid over 2.5 times its reach, as every real size uses
 *     it, with the last word planted. */
int gpuipc_gpu_self_test_run(gpuipc_gpu *gpu, char *summary, size_t len, gpuipc_err *err)
{
    const gpuipc_kernels *k = gpuipc_gpu_kernels(gpu);
    const unsigned small = 2;
    const uint64_t reach = (uint64_t)small * k->threads * 2; /* words per round */
    const uint64_t n1 = 5 * reach + 2 * 37;
    const uint64_t plant1[] = {0, 3 * reach + 5, n1 - 1};
    const uint64_t full = (uint64_t)k->max_blocks * k->threads * 2;
    const uint64_t n2 = 2 * full + full / 2 + 6;
    const uint64_t plant2[] = {n2 - 1};
    uint64_t *host = malloc(n1 * sizeof(uint64_t));
    CUdeviceptr scratch = 0;
    CUresult rc;
    int ret = -EIO;

    if (host == NULL)
        return gpuipc_err_set(err, -ENOMEM, "self-test: out of memory");
    GPUIPC_CU_GOTO(rc, err, out, cuMemAlloc, &scratch, n2 * sizeof(uint64_t));
    ret = self_test_case(gpu, scratch, host, n1, small, plant1, 3, 1, err);
    if (ret == 0)
        ret = self_test_case(gpu, scratch, host, n2, 0, plant2, 1, 0, err);
    GPUIPC_CU_CALL(cuMemFree, scratch);
    snprintf(summary, len, "self-test: %llu words on %u blocks of %u "
             "threads (%.2f rounds of the loop) and %llu words on the device's %u blocks "
             "(%.2f rounds): every word written and read, planted wrong words found at their "
             "indexes; digests and word counts match the CPU's", (unsigned long long)n1, small,
             k->threads, (double)n1 / (double)reach, (unsigned long long)n2,
             k->max_blocks, (double)n2 / (double)full);
out:
    free(host);
    if (ret != 0 && err != NULL && strncmp(err->msg, "self-test", 9) != 0)
        gpuipc_err_prefix(err, "self-test");
    return ret;
}

/* ---- device views ---------------------------------------------------------------------- */

static int gpu_fill(const gpuipc_view *v, uint64_t seed, gpuipc_written *wrote, gpuipc_err *err)
{
    uint64_t r[GPUIPC_KERNELS_RESULT_WORDS];
    int ret = run_kernel(v->ctx, 0, v->dev, v->size / 8, v->first_word, seed, 0, r, err);

    if (ret < 0)
        return ret;
    wrote->words = r[GPUIPC_KERNELS_WORDS];
    wrote->digest = r[GPUIPC_KERNELS_DIGEST];
    return 0;
}

int gpuipc_gpu_verify_after(const gpuipc_view *v, CUevent after, uint64_t seed,
                            gpuipc_check *check, gpuipc_err *err)
{
    uint64_t r[GPUIPC_KERNELS_RESULT_WORDS];
    CUresult rc;
    int ret;

    memset(check, 0, sizeof(*check));
    if ((ret = run_kernel_after(v->ctx, 1, v->dev, v->size / 8, v->first_word, seed, 0, after, r,
                                err)) < 0)
        return ret;
    check->words = r[GPUIPC_KERNELS_WORDS];
    check->digest = r[GPUIPC_KERNELS_DIGEST];
    check->mismatches = r[GPUIPC_KERNELS_MISMATCHES];
    if (check->mismatches != 0) {
        uint64_t bad = r[GPUIPC_KERNELS_FIRST_BAD];

        check->first_bad = bad;
        check->expected = gpuipc_pattern_word(bad, seed);
        /* A corrupt index must not send the copy outside the view. */
        if (bad < v->first_word || bad - v->first_word >= v->size / 8)
            return gpuipc_err_set(err, -EIO, "the verify kernel named word %llu, outside the "
                                  "view's %llu words", (unsigned long long)bad,
                                  (unsigned long long)(v->size / 8));
        GPUIPC_CU_GOTO(rc, err, out, cuMemcpyDtoH, &check->got,
                       v->dev + (bad - v->first_word) * 8, sizeof(uint64_t));
    }
    return 0;
out:
    return gpuipc_cudrv_errno(rc);
}

static int gpu_verify(const gpuipc_view *v, uint64_t seed, gpuipc_check *check,
                      gpuipc_err *err)
{
    return gpuipc_gpu_verify_after(v, NULL, seed, check, err);
}

static int gpu_poke(const gpuipc_view *v, uint64_t index, uint64_t value, gpuipc_err *err)
{
    CUresult rc;

    if (index < v->first_word || index - v->first_word >= v->size / 8)
        return gpuipc_err_set(err, -ERANGE, "word %llu is outside the view (words %llu to "
                              "%llu)", (unsigned long long)index,
                              (unsigned long long)v->first_word,
                              (unsigned long long)(v->first_word + v->size / 8 - 1));
    GPUIPC_CU_GOTO(rc, err, out, cuMemcpyHtoD, v->dev + (index - v->first_word) * 8, &value,
                   sizeof(value));
    GPUIPC_CU_GOTO(rc, err, out, cuCtxSynchronize);
out:
    return gpuipc_cudrv_errno(rc);
}

const gpuipc_view_ops gpuipc_gpu_view_ops = {
    .fill = gpu_fill,
    .verify = gpu_verify,
    .poke = gpu_poke,
};

void gpuipc_gpu_view(gpuipc_gpu *gpu, CUdeviceptr dptr, uint64_t size, uint64_t first_word,
                     gpuipc_view *view)
{
    memset(view, 0, sizeof(*view));
    view->ops = &gpuipc_gpu_view_ops;
    view->dev = dptr;
    view->size = size;
    view->first_word = first_word;
    view->ctx = gpu;
}

void gpuipc_gpu_buf(gpuipc_gpu *gpu, CUdeviceptr dptr, uint64_t size, uint64_t granularity,
                    void *priv, const char *how, gpuipc_buf *buf)
{
    char human[32];

    gpuipc_gpu_view(gpu, dptr, size, 0, &buf->view);
    buf->size = size;
    buf->granularity = granularity;
    buf->priv = priv;
    snprintf(buf->detail, sizeof(buf->detail), "%s on GPU %d %s",
             gpuipc_units_format_size(size, human, sizeof(human)), gpuipc_gpu_ordinal(gpu),
             how);
}

void gpuipc_gpu_note_oom(gpuipc_gpu *gpu, CUresult rc, uint64_t requested, gpuipc_err *err)
{
    uint64_t free_b = 0, total = 0;
    char a[32], b[32];

    if (rc != CUDA_ERROR_OUT_OF_MEMORY || gpu == NULL ||
        gpuipc_gpu_mem_info(gpu, &free_b, &total, NULL) != CUDA_SUCCESS)
        return;
    gpuipc_err_prefix(err, "%s requested, %s free", gpuipc_units_format_size(requested, a, sizeof(a)),
                      gpuipc_units_format_size(free_b, b, sizeof(b)));
}

int gpuipc_gpu_check_opened(CUdeviceptr ptr, uint64_t size, const char *call, int strict,
                            gpuipc_err *err)
{
    CUdeviceptr base = 0;
    size_t mapped = 0;
    CUresult rc = GPUIPC_CU_CALL(cuMemGetAddressRange, &base, &mapped, ptr);

    if (rc != CUDA_SUCCESS)
        return strict ? gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuMemGetAddressRange", rc,
                                                             __FILE__, __LINE__))
                      : 0;
    if (mapped < size)
        return gpuipc_err_set(err, -EPROTO, "%s opened %zu bytes, the offer claims %llu", call,
                              mapped, (unsigned long long)size);
    return 0;
}
