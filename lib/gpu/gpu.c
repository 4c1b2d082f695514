/* SPDX-License-Identifier: Apache-2.0 */
/* gpu.c: opening a device, its kernels, and device views for the roles. */
#include "gpu/gpu.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "gpu/cudrv.h"
#include "gpu/kernels.h"
#include "gpu/nvml.h"
#include "session/pattern.h"
#include "core/pcipath.h"
#include "core/clock.h"
#include "core/proc.h"
#include "core/units.h"
#include "core/watch.h"

int gpuipc_gpu_connections_set;

/* How long cuInit took in this process, for the open times. */
static uint64_t init_ns;

/* Devices open in this process, for gpuipc_gpu_process_bytes(), and each
 * of them, kept open until gpuipc_gpu_close_all: a run over several GPUs
 * switches between their contexts instead of opening one again. Under the
 * lock, since gpuipc_gpu_open_all opens them on threads of their own. */
static int open_count;
static struct gpuipc_gpu *opened[GPUIPC_GPU_OPEN_MAX];
static pthread_mutex_t opened_lock = PTHREAD_MUTEX_INITIALIZER;

struct gpuipc_gpu {
    CUdevice dev;
    int ordinal;
    CUcontext ctx;
    char name[128];
    uint8_t uuid[GPUIPC_UUID_LEN];
    gpuipc_kernels kernels;
    CUdeviceptr result; /* the kernels' result words */
    char self_test[320]; /* what the self-test proved */
    char open_times[256]; /* where the time to open it went */
};

void gpuipc_gpu_set_connections(void)
{
    /* One hardware work queue per context instead of the driver's eight:
     * this program runs one stream at a time, and on an H100 a context then
     * starts in about 90 ms instead of 200 (two processes at once) and is
     * released in 45 ms instead of 130. A value the user set is kept. This
     * runs before any thread exists, as setenv() must. */
    if (getenv(GPUIPC_GPU_CONNECTIONS_ENV) == NULL &&
        setenv(GPUIPC_GPU_CONNECTIONS_ENV, "1", 0) == 0)
        gpuipc_gpu_connections_set = 1;
}

int gpuipc_gpu_bare_context_hwm(int ordinal, uint64_t *hwm, gpuipc_err *err)
{
    CUcontext ctx;
    CUdevice dev;
    CUresult rc;
    int ret;

    gpuipc_gpu_set_connections();
    if ((ret = gpuipc_cudrv_load(err)) < 0)
        return ret;
    GPUIPC_CU_GOTO(rc, err, out, cuInit, 0);
    GPUIPC_CU_GOTO(rc, err, out, cuDeviceGet, &dev, ordinal);
    GPUIPC_CU_GOTO(rc, err, out, cuDevicePrimaryCtxRetain, &ctx, dev);
    GPUIPC_CU_GOTO(rc, err, out, cuCtxSetCurrent, ctx);
    *hwm = gpuipc_proc_hwm();
out:
    return gpuipc_cudrv_errno(rc);
}

int gpuipc_gpu_init(gpuipc_err *err)
{
    static int done;
    static int result;
    static gpuipc_err saved;
    CUresult rc;

    if (done) {
        if (result != 0 && err != NULL)
            *err = saved;
        return result;
    }
    done = 1;
    gpuipc_gpu_set_connections();
    result = gpuipc_cudrv_load(&saved);
    if (result == 0) {
        uint64_t t = gpuipc_clock_ns();

        gpuipc_nvml_start(); /* NVML loads on its own thread meanwhile */
        rc = GPUIPC_CU_CALL(cuInit, 0);
        init_ns = gpuipc_clock_ns() - t;
        if (rc == CUDA_ERROR_NO_DEVICE)
            result = gpuipc_err_set(&saved, -ENODEV, "no CUDA device: cuInit: "
                                    "CUDA_ERROR_NO_DEVICE (check nvidia-smi, "
                                    "CUDA_VISIBLE_DEVICES, and that the container was "
                                    "given the GPU)");
        else if (rc != CUDA_SUCCESS)
            result = gpuipc_cudrv_errno(gpuipc_cudrv_fail(&saved, "cuInit", rc, __FILE__,
                                                          __LINE__));
    }
    if (result != 0 && err != NULL)
        *err = saved;
    return result;
}

