/* mech_vmm_chunks.c: device memory made of --chunks separate VMM
 * allocations, mapped back to back into one reserved range on each side:
 * how PyTorch's expandable segments grow a segment and share it. Each chunk
 * travels as its own FD, 253 to a message at most.
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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mech/chunks.h"
#include "core/clock.h"
#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "core/log.h"
#include "session/mech.h"
#include "core/step.h"
#include "core/units.h"
#include "mech/cuda/vmm.h"

typedef struct vchunks {
    gpuipc_chunk_plan plan;
    gpuipc_gpu *gpu;
    uint64_t gran;
    CUdeviceptr base;                 /* the reserved range, plan.total bytes */
    CUmemGenericAllocationHandle *h;  /* producer: chunk i; consumer: FD number i */
    unsigned char *held;              /* h[i] is a live handle */
    unsigned char *mapped;            /* slot i of the range is mapped */
    int swap;                         /* the chunk-order sabotage is armed here */
    int home;                         /* ordinal of the device that holds the memory */
    gpuipc_laps *laps;                /* --bench: the consumer's laps, or NULL */
    struct {
        uint64_t ns;
        unsigned calls;
    } spent[5];                       /* time in each driver call, for -v: what a chunk costs */
} vchunks;

/* The driver calls whose time vmm-chunks adds up, per chunk. */
enum { T_CREATE, T_MAP, T_ACCESS, T_EXPORT, T_IMPORT };
static const char *const call_names[] = {"cuMemCreate", "cuMemMap", "cuMemSetAccess",
                                          "cuMemExportToShareableHandle",
                                          "cuMemImportFromShareableHandle"};

static void spent(vchunks *c, int call, uint64_t t0)
{
    c->spent[call].ns += gpuipc_clock_ns() - t0;
    c->spent[call].calls++;
    if (call == T_MAP)
        gpuipc_laps_add(c->laps, GPUIPC_LAP_MAP, t0);
    else if (call == T_ACCESS)
        gpuipc_laps_add(c->laps, GPUIPC_LAP_ACCESS, t0);
}

/* -v: one line with the calls made so far in step and their mean cost. */
static void log_spent(gpuipc_env *env, vchunks *c, unsigned step, const int *calls, int n)
{
    char text[512];
    size_t used = 0;
    int i;

    text[0] = '\0';
    for (i = 0; i < n && used < sizeof(text); i++) {
        unsigned k = c->spent[calls[i]].calls;

        used += (size_t)snprintf(text + used, sizeof(text) - used, "%s%s %u x %.1f us",
                                 i ? ", " : "", call_names[calls[i]], k,
                                 k ? (double)c->spent[calls[i]].ns / k / 1e3 : 0.0);
    }
    gpuipc_log_step(&env->log, GPUIPC_LOG_VERBOSE, "vmm-chunks", step, GPUIPC_LOG_NO_TIME,
                    "driver time per call: %s", text);
}

/* Unmaps, frees and releases everything, continuing past failures. */
static CUresult release_all(vchunks *c, gpuipc_err *err)
{
    CUresult first = CUDA_SUCCESS;
    unsigned i;

    if (c->base != 0) {
        /* Kernels may still be running over the range. */
        GPUIPC_CU_NOTE(first, err, cuCtxSynchronize);
        for (i = 0; i < c->plan.count; i++)
            if (c->mapped[i])
                GPUIPC_CU_NOTE(first, err, cuMemUnmap, c->base + (CUdeviceptr)i * c->plan.chunk,
                               c->plan.chunk);
        GPUIPC_CU_NOTE(first, err, cuMemAddressFree, c->base, c->plan.total);
    }
    for (i = 0; i < c->plan.count; i++)
        if (c->held[i])
            GPUIPC_CU_NOTE(first, err, cuMemRelease, c->h[i]);
    free(c->h);
    free(c->held);
    free(c->mapped);
    free(c);
    return first;
}

