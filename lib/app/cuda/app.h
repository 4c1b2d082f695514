/* SPDX-License-Identifier: Apache-2.0 */
/* app.h: what the program's modes share (lib/app/cuda/): one process's
 * signals and FDs (process.c), the consumer's process (consumer_proc.c), the
 * producer's run (producer_proc.c) and its scenarios under Check and
 * --repeat (rounds.c), --bench's parts (bench_mode.c); and the modes
 * themselves, one file each: the forked one-shot run (oneshot.c), --serve
 * (serve.c), --connect (connect.c), --list (list.c), --fault-matrix
 * (fault_matrix.c). The mechanisms come from the registry (registry.c). The
 * producer's pieces have headers of their own: its GPUs (producer_devices.h),
 * one scenario (scenario_ask.h), the session's end (producer_end.h) and the
 * summary (producer_summary.h). */
#ifndef GPUIPC_APP_CUDA_APP_H
#define GPUIPC_APP_CUDA_APP_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "app/options.h"
#include "bench/bench.h"
#include "core/account.h"
#include "core/err.h"
#include "core/log.h"
#include "core/stop.h"
#include "gpu/nvml.h"
#include "run/cellset.h"
#include "run/result_doc.h"
#include "session/consumer.h"
#include "session/env.h"
#include "session/inject.h"
#include "session/mech.h"
#include "session/producer.h"
#include "wire/wire.h"

/* ---- the registry (registry.c) ---------------------------------------------------------- */

/* Every mechanism the program knows, in the order --list and --help show
 * them. Adding a mechanism is adding its file and one line there. */
extern const gpuipc_mech *const gpuipc_app_registry[];
extern const size_t gpuipc_app_nmech;
#define GPUIPC_APP_NMECH_MAX 32

/* What a run selects: the mechanisms to run (from --only, --pairs, the
 * defaults, --bench's baseline and --destructive) and those --require
 * names. */
typedef struct gpuipc_app_selection {
    const gpuipc_mech *sel[GPUIPC_APP_NMECH_MAX];
    size_t nsel;
    const gpuipc_mech *req[GPUIPC_APP_NMECH_MAX];
    size_t nreq;
} gpuipc_app_selection;

/* Chooses the mechanisms for o, after checking the registry's tables.
 * Returns 0, or GPUIPC_USAGE (or GPUIPC_FAIL for a registry that breaks a
 * rule of gpuipc_mech_check_registry) after saying why on stderr. */
int gpuipc_app_select(const gpuipc_options *o, gpuipc_app_selection *s);

/* The mechanism the others are measured against (its table's reference
 * field): --pairs runs it, --fault-matrix defaults to it. */
const gpuipc_mech *gpuipc_app_reference(void);

/* ---- one process (process.c) ------------------------------------------------------------ */

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

/* The other process i (0 or 1) of the forked run not yet reaped, or -1:
 * gpuipc_stop_peer's (core/stop.h keeps them, gpuipc_stop_set_peers), for
 * deadline.c. Async-signal-safe. */
pid_t gpuipc_app_peer(int i);

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

/* ---- the consumer's process (consumer_proc.c) ------------------------------------------- */


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
 * against proc's. The session's end goes into *end. Returns its status. */
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

/* ---- the producer's run (producer_proc.c, rounds.c) ------------------------------------- */

/* The compute modes of the GPUs this process sees, and whether an MPS
 * control daemon serves them (scenarios.c): what decides whether two
 * processes can each hold a context on a GPU (run/plan.h's rule). */
typedef struct gpuipc_app_modes {
    int n;             /* GPUs seen */
    int *mode;         /* each one's CU_COMPUTEMODE_..., -1 unknown; NULL before read */
    int mps;           /* an MPS control daemon's pipe is there */
    char mps_dir[256]; /* its directory */
} gpuipc_app_modes;

/* Reads the modes of the n GPUs there are (after cuInit). Returns 0 or
 * -ENOMEM. */
int gpuipc_app_modes_read(gpuipc_app_modes *m, int n);

/* Whether two processes cannot both hold a context on GPU ordinal (1, the
 * cause and fix in why), or can (0). */
int gpuipc_app_modes_block(const gpuipc_app_modes *m, int ordinal, gpuipc_cause *why);

void gpuipc_app_modes_free(gpuipc_app_modes *m);

