/* SPDX-License-Identifier: Apache-2.0 */
/* deadline.h: the verdict of a run at its --deadline, however it is stuck
 * (deadline.c): what the watchdog (core/watch.h) does when it fires, from a
 * view of the run that the program fills before the watchdog can fire
 * (app/cuda/deadline.c, which starts the watchdog with it as its arg). At
 * the deadline the producer's reads both processes' steps and calls from
 * the shared status page, kills the consumers, writes the summary and the
 * result line (FAIL, naming the stuck process, its step and its call, the
 * verdicts reached so far kept), the --json document (run/result_doc.h)
 * and --prom/--junit (run/report_files.h), and exits 1; all of it with
 * write(2) and the view's memory, since the stuck thread may hold the locks
 * of stdio and malloc. The forked consumer's is a backstop a little later
 * (the producer speaks for the run); a --connect consumer, on its own,
 * reports itself at the deadline. */
#ifndef GPUIPC_RUN_DEADLINE_H
#define GPUIPC_RUN_DEADLINE_H

#include <stddef.h>
#include <stdint.h>

#include "core/facts.h"
#include "core/watch.h"
#include "run/cellset.h"
#include "run/doc.h"
#include "run/result_doc.h"

/* The room for the run's where (the summary's first line). */
#define GPUIPC_DEADLINE_WHERE_LEN 640

/* The --json document at the deadline, prepared at the start, where malloc,
 * stdio and the driver may be used (the program makes and frees it:
 * app/cuda/deadline_doc.h), and finished by the watchdog with what only the
 * deadline decides and the cells published so far. d's pointers point into
 * this struct and into the options, which outlive it. */
typedef struct gpuipc_deadline_doc {
    gpuipc_doc d;              /* what is known at the start */
    gpuipc_doc_program prog;
    gpuipc_doc_machine *machine; /* the driver and GPUs, or NULL */
    gpuipc_doc_kit kit;        /* the writer's buffer and the environment's effects */
    char where[GPUIPC_DEADLINE_WHERE_LEN]; /* the run's where, as it was */
    gpuipc_facts own, peer;    /* this process's facts and the peer's, as they were */
} gpuipc_deadline_doc;

/* What a watchdog works from, and the memory it builds its text in: one
 * object per process, ready before the watchdog can fire and read by it
 * until the run has claimed its end (gpuipc_watch_claim). The first part
 * the program fills (gpuipc_deadline_init, then the producer's fields);
 * the rest is the watchdog's. */
typedef struct gpuipc_deadline {
    int role;                  /* GPUIPC_ROLE_PRODUCER or _CONSUMER */
    uint64_t t0;               /* the run's start (CLOCK_MONOTONIC) */
    gpuipc_doc_program prog;   /* the options' values: the deadline, the paths */
    /* The producer's: its cells (NULL in a consumer), the run's where (the
     * run's own text, read at the deadline), whether it forked its consumer
     * (0: --serve, whose consumer is another process), and what removes
     * --serve's socket file (async-signal-safe), or NULL. The consumers
     * killed are core/stop.h's peers at the deadline. */
    const gpuipc_cellset *cells;
    const char *where;
    int forked;
    void (*unlink_sock)(void);
    /* The document as prepared (NULL: none), and the one it replaced, kept
     * while the watchdog may read it (gpuipc_deadline_set_doc). */
    gpuipc_deadline_doc *doc, *older;
    /* The UUIDs of the run's GPUs by ordinal ("" where unknown), taken when
     * the document is prepared (the watchdog asks the driver nothing). */
    char uuid_text[GPUIPC_DOC_GPUS_MAX][GPUIPC_OUTCOME_UUID_LEN];

    /* The watchdog's: its text and result line, the page as it was at the
     * deadline and each side's process state then (/proc/<pid>/stat's
     * letter, 0 if unknown), read before the consumers are killed. */
    char text[1 << 16];
    char line[4096];
    gpuipc_watch_page snap;
    int have_snap;
    char snap_state[sizeof(((gpuipc_watch_page *)0)->side) / sizeof(gpuipc_watch_side)];
    /* How the consumers ended, as the watchdog found them: peer_end says it
     * for the summary and the document; peer_died is set where the consumer
     * had died before the deadline (its slot on the page then says where it
     * was when it died, not where it waits). */
    char peer_end[160];
    int peer_died;
    /* Whether the deadline's --json document failed, and whether its
     * --prom or --junit file did. */
    int doc_failed, files_failed;
} gpuipc_deadline;

/* dl for role from t0, with prog's values (copied); no cells, no
 * document, nothing of the watchdog's yet. */
void gpuipc_deadline_init(gpuipc_deadline *dl, int role, uint64_t t0,
                          const gpuipc_doc_program *prog);

/* Makes doc the one the watchdog writes: the first given takes the empty
 * place, the second replaces it whole (the first is kept in older until
 * dl is let go of: the watchdog may be reading it). Returns 0, or -1 where
 * dl holds two already (doc not taken). */
int gpuipc_deadline_set_doc(gpuipc_deadline *dl, gpuipc_deadline_doc *doc);

/* What the result line says of a phase's workers on page pg at now (each
 * cell in flight, the stuck first), into buf (len bytes, terminated).
 * Returns its length, or 0 where no worker is at work. For the tests. */
size_t gpuipc_deadline_workers_text(const gpuipc_watch_page *pg, uint64_t now, char *buf,
                                    size_t len);

/* The watchdog's fire functions (gpuipc_watch_start's fire, dl its arg):
 * at the deadline (sig 0) or after a stop the run did not end by itself
 * (sig). Async-signal-safe; they end the process. */
void gpuipc_deadline_producer_fire(void *dl, int sig);
void gpuipc_deadline_consumer_fire(void *dl, int sig);

#endif
