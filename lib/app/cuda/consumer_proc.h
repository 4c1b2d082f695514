/* SPDX-License-Identifier: Apache-2.0 */
/* consumer_proc.h: the consumer's process (consumer_proc.c): the forked one's and
 * --connect's. */
#ifndef GPUIPC_APP_CUDA_CONSUMER_PROC_H
#define GPUIPC_APP_CUDA_CONSUMER_PROC_H

#include <stdint.h>
#include <sys/types.h>

#include "app/cuda/process.h"
#include "app/options.h"
#include "session/consumer.h"
#include "session/inject.h"

/* The consumer's role over sock, until the session ends (in *end), with
 * cred_pid the producer's pid as SO_PEERCRED gave it (-1: not visible here;
 * 0 in the forked mode), for gpuipc_env.cred_pid. Returns the exit status. */
int gpuipc_app_consumer_main(int sock, const gpuipc_options *o, const gpuipc_inject *inject,
                             uint64_t t0, int cred_pid, const gpuipc_app_proc *proc,
                             gpuipc_session_end *end);

/* --ranks: one session as the consumer over sock (closed here), this rank
 * rank, with the job's token (GPUIPC_WIRE_TOKEN_LEN hex digits) that the
 * producer, rank peer_rank, must prove at HELLO (session/proof.h); no
 * signal handler, watchdog or exit check of its own (the rank has them).
 * cred_pid as for gpuipc_app_consumer_main; its last check counts the FDs
 * against proc's. proc NULL: the session runs at once with another of this
 * rank (a phase), so its scenarios count their own driver objects alone
 * and it makes no last check (the rank counts the rest at the phase's
 * ends). The session's end goes into *end. Returns its status. */
int gpuipc_app_consumer_session(int sock, const gpuipc_options *o, const gpuipc_inject *inject,
                                uint64_t t0, const char *token, uint32_t rank,
                                uint32_t peer_rank, int cred_pid, const gpuipc_app_proc *proc,
                                gpuipc_session_end *end);

/* Forks a consumer that serves on sv[1] (other's ends, -1: none, closed in
 * it); sacrificial: it is --destructive's consumer. Returns its pid with
 * sv[0] kept, or -1 after saying why (both ends of sv closed); proc is the
 * mode's (the FDs at the start, which it inherits). Call before any CUDA
 * call. */
pid_t gpuipc_app_fork_consumer(int sv[2], const int other[2], int sacrificial,
                               const gpuipc_options *o, const gpuipc_inject *inject, uint64_t t0,
                               const gpuipc_app_proc *proc);

#endif
