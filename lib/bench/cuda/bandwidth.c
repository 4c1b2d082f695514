/* SPDX-License-Identifier: Apache-2.0 */
/* bandwidth.c: the consumer's timed kernel and copy runs for --bench.
 *
 * Bytes are counted as nvbandwidth counts them: a copy moves its size once
 * (the bytes read and the bytes written are not added up), the fill kernel
 * writes its size and the verify kernel reads it. */
#include "bench/cuda/bandwidth.h"

#include <errno.h>
#include <string.h>

#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "gpu/kernels.h"
#include "mech/cuda/vmm.h"
#include "session/role.h"

typedef struct bwrun {
    gpuipc_env *env;
    const gpuipc_kernels *k;
    CUdeviceptr result;
    uint64_t size, first, seed;
    CUdeviceptr imported, local, scratch;
} bwrun;

/* Launches operation op (enum gpuipc_bw) without waiting. */
static CUresult launch(const bwrun *b, int op, gpuipc_err *err)
{
    CUdeviceptr target = op < GPUIPC_BW_FILL_LOCAL ? b->imported : b->local;
    CUresult rc;

    switch (op) {
    case GPUIPC_BW_FILL_IMPORTED:
    case GPUIPC_BW_FILL_LOCAL:
        return gpuipc_kernels_fill(b->k, target, b->size / 8, b->first, b->seed, b->result, 0,
                                   err);
    case GPUIPC_BW_VERIFY_IMPORTED:
    case GPUIPC_BW_VERIFY_LOCAL:
        return gpuipc_kernels_verify(b->k, target, b->size / 8, b->first, b->seed, b->result,
                                     0, err);
    default: /* the copies: from the imported or the local buffer into scratch */
        GPUIPC_CU_GOTO(rc, err, out, cuMemcpyDtoDAsync, b->scratch, target, b->size, NULL);
    out:
        return rc;
    }
}

/* Times op iters times into ns, after one untimed run. */
static CUresult time_op(const bwrun *b, int op, unsigned iters, CUevent ev[2], uint64_t *ns,
                        gpuipc_err *err)
{
    CUresult rc;
    unsigned i;
    float ms;

    if ((rc = launch(b, op, err)) != CUDA_SUCCESS)
        return rc;
    for (i = 0; i < iters; i++) {
        GPUIPC_CU_GOTO(rc, err, out, cuEventRecord, ev[0], NULL);
        if ((rc = launch(b, op, err)) != CUDA_SUCCESS)
            return rc;
        GPUIPC_CU_GOTO(rc, err, out, cuEventRecord, ev[1], NULL);
        GPUIPC_CU_GOTO(rc, err, out, cuEventSynchronize, ev[1]);
        GPUIPC_CU_GOTO(rc, err, out, cuEventElapsedTime, &ms, ev[0], ev[1]);
        ns[i] = (uint64_t)((double)ms * 1e6 + 0.5);
    }
out:
    return rc;
}

/* After the runs every buffer must hold the pattern: the imported and local
 * ones from the fills, scratch as a copy of them; and the verify runs
 * themselves must have counted no mismatch. */
static int check_after(const bwrun *b, gpuipc_err *err)
{
    static const char *const names[] = {"the imported memory", "the local buffer",
                                        "the copy destination"};
    const CUdeviceptr bufs[] = {b->imported, b->local, b->scratch};
    uint64_t counters[2];
    gpuipc_view v;
    gpuipc_check k;
    unsigned i;
    CUresult rc;
    int ret;

    GPUIPC_CU_GOTO(rc, err, out, cuCtxSynchronize);
    GPUIPC_CU_GOTO(rc, err, out, cuMemcpyDtoH, counters, b->result, sizeof(counters));
    if (counters[0] != 0)
        return gpuipc_err_set(err, -EIO, "the timed verify runs counted %llu mismatches",
                              (unsigned long long)counters[0]);
    for (i = 0; i < 3; i++) {
        gpuipc_gpu_view(b->env->gpu, bufs[i], b->size, b->first, &v);
        if ((ret = v.ops->verify(&v, b->seed, &k, err)) < 0)
            return ret;
        if (k.mismatches != 0)
            return gpuipc_err_set(err, -EIO, "after the runs %s has %llu wrong words of %llu",
                                  names[i], (unsigned long long)k.mismatches,
                                  (unsigned long long)k.words);
    }
    return 0;
out:
    return gpuipc_cudrv_errno(rc);
}

