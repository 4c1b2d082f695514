/* SPDX-License-Identifier: Apache-2.0 */
/* ranks_run.h: within --ranks, what its files share: the run as one rank
 * holds it (ranks_run), the keys it publishes, and the functions one file
 * of the mode calls in another: the watchdog's side (ranks_watch.c), the
 * job and its ranks (ranks_job.c), the pairs (ranks_pair.c), the verdict
 * (ranks_verdict.c), rank 0's --json (ranks_json.c, gathering for
 * run/result_doc.h) and its --prom and --junit (ranks_files.c). Only ranks.c and the ranks_*.c files include it. */
#ifndef GPUIPC_APP_CUDA_RANKS_RUN_H
#define GPUIPC_APP_CUDA_RANKS_RUN_H

#include <pthread.h>
#include <stdint.h>

#include "app/cuda/process.h"
#include "app/cuda/registry.h"
#include "core/err.h"
#include "core/outfile.h"
#include "launch/job.h"
#include "launch/meet.h"
#include "launch/pmix.h"
#include "run/cells.h"
#include "wire/msg.h"

#define KEY_RESULTS "gpuipc.results"
#define KEY_REFUSED "gpuipc.refused"
#define KEY_VERDICT "gpuipc.verdict"
#define WHO_LEN 160

/* One of the two pairs a rank may be in at once: as the producer of a
 * pair (this rank -> peer) or as its consumer (peer -> this rank). */
typedef struct ranks_slot {
    volatile uint32_t peer;
    volatile int in_pair;
} ranks_slot;

/* Where this rank is, for the watchdog's line (ranks_watch.c) and the
 * records of pairs not ended (ranks_verdict.c): a slot set by the rank's
 * run thread as a pair begins and cleared as its record is handed over (in
 * a phase, by the pair's own thread), read by the watchdog and the
 * verdict's thread at any time, so each field is volatile and read on its
 * own (async-signal-safe reads). In a phase the rank is in two pairs at
 * once, one in each slot; in a round, in one. */
typedef struct ranks_where {
    volatile uint32_t rank;       /* this rank */
    ranks_slot as[2];             /* [RANKS_EXPORTS]: its pair as producer; [RANKS_IMPORTS] */
    volatile uint64_t deadline_s; /* --deadline, in whole seconds */
} ranks_where;

#define RANKS_EXPORTS 0
#define RANKS_IMPORTS 1

/* The run, as this rank holds it. */
typedef struct ranks_run {
    const gpuipc_options *o;
    gpuipc_options quiet; /* the sessions': their step log at --quiet unless -v */
    const gpuipc_app_selection *s;
    const gpuipc_inject *inject;
    uint64_t t0;
    gpuipc_launch *l;
    gpuipc_job *job;
    uint32_t rank, size;
    gpuipc_meet *meet;   /* its listener; the others' pidfds */
    unsigned refused_said; /* strangers refused at it, as said so far */
    gpuipc_job_gpu *gpus; /* every rank's GPU card (ordinal -1: none), by rank */
    char (*who)[WHO_LEN]; /* "rank 2 (node1, GPU 0)" */
    const char **whop;
    unsigned char *gone; /* ranks seen gone */
    gpuipc_cell_side *mine; /* this rank's records, by peer: [peer * 2 + (consumer ? 1 : 0)] */
    int needs_cuda;
    const char *mechs[GPUIPC_APP_NMECH_MAX]; /* the selection's names */
    unsigned char *stuck; /* ranks that did not come to a pair in time (alive) */
    uint64_t pairs_until; /* no pair starts after this (CLOCK_MONOTONIC): the verdict's time */
    gpuipc_outfile json;
    int json_checked;
    int files_checked;   /* --prom's and --junit's paths checked (run/report_files.h) */
    ranks_where where; /* the watchdog's (gpuipc_ranks_watch_start) */
    gpuipc_app_proc proc; /* the FDs each session's last check counts from (rounds) */
    pthread_mutex_t marks; /* gone and stuck, marked by the sessions' threads */
    int marks_ready;
    volatile int closed; /* the verdict's thread took the records: no pair starts */

    /* The verdict's thread (ranks_verdict.c), which makes no GPU call, and
     * what it shares with the run's thread, under mu. The run's thread
     * plays a pair into work (as producer into work[RANKS_EXPORTS], as
     * consumer into work[RANKS_IMPORTS]) and hands it over
     * (gpuipc_ranks_record) into mine, final[i] then set; once the
     * verdict's thread has taken the records (published), later ones are
     * not taken and no pair starts. */
    gpuipc_cell_side *work[2];
    unsigned char *final;
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* played, on CLOCK_MONOTONIC */
    int mu_ready;        /* mu and cv are made */
    int played, published;
    char refused_line[400]; /* what its listener refused, as said last ("" none) */
    char tcp_why[GPUIPC_ERR_LEN]; /* why it has no TCP listener ("" where it has one,
                                   * or needs none) */
    pthread_t verdict;
    int verdict_started, verdict_code;
} ranks_run;

