/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_chunks.c: device memory made of --chunks separate VMM allocations,
 * mapped back to back into one reserved range on each side: how PyTorch's
 * expandable segments grow a segment and share it. Each chunk travels as its
 * own FD, 253 to a message at most. These are the chunk engine's operations
 * on VMM memory (mech/chunks.h has the rest):
 *
 *   P1 probe: as vmm
 *   P2 alloc: cuMemAddressReserve for the whole range; per chunk cuMemCreate
 *      and cuMemMap at offset i * chunk; one cuMemSetAccess over the range
 *   P3 export, one batch at a time: cuMemExportToShareableHandle per chunk
 *   C1 import, one batch at a time: cuMemImportFromShareableHandle per FD,
 *      cuMemMap at the FD's slot, cuMemSetAccess over the batch's slots
 *   both: per chunk cuMemUnmap, then cuMemAddressFree and cuMemRelease
 * The pattern runs over the whole range, so a chunk mapped in the wrong
 * place shows up as bad words (the chunk-order sabotage proves it). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/step.h"
#include "core/units.h"
#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "mech/chunks.h"
#include "mech/cuda/vmm.h"
#include "session/mech.h"

/* The operations' own state (gpuipc_chunks.mem). */
typedef struct vmm_mem {
    gpuipc_gpu *gpu;
    int home;                         /* ordinal of the device that holds the memory */
    CUmemAllocationProp prop;         /* what cuMemCreate is asked for */
    gpuipc_laps *laps;                /* --bench: the consumer's laps, or NULL */
    struct {
        uint64_t ns;
        unsigned calls;
    } spent[5];                       /* time in each driver call, for -v: what a chunk costs */
} vmm_mem;

/* The driver calls whose time vmm-chunks adds up, per chunk. */
enum { T_CREATE, T_MAP, T_ACCESS, T_EXPORT, T_IMPORT };
static const char *const call_names[] = {"cuMemCreate", "cuMemMap", "cuMemSetAccess",
                                          "cuMemExportToShareableHandle",
                                          "cuMemImportFromShareableHandle"};

static void spent(vmm_mem *m, int call, uint64_t t0)
{
    m->spent[call].ns += gpuipc_clock_ns() - t0;
    m->spent[call].calls++;
    if (call == T_MAP)
        gpuipc_laps_add(m->laps, GPUIPC_LAP_MAP, t0);
    else if (call == T_ACCESS)
        gpuipc_laps_add(m->laps, GPUIPC_LAP_ACCESS, t0);
}

static int granularity(gpuipc_scenario *sc, uint64_t *gran, gpuipc_err *err)
{
    CUmemAllocationProp prop;

    gpuipc_vmm_prop(sc->env->gpu, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    CU_MEM_ALLOCATION_COMP_NONE, &prop);
    return (*gran = gpuipc_vmm_granularity(&prop, err)) == 0 ? -EIO : 0;
}

/* Refused before allocating: with many chunks the total exceeds --size. */
static int fits(gpuipc_scenario *sc, const gpuipc_chunk_plan *plan, gpuipc_err *err)
{
    uint64_t free_b = 0, total = 0;
    char a[32], b[32];

    if (gpuipc_gpu_mem_info(sc->env->gpu, &free_b, &total, err) != CUDA_SUCCESS)
        return -EIO;
    if (plan->total > free_b)
        return gpuipc_err_set(err, -ENOMEM, "%u chunks of at least one granule each need %s, "
                              "and GPU %d has %s free: lower --chunks or --size", plan->count,
                              gpuipc_units_format_size(plan->total, a, sizeof(a)),
                              gpuipc_gpu_ordinal(sc->env->gpu),
                              gpuipc_units_format_size(free_b, b, sizeof(b)));
    return 0;
}

static int reserve(gpuipc_scenario *sc, gpuipc_chunks *c, gpuipc_err *err)
{
    vmm_mem *m = c->mem;
    CUdeviceptr base = 0;
    uint64_t t = gpuipc_clock_ns();
    CUresult rc;

    m->gpu = sc->env->gpu;
    m->home = sc->env->role == GPUIPC_ROLE_CONSUMER ? sc->home_ordinal
                                                : gpuipc_gpu_ordinal(sc->env->gpu);
    m->laps = sc->laps;
    gpuipc_vmm_prop(sc->env->gpu, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    CU_MEM_ALLOCATION_COMP_NONE, &m->prop);
    GPUIPC_CU_GOTO(rc, err, out, cuMemAddressReserve, &base, c->plan.total, c->gran, 0, 0);
    gpuipc_laps_add(m->laps, GPUIPC_LAP_RESERVE, t);
    c->base = base;
out:
    return gpuipc_cudrv_errno(rc);
}

