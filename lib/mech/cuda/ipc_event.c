/* SPDX-License-Identifier: Apache-2.0 */
/* ipc_event.c: cross-process GPU ordering, the way PyTorch shares CUDA
 * tensors: the producer's fill kernel and an interprocess event recorded
 * behind it on its stream; the event travels as a cuIpcGetEventHandle
 * handle beside the memory's cuIpcGetMemHandle; the consumer's stream waits
 * on the opened event (cuStreamWaitEvent) and its verify kernel runs after
 * it, with no host-side wait for the producer in between. The OFFER leaves
 * while the fill may still be running: only the event orders the two.
 *
 *   P probe:  legacy IPC, and CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED
 *   P alloc:  cuMemAlloc, zeroed; cuEventCreate(INTERPROCESS | DISABLE_TIMING)
 *   P fill:   the fill kernel, launched, not waited for; cuEventRecord after it.
 *             What it will write is announced from the CPU's digest of the
 *             pattern, and held against the kernel's own count and digest
 *             before the producer checks the consumer's bytes
 *   P export: cuIpcGetMemHandle and cuIpcGetEventHandle, 128 bytes in the blob
 *   C import: cuIpcOpenMemHandle, cuIpcOpenEventHandle
 *   C verify: cuStreamWaitEvent, then the verify kernel
 *   release:  the consumer destroys the opened event and closes the memory
 *             first; then the producer destroys its event and frees
 * The early-event sabotage records the event before about a second of
 * kernels that only read, and the fill after them: the consumer's check of
 * the producer's bytes must then fail. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/step.h"
#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "mech/cuda/legacy_ipc.h"
#include "session/inject.h"
#include "session/mech.h"
#include "session/pattern.h"

#define NAME "ipc-event"
#define SLOW_NS 1000000000ull /* the sabotage's delay behind the event */

typedef struct event_priv {
    gpuipc_buf mem;        /* the legacy IPC memory (legacy_ipc.c) */
    gpuipc_gpu *gpu;
    CUevent ev;
    int pending;           /* producer: fills launched and not yet checked */
    gpuipc_written expect; /* what the kernels launched must count and sum */
    gpuipc_env *env;       /* for log lines and the test hooks */
} event_priv;

static int probe(gpuipc_scenario *sc, gpuipc_err *why)
{
    int rc = gpuipc_legacy_probe(sc, why), ok = 0;

    if (rc < 0)
        return rc;
    if (gpuipc_gpu_attr(sc->env->gpu, CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, &ok, why) !=
        CUDA_SUCCESS)
        return -EIO;
    if (!ok)
        return gpuipc_err_set(why, -ENOTSUP, "CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED is 0 on "
                              "GPU %d: interprocess events are not supported here",
                              gpuipc_gpu_ordinal(sc->env->gpu));
    return 0;
}

/* ---- the views: the producer's fill runs ahead of the host; the consumer's
 * verify waits for the event on the GPU ------------------------------------------------- */

static int producer_fill(const gpuipc_view *v, uint64_t seed, gpuipc_written *wrote,
                         gpuipc_err *err)
{
    event_priv *p = v->ctx;
    uint64_t n = v->size / 8;
    unsigned runs = 0;
    CUresult rc;
    int ret;

    wrote->words = n;
    wrote->digest = gpuipc_pattern_digest(n, v->first_word, seed);
    if (gpuipc_inject_sabotage(&p->env->inject, p->env->role, GPUIPC_SABOTAGE_EARLY_EVENT)) {
        /* The event first, then about a second of kernels that only read,
         * then the fill: a wait on the event orders nothing. */
        if ((ret = gpuipc_gpu_fill_async(p->gpu, v->dev, 0, 0, 0, 0, 1, err)) < 0)
            return ret; /* resets the fill's count and digest, launches nothing */
        GPUIPC_CU_GOTO(rc, err, out, cuEventRecord, p->ev, NULL);
        if ((ret = gpuipc_gpu_delay(p->gpu, v->dev, n, SLOW_NS, &runs, err)) < 0 ||
            (ret = gpuipc_gpu_fill_async(p->gpu, v->dev, n, v->first_word, seed, 0, 0, err)) < 0)
            return ret;
        gpuipc_log_step(&p->env->log, GPUIPC_LOG_NORMAL, NAME, GPUIPC_STEP_FILL,
                        GPUIPC_LOG_NO_TIME, "SABOTAGE: the event recorded before %u kernels "
                        "of about %.1f s and the fill (test hook)", runs, SLOW_NS / 1e9);
    } else {
        if ((ret = gpuipc_gpu_fill_async(p->gpu, v->dev, n, v->first_word, seed, 0, 1, err)) < 0)
            return ret;
        GPUIPC_CU_GOTO(rc, err, out, cuEventRecord, p->ev, NULL);
    }
    p->expect = *wrote;
    p->pending = 1;
    return 0;
out:
    return gpuipc_cudrv_errno(rc);
}

