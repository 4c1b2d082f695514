/* SPDX-License-Identifier: Apache-2.0 */
/* result_doc.h: --json FILE for every mode (the one-shot run, --repeat,
 * --pairs, --serve, --connect, --list, --bench, --fault-matrix): one
 * document per process, in the schema of docs/result.schema.json
 * (schema_version 3), written at the end of every run, a failed or
 * interrupted one included, and at the deadline. The writer takes only
 * data (run/doc.h); its state (the checked file, the standard output set
 * aside) is the process's, set up before the run. Under --ranks, rank 0's
 * document (gpuipc-ranks/1: every rank and every ordered pair with its
 * verdict) is written here too, from the data the mode gathers
 * (app/cuda/ranks_json.c). */
#ifndef GPUIPC_RESULT_DOC_H
#define GPUIPC_RESULT_DOC_H

#include <stddef.h>
#include <stdint.h>

#include "core/json.h"
#include "core/outfile.h"
#include "run/cells.h"
#include "run/doc.h"

#define GPUIPC_RESULT_SCHEMA_VERSION 3

/* The room for the environment's effects (core/facts.h), gathered before
 * rendering. */
#define GPUIPC_DOC_EFFECTS_LEN 1024

/* The GPUs results[0..n) ran on (as exporter or importer; not-run ones
 * left out), in order of first use, into gpus (room for cap). Returns the
 * count. Async-signal-safe. */
size_t gpuipc_doc_gpus_of(const gpuipc_result *results, size_t n, int *gpus, size_t cap);

/* What a mode adds to its document: fn writes member key (an object or an
 * array) into j from arg, which the writer holds from here (the mode may
 * have returned by the time main writes the document) until
 * gpuipc_doc_drop_payload, which hands it to release (NULL: nothing to
 * release). --list, --bench and --fault-matrix register theirs; the
 * one-shot and two-terminal runs need none. */
typedef void (*gpuipc_doc_payload_fn)(gpuipc_json *j, const char *key, const void *arg);
void gpuipc_doc_set_payload(const char *key, gpuipc_doc_payload_fn fn, void *arg,
                            void (*release)(void *arg));

/* Lets go of the payload (its release), once no document will be written. */
void gpuipc_doc_drop_payload(void);

/* Writes d to d->o->json_path ("-": the standard output main set aside
 * with gpuipc_doc_take_stdout), through the file checked before the run
 * (core/outfile.h). Returns 0, or -1 with why. */
int gpuipc_doc_write(const gpuipc_doc *d, gpuipc_err *why);

/* What the writer needs besides the run's data, made ahead for a document
 * written later with system calls only (the watchdog's, at the deadline):
 * the environment's effects, and the sink's buffer. */
typedef struct gpuipc_doc_kit {
    char effects[GPUIPC_DOC_EFFECTS_LEN];
    char *mem;                 /* the sink's buffer (malloc), cap bytes */
    size_t cap;
} gpuipc_doc_kit;

/* Makes k. Returns 0, or -1 out of memory. */
int gpuipc_doc_kit_make(gpuipc_doc_kit *k);
void gpuipc_doc_kit_free(gpuipc_doc_kit *k);

/* Writes d, as gpuipc_doc_write does but without a mode's payload, with
 * k's buffer and system calls only (no stdio, no malloc, no driver): to the
 * file checked before the run, replaced whole, or to the standard output
 * main set aside. Async-signal-safe. Returns 0 (also where no document is
 * wanted), or -1 where it could not be written whole: a file that was there
 * is then left as it was. */
int gpuipc_doc_write_kit(const gpuipc_doc *d, gpuipc_doc_kit *k);

/* Checks, before the run, that the document may be written at path
 * (core/outfile.h: absent or a regular file, never followed; "-" is always
 * fine), and keeps its directory open for the write. Returns 0, or a
 * negative errno with err naming --json, the path and the reason. */
int gpuipc_doc_check_path(const char *path, gpuipc_err *err);

/* In a forked consumer, which writes no file of the producer's: lets go of
 * the directory held for --json. */
void gpuipc_doc_drop_file(void);

/* Whether gpuipc_doc_write ran (main writes a short document for a run
 * that ended before its mode wrote one). */
int gpuipc_doc_written(void);

/* --json -: keeps the real standard output for the document and sends what
 * the run prints there to standard error instead. Returns 0 or -1 (said). */
int gpuipc_doc_take_stdout(void);

/* This node's IMEX daemon (core/imex_facts.h) as the member key of the
 * object open in j: "tool", "installed", "ready" (null: not known),
 * "state", "nodes" (each "address", "host", "status"; null: not known) and
 * "error"; null where d is NULL (not asked). The one writer of it: the
 * document's machine and --list's host. */
void gpuipc_doc_imex_daemon(gpuipc_json *j, const char *key, const char *tool,
                            const gpuipc_imex_daemon *d);

/* ---- --ranks: rank 0's gpuipc-ranks/1 document ---------------------------------------- */

/* One rank, as the document says it. */
typedef struct gpuipc_ranks_doc_rank {
    const char *host;    /* its card's host name, or NULL (no card) */
    uint32_t pid;        /* its card's pid, 0 without one */
    int gpu;             /* its GPU's ordinal, -1: none */
    char gpu_uuid[48];   /* its GPU's UUID (with gpu >= 0) */
    gpuipc_doc_fabric fabric; /* its GPU's fabric info (its card's; run/doc.h) */
    int on_this_node;    /* on rank 0's node (launch/job.h) */
    char where[512];     /* where it is, in words */
    /* Its node (the lowest rank in its boot; -1: its boot id unknown) and
     * its group (the lowest rank on its node in its namespaces): a pair
     * within a group meets over a Unix socket, one between nodes over TCP,
     * and any other not at all (a pair's "transport" is null where it did
     * not meet, or could not). */
    int node, group;
} gpuipc_ranks_doc_rank;

/* The run's verdict as rank 0 judged it, for the document. */
typedef struct gpuipc_ranks_doc {
    int code;                 /* the exit status */
    uint64_t wall_ns;         /* the run's time so far */
    const char *pmix;         /* the PMIx library's version */
    uint32_t size;            /* ranks[0..size), cells[0..size * size) */
    unsigned proven, failed, skipped; /* ordered pairs */
    const gpuipc_ranks_doc_rank *ranks;
    const gpuipc_cell *cells; /* by producer * size + consumer */
    const char *const *who;   /* the ranks named, for the verdicts' reasons */
    const char *const *mechs; /* the selection's mechanisms */
    size_t nmech;
    /* Each pair's culprits (run/rank_results.h: gpuipc_rank_culprits), or
     * NULL for none known. */
    const uint32_t *culprits;
} gpuipc_ranks_doc;

/* Writes the document (d NULL: the run under way, not finished) in place of
 * whatever is at path, through file (checked before the run; *checked 0:
 * nothing to write). version is the program's. After the under-way
 * document, file is checked again for the verdict's (which replaces it, a
 * regular file of ours). Returns 0, or -1 where it could not be written (a
 * line on standard output says so). */
int gpuipc_ranks_doc_write(gpuipc_outfile *file, int *checked, const char *path,
                           const char *version, const gpuipc_ranks_doc *d);

#endif
