/* gpu.c: opening a device, its kernels, and device views for the roles. */
#include "gpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudrv.h"
#include "kernels.h"
#include "pattern.h"
#include "units.h"

struct gpuipc_gpu {
    CUdevice dev;
    int ordinal;
    CUcontext ctx;
    char name[128];
    uint8_t uuid[GPUIPC_UUID_LEN];
    gpuipc_kernels kernels;
    CUdeviceptr result; /* verify's two counters */
};

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
    result = gpuipc_cudrv_load(&saved);
    if (result == 0) {
        rc = gpuipc_cu.cuInit(0);
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
    rc = gpuipc_cu.cuDeviceGetCount(count);
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceGetCount", rc, __FILE__,
                                                    __LINE__));
    return 0;
}

/* Proves on this device, before any scenario, that the kernels compute the
 * same pattern as the CPU and that verify reports a planted error at the
 * right index: a GPU or JIT problem then shows up as itself, not as a
 * sharing failure. */
static int self_test(gpuipc_gpu *gpu, gpuipc_err *err)
{
    enum { WORDS = 4096, PLANT = 1234 };
    const uint64_t first = 1000003, seed = 0x0123456789abcdefull;
    uint64_t *host = malloc(WORDS * sizeof(uint64_t));
    uint64_t counters[2] = {0, UINT64_MAX};
    CUdeviceptr scratch = 0;
    gpuipc_check check;
    CUresult rc;
    int ret = -EIO;

    if (host == NULL)
        return gpuipc_err_set(err, -ENOMEM, "self-test: out of memory");
    GPUIPC_CU_GOTO(rc, err, out, cuMemAlloc, &scratch, WORDS * sizeof(uint64_t));
    if (gpuipc_kernels_fill(&gpu->kernels, scratch, WORDS, first, seed, err) != CUDA_SUCCESS)
        goto out_free;
    GPUIPC_CU_GOTO(rc, err, out_free, cuCtxSynchronize);
    GPUIPC_CU_GOTO(rc, err, out_free, cuMemcpyDtoH, host, scratch, WORDS * sizeof(uint64_t));
    if (gpuipc_pattern_verify(host, WORDS, first, seed, &check) != 0) {
        char text[256];

        gpuipc_err_set(err, -EIO, "self-test: the GPU fill kernel disagrees with the CPU "
                       "pattern: %s", gpuipc_pattern_describe(&check, first, text, sizeof(text)));
        goto out_free;
    }
    host[PLANT] ^= 1;
    GPUIPC_CU_GOTO(rc, err, out_free, cuMemcpyHtoD, scratch, host, WORDS * sizeof(uint64_t));
    GPUIPC_CU_GOTO(rc, err, out_free, cuMemcpyHtoD, gpu->result, counters, sizeof(counters));
    if (gpuipc_kernels_verify(&gpu->kernels, scratch, WORDS, first, seed, gpu->result, err) !=
        CUDA_SUCCESS)
        goto out_free;
    GPUIPC_CU_GOTO(rc, err, out_free, cuCtxSynchronize);
    GPUIPC_CU_GOTO(rc, err, out_free, cuMemcpyDtoH, counters, gpu->result, sizeof(counters));
    if (counters[0] != 1 || counters[1] != first + PLANT) {
        gpuipc_err_set(err, -EIO, "self-test: the verify kernel reported %llu mismatches at "
                       "index %llu for one planted at %llu",
                       (unsigned long long)counters[0], (unsigned long long)counters[1],
                       (unsigned long long)(first + PLANT));
        goto out_free;
    }
    ret = 0;
out_free:
    gpuipc_cu.cuMemFree(scratch);
out:
    free(host);
    if (ret != 0 && err != NULL && strncmp(err->msg, "self-test", 9) != 0)
        gpuipc_err_prefix(err, "self-test");
    return ret;
}

