/* pidfd.h: taking a duplicate of another process's FD with pidfd_open and
 * pidfd_getfd (Linux 5.6), the way PyTorch's expandable segments and UCX
 * share VMM memory without sending the FD over a socket. */
#ifndef GPUIPC_PIDFD_H
#define GPUIPC_PIDFD_H

#include "core/err.h"

/* Returns a close-on-exec duplicate of FD number fd of process pid, or a
 * negative errno with the reason and the fix in err: -EPERM (this process may
 * not ptrace-attach to pid), -ENOSYS (kernel older than 5.6, or a seccomp
 * filter), -ESRCH (no such process), -EBADF (pid has no such FD). */
int gpuipc_pidfd_fetch(int pid, int fd, gpuipc_err *err);

/* Says whether this process may fetch FDs from pid: 0 if it may, -ENOTSUP
 * with the reason if it may not (ENOSYS, EPERM), another negative errno if
 * the question could not be asked (ESRCH). It tries to fetch pid's FD 0, 1
 * and 2; a missing FD still proves the permission. */
int gpuipc_pidfd_probe(int pid, gpuipc_err *why);

#endif
