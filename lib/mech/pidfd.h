/* SPDX-License-Identifier: Apache-2.0 */
/* pidfd.h: taking a duplicate of another process's FD with pidfd_open and
 * pidfd_getfd (Linux 5.6), the way PyTorch's expandable segments and UCX
 * share VMM memory without sending the FD over a socket. */
#ifndef GPUIPC_PIDFD_H
#define GPUIPC_PIDFD_H

#include "core/err.h"
#include "session/scenario.h"
#include "wire/wire.h"

#define GPUIPC_PIDFD_BLOB_LEN 8 /* u32 pid, u32 FD number, little-endian */

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

/* A fetched-FD mechanism's probe, after its own: the producer needs only
 * the system calls; the consumer needs the producer's pid (not in another
 * PID namespace) and the right to take its FDs. Returns 0, -ENOTSUP with
 * why, or another negative errno. */
int gpuipc_pidfd_mech_probe(gpuipc_scenario *sc, gpuipc_err *why);

/* The producer: names this process and FD number fd in the offer's blob,
 * for the consumer to take; no FD travels. */
void gpuipc_pidfd_offer(gpuipc_msg_offer *offer, int fd);

/* The consumer: checks the offer's shape (no FDs, the blob of
 * gpuipc_pidfd_offer) and that it names the producer of this session, then
 * takes the FD. Returns it (close-on-exec, the caller closes it) or a
 * negative errno with err. */
int gpuipc_pidfd_take(gpuipc_scenario *sc, const char *mech, const gpuipc_msg_offer *offer,
                      unsigned nfds, gpuipc_err *err);

#endif
