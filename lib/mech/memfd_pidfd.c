/* SPDX-License-Identifier: Apache-2.0 */
/* memfd_pidfd.c: host shared memory whose memfd the consumer takes itself
 * with pidfd_open + pidfd_getfd, knowing only the producer's pid and the
 * FD's number: the path vmm-pidfd takes, without a GPU, so that what
 * crosses (or does not cross) a PID namespace, a seccomp filter or a user
 * boundary can be shown on any machine.
 *
 *   P probe: memfd_create and pidfd_getfd work here
 *   C probe: the producer's pid is visible and its FDs may be taken
 *   P export: no FD travels; the offer carries {pid, FD number}
 *   C import: pidfd_getfd, check the memfd, map it, close the fetched FD */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "core/step.h"
#include "mech/memfd.h"
#include "mech/pidfd.h"
#include "session/mech.h"

static int probe(gpuipc_scenario *sc, gpuipc_err *why)
{
    int rc = gpuipc_memfd_probe(sc, why);

    return rc < 0 ? rc : gpuipc_pidfd_mech_probe(sc, why);
}

static int export_fd(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                     unsigned *nfds, gpuipc_err *err)
{
    int fd = gpuipc_memfd_fd(buf);

    (void)fds;
    if (fd < 0)
        return gpuipc_err_set(err, -EBADF, "memfd-pidfd: no memfd to offer");
    /* The producer's own memfd stays open until its release, after END_ACK. */
    if (gpuipc_inject_wrong_fd(&sc->env->inject, sc->env->role, fd) > 0)
        gpuipc_log_step(&sc->env->log, GPUIPC_LOG_NORMAL, "memfd-pidfd", GPUIPC_STEP_EXPORT,
                        GPUIPC_LOG_NO_TIME, "SABOTAGE: the FD to fetch is of the wrong kind "
                        "(test hook)");
    *nfds = 0;
    offer->size = buf->size;
    offer->granularity = buf->granularity;
    gpuipc_pidfd_offer(offer, fd);
    return 0;
}

static int import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds, unsigned nfds,
                  gpuipc_buf *buf, gpuipc_err *err)
{
    int got = gpuipc_pidfd_take(sc, "memfd-pidfd", offer, nfds, err), rc;

    (void)fds;
    memset(buf, 0, sizeof(*buf));
    if (got < 0)
        return got;
    rc = gpuipc_memfd_map(offer, got, buf, err);
    close(got);
    return rc;
}

const gpuipc_mech gpuipc_mech_memfd_pidfd = {
    .name = "memfd-pidfd",
    .summary = "host shared memory; the consumer takes the memfd with pidfd_getfd (no GPU; "
               "the vmm-pidfd path)",
    .memory = GPUIPC_MECH_HOST,
    .fetched_fd = 1,
    .probe = probe,
    .alloc = gpuipc_memfd_alloc,
    .export = export_fd,
    .import = import,
    .release = gpuipc_memfd_release,
};
