/* SPDX-License-Identifier: Apache-2.0 */
/* link_rate.c: --pairs' link figures in the consumer (link_rate.h).
 *
 *   L1 cuPointerGetAttribute (DEVICE_ORDINAL): the imported memory lies on
 *      the producer's GPU, found by its UUID, and that is not this one;
 *   L2 a VMM buffer of the same size on this GPU, filled once with the same
 *      pattern at the same indexes, that one pass held to the scenario's;
 *   L3 each run (the read across the link, the write across it, the read of
 *      the local buffer): one pass untimed and held to its sums (the first
 *      touch of the mapping is paid there, not in a figure), then
 *      GPUIPC_LINK_BATCHES batches, each: the result words reset, an event,
 *      the passes launched back to back on the default stream, an event,
 *      wait, the result words read and held to passes x the one pass;
 *   L4 the context synchronized, then the events and the local buffer
 *      released, on every path.
 *
 * Bytes are counted as nvbandwidth counts them: a pass of the verify kernel
 * reads the size, a pass of the fill kernel writes it. The batch's launches
 * take a few microseconds each and a pass over 64 MiB across NVLink about
 * 180, so the queue never runs dry inside a batch. */
#include "bench/cuda/link_rate.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "gpu/kernels.h"
#include "mech/cuda/vmm.h"
#include "session/role.h"

static const char *const run_names[GPUIPC_LINK_RUNS] = {
    "the read across the link", "the write across the link", "the read of this GPU's own memory"};

typedef struct lrun {
    const gpuipc_kernels *k;
    CUdeviceptr result;          /* the kernels' result words (gpu.h) */
    uint64_t words, first, seed; /* the pattern each pass reads or writes */
    const gpuipc_written *once;  /* what one pass of it gives */
    CUevent ev[2];
} lrun;

/* Launches one pass of run kind over dptr, without waiting: the fill
 * kernel for the write, the verify kernel for the reads. */
static CUresult launch(const lrun *l, int kind, CUdeviceptr dptr, gpuipc_err *err)
{
    if (kind == GPUIPC_LINK_WRITE)
        return gpuipc_kernels_fill(l->k, dptr, l->words, l->first, l->seed, l->result, 0, err);
    return gpuipc_kernels_verify(l->k, dptr, l->words, l->first, l->seed, l->result, 0, err);
}

/* passes passes of kind over dptr, the result words reset before and read
 * into r after; between two events, their time into *ns, unless ns is
 * NULL. Returns 0 or a negative errno with err naming the call. */
static int batch(const lrun *l, int kind, CUdeviceptr dptr, unsigned passes, uint64_t *ns,
                 uint64_t r[GPUIPC_KERNELS_RESULT_WORDS], gpuipc_err *err)
{
    static const uint64_t fresh[GPUIPC_KERNELS_RESULT_WORDS] = {0, UINT64_MAX, 0, 0};
    CUresult rc;
    unsigned i;
    float ms;

    /* A synchronous copy on the default stream: done before the first
     * event, so the batch's time holds the kernels alone. */
    GPUIPC_CU_GOTO(rc, err, out, cuMemcpyHtoD, l->result, fresh, sizeof(fresh));
    if (ns != NULL)
        GPUIPC_CU_GOTO(rc, err, out, cuEventRecord, l->ev[0], NULL);
    for (i = 0; i < passes; i++)
        if ((rc = launch(l, kind, dptr, err)) != CUDA_SUCCESS)
            goto out;
    if (ns != NULL) {
        GPUIPC_CU_GOTO(rc, err, out, cuEventRecord, l->ev[1], NULL);
        GPUIPC_CU_GOTO(rc, err, out, cuEventSynchronize, l->ev[1]);
        GPUIPC_CU_GOTO(rc, err, out, cuEventElapsedTime, &ms, l->ev[0], l->ev[1]);
        *ns = (uint64_t)((double)ms * 1e6 + 0.5);
    }
    GPUIPC_CU_GOTO(rc, err, out, cuCtxSynchronize);
    GPUIPC_CU_GOTO(rc, err, out, cuMemcpyDtoH, r, l->result,
                   GPUIPC_KERNELS_RESULT_WORDS * sizeof(uint64_t));
out:
    return gpuipc_cudrv_errno(rc);
}

/* Holds r, the result words of passes passes, to what they must give.
 * Returns 0, or -EIO with err saying why (what names the batch). */
static int check(const lrun *l, const char *what, unsigned passes,
                 const uint64_t r[GPUIPC_KERNELS_RESULT_WORDS], gpuipc_err *err)
{
    char why[GPUIPC_ERR_LEN];

    if (gpuipc_link_check_sums(what, passes, l->once, r[GPUIPC_KERNELS_WORDS],
                               r[GPUIPC_KERNELS_DIGEST], r[GPUIPC_KERNELS_MISMATCHES], why,
                               sizeof(why)) < 0)
        return gpuipc_err_set(err, -EIO, "%s", why);
    return 0;
}

