/* SPDX-License-Identifier: Apache-2.0 */
/* ranks_doc.h: rank 0's --json under --ranks, the gpuipc-ranks/1 document:
 * every rank (host, pid, GPU, where it is) and every ordered pair with its
 * verdict and its scenarios, or, before the verdict, a document saying the
 * run is under way; written through the one safe file writer
 * (core/outfile.h). From data only: the mode (app/cuda/ranks_json.c)
 * gathers each rank's card, GPU and place into gpuipc_ranks_doc. */
#ifndef GPUIPC_RANKS_DOC_H
#define GPUIPC_RANKS_DOC_H

#include <stddef.h>
#include <stdint.h>

#include "core/outfile.h"
#include "run/cells.h"

/* One rank, as the document says it. */
typedef struct gpuipc_ranks_doc_rank {
    const char *host;    /* its card's host name, or NULL (no card) */
    uint32_t pid;        /* its card's pid, 0 without one */
    int gpu;             /* its GPU's ordinal, -1: none */
    char gpu_uuid[48];   /* its GPU's UUID (with gpu >= 0) */
    int on_this_node;    /* on rank 0's node (launch/job.h) */
    char where[512];     /* where it is, in words */
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
