/* SPDX-License-Identifier: Apache-2.0 */
/* gpu.h: one CUDA device as a role uses it: its retained primary context, its
 * identity and its kernels. The driver started once and the devices seen
 * without a context are in gpu/devices.h, views of device memory for the
 * roles in gpu/views.h; this header includes both, for its callers. */
#ifndef GPUIPC_GPU_H
#define GPUIPC_GPU_H

#include <stdint.h>

#include "gpu/cuda_api.h"
#include "gpu/devices.h"
#include "gpu/views.h"
#include "session/env.h"
#include "session/scenario.h"
#include "core/err.h"
#include "session/mech.h"

typedef struct gpuipc_gpu gpuipc_gpu;

/* The most GPUs whose contexts the floor times one by one; beyond them,
 * each GPU's time counts in the sum only. */
#define GPUIPC_GPU_FLOOR_GPUS 64

/* What a bare CUDA process pays before it can run anything on every GPU
 * (--bench's floor), each step timed on CLOCK_MONOTONIC, and the driver's
 * own share of a process's resident memory. */
typedef struct gpuipc_gpu_floor {
    uint64_t init_ns;    /* cuInit, with every GPU this process sees */
    int ngpus;           /* the GPUs the driver shows; 0 until every context was timed */
    uint64_t ctx_ns[GPUIPC_GPU_FLOOR_GPUS]; /* by ordinal: its primary context retained
                                             * and made current */
    uint64_t ctx_sum_ns; /* every GPU's context, together */
    uint64_t hwm;        /* peak RSS with cuInit and the first GPU's context alone;
                          * 0 if that was not reached */
} gpuipc_gpu_floor;

/* For --bench, in a process forked for it alone before any CUDA call: does
 * what a bare CUDA program does (cuInit, with this program's
 * CUDA_DEVICE_MAX_CONNECTIONS) and nothing else, then retains each GPU's
 * primary context and makes it current, one after the other (GPU ordinal
 * first, whose peak RSS is then taken: the driver's own share of every
 * process here; then the others in order), and releases them all, on every
 * path. Fills *f (zeroed first). Returns 0, or a negative errno with err
 * naming the GPU and the call (f->hwm may be set even so). */
int gpuipc_gpu_bare_floor(int ordinal, gpuipc_gpu_floor *f, gpuipc_err *err);

/* Opens device ordinal: retains its primary context and makes it current,
 * loads the kernels and checks them against the CPU pattern. On success the
 * caller owns *out and closes it with gpuipc_gpu_close(). Returns 0 or a
 * negative errno with the reason. */
int gpuipc_gpu_open(gpuipc_gpu **out, int ordinal, gpuipc_err *err);

/* Opens the visible device whose UUID is uuid, as gpuipc_gpu_open() does.
 * Returns -ENODEV if no visible device has it. */
int gpuipc_gpu_open_uuid(gpuipc_gpu **out, const uint8_t uuid[GPUIPC_UUID_LEN],
                         gpuipc_err *err);

/* The most devices one process keeps open: as many as a device list may
 * name (run/plan.h's GPUIPC_PLAN_DEVICES_MAX). */
#define GPUIPC_GPU_OPEN_MAX 1024

/* Waits for the device, frees what the handle allocated and releases the
 * primary context. NULL is allowed. */
void gpuipc_gpu_close(gpuipc_gpu *gpu);

/* Closes every device this process opened (each opened device is kept,
 * and gpuipc_gpu_attach_uuid switches between them), each on a thread of
 * its own, so that their contexts end together. */
void gpuipc_gpu_close_all(void);

/* While on, gpuipc_gpu_close_all leaves every device open: --ranks keeps
 * its GPU's context from its first phase to its last, where each session
 * would end it. Off again, the next gpuipc_gpu_close_all ends them. */
void gpuipc_gpu_hold(int on);

/* Opens the devices at ordinals[0..n) that are not open yet, each on a
 * thread of its own, so that their contexts start together rather than one
 * after the other; they are then kept (gpuipc_gpu_attach_uuid switches to
 * them). No device is made current in this thread. Returns 0, or the first
 * failure's negative errno with err (the devices that opened stay open). */
