/* SPDX-License-Identifier: Apache-2.0 */
/* phase_loop.h: a run of phases whose cells run at once, and the one rule
 * that keeps its accounting exact. Each cell counts its own driver objects
 * (the ledger's tag of its thread); what the process holds besides (FDs,
 * shared memory, GPU memory), which every cell of the phase moves, is
 * counted here at the phase's beginning and end, and the peer's count comes
 * with the phase's end. A phase whose counts grew runs its cells again one
 * at a time, each counting everything: a leak that comes back is named by
 * its cell there; one that does not still fails the phase, named "a drift
 * not tied to a cell". Where the cells cannot run again (again NULL), the
 * drift fails the phase at once.
 *
 * The forked mode's producer (app/cuda/phases.c) and a rank of --ranks
 * (app/cuda/ranks_pair.c) drive their phases through it; the tests drive it
 * with cells of their own. No CUDA here. */
#ifndef GPUIPC_RUN_PHASE_LOOP_H
#define GPUIPC_RUN_PHASE_LOOP_H

#include <stddef.h>
#include <stdint.h>

#include "core/account.h"
#include "core/err.h"
#include "core/log.h"

typedef struct gpuipc_phase_loop {
    void *arg;          /* what the callbacks work on */
    size_t nphases;
    const char *who;    /* whose counts, for messages: "the producer", "rank 3" */
    const gpuipc_log *log; /* its lines (NULL: none; the caller says the drift) */
    gpuipc_usage_gpu_fn gpu_bytes; /* GPU memory by NVML (NULL: none) */
    uint64_t settle_ns; /* how long a grown count may take to come back down */

    /* Phase k's cell count: 0, nothing to play (it is passed over). */
    size_t (*cells)(void *arg, size_t k);

    /* Phase k begins (the peer is told). Returns 0 to play it at once; 1
     * where the phases end here, the rest of the cells to run one at a
     * time (the caller said why); or a negative errno, the run's phases
     * broken off (err). NULL: nothing to tell. */
    int (*begin)(void *arg, size_t k, gpuipc_err *err);

    /* Plays phase k's cells at once; every one has ended on return. */
    void (*play)(void *arg, size_t k);

    /* Phase k has ended (the peer is told): where the peer's count grew,
     * its words go into drift (len bytes), else drift is left "". Returns
     * 0, or a negative errno (err). NULL: no peer to ask. */
    int (*end)(void *arg, size_t k, char *drift, size_t len, gpuipc_err *err);

    /* Before phase k's own count at its end: what came meanwhile and is no
     * cell's goes into base (NULL: nothing comes). */
    void (*not_cells)(void *arg, size_t k, gpuipc_usage *base);

    /* Runs phase k's cells again one at a time, each counting everything;
     * returns how many failed. NULL: they cannot run again. */
    unsigned (*again)(void *arg, size_t k);

    /* The drift stands: fail phase k for it (text, the reason in full). */
    void (*stands)(void *arg, size_t k, const char *text);

    /* Phase k is over, its drift settled (NULL: nothing to do). */
    void (*ended)(void *arg, size_t k);

    /* Whether the run was stopped (a stop signal): no phase begins after,
     * and a drift found in a phase cut short is not held against it. */
    int (*stopped)(void *arg);
} gpuipc_phase_loop;

/* Plays l's phases in order, each counted at its ends as above. Returns 0,
 * 1 where begin ended the phases early, or a negative errno where begin or
 * end broke off (err). */
int gpuipc_phase_loop_run(const gpuipc_phase_loop *l, gpuipc_err *err);

#endif
