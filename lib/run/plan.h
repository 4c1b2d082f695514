/* SPDX-License-Identifier: Apache-2.0 */
/* plan.h: the plan of a run over the GPUs of a node, without CUDA: which
 * GPUs (--device), which ordered pairs of them (every ordered pair in the
 * phases of the default run, --pairs all and --ranks, or the quicker ring
 * of --pairs ring; for --ranks under GPUIPC_PHASES=off, every pair in
 * rounds of disjoint pairs), and the verdicts gathered per GPU and per pair
 * (an N x N matrix). The forked mode and ranks run a phase's pairs at
 * once. */
#ifndef GPUIPC_RUN_PLAN_H
#define GPUIPC_RUN_PLAN_H

#include <stddef.h>

#include "core/cause.h"
#include "core/err.h"
#include "session/producer.h"

/* The most GPUs a device list may name. */
#define GPUIPC_PLAN_DEVICES_MAX 1024

/* One ordered pair: the producer's GPU a exports, the consumer's GPU b
 * imports (ordinals as CUDA numbers them in this process); round is the
 * pair's round, from 0. */
typedef struct gpuipc_plan_pair {
    int a, b;
    unsigned round;
} gpuipc_plan_pair;

/* Parses --device: "all", or a comma-separated list of ordinals and ranges
 * ("0", "0,2", "4-7"), none repeated. count is the number of GPUs this
 * process sees (-1: not known yet, which checks the syntax only). Writes the
 * ordinals in the order given into out (room for cap); "all" gives 0 to
 * count - 1. Returns 0 with *n set, or -EINVAL with why naming the bad
 * entry (an ordinal with no GPU names the count). */
int gpuipc_plan_devices(const char *spec, int count, int *out, size_t cap, size_t *n,
                        gpuipc_err *why);

/* The ring over gpus[0..n): gpus[i] exports to gpus[i + 1], the last to the
 * first, so that every GPU is proven as exporter and as importer across
 * devices; for n == 2 that is both directions of the one pair, for n < 2
 * nothing. In rounds of disjoint pairs (2 rounds for an even n, 3 for an
 * odd one). Writes n pairs (0 for n < 2) into out, which has room for n.
 * Returns the count. */
size_t gpuipc_plan_ring(const int *gpus, size_t n, gpuipc_plan_pair *out);

/* Every ordered pair of gpus[0..n) once, in rounds of disjoint pairs (no
 * GPU in two pairs of a round): the circle method's n - 1 rounds of
 * unordered pairs (n rounds for an odd n, one GPU resting in each), each
 * round played one way and then the other. Returns a malloc'd array of
 * n * (n - 1) pairs in round order (the caller frees it), with *nrounds
 * set; NULL for n < 2 (*nrounds 0) or out of memory. */
gpuipc_plan_pair *gpuipc_plan_all_pairs(const int *gpus, size_t n, unsigned *nrounds);

/* Every ordered pair of gpus[0..n) once, in the phases of the run's
 * schedule: phase 0 (not written here) is every GPU alone; in phase k (1 to
 * n - 1) gpus[i] exports to gpus[(i + k) mod n], so that in every phase each
 * GPU exports once and imports once, and n GPUs take n phases, not
 * n(n - 1) steps. For n == 2 that is the ring: 0->1, 1->0. Returns a
 * malloc'd array of n(n - 1) pairs in phase order, each pair's round its
 * phase (1 to n - 1), with *nphases set to n - 1 (the caller frees it);
 * NULL for n < 2 (*nphases 0) or out of memory. */
gpuipc_plan_pair *gpuipc_plan_phases(const int *gpus, size_t n, unsigned *nphases);

/* In phase k (1 to n - 1) of gpus[0..n)'s phases (plan, as
 * gpuipc_plan_phases made it), whom gpus[i] exports to and imports from,
 * into *to and *from (as in gpus): what one rank of --ranks plays in that
 * phase, both at once. Returns 0, or -1 where k or i is out of range or
 * the plan has no such pairs (*to and *from untouched). */
int gpuipc_plan_phase_peers(const gpuipc_plan_pair *plan, const int *gpus, size_t n,
                            unsigned k, size_t i, int *to, int *from);

/* The verdicts gathered over a run's GPUs: per GPU (each scenario it took
 * part in, as exporter or importer, counted once) and per ordered pair. */
typedef struct gpuipc_plan_tally {
    unsigned passed, failed, skipped, stopped;
} gpuipc_plan_tally;