static int create(gpuipc_chunks *c, unsigned i, gpuipc_err *err)
{
    vmm_mem *m = c->mem;
    CUmemGenericAllocationHandle h;
    uint64_t t = gpuipc_clock_ns();
    CUresult rc = GPUIPC_CU_CALL(cuMemCreate, &h, c->plan.chunk, &m->prop, 0);

    spent(m, T_CREATE, t);
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuMemCreate", rc, __FILE__, __LINE__));
    c->h[i] = h;
    return 0;
}

/* Maps handle h at slot; cuMemMap refuses a handle smaller than the chunk. */
static int map(gpuipc_chunks *c, unsigned slot, uint64_t h, gpuipc_err *err)
{
    uint64_t t = gpuipc_clock_ns();
    CUresult rc;

    GPUIPC_CU_GOTO(rc, err, out, cuMemMap, gpuipc_chunks_at(c, slot), c->plan.chunk, 0,
                   (CUmemGenericAllocationHandle)h, 0);
    spent(c->mem, T_MAP, t);
out:
    return gpuipc_cudrv_errno(rc);
}

/* Grants this device read-write access to slots first .. first+n-1. */
static int grant(gpuipc_chunks *c, unsigned first, unsigned n, gpuipc_err *err)
{
    vmm_mem *m = c->mem;
    CUmemAccessDesc access;
    uint64_t t = gpuipc_clock_ns();
    CUresult rc;

    memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = gpuipc_gpu_ordinal(m->gpu);
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    GPUIPC_CU_GOTO(rc, err, out, cuMemSetAccess, gpuipc_chunks_at(c, first),
                   (size_t)n * c->plan.chunk, &access, 1);
    spent(m, T_ACCESS, t);
out:
    return gpuipc_cudrv_errno(rc);
}

/* The -v line of each call is left out (thousands of them): the per-call
 * times add up in spent, which -v prints once. */
static int export_fd(gpuipc_scenario *sc, gpuipc_chunks *c, uint64_t h, gpuipc_err *err)
{
    uint64_t t = gpuipc_clock_ns();
    int fd = gpuipc_vmm_export_raw((CUmemGenericAllocationHandle)h, err);

    (void)sc;
    spent(c->mem, T_EXPORT, t);
    return fd;
}


/* Checks that the imported handle h lives on the device offered. */
static int check_location(const vmm_mem *m, CUmemGenericAllocationHandle h, gpuipc_err *err)
{
    CUmemAllocationProp prop;
    CUresult rc;

    GPUIPC_CU_GOTO(rc, err, out, cuMemGetAllocationPropertiesFromHandle, &prop, h);
    if (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop.location.id != m->home)
        return gpuipc_err_set(err, -EPROTO, "it lives at location type %d id %d, not on GPU "
                              "%d as offered", (int)prop.location.type, prop.location.id,
                              m->home);
out:
    return gpuipc_cudrv_errno(rc);
}

