/* SPDX-License-Identifier: Apache-2.0 */
/* env.h: the process a role runs in: its log, its deadline, the test hooks,
 * its GPU once opened, both sides' facts and the program's callbacks. The
 * program builds one per process and it stays as set up; what belongs to
 * one scenario lives in a gpuipc_scenario (scenario.h). */
#ifndef GPUIPC_ENV_H
#define GPUIPC_ENV_H

#include <signal.h>
#include <stdint.h>

#include "core/account.h"
#include "core/err.h"
#include "core/facts.h"
#include "session/inject.h"
#include "session/laps.h"
#include "core/log.h"
#include "core/watch.h"
#include "wire/wire.h"

struct gpuipc_gpu;
struct gpuipc_scenario;
struct gpuipc_view;

typedef struct gpuipc_env {
    int role;            /* enum gpuipc_role */
    gpuipc_log log;
    uint64_t timeout_ns; /* every wait's deadline is this far from its start */
    gpuipc_inject inject;

    /* Carries out an injected fault at step, over w (the connection in
     * use, for the faults that misuse it: corrupt, extra-fds, close; NULL
     * for none). Set by the program, since the library never ends the
     * process itself. */
    void (*act)(struct gpuipc_env *env, gpuipc_wire *w, int action, unsigned step);

    /* The device this process has open, or NULL: the producer opens it by
     * ordinal before any scenario (--pairs points it at each pair's); the
     * consumer's GPU mechanisms open the one a scenario names when they
     * probe (gpuipc_gpu_attach). The program closes it. */
    struct gpuipc_gpu *gpu;

    /* The other process's pid, from its HELLO (pidfd mechanisms need it);
     * 0 if it lives in another pid namespace (see cred_pid). */
    int peer_pid;

    /* This process's confinement, gathered at HELLO, and the peer's, from
     * its HELLO (have_peer_facts once it came): what explains a failure. */
    gpuipc_facts facts;
    gpuipc_facts peer_facts;
    int have_peer_facts;

    /* --ranks: the job's token (GPUIPC_WIRE_TOKEN_LEN hex digits, not
     * NUL-terminated), which keys both sides' proofs at HELLO
     * (session/proof.h) and never travels; NULL outside a job (no proof is
     * made or asked for). This rank, and the rank it means to meet: a HELLO
     * and its proof are for that pair alone. */
    const char *token;
    uint32_t rank, peer_rank;

    /* --serve/--connect: the peer's pid as SO_PEERCRED gives it, translated
     * into this pid namespace, or -1 where it is not visible here; 0 in the
     * forked mode. A HELLO whose pid differs comes from another pid
     * namespace. */
    int cred_pid;

    /* Reads the GPU memory the driver attributes to this process (NVML),
     * for the leak check; NULL where the process has no GPU. */
    gpuipc_usage_gpu_fn gpu_bytes;

    /* A worker's env, one cell of a phase among others at once: a
     * scenario's baseline and leak check count its driver objects alone
     * (its ledger tag, gpuipc_ledger_set_tag); the process's FDs, shared
     * memory and GPU memory, which the other cells move too, the program
     * counts at the phase's ends. 0: everything, per scenario. */
    int per_phase;

    /* The forked mode's consumer: the producer may run a phase's cells at
     * once (PHASE, consumer_phase.c). 0: PHASE is refused as unexpected. */
    int phases;

    /* The end-of-session check's reference (account.h), kept only where
     * session_check is set: by the program, which runs the check and frees
     * it; a role driven alone (the tests) keeps none. */
    int session_check;
    gpuipc_session_usage session;

    /* At the end of the session, before this side's last verdict: what the
     * program checks beyond the scenarios (the FDs of a process that never
     * loaded CUDA, against those it had when it started, the connection w
     * aside). Returns the count of what leaked, named in why. NULL: nothing
     * more. last_check_arg is what it works on (the mode's run). */
    size_t (*last_check)(struct gpuipc_env *env, void *arg, gpuipc_wire *w, gpuipc_err *why);
    void *last_check_arg;

    /* Producer: waits, within the deadline, for the consumer of a
     * destructive scenario to exit (its exit releases what it held), and
     * returns 0 or a negative errno with why. NULL: no such consumer.
     * reap_arg is what it works on (the mode's run). */
    int (*reap_peer)(struct gpuipc_env *env, gpuipc_err *err);
    void *reap_arg;

    /* Consumer: starts the CUDA driver early, while the producer starts its
     * own, when HELLO says CUDA will be needed. NULL where the program has no
     * CUDA support. prepare_arg is what it works on (the mode's run). */
    void (*prepare_cuda)(struct gpuipc_env *env, void *arg);
    void *prepare_arg;

    /* --bench, consumer: times iters runs each of the fill and verify
     * kernels and a device-to-device copy over view (imported memory of
     * scenario sc that holds the pattern of seed, which it still holds
     * afterwards) and over local memory of the same size, into
     * ns[GPUIPC_BW_*][0..iters). NULL where the program has no CUDA.
     * Returns 0 or a negative errno. */
    int (*bandwidth)(struct gpuipc_scenario *sc, const struct gpuipc_view *view, uint64_t seed,
                     unsigned iters, uint64_t *const ns[GPUIPC_BW_COUNT], gpuipc_err *err);

    /* --pairs, consumer: measures the link (session/link.h) over view, the
     * imported memory of scenario sc, which holds the pattern of seed that
     * once describes (one pass: the words and digest written there): where
     * the driver puts it, then timed batches of the verify kernel over it,
     * of the fill kernel (write set; the memory holds the same pattern
     * afterwards) and of the verify kernel over a buffer of this GPU's own,
     * each batch held to the sums its passes must give. Fills f as far as
     * it got. NULL where the program has no CUDA. Returns 0 or a negative
     * errno with err (the call, or the batch, that failed). */
    int (*link)(struct gpuipc_scenario *sc, const struct gpuipc_view *view, uint64_t seed,
                const gpuipc_written *once, int write, gpuipc_link_figures *f, gpuipc_err *err);

    /* The step under way, for a signal handler that must name it. Only
     * gpuipc_env_at and gpuipc_env_waits set it, and they tell the
     * watchdog's status page too (core/watch.h). */
    volatile sig_atomic_t step;
    unsigned last_at; /* the step gpuipc_env_at marked last */

    /* Set once the role has printed why its connection broke, so that a
     * signal handler does not print it again. */
    volatile sig_atomic_t lost_reported;
} gpuipc_env;

