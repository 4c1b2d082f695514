/* SPDX-License-Identifier: Apache-2.0 */
/* memfd_chunks.c: host shared memory made of --chunks memfds, mapped back
 * to back into one reserved range on each side. It needs no GPU, so it
 * proves the chunk engine (FD batches of 253, their numbering, the order of
 * the chunks, a receiver's RLIMIT_NOFILE) anywhere; vmm-chunks is the same
 * engine over VMM allocations. These are its operations on host memory:
 *
 *   P1 reserve the range (PROT_NONE); per chunk: memfd, sealed, mmap MAP_FIXED
 *   P2 export, batch by batch: duplicates of the memfds, in chunk order
 *   C1 reserve the range; per FD: check the memfd, mmap MAP_FIXED at its slot
 *   both: munmap the range; the producer closes its memfds */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/proc.h"
#include "core/units.h"
#include "mech/chunks.h"
#include "mech/memfd.h"
#include "session/pattern.h"

static int page_granularity(gpuipc_scenario *sc, uint64_t *gran, gpuipc_err *err)
{
    (void)sc;
    (void)err;
    *gran = (uint64_t)sysconf(_SC_PAGESIZE);
    return 0;
}

/* Each chunk is a mapping of its own (memfds never merge): vm.max_map_count
 * caps the chunks a process can map. Said before the first mmap, not as an
 * ENOMEM at chunk 65501. */
#define MAPS_MARGIN 64 /* mappings a process may make besides the chunks */

static int maps_fit(unsigned count, gpuipc_err *err)
{
    unsigned now, max;

    if (gpuipc_proc_map_count(&now, &max) < 0 || now + count + MAPS_MARGIN <= max)
        return 0;
    return gpuipc_err_set(err, -ENOMEM, "%u chunks need a memory mapping each, this process "
                          "has %u already, and vm.max_map_count is %u: raise it (sysctl -w "
                          "vm.max_map_count=%u) or use fewer --chunks", count, now, max,
                          now + count + MAPS_MARGIN);
}

/* The producer's look, before it makes any FD room. */
static int fits(gpuipc_scenario *sc, const gpuipc_chunk_plan *plan, gpuipc_err *err)
{
    (void)sc;
    return maps_fit(plan->count, err);
}

static int reserve(gpuipc_scenario *sc, gpuipc_chunks *c, gpuipc_err *err)
{
    void *base;
    int rc;

    (void)sc;
    if ((rc = maps_fit(c->plan.count, err)) < 0)
        return rc;
    base = mmap(NULL, c->plan.total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                -1, 0);
    if (base == MAP_FAILED)
        return gpuipc_err_set(err, -errno, "mmap: reserving %llu bytes: %s",
                              (unsigned long long)c->plan.total, strerror(errno));
    c->base = (uint64_t)(uintptr_t)base;
    return 0;
}

static int create(gpuipc_chunks *c, unsigned i, gpuipc_err *err)
{
    int fd = gpuipc_memfd_create(c->plan.chunk, err);

    if (fd < 0)
        return fd;
    c->h[i] = (uint64_t)fd;
    return 0;
}

/* Maps the memfd h over the chunk at slot. */
static int map(gpuipc_chunks *c, unsigned slot, uint64_t h, gpuipc_err *err)
{
    void *at = (void *)(uintptr_t)gpuipc_chunks_at(c, slot);

    if (mmap(at, c->plan.chunk, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE,
             (int)h, 0) == MAP_FAILED)
        return gpuipc_err_set(err, -errno, "mmap chunk %u at offset %llu: %s", slot,
                              (unsigned long long)slot * c->plan.chunk, strerror(errno));
    return 0;
}

static int export_fd(gpuipc_scenario *sc, gpuipc_chunks *c, uint64_t h, gpuipc_err *err)
{
    int fd = fcntl((int)h, F_DUPFD_CLOEXEC, 0);

    (void)sc;
    (void)c;
    if (fd < 0)
        return gpuipc_err_set(err, -errno, "fcntl F_DUPFD_CLOEXEC: %s", strerror(errno));
    return fd;
}

/* The received memfd is mapped as it is: this side holds no handle of its
 * own, the mapping keeps the memory. */
static int import_fd(gpuipc_scenario *sc, gpuipc_chunks *c, unsigned i, int fd, gpuipc_err *err)
{
    int rc;

    (void)sc;
    if ((rc = gpuipc_memfd_check(fd, c->plan.chunk, err)) < 0)
        return rc;
    c->h[i] = (uint64_t)fd;
    return 0;
}

static int unmap(gpuipc_chunks *c, gpuipc_err *err)
{
    if (munmap((void *)(uintptr_t)c->base, c->plan.total) < 0)
        return gpuipc_err_set(err, -errno, "munmap: %s", strerror(errno));
    return 0;
}

static int drop(uint64_t h, gpuipc_err *err)
{
    if (close((int)h) < 0)
        return gpuipc_err_set(err, -errno, "close memfd %d: %s", (int)h, strerror(errno));
    return 0;
}

static void describe(gpuipc_chunks *c, gpuipc_buf *buf, int imported, uint64_t ns)
{
    char human[32], chuman[32];

    (void)ns;
    buf->view.ops = &gpuipc_pattern_cpu_ops;
    buf->view.host = (void *)(uintptr_t)c->base;
    buf->view.size = c->plan.total;
    snprintf(buf->detail, sizeof(buf->detail), "%s%u memfds of %s back to back: %s%s",
             imported ? "mapped " : "", c->plan.count,
             gpuipc_units_format_size(c->plan.chunk, chuman, sizeof(chuman)),
             gpuipc_units_format_size(c->plan.total, human, sizeof(human)),
             c->swap ? " (SABOTAGE: chunks 0 and 1 swapped)" : "");
}

static const gpuipc_chunk_ops host_ops = {
    .mech = "memfd-chunks",
    .held_fds = "a memfd per chunk and a batch of duplicates",
    .granularity = page_granularity,
    .fits = fits,
    .reserve = reserve,
    .create = create,
    .map = map,
    .export_fd = export_fd,
    .import_fd = import_fd,
    .unmap = unmap,
    .drop = drop,
    .describe = describe,
};

static int chunks_alloc(gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    return gpuipc_chunks_alloc(sc, &host_ops, size, buf, err);
}

static int chunks_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                         unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    return gpuipc_chunks_import(sc, &host_ops, offer, fds, nfds, buf, err);
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
    .export = gpuipc_chunks_export,
    .export_more = gpuipc_chunks_export_more,
    .import = chunks_import,
    .import_more = gpuipc_chunks_import_more,
    .release = gpuipc_chunks_release,
};