static int open_device(gpuipc_gpu **out, CUdevice dev, int ordinal, gpuipc_err *err)
{
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
    GPUIPC_CU_GOTO(rc, err, out_free, cuDevicePrimaryCtxRetain, &gpu->ctx, dev);
    GPUIPC_CU_GOTO(rc, err, out_release, cuCtxSetCurrent, gpu->ctx);
    if (gpuipc_kernels_load(&gpu->kernels, sms, err) != CUDA_SUCCESS) {
        rc = CUDA_ERROR_INVALID_PTX;
        goto out_release;
    }
    GPUIPC_CU_GOTO(rc, err, out_unload, cuMemAlloc, &gpu->result, 2 * sizeof(uint64_t));
    if (self_test(gpu, err) != 0) {
        rc = CUDA_ERROR_UNKNOWN;
        goto out_result;
    }
    *out = gpu;
    return 0;

out_result:
    gpuipc_cu.cuMemFree(gpu->result);
out_unload:
    gpuipc_kernels_unload(&gpu->kernels);
out_release:
    gpuipc_cu.cuDevicePrimaryCtxRelease(dev);
out_free:
    free(gpu);
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
    rc = gpuipc_cu.cuDeviceGet(&dev, ordinal);
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
        rc = gpuipc_cu.cuDeviceGet(&dev, i);
        if (rc == CUDA_SUCCESS)
            rc = gpuipc_cu.cuDeviceGetUuid(&u, dev);
        if (rc != CUDA_SUCCESS)
            return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceGetUuid", rc, __FILE__,
                                                        __LINE__));
        if (memcmp(u.bytes, uuid, GPUIPC_UUID_LEN) == 0) {
            *ordinal = i;
            return 0;
        }
    }
    return gpuipc_err_set(err, -ENODEV, "none of the %d GPUs this process sees is %s, the "
                          "producer's (check CUDA_VISIBLE_DEVICES and the container's device "
                          "list: both processes must see it)",
                          n, gpuipc_units_format_uuid(uuid, text, sizeof(text)));
}

int gpuipc_gpu_uuid_of(int ordinal, uint8_t uuid[GPUIPC_UUID_LEN], gpuipc_err *err)
{
    CUdevice dev;
    CUuuid u;
    CUresult rc;
    int ret;

    if ((ret = gpuipc_gpu_init(err)) < 0)
        return ret;
    rc = gpuipc_cu.cuDeviceGet(&dev, ordinal);
    if (rc == CUDA_SUCCESS)
        rc = gpuipc_cu.cuDeviceGetUuid(&u, dev);
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
    rc = gpuipc_cu.cuDeviceGet(&dev, ordinal);
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceGet", rc, __FILE__,
                                                    __LINE__));
    return open_device(out, dev, ordinal, err);
}

int gpuipc_gpu_check_offer(const gpuipc_env *env, const uint8_t uuid[GPUIPC_UUID_LEN],
                           gpuipc_err *err)
{
    char text[48];

    if (memcmp(uuid, env->home_uuid, GPUIPC_UUID_LEN) == 0)
        return 0;
    return gpuipc_err_set(err, -EPROTO, "the offer names device %s, BEGIN named another",
                          gpuipc_units_format_uuid(uuid, text, sizeof(text)));
}

int gpuipc_gpu_peer_check(gpuipc_env *env, gpuipc_err *err)
{
    char home[48];
    CUdevice dev;
    CUresult rc;
    int ret, can = 0;

    if (env->gpu == NULL)
        return gpuipc_err_set(err, -ENODEV, "no GPU is open");
    if (memcmp(env->home_uuid, env->uuid, GPUIPC_UUID_LEN) == 0) {
        env->home_ordinal = gpuipc_gpu_ordinal(env->gpu);
        return 0;
    }
    if ((ret = gpuipc_gpu_find_uuid(env->home_uuid, &env->home_ordinal, err)) < 0)
        return ret;
    rc = gpuipc_cu.cuDeviceGet(&dev, env->home_ordinal);
    if (rc == CUDA_SUCCESS)
        rc = gpuipc_cu.cuDeviceCanAccessPeer(&can, gpuipc_gpu_device(env->gpu), dev);
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceCanAccessPeer", rc,
                                                    __FILE__, __LINE__));
    if (!can)
        return gpuipc_err_set(err, -ENOTSUP, "cuDeviceCanAccessPeer: GPU %d (%s) cannot access "
                              "the memory of GPU %d (%s): no peer path between them (NVLink, "
                              "or PCIe P2P, which IOMMU and ACS settings can disable)",
                              gpuipc_gpu_ordinal(env->gpu), gpuipc_gpu_name(env->gpu),
                              env->home_ordinal,
                              gpuipc_units_format_uuid(env->home_uuid, home, sizeof(home)));
    return 0;
}

