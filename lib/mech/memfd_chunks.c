/* mech_memfd_chunks.c: host shared memory made of --chunks memfds, mapped
 * back to back into one reserved range on each side. It needs no GPU, so it
 * proves the chunk machinery (FD batches of 253, their numbering, the order
 * of the chunks, a receiver's RLIMIT_NOFILE) anywhere; vmm-chunks is the
 * same plan with VMM allocations.
 *
 *   P1 reserve the range (PROT_NONE); per chunk: memfd, sealed, mmap MAP_FIXED
 *   P2 export, batch by batch: duplicates of the memfds, in chunk order
 *   C1 reserve the range; per FD: check the memfd, mmap MAP_FIXED at its slot
 *   both: munmap the range; the producer closes its memfds */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mech/chunks.h"
#include "session/env.h"
#include "core/log.h"
#include "session/mech.h"
#include "mech/memfd.h"
#include "session/pattern.h"
#include "core/step.h"
#include "core/units.h"

typedef struct chunks_priv {
    gpuipc_chunk_plan plan;
    void *base;   /* the reserved range, plan.total bytes */
    int *fds;     /* producer: one memfd per chunk, -1 once closed; consumer: NULL */
    int swap;     /* the chunk-order sabotage is armed for this side */
} chunks_priv;

static uint64_t page_size(void)
{
    return (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Unmaps the range and closes the memfds. Returns 0, or the munmap error. */
static int release_priv(chunks_priv *p, gpuipc_err *err)
{
    unsigned i;
    int rc = 0;

    if (p->base != NULL && munmap(p->base, p->plan.total) < 0)
        rc = gpuipc_err_set(err, -errno, "munmap: %s", strerror(errno));
    if (p->fds != NULL)
        for (i = 0; i < p->plan.count; i++)
            if (p->fds[i] >= 0)
                close(p->fds[i]);
    free(p->fds);
    free(p);
    return rc;
}

/* Reserves the range and sets up priv for plan. */
static chunks_priv *reserve(const gpuipc_env *env, const gpuipc_chunk_plan *plan, gpuipc_err *err)
{
    chunks_priv *p = calloc(1, sizeof(*p));

    if (p == NULL) {
        gpuipc_err_set(err, -ENOMEM, "memfd-chunks: out of memory");
        return NULL;
    }
    p->plan = *plan;
    p->swap = gpuipc_inject_sabotage(&env->inject, env->role, GPUIPC_SABOTAGE_CHUNK_ORDER);
    p->base = mmap(NULL, plan->total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p->base == MAP_FAILED) {
        gpuipc_err_set(err, -errno, "mmap: reserving %llu bytes: %s",
                       (unsigned long long)plan->total, strerror(errno));
        p->base = NULL;
        release_priv(p, NULL);
        return NULL;
    }
    return p;
}

/* Maps fd over the chunk at slot. */
static int map_chunk(chunks_priv *p, unsigned slot, int fd, gpuipc_err *err)
{
    void *at = (char *)p->base + (uint64_t)slot * p->plan.chunk;

    if (mmap(at, p->plan.chunk, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE,
             fd, 0) == MAP_FAILED)
        return gpuipc_err_set(err, -errno, "mmap chunk %u at offset %llu: %s", slot,
                              (unsigned long long)slot * p->plan.chunk, strerror(errno));
    return 0;
}

static void set_buf(chunks_priv *p, gpuipc_buf *buf, const char *what)
{
    char human[32], chuman[32];

    buf->view.ops = &gpuipc_pattern_cpu_ops;
    buf->view.host = p->base;
    buf->view.size = p->plan.total;
    buf->size = p->plan.total;
    buf->granularity = page_size();
    buf->priv = p;
    snprintf(buf->detail, sizeof(buf->detail), "%s%u memfds of %s back to back: %s%s", what,
             p->plan.count, gpuipc_units_format_size(p->plan.chunk, chuman, sizeof(chuman)),
             gpuipc_units_format_size(p->plan.total, human, sizeof(human)),
             p->swap ? " (SABOTAGE: chunks 0 and 1 swapped)" : "");
}

static int chunks_alloc(gpuipc_env *env, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    gpuipc_chunk_plan plan;
    char note[160];
    chunks_priv *p;
    unsigned i;
    int rc;

    memset(buf, 0, sizeof(*buf));
    rc = gpuipc_chunks_plan(size, env->chunks ? env->chunks : GPUIPC_DEFAULT_CHUNKS,
                            page_size(), &plan, err);
    if (rc < 0)
        return rc;
    /* This side keeps one memfd per chunk open, and a batch of duplicates. */
    if ((rc = gpuipc_chunks_fd_room(plan.count + GPUIPC_WIRE_MAX_FDS,
                                    "a memfd per chunk and a batch of duplicates", note,
                                    sizeof(note), err)) < 0)
        return rc;
    if (note[0] != '\0')
        gpuipc_log_step(&env->log, GPUIPC_LOG_NORMAL, "memfd-chunks", GPUIPC_STEP_ALLOC,
                        GPUIPC_LOG_NO_TIME, "%s", note);
    if ((p = reserve(env, &plan, err)) == NULL)
        return -ENOMEM;
    p->fds = malloc(plan.count * sizeof(int));
    if (p->fds == NULL) {
        release_priv(p, NULL);
        return gpuipc_err_set(err, -ENOMEM, "memfd-chunks: out of memory");
    }
    for (i = 0; i < plan.count; i++)
        p->fds[i] = -1;
    for (i = 0; i < plan.count; i++) {
        p->fds[i] = gpuipc_memfd_create(plan.chunk, err);
        if (p->fds[i] < 0 || (rc = map_chunk(p, i, p->fds[i], err)) < 0) {
            rc = p->fds[i] < 0 ? p->fds[i] : rc;
            gpuipc_err_prefix(err, "chunk %u of %u", i, plan.count);
            release_priv(p, NULL);
            return rc;
        }
    }
    /* This side maps its chunks in order; the sabotage swaps them on export. */
    set_buf(p, buf, "");
    return 0;
}

/* Duplicates the memfds of FD numbers first .. first+n-1 into fds. */
static int dup_batch(chunks_priv *p, unsigned first, unsigned n, int *fds, gpuipc_err *err)
{
    unsigned k;

    for (k = 0; k < n; k++) {
        unsigned chunk = gpuipc_chunks_slot(first + k, p->plan.count, p->swap);

        fds[k] = fcntl(p->fds[chunk], F_DUPFD_CLOEXEC, 0);
        if (fds[k] < 0) {
            int e = errno;

            gpuipc_wire_close_fds(fds, k);
            return gpuipc_err_set(err, -e, "fcntl F_DUPFD_CLOEXEC for chunk %u: %s", chunk,
                                  strerror(e));
        }
    }
    return 0;
}

static int chunks_export(gpuipc_env *env, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                         unsigned *nfds, gpuipc_err *err)
{
    chunks_priv *p = buf->priv;
    unsigned n = p->plan.count < GPUIPC_WIRE_MAX_FDS ? p->plan.count : GPUIPC_WIRE_MAX_FDS;
    int rc;

    (void)env;
    if ((rc = dup_batch(p, 0, n, fds, err)) < 0)
        return rc;
    *nfds = n;
    gpuipc_chunks_offer(&p->plan, buf->granularity, offer);
    return 0;
}

static int chunks_export_more(gpuipc_env *env, gpuipc_buf *buf, unsigned first, int *fds,
                              unsigned max, unsigned *nfds, gpuipc_err *err)
{
    chunks_priv *p = buf->priv;
    unsigned n = p->plan.count - first < max ? p->plan.count - first : max;
    int rc;

    (void)env;
    if (first >= p->plan.count)
        return gpuipc_err_set(err, -EINVAL, "no chunk %u: there are %u", first, p->plan.count);
    if ((rc = dup_batch(p, first, n, fds, err)) < 0)
        return rc;
    *nfds = n;
    return 0;
}

static int chunks_import_more(gpuipc_env *env, gpuipc_buf *buf, unsigned first, const int *fds,
                              unsigned nfds, gpuipc_err *err)
{
    chunks_priv *p = buf->priv;
    unsigned k;
    int rc;

    (void)env;
    if (first > p->plan.count || nfds > p->plan.count - first)
        return gpuipc_err_set(err, -EPROTO, "FDs %u to %u: the offer has %u chunks", first,
                              first + nfds - 1, p->plan.count);
    for (k = 0; k < nfds; k++) {
        unsigned slot = gpuipc_chunks_slot(first + k, p->plan.count, p->swap);

        if ((rc = gpuipc_memfd_check(fds[k], p->plan.chunk, err)) < 0 ||
            (rc = map_chunk(p, slot, fds[k], err)) < 0) {
            gpuipc_err_prefix(err, "chunk %u", first + k);
            return rc;
        }
    }
    return 0;
}

static int chunks_import(gpuipc_env *env, const gpuipc_msg_offer *offer, const int *fds,
                         unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    gpuipc_chunk_plan plan;
    chunks_priv *p;
    int rc;

    memset(buf, 0, sizeof(*buf));
    if ((rc = gpuipc_chunks_from_offer(offer, &plan, err)) < 0)
        return rc;
    if (offer->granularity != page_size())
        return gpuipc_err_set(err, -EPROTO, "offered granularity %llu is not this side's page "
                              "size %llu", (unsigned long long)offer->granularity,
                              (unsigned long long)page_size());
    if ((p = reserve(env, &plan, err)) == NULL)
        return -ENOMEM;
    set_buf(p, buf, "mapped ");
    if ((rc = chunks_import_more(env, buf, 0, fds, nfds, err)) < 0) {
        release_priv(p, NULL);
        memset(buf, 0, sizeof(*buf));
        return rc;
    }
    return 0;
}

static int chunks_release(gpuipc_env *env, gpuipc_buf *buf, gpuipc_err *err)
{
    chunks_priv *p = buf->priv;
    int rc;

    (void)env;
    if (p == NULL)
        return 0;
    rc = release_priv(p, err);
    memset(buf, 0, sizeof(*buf));
    return rc;
}

const gpuipc_mech gpuipc_mech_memfd_chunks = {
    .name = "memfd-chunks",
    .summary = "host shared memory as --chunks memfds, FDs in batches of 253, mapped back to "
               "back (no GPU)",
    .needs_cuda = 0,
    .by_default = 0,
    .memory = GPUIPC_MECH_HOST,
    .chunked = 1,
    .probe = gpuipc_memfd_probe,
    .alloc = chunks_alloc,
    .export = chunks_export,
    .export_more = chunks_export_more,
    .import = chunks_import,
    .import_more = chunks_import_more,
    .release = chunks_release,
};
