/* SPDX-License-Identifier: Apache-2.0 */
/* pair.h: running the program as two separately started commands, a
 * --serve producer and a --connect consumer, under a deadline: what the
 * fault matrix and the fault suite drive, case after case. */
#ifndef GPUIPC_RUN_PAIR_H
#define GPUIPC_RUN_PAIR_H

#include <stddef.h>
#include <sys/types.h>

#include "core/err.h"

#define GPUIPC_PAIR_OUT (1 << 15)
#define GPUIPC_PAIR_ARGS 24

/* One of the two processes. */
typedef struct gpuipc_pair_proc {
    pid_t pid;
    int status;     /* its wait status */
    int exited;     /* it ended by itself, not killed by the runner */
    double seconds; /* from the pair's start to its end */
    char out[GPUIPC_PAIR_OUT]; /* stdout and stderr, NUL-terminated, truncated if long */
    size_t len;
} gpuipc_pair_proc;

typedef struct gpuipc_pair {
    gpuipc_pair_proc proc[2]; /* [0] the producer (--serve), [1] the consumer (--connect) */
    int leftover; /* processes of the pair's group that were still there at the end */
} gpuipc_pair;

/* Runs "prog --serve sock args..." and "prog --connect sock cargs..." (args
 * and cargs NULL-terminated, at most GPUIPC_PAIR_ARGS each) with the extra
 * environment entries env ("NAME=value", NULL-terminated, may be NULL), in a
 * new process group. The consumer starts once the producer listens (by
 * /proc/net/unix), or has ended, so that its own wait for a server is not
 * spent on the producer's start-up. Once one of them has ended, the other gets grace_s more;
 * at timeout_s after the start, or when the grace is over, what is still
 * running is killed (SIGKILL) and reaped. Returns 0, or a negative errno if
 * the pair could not be started (err says why), or -EINTR once a stop
 * signal (gpuipc_stop_signal) came: the pair is then killed and reaped. Each
 * process of the pair gets SIGKILL if the caller dies first. */
int gpuipc_pair_run(const char *prog, const char *sock, const char *const *args,
                    const char *const *cargs, const char *const *env, double timeout_s,
                    double grace_s, gpuipc_pair *r, gpuipc_err *err);

/* The same, with cenv ("NAME=value", NULL-terminated, may be NULL) added to
 * the consumer's environment only: a consumer that sees other devices, say. */
int gpuipc_pair_run_env(const char *prog, const char *sock, const char *const *args,
                        const char *const *cargs, const char *const *env,
                        const char *const *cenv, double timeout_s, double grace_s,
                        gpuipc_pair *r, gpuipc_err *err);

/* One side of a pair as gpuipc_pair_run_sides starts it: "wrap... prog
 * --serve|--connect sock args...", with env added to its environment. */
typedef struct gpuipc_pair_side {
    const char *const *wrap; /* a command that runs the rest (unshare ...), or NULL */
    const char *sock;        /* the socket as this side names it */
    const char *const *args;
    const char *const *env;  /* "NAME=value" for this side only, or NULL */
} gpuipc_pair_side;

/* The general form: each side with its own wrapper, socket name, arguments
 * and environment (env goes to both). With await, the consumer starts once
 * the producer listens, as gpuipc_pair_run does; without (a producer in
 * another network namespace, whose socket this process cannot see), both
 * start at once and the consumer's --timeout covers the wait. */
int gpuipc_pair_run_sides(const char *prog, const gpuipc_pair_side *p,
                          const gpuipc_pair_side *c, const char *const *env, int await,
                          double timeout_s, double grace_s, gpuipc_pair *r, gpuipc_err *err);

/* Removes every CK_* variable (Check's selection and report files) from this
 * process's environment, for a child whose Check run is its own. */
void gpuipc_pair_clear_check_env(void);

#endif