/* Imports FD number i; the first is checked to live on the device offered. */
static int import_fd(gpuipc_scenario *sc, gpuipc_chunks *c, unsigned i, int fd, gpuipc_err *err)
{
    vmm_mem *m = c->mem;
    CUmemGenericAllocationHandle h;
    uint64_t t = gpuipc_clock_ns();
    CUresult rc;
    int ret;

    (void)sc;
    rc = GPUIPC_CU_CALL(cuMemImportFromShareableHandle, &h, (void *)(uintptr_t)fd,
                                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    spent(m, T_IMPORT, t);
    if (rc != CUDA_SUCCESS) {
        gpuipc_cudrv_fail(err, "cuMemImportFromShareableHandle", rc, __FILE__, __LINE__);
        gpuipc_mech_name_fd(err, fd);
        return gpuipc_cudrv_errno(rc);
    }
    if (i == 0 && (ret = check_location(m, h, err)) < 0) {
        GPUIPC_CU_CALL(cuMemRelease, h);
        return ret;
    }
    c->h[i] = h;
    return 1;
}

/* Kernels may still be running over the range: synchronise, then unmap
 * every mapped slot and free the range, going on past failures. */
static int unmap(gpuipc_chunks *c, gpuipc_err *err)
{
    CUresult first = CUDA_SUCCESS;
    unsigned i;

    GPUIPC_CU_NOTE(first, err, cuCtxSynchronize);
    for (i = 0; i < c->plan.count; i++)
        if (c->mapped[i])
            GPUIPC_CU_NOTE(first, err, cuMemUnmap, gpuipc_chunks_at(c, i), c->plan.chunk);
    GPUIPC_CU_NOTE(first, err, cuMemAddressFree, c->base, c->plan.total);
    return gpuipc_cudrv_errno(first);
}

static int drop(uint64_t h, gpuipc_err *err)
{
    CUresult first = CUDA_SUCCESS;

    GPUIPC_CU_NOTE(first, err, cuMemRelease, (CUmemGenericAllocationHandle)h);
    return gpuipc_cudrv_errno(first);
}

static void describe(gpuipc_chunks *c, gpuipc_buf *buf, int imported, uint64_t ns)
{
    vmm_mem *m = c->mem;
    char human[32], chuman[32];

    gpuipc_gpu_view(m->gpu, c->base, c->plan.total, 0, &buf->view);
    snprintf(buf->detail, sizeof(buf->detail), "%s %u chunks of %s back to back on GPU %d: "
             "%s%s", imported ? "mapping" : "allocated", c->plan.count,
             gpuipc_units_format_size(c->plan.chunk, chuman, sizeof(chuman)),
             gpuipc_gpu_ordinal(m->gpu),
             gpuipc_units_format_size(c->plan.total, human, sizeof(human)),
             c->swap ? " (SABOTAGE: chunks 0 and 1 swapped)" : "");
    if (ns > 0)
        snprintf(buf->detail + strlen(buf->detail), sizeof(buf->detail) - strlen(buf->detail),
                 ", %.1f us per chunk", (double)ns / 1e3 / c->plan.count);
}

/* -v: once a step is over, one line with its driver calls and their mean
 * cost. */
static void done(gpuipc_scenario *sc, gpuipc_chunks *c, unsigned step)
{
    static const int alloc_calls[] = {T_CREATE, T_MAP, T_ACCESS, -1};
    static const int export_calls[] = {T_EXPORT, -1};
    static const int import_calls[] = {T_IMPORT, T_MAP, T_ACCESS, -1};
    const int *calls = step == GPUIPC_STEP_ALLOC    ? alloc_calls
                       : step == GPUIPC_STEP_EXPORT ? export_calls
                                                    : import_calls;
    vmm_mem *m = c->mem;
    char text[512] = "";
    size_t used = 0;
    int i;

    for (i = 0; calls[i] >= 0 && used < sizeof(text); i++) {
        unsigned k = m->spent[calls[i]].calls;

        used += (size_t)snprintf(text + used, sizeof(text) - used, "%s%s %u x %.1f us",
                                 i ? ", " : "", call_names[calls[i]], k,
                                 k ? (double)m->spent[calls[i]].ns / k / 1e3 : 0.0);
    }
    gpuipc_log_step(&sc->env->log, GPUIPC_LOG_VERBOSE, c->ops->mech, step, GPUIPC_LOG_NO_TIME,
                    "driver time per call: %s", text);
}

static const gpuipc_chunk_ops vmm_ops = {
    .mech = "vmm-chunks",
    .mem_size = sizeof(vmm_mem),
    .granularity = granularity,
    .fits = fits,
    .reserve = reserve,
    .create = create,
    .map = map,
    .grant = grant,
    .export_fd = export_fd,
    .import_fd = import_fd,
    .unmap = unmap,
    .drop = drop,
    .describe = describe,
    .done = done,
};

static int chunks_alloc(gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    return gpuipc_chunks_alloc(sc, &vmm_ops, size, buf, err);
}

static int chunks_export(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                         unsigned *nfds, gpuipc_err *err)
{
    int rc = gpuipc_chunks_export(sc, buf, offer, fds, nfds, err);

    if (rc == 0)
        memcpy(offer->uuid, gpuipc_gpu_uuid(sc->env->gpu), GPUIPC_UUID_LEN);
    return rc;
}

static int chunks_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                         unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    int rc;

    memset(buf, 0, sizeof(*buf));
    if ((rc = gpuipc_gpu_check_offer(sc, offer->uuid, err)) < 0)
        return rc;
    return gpuipc_chunks_import(sc, &vmm_ops, offer, fds, nfds, buf, err);
}

const gpuipc_mech gpuipc_mech_vmm_chunks = {
    .name = "vmm-chunks",
    .summary = "--chunks VMM allocations, one FD each in batches of 253, mapped back to back "
               "into one range",
    .needs_cuda = 1,
    .by_default = 1,
    .chunked = 1,
    .cross_device = 1,
    .probe = gpuipc_vmm_fd_probe,
    .alloc = chunks_alloc,
    .export = chunks_export,
    .export_more = gpuipc_chunks_export_more,
    .import = chunks_import,
    .import_more = gpuipc_chunks_import_more,
    .release = gpuipc_chunks_release,
};
