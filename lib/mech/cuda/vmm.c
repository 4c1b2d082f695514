/* SPDX-License-Identifier: Apache-2.0 */
/* vmm.c: the VMM steps shared by the VMM-based mechanisms.
 *
 *   create: granularity for these exact properties; cuMemCreate,
 *           cuMemAddressReserve, cuMemMap, cuMemSetAccess (read-write, this device)
 *   export: cuMemExportToShareableHandle -> an FD, marked close-on-exec
 *   import: cuMemImportFromShareableHandle, cuMemGetAllocationPropertiesFromHandle
 *           (the device must be the one offered), cuMemAddressReserve, cuMemMap
 *           (fails if the handle is smaller than the offer), cuMemSetAccess,
 *           cuMemGetAddressRange (a second opinion on the size)
 *   release: cuCtxSynchronize, cuMemUnmap, cuMemAddressFree, cuMemRelease.
 *           The memory returns to the device once every mapping is gone and
 *           every handle, imported ones and FDs included, is released or closed. */
#include "mech/cuda/vmm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "core/ledger.h"
#include "core/step.h"
#include "core/units.h"

static const char *mech_name(const gpuipc_scenario *sc)
{
    return sc->mech != NULL ? sc->mech->name : "vmm";
}

/* Logs a driver call and its duration at verbose level. */
static void trace(const gpuipc_scenario *sc, unsigned step, uint64_t t0, const char *what)
{
    gpuipc_log_step(&sc->env->log, GPUIPC_LOG_VERBOSE, mech_name(sc), step, gpuipc_clock_ns() - t0,
                    "%s", what);
}

void gpuipc_vmm_prop(const gpuipc_gpu *gpu, CUmemAllocationHandleType type,
                     unsigned char compression, CUmemAllocationProp *prop)
{
    memset(prop, 0, sizeof(*prop));
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = gpuipc_gpu_ordinal(gpu);
    prop->requestedHandleTypes = type;
    prop->allocFlags.compressionType = compression;
}

void gpuipc_vmm_prop_host_numa(int numa_id, CUmemAllocationHandleType type,
                               CUmemAllocationProp *prop)
{
    memset(prop, 0, sizeof(*prop));
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    prop->location.id = numa_id;
    prop->requestedHandleTypes = type;
}

int gpuipc_vmm_probe(gpuipc_scenario *sc, CUdevice_attribute type_attr, const char *type_name,
                     gpuipc_err *why)
{
    int vmm = 0, handle = 0, rc;

    if (sc->env->role == GPUIPC_ROLE_CONSUMER && ((rc = gpuipc_gpu_attach(sc, why)) < 0 ||
                                              (rc = gpuipc_gpu_peer_check(sc, why)) < 0))
        return rc;
    if (sc->env->gpu == NULL)
        return gpuipc_err_set(why, -ENODEV, "no GPU is open");
    if (gpuipc_gpu_attr(sc->env->gpu, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, &vmm,
                        why) != CUDA_SUCCESS ||
        gpuipc_gpu_attr(sc->env->gpu, type_attr, &handle, why) != CUDA_SUCCESS)
        return -EIO;
    if (!vmm)
        return gpuipc_err_set(why, -ENOTSUP, "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_"
                              "SUPPORTED is 0 on GPU %d (%s): this device or driver has no "
                              "VMM API (it needs Pascal or later and a CUDA 10.2+ driver)",
                              gpuipc_gpu_ordinal(sc->env->gpu), gpuipc_gpu_name(sc->env->gpu));
    if (!handle)
        return gpuipc_err_set(why, -ENOTSUP, "CU_DEVICE_ATTRIBUTE_%s_SUPPORTED is 0 on GPU %d "
                              "(%s): VMM memory cannot be exported as this handle type here",
                              type_name, gpuipc_gpu_ordinal(sc->env->gpu), gpuipc_gpu_name(sc->env->gpu));
    return 0;
}

