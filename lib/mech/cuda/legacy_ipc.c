/* SPDX-License-Identifier: Apache-2.0 */
/* legacy_ipc.c: the original CUDA IPC: cuMemAlloc memory, a 64-byte
 * cuIpcGetMemHandle handle sent in the message, cuIpcOpenMemHandle in the
 * consumer. The CUDA samples and older NCCL and PyTorch use it. It shares
 * only cuMemAlloc memory, and the producer's probe shows that it refuses a
 * VMM allocation, so that users learn why their legacy path fails on it.
 *
 *   P probe: UNIFIED_ADDRESSING; cuIpcGetMemHandle on a VMM allocation is
 *            expected to fail (reported, not a failure)
 *   P alloc: cuMemAlloc (size rounded up to 2 MiB)
 *   P export: cuIpcGetMemHandle -> 64 bytes in the offer, no FD
 *   C import: cuIpcOpenMemHandle(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
 *   C release: cuIpcCloseMemHandle, before the producer's cuMemFree */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "gpu/cudrv.h"
#include "session/scenario.h"
#include "gpu/gpu.h"
#include "session/mech.h"
#include "core/step.h"
#include "mech/cuda/legacy_ipc.h"
#include "mech/cuda/vmm.h"

#define NAME "legacy-ipc"
#define ROUND (2ull << 20) /* cuMemAlloc has no granularity to ask for; 2 MiB pages */

typedef struct legacy_priv {
    CUdeviceptr ptr;
    uint64_t size;
    int opened; /* consumer: from cuIpcOpenMemHandle */
} legacy_priv;

/* Shows, once per run, what cuIpcGetMemHandle does with VMM memory. */
static void show_vmm_refusal(gpuipc_scenario *sc)
{
    CUmemAllocationProp prop;
    CUipcMemHandle h;
    gpuipc_buf vmm;
    gpuipc_err e;
    CUresult rc;
    int ok = 0;

    if (gpuipc_gpu_attr(sc->env->gpu, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, &ok,
                        NULL) != CUDA_SUCCESS || !ok)
        return;
    gpuipc_vmm_prop(sc->env->gpu, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    CU_MEM_ALLOCATION_COMP_NONE, &prop);
    if (gpuipc_vmm_create(sc, &prop, 1, &vmm, &e) < 0)
        return;
    rc = GPUIPC_CU_CALL(cuIpcGetMemHandle, &h, vmm.view.dev);
    gpuipc_log_step(&sc->env->log, GPUIPC_LOG_NORMAL, NAME, GPUIPC_STEP_PROBE, GPUIPC_LOG_NO_TIME,
                    rc != CUDA_SUCCESS
                        ? "expected refusal: cuIpcGetMemHandle on a VMM (cuMemCreate) allocation "
                          "returns %s: legacy IPC shares only cuMemAlloc memory"
                        : "note: cuIpcGetMemHandle accepted a VMM allocation (%s), which older "
                          "drivers refuse",
                    gpuipc_cudrv_error_name(rc));
    gpuipc_vmm_release(sc, &vmm, NULL);
}

int gpuipc_legacy_probe(gpuipc_scenario *sc, gpuipc_err *why)
{
    int uva = 0, rc;

    if (sc->env->role == GPUIPC_ROLE_CONSUMER && (rc = gpuipc_gpu_attach(sc, why)) < 0)
        return rc;
    if (sc->env->gpu == NULL)
        return gpuipc_err_set(why, -ENODEV, "no GPU is open");
    if (gpuipc_gpu_attr(sc->env->gpu, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, &uva, why) !=
        CUDA_SUCCESS)
        return -EIO;
    if (!uva)
        return gpuipc_err_set(why, -ENOTSUP, "CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING is 0 on GPU "
                              "%d: legacy IPC needs unified addressing (64-bit Linux)",
                              gpuipc_gpu_ordinal(sc->env->gpu));
    if (sc->env->role == GPUIPC_ROLE_PRODUCER)
        show_vmm_refusal(sc);
    return 0;
}

