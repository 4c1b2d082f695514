/* SPDX-License-Identifier: Apache-2.0 */
/* stop.h: the stop channel: one datagram socket pair, made before the fork and
 * watched by every process of the run, so that a stop signal that reaches any
 * of them wakes every wait in all of them (a self-pipe per process would lose
 * the wake-up across processes). */
#ifndef GPUIPC_STOP_H
#define GPUIPC_STOP_H

#include <signal.h>
#include <sys/types.h>

#include "core/err.h"

/* Opens the stop channel: a datagram socket pair that the processes the
 * program forks afterwards share, so that a stop raised in any of them
 * wakes every wait in all of them at once, whichever process the signal
 * reached (no signal lands between a flag test and a poll unseen). Once per
 * program, before any fork. Returns 0 or a negative errno with err. */
int gpuipc_stop_open(gpuipc_err *err);

/* Async-signal-safe, for a stop signal's handler: records sig (SIGINT,
 * SIGTERM, SIGHUP) as this process's stop signal and tells every process
 * that shares the channel. Once a stop is raised, every wait of every wire
 * ends at once with -EINTR and "interrupted by SIGINT during <step>", and
 * the wire becomes unusable. */
void gpuipc_stop_raise(int sig);

/* The stop signal this process learned of, from its own record or the
 * channel (a stop raised in another process of the run); 0 if none. */
int gpuipc_stop_signal(void);

/* "STOPPED" once a stop was raised, else "FAIL": the word a step log line
 * about a broken-off step begins with. */
const char *gpuipc_stop_fail_word(void);

/* The channel's end for a poll set (readable once a stop was raised), or -1
 * where it was not opened. */
int gpuipc_stop_fd(void);

/* ---- what the program's signal handlers know of this process ----
 * A handler gets no argument of the program's; what it reads lives in one
 * struct in stop.c, reached through these. Each is async-signal-safe. */

/* A stop handler's count of the stop signals received from outside the run:
 * counts one more and returns how many came before it (0 for the first). */
int gpuipc_stop_count_received(void);

/* The other processes of the forked run (-1: none), which a stop is passed
 * on to; forget_peer: pid was reaped, no signal goes to it any more (its
 * number may be another process's now); peer: the other process i (0 or 1)
 * not yet reaped, or -1. */
void gpuipc_stop_set_peers(pid_t a, pid_t b);
void gpuipc_stop_forget_peer(pid_t pid);
pid_t gpuipc_stop_peer(int i);

/* The forked mode's producer (on its own side, this process), whose death
 * its consumer reports; 0 with --serve, --connect and --ranks. */
void gpuipc_stop_set_parent(pid_t pid);
pid_t gpuipc_stop_parent(void);

/* The socket file a stop must remove at once: an endpoint of the layer that
 * made it (wire/endpoint.h), kept here without being known (NULL: none).
 * Set it with the stop signals blocked. file_gone: a handler or the
 * watchdog removed it; file_removed says whether one did. */
void gpuipc_stop_set_file(const void *file);
const void *gpuipc_stop_file(void);
void gpuipc_stop_file_gone(void);
int gpuipc_stop_file_removed(void);

/* The consumer's role, which its parent-death handler names: step points
 * at the step it is in, lost_reported at whether it already said why its
 * connection broke (its env's fields; NULL: no role yet). role_step: the
 * step, 0 with no role; role_lost_reported: 1 if it did. */
void gpuipc_stop_set_role(const volatile sig_atomic_t *step,
                          const volatile sig_atomic_t *lost_reported);
int gpuipc_stop_role_step(void);
int gpuipc_stop_role_lost_reported(void);

/* While on, the program runs its scenarios through Check, whose own SIGINT
 * and SIGTERM handlers are kept out (app/check_shim.c). */
void gpuipc_stop_shield(int on);
int gpuipc_stop_shielded(void);

#endif