int gpuipc_gpu_count(int *count, gpuipc_err *err)
{
    CUresult rc;
    int ret;

    if ((ret = gpuipc_gpu_init(err)) < 0)
        return ret;
    rc = GPUIPC_CU_CALL(cuDeviceGetCount, count);
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceGetCount", rc, __FILE__,
                                                    __LINE__));
    return 0;
}

/* Launches fill (verify: 0) or verify (1) over nwords at dptr with blocks
 * (0: the device's grid), after the event after (if not NULL) on the GPU
 * side only, waits, and reads the result words into r. */
static int run_kernel_after(gpuipc_gpu *gpu, int verify, CUdeviceptr dptr, uint64_t nwords,
                            uint64_t first, uint64_t seed, unsigned blocks, CUevent after,
                            uint64_t r[GPUIPC_KERNELS_RESULT_WORDS], gpuipc_err *err)
{
    uint64_t fresh[GPUIPC_KERNELS_RESULT_WORDS] = {0, UINT64_MAX, 0, 0};
    CUresult rc;

    /* The result words are reset before the wait, so that the host waits
     * for nothing but its own kernel at the end. */
    GPUIPC_CU_GOTO(rc, err, out, cuMemcpyHtoD, gpu->result, fresh, sizeof(fresh));
    if (after != NULL)
        GPUIPC_CU_GOTO(rc, err, out, cuStreamWaitEvent, NULL, after, 0);
    rc = verify ? gpuipc_kernels_verify(&gpu->kernels, dptr, nwords, first, seed, gpu->result,
                                        blocks, err)
                : gpuipc_kernels_fill(&gpu->kernels, dptr, nwords, first, seed, gpu->result,
                                      blocks, err);
    if (rc != CUDA_SUCCESS)
        goto out;
    GPUIPC_CU_GOTO(rc, err, out, cuCtxSynchronize);
    GPUIPC_CU_GOTO(rc, err, out, cuMemcpyDtoH, r, gpu->result, sizeof(fresh));
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
    uint64_t fresh[GPUIPC_KERNELS_RESULT_WORDS] = {0, UINT64_MAX, 0, 0};
    CUresult rc = CUDA_SUCCESS;

    if (reset)
        GPUIPC_CU_GOTO(rc, err, out, cuMemcpyHtoD, gpu->result, fresh, sizeof(fresh));
    if (nwords == 0)
        goto out; /* the reset alone */
    rc = gpuipc_kernels_fill(&gpu->kernels, dptr, nwords, first, seed, gpu->result, blocks, err);
out:
    return gpuipc_cudrv_errno(rc);
}

/* The delay is the verify kernel on one block, reading the memory and
 * writing only its own result words into the last 32 bytes of it, which
 * the fill that follows overwrites. */