/* ---- the watchdog's side (ranks_watch.c) ------------------------------------------- */

/* Notes rr->rank and --deadline (deadline_ns) in rr->where for the
 * watchdog's line, maps the status page and, with a deadline, starts the
 * watchdog for the run that started at t0, with rr->where as its argument:
 * at the deadline it says where this rank is and exits 1. The watchdog
 * reads rr->where until the run claims its end (gpuipc_watch_claim), so rr
 * must last until then. Returns 0, or a negative errno with err. */
int gpuipc_ranks_watch_start(ranks_run *rr, uint64_t deadline_ns, uint64_t t0, gpuipc_err *err);

/* Notes for the watchdog that this rank is in the pair p -> c, in role
 * (GPUIPC_ROLE_PRODUCER or GPUIPC_ROLE_CONSUMER). */
void gpuipc_ranks_watch_pair(ranks_run *rr, uint32_t p, uint32_t c, int role);

/* Notes for the watchdog that this rank is no more in its pair of slot k
 * (RANKS_EXPORTS or RANKS_IMPORTS). */
void gpuipc_ranks_watch_no_pair(ranks_run *rr, int k);

/* ---- the job and its ranks (ranks_job.c) ------------------------------------------- */

/* Says this rank's result line, "rank R: result: <text>" (before the job
 * is joined, "gpuipc_test: result: <text>"), and keeps it as the run's
 * result line (--brief's verdict). */