/* --bench's default one-shot runs, timed as whole processes, and the peak
 * RSS of a bare CUDA context, both measured by the forked mode before it
 * or its consumer touches CUDA (gpuipc_app_bench_oneshots), for the bench's
 * tables (gpuipc_app_run_bench). */
typedef struct gpuipc_app_oneshots {
    gpuipc_samples ns; /* each run's wall time; the bench takes them over */
    int failed;        /* a run failed, or could not be started or waited for */
    uint64_t bare_hwm; /* the bare context's peak RSS (0: not measured) */
} gpuipc_app_oneshots;

typedef struct gpuipc_producer_run {
    gpuipc_env env;
    gpuipc_wire *w;
    const gpuipc_options *o;
    /* The scenarios, the cells of the run (run/cellset.h): sized once the
     * run knows its GPUs; a watchdog may read them at any time. */
    gpuipc_cellset cells;
    /* The GPUs the scenarios run on (--device, or every GPU), once opened:
     * ngpus 0 before, or where the run has one GPU by o->device. */
    int *gpus;
    size_t ngpus;
    gpuipc_app_modes cmodes; /* the compute modes of every GPU seen, once opened */
    int kept_apart;     /* no GPU of the run can be shared by two processes (cmodes) */
    const gpuipc_mech *req[GPUIPC_APP_NMECH_MAX]; /* --require */
    size_t nreq;
    pid_t child;        /* the forked consumer; -1 with --serve */
    unsigned hello;     /* HELLO flags: what the scenarios need */
    int opened;         /* gpuipc_app_producer_open ran */
    int cuda;           /* 0: GPU open; 1: no driver or GPU; -1: the driver failed */
    gpuipc_nvml_modes modes; /* NVML's view of the producer's GPU (modes.text says) */
    uint8_t uuid[GPUIPC_UUID_LEN]; /* the producer's GPU, once opened */
    const char *destructive; /* the destructive mechanism selected, or NULL */
    unsigned bench_passed, bench_failed; /* --bench: its scenarios, by their verdicts */
    gpuipc_app_oneshots *oneshots; /* --bench in the forked mode: measured before; else NULL */
    /* The producer refused to run any scenario (--expect-gpus); lost says
     * why. */
    int halted;
    unsigned rounds;         /* --repeat rounds run (1 for a plain run that ran) */
    gpuipc_round_record *round_records; /* --repeat with --json: each round's (malloc) */
    size_t nround_records, round_records_cap, round_records_left_out;
    gpuipc_err cuda_why;
    int started;        /* HELLO went both ways */
    int checked;        /* the last checks ran before BYE (the exit's are not needed) */
    char lost[GPUIPC_ERR_LEN]; /* why the session did not start, or broke before BYE */
    char last[GPUIPC_ERR_LEN]; /* the producer's end-of-session check, if it failed */
    /* --destructive: the sacrificial consumer, its connection, and how it ended. */
    gpuipc_wire *w2;
    pid_t child2;       /* -1: none */
    int child2_done;    /* reaped */
    int child2_ok;      /* it exited 0 */
    char child2_desc[GPUIPC_ERR_LEN];
    char where[640];
    /* --ranks: the consumer rank's GPU (the producer's own where both hold
     * one GPU), and how its end is described ("rank 3 (host, GPU 1)"). */
    uint8_t peer_uuid[GPUIPC_UUID_LEN];
    const char *peer_label;
    /* The mode's process (the FDs at the start, rounds.c's exit hook); NULL
     * where the mode set none. */
    gpuipc_app_proc *proc;
    /* --json: the step times of the scenario under way (rounds.c). */
    gpuipc_timing timing;
} gpuipc_producer_run;

/* ---- the producer's scenarios (scenarios.c) ------------------------------------------- */

/* Frees the run's cells, its GPU list and its compute modes. */
void gpuipc_app_scenarios_free(gpuipc_producer_run *run);

/* --pairs: the selection (its reference mechanism) over each pair. Returns
 * 0, GPUIPC_USAGE (said why) or GPUIPC_FAIL (out of memory). */
int gpuipc_app_expand_pairs(gpuipc_producer_run *run);

/* Several GPUs (run->gpus): every selected GPU mechanism on each GPU, the
 * host-memory ones once, and the ring of run/plan.h with the mechanisms
 * that work across devices, each group with its summary heading. Returns 0
 * or -1 out of memory. */
