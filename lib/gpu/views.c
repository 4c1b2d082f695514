/* SPDX-License-Identifier: Apache-2.0 */
/* views.c: the pattern kernels run over device memory: a fill or verify
 * waited for, fills launched without waiting, the delay, and device views
 * for the roles. The kernels' self-test is in selftest.c. */
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

/* Launches fill (verify: 0) or verify (1) on gpu's kernels and result
 * words, as gpuipc_kernels_run does. */
static int run_kernel_after(gpuipc_gpu *gpu, int verify, CUdeviceptr dptr, uint64_t nwords,
                            uint64_t first, uint64_t seed, unsigned blocks, CUevent after,
                            uint64_t r[GPUIPC_KERNELS_RESULT_WORDS], gpuipc_err *err)
{
    return gpuipc_kernels_run(gpuipc_gpu_kernels(gpu), gpuipc_gpu_result(gpu), verify, dptr,
                              nwords, first, seed, blocks, after, r, err);
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
