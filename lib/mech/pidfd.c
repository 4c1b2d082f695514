/* SPDX-License-Identifier: Apache-2.0 */
/* pidfd.c: pidfd_open and pidfd_getfd through syscall(), so that the binary
 * does not need a glibc that wraps them. */
#include "mech/pidfd.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/step.h"
#include "session/mech.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

static const char *cause(int e)
{
    switch (e) {
    case EPERM:
        return "no ptrace permission over the producer: it needs the same user and Yama "
               "ptrace_scope 0 (a child may not attach to its parent under scope 1), or "
               "CAP_SYS_PTRACE; in Docker the default seccomp profile allows pidfd_getfd only "
               "with CAP_SYS_PTRACE";
    case ENOSYS:
        return "the kernel has no pidfd_open/pidfd_getfd (Linux 5.6 or later is needed), or a "
               "seccomp filter blocks them";
    case ESRCH:
        return "the process is gone";
    case EBADF:
        return "the process has no such FD";
    default:
        return NULL;
    }
}

static int fail(gpuipc_err *err, const char *call, int pid, int fd, int e)
{
    const char *why = cause(e);

    if (fd >= 0)
        return gpuipc_err_sys(err, call, e, "%s(pid %d, fd %d): %s%s%s", call, pid, fd,
                              strerror(e), why ? ": " : "", why ? why : "");
    return gpuipc_err_sys(err, call, e, "%s(pid %d): %s%s%s", call, pid, strerror(e),
                          why ? ": " : "", why ? why : "");
}

int gpuipc_pidfd_fetch(int pid, int fd, gpuipc_err *err)
{
    int pidfd, got, e;

    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0)
        return fail(err, "pidfd_open", pid, -1, errno);
    /* The kernel sets close-on-exec on the FD that pidfd_getfd returns. */
    got = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
    e = errno;
    close(pidfd);
    if (got < 0)
        return fail(err, "pidfd_getfd", pid, fd, e);
    return got;
}

int gpuipc_pidfd_probe(int pid, gpuipc_err *why)
{
    int fd, rc = -EBADF;

    for (fd = 0; fd < 3 && rc == -EBADF; fd++) {
        rc = gpuipc_pidfd_fetch(pid, fd, why);
        if (rc >= 0) {
            close(rc);
            return 0;
        }
    }
    if (rc == -EBADF)
        return 0; /* permitted: the process simply has none of FDs 0-2 */
    if (rc == -EPERM || rc == -ENOSYS)
        return -ENOTSUP;
    return rc;
}

int gpuipc_pidfd_mech_probe(gpuipc_scenario *sc, gpuipc_err *why)
{
    if (sc->env->role == GPUIPC_ROLE_CONSUMER && sc->env->peer_pid <= 0) {
        /* As data: the pid pidfd_open would need is none this process can
         * name (ESRCH). */
        gpuipc_err_sys(why, "pidfd_open", ESRCH, "the producer runs in another pid namespace "
                       "(SO_PEERCRED and its HELLO name different pids), where pidfd_getfd "
                       "cannot reach it");
        return -ENOTSUP;
    }
    return gpuipc_pidfd_probe(sc->env->role == GPUIPC_ROLE_CONSUMER ? sc->env->peer_pid : getpid(), why);
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

void gpuipc_pidfd_offer(gpuipc_msg_offer *offer, int fd)
{
    put_u32(offer->blob, (uint32_t)getpid());
    put_u32(offer->blob + 4, (uint32_t)fd);
    offer->blob_len = GPUIPC_PIDFD_BLOB_LEN;
}

int gpuipc_pidfd_take(gpuipc_scenario *sc, const char *mech, const gpuipc_msg_offer *offer,
                      unsigned nfds, gpuipc_err *err)
{
    uint64_t t;
    int pid, fd, got, rc;

    if ((rc = gpuipc_mech_offer_shape(mech, offer, nfds, 0, GPUIPC_PIDFD_BLOB_LEN, err)) < 0)
        return rc;
    pid = (int)get_u32(offer->blob);
    fd = (int)get_u32(offer->blob + 4);
    /* Take FDs only from the process this session is with, whatever the
     * message says. */
    if (pid != sc->env->peer_pid)
        return gpuipc_err_set(err, -EPROTO, "the offer names pid %d, but the producer is pid "
                              "%d", pid, sc->env->peer_pid);
    t = gpuipc_clock_ns();
    got = gpuipc_pidfd_fetch(pid, fd, err);
    gpuipc_laps_add(sc->laps, GPUIPC_LAP_FETCH, t);
    if (got >= 0)
        gpuipc_log_step(&sc->env->log, GPUIPC_LOG_VERBOSE, mech, GPUIPC_STEP_IMPORT,
                        GPUIPC_LOG_NO_TIME, "pidfd_getfd: producer pid %d FD %d is FD %d here",
                        pid, fd, got);
    return got;
}