int gpuipc_app_expand_devices(gpuipc_producer_run *run);

/* Sets run up for the selection, before any connection. */
void gpuipc_app_producer_init(gpuipc_producer_run *run, const gpuipc_options *o,
                              const gpuipc_mech *const *sel, size_t nsel,
                              const gpuipc_mech *const *req,
                              size_t nreq, const gpuipc_inject *inject, uint64_t t0);

/* HELLO with the consumer(s). Returns 0 or a negative errno with err. */
int gpuipc_app_producer_hello(gpuipc_producer_run *run, gpuipc_err *err);

/* After HELLO: the GPU (unless opened before), the pairs, the probes, the
 * scenarios or the bench. Returns the verdict so far. */
int gpuipc_app_producer_scenarios(gpuipc_producer_run *run);

/* Runs the scenarios that can run, as Check tests, --repeat times. Returns
 * 0, or GPUIPC_FAIL if the soak stopped at a failure or a drift. */
int gpuipc_app_run_rounds(gpuipc_producer_run *run);

/* ---- --bench (bench_mode.c) -------------------------------------------------------------- */

/* The default one-shot runs, timed as whole processes before this process
 * touches CUDA, and the bare context's peak RSS, into *os (zeroed first). */
void gpuipc_app_bench_oneshots(const gpuipc_options *o, gpuipc_app_oneshots *os);

/* --bench in the producer, once both sides have probed. Returns the exit
 * status. */
int gpuipc_app_run_bench(gpuipc_producer_run *run, int cuda, const gpuipc_err *cuda_why);

/* ---- the run's deadline (deadline.c) -------------------------------------------------- */

/* How long after the deadline the forked consumer ends itself, where the
 * producer, which speaks for the run, did not end it. */
#define GPUIPC_APP_DEADLINE_BACKSTOP_NS (3000ull * 1000000ull)

/* The producer's watchdog for --deadline (none without one), for the run
 * that started at t0: at the deadline it ends the run whatever is stuck,
 * with the verdicts so far, the stuck process, step and call named, the
 * consumers killed and the --json document written (deadline.c says how).
 * Call after the fork. Returns 0, or -1 after saying why. */
int gpuipc_app_deadline_producer(gpuipc_producer_run *run, uint64_t t0);

/* Prepares again the document that watchdog writes, now that run knows
 * more (the peer's facts, its GPU, its place so far). */
void gpuipc_app_deadline_document(gpuipc_producer_run *run);

/* Frees what the watchdog's document was prepared in, once the run has
 * claimed its end (gpuipc_watch_claim: the watchdog writes none then). */
void gpuipc_app_deadline_done(void);

/* The consumer's: forked, a backstop a little after the deadline, which
 * the producer should have ended the run by; with --connect, at the
 * deadline, reporting this side. Returns 0, or -1 after saying why. */
int gpuipc_app_deadline_consumer(const gpuipc_options *o, uint64_t t0);

/* ---- the modes, one file each ------------------------------------------------------------ */

/* The forked one-shot run (and --repeat, --pairs, --bench, --destructive). */
int gpuipc_app_oneshot(const gpuipc_options *o, const gpuipc_app_selection *s,
                       const gpuipc_inject *inject, uint64_t t0);

/* --serve PATH: the producer, for one consumer that connects there. */
int gpuipc_app_serve(const gpuipc_options *o, const gpuipc_app_selection *s,
                     const gpuipc_inject *inject, uint64_t t0);

/* --connect PATH: the consumer of the producer that serves there. */
int gpuipc_app_connect(const gpuipc_options *o, const gpuipc_inject *inject, uint64_t t0);

/* --ranks: one rank of a job a PMIx launcher started (ranks.c). */
int gpuipc_app_ranks(const gpuipc_options *o, const gpuipc_app_selection *s,
                     const gpuipc_inject *inject, uint64_t t0);

/* --list [--json [FILE]]: what this machine can do. */
int gpuipc_app_list(const gpuipc_options *o, const gpuipc_inject *inject, uint64_t t0);

/* --fault-matrix: every step x action as --serve/--connect pairs. */
int gpuipc_app_fault_matrix(const gpuipc_options *o, const gpuipc_app_selection *s);

#endif