/* Holds what the fill kernels counted and summed against what was
 * announced, once they are done. */
static int settle(event_priv *p, gpuipc_err *err)
{
    gpuipc_written got;
    int rc;

    if (!p->pending)
        return 0;
    p->pending = 0;
    if ((rc = gpuipc_gpu_fill_result(p->gpu, &got, err)) < 0)
        return rc;
    if (got.words != p->expect.words || got.digest != p->expect.digest)
        return gpuipc_err_set(err, -EIO, "the fill kernel wrote %llu words, digest 0x%016llx, "
                              "not the %llu words, digest 0x%016llx announced",
                              (unsigned long long)got.words, (unsigned long long)got.digest,
                              (unsigned long long)p->expect.words,
                              (unsigned long long)p->expect.digest);
    return 0;
}

static int producer_verify(const gpuipc_view *v, uint64_t seed, gpuipc_check *check,
                           gpuipc_err *err)
{
    int rc = settle(v->ctx, err);

    if (rc < 0)
        return rc;
    return gpuipc_gpu_verify_after(&((event_priv *)v->ctx)->mem.view, NULL, seed, check, err);
}

/* A word spoilt after the fill: the event is recorded again behind it. */
static int producer_poke(const gpuipc_view *v, uint64_t index, uint64_t value, gpuipc_err *err)
{
    event_priv *p = v->ctx;
    CUresult rc;
    int ret;

    if ((ret = gpuipc_gpu_view_ops.poke(&p->mem.view, index, value, err)) < 0)
        return ret;
    GPUIPC_CU_GOTO(rc, err, out, cuEventRecord, p->ev, NULL);
out:
    return gpuipc_cudrv_errno(rc);
}

static const gpuipc_view_ops producer_ops = {
    .fill = producer_fill,
    .verify = producer_verify,
    .poke = producer_poke,
};

static int consumer_fill(const gpuipc_view *v, uint64_t seed, gpuipc_written *wrote,
                         gpuipc_err *err)
{
    return gpuipc_gpu_view_ops.fill(&((event_priv *)v->ctx)->mem.view, seed, wrote, err);
}

static int consumer_verify(const gpuipc_view *v, uint64_t seed, gpuipc_check *check,
                           gpuipc_err *err)
{
    event_priv *p = v->ctx;

    return gpuipc_gpu_verify_after(&p->mem.view, p->ev, seed, check, err);
}

static int consumer_poke(const gpuipc_view *v, uint64_t index, uint64_t value, gpuipc_err *err)
{
    return gpuipc_gpu_view_ops.poke(&((event_priv *)v->ctx)->mem.view, index, value, err);
}

static const gpuipc_view_ops consumer_ops = {
    .fill = consumer_fill,
    .verify = consumer_verify,
    .poke = consumer_poke,
};

/* buf shows the memory through ops, with p as their state. */
static void wrap(event_priv *p, const gpuipc_view_ops *ops, const char *how, gpuipc_buf *buf)
{
    *buf = p->mem;
    buf->view.ops = ops;
    buf->view.ctx = p;
    buf->priv = p;
    snprintf(buf->detail, sizeof(buf->detail), "%.100s, %s", p->mem.detail, how);
}

/* ---- the mechanism ------------------------------------------------------------------- */