static CUresult delay_once(gpuipc_gpu *gpu, CUdeviceptr dptr, uint64_t nwords, gpuipc_err *err)
{
    return gpuipc_kernels_verify(&gpu->kernels, dptr, nwords - GPUIPC_KERNELS_RESULT_WORDS, 0, 0,
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
    GPUIPC_CU_GOTO(rc, err, out, cuMemcpyDtoH, r, gpu->result, sizeof(r));
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
    const uint64_t first = 1000003, seed = 0x0123456789abcdefull;
    uint64_t r[GPUIPC_KERNELS_RESULT_WORDS], digest, i;
    char what[96];
    gpuipc_check check;
    CUresult rc;
    int ret;

    snprintf(what, sizeof(what), "%llu words on %u block%s of %u threads",
             (unsigned long long)nwords, blocks ? blocks : gpu->kernels.max_blocks,
             blocks == 1 ? "" : "s", gpu->kernels.threads);
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
static int self_test(gpuipc_gpu *gpu, gpuipc_err *err)
{
    const unsigned small = 2;
    const uint64_t reach = (uint64_t)small * gpu->kernels.threads * 2; /* words per round */
    const uint64_t n1 = 5 * reach + 2 * 37;
    const uint64_t plant1[] = {0, 3 * reach + 5, n1 - 1};
    const uint64_t full = (uint64_t)gpu->kernels.max_blocks * gpu->kernels.threads * 2;
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
    snprintf(gpu->self_test, sizeof(gpu->self_test), "self-test: %llu words on %u blocks of %u "
             "threads (%.2f rounds of the loop) and %llu words on the device's %u blocks "
             "(%.2f rounds): every word written and read, planted wrong words found at their "
             "indexes; digests and word counts match the CPU's", (unsigned long long)n1, small,
             gpu->kernels.threads, (double)n1 / (double)reach, (unsigned long long)n2,
             gpu->kernels.max_blocks, (double)n2 / (double)full);
out:
    free(host);
    if (ret != 0 && err != NULL && strncmp(err->msg, "self-test", 9) != 0)
        gpuipc_err_prefix(err, "self-test");
    return ret;
}

/* Counts gpu as open and keeps it in the table of open devices. */
static void keep_open(gpuipc_gpu *gpu)
{
    int i;

    pthread_mutex_lock(&opened_lock);
    open_count++;
    for (i = 0; i < GPUIPC_GPU_OPEN_MAX; i++)
        if (opened[i] == NULL) {
            opened[i] = gpu;
            break;
        }
    pthread_mutex_unlock(&opened_lock);
}

static int open_device(gpuipc_gpu **out, CUdevice dev, int ordinal, gpuipc_err *err)
{
    uint64_t t[4], hwm_ctx;
    gpuipc_gpu *gpu;
    CUuuid uuid;
    CUresult rc;
    int sms = 0;

    gpu = calloc(1, sizeof(*gpu));
    if (gpu == NULL)
        return gpuipc_err_set(err, -ENOMEM, "out of memory");
    gpu->dev = dev;
    gpu->ordinal = ordinal;
    GPUIPC_CU_GOTO(rc, err, out_free, cuDeviceGetName, gpu->name, (int)sizeof(gpu->name), dev);
    GPUIPC_CU_GOTO(rc, err, out_free, cuDeviceGetUuid, &uuid, dev);
    memcpy(gpu->uuid, uuid.bytes, GPUIPC_UUID_LEN);
    GPUIPC_CU_GOTO(rc, err, out_free, cuDeviceGetAttribute, &sms,
                   CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    t[0] = gpuipc_clock_ns();
    GPUIPC_CU_GOTO(rc, err, out_free, cuDevicePrimaryCtxRetain, &gpu->ctx, dev);
    GPUIPC_CU_GOTO(rc, err, out_release, cuCtxSetCurrent, gpu->ctx);
    t[1] = gpuipc_clock_ns();
    hwm_ctx = gpuipc_proc_hwm();
    if (gpuipc_kernels_load(&gpu->kernels, sms, err) != CUDA_SUCCESS) {
        rc = CUDA_ERROR_INVALID_PTX;
        goto out_release;
    }
    GPUIPC_CU_GOTO(rc, err, out_unload, cuMemAlloc, &gpu->result,
                   GPUIPC_KERNELS_RESULT_WORDS * sizeof(uint64_t));
    t[2] = gpuipc_clock_ns();
    if (self_test(gpu, err) != 0) {
        rc = CUDA_ERROR_UNKNOWN;
        goto out_result;
    }
    t[3] = gpuipc_clock_ns();
    snprintf(gpu->open_times, sizeof(gpu->open_times), "cuInit %.1f ms (once per process), "
             "primary context %.1f ms, kernels loaded %.1f ms, self-test %.1f ms; peak RSS "
             "%.1f MiB with the context, %.1f MiB after the kernels and the self-test",
             (double)init_ns / 1e6, (double)(t[1] - t[0]) / 1e6, (double)(t[2] - t[1]) / 1e6,
             (double)(t[3] - t[2]) / 1e6, (double)hwm_ctx / 1048576.0,
             (double)gpuipc_proc_hwm() / 1048576.0);
    *out = gpu;
    keep_open(gpu);
    return 0;

out_result:
    GPUIPC_CU_CALL(cuMemFree, gpu->result);
out_unload:
    gpuipc_kernels_unload(&gpu->kernels);
out_release:
    GPUIPC_CU_CALL(cuDevicePrimaryCtxRelease, dev);
out_free:
    free(gpu);
    if (rc == CUDA_ERROR_OPERATING_SYSTEM && err != NULL) {
        struct rlimit rl;

        /* The driver opens files of its own for a context (seen with
         * ulimit -n 40 on a machine of two GPUs). */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            rl.rlim_cur < 1024) {
            size_t used = strlen(err->msg);

            snprintf(err->msg + used, sizeof(err->msg) - used, " (RLIMIT_NOFILE is %llu: the "
                     "driver needs FDs of its own for a context; ulimit -n 1024 or more)",
                     (unsigned long long)rl.rlim_cur);
        }
    }
    gpuipc_err_prefix(err, "opening GPU %d", ordinal);
    return rc == CUDA_ERROR_UNKNOWN ? -EIO : gpuipc_cudrv_errno(rc);
}

int gpuipc_gpu_open(gpuipc_gpu **out, int ordinal, gpuipc_err *err)
{
    CUdevice dev;
    CUresult rc;
    int n, ret;

    if ((ret = gpuipc_gpu_count(&n, err)) < 0)
        return ret;
    if (ordinal < 0 || ordinal >= n)
        return gpuipc_err_set(err, -ENODEV, "no GPU %d: %d visible (ordinals 0 to %d)",
                              ordinal, n, n - 1);
    rc = GPUIPC_CU_CALL(cuDeviceGet, &dev, ordinal);
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceGet", rc, __FILE__,
                                                    __LINE__));
    return open_device(out, dev, ordinal, err);
}