/* Allocates the bookkeeping and reserves the range. */
static vchunks *reserve(gpuipc_env *env, const gpuipc_chunk_plan *plan, uint64_t gran,
                        gpuipc_err *err)
{
    vchunks *c = calloc(1, sizeof(*c));
    CUresult rc;
    uint64_t t;

    if (c == NULL || (c->h = calloc(plan->count, sizeof(*c->h))) == NULL ||
        (c->held = calloc(plan->count, 1)) == NULL ||
        (c->mapped = calloc(plan->count, 1)) == NULL) {
        if (c != NULL) {
            free(c->h);
            free(c->held);
        }
        free(c);
        gpuipc_err_set(err, -ENOMEM, "vmm-chunks: out of memory for %u chunks", plan->count);
        return NULL;
    }
    c->plan = *plan;
    c->gran = gran;
    c->gpu = env->gpu;
    c->home = env->role == GPUIPC_ROLE_CONSUMER ? env->home_ordinal
                                                : gpuipc_gpu_ordinal(env->gpu);
    c->swap = gpuipc_inject_sabotage(&env->inject, env->role, GPUIPC_SABOTAGE_CHUNK_ORDER);
    c->laps = env->laps;
    t = gpuipc_clock_ns();
    GPUIPC_CU_GOTO(rc, err, fail, cuMemAddressReserve, &c->base, plan->total, gran, 0, 0);
    gpuipc_laps_add(c->laps, GPUIPC_LAP_RESERVE, t);
    return c;
fail:
    c->base = 0;
    release_all(c, NULL);
    return NULL;
}