void gpuipc_gpu_close(gpuipc_gpu *gpu)
{
    if (gpu == NULL)
        return;
    gpuipc_cu.cuCtxSetCurrent(gpu->ctx);
    gpuipc_cu.cuCtxSynchronize();
    gpuipc_cu.cuMemFree(gpu->result);
    gpuipc_kernels_unload(&gpu->kernels);
    gpuipc_cu.cuCtxSetCurrent(NULL);
    gpuipc_cu.cuDevicePrimaryCtxRelease(gpu->dev);
    free(gpu);
}

int gpuipc_gpu_attach(gpuipc_env *env, gpuipc_err *err)
{
    gpuipc_gpu *gpu;
    int rc;

    if (env->gpu != NULL && memcmp(env->gpu->uuid, env->uuid, GPUIPC_UUID_LEN) == 0)
        return 0;
    if ((rc = gpuipc_gpu_init(err)) < 0)
        return rc;
    if ((rc = gpuipc_gpu_open_uuid(&gpu, env->uuid, err)) < 0)
        return rc;
    gpuipc_gpu_close(env->gpu);
    env->gpu = gpu;
    gpuipc_cu.cuCtxSetCurrent(gpu->ctx);
    return 0;
}

int gpuipc_gpu_point(gpuipc_env *env, int a, int b, gpuipc_err *err)
{
    int rc;

    memset(env->peer_uuid, 0, GPUIPC_UUID_LEN);
    if ((rc = gpuipc_gpu_uuid_of(a, env->uuid, err)) < 0 ||
        (rc = gpuipc_gpu_attach(env, err)) < 0)
        return rc;
    if (b != a && (rc = gpuipc_gpu_uuid_of(b, env->peer_uuid, err)) < 0)
        return rc;
    return 0;
}

int gpuipc_gpu_env_free(gpuipc_env *env, uint64_t *bytes, gpuipc_err *err)
{
    uint64_t total;

    if (env->gpu == NULL)
        return gpuipc_err_set(err, -ENODEV, "no GPU open");
    if (gpuipc_gpu_mem_info(env->gpu, bytes, &total, err) != CUDA_SUCCESS)
        return -EIO;
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

static int gpu_fill(const gpuipc_view *v, uint64_t seed, gpuipc_err *err)
{
    gpuipc_gpu *gpu = v->ctx;
    CUresult rc;

    if (gpuipc_kernels_fill(&gpu->kernels, v->dev, v->size / 8, v->first_word, seed, err) !=
        CUDA_SUCCESS)
        return -EIO;
    GPUIPC_CU_GOTO(rc, err, out, cuCtxSynchronize);
    return 0;
out:
    return gpuipc_cudrv_errno(rc);
}

static int gpu_verify(const gpuipc_view *v, uint64_t seed, gpuipc_check *check,
                      gpuipc_err *err)
{
    gpuipc_gpu *gpu = v->ctx;
    uint64_t counters[2] = {0, UINT64_MAX};
    CUresult rc;

    memset(check, 0, sizeof(*check));
    check->words = v->size / 8;
    GPUIPC_CU_GOTO(rc, err, out, cuMemcpyHtoD, gpu->result, counters, sizeof(counters));
    if (gpuipc_kernels_verify(&gpu->kernels, v->dev, v->size / 8, v->first_word, seed,
                              gpu->result, err) != CUDA_SUCCESS)
        return -EIO;
    GPUIPC_CU_GOTO(rc, err, out, cuCtxSynchronize);
    GPUIPC_CU_GOTO(rc, err, out, cuMemcpyDtoH, counters, gpu->result, sizeof(counters));
    check->mismatches = counters[0];
    if (counters[0] != 0) {
        check->first_bad = counters[1];
        check->expected = gpuipc_pattern_word(counters[1], seed);
        GPUIPC_CU_GOTO(rc, err, out, cuMemcpyDtoH, &check->got,
                       v->dev + (counters[1] - v->first_word) * 8, sizeof(uint64_t));
    }
    return 0;
out:
    return gpuipc_cudrv_errno(rc);
}

static const gpuipc_view_ops gpu_view_ops = {
    .fill = gpu_fill,
    .verify = gpu_verify,
};

void gpuipc_gpu_view(gpuipc_gpu *gpu, CUdeviceptr dptr, uint64_t size, uint64_t first_word,
                     gpuipc_view *view)
{
    memset(view, 0, sizeof(*view));
    view->ops = &gpu_view_ops;
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
