/* SPDX-License-Identifier: Apache-2.0 */
/* memfd.c: host shared memory from memfd_create(), passed as an FD and
 * mapped by both sides. It needs no GPU, so it exercises the whole
 * two-process machinery anywhere, and it is the baseline that GPU mechanisms
 * are compared with.
 *
 *   P1 memfd_create, fallocate, seal against shrink and growth, mmap
 *   P2 export: a duplicate of the memfd, sent with SCM_RIGHTS
 *   C1 import: fstat (size), F_GET_SEALS (sealed against shrinking), mmap
 *   both: munmap (the memory goes once the last mapping and FD are gone) */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/scenario.h"
#include "session/mech.h"
#include "mech/memfd.h"
#include "session/pattern.h"
#include "core/account.h"
#include "core/units.h"

typedef struct memfd_priv {
    int fd; /* producer only; -1 on the consumer */
    void *map;
    size_t len;
} memfd_priv;

int gpuipc_memfd_probe(gpuipc_scenario *sc, gpuipc_err *why)
{
    int fd = memfd_create("gpuipc_test-probe", MFD_CLOEXEC | MFD_ALLOW_SEALING);

    (void)sc;
    if (fd < 0)
        return gpuipc_err_set(why, -ENOTSUP, "memfd_create: %s (needs Linux 3.17 or later; "
                              "a seccomp profile may block it)", strerror(errno));
    close(fd);
    return 0;
}

static uint64_t page_round(uint64_t size)
{
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

    return (size + page - 1) / page * page;
}

static void set_view(gpuipc_buf *buf, memfd_priv *priv)
{
    buf->view.ops = &gpuipc_pattern_cpu_ops;
    buf->view.host = priv->map;
    buf->view.dev = 0;
    buf->view.size = priv->len;
    buf->view.first_word = 0;
    buf->size = priv->len;
    buf->granularity = (uint64_t)sysconf(_SC_PAGESIZE);
    buf->priv = priv;
}

int gpuipc_memfd_create(uint64_t len, gpuipc_err *err)
{
    char human[32];
    int fd, e;

    fd = memfd_create("gpuipc_test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return gpuipc_err_set(err, -errno, "memfd_create: %s", strerror(errno));
    /* Allocate every page now, so that too large a size fails here with
     * ENOSPC or ENOMEM rather than as a SIGBUS at the first write. */
    if (ftruncate(fd, (off_t)len) < 0)
        e = errno;
    else
        e = posix_fallocate(fd, 0, (off_t)len);
    if (e != 0) {
        close(fd);
        return gpuipc_err_set(err, -e, "memfd: allocating %s: %s",
                              gpuipc_units_format_size(len, human, sizeof(human)), strerror(e));
    }
    /* Sealed, the size can never change, so the consumer's mapping can
     * never lose pages under it (which would be a SIGBUS). */
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
        e = errno;
        close(fd);
        return gpuipc_err_set(err, -e, "fcntl F_ADD_SEALS: %s", strerror(e));
    }
    return fd;
}

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010 /* Linux 5.1; older C libraries lack the name */
#endif

int gpuipc_memfd_check(int fd, uint64_t len, gpuipc_err *err)
{
    struct stat st;
    int seals;

    char kind[160];

    if (fstat(fd, &st) < 0)
        return gpuipc_err_sys(err, "fstat", errno, "fstat memfd: %s", strerror(errno));
    /* Seals first: only a memfd has them, and what else it is says more
     * than its size. */
    seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0)
        return gpuipc_err_sys(err, "fcntl", errno, "the FD offered as a memfd is %s, not a "
                              "memfd (fcntl F_GET_SEALS: %s)",
                              gpuipc_account_fd_kind(fd, kind, sizeof(kind)), strerror(errno));
    if ((uint64_t)st.st_size < len)
        return gpuipc_err_set(err, -EPROTO, "memfd holds %lld bytes, the offer claims %llu",
                              (long long)st.st_size, (unsigned long long)len);
    if (!(seals & F_SEAL_SHRINK))
        return gpuipc_err_set(err, -EPROTO, "memfd is not sealed against shrinking, so the "
                              "producer could truncate it under this mapping (SIGBUS)");
    if (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE))
        return gpuipc_err_set(err, -EPROTO, "memfd is sealed against writing (%s), so the "
                              "consumer cannot write its pattern into it through a shared "
                              "mapping", (seals & F_SEAL_WRITE) ? "F_SEAL_WRITE"
                                                                 : "F_SEAL_FUTURE_WRITE");
    return 0;
}