uint64_t gpuipc_vmm_granularity(const CUmemAllocationProp *prop, gpuipc_err *err)
{
    size_t gran = 0;
    CUresult rc;

    GPUIPC_CU_GOTO(rc, err, out, cuMemGetAllocationGranularity, &gran, prop,
                   CU_MEM_ALLOC_GRANULARITY_MINIMUM);
out:
    return gran;
}

/* Test-only (GPUIPC_SABOTAGE, session/inject.h): the CUresult that sabotage
 * a or b of this role stands for, in place of the driver's answer, without
 * the call; CUDA_SUCCESS where neither is set. */
static CUresult sabotaged(const gpuipc_scenario *sc, int a, int b)
{
    static const struct {
        int what;
        CUresult rc;
    } as[] = {
        {GPUIPC_SABOTAGE_IMPORT_INVALID_HANDLE, CUDA_ERROR_INVALID_HANDLE},
        {GPUIPC_SABOTAGE_ACCESS_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE},
        {GPUIPC_SABOTAGE_ACCESS_NOT_SUPPORTED, CUDA_ERROR_NOT_SUPPORTED},
    };
    size_t i;

    for (i = 0; i < sizeof(as) / sizeof(as[0]); i++)
        if ((as[i].what == a || as[i].what == b) &&
            gpuipc_inject_sabotage(&sc->env->inject, sc->env->role, as[i].what))
            return as[i].rc;
    return CUDA_SUCCESS;
}

/* Reserves an address range for the whole of v's handle, maps it, and gives
 * this process's device read-write access, and for host memory its NUMA node
 * too (the CPU may touch host memory only with that grant). Stores the
 * address in *ptr. On failure nothing is left. */
