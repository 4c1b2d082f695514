/* pidfd.c: pidfd_open and pidfd_getfd through syscall(), so that the binary
 * does not need a glibc that wraps them. */
#include "mech/pidfd.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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
        return gpuipc_err_set(err, -e, "%s(pid %d, fd %d): %s%s%s", call, pid, fd, strerror(e),
                              why ? ": " : "", why ? why : "");
    return gpuipc_err_set(err, -e, "%s(pid %d): %s%s%s", call, pid, strerror(e), why ? ": " : "",
                          why ? why : "");
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