/* Maps handle h at slot. */
static CUresult map_slot(vchunks *c, unsigned slot, CUmemGenericAllocationHandle h,
                         gpuipc_err *err)
{
    CUresult rc;

    if (c->mapped[slot]) {
        gpuipc_err_set(err, -EPROTO, "slot %u is mapped already", slot);
        return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t t = gpuipc_clock_ns();

    GPUIPC_CU_GOTO(rc, err, out, cuMemMap, c->base + (CUdeviceptr)slot * c->plan.chunk,
                   c->plan.chunk, 0, h, 0);
    spent(c, T_MAP, t);
    c->mapped[slot] = 1;
out:
    return rc;
}

/* Grants this device read-write access to slots first .. first+n-1. */
static CUresult grant(vchunks *c, unsigned first, unsigned n, gpuipc_err *err)
{
    CUmemAccessDesc access;
    uint64_t t = gpuipc_clock_ns();
    CUresult rc;

    memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = gpuipc_gpu_ordinal(c->gpu);
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    GPUIPC_CU_GOTO(rc, err, out, cuMemSetAccess, c->base + (CUdeviceptr)first * c->plan.chunk,
                   (size_t)n * c->plan.chunk, &access, 1);
    spent(c, T_ACCESS, t);
out:
    return rc;
}

static void describe(vchunks *c, gpuipc_buf *buf, const char *how, uint64_t ns)
{
    char human[32], chuman[32];

    gpuipc_gpu_view(c->gpu, c->base, c->plan.total, 0, &buf->view);
    buf->size = c->plan.total;
    buf->granularity = c->gran;
    buf->priv = c;
    snprintf(buf->detail, sizeof(buf->detail), "%s %u chunks of %s back to back on GPU %d: "
             "%s%s", how, c->plan.count,
             gpuipc_units_format_size(c->plan.chunk, chuman, sizeof(chuman)),
             gpuipc_gpu_ordinal(c->gpu),
             gpuipc_units_format_size(c->plan.total, human, sizeof(human)),
             c->swap ? " (SABOTAGE: chunks 0 and 1 swapped)" : "");
    if (ns > 0)
        snprintf(buf->detail + strlen(buf->detail), sizeof(buf->detail) - strlen(buf->detail),
                 ", %.1f us per chunk", (double)ns / 1e3 / c->plan.count);
}

static int chunks_alloc(gpuipc_env *env, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    char a[32], b[32];
    CUmemAllocationProp prop;
    gpuipc_chunk_plan plan;
    uint64_t gran, free_b = 0, total = 0, t = gpuipc_clock_ns();
    CUresult rc = CUDA_SUCCESS;
    vchunks *c;
    unsigned i;
    int ret;

    memset(buf, 0, sizeof(*buf));
    gpuipc_vmm_prop(env->gpu, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    CU_MEM_ALLOCATION_COMP_NONE, &prop);
    if ((gran = gpuipc_vmm_granularity(&prop, err)) == 0)
        return -EIO;
    ret = gpuipc_chunks_plan(size, env->chunks ? env->chunks : GPUIPC_DEFAULT_CHUNKS, gran,
                             &plan, err);
    if (ret < 0)
        return ret;
    /* Refused before allocating: with many chunks the total exceeds --size. */
    if (gpuipc_gpu_mem_info(env->gpu, &free_b, &total, err) != CUDA_SUCCESS)
        return -EIO;
    if (plan.total > free_b)
        return gpuipc_err_set(err, -ENOMEM, "%u chunks of at least one granule each need %s, "
                              "and GPU %d has %s free: lower --chunks or --size", plan.count,
                              gpuipc_units_format_size(plan.total, a, sizeof(a)),
                              gpuipc_gpu_ordinal(env->gpu),
                              gpuipc_units_format_size(free_b, b, sizeof(b)));
    if ((c = reserve(env, &plan, gran, err)) == NULL)
        return -EIO;
    for (i = 0; i < plan.count; i++) {
        uint64_t tc = gpuipc_clock_ns();

        rc = gpuipc_cu.cuMemCreate(&c->h[i], plan.chunk, &prop, 0);
        spent(c, T_CREATE, tc);
        if (rc != CUDA_SUCCESS) {
            gpuipc_cudrv_fail(err, "cuMemCreate", rc, __FILE__, __LINE__);
            break;
        }
        c->held[i] = 1;
        if ((rc = map_slot(c, i, c->h[i], err)) != CUDA_SUCCESS)
            break;
    }
    if (rc == CUDA_SUCCESS)
        rc = grant(c, 0, plan.count, err);
    if (rc != CUDA_SUCCESS) {
        gpuipc_err_prefix(err, "chunk %u of %u", i, plan.count);
        release_all(c, NULL);
        return gpuipc_cudrv_errno(rc);
    }
    /* This side maps its chunks in order; the sabotage swaps them on export. */
    describe(c, buf, "allocated", gpuipc_clock_ns() - t);
    {
        static const int calls[] = {T_CREATE, T_MAP, T_ACCESS};

        log_spent(env, c, GPUIPC_STEP_ALLOC, calls, 3);
    }
    return 0;
}

/* Exports the chunks of FD numbers first .. first+n-1 into fds. */
static int export_batch(gpuipc_env *env, vchunks *c, unsigned first, unsigned n, int *fds,
                        gpuipc_err *err)
{
    char note[192];
    unsigned k;
    int rc;

    /* This side holds one batch of FDs at a time; make room for it. */
    rc = gpuipc_chunks_fd_room(n, "a batch of exported FDs", note, sizeof(note), err);
    if (rc < 0)
        return rc;
    if (note[0] != '\0')
        gpuipc_log_step(&env->log, GPUIPC_LOG_NORMAL, "vmm-chunks", GPUIPC_STEP_EXPORT,
                        GPUIPC_LOG_NO_TIME, "%s", note);
    for (k = 0; k < n; k++) {
        unsigned chunk = gpuipc_chunks_slot(first + k, c->plan.count, c->swap);

        uint64_t t = gpuipc_clock_ns();

        fds[k] = gpuipc_vmm_export_handle(env, c->h[chunk], err);
        spent(c, T_EXPORT, t);
        if (fds[k] < 0) {
            rc = fds[k];
            gpuipc_err_prefix(err, "chunk %u", chunk);
            gpuipc_wire_close_fds(fds, k);
            return rc;
        }
    }
    if (first + n == c->plan.count) {
        static const int calls[] = {T_EXPORT};

        log_spent(env, c, GPUIPC_STEP_EXPORT, calls, 1);
    }
    return 0;
}

static int chunks_export(gpuipc_env *env, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                         unsigned *nfds, gpuipc_err *err)
{
    vchunks *c = buf->priv;
    unsigned n = c->plan.count < GPUIPC_WIRE_MAX_FDS ? c->plan.count : GPUIPC_WIRE_MAX_FDS;
    int rc;

    if ((rc = export_batch(env, c, 0, n, fds, err)) < 0)
        return rc;
    *nfds = n;
    gpuipc_chunks_offer(&c->plan, c->gran, offer);
    memcpy(offer->uuid, gpuipc_gpu_uuid(env->gpu), GPUIPC_UUID_LEN);
    return 0;
}

static int chunks_export_more(gpuipc_env *env, gpuipc_buf *buf, unsigned first, int *fds,
                              unsigned max, unsigned *nfds, gpuipc_err *err)
{
    vchunks *c = buf->priv;
    unsigned n;
    int rc;

    if (first >= c->plan.count)
        return gpuipc_err_set(err, -EINVAL, "no chunk %u: there are %u", first, c->plan.count);
    n = c->plan.count - first < max ? c->plan.count - first : max;
    if ((rc = export_batch(env, c, first, n, fds, err)) < 0)
        return rc;
    *nfds = n;
    return 0;
}

/* Checks that the first imported chunk lives on this side's device. */
static int check_location(vchunks *c, gpuipc_err *err)
{
    CUmemAllocationProp prop;
    CUresult rc;

    GPUIPC_CU_GOTO(rc, err, out, cuMemGetAllocationPropertiesFromHandle, &prop, c->h[0]);
    if (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        prop.location.id != c->home)
        return gpuipc_err_set(err, -EPROTO, "chunk 0 lives at location type %d id %d, not on "
                              "GPU %d as offered", (int)prop.location.type, prop.location.id,
                              c->home);
    return 0;
out:
    return gpuipc_cudrv_errno(rc);
}

static int chunks_import_more(gpuipc_env *env, gpuipc_buf *buf, unsigned first, const int *fds,
                              unsigned nfds, gpuipc_err *err)
{
    vchunks *c = buf->priv;
    uint64_t t = gpuipc_clock_ns();
    CUresult rc;
    unsigned k;

    if (first > c->plan.count || nfds == 0 || nfds > c->plan.count - first)
        return gpuipc_err_set(err, -EPROTO, "FDs %u to %u: the offer has %u chunks", first,
                              first + nfds - 1, c->plan.count);
    for (k = 0; k < nfds; k++) {
        unsigned i = first + k;

        uint64_t ti = gpuipc_clock_ns();

        rc = gpuipc_cu.cuMemImportFromShareableHandle(&c->h[i], (void *)(uintptr_t)fds[k],
                                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        spent(c, T_IMPORT, ti);
        if (rc != CUDA_SUCCESS) {
            gpuipc_cudrv_fail(err, "cuMemImportFromShareableHandle", rc, __FILE__, __LINE__);
            goto fail;
        }
        c->held[i] = 1;
        if (i == 0 && check_location(c, err) < 0)
            return -EPROTO;
        /* cuMemMap refuses a handle smaller than the chunk. */
        if ((rc = map_slot(c, gpuipc_chunks_slot(i, c->plan.count, c->swap), c->h[i], err)) !=
            CUDA_SUCCESS)
            goto fail;
    }
    /* With the sabotage, slots 0 and 1 trade places; both are in the batch. */
    if ((rc = grant(c, first, nfds, err)) != CUDA_SUCCESS) {
        k = 0;
        goto fail;
    }
    gpuipc_log_step(&env->log, GPUIPC_LOG_VERBOSE, "vmm-chunks", GPUIPC_STEP_IMPORT,
                    gpuipc_clock_ns() - t, "chunks %u to %u: import, map, access", first,
                    first + nfds - 1);
    if (first + nfds == c->plan.count) {
        static const int calls[] = {T_IMPORT, T_MAP, T_ACCESS};

        log_spent(env, c, GPUIPC_STEP_IMPORT, calls, 3);
    }
    return 0;
fail:
    gpuipc_err_prefix(err, "chunk %u", first + k);
    return gpuipc_cudrv_errno(rc);
}

static int chunks_import(gpuipc_env *env, const gpuipc_msg_offer *offer, const int *fds,
                         unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    CUmemAllocationProp prop;
    gpuipc_chunk_plan plan;
    uint64_t gran;
    vchunks *c;
    int rc;

    memset(buf, 0, sizeof(*buf));
    if ((rc = gpuipc_gpu_check_offer(env, offer->uuid, err)) < 0 ||
        (rc = gpuipc_chunks_from_offer(offer, &plan, err)) < 0)
        return rc;
    gpuipc_vmm_prop(env->gpu, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    CU_MEM_ALLOCATION_COMP_NONE, &prop);
    if ((gran = gpuipc_vmm_granularity(&prop, err)) == 0)
        return -EIO;
    if (plan.chunk % gran != 0)
        return gpuipc_err_set(err, -EPROTO, "offered chunk size %llu is not a multiple of this "
                              "side's granularity %llu", (unsigned long long)plan.chunk,
                              (unsigned long long)gran);
    if ((c = reserve(env, &plan, gran, err)) == NULL)
        return -EIO;
    buf->priv = c;
    if ((rc = chunks_import_more(env, buf, 0, fds, nfds, err)) < 0) {
        release_all(c, NULL);
        memset(buf, 0, sizeof(*buf));
        return rc;
    }
    describe(c, buf, "mapping", 0);
    return 0;
}

static int chunks_release(gpuipc_env *env, gpuipc_buf *buf, gpuipc_err *err)
{
    vchunks *c = buf->priv;
    CUresult rc;

    (void)env;
    if (c == NULL)
        return 0;
    rc = release_all(c, err);
    memset(buf, 0, sizeof(*buf));
    return gpuipc_cudrv_errno(rc);
}

const gpuipc_mech gpuipc_mech_vmm_chunks = {
    .name = "vmm-chunks",
    .summary = "--chunks VMM allocations, one FD each in batches of 253, mapped back to back "
               "into one range",
    .needs_cuda = 1,
    .by_default = 1,
    .chunked = 1,
    .probe = gpuipc_vmm_fd_probe,
    .alloc = chunks_alloc,
    .export = chunks_export,
    .export_more = chunks_export_more,
    .import = chunks_import,
    .import_more = chunks_import_more,
    .release = chunks_release,
};
