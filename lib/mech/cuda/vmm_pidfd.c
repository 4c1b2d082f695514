/* mech_vmm_pidfd.c: VMM device memory whose exported FD the consumer takes
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

#include "session/env.h"
#include "session/mech.h"
#include "mech/pidfd.h"
#include "core/step.h"
#include "mech/cuda/vmm.h"

#define BLOB_LEN 8 /* u32 pid, u32 FD number, little-endian */

static int pidfd_mech_probe(gpuipc_env *env, gpuipc_err *why)
{
    int rc = gpuipc_vmm_fd_probe(env, why);

    if (rc < 0)
        return rc;
    /* The producer only needs the system calls; the consumer needs the
     * right to take the producer's FDs. */
    if (env->role == GPUIPC_ROLE_CONSUMER && env->peer_pid <= 0)
        return gpuipc_err_set(why, -ENOTSUP, "the producer runs in another pid namespace "
                              "(SO_PEERCRED and its HELLO name different pids), where "
                              "pidfd_getfd cannot reach it");
    return gpuipc_pidfd_probe(env->role == GPUIPC_ROLE_CONSUMER ? env->peer_pid : getpid(), why);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int pidfd_mech_export(gpuipc_env *env, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                             unsigned *nfds, gpuipc_err *err)
{
    gpuipc_vmm *v = buf->priv;
    int fd = gpuipc_vmm_export_fd(env, buf, err);

    (void)fds;
    if (fd < 0)
        return fd;
    /* Kept open until release, which comes after the consumer's END_ACK. */
    v->kept_fd = fd;
    if (gpuipc_inject_wrong_fd(&env->inject, env->role, fd) > 0)
        gpuipc_log_step(&env->log, GPUIPC_LOG_NORMAL, "vmm-pidfd", GPUIPC_STEP_EXPORT,
                        GPUIPC_LOG_NO_TIME, "SABOTAGE: the FD to fetch is of the wrong kind "
                        "(test hook)");
    *nfds = 0;
    gpuipc_vmm_offer(env, buf, offer);
    put_u32(offer->blob, (uint32_t)getpid());
    put_u32(offer->blob + 4, (uint32_t)fd);
    offer->blob_len = BLOB_LEN;
    return 0;
}

static int pidfd_mech_import(gpuipc_env *env, const gpuipc_msg_offer *offer, const int *fds,
                             unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    int pid, fd, got, rc;
    uint64_t t;

    (void)fds;
    if ((rc = gpuipc_mech_offer_shape("vmm-pidfd", offer, nfds, 0, BLOB_LEN, err)) < 0)
        return rc;
    pid = (int)get_u32(offer->blob);
    fd = (int)get_u32(offer->blob + 4);
    /* Take FDs only from the process this session is with, whatever the
     * message says. */
    if (pid != env->peer_pid)
        return gpuipc_err_set(err, -EPROTO, "the offer names pid %d, but the producer is pid "
                              "%d", pid, env->peer_pid);
    t = gpuipc_clock_ns();
    got = gpuipc_pidfd_fetch(pid, fd, err);
    gpuipc_laps_add(env->laps, GPUIPC_LAP_FETCH, t);
    if (got < 0)
        return got;
    gpuipc_log_step(&env->log, GPUIPC_LOG_VERBOSE, "vmm-pidfd", GPUIPC_STEP_IMPORT,
                    GPUIPC_LOG_NO_TIME, "pidfd_getfd: producer pid %d FD %d is FD %d here", pid,
                    fd, got);
    rc = gpuipc_vmm_import(env, (void *)(uintptr_t)got, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
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
    .probe = pidfd_mech_probe,
    .alloc = gpuipc_vmm_fd_alloc,
    .export = pidfd_mech_export,
    .import = pidfd_mech_import,
    .release = gpuipc_vmm_release,
};