int gpuipc_legacy_alloc(gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    legacy_priv *priv = calloc(1, sizeof(*priv));
    CUresult rc;

    memset(buf, 0, sizeof(*buf));
    if (priv == NULL)
        return gpuipc_err_set(err, -ENOMEM, NAME ": out of memory");
    priv->size = (size + ROUND - 1) / ROUND * ROUND;
    GPUIPC_CU_GOTO(rc, err, out, cuMemAlloc, &priv->ptr, priv->size);
    gpuipc_gpu_buf(sc->env->gpu, priv->ptr, priv->size, ROUND, priv, "with cuMemAlloc", buf);
    return 0;
out:
    gpuipc_gpu_note_oom(sc->env->gpu, rc, priv->size, err);
    free(priv);
    return gpuipc_cudrv_errno(rc);
}

int gpuipc_legacy_export(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                         unsigned *nfds, gpuipc_err *err)
{
    legacy_priv *priv = buf->priv;
    CUipcMemHandle h;
    CUresult rc;

    (void)fds;
    GPUIPC_CU_GOTO(rc, err, out, cuIpcGetMemHandle, &h, priv->ptr);
    *nfds = 0;
    offer->size = buf->size;
    offer->granularity = buf->granularity;
    memcpy(offer->uuid, gpuipc_gpu_uuid(sc->env->gpu), GPUIPC_UUID_LEN);
    memcpy(offer->blob, h.reserved, sizeof(h.reserved));
    offer->blob_len = sizeof(h.reserved);
    return 0;
out:
    return gpuipc_cudrv_errno(rc);
}

int gpuipc_legacy_open(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, gpuipc_buf *buf,
                       gpuipc_err *err)
{
    legacy_priv *priv;
    CUipcMemHandle h;
    uint64_t t;
    CUresult rc;
    int ret;

    memset(buf, 0, sizeof(*buf));
    if (gpuipc_gpu_check_offer(sc, offer->uuid, err) < 0)
        return -EPROTO;
    priv = calloc(1, sizeof(*priv));
    if (priv == NULL)
        return gpuipc_err_set(err, -ENOMEM, NAME ": out of memory");
    memcpy(h.reserved, offer->blob, sizeof(h.reserved));
    t = gpuipc_clock_ns();
    GPUIPC_CU_GOTO(rc, err, out, cuIpcOpenMemHandle, &priv->ptr, h,
                   CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    priv->opened = 1;
    gpuipc_log_step(&sc->env->log, GPUIPC_LOG_VERBOSE, NAME, GPUIPC_STEP_IMPORT,
                    gpuipc_clock_ns() - t, "cuIpcOpenMemHandle");
    if ((ret = gpuipc_gpu_check_opened(priv->ptr, offer->size, "cuIpcOpenMemHandle", 1,
                                       err)) < 0) {
        GPUIPC_CU_CALL(cuIpcCloseMemHandle, priv->ptr);
        free(priv);
        return ret;
    }
    priv->size = offer->size;
    gpuipc_gpu_buf(sc->env->gpu, priv->ptr, priv->size, ROUND, priv, "with cuIpcOpenMemHandle", buf);
    return 0;

out:
    free(priv);
    return gpuipc_cudrv_errno(rc);
}

static int legacy_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                         unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    (void)fds;
    memset(buf, 0, sizeof(*buf));
    if (gpuipc_mech_offer_shape(NAME, offer, nfds, 0, GPUIPC_LEGACY_HANDLE_LEN, err) < 0)
        return -EPROTO;
    return gpuipc_legacy_open(sc, offer, buf, err);
}

int gpuipc_legacy_release(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err)
{
    legacy_priv *priv = buf->priv;
    CUresult first = CUDA_SUCCESS;

    (void)sc;
    if (priv == NULL)
        return 0;
    GPUIPC_CU_NOTE(first, err, cuCtxSynchronize);
    if (priv->opened)
        GPUIPC_CU_NOTE(first, err, cuIpcCloseMemHandle, priv->ptr);
    else
        GPUIPC_CU_NOTE(first, err, cuMemFree, priv->ptr);
    free(priv);
    memset(buf, 0, sizeof(*buf));
    return gpuipc_cudrv_errno(first);
}

const gpuipc_mech gpuipc_mech_legacy_ipc = {
    .name = NAME,
    .summary = "cuMemAlloc memory; cuIpcGetMemHandle sent in-band; cuIpcOpenMemHandle",
    .needs_cuda = 1,
    .by_default = 1,
    .cross_device = 1,
    .ipc_opened = 1,
    .probe = gpuipc_legacy_probe,
    .alloc = gpuipc_legacy_alloc,
    .export = gpuipc_legacy_export,
    .import = legacy_import,
    .release = gpuipc_legacy_release,
};