int gpuipc_gpu_find_uuid(const uint8_t uuid[GPUIPC_UUID_LEN], int *ordinal, gpuipc_err *err)
{
    char text[48];
    CUdevice dev;
    CUuuid u;
    CUresult rc;
    int n, i, ret;

    if ((ret = gpuipc_gpu_count(&n, err)) < 0)
        return ret;
    for (i = 0; i < n; i++) {
        rc = GPUIPC_CU_CALL(cuDeviceGet, &dev, i);
        if (rc == CUDA_SUCCESS)
            rc = GPUIPC_CU_CALL(cuDeviceGetUuid, &u, dev);
        if (rc != CUDA_SUCCESS)
            return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceGetUuid", rc, __FILE__,
                                                        __LINE__));
        if (memcmp(u.bytes, uuid, GPUIPC_UUID_LEN) == 0) {
            *ordinal = i;
            return 0;
        }
    }
    /* As data: no device here has the UUID (ENODEV, from the UUID lookup). */
    return gpuipc_err_sys(err, "cuDeviceGetUuid", ENODEV, "none of the %d GPUs this process "
                          "sees is %s, the producer's (check CUDA_VISIBLE_DEVICES and the "
                          "container's device list: both processes must see it)",
                          n, gpuipc_units_format_uuid(uuid, text, sizeof(text)));
}

void gpuipc_gpu_describe_ordinal(int ordinal, char *name, size_t nlen, char *bus, size_t blen)
{
    CUdevice dev;

    name[0] = bus[0] = '\0';
    if (GPUIPC_CU_CALL(cuDeviceGet, &dev, ordinal) != CUDA_SUCCESS)
        return;
    if (GPUIPC_CU_CALL(cuDeviceGetName, name, (int)nlen, dev) != CUDA_SUCCESS)
        name[0] = '\0';
    if (GPUIPC_CU_CALL(cuDeviceGetPCIBusId, bus, (int)blen, dev) != CUDA_SUCCESS)
        bus[0] = '\0';
}

