/* mech_vmm.c: CUDA virtual memory management (VMM) device memory, exported
 * as a POSIX file descriptor and passed with SCM_RIGHTS.
 *
 *   P1 probe: VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
 *   P2 alloc: granularity for these exact properties; cuMemCreate,
 *      cuMemAddressReserve, cuMemMap, cuMemSetAccess (read-write, this device)
 *   P3 export: cuMemExportToShareableHandle -> an FD, marked close-on-exec
 *   C1 import: cuMemImportFromShareableHandle (the caller closes the FD at once),
 *      cuMemGetAllocationPropertiesFromHandle (the device must be the one offered)
 *   C2 map: cuMemAddressReserve, cuMemMap (fails if the handle is smaller than
 *      the offer), cuMemSetAccess, cuMemGetAddressRange
 *   both, release: cuCtxSynchronize, cuMemUnmap, cuMemAddressFree, cuMemRelease.
 *      The memory returns to the device once every mapping is gone and every
 *      handle, imported ones and FDs included, is released or closed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "cudrv.h"
#include "env.h"
#include "gpu.h"
#include "mech.h"
#include "step.h"
#include "units.h"

typedef struct vmm_priv {
    CUmemGenericAllocationHandle handle;
    CUdeviceptr ptr;
    size_t size;
    gpuipc_gpu *gpu;
} vmm_priv;

/* Logs a driver call and its duration at verbose level. */
static void trace(const gpuipc_env *env, unsigned step, uint64_t t0, const char *what)
{
    gpuipc_log_step(&env->log, GPUIPC_LOG_VERBOSE, "vmm", step, gpuipc_clock_ns() - t0, "%s",
                    what);
}

static void device_prop(const gpuipc_gpu *gpu, CUmemAllocationProp *prop)
{
    memset(prop, 0, sizeof(*prop));
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = gpuipc_gpu_ordinal(gpu);
    prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
}

static int vmm_probe(gpuipc_env *env, gpuipc_err *why)
{
    int vmm = 0, posix = 0, rc;

    if (env->role == GPUIPC_ROLE_CONSUMER && (rc = gpuipc_gpu_attach(env, why)) < 0)
        return rc;
    if (env->gpu == NULL)
        return gpuipc_err_set(why, -ENODEV, "no GPU is open");
    if (gpuipc_gpu_attr(env->gpu, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, &vmm,
                        why) != CUDA_SUCCESS ||
        gpuipc_gpu_attr(env->gpu, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                        &posix, why) != CUDA_SUCCESS)
        return -EIO;
    if (!vmm)
        return gpuipc_err_set(why, -ENOTSUP, "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_"
                              "SUPPORTED is 0 on GPU %d (%s): this device or driver has no "
                              "VMM API (it needs Pascal or later and a CUDA 10.2+ driver)",
                              gpuipc_gpu_ordinal(env->gpu), gpuipc_gpu_name(env->gpu));
    if (!posix)
        return gpuipc_err_set(why, -ENOTSUP, "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_"
                              "DESCRIPTOR_SUPPORTED is 0 on GPU %d (%s): VMM memory cannot be "
                              "exported as an FD here (WSL and some virtualised GPUs lack it)",
                              gpuipc_gpu_ordinal(env->gpu), gpuipc_gpu_name(env->gpu));
    return 0;
}

static uint64_t granularity_of(const CUmemAllocationProp *prop, gpuipc_err *err)
{
    size_t gran = 0;
    CUresult rc;

    GPUIPC_CU_GOTO(rc, err, out, cuMemGetAllocationGranularity, &gran, prop,
                   CU_MEM_ALLOC_GRANULARITY_MINIMUM);
out:
    return gran;
}

/* Reserves an address range for size bytes of handle, maps it, and gives
 * this process's device read-write access. On failure nothing is left. */