void gpuipc_ranks_say_result(const ranks_run *rr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The name of rank r for messages ("rank 2 (node1, GPU 0)"), owned by rr. */
const char *gpuipc_ranks_who(const ranks_run *rr, uint32_t r);

/* Whether ranks p and q are on different nodes (another boot id, by their
 * cards), arg the ranks_run. */
int gpuipc_ranks_apart(uint32_t p, uint32_t q, void *arg);

/* Whether mechanism mech, left out of pair p -> q, was left out as one
 * that does not cross nodes between two (rank 0 says those once): as
 * gpuipc_cells_where's left_out, arg the ranks_run. */
int gpuipc_ranks_left_out(uint32_t p, uint32_t q, const char *mech, void *arg);

/* Publishes this rank's GPU and options digest (refused: rank 0 refused its
 * --json) and reads every rank's after a fence. Returns 0; GPUIPC_USAGE
 * where a rank's options differ from rank 0's or rank 0 refused its own
 * (said); or a negative errno with err. */
int gpuipc_ranks_share_gpus(ranks_run *rr, int refused, gpuipc_err *err);

/* Names every rank for messages, from its card and its GPU. */
void gpuipc_ranks_name(ranks_run *rr);

/* Rank r is gone: its later pairs are not waited for, nor its PMIx keys. */
void gpuipc_ranks_mark_gone(ranks_run *rr, uint32_t r);

/* Whether rank r is known to be gone: seen so in a pair, or, on this node,
 * its process ended now (its pidfd). Returns 1 or 0. */
int gpuipc_ranks_is_gone(ranks_run *rr, uint32_t r);

/* Rank r is alive but did not come to a pair in time: its later pairs are
 * not waited for either. */
void gpuipc_ranks_mark_stuck(ranks_run *rr, uint32_t r);

/* Whether rank r is marked gone, or stuck, as the marks stand (without
 * looking at its process). */
void gpuipc_ranks_marks(ranks_run *rr, uint32_t r, int *gone, int *stuck);

/* ---- the pairs (ranks_pair.c) ------------------------------------------------------ */

/* Says the connections refused at this rank's listener since the last time,
 * from processes that are no rank of this job, once each time more come. */
void gpuipc_ranks_say_refused(ranks_run *rr);

/* Plays every pair of the plan this rank takes part in, its records into
 * rr->mine: in phases (phase k: it exports to rank + k and imports from
 * rank - k, both at once, run/phase_loop counting what the process holds
 * at each phase's ends), or with GPUIPC_PHASES=off one pair at a time in
 * rounds of disjoint pairs. Returns 0, or -ENOMEM. */
int gpuipc_ranks_play(ranks_run *rr);

/* Whether the pairs are played in phases (GPUIPC_PHASES is not "off"). */
int gpuipc_ranks_in_phases(void);

/* ---- the verdict (ranks_verdict.c) ------------------------------------------------- */

/* Starts the verdict's thread. It waits until the run's thread has played
 * its pairs (gpuipc_ranks_conclude) or the verdict's time comes
 * (rr->pairs_until), whichever is first; then publishes this rank's
 * records (the pairs ended, and for the others where this rank is: its
 * pair, step and call); the lowest living rank (rank 0 unless it is gone)
 * gathers every rank's, judges each ordered pair, prints them, writes the
 * files and publishes the run's status, which every rank takes. Where the
 * run's thread has not ended its pairs by then (stuck), the verdict's
 * thread ends the process with that status. Returns 0, or a negative
 * errno with err. */
int gpuipc_ranks_verdict_start(ranks_run *rr, gpuipc_err *err);

/* The run's thread hands over the record of its pair with peer (in
 * work[consumer]) as its consumer or producer, and is out of that pair.
 * Returns 0, or -1 where the verdict's thread has published already (the
 * record is dropped: no pair starts after). */
int gpuipc_ranks_record(ranks_run *rr, uint32_t peer, int consumer);

/* The record of the pair with peer, handed over already, fails with text
 * (a drift of its phase that no pair names), where the pair met (one that
 * did not moved nothing of this process's); a record that failed already
 * keeps its own reason first, its weight and its blame. Nothing once
 * published. */
void gpuipc_ranks_amend(ranks_run *rr, uint32_t peer, int consumer, const char *text);

/* The run's thread has played its pairs: waits for the verdict's thread
 * and returns the status this rank exits with. Without the thread (it
 * could not start), says so and returns GPUIPC_FAIL. */
int gpuipc_ranks_conclude(ranks_run *rr);

/* Frees what the verdict's side holds (after gpuipc_ranks_conclude, or
 * where the thread never started). */
void gpuipc_ranks_verdict_free(ranks_run *rr);

/* ---- rank 0's --json (ranks_json.c) ------------------------------------------------ */

/* Writes the gpuipc-ranks/1 document in place of whatever is at --json's
 * path: the run's verdict from cells (rr->size x rr->size, by producer and
 * consumer) with code and the counts of proven, failed (pf) and skipped
 * (ps) pairs, or, cells NULL, a document saying the run is under way (then
 * the path is checked again for the verdict's writing). Nothing where
 * rr->json_checked is 0. Returns 0, or -1 where it could not be written
 * (said). */
int gpuipc_ranks_json_write(ranks_run *rr, const gpuipc_cell *cells, int code, unsigned proven,
                            unsigned pf, unsigned ps);

/* ---- the verdict's --prom and --junit (ranks_files.c) ----------------------------- */

/* Before the run, on rank 0: checks --prom's and --junit's paths as the
 * forked mode does (run/report_files.h). Returns 0 (also on another rank,
 * or with neither given), or -1 after saying why: a usage error, which the
 * caller makes every rank's. */
int gpuipc_ranks_files_check(ranks_run *rr);

/* At the start, where the paths were checked: each file is replaced by one
 * that says the run is under way and claims no verdict. */
void gpuipc_ranks_files_begin(ranks_run *rr);

/* The verdict's files, from cells (rr->size x rr->size, judged) with exit
 * status code and t's counts (gpuipc_cells_judge's); on a rank whose paths
 * were not checked before (not rank 0), they are checked now. Nothing
 * where neither is given. Returns 0, or -1 where one could not be checked
 * or written (said): then a PASS or SKIP is no more, and the file and the
 * --json written before it say FAIL; the caller's status is to be FAIL. */
int gpuipc_ranks_files_write(ranks_run *rr, const gpuipc_cell *cells, int code,
                             const gpuipc_cells_tally *t);

/* Lets go of the directories held for the files (every rank, at its end). */
void gpuipc_ranks_files_close(ranks_run *rr);

#endif