/* How long a leak check waits for the driver's figure of this process's
 * GPU memory to come back down after a release, before it counts a leak. */
#define GPUIPC_ENV_SETTLE_NS (500ull * 1000000ull)

/* Marks step as under way and carries out a fault injected there, if any,
 * over w (NULL: no connection), once: not again when gpuipc_env_at marks
 * the same step again before another. */
static inline void gpuipc_env_at(gpuipc_env *env, gpuipc_wire *w, unsigned step)
{
    int action = gpuipc_inject_fault(&env->inject, env->role, step);
    int again = env->last_at == step; /* a step marked twice in a row acts once */

    env->last_at = step;
    env->step = (sig_atomic_t)step;
    gpuipc_watch_step(step, NULL);
    if (action != GPUIPC_FAULT_NONE && env->act != NULL && !again)
        env->act(env, w, action, step);
}

/* Marks step as the one this process waits in: the step a report of the
 * peer's death names, set before a send, since the peer may answer, or
 * die, before sendmsg() has even returned. */
static inline void gpuipc_env_waits(gpuipc_env *env, unsigned step)
{
    env->step = (sig_atomic_t)step;
    gpuipc_watch_step(step, NULL);
}

/* The peer's pid to use, given the one its HELLO names: that one in the
 * forked mode, else the kernel's view, or 0 if the two differ (another pid
 * namespace, where the HELLO pid means nothing here). */
static inline int gpuipc_env_peer_pid(const gpuipc_env *env, uint32_t hello_pid)
{
    if (env->cred_pid == 0 || (env->cred_pid > 0 && (uint32_t)env->cred_pid == hello_pid))
        return (int)hello_pid;
    return 0;
}

#endif