/* The write run's untimed pass writes another pattern (the seed with these
 * bits flipped), read back there as that pattern before the timed batches;
 * after them the imported memory must hold the consumer's pattern again.
 * So the timed passes are proven to have written the imported memory, not
 * merely to have counted words and a digest of what they meant to write
 * (which a write into the wrong place would count as well). */
#define DECOY_BITS 0x5a5a5a5a5a5a5a5aull

/* One pass of kind over dptr with l's pattern under seed, untimed, which
 * must find (the verify kernel) or write (fill) every word, none bad.
 * Returns 0 or a negative errno with err naming what. */
static int pass_with(const lrun *l, uint64_t seed, int kind, CUdeviceptr dptr, const char *what,
                     gpuipc_err *err)
{
    uint64_t r[GPUIPC_KERNELS_RESULT_WORDS];
    lrun other = *l;
    int ret;

    other.seed = seed;
    if ((ret = batch(&other, kind, dptr, 1, NULL, r, err)) < 0) {
        gpuipc_err_prefix(err, "%s", what);
        return ret;
    }
    if (r[GPUIPC_KERNELS_WORDS] != l->words || r[GPUIPC_KERNELS_MISMATCHES] != 0)
        return gpuipc_err_set(err, -EIO, "%s: %llu of %llu words, %llu bad", what,
                              (unsigned long long)r[GPUIPC_KERNELS_WORDS],
                              (unsigned long long)l->words,
                              (unsigned long long)r[GPUIPC_KERNELS_MISMATCHES]);
    return 0;
}

/* L3: run kind over dptr into out: one pass untimed, then the timed
 * batches of passes passes, each held to its sums before it counts (the
 * write run: its untimed pass another pattern, read back, and the
 * consumer's pattern read back after the batches: DECOY_BITS). Returns 0
 * or a negative errno with err. */
static int time_run(const lrun *l, int kind, CUdeviceptr dptr, unsigned passes,
                    gpuipc_link_run *out, gpuipc_err *err)
{
    uint64_t r[GPUIPC_KERNELS_RESULT_WORDS];
    char what[96];
    unsigned b;
    int ret;

    snprintf(what, sizeof(what), "%s, its untimed pass", run_names[kind]);
    if (kind == GPUIPC_LINK_WRITE) {
        if ((ret = pass_with(l, l->seed ^ DECOY_BITS, GPUIPC_LINK_WRITE, dptr,
                             "the write across the link, its untimed pass of another pattern",
                             err)) < 0 ||
            (ret = pass_with(l, l->seed ^ DECOY_BITS, GPUIPC_LINK_READ, dptr,
                             "the write across the link, the other pattern read back", err)) < 0)
            return ret;
    } else {
        if ((ret = batch(l, kind, dptr, 1, NULL, r, err)) < 0)
            goto failed_call;
        if ((ret = check(l, what, 1, r, err)) < 0)
            return ret;
    }
    for (b = 0; b < GPUIPC_LINK_BATCHES; b++) {
        snprintf(what, sizeof(what), "%s, batch %u of %u", run_names[kind], b + 1,
                 GPUIPC_LINK_BATCHES);
        if ((ret = batch(l, kind, dptr, passes, &out->ns[b], r, err)) < 0)
            goto failed_call;
        if ((ret = check(l, what, passes, r, err)) < 0)
            return ret;
        out->words += r[GPUIPC_KERNELS_WORDS];
        out->digest += r[GPUIPC_KERNELS_DIGEST];
        out->mismatches += r[GPUIPC_KERNELS_MISMATCHES];
    }
    /* The timed passes put the consumer's pattern back over the other. */
    if (kind == GPUIPC_LINK_WRITE)
        return pass_with(l, l->seed, GPUIPC_LINK_READ, dptr, "the write across the link, the "
                         "consumer's pattern read back after its batches", err);
    return 0;
failed_call: /* err names the call: say in which run */
    gpuipc_err_prefix(err, "%s", what);
    return ret;
}