static CUresult map_handle(gpuipc_env *env, unsigned step, vmm_priv *priv, uint64_t gran,
                           gpuipc_err *err)
{
    CUmemAccessDesc access;
    CUresult rc;
    uint64_t t;

    t = gpuipc_clock_ns();
    GPUIPC_CU_GOTO(rc, err, out, cuMemAddressReserve, &priv->ptr, priv->size, gran, 0, 0);
    trace(env, step, t, "cuMemAddressReserve");
    t = gpuipc_clock_ns();
    GPUIPC_CU_GOTO(rc, err, out_free, cuMemMap, priv->ptr, priv->size, 0, priv->handle, 0);
    trace(env, step, t, "cuMemMap");
    memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = gpuipc_gpu_ordinal(priv->gpu);
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    t = gpuipc_clock_ns();
    GPUIPC_CU_GOTO(rc, err, out_unmap, cuMemSetAccess, priv->ptr, priv->size, &access, 1);
    trace(env, step, t, "cuMemSetAccess");
    return CUDA_SUCCESS;

out_unmap:
    gpuipc_cu.cuMemUnmap(priv->ptr, priv->size);
out_free:
    gpuipc_cu.cuMemAddressFree(priv->ptr, priv->size);
out:
    priv->ptr = 0;
    return rc;
}

/* Describes the mapped range to the roles: a device view for the kernels. */
static void set_buf(gpuipc_env *env, vmm_priv *priv, uint64_t gran, gpuipc_buf *buf)
{
    gpuipc_gpu_view(env->gpu, priv->ptr, priv->size, 0, &buf->view);
    buf->size = priv->size;
    buf->granularity = gran;
    buf->priv = priv;
}

static int vmm_alloc(gpuipc_env *env, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    CUmemAllocationProp prop;
    char human[32], ghuman[32];
    vmm_priv *priv;
    uint64_t gran, t;
    CUresult rc;

    memset(buf, 0, sizeof(*buf));
    device_prop(env->gpu, &prop);
    gran = granularity_of(&prop, err);
    if (gran == 0)
        return -EIO;
    priv = calloc(1, sizeof(*priv));
    if (priv == NULL)
        return gpuipc_err_set(err, -ENOMEM, "vmm: out of memory");
    priv->gpu = env->gpu;
    priv->size = (size + gran - 1) / gran * gran;
    t = gpuipc_clock_ns();
    rc = gpuipc_cu.cuMemCreate(&priv->handle, priv->size, &prop, 0);
    if (rc != CUDA_SUCCESS) {
        uint64_t free_b = 0, total = 0;

        gpuipc_cudrv_fail(err, "cuMemCreate", rc, __FILE__, __LINE__);
        if (rc == CUDA_ERROR_OUT_OF_MEMORY &&
            gpuipc_gpu_mem_info(env->gpu, &free_b, &total, NULL) == CUDA_SUCCESS)
            gpuipc_err_prefix(err, "%s requested, %s free",
                              gpuipc_units_format_size(priv->size, human, sizeof(human)),
                              gpuipc_units_format_size(free_b, ghuman, sizeof(ghuman)));
        goto out_free;
    }
    trace(env, GPUIPC_STEP_ALLOC, t, "cuMemCreate");
    rc = map_handle(env, GPUIPC_STEP_ALLOC, priv, gran, err);
    if (rc != CUDA_SUCCESS)
        goto out_release;
    set_buf(env, priv, gran, buf);
    snprintf(buf->detail, sizeof(buf->detail), "%s on GPU %d, granularity %s",
             gpuipc_units_format_size(priv->size, human, sizeof(human)),
             gpuipc_gpu_ordinal(env->gpu), gpuipc_units_format_size(gran, ghuman, sizeof(ghuman)));
    return 0;

out_release:
    gpuipc_cu.cuMemRelease(priv->handle);
out_free:
    free(priv);
    return gpuipc_cudrv_errno(rc);
}