int gpuipc_gpu_compute_mode(int ordinal)
{
    CUdevice dev;
    int mode = -1;

    if (GPUIPC_CU_CALL(cuDeviceGet, &dev, ordinal) != CUDA_SUCCESS ||
        GPUIPC_CU_CALL(cuDeviceGetAttribute, &mode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, dev) !=
            CUDA_SUCCESS)
        return -1;
    return mode;
}

int gpuipc_gpu_uuid_of(int ordinal, uint8_t uuid[GPUIPC_UUID_LEN], gpuipc_err *err)
{
    CUdevice dev;
    CUuuid u;
    CUresult rc;
    int ret;

    if ((ret = gpuipc_gpu_init(err)) < 0)
        return ret;
    rc = GPUIPC_CU_CALL(cuDeviceGet, &dev, ordinal);
    if (rc == CUDA_SUCCESS)
        rc = GPUIPC_CU_CALL(cuDeviceGetUuid, &u, dev);
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceGetUuid", rc, __FILE__,
                                                    __LINE__));
    memcpy(uuid, u.bytes, GPUIPC_UUID_LEN);
    return 0;
}

int gpuipc_gpu_open_uuid(gpuipc_gpu **out, const uint8_t uuid[GPUIPC_UUID_LEN],
                         gpuipc_err *err)
{
    CUdevice dev;
    CUresult rc;
    int ordinal, ret;

    if ((ret = gpuipc_gpu_find_uuid(uuid, &ordinal, err)) < 0)
        return ret;
    rc = GPUIPC_CU_CALL(cuDeviceGet, &dev, ordinal);
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceGet", rc, __FILE__,
                                                    __LINE__));
    return open_device(out, dev, ordinal, err);
}

int gpuipc_gpu_check_offer(const gpuipc_scenario *sc, const uint8_t uuid[GPUIPC_UUID_LEN],
                           gpuipc_err *err)
{
    char text[48];

    if (memcmp(uuid, sc->home_uuid, GPUIPC_UUID_LEN) == 0)
        return 0;
    return gpuipc_err_set(err, -EPROTO, "the offer names device %s, BEGIN named another",
                          gpuipc_units_format_uuid(uuid, text, sizeof(text)));
}

int gpuipc_gpu_peer_check(gpuipc_scenario *sc, gpuipc_err *err)
{
    char home[48];
    CUdevice dev;
    CUresult rc;
    int ret, can = 0;

    if (sc->env->gpu == NULL)
        return gpuipc_err_set(err, -ENODEV, "no GPU is open");
    if (memcmp(sc->home_uuid, sc->uuid, GPUIPC_UUID_LEN) == 0) {
        sc->home_ordinal = gpuipc_gpu_ordinal(sc->env->gpu);
        return 0;
    }
    if ((ret = gpuipc_gpu_find_uuid(sc->home_uuid, &sc->home_ordinal, err)) < 0)
        return ret;
    rc = GPUIPC_CU_CALL(cuDeviceGet, &dev, sc->home_ordinal);
    if (rc == CUDA_SUCCESS)
        rc = GPUIPC_CU_CALL(cuDeviceCanAccessPeer, &can, gpuipc_gpu_device(sc->env->gpu), dev);
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceCanAccessPeer", rc,
                                                    __FILE__, __LINE__));
    if (!can)
        return gpuipc_err_set(err, -ENOTSUP, "cuDeviceCanAccessPeer: GPU %d (%s) cannot access "
                              "the memory of GPU %d (%s): no peer path between them (NVLink, "
                              "or PCIe P2P, which IOMMU and ACS settings can disable)",
                              gpuipc_gpu_ordinal(sc->env->gpu), gpuipc_gpu_name(sc->env->gpu),
                              sc->home_ordinal,
                              gpuipc_units_format_uuid(sc->home_uuid, home, sizeof(home)));
    return 0;
}