int gpuipc_link_rate_run(gpuipc_scenario *sc, const gpuipc_view *view, uint64_t seed,
                         const gpuipc_written *once, int write, gpuipc_link_figures *f,
                         gpuipc_err *err)
{
    gpuipc_env *env = sc->env;
    uint64_t r[GPUIPC_KERNELS_RESULT_WORDS];
    char why[GPUIPC_ERR_LEN];
    CUmemAllocationProp prop;
    CUresult rc = CUDA_SUCCESS;
    int have_local = 0, ret = 0, ordinal = -1;
    gpuipc_scenario own;
    gpuipc_buf local;
    gpuipc_err e2;
    lrun l;

    memset(f, 0, sizeof(*f));
    memset(&l, 0, sizeof(l));
    f->pointer_ordinal = f->home_ordinal = f->own_ordinal = -1;
    if (env->gpu == NULL)
        return gpuipc_err_set(err, -ENODEV, "no GPU is open");
    if (view->dev == 0)
        return gpuipc_err_set(err, -EINVAL, "the mechanism maps no device memory");
    if (once->words != view->size / 8)
        return gpuipc_err_set(err, -EINVAL, "the pattern there covers %llu of the mapping's "
                              "%llu words", (unsigned long long)once->words,
                              (unsigned long long)(view->size / 8));
    f->own_ordinal = gpuipc_gpu_ordinal(env->gpu);
    if ((ret = gpuipc_gpu_find_uuid(sc->home_uuid, &f->home_ordinal, err)) < 0)
        return ret;
    /* L1: where the driver puts the memory, in this process's ordinals. */
    GPUIPC_CU_GOTO(rc, err, out, cuPointerGetAttribute, &ordinal,
                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, view->dev);
    f->pointer_ordinal = ordinal;
    if (gpuipc_link_check_where(f->pointer_ordinal, f->home_ordinal, f->own_ordinal,
                                sc->mech->ipc_opened, why, sizeof(why)) < 0) {
        ret = gpuipc_err_set(err, -EXDEV, "%s", why);
        goto out;
    }
    f->passes = gpuipc_link_passes(view->size);
    f->batches = GPUIPC_LINK_BATCHES;
    f->bytes = view->size;
    f->wrote = write != 0;
    l.k = gpuipc_gpu_kernels(env->gpu);
    l.result = gpuipc_gpu_result(env->gpu);
    l.words = view->size / 8;
    l.first = view->first_word;
    l.seed = seed;
    l.once = once;

    /* L2: the local buffer belongs to a scenario of its own, which keeps
     * no laps: its reserve, map and access are not the import's. */
    gpuipc_role_start(&own, env, sc->w, sc->mech, sc->name);
    gpuipc_vmm_prop(env->gpu, CU_MEM_HANDLE_TYPE_NONE, CU_MEM_ALLOCATION_COMP_NONE, &prop);
    if ((ret = gpuipc_vmm_create(&own, &prop, view->size, &local, err)) < 0) {
        gpuipc_err_prefix(err, "a buffer of this GPU's own for the local read");
        goto out;
    }
    have_local = 1;
    GPUIPC_CU_GOTO(rc, err, out, cuEventCreate, &l.ev[0], CU_EVENT_DEFAULT);
    GPUIPC_CU_GOTO(rc, err, out, cuEventCreate, &l.ev[1], CU_EVENT_DEFAULT);
    if ((ret = batch(&l, GPUIPC_LINK_WRITE, local.view.dev, 1, NULL, r, err)) < 0 ||
        (ret = check(&l, "the fill of this GPU's own buffer", 1, r, err)) < 0)
        goto out;

    /* L3: read first, so that a wrong word there stops the run before the
     * write run would put the pattern back. */
    if ((ret = time_run(&l, GPUIPC_LINK_READ, view->dev, (unsigned)f->passes,
                        &f->run[GPUIPC_LINK_READ], err)) < 0 ||
        (write && (ret = time_run(&l, GPUIPC_LINK_WRITE, view->dev, (unsigned)f->passes,
                                  &f->run[GPUIPC_LINK_WRITE], err)) < 0) ||
        (ret = time_run(&l, GPUIPC_LINK_LOCAL, local.view.dev, (unsigned)f->passes,
                        &f->run[GPUIPC_LINK_LOCAL], err)) < 0)
        goto out;

out:
    if (rc != CUDA_SUCCESS && ret == 0)
        ret = gpuipc_cudrv_errno(rc);
    /* L4: nothing in flight when the buffer goes (an unmap under a running
     * kernel poisons the context). */
    GPUIPC_CU_CALL(cuCtxSynchronize, );
    if (l.ev[1] != NULL)
        GPUIPC_CU_CALL(cuEventDestroy, l.ev[1]);
    if (l.ev[0] != NULL)
        GPUIPC_CU_CALL(cuEventDestroy, l.ev[0]);
    if (have_local && gpuipc_vmm_release(&own, &local, &e2) < 0 && ret == 0)
        ret = gpuipc_err_set(err, -EIO, "releasing this GPU's own buffer: %s", e2.msg);
    return ret;
}