int gpuipc_gpu_open_all(const int *ordinals, size_t n, gpuipc_err *err);

/* Makes sure env->gpu is the device named by uuid, opening it (and closing
 * another) if needed. For the consumer, whose device is named by the
 * producer. Returns 0 or a negative errno. */
int gpuipc_gpu_attach_uuid(gpuipc_env *env, const uint8_t uuid[GPUIPC_UUID_LEN],
                           gpuipc_err *err);

/* The same for the scenario's device, sc->uuid. */
int gpuipc_gpu_attach(gpuipc_scenario *sc, gpuipc_err *err);

/* Consumer, once sc->env->gpu is its device: finds the device that holds
 * the memory (sc->home_uuid) by UUID, sets sc->home_ordinal, and where that
 * is another device, checks with cuDeviceCanAccessPeer that this one can
 * reach its memory. Returns 0, -ENOTSUP with why (no peer path), or an
 * errno. */
int gpuipc_gpu_peer_check(gpuipc_scenario *sc, gpuipc_err *err);

/* Producer: makes GPU a this side's device (opened if need be), its UUID in
 * uuid, and names GPU b as the consumer's in peer_uuid (all zero when b ==
 * a: the consumer then uses a too). Returns 0 or a negative errno with
 * why. */
int gpuipc_gpu_point(gpuipc_env *env, int a, int b, uint8_t uuid[GPUIPC_UUID_LEN],
                     uint8_t peer_uuid[GPUIPC_UUID_LEN], gpuipc_err *err);

/* env->gpu_bytes for a program with CUDA support: the GPU memory NVML
 * attributes to this process, or -ENOTSUP with why where it cannot say (no
 * device open here yet, no NVML, another PID namespace: nvml.h). */
int gpuipc_gpu_process_bytes(uint64_t *bytes, gpuipc_err *why);

CUdevice gpuipc_gpu_device(const gpuipc_gpu *gpu);
int gpuipc_gpu_ordinal(const gpuipc_gpu *gpu);
const char *gpuipc_gpu_name(const gpuipc_gpu *gpu);

/* What the kernels' self-test at open proved, in one line. */
const char *gpuipc_gpu_self_test(const gpuipc_gpu *gpu);

/* Where the time to open gpu went, and the memory: "cuInit 118.2 ms (once
 * per process), primary context 91.0 ms, kernels loaded 12.0 ms, self-test
 * 9.1 ms; peak RSS 57.8 MiB with the context, 60.1 MiB after the kernels
 * and the self-test". */
const char *gpuipc_gpu_open_times(const gpuipc_gpu *gpu);
const uint8_t *gpuipc_gpu_uuid(const gpuipc_gpu *gpu);

/* The device's loaded kernels, and verify's two counters (device memory),
 * for code that launches the kernels itself (bandwidth.c). */
struct gpuipc_kernels;
const struct gpuipc_kernels *gpuipc_gpu_kernels(const gpuipc_gpu *gpu);
CUdeviceptr gpuipc_gpu_result(const gpuipc_gpu *gpu);

/* Each device has GPUIPC_GPU_RESULT_SLOTS sets of result words; the calling
 * thread's kernels use slot's from now (0, every thread's at first). A
 * rank's two sessions of a phase run on threads of their own on one GPU,
 * and each reads back what its own kernels wrote. */
#define GPUIPC_GPU_RESULT_SLOTS 2
void gpuipc_gpu_result_slot(unsigned slot);

/* Reads a device attribute into *value. Returns the CUresult, recorded in err. */
CUresult gpuipc_gpu_attr(const gpuipc_gpu *gpu, CUdevice_attribute attr, int *value,
                         gpuipc_err *err);

/* Reads the free and total memory of the device. Returns CUresult. */
CUresult gpuipc_gpu_mem_info(const gpuipc_gpu *gpu, uint64_t *free_bytes, uint64_t *total,
                             gpuipc_err *err);

/* Waits for all work in the context. Returns the CUresult, recorded in err. */
CUresult gpuipc_gpu_sync(const gpuipc_gpu *gpu, gpuipc_err *err);

#endif
