/* SPDX-License-Identifier: Apache-2.0 */
/* views.h: the pattern kernels over a device's memory: the view of device
 * memory the roles fill and verify, the fills a mechanism launches itself,
 * the delay, and the checks after an allocation or an import. */
#ifndef GPUIPC_GPU_VIEWS_H
#define GPUIPC_GPU_VIEWS_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "gpu/cuda_api.h"
#include "session/mech.h"
#include "wire/msg.h"

typedef struct gpuipc_gpu gpuipc_gpu;

/* The view operations of device memory (GPU kernels), for a mechanism that
 * wraps some of them. */
extern const gpuipc_view_ops gpuipc_gpu_view_ops;

/* Launches the fill kernel over nwords at dptr (blocks: 0 for the device's
 * grid) without waiting for it; with reset, its count and digest start from
 * zero (a wait for earlier work), else they add to the last fill's; with
 * nwords 0, only the reset. Returns 0 or a negative errno. */
int gpuipc_gpu_fill_async(gpuipc_gpu *gpu, CUdeviceptr dptr, uint64_t nwords, uint64_t first,
                          uint64_t seed, unsigned blocks, int reset, gpuipc_err *err);

/* Keeps the GPU busy for about ns after the work launched so far, with
 * kernels that read the nwords at dptr and write only into its last 32
 * bytes (a fill after them must cover those): it times one, waits for it,
 * then launches as many more as make ns (*runs, at most 4096) without
 * waiting. For a test hook that needs a slow stream. */
int gpuipc_gpu_delay(gpuipc_gpu *gpu, CUdeviceptr dptr, uint64_t nwords, uint64_t ns,
                     unsigned *runs, gpuipc_err *err);

/* Waits for the fills launched since the last reset and reads what they
 * counted and summed into *wrote. */
int gpuipc_gpu_fill_result(gpuipc_gpu *gpu, gpuipc_written *wrote, gpuipc_err *err);

/* The verify of view v, launched after the event after on the GPU side
 * (cuStreamWaitEvent, no host wait), or at once if after is NULL. */
int gpuipc_gpu_verify_after(const gpuipc_view *v, CUevent after, uint64_t seed,
                            gpuipc_check *check, gpuipc_err *err);

/* Describes size bytes of device memory at dptr, whose first word has
 * pattern index first_word, as a view the roles fill and verify with the
 * GPU kernels. */
void gpuipc_gpu_view(gpuipc_gpu *gpu, CUdeviceptr dptr, uint64_t size, uint64_t first_word,
                     gpuipc_view *view);

/* Describes size bytes at dptr on gpu as buf: a device view (pattern index
 * 0 at dptr), the size and granularity, the mechanism's state priv, and the
 * detail line "<size> on GPU <n> <how>". */
void gpuipc_gpu_buf(gpuipc_gpu *gpu, CUdeviceptr dptr, uint64_t size, uint64_t granularity,
                    void *priv, const char *how, gpuipc_buf *buf);

/* After a call that failed with rc while allocating requested bytes on gpu:
 * if rc is CUDA_ERROR_OUT_OF_MEMORY, prefixes err with the requested and the
 * free sizes ("78.30 GiB requested, 78.15 GiB free: "). */
void gpuipc_gpu_note_oom(gpuipc_gpu *gpu, CUresult rc, uint64_t requested, gpuipc_err *err);

/* After an import that opens an allocation by its handle (call names it:
 * cuIpcOpenMemHandle, cuMemPoolImportPointer), whose handle names an
 * allocation but not its size: the range at ptr must hold the size the
 * offer claims. With strict, a cuMemGetAddressRange that fails is a
 * failure; without, only an answer that contradicts the offer is. Returns
 * 0, or -EPROTO (or the driver's errno) with err. */
int gpuipc_gpu_check_opened(CUdeviceptr ptr, uint64_t size, const char *call, int strict,
                            gpuipc_err *err);

#endif
