/* SPDX-License-Identifier: Apache-2.0 */
/* meet.h: where two ranks of a job on this node meet for a session, and how
 * a rank tells that another is gone. Every rank listens, for the whole run,
 * on its presence socket: the abstract name of its card
 * ("@gpuipc-<token>-<rank>", launch/job.h), which it never accepts on. The
 * kernel frees that name when the rank's process ends, however it ends, so
 * a connect() to it that is refused means the rank is gone; one that is
 * queued, or finds the queue full (EAGAIN), means it is alive.
 *
 * For the session of an ordered pair (producer p, consumer c) the consumer
 * listens on the pair's own name ("@gpuipc-<token>-<p>-<c>") and the
 * producer connects to it: a name per pair, so a rank that reaches its
 * next pair early can never be taken for another pair's peer. Both wait
 * until their deadline, looking every GPUIPC_MEET_SLICE_MS at the peer's
 * presence, so that a peer that died is named at once rather than at the
 * deadline. Both admit only a peer of this uid (SO_PEERCRED); the job's
 * token in HELLO (session/) proves it a rank of this job. */
#ifndef GPUIPC_LAUNCH_MEET_H
#define GPUIPC_LAUNCH_MEET_H

#include <stdint.h>

#include "core/err.h"
#include "wire/endpoint.h"

#define GPUIPC_MEET_SLICE_MS 100

/* A rank's presence: its listening socket (-1: none). */
typedef struct gpuipc_meet_presence {
    int fd;
    char name[108];
} gpuipc_meet_presence;

/* Listens on endpoint (an abstract name, "@..."), for the whole run, with a
 * queue of one. Returns 0, or a negative errno with err (-EADDRINUSE: a
 * process already holds the name). */
int gpuipc_meet_present(gpuipc_meet_presence *p, const char *endpoint, gpuipc_err *err);

/* Closes the presence socket (the name is free again). Safe to call twice. */
void gpuipc_meet_absent(gpuipc_meet_presence *p);

/* Whether the rank whose presence is endpoint is alive: 1 (its name is
 * held), 0 (refused: nothing holds it, so the rank is gone), or -1 where
 * connect() failed otherwise (errno in *why_errno). Makes no wait. */
int gpuipc_meet_alive(const char *endpoint, int *why_errno);

/* The name of pair p -> c's session in the job of token_hex, into buf. */
void gpuipc_meet_pair_name(const char *token_hex, uint32_t p, uint32_t c, char *buf,
                           size_t len);

/* How a wait for a peer ended, beyond a connected socket. */
#define GPUIPC_MEET_GONE (-ESRCH) /* the peer's presence is gone: it died */

/* The consumer's side: listens on pair name, and waits until deadline_ns for
 * one connection of this uid, while peer_endpoint (the producer's presence)
 * is alive. Returns the connected socket (close-on-exec), with the name
 * freed again; or -ETIMEDOUT, GPUIPC_MEET_GONE, -EINTR (a stop signal) or
 * another negative errno, with err saying which and naming who. */
int gpuipc_meet_accept(const char *name, const char *peer_endpoint, const char *who,
                       uint64_t deadline_ns, gpuipc_peer *peer, gpuipc_err *err);

/* The producer's side: connects to pair name, retrying while nothing
 * listens there yet, until deadline_ns, while peer_endpoint (the
 * consumer's presence) is alive. Returns as gpuipc_meet_accept does. */
int gpuipc_meet_connect(const char *name, const char *peer_endpoint, const char *who,
                        uint64_t deadline_ns, gpuipc_peer *peer, gpuipc_err *err);

#endif
