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
 * A rank of another node (another boot id: launch/job.h) meets over TCP
 * instead: each rank that may meet one listens on an ephemeral port of one
 * address (wire/tcp.h: --ranks-net), named in its card. The listener
 * sends each connection a challenge at once ("GIPCMEET" and 16 random
 * bytes); the connecting rank answers with its rank, the listener's rank
 * and HMAC-SHA256 keyed by the job's token over GPUIPC_MEET_LABEL, the
 * challenge's bytes and both ranks. An answer that does not hold (a
 * stranger, a replay of another connection's answer, a rank of this node)
 * or none within GPUIPC_MEET_ANSWER_MS is refused and counted as any
 * stranger; one that holds is its rank's, held or served as above. No
 * pidfd watches a rank elsewhere: its listener, once the two have met
 * (its challenge came, or it answered this one's), refusing a connection
 * since says it has ended
 * (gpuipc_meet_ended probes it so: the probe's mark names the listener's
 * rank twice with HMAC-SHA256 under the job's token over
 * GPUIPC_MEET_PROBE_LABEL and that rank, and the listener drops it, not
 * counted as a stranger); a listener of a rank never met that refuses is
 * no proof of death (the address may be another machine's), and otherwise the
 * meeting's deadline bounds the wait. A rank elsewhere whose address is one
 * of this machine's too (a NAT or bridge address every node has) is not
 * dialled (gpuipc_meet_remote_clash). When every slot for unanswered
 * connections is taken, the one that waited longest makes room. A
 * TCP connection carries no FD: the session then runs what crosses nodes.
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

/* The challenge at the TCP listener (above). */
#define GPUIPC_MEET_MAGIC "GIPCMEET"
#define GPUIPC_MEET_MAGIC_LEN 8
#define GPUIPC_MEET_NONCE_LEN 16
#define GPUIPC_MEET_CHALLENGE_LEN (GPUIPC_MEET_MAGIC_LEN + GPUIPC_MEET_NONCE_LEN)
#define GPUIPC_MEET_ANSWER_LEN (8 + 32) /* both ranks (little-endian), the MAC */
#define GPUIPC_MEET_KEY_LEN 16          /* the job's token's bytes */
#define GPUIPC_MEET_LABEL "gpuipc meet"
#define GPUIPC_MEET_PROBE_LABEL "gpuipc probe"
#define GPUIPC_MEET_ANSWER_MS 5000
#define GPUIPC_MEET_PENDING 16 /* connections that may wait for their answer at once */
#define GPUIPC_MEET_PROBE_MS 200        /* a probe of a rank elsewhere (gpuipc_meet_ended) */
#define GPUIPC_MEET_PROBE_EVERY_MS 500  /* at most one probe of a rank in this time */

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

/* Listens on TCP too, for ranks of other nodes, on the address net picks
 * (wire/tcp.h: NULL for the default), with how it was chosen into how
 * (hlen bytes). Returns 0, or a negative errno with err. */
int gpuipc_meet_listen_tcp(gpuipc_meet *m, const char *net, char *how, size_t hlen,
                           gpuipc_err *err);

/* The TCP listener's address ("192.0.2.2:41234"), "" where it has none. */
const char *gpuipc_meet_tcp_name(const gpuipc_meet *m);

/* The job's token (32 hex digits), which keys the challenge. Returns 0,
 * or -EINVAL for text that is no token. */
int gpuipc_meet_key(gpuipc_meet *m, const char *token_hex);

/* Rank is on another node, its TCP listener at tcp_name ("": none, and a
 * connection to it fails saying so). Returns 0, or -EINVAL with err. */
int gpuipc_meet_know_remote(gpuipc_meet *m, uint32_t rank, const char *tcp_name,
                            gpuipc_err *err);

/* Whether rank was made known as on another node. */
int gpuipc_meet_remote(const gpuipc_meet *m, uint32_t rank);

/* Whether rank, of another node, publishes an address this machine has
 * too (not loopback), which cannot be dialled here. */
int gpuipc_meet_remote_clash(const gpuipc_meet *m, uint32_t rank);

/* Rank p's answer (GPUIPC_MEET_ANSWER_LEN bytes) to the challenge (of
 * GPUIPC_MEET_CHALLENGE_LEN bytes) of rank c's listener under the token
 * token_hex, for the tests and tools. Returns 0, -EINVAL (no token) or
 * -EPROTO (no challenge). */
int gpuipc_meet_answer(const char *token_hex, const uint8_t *challenge, uint32_t p, uint32_t c,
                       uint8_t answer[GPUIPC_MEET_ANSWER_LEN]);

/* The mark (GPUIPC_MEET_ANSWER_LEN bytes) a probe of rank c's listener
 * sends under the token token_hex, for the tests. Returns 0, or -EINVAL. */
int gpuipc_meet_probe_mark(const char *token_hex, uint32_t c,
                           uint8_t mark[GPUIPC_MEET_ANSWER_LEN]);

/* Rank (another one, on this node, in this PID namespace) is the process
 * pid that started at start (clock ticks after boot, core/proc.h; 0:
 * unknown): a connection from it is rank's while its pidfd says it runs.
 * Where pid is gone already, or is another process's by now (its start
 * differs: the number was used again), the rank is noted ended. Returns 0,
 * or a negative errno with err. */
int gpuipc_meet_know(gpuipc_meet *m, uint32_t rank, int32_t pid, uint64_t start,
                     gpuipc_err *err);

/* Whether rank's process has ended: 1, or 0 (running, or not known here).
 * Makes no wait for a rank of this node; for one elsewhere, a probe of its
 * TCP listener of GPUIPC_MEET_PROBE_MS at most. */
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

/* The connections m holds for later pairs, and the TCP connections that
 * have not answered their challenge yet, at most max of them into fds.
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
