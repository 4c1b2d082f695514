/* SPDX-License-Identifier: Apache-2.0 */
/* matrix.h: --fault-matrix. Every step of both roles, times every
 * GPUIPC_FAULT action, each case run as a fresh --serve/--connect pair of
 * processes. A case is survived when the other role (the survivor) exits 1
 * by itself within the deadline plus a margin, its report names the step it
 * was waiting in and what the peer did, it reports no leak, no process of
 * the pair is left, and (for GPU mechanisms, where NVML can tell) the driver
 * lists neither process as holding GPU memory any more. Each of these is
 * about the pair's own processes: other users of the GPU cannot fail a case. */
#ifndef GPUIPC_RUN_MATRIX_H
#define GPUIPC_RUN_MATRIX_H

#include <stdint.h>
#include <sys/types.h>

#include "run/pair.h"

typedef struct gpuipc_matrix_case {
    int role;      /* the role that misbehaves */
    unsigned step; /* where */
    int action;    /* enum gpuipc_fault_action */
} gpuipc_matrix_case;

/* The most cases: every step of both roles times every action. */
#define GPUIPC_MATRIX_MAX 160

/* Lists every case, producer first, step by step, action by action.
 * Returns the count. */
unsigned gpuipc_matrix_cases(gpuipc_matrix_case *cases, unsigned cap);

/* The step the survivor waits in when role misbehaves at step: the step
 * its report names. */
unsigned gpuipc_matrix_waiting(int role, unsigned step);

/* What the survivor's report says the peer did, when role misbehaves at
 * step with action. */
const char *gpuipc_matrix_phrase(int role, unsigned step, int action);

/* Judges one run of case c (a pair from gpuipc_pair_run) against the
 * criteria above, but GPU memory. limit_s is the deadline plus the margin.
 * Returns 1 if survived; else 0 with why, *hang set if the survivor did not
 * end by itself in time (or a process was left), *leak if it reported a
 * leaked FD. */
int gpuipc_matrix_judge(const gpuipc_matrix_case *c, const gpuipc_pair *r, double limit_s,
                        int *hang, int *leak, char *why, size_t len);

typedef struct gpuipc_matrix_opts {
    const char *prog;    /* this program, by absolute path */
    const char *mech;    /* --only for the producer */
    const char *size;    /* --size for the producer */
    double timeout_s;    /* --timeout of both */
    double margin_s;     /* what the survivor may take beyond it */
    int verbose;         /* print every case, not only the failed ones */
    int fd;              /* where the lines go */
    /* Says whether the driver still lists process pid as holding GPU memory
     * (1) or not (0), or a negative errno where it cannot tell; NULL where
     * the mechanism needs no GPU or nothing can tell here. */
    int (*holds_gpu)(void *arg, pid_t pid);
    void *arg;
} gpuipc_matrix_opts;

typedef struct gpuipc_matrix_totals {
    unsigned cases, survived, hangs, leaks, wrong;
    double seconds;
} gpuipc_matrix_totals;

/* Runs every case. Returns 0 if all were survived, 1 if not, or a negative
 * errno if a pair could not be started (err says why). */
int gpuipc_matrix_run(const gpuipc_matrix_opts *o, gpuipc_matrix_totals *t, gpuipc_err *err);

#endif
