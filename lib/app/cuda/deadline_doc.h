/* SPDX-License-Identifier: Apache-2.0 */
/* deadline_doc.h: what the watchdog of --deadline (deadline.c) asks of
 * deadline_doc.c: the --json document filled in from its template, and the
 * producer's results as far as they got. Only those two files include it.
 * Every function here is async-signal-safe: no stdio, no malloc. */
#ifndef GPUIPC_APP_CUDA_DEADLINE_DOC_H
#define GPUIPC_APP_CUDA_DEADLINE_DOC_H

#include <stddef.h>
#include <stdint.h>

#include "app/cuda/producer_run.h"

/* What the deadline's document is made from, gathered by the watchdog as
 * it fires. Every pointer is the caller's and outlives the call. */
typedef struct gpuipc_deadline_doc {
    const char *tmpl;          /* the template (result_doc.h's markers), or NULL: none */
    const char *path;          /* --json's path ("-": standard output), or NULL: none */
    const gpuipc_producer_run *run; /* the producer's run, or NULL in a consumer */
    const char *verdict;       /* the result line's text, after "result: " */
    const char *consumer;      /* how the consumer ended, or NULL (a consumer's own) */
    const char (*uuids)[48];   /* the GPUs' UUIDs as text by ordinal, GPUIPC_GPU_OPEN_MAX of
                                * them ("" where unknown) */
    uint64_t wall_ns;          /* the run's time so far */
    int code;                  /* the exit status of the watchdog's verdict */
    int sig;                   /* the stop signal it ends after, or 0 at the deadline */
    char *text;                /* the watchdog's text buffer (text_len bytes), which this */
    size_t text_len;           /* overwrites */
} gpuipc_deadline_doc;

/* How many scenarios run has, as its thread published them (its tables are
 * whole and at least this long once it is read); 0 where run is NULL. */
size_t gpuipc_deadline_nscen(const gpuipc_producer_run *run);

/* Counts run's results that ended, by verdict, into the three counts (all
 * 0 where run is NULL). */
void gpuipc_deadline_counts(const gpuipc_producer_run *run, unsigned *passed, unsigned *failed,
                            unsigned *skipped);

/* Writes d's document with system calls only, through the file --json
 * checked before the run (replaced whole) or to standard output. Returns 0
 * (also where no document is wanted: no path or no template), or -1 where
 * it could not be written whole: a file that was there is then left as it
 * was. */
int gpuipc_deadline_doc_write(const gpuipc_deadline_doc *d);

#endif
