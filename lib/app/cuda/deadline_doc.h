/* SPDX-License-Identifier: Apache-2.0 */
/* deadline_doc.h: the --json document at the deadline (deadline.c), written
 * by the one writer of the document (run/result_doc.h): prepared at the
 * start, where malloc, stdio and the driver may be used (what the program
 * gathers of the machine, the document as known then, the writer's
 * buffer), and finished by the watchdog with what only the deadline
 * decides and the cells published so far. Only deadline.c and
 * deadline_doc.c include it. */
#ifndef GPUIPC_APP_CUDA_DEADLINE_DOC_H
#define GPUIPC_APP_CUDA_DEADLINE_DOC_H

#include <stddef.h>
#include <stdint.h>

#include "app/cuda/producer_run.h"
#include "run/result_doc.h"

/* The document as prepared: d's pointers point into this struct, into
 * the options and into the run, all of which outlive it. */
typedef struct gpuipc_deadline_doc {
    gpuipc_doc d;              /* what is known at the start */
    gpuipc_doc_program prog;
    gpuipc_doc_machine *machine; /* the driver and GPUs (doc_data.c), or NULL */
    gpuipc_doc_kit kit;        /* the writer's buffer and the environment's effects */
    char where[640];           /* the run's where, as it was */
    gpuipc_facts own, peer;    /* this process's facts and the peer's, as they were */
} gpuipc_deadline_doc;

/* The producer's document (run) or a --connect consumer's (run NULL, o its
 * options), as known now; uuids (GPUIPC_GPU_OPEN_MAX of them, "" where
 * unknown) fill the UUIDs the machine lacks. Returns it, or NULL (out of
 * memory). */
gpuipc_deadline_doc *gpuipc_deadline_doc_make(const gpuipc_options *o,
                                              const gpuipc_producer_run *run,
                                              const char (*uuids)[48]);
void gpuipc_deadline_doc_free(gpuipc_deadline_doc *dd);

/* What the deadline decides, for gpuipc_deadline_doc_write. */
typedef struct gpuipc_deadline_end {
    const gpuipc_producer_run *run; /* the producer's run (its cells), or NULL */
    const char *verdict;       /* the result line's text, after "result: " */
    const char *consumer;      /* how the consumer ended, or NULL (a consumer's own) */
    uint64_t wall_ns;          /* the run's time so far */
    int code;                  /* the exit status of the watchdog's verdict */
} gpuipc_deadline_end;

/* Writes dd's document, finished with end and the cells the run's thread
 * has published (a cell under way is a failure "under way when the deadline
 * passed"), through the file checked before the run or to standard output.
 * Async-signal-safe: system calls and dd's memory only; nothing of the run
 * is changed. Returns 0 (also where no document is wanted: dd NULL), or -1
 * where it could not be written whole. */
int gpuipc_deadline_doc_write(gpuipc_deadline_doc *dd, const gpuipc_deadline_end *end);

#endif
