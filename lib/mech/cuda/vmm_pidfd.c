/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_pidfd.c: VMM device memory whose exported FD the consumer takes
 * itself, with pidfd_open + pidfd_getfd, knowing only the producer's pid and
 * the FD's number from the offer: how PyTorch's expandable segments and UCX
 * share VMM memory. No FD travels over the socket.
 *
 *   P probe: as vmm, and pidfd_getfd works in this process (Linux 5.6)
 *   C probe: as vmm, and this process may take the producer's FDs (ptrace
 *            permission: Yama, CAP_SYS_PTRACE, seccomp); if not, a skip
 *   P export: cuMemExportToShareableHandle -> an FD kept open until release;
 *            the offer carries {pid, FD number}
 *   C import: the pid must be the producer's (from HELLO); pidfd_getfd, then
 *            import and map as vmm, then close the fetched FD */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "session/scenario.h"
#include "session/mech.h"
#include "mech/pidfd.h"
#include "core/step.h"
#include "mech/cuda/vmm.h"

static int pidfd_mech_probe(gpuipc_scenario *sc, gpuipc_err *why)
{
    int rc = gpuipc_vmm_fd_probe(sc, why);

    return rc < 0 ? rc : gpuipc_pidfd_mech_probe(sc, why);
}

static int pidfd_mech_export(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                             unsigned *nfds, gpuipc_err *err)
{
    gpuipc_vmm *v = buf->priv;
    int fd = gpuipc_vmm_export_fd(sc, buf, err);

    (void)fds;
    if (fd < 0)
        return fd;
    /* Kept open until release, which comes after the consumer's END_ACK. */
    v->kept_fd = fd;
    if (gpuipc_inject_wrong_fd(&sc->env->inject, sc->env->role, fd) > 0)
        gpuipc_log_step(&sc->env->log, GPUIPC_LOG_NORMAL, "vmm-pidfd", GPUIPC_STEP_EXPORT,
                        GPUIPC_LOG_NO_TIME, "SABOTAGE: the FD to fetch is of the wrong kind "
                        "(test hook)");
    *nfds = 0;
    gpuipc_vmm_offer(sc, buf, offer);
    gpuipc_pidfd_offer(offer, fd);
    return 0;
}

static int pidfd_mech_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                             unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    int got = gpuipc_pidfd_take(sc, "vmm-pidfd", offer, nfds, err), rc;

    (void)fds;
    if (got < 0)
        return got;
    rc = gpuipc_vmm_import(sc, (void *)(uintptr_t)got, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                           0, offer, buf, err);
    close(got);
    return rc;
}

const gpuipc_mech gpuipc_mech_vmm_pidfd = {
    .name = "vmm-pidfd",
    .summary = "CUDA VMM memory; the consumer takes the FD with pidfd_getfd (no SCM_RIGHTS)",
    .needs_cuda = 1,
    .by_default = 1,
    .fetched_fd = 1,
    .cross_device = 1,
    .probe = pidfd_mech_probe,
    .alloc = gpuipc_vmm_fd_alloc,
    .export = pidfd_mech_export,
    .import = pidfd_mech_import,
    .release = gpuipc_vmm_release,
};
