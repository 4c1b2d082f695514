/* SPDX-License-Identifier: Apache-2.0 */
/* process.h: what every process of the program shares (process.c): stop signals,
 * passed on to the run's other processes; the socket file a stop removes;
 * the FDs at the start and at the exit; a role's environment. */
#ifndef GPUIPC_APP_CUDA_PROCESS_H
#define GPUIPC_APP_CUDA_PROCESS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "app/options.h"
#include "core/account.h"
#include "core/err.h"
#include "core/log.h"
#include "session/env.h"
#include "session/inject.h"
#include "wire/wire.h"

/* How long a consumer may take to exit once the session broke. */
#define GPUIPC_APP_END_GRACE_NS (2ull * 1000000000ull)

/* The endpoint whose socket file --serve made, while it waits for a
 * consumer (NULL otherwise): a stop signal or the deadline removes that
 * file at once (gpuipc_endpoint_unlink: that socket and nothing put in its
 * place), after which gpuipc_stop_file_removed() says 1. Kept by core/stop
 * for the handlers.
 *
 * Publishes ep (NULL: none) to the handlers, with the stop signals blocked
 * meanwhile, so that a handler never sees half of it. */
struct gpuipc_endpoint;

void gpuipc_app_sock_publish(const struct gpuipc_endpoint *ep);

/* For a handler or the watchdog: removes the published socket file, once.
 * Async-signal-safe. */
void gpuipc_app_sock_unlink(void);

/* SIGINT, SIGTERM and SIGHUP stop the session (gpuipc_stop_raise),
 * here and in every process of the run; a second one ends the process at
 * once. */
void gpuipc_app_catch_stop_signals(void);

/* The stop signals' handler, for a handler of its own that passes one on
 * (the consumer's SIGTERM, when it does not come from its dying parent). */
void gpuipc_app_on_stop(int sig, const siginfo_t *info);

/* Blocks (1) or unblocks (0) the stop signals; one that came meanwhile is
 * delivered when they are unblocked. */
void gpuipc_app_block_stop_signals(int block);

/* Returns code, or 128 + the stop signal if one came. */
int gpuipc_app_stop_code(int code);

/* What a mode keeps for its process as long as it runs, whatever runs it
 * makes (--ranks makes a producer run for each pair): owned by the mode
 * (on its stack or its run), pointed at by each of its runs, inherited by
 * a forked consumer with the rest of its parent's memory. Zeroed: nothing
 * noted yet. */
typedef struct gpuipc_app_proc {
    /* The FDs open when the program started, the end-of-session and exit
     * checks' reference; have_fds: they were listed. */
    gpuipc_fds fds;
    int have_fds;
    /* rounds.c's exit hook (for Check giving up with exit()) is
     * registered: once a process, at its first scenarios. */
    int check_hooked;
} gpuipc_app_proc;

/* Lists the FDs open now, into p, as those at the start (before any socket
 * or fork; --ranks lists them again at each pair). */
void gpuipc_app_note_fds_at_start(gpuipc_app_proc *p);

/* Frees what p holds. */
void gpuipc_app_proc_free(gpuipc_app_proc *p);

/* Counts the FDs open now that were not at the start (p; NULL: none
 * noted), keep[0] and keep[1] aside (-1: none), named in why; 0 where the
 * CUDA driver was loaded (it keeps FDs of its own until exit). */
size_t gpuipc_app_fds_since_start(const gpuipc_app_proc *p, const int keep[2], gpuipc_err *why);

/* A consumer's last check: the FDs since the start (p), the connection w
 * aside. */
size_t gpuipc_app_last_check_fds(const gpuipc_app_proc *p, gpuipc_wire *w, gpuipc_err *why);

/* At exit: returns code, or GPUIPC_FAIL after naming the FDs leaked since
 * the start (p; NULL: none noted), said at verbose level when there are
 * none. */
int gpuipc_app_check_fds_at_exit(const gpuipc_app_proc *p, const gpuipc_log *log, int code);

/* Sets env up for role under o and the test hooks. */
void gpuipc_app_env_init(gpuipc_env *env, int role, const gpuipc_options *o,
                         const gpuipc_inject *inject, uint64_t t0);

#endif
