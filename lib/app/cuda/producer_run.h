/* SPDX-License-Identifier: Apache-2.0 */
/* producer_run.h: the producer's run (producer_proc.c), its scenarios (scenarios.c)
 * and their rounds under Check and --repeat (rounds.c). */
#ifndef GPUIPC_APP_CUDA_PRODUCER_RUN_H
#define GPUIPC_APP_CUDA_PRODUCER_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "app/cuda/process.h"
#include "app/cuda/registry.h"
#include "app/options.h"
#include "bench/bench.h"
#include "core/cause.h"
#include "core/err.h"
#include "gpu/nvml.h"
#include "run/cellset.h"
#include "run/deadline.h"
#include "run/doc.h"
#include "session/env.h"
#include "session/inject.h"
#include "session/mech.h"
#include "session/producer.h"
#include "wire/wire.h"

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

/* --bench's default one-shot runs, timed as whole processes, one more
 * default run's cells (from its --json document), the floor (cuInit and
 * every GPU's context in a process of its own) and the peak RSS of a bare
 * CUDA context, all measured by the forked mode before it or its consumer
 * touches CUDA (gpuipc_app_bench_oneshots), for the bench's tables
 * (gpuipc_app_run_bench). */
typedef struct gpuipc_app_oneshots {
    gpuipc_samples ns; /* each run's wall time; the bench takes them over */
    int failed;        /* a run failed, or could not be started or waited for */
    uint64_t bare_hwm; /* the bare context's peak RSS (0: not measured) */
    gpuipc_bench_floor floor; /* the default run's floor (note: why not measured) */
    gpuipc_bench_cells cells; /* the default run's cells (note: why not measured) */
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
    /* --ranks, a consumer of another node: its rank, its card's host name
     * and its listener's address without the port (peer_host NULL on one
     * node), whom this node's IMEX daemon should list. */
    uint32_t peer_rank;
    const char *peer_host;
    char peer_addr[64];
    /* The mode's process (the FDs at the start, rounds.c's exit hook); NULL
     * where the mode set none. */
    gpuipc_app_proc *proc;
    /* --json: the step times of the scenario under way (rounds.c). */
    gpuipc_timing timing;
    /* The cells a phase ran at once (phases.c), whose Check tests assert
     * their results without running them again; NULL: none did. */
    unsigned char *played;
    /* The watchdog's view of the run (run/deadline.h; made by deadline.c),
     * or NULL: it reads the run until the run claims its end, and is freed
     * then. */
    gpuipc_deadline *deadline;
} gpuipc_producer_run;

/* Frees the run's cells, its GPU list and its compute modes. */
void gpuipc_app_scenarios_free(gpuipc_producer_run *run);

/* --pairs: the selection (its reference mechanism) over each pair. Returns
 * 0, GPUIPC_USAGE (said why) or GPUIPC_FAIL (out of memory). */
int gpuipc_app_expand_pairs(gpuipc_producer_run *run);

/* Several GPUs (run->gpus): every selected GPU mechanism on each GPU, the
 * host-memory ones once, and every ordered pair in the phases of run/plan.h
 * (--pairs ring: the ring) with the mechanisms that work across devices,
 * each group with its summary heading. Returns 0
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

#endif