static int vmm_export(gpuipc_env *env, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                      unsigned *nfds, gpuipc_err *err)
{
    vmm_priv *priv = buf->priv;
    uint64_t t = gpuipc_clock_ns();
    int fd = -1;
    CUresult rc;

    GPUIPC_CU_GOTO(rc, err, out, cuMemExportToShareableHandle, &fd, priv->handle,
                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    trace(env, GPUIPC_STEP_EXPORT, t, "cuMemExportToShareableHandle");
    /* The driver's FD is not close-on-exec; it must not leak into children. */
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
        int e = errno;

        close(fd);
        return gpuipc_err_set(err, -e, "fcntl FD_CLOEXEC on the exported FD: %s", strerror(e));
    }
    fds[0] = fd;
    *nfds = 1;
    offer->size = buf->size;
    offer->granularity = buf->granularity;
    memcpy(offer->uuid, gpuipc_gpu_uuid(env->gpu), GPUIPC_UUID_LEN);
    offer->blob_len = 0;
    return 0;
out:
    return gpuipc_cudrv_errno(rc);
}

static int vmm_import(gpuipc_env *env, const gpuipc_msg_offer *offer, const int *fds,
                      unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    CUmemAllocationProp prop, mine;
    char want[48], human[32];
    CUdeviceptr base = 0;
    size_t mapped = 0;
    vmm_priv *priv;
    uint64_t gran, t;
    CUresult rc;

    memset(buf, 0, sizeof(*buf));
    if (nfds != 1)
        return gpuipc_err_set(err, -EPROTO, "vmm offer carries %u FDs, expected 1", nfds);
    if (memcmp(offer->uuid, env->uuid, GPUIPC_UUID_LEN) != 0)
        return gpuipc_err_set(err, -EPROTO, "the offer names device %s, BEGIN named another",
                              gpuipc_units_format_uuid(offer->uuid, want, sizeof(want)));
    priv = calloc(1, sizeof(*priv));
    if (priv == NULL)
        return gpuipc_err_set(err, -ENOMEM, "vmm: out of memory");
    priv->gpu = env->gpu;
    priv->size = offer->size;
    t = gpuipc_clock_ns();
    GPUIPC_CU_GOTO(rc, err, out_free, cuMemImportFromShareableHandle, &priv->handle,
                   (void *)(uintptr_t)fds[0], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    trace(env, GPUIPC_STEP_IMPORT, t, "cuMemImportFromShareableHandle");
    GPUIPC_CU_GOTO(rc, err, out_release, cuMemGetAllocationPropertiesFromHandle, &prop,
                   priv->handle);
    /* The properties carry no size: cuMemMap below refuses a range larger
     * than the allocation, and cuMemGetAddressRange confirms what it mapped. */
    if (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        prop.location.id != gpuipc_gpu_ordinal(env->gpu)) {
        gpuipc_err_set(err, -EPROTO, "the imported handle lives at location type %d id %d, "
                       "not on GPU %d (%s) as offered", (int)prop.location.type,
                       prop.location.id, gpuipc_gpu_ordinal(env->gpu),
                       gpuipc_units_format_uuid(offer->uuid, want, sizeof(want)));
        rc = CUDA_ERROR_INVALID_DEVICE;
        goto out_release;
    }
    device_prop(env->gpu, &mine);
    gran = granularity_of(&mine, err);
    if (gran == 0 || offer->size % gran != 0) {
        if (gran != 0)
            gpuipc_err_set(err, -EPROTO, "offered size %llu is not a multiple of this side's "
                           "granularity %llu", (unsigned long long)offer->size,
                           (unsigned long long)gran);
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out_release;
    }
    rc = map_handle(env, GPUIPC_STEP_IMPORT, priv, gran, err);
    if (rc != CUDA_SUCCESS)
        goto out_release;
    /* A second opinion on the size; the driver need not answer it for VMM
     * ranges, so only an answer that contradicts the offer fails. */
    rc = gpuipc_cu.cuMemGetAddressRange(&base, &mapped, priv->ptr);
    if (rc != CUDA_SUCCESS) {
        gpuipc_log_step(&env->log, GPUIPC_LOG_VERBOSE, "vmm", GPUIPC_STEP_IMPORT,
                        GPUIPC_LOG_NO_TIME, "cuMemGetAddressRange: %s (size not cross-checked)",
                        gpuipc_cudrv_error_name(rc));
    } else if (mapped < offer->size) {
        gpuipc_err_set(err, -EPROTO, "cuMemGetAddressRange: %zu bytes mapped, %llu offered",
                       mapped, (unsigned long long)offer->size);
        rc = CUDA_ERROR_INVALID_VALUE;
        goto out_unmap;
    } else {
        gpuipc_log_step(&env->log, GPUIPC_LOG_VERBOSE, "vmm", GPUIPC_STEP_IMPORT,
                        GPUIPC_LOG_NO_TIME, "cuMemGetAddressRange: %zu bytes at 0x%llx",
                        mapped, (unsigned long long)base);
    }
    set_buf(env, priv, gran, buf);
    snprintf(buf->detail, sizeof(buf->detail), "%s on GPU %d (%s)",
             gpuipc_units_format_size(priv->size, human, sizeof(human)),
             gpuipc_gpu_ordinal(env->gpu), gpuipc_gpu_name(env->gpu));
    return 0;

out_unmap:
    gpuipc_cu.cuMemUnmap(priv->ptr, priv->size);
    gpuipc_cu.cuMemAddressFree(priv->ptr, priv->size);
out_release:
    gpuipc_cu.cuMemRelease(priv->handle);
out_free:
    free(priv);
    return rc == CUDA_ERROR_INVALID_DEVICE || rc == CUDA_ERROR_INVALID_VALUE
               ? -EPROTO : gpuipc_cudrv_errno(rc);
}

static int vmm_release(gpuipc_env *env, gpuipc_buf *buf, gpuipc_err *err)
{
    vmm_priv *priv = buf->priv;
    gpuipc_err first;
    CUresult rc, bad = CUDA_SUCCESS;
    uint64_t t = gpuipc_clock_ns();

    if (priv == NULL)
        return 0;
    gpuipc_err_clear(&first);
    /* A kernel or copy may still be in flight; unmapping under it poisons
     * the context (every later call fails with CUDA_ERROR_LAUNCH_FAILED). */
    if ((rc = gpuipc_cu.cuCtxSynchronize()) != CUDA_SUCCESS && bad == CUDA_SUCCESS)
        bad = gpuipc_cudrv_fail(&first, "cuCtxSynchronize", rc, __FILE__, __LINE__);
    if ((rc = gpuipc_cu.cuMemUnmap(priv->ptr, priv->size)) != CUDA_SUCCESS && bad == CUDA_SUCCESS)
        bad = gpuipc_cudrv_fail(&first, "cuMemUnmap", rc, __FILE__, __LINE__);
    if ((rc = gpuipc_cu.cuMemAddressFree(priv->ptr, priv->size)) != CUDA_SUCCESS &&
        bad == CUDA_SUCCESS)
        bad = gpuipc_cudrv_fail(&first, "cuMemAddressFree", rc, __FILE__, __LINE__);
    if ((rc = gpuipc_cu.cuMemRelease(priv->handle)) != CUDA_SUCCESS && bad == CUDA_SUCCESS)
        bad = gpuipc_cudrv_fail(&first, "cuMemRelease", rc, __FILE__, __LINE__);
    trace(env, GPUIPC_STEP_RELEASE, t, "cuCtxSynchronize, cuMemUnmap, cuMemAddressFree, "
          "cuMemRelease");
    free(priv);
    memset(buf, 0, sizeof(*buf));
    if (bad != CUDA_SUCCESS) {
        if (err != NULL)
            *err = first;
        return gpuipc_cudrv_errno(bad);
    }
    return 0;
}

const gpuipc_mech gpuipc_mech_vmm = {
    .name = "vmm",
    .summary = "CUDA VMM device memory: cuMemCreate, POSIX FD over SCM_RIGHTS, cuMemMap",
    .needs_cuda = 1,
    .by_default = 1,
    .probe = vmm_probe,
    .alloc = vmm_alloc,
    .export = vmm_export,
    .import = vmm_import,
    .release = vmm_release,
};