int gpuipc_bandwidth_run(gpuipc_scenario *sc, const gpuipc_view *view, uint64_t seed,
                         unsigned iters, uint64_t *const ns[GPUIPC_BW_COUNT], gpuipc_err *err)
{
    static const uint64_t fresh[GPUIPC_KERNELS_RESULT_WORDS] = {0, UINT64_MAX, 0, 0};
    gpuipc_env *env = sc->env;
    gpuipc_scenario own;
    gpuipc_buf local, scratch;
    CUmemAllocationProp prop;
    CUevent ev[2] = {NULL, NULL};
    int have_local = 0, have_scratch = 0, ret = 0, op;
    CUresult rc = CUDA_SUCCESS;
    gpuipc_err e2;
    bwrun b;

    /* The local buffers belong to a scenario of their own, which keeps no
     * laps: their reserve, map and access are not the import's. */
    gpuipc_role_start(&own, env, sc->w, sc->mech, sc->name);
    memset(&b, 0, sizeof(b));
    b.env = env;
    b.k = gpuipc_gpu_kernels(env->gpu);
    b.result = gpuipc_gpu_result(env->gpu);
    b.size = view->size;
    b.first = view->first_word;
    b.seed = seed;
    b.imported = view->dev;
    gpuipc_vmm_prop(env->gpu, CU_MEM_HANDLE_TYPE_NONE, CU_MEM_ALLOCATION_COMP_NONE, &prop);
    if ((ret = gpuipc_vmm_create(&own, &prop, view->size, &local, err)) < 0)
        goto out;
    have_local = 1;
    if ((ret = gpuipc_vmm_create(&own, &prop, view->size, &scratch, err)) < 0)
        goto out;
    have_scratch = 1;
    b.local = local.view.dev;
    b.scratch = scratch.view.dev;
    GPUIPC_CU_GOTO(rc, err, out, cuEventCreate, &ev[0], CU_EVENT_DEFAULT);
    GPUIPC_CU_GOTO(rc, err, out, cuEventCreate, &ev[1], CU_EVENT_DEFAULT);
    GPUIPC_CU_GOTO(rc, err, out, cuMemcpyHtoD, b.result, fresh, sizeof(fresh));
    for (op = 0; op < GPUIPC_BW_COUNT; op++)
        if ((rc = time_op(&b, op, iters, ev, ns[op], err)) != CUDA_SUCCESS)
            goto out;
    ret = check_after(&b, err);

out:
    if (rc != CUDA_SUCCESS && ret == 0)
        ret = gpuipc_cudrv_errno(rc);
    GPUIPC_CU_CALL(cuCtxSynchronize, );
    if (ev[1] != NULL)
        GPUIPC_CU_CALL(cuEventDestroy, ev[1]);
    if (ev[0] != NULL)
        GPUIPC_CU_CALL(cuEventDestroy, ev[0]);
    if (have_scratch && gpuipc_vmm_release(&own, &scratch, &e2) < 0 && ret == 0)
        ret = gpuipc_err_set(err, -EIO, "releasing the copy destination: %s", e2.msg);
    if (have_local && gpuipc_vmm_release(&own, &local, &e2) < 0 && ret == 0)
        ret = gpuipc_err_set(err, -EIO, "releasing the local buffer: %s", e2.msg);
    return ret;
}