static int release(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err)
{
    event_priv *p = buf->priv;
    CUresult first = CUDA_SUCCESS;
    int rc, failed;

    if (p == NULL)
        return 0;
    /* The kernels are done, and checked, before anything goes. */
    failed = settle(p, err);
    if (p->ev != NULL)
        GPUIPC_CU_NOTE(first, failed < 0 ? NULL : err, cuEventDestroy, p->ev);
    if (failed == 0 && first != CUDA_SUCCESS)
        failed = gpuipc_cudrv_errno(first);
    rc = gpuipc_legacy_release(sc, &p->mem, failed < 0 ? NULL : err);
    free(p);
    memset(buf, 0, sizeof(*buf));
    return failed < 0 ? failed : rc;
}

static int alloc(gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    event_priv *p = calloc(1, sizeof(*p));
    CUresult rc;
    int ret;

    memset(buf, 0, sizeof(*buf));
    if (p == NULL)
        return gpuipc_err_set(err, -ENOMEM, NAME ": out of memory");
    p->gpu = sc->env->gpu;
    p->env = sc->env;
    if ((ret = gpuipc_legacy_alloc(sc, size, &p->mem, err)) < 0) {
        free(p);
        return ret;
    }
    /* Zeros, so that a read that comes too early finds no pattern. */
    GPUIPC_CU_GOTO(rc, err, out, cuMemsetD32, p->mem.view.dev, 0, p->mem.size / 4);
    GPUIPC_CU_GOTO(rc, err, out, cuCtxSynchronize);
    GPUIPC_CU_GOTO(rc, err, out, cuEventCreate, &p->ev,
                   CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING);
    wrap(p, &producer_ops, "an interprocess event recorded after its fill", buf);
    return 0;
out:
    {
        gpuipc_buf own;

        wrap(p, &producer_ops, "", &own);
        release(sc, &own, NULL);
    }
    return gpuipc_cudrv_errno(rc);
}

static int export_handles(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                          unsigned *nfds, gpuipc_err *err)
{
    event_priv *p = buf->priv;
    CUipcEventHandle h;
    CUresult rc;
    int ret;

    if ((ret = gpuipc_legacy_export(sc, &p->mem, offer, fds, nfds, err)) < 0)
        return ret;
    GPUIPC_CU_GOTO(rc, err, out, cuIpcGetEventHandle, &h, p->ev);
    memcpy(offer->blob + GPUIPC_LEGACY_HANDLE_LEN, h.reserved, sizeof(h.reserved));
    offer->blob_len = GPUIPC_LEGACY_HANDLE_LEN + (uint32_t)sizeof(h.reserved);
    return 0;
out:
    return gpuipc_cudrv_errno(rc);
}

static int import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds, unsigned nfds,
                  gpuipc_buf *buf, gpuipc_err *err)
{
    event_priv *p;
    CUipcEventHandle h;
    CUresult rc;
    int ret;

    (void)fds;
    memset(buf, 0, sizeof(*buf));
    if ((ret = gpuipc_mech_offer_shape(NAME, offer, nfds, 0,
                                       GPUIPC_LEGACY_HANDLE_LEN + sizeof(h.reserved), err)) < 0)
        return ret;
    if ((p = calloc(1, sizeof(*p))) == NULL)
        return gpuipc_err_set(err, -ENOMEM, NAME ": out of memory");
    p->env = sc->env;
    if ((ret = gpuipc_legacy_open(sc, offer, &p->mem, err)) < 0) {
        free(p);
        return ret;
    }
    p->gpu = sc->env->gpu;
    memcpy(h.reserved, offer->blob + GPUIPC_LEGACY_HANDLE_LEN, sizeof(h.reserved));
    GPUIPC_CU_GOTO(rc, err, out, cuIpcOpenEventHandle, &p->ev, h);
    wrap(p, &consumer_ops, "its verify ordered after the producer's fill by the event", buf);
    return 0;
out:
    gpuipc_legacy_release(sc, &p->mem, NULL);
    free(p);
    return gpuipc_cudrv_errno(rc);
}

const gpuipc_mech gpuipc_mech_ipc_event = {
    .name = NAME,
    .summary = "legacy IPC memory and an interprocess event: the consumer's verify waits on "
               "the producer's fill on the GPU (cuStreamWaitEvent), not on the host",
    .needs_cuda = 1,
    .by_default = 1,
    .cross_device = 1,
    .ipc_opened = 1,
    .probe = probe,
    .alloc = alloc,
    .export = export_handles,
    .import = import,
    .release = release,
};
