/* SPDX-License-Identifier: Apache-2.0 */
/* meet.h: where two ranks of a job on this node meet for a session, and how
 * a rank tells that another has ended.
 *
 * Each rank listens, for the whole run, on one abstract socket whose name
 * is 128 random bits ("@gpuipc-<32 hex digits>"), bound before its card is
 * published (launch/job.h): the others learn the name only from the card,
 * and since it is bound before anyone can know it, nobody can bind it
 * first. /proc/net/unix shows it to every process of the network
 * namespace, which may connect to it; what such a process gets is refused
 * below.
 *
 * For the session of an ordered pair (producer p, consumer c) the producer
 * connects to c's name and the consumer accepts on its own. The kernel
 * vouches for who came: SO_PEERCRED's pid and uid must be a rank's card's
 * (ranks on this node share a PID namespace: the same-node rule). A
 * connection of another process is refused at once and counted; one of a
 * rank whose pair with c comes later (it reached it early) is held until
 * then. When c is at the pair it says GO (one datagram, GPUIPC_MEET_GO)
 * on the producer's connection: the producer waits for GO until the
 * meeting's deadline, then for the session's messages within --timeout,
 * as for any peer that is at its side of the pair. The producer checks the
 * kernel's word of the consumer it reached as well. HELLO's proofs
 * (session/proof.h) then show both of this job.
 *
 * A rank has ended when the pidfd of its card's pid says so (pidfd_open,
 * opened once the cards are read, and held to the card's start time, so
 * that a pid used again by another process is not taken for the rank's).
 * A connection is a rank's only while that pidfd says it runs. Both sides of
 * a pair look at the other's every GPUIPC_MEET_SLICE_MS while they wait, so
 * that a peer that died is named at once rather than at the deadline.
 *
 * In a phase a rank meets its two peers at once, each on a thread of its
 * own: one thread at a time accepts (gpuipc_meet_accept, gpuipc_meet_sweep,
 * the connections held, gpuipc_meet_held), while another connects; what
 * both touch (the ranks seen ended, the strangers refused) is under a lock. */
#ifndef GPUIPC_LAUNCH_MEET_H
#define GPUIPC_LAUNCH_MEET_H

#include <stdint.h>

#include "core/err.h"
#include "wire/endpoint.h"

#define GPUIPC_MEET_SLICE_MS 100
#define GPUIPC_MEET_NAME_LEN 48 /* "@gpuipc-" and 32 hex digits, with the NUL */
#define GPUIPC_MEET_GO "gpuipc meet: go" /* the consumer is at the pair */

/* How a wait for a peer ended, beyond a connected socket. */
#define GPUIPC_MEET_GONE (-ESRCH) /* the peer's process has ended */

/* One rank's meeting place: its listener, and what it knows of the others
 * (their pids, their pidfds, connections held for later pairs, strangers
 * refused). */
typedef struct gpuipc_meet gpuipc_meet;

/* Listens under a new random name, for a job of size ranks in which this
 * one is self. Returns 0 with *out (the caller closes it with
 * gpuipc_meet_close), or a negative errno with err. */
int gpuipc_meet_open(gpuipc_meet **out, uint32_t size, uint32_t self, gpuipc_err *err);

/* The name m listens on ("@gpuipc-<32 hex digits>"), for this rank's card. */
const char *gpuipc_meet_name(const gpuipc_meet *m);

/* Rank (another one, on this node, in this PID namespace) is the process
 * pid that started at start (clock ticks after boot, core/proc.h; 0:
 * unknown): a connection from it is rank's while its pidfd says it runs.
 * Where pid is gone already, or is another process's by now (its start
 * differs: the number was used again), the rank is noted ended. Returns 0,
 * or a negative errno with err. */
int gpuipc_meet_know(gpuipc_meet *m, uint32_t rank, int32_t pid, uint64_t start,
                     gpuipc_err *err);

/* Whether rank's process has ended: 1, or 0 (running, or not known here).
 * Makes no wait. */
int gpuipc_meet_ended(gpuipc_meet *m, uint32_t rank);

/* The consumer's side: a connection of rank peer (held since it came
 * early, or accepted now), to which it says GO, waiting until deadline_ns
 * while peer runs. Others that come meanwhile are refused (not a rank:
 * counted) or held (a rank, for a later pair). Returns the connected
 * socket (close-on-exec, the caller's) with *cred set; or -ETIMEDOUT,
 * GPUIPC_MEET_GONE, -EINTR (a stop signal) or another negative errno, with
 * err saying which and naming who. */
int gpuipc_meet_accept(gpuipc_meet *m, uint32_t peer, const char *who, uint64_t deadline_ns,
                       gpuipc_peer *cred, gpuipc_err *err);

/* The producer's side: connects to rank peer's name (from its card),
 * retrying while its queue is full, admits only peer's process, and waits
 * for its GO, until deadline_ns while peer runs. Returns as
 * gpuipc_meet_accept does; -EACCES where another process answers at that
 * name. */
int gpuipc_meet_connect(gpuipc_meet *m, uint32_t peer, const char *name, const char *who,
                        uint64_t deadline_ns, gpuipc_peer *cred, gpuipc_err *err);

/* Takes every connection that waits at m's listener now, without waiting:
 * each stranger refused and counted, each rank's held for its pair. */
void gpuipc_meet_sweep(gpuipc_meet *m);

/* The connections m holds for later pairs, at most max of them into fds.
 * Returns how many there are. */
size_t gpuipc_meet_held(const gpuipc_meet *m, int *fds, size_t max);

/* How many connections of processes that are no rank of this job m has
 * refused, and the first of them described into first (len bytes; "" if
 * none). */
unsigned gpuipc_meet_refused(gpuipc_meet *m, char *first, size_t len);

/* Closes the listener (its name is free again), the pidfds and the
 * connections held. NULL is allowed. */
void gpuipc_meet_close(gpuipc_meet *m);

#endif