typedef struct gpuipc_plan_verdicts {
    size_t n;                 /* GPUs */
    int *gpus;                /* their ordinals */
    gpuipc_plan_tally *per_gpu;
    gpuipc_plan_tally *matrix; /* n x n: [i * n + j], i exporting to j (i == j: one GPU) */
} gpuipc_plan_verdicts;

/* Sets v up for gpus[0..n). Returns 0 or -ENOMEM. */
int gpuipc_plan_verdicts_init(gpuipc_plan_verdicts *v, const int *gpus, size_t n);

/* Counts a scenario of GPU a exporting to GPU b (a == b: within one GPU)
 * with verdict status (GPUIPC_PASS, _FAIL, _SKIP, _STOPPED; anything else,
 * a scenario that did not run, is not counted). GPUs not in the plan are
 * ignored. */
void gpuipc_plan_verdicts_add(gpuipc_plan_verdicts *v, int a, int b, int status);

/* A tally's verdict: GPUIPC_FAIL if anything failed, else GPUIPC_STOPPED if
 * something was stopped, else GPUIPC_PASS if something passed, else
 * GPUIPC_SKIP (nothing ran: all skipped, or nothing there). */
int gpuipc_plan_tally_verdict(const gpuipc_plan_tally *t);

/* GPU g's verdict over results[0..n) (each scenario's gpu, peer_gpu and
 * status), with every scenario it took part in counted into *t:
 * GPUIPC_FAIL where one of its own scenarios failed, or one between it and
 * a GPU whose own scenarios did not fail (the pair's link, or either GPU:
 * both are named); a failure between it and a GPU whose own scenarios
 * failed is that GPU's (a GPU that fell off the bus fails its neighbours'
 * pairs too). Else GPUIPC_STOPPED, GPUIPC_PASS or GPUIPC_SKIP as
 * gpuipc_plan_tally_verdict says of the rest. Two passes over the results
 * (the GPUs that failed on their own first), whatever fails: N GPUs'
 * verdicts take N times as long as one. Uses no memory of its own:
 * async-signal-safe, for the watchdog too. */
int gpuipc_plan_gpu_verdict(const gpuipc_result *results, size_t n, int g,
                            gpuipc_plan_tally *t);

/* The index of ordinal in v's GPUs, or -1. */
int gpuipc_plan_verdicts_index(const gpuipc_plan_verdicts *v, int ordinal);

/* Frees what init allocated. */
void gpuipc_plan_verdicts_free(gpuipc_plan_verdicts *v);

/* What decides whether GPU b can reach GPU a's memory: the driver's word
 * (cuDeviceCanAccessPeer of b for a: 1, 0, or -1 not known) and NVML's
 * (an NVLink between them: 1, 0, or -1 not known). */
typedef struct gpuipc_plan_peer {
    int can_access;
    int nvlink;
} gpuipc_plan_peer;

/* Whether there is no peer path from GPU b to GPU a's memory: the driver
 * says b cannot access a (0) and NVML shows no NVLink between them (0 or
 * not known). Returns 1 then, with the cause and the fix in why: a cell
 * that maps one GPU's memory for the other is skipped (the topology, not a
 * fault). Returns 0 where there is a path, or where the driver says there
 * is none but NVML shows an NVLink, or where the driver's word is not
 * known: the cell runs, and a refusal there is a failure. Async-signal-safe
 * it is not (it formats the cause). */
int gpuipc_plan_no_peer_path(int a, int b, const gpuipc_plan_peer *f, gpuipc_cause *why);

/* A GPU's compute mode, as the driver reports it (the values of CUDA's
 * CUcomputemode; checked against cuda.h by make cuda-check's twin in
 * app/cuda). */
enum gpuipc_plan_mode {
    GPUIPC_PLAN_MODE_DEFAULT = 0,
    GPUIPC_PLAN_MODE_PROHIBITED = 2,
    GPUIPC_PLAN_MODE_EXCLUSIVE_PROCESS = 3,
};

/* Whether two processes can each hold a context on GPU ordinal, whose
 * compute mode is mode (-1: not known) and which an MPS control daemon
 * serves where mps is set (its pipe directory in mps_dir). Returns 0 if
 * they can; 1 if not, with the cause and the fix in why: the GPU's
 * same-GPU scenarios, and the ring's pairs that involve it, are skipped
 * then (the site chose the mode; the node is not broken). */
int gpuipc_plan_mode_blocks(int ordinal, int mode, int mps, const char *mps_dir,
                            gpuipc_cause *why);

#endif