void gpuipc_gpu_close(gpuipc_gpu *gpu)
{
    int i;

    if (gpu == NULL)
        return;
    pthread_mutex_lock(&opened_lock);
    for (i = 0; i < GPUIPC_GPU_OPEN_MAX; i++)
        if (opened[i] == gpu)
            opened[i] = NULL;
    open_count--;
    pthread_mutex_unlock(&opened_lock);
    GPUIPC_CU_CALL(cuCtxSetCurrent, gpu->ctx);
    GPUIPC_CU_CALL(cuCtxSynchronize, );
    GPUIPC_CU_CALL(cuMemFree, gpu->result);
    gpuipc_kernels_unload(&gpu->kernels);
    GPUIPC_CU_CALL(cuCtxSetCurrent, NULL);
    GPUIPC_CU_CALL(cuDevicePrimaryCtxRelease, gpu->dev);
    free(gpu);
}

static void *close_one(void *gpu)
{
    gpuipc_watch_quiet(); /* the run's thread says what this one does */
    gpuipc_gpu_close(gpu);
    return NULL;
}

void gpuipc_gpu_close_all(void)
{
    gpuipc_gpu *gpus[GPUIPC_GPU_OPEN_MAX];
    pthread_t threads[GPUIPC_GPU_OPEN_MAX];
    int started[GPUIPC_GPU_OPEN_MAX];
    sigset_t all, old;
    int i, n = 0;

    pthread_mutex_lock(&opened_lock);
    for (i = 0; i < GPUIPC_GPU_OPEN_MAX; i++)
        if (opened[i] != NULL)
            gpus[n++] = opened[i];
    pthread_mutex_unlock(&opened_lock);
    /* Each context ends on a thread of its own, together (a release takes
     * tens of ms); the last here. The threads take no signal. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (i = 0; i + 1 < n; i++)
        started[i] = pthread_create(&threads[i], NULL, close_one, gpus[i]) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (n > 0)
        gpuipc_gpu_close(gpus[n - 1]);
    gpuipc_watch_call("cuDevicePrimaryCtxRelease (the GPUs' threads)");
    for (i = 0; i + 1 < n; i++) {
        if (started[i])
            pthread_join(threads[i], NULL);
        else
            gpuipc_gpu_close(gpus[i]);
    }
    gpuipc_watch_call(NULL);
}

/* The open device with uuid, or NULL. */
static gpuipc_gpu *find_open(const uint8_t uuid[GPUIPC_UUID_LEN])
{
    gpuipc_gpu *found = NULL;
    int i;

    pthread_mutex_lock(&opened_lock);
    for (i = 0; i < GPUIPC_GPU_OPEN_MAX && found == NULL; i++)
        if (opened[i] != NULL && memcmp(opened[i]->uuid, uuid, GPUIPC_UUID_LEN) == 0)
            found = opened[i];
    pthread_mutex_unlock(&opened_lock);
    return found;
}

/* One device of gpuipc_gpu_open_all, on a thread of its own. */
typedef struct opener {
    int ordinal;
    pthread_t thread;
    int started, rc;
    int on_thread; /* set before the thread starts: it is a helper */
    gpuipc_err err;
} opener;

static void *open_one(void *arg)
{
    opener *op = arg;
    gpuipc_gpu *gpu;

    if (op->on_thread)
        gpuipc_watch_quiet(); /* the run's thread says what this one does */
    op->rc = gpuipc_gpu_open(&gpu, op->ordinal, &op->err);
    /* The context was this thread's current one; it goes with the thread. */
    if (op->rc == 0)
        GPUIPC_CU_CALL(cuCtxSetCurrent, NULL);
    return NULL;
}

int gpuipc_gpu_open_all(const int *ordinals, size_t n, gpuipc_err *err)
{
    opener *ops = calloc(n ? n : 1, sizeof(*ops));
    sigset_t all, old;
    size_t i;
    int rc = 0;

    if (ops == NULL)
        return gpuipc_err_set(err, -ENOMEM, "opening %zu GPUs: out of memory", n);
    /* The threads take no signal: the process's handlers run elsewhere. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (i = 0; i < n; i++) {
        uint8_t uuid[GPUIPC_UUID_LEN];

        ops[i].ordinal = ordinals[i];
        if (gpuipc_gpu_uuid_of(ordinals[i], uuid, &ops[i].err) == 0 && find_open(uuid) != NULL)
            continue; /* open already */
        ops[i].on_thread = 1;
        ops[i].started = pthread_create(&ops[i].thread, NULL, open_one, &ops[i]) == 0;
        if (!ops[i].started) { /* no thread: here, one after the other */
            ops[i].on_thread = 0;
            open_one(&ops[i]);
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* Where the helpers are, for the watchdog: the call that starts a
     * context (the one a GPU that does not answer holds up). */
    gpuipc_watch_call("cuDevicePrimaryCtxRetain (the GPUs' threads)");
    for (i = 0; i < n; i++) {
        if (ops[i].started)
            pthread_join(ops[i].thread, NULL);
        if (ops[i].rc < 0 && rc == 0) {
            rc = ops[i].rc;
            if (err != NULL)
                *err = ops[i].err;
        }
    }
    gpuipc_watch_call(NULL);
    free(ops);
    return rc;
}

int gpuipc_gpu_process_bytes(uint64_t *bytes, gpuipc_err *why)
{
    if (open_count == 0)
        return gpuipc_err_set(why, -ENOTSUP, "this process has no GPU open");
    return gpuipc_nvml_process_bytes(bytes, why);
}

int gpuipc_gpu_attach_uuid(gpuipc_env *env, const uint8_t uuid[GPUIPC_UUID_LEN],
                           gpuipc_err *err)
{
    gpuipc_gpu *gpu;
    int rc;

    if (env->gpu != NULL && memcmp(env->gpu->uuid, uuid, GPUIPC_UUID_LEN) == 0)
        return 0;
    if ((rc = gpuipc_gpu_init(err)) < 0)
        return rc;
    /* A device opened before stays open (gpuipc_gpu_close_all ends them):
     * switching to it costs a cuCtxSetCurrent, not a context. */
    if ((gpu = find_open(uuid)) == NULL && (rc = gpuipc_gpu_open_uuid(&gpu, uuid, err)) < 0)
        return rc;
    env->gpu = gpu;
    GPUIPC_CU_CALL(cuCtxSetCurrent, gpu->ctx);
    return 0;
}

int gpuipc_gpu_attach(gpuipc_scenario *sc, gpuipc_err *err)
{
    return gpuipc_gpu_attach_uuid(sc->env, sc->uuid, err);
}

int gpuipc_gpu_point(gpuipc_env *env, int a, int b, uint8_t uuid[GPUIPC_UUID_LEN],
                     uint8_t peer_uuid[GPUIPC_UUID_LEN], gpuipc_err *err)
{
    int rc;

    memset(peer_uuid, 0, GPUIPC_UUID_LEN);
    if ((rc = gpuipc_gpu_uuid_of(a, uuid, err)) < 0 ||
        (rc = gpuipc_gpu_attach_uuid(env, uuid, err)) < 0)
        return rc;
    if (b != a && (rc = gpuipc_gpu_uuid_of(b, peer_uuid, err)) < 0)
        return rc;
    return 0;
}

CUdevice gpuipc_gpu_device(const gpuipc_gpu *gpu)
{
    return gpu->dev;
}

int gpuipc_gpu_ordinal(const gpuipc_gpu *gpu)
{
    return gpu->ordinal;
}

const char *gpuipc_gpu_self_test(const gpuipc_gpu *gpu)
{
    return gpu->self_test;
}

const char *gpuipc_gpu_open_times(const gpuipc_gpu *gpu)
{
    return gpu->open_times;
}

const char *gpuipc_gpu_name(const gpuipc_gpu *gpu)
{
    return gpu->name;
}

const uint8_t *gpuipc_gpu_uuid(const gpuipc_gpu *gpu)
{
    return gpu->uuid;
}

const gpuipc_kernels *gpuipc_gpu_kernels(const gpuipc_gpu *gpu)
{
    return &gpu->kernels;
}

CUdeviceptr gpuipc_gpu_result(const gpuipc_gpu *gpu)
{
    return gpu->result;
}

CUresult gpuipc_gpu_attr(const gpuipc_gpu *gpu, CUdevice_attribute attr, int *value,
                         gpuipc_err *err)
{
    CUresult rc;

    GPUIPC_CU_GOTO(rc, err, out, cuDeviceGetAttribute, value, attr, gpu->dev);
out:
    return rc;
}

CUresult gpuipc_gpu_mem_info(const gpuipc_gpu *gpu, uint64_t *free_bytes, uint64_t *total,
                             gpuipc_err *err)
{
    size_t f = 0, t = 0;
    CUresult rc;

    (void)gpu; /* cuMemGetInfo reads the current context's device */
    GPUIPC_CU_GOTO(rc, err, out, cuMemGetInfo, &f, &t);
    *free_bytes = f;
    *total = t;
out:
    return rc;
}

CUresult gpuipc_gpu_sync(const gpuipc_gpu *gpu, gpuipc_err *err)
{
    CUresult rc;

    (void)gpu;
    GPUIPC_CU_GOTO(rc, err, out, cuCtxSynchronize);
out:
    return rc;
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
             gpuipc_units_format_size(size, human, sizeof(human)), gpu->ordinal, how);
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

void gpuipc_gpu_link_describe(int a, int b, char *buf, size_t len)
{
    uint8_t ua[GPUIPC_UUID_LEN], ub[GPUIPC_UUID_LEN];
    int access = -1, atomics = -1, rank = -1;
    CUdevice da, db;
    gpuipc_err why;
    size_t used;

    buf[0] = '\0';
    if (gpuipc_gpu_uuid_of(a, ua, &why) < 0 || gpuipc_gpu_uuid_of(b, ub, &why) < 0) {
        snprintf(buf, len, "not known: %.300s", why.msg);
        return;
    }
    if (gpuipc_nvml_link(ua, ub, buf, len, &why) < 0)
        snprintf(buf, len, "NVML cannot say (%.300s)", why.msg);
    used = strlen(buf);
    if (GPUIPC_CU_CALL(cuDeviceGet, &da, a) != CUDA_SUCCESS ||
        GPUIPC_CU_CALL(cuDeviceGet, &db, b) != CUDA_SUCCESS || used >= len)
        return;
    GPUIPC_CU_CALL(cuDeviceGetP2PAttribute, &access, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, da, db);
    GPUIPC_CU_CALL(cuDeviceGetP2PAttribute, &atomics, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
                                      da, db);
    GPUIPC_CU_CALL(cuDeviceGetP2PAttribute, &rank, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, da, db);
    used += (size_t)snprintf(buf + used, len - used, "; the driver: peer access %s, native "
                             "atomics %s, performance rank %d", access < 0 ? "?" : access ? "yes"
                             : "no", atomics < 0 ? "?" : atomics ? "yes" : "no", rank);
    /* Over PCIe, what the host puts in the way of peer traffic. */
    if (strncmp(buf, "NVLink", 6) != 0 && used < len) {
        char bus[2][32], path[768];
        CUdevice d[2] = {da, db};
        int k;

        for (k = 0; k < 2; k++) {
            bus[k][0] = '\0';
            GPUIPC_CU_CALL(cuDeviceGetPCIBusId, bus[k], (int)sizeof(bus[k]), d[k]);
        }
        gpuipc_pci_pair_describe(bus[0], bus[1], path, sizeof(path));
        snprintf(buf + used, len - used, "; PCIe path: %s", path);
    }
}

int gpuipc_gpu_peer_claimed(int a, int b)
{
    CUdevice da, db;
    int access = -1;

    if (GPUIPC_CU_CALL(cuDeviceGet, &da, a) != CUDA_SUCCESS ||
        GPUIPC_CU_CALL(cuDeviceGet, &db, b) != CUDA_SUCCESS ||
        GPUIPC_CU_CALL(cuDeviceGetP2PAttribute, &access,
                       CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, da, db) != CUDA_SUCCESS)
        return -1;
    return access != 0;
}