static CUresult map_handle(gpuipc_scenario *sc, unsigned step, gpuipc_vmm *v, uint64_t gran,
                           CUdeviceptr *ptr, gpuipc_err *err)
{
    CUmemAccessDesc access[2];
    size_t n = 1;
    CUresult rc;
    uint64_t t;

    t = gpuipc_clock_ns();
    GPUIPC_CU_GOTO(rc, err, out, cuMemAddressReserve, ptr, v->size, gran, 0, 0);
    gpuipc_laps_add(sc->laps, GPUIPC_LAP_RESERVE, t);
    trace(sc, step, t, "cuMemAddressReserve");
    t = gpuipc_clock_ns();
    GPUIPC_CU_GOTO(rc, err, out_free, cuMemMap, *ptr, v->size, v->offset, v->handle, 0);
    gpuipc_laps_add(sc->laps, GPUIPC_LAP_MAP, t);
    trace(sc, step, t, "cuMemMap");
    memset(access, 0, sizeof(access));
    access[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[0].location.id = gpuipc_gpu_ordinal(v->gpu);
    access[0].flags = v->read_only ? CU_MEM_ACCESS_FLAGS_PROT_READ
                                   : CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (v->host_numa >= 0) {
        access[1].location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
        access[1].location.id = v->host_numa;
        access[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        n = 2;
    }
    t = gpuipc_clock_ns();
    if (step == GPUIPC_STEP_IMPORT && (rc = sabotaged(sc, GPUIPC_SABOTAGE_ACCESS_INVALID_VALUE,
                                                      GPUIPC_SABOTAGE_ACCESS_NOT_SUPPORTED)) !=
                                          CUDA_SUCCESS) {
        gpuipc_cudrv_fail(err, "cuMemSetAccess", rc, __FILE__, __LINE__);
        goto out_unmap;
    }
    GPUIPC_CU_GOTO(rc, err, out_unmap, cuMemSetAccess, *ptr, v->size, access, n);
    gpuipc_laps_add(sc->laps, GPUIPC_LAP_ACCESS, t);
    trace(sc, step, t, n == 2 ? "cuMemSetAccess (GPU and host NUMA node)" : "cuMemSetAccess");
    return CUDA_SUCCESS;

out_unmap:
    GPUIPC_CU_CALL(cuMemUnmap, *ptr, v->size);
out_free:
    GPUIPC_CU_CALL(cuMemAddressFree, *ptr, v->size);
out:
    *ptr = 0;
    return rc;
}

/* Describes the mapped range to the roles: a device view for the kernels. */
static void set_buf(gpuipc_scenario *sc, gpuipc_vmm *v, uint64_t gran, gpuipc_buf *buf)
{
    gpuipc_gpu_view(sc->env->gpu, v->ptr, v->size, v->offset / 8, &buf->view);
    buf->size = v->size;
    buf->granularity = gran;
    buf->priv = v;
}

int gpuipc_vmm_create(gpuipc_scenario *sc, const CUmemAllocationProp *prop, uint64_t size,
                      gpuipc_buf *buf, gpuipc_err *err)
{
    char human[32], ghuman[32];
    gpuipc_vmm *v;
    uint64_t gran, t;
    CUresult rc;

    memset(buf, 0, sizeof(*buf));
    gran = gpuipc_vmm_granularity(prop, err);
    if (gran == 0)
        return -EIO;
    v = calloc(1, sizeof(*v));
    if (v == NULL)
        return gpuipc_err_set(err, -ENOMEM, "%s: out of memory", mech_name(sc));
    v->gpu = sc->env->gpu;
    v->kept_fd = -1;
    v->host_numa = prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ? prop->location.id : -1;
    v->size = (size + gran - 1) / gran * gran;
    t = gpuipc_clock_ns();
    rc = GPUIPC_CU_CALL(cuMemCreate, &v->handle, v->size, prop, 0);
    if (rc != CUDA_SUCCESS) {
        gpuipc_cudrv_fail(err, "cuMemCreate", rc, __FILE__, __LINE__);
        gpuipc_gpu_note_oom(sc->env->gpu, rc, v->size, err);
        goto out_free;
    }
    trace(sc, GPUIPC_STEP_ALLOC, t, "cuMemCreate");
    rc = map_handle(sc, GPUIPC_STEP_ALLOC, v, gran, &v->ptr, err);
    if (rc != CUDA_SUCCESS)
        goto out_release;
    set_buf(sc, v, gran, buf);
    if (v->host_numa >= 0)
        snprintf(buf->detail, sizeof(buf->detail), "%s on host NUMA node %d, granularity %s",
                 gpuipc_units_format_size(v->size, human, sizeof(human)), v->host_numa,
                 gpuipc_units_format_size(gran, ghuman, sizeof(ghuman)));
    else
        snprintf(buf->detail, sizeof(buf->detail), "%s on GPU %d, granularity %s",
                 gpuipc_units_format_size(v->size, human, sizeof(human)),
                 gpuipc_gpu_ordinal(sc->env->gpu),
                 gpuipc_units_format_size(gran, ghuman, sizeof(ghuman)));
    return 0;

out_release:
    GPUIPC_CU_CALL(cuMemRelease, v->handle);
out_free:
    free(v);
    return gpuipc_cudrv_errno(rc);
}

void gpuipc_vmm_offer(gpuipc_scenario *sc, const gpuipc_buf *buf, gpuipc_msg_offer *offer)
{
    offer->size = buf->size;
    offer->granularity = buf->granularity;
    memcpy(offer->uuid, gpuipc_gpu_uuid(sc->env->gpu), GPUIPC_UUID_LEN);
}

int gpuipc_vmm_export_fd(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err)
{
    const gpuipc_vmm *v = buf->priv;

    return gpuipc_vmm_export_handle(sc, v->handle, err);
}

int gpuipc_vmm_export_handle(gpuipc_scenario *sc, CUmemGenericAllocationHandle handle,
                             gpuipc_err *err)
{
    uint64_t t = gpuipc_clock_ns();
    int fd = gpuipc_vmm_export_raw(handle, err);

    if (fd >= 0)
        trace(sc, GPUIPC_STEP_EXPORT, t, "cuMemExportToShareableHandle");
    return fd;
}

int gpuipc_vmm_export_raw(CUmemGenericAllocationHandle handle, gpuipc_err *err)
{
    int fd = -1;
    CUresult rc;

    GPUIPC_CU_GOTO(rc, err, out, cuMemExportToShareableHandle, &fd, handle,
                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    /* The driver's FD is not close-on-exec; it must not leak into children. */
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
        int e = errno;

        close(fd);
        return gpuipc_err_set(err, -e, "fcntl FD_CLOEXEC on the exported FD: %s", strerror(e));
    }
    return fd;
out:
    return gpuipc_cudrv_errno(rc);
}

int gpuipc_vmm_import(gpuipc_scenario *sc, void *os_handle, CUmemAllocationHandleType type,
                      unsigned flags, const gpuipc_msg_offer *offer, gpuipc_buf *buf,
                      gpuipc_err *err)
{
    return gpuipc_vmm_import_at(sc, os_handle, type, flags, 0, offer, buf, err);
}

int gpuipc_vmm_import_at(gpuipc_scenario *sc, void *os_handle, CUmemAllocationHandleType type,
                         unsigned flags, uint64_t offset, const gpuipc_msg_offer *offer,
                         gpuipc_buf *buf, gpuipc_err *err)
{
    CUmemAllocationProp prop;
    char want[48], human[32];
    CUdeviceptr base = 0;
    size_t mapped = 0;
    gpuipc_vmm *v;
    uint64_t gran, t;
    CUresult rc = CUDA_SUCCESS;
    int ret = -EIO;

    memset(buf, 0, sizeof(*buf));
    if ((ret = gpuipc_gpu_check_offer(sc, offer->uuid, err)) < 0)
        return ret;
    /* The check above left ret at 0: every failure below must return a
     * negative errno, or the caller would take an empty buf for a mapping. */
    ret = -EIO;
    v = calloc(1, sizeof(*v));
    if (v == NULL)
        return gpuipc_err_set(err, -ENOMEM, "%s: out of memory", mech_name(sc));
    v->gpu = sc->env->gpu;
    v->kept_fd = -1;
    v->host_numa = -1;
    v->read_only = (flags & GPUIPC_VMM_READ_ONLY) != 0;
    if (offset >= offer->size) {
        free(v);
        return gpuipc_err_set(err, -EPROTO, "map offset %llu is not inside the %llu bytes "
                              "offered", (unsigned long long)offset,
                              (unsigned long long)offer->size);
    }
    v->offset = offset;
    v->size = offer->size - offset;
    t = gpuipc_clock_ns();
    rc = sabotaged(sc, GPUIPC_SABOTAGE_IMPORT_INVALID_HANDLE, GPUIPC_SABOTAGE_NONE);
    if (rc == CUDA_SUCCESS)
        rc = GPUIPC_CU_CALL(cuMemImportFromShareableHandle, &v->handle, os_handle, type);
    if (rc != CUDA_SUCCESS) {
        gpuipc_cudrv_fail(err, "cuMemImportFromShareableHandle", rc, __FILE__, __LINE__);
        if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
            gpuipc_mech_name_fd(err, (int)(uintptr_t)os_handle);
        goto out_free;
    }
    trace(sc, GPUIPC_STEP_IMPORT, t, "cuMemImportFromShareableHandle");
    GPUIPC_CU_GOTO(rc, err, out_release, cuMemGetAllocationPropertiesFromHandle, &prop,
                   v->handle);
    /* The properties carry no size: cuMemMap below refuses a range larger
     * than the allocation, and cuMemGetAddressRange confirms what it mapped. */
    if (prop.location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA) {
        v->host_numa = prop.location.id;
    } else if (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
               prop.location.id != sc->home_ordinal) {
        ret = gpuipc_err_set(err, -EPROTO, "the imported handle lives at location type %d id "
                             "%d, not on GPU %d (%s) as offered", (int)prop.location.type,
                             prop.location.id, sc->home_ordinal,
                             gpuipc_units_format_uuid(offer->uuid, want, sizeof(want)));
        goto out_release;
    }
    /* The granularity of exactly these properties, as the creator used. */
    gran = gpuipc_vmm_granularity(&prop, err);
    if (gran == 0)
        goto out_release;
    if (offer->size % gran != 0 || offset % gran != 0) {
        ret = gpuipc_err_set(err, -EPROTO, "offered size %llu or map offset %llu is not a "
                             "multiple of this side's granularity %llu",
                             (unsigned long long)offer->size, (unsigned long long)offset,
                             (unsigned long long)gran);
        goto out_release;
    }
    rc = map_handle(sc, GPUIPC_STEP_IMPORT, v, gran, &v->ptr, err);
    if (rc != CUDA_SUCCESS) {
        ret = gpuipc_cudrv_errno(rc);
        goto out_release;
    }
    /* A second opinion on the size; only an answer that contradicts the
     * offer fails (the driver need not answer for VMM ranges). */
    rc = GPUIPC_CU_CALL(cuMemGetAddressRange, &base, &mapped, v->ptr);
    if (rc == CUDA_SUCCESS && mapped < v->size) {
        ret = gpuipc_err_set(err, -EPROTO, "cuMemGetAddressRange: %zu bytes mapped, %zu "
                             "expected", mapped, v->size);
        goto out_unmap;
    }
    gpuipc_log_step(&sc->env->log, GPUIPC_LOG_VERBOSE, mech_name(sc), GPUIPC_STEP_IMPORT,
                    GPUIPC_LOG_NO_TIME,
                    "cuMemGetAddressRange: %s", rc == CUDA_SUCCESS ? "matches the offer"
                                                                   : gpuipc_cudrv_error_name(rc));
    set_buf(sc, v, gran, buf);
    if (v->host_numa >= 0)
        snprintf(buf->detail, sizeof(buf->detail), "%s on host NUMA node %d, for GPU %d",
                 gpuipc_units_format_size(v->size, human, sizeof(human)), v->host_numa,
                 gpuipc_gpu_ordinal(sc->env->gpu));
    else
        snprintf(buf->detail, sizeof(buf->detail), "%s on GPU %d (%s)%s",
                 gpuipc_units_format_size(v->size, human, sizeof(human)), sc->home_ordinal,
                 gpuipc_gpu_name(sc->env->gpu),
                 sc->home_ordinal != gpuipc_gpu_ordinal(sc->env->gpu) ? ", read and written by "
                 "this process's GPU over the peer path" : "");
    if (v->offset != 0)
        snprintf(buf->detail + strlen(buf->detail), sizeof(buf->detail) - strlen(buf->detail),
                 ", mapped from offset %s of the allocation",
                 gpuipc_units_format_size(v->offset, human, sizeof(human)));
    return 0;

out_unmap:
    GPUIPC_CU_CALL(cuMemUnmap, v->ptr, v->size);
    GPUIPC_CU_CALL(cuMemAddressFree, v->ptr, v->size);
out_release:
    GPUIPC_CU_CALL(cuMemRelease, v->handle);
out_free:
    free(v);
    return ret == -EIO && rc != CUDA_SUCCESS ? gpuipc_cudrv_errno(rc) : ret;
}

int gpuipc_vmm_map_alias(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err)
{
    gpuipc_vmm *v = buf->priv;
    CUresult rc = map_handle(sc, GPUIPC_STEP_IMPORT, v, buf->granularity, &v->alias, err);

    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(rc);
    gpuipc_gpu_view(sc->env->gpu, v->alias, v->size, 0, &buf->alt);
    snprintf(buf->alt_name, sizeof(buf->alt_name), "the alias at 0x%llx",
             (unsigned long long)v->alias);
    return 0;
}

CUresult gpuipc_vmm_props(const gpuipc_buf *buf, CUmemAllocationProp *prop, gpuipc_err *err)
{
    const gpuipc_vmm *v = buf->priv;
    CUresult rc;

    GPUIPC_CU_GOTO(rc, err, out, cuMemGetAllocationPropertiesFromHandle, prop, v->handle);
out:
    return rc;
}

int gpuipc_vmm_release(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err)
{
    gpuipc_vmm *v = buf->priv;
    CUresult first = CUDA_SUCCESS;
    uint64_t t = gpuipc_clock_ns();

    if (v == NULL)
        return 0;
    /* A kernel or copy may still be in flight; unmapping under it poisons
     * the context (every later call fails with CUDA_ERROR_LAUNCH_FAILED). */
    GPUIPC_CU_NOTE(first, err, cuCtxSynchronize);
    if (v->alias != 0) {
        GPUIPC_CU_NOTE(first, err, cuMemUnmap, v->alias, v->size);
        GPUIPC_CU_NOTE(first, err, cuMemAddressFree, v->alias, v->size);
    }
    GPUIPC_CU_NOTE(first, err, cuMemUnmap, v->ptr, v->size);
    GPUIPC_CU_NOTE(first, err, cuMemAddressFree, v->ptr, v->size);
    GPUIPC_CU_NOTE(first, err, cuMemRelease, v->handle);
    if (v->kept_fd >= 0)
        close(v->kept_fd);
    trace(sc, GPUIPC_STEP_RELEASE, t,
          "cuCtxSynchronize, cuMemUnmap, cuMemAddressFree, cuMemRelease");
    free(v);
    memset(buf, 0, sizeof(*buf));
    return gpuipc_cudrv_errno(first);
}

void gpuipc_vmm_abandon(gpuipc_buf *buf)
{
    gpuipc_vmm *v = buf->priv;

    if (v == NULL)
        return;
    if (v->alias != 0) {
        gpuipc_ledger_remove_range(GPUIPC_LEDGER_MAPPING, v->alias, v->size);
        gpuipc_ledger_remove(GPUIPC_LEDGER_RANGE, v->alias);
    }
    gpuipc_ledger_remove_range(GPUIPC_LEDGER_MAPPING, v->ptr, v->size);
    gpuipc_ledger_remove(GPUIPC_LEDGER_RANGE, v->ptr);
    gpuipc_ledger_remove(GPUIPC_LEDGER_HANDLE, v->handle);
    if (v->kept_fd >= 0)
        close(v->kept_fd);
    free(v);
    memset(buf, 0, sizeof(*buf));
}

int gpuipc_vmm_fd_probe(gpuipc_scenario *sc, gpuipc_err *why)
{
    return gpuipc_vmm_probe(sc, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                            "HANDLE_TYPE_POSIX_FILE_DESCRIPTOR", why);
}

int gpuipc_vmm_fd_alloc(gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    CUmemAllocationProp prop;

    gpuipc_vmm_prop(sc->env->gpu, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    CU_MEM_ALLOCATION_COMP_NONE, &prop);
    return gpuipc_vmm_create(sc, &prop, size, buf, err);
}

int gpuipc_vmm_fd_export(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                         unsigned *nfds, gpuipc_err *err)
{
    int fd = gpuipc_vmm_export_fd(sc, buf, err);

    if (fd < 0)
        return fd;
    fds[0] = fd;
    *nfds = 1;
    gpuipc_vmm_offer(sc, buf, offer);
    return 0;
}

int gpuipc_vmm_fd_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                         unsigned nfds, unsigned flags, gpuipc_buf *buf, gpuipc_err *err)
{
    int rc = gpuipc_mech_offer_shape(mech_name(sc), offer, nfds, 1, GPUIPC_MECH_ANY_BLOB, err);

    if (rc < 0)
        return rc;
    return gpuipc_vmm_import(sc, (void *)(uintptr_t)fds[0],
                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, flags, offer, buf, err);
}