int gpuipc_memfd_alloc(gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    memfd_priv *priv = calloc(1, sizeof(*priv));
    char human[32];
    int rc;

    (void)sc;
    memset(buf, 0, sizeof(*buf));
    if (priv == NULL)
        return gpuipc_err_set(err, -ENOMEM, "memfd: out of memory");
    priv->len = page_round(size);
    priv->fd = gpuipc_memfd_create(priv->len, err);
    if (priv->fd < 0) {
        rc = priv->fd;
        goto out_free;
    }
    /* MAP_POPULATE maps every page now, so that fill measures filling. */
    priv->map = mmap(NULL, priv->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                     priv->fd, 0);
    if (priv->map == MAP_FAILED) {
        rc = gpuipc_err_set(err, -errno, "mmap memfd: %s", strerror(errno));
        goto out_close;
    }
    set_view(buf, priv);
    snprintf(buf->detail, sizeof(buf->detail), "%s of host memory, sealed, page %llu B",
             gpuipc_units_format_size(priv->len, human, sizeof(human)),
             (unsigned long long)buf->granularity);
    return 0;

out_close:
    close(priv->fd);
out_free:
    free(priv);
    return rc;
}

static int memfd_export(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                        unsigned *nfds, gpuipc_err *err)
{
    memfd_priv *priv = buf->priv;

    (void)sc;
    fds[0] = fcntl(priv->fd, F_DUPFD_CLOEXEC, 0);
    if (fds[0] < 0)
        return gpuipc_err_set(err, -errno, "fcntl F_DUPFD_CLOEXEC: %s", strerror(errno));
    *nfds = 1;
    offer->size = buf->size;
    offer->granularity = buf->granularity;
    offer->blob_len = 0;
    return 0;
}

int gpuipc_memfd_fd(const gpuipc_buf *buf)
{
    const memfd_priv *priv = buf->priv;

    return priv != NULL ? priv->fd : -1;
}

int gpuipc_memfd_map(const gpuipc_msg_offer *offer, int fd, gpuipc_buf *buf, gpuipc_err *err)
{
    memfd_priv *priv;
    int rc;

    memset(buf, 0, sizeof(*buf));
    if ((rc = gpuipc_memfd_check(fd, offer->size, err)) < 0)
        return rc;
    priv = calloc(1, sizeof(*priv));
    if (priv == NULL)
        return gpuipc_err_set(err, -ENOMEM, "memfd: out of memory");
    priv->fd = -1;
    priv->len = offer->size;
    priv->map = mmap(NULL, priv->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (priv->map == MAP_FAILED) {
        int e = errno;

        free(priv);
        return gpuipc_err_set(err, -e, "mmap memfd: %s", strerror(e));
    }
    set_view(buf, priv);
    snprintf(buf->detail, sizeof(buf->detail), "mapped %llu bytes of the producer's memfd",
             (unsigned long long)priv->len);
    return 0;
}

static int memfd_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                        unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    int rc;

    (void)sc;
    memset(buf, 0, sizeof(*buf));
    if ((rc = gpuipc_mech_offer_shape("memfd", offer, nfds, 1, GPUIPC_MECH_ANY_BLOB, err)) < 0)
        return rc;
    return gpuipc_memfd_map(offer, fds[0], buf, err);
}

int gpuipc_memfd_release(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err)
{
    memfd_priv *priv = buf->priv;
    int rc = 0;

    (void)sc;
    if (priv == NULL)
        return 0;
    if (munmap(priv->map, priv->len) < 0)
        rc = gpuipc_err_set(err, -errno, "munmap: %s", strerror(errno));
    if (priv->fd >= 0 && close(priv->fd) < 0 && rc == 0)
        rc = gpuipc_err_set(err, -errno, "close memfd: %s", strerror(errno));
    free(priv);
    memset(buf, 0, sizeof(*buf));
    return rc;
}

const gpuipc_mech gpuipc_mech_memfd = {
    .name = "memfd",
    .summary = "host shared memory: memfd_create, FD over SCM_RIGHTS, mmap (no GPU; baseline)",
    .needs_cuda = 0,
    .by_default = 0,
    .memory = GPUIPC_MECH_HOST,
    .probe = gpuipc_memfd_probe,
    .alloc = gpuipc_memfd_alloc,
    .export = memfd_export,
    .import = memfd_import,
    .release = gpuipc_memfd_release,
};
