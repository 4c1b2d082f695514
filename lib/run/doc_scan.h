/* SPDX-License-Identifier: Apache-2.0 */
/* doc_scan.h: a result document (--json, written by run/result_doc.c) read
 * back: the run's exit status and wall time, and each scenario's name,
 * verdict, GPUs and time. --bench reads a default run's document with it
 * (app/cuda/bench_mode.c) for the cells' times of its target. A strict
 * scanner of JSON (RFC 8259): the whole text must be one JSON object, every
 * string, number and literal well formed (a number within a double's range),
 * nothing after it but whitespace; its times at most about 31 years;
 * what it reads must be there once, of the type the writer gives it, and
 * the document of the schema version this program writes. Everything else
 * in the document is checked for its syntax and skipped. */
#ifndef GPUIPC_DOC_SCAN_H
#define GPUIPC_DOC_SCAN_H

#include <stddef.h>

#include "core/err.h"

#define GPUIPC_DOC_SCAN_NAME_LEN 64

/* One scenario of the document. */
typedef struct gpuipc_doc_scan_cell {
    char name[GPUIPC_DOC_SCAN_NAME_LEN]; /* "vmm 0->1" */
    int status;        /* GPUIPC_PASS, _FAIL, _SKIP, _STOPPED, or -1 (not run) */
    int gpu, peer_gpu; /* the exporter's and the importer's GPU; -1 for null */
    double time_ms;    /* its wall time (0 for one that never started) */
} gpuipc_doc_scan_cell;

typedef struct gpuipc_doc_scan {
    int exit_status;             /* exit.status */
    double wall_s;               /* the run's wall time */
    gpuipc_doc_scan_cell *cells; /* the scenarios, in the document's order (malloc) */
    size_t n;
} gpuipc_doc_scan;

/* Reads the document text[0..len) into *out (zeroed first; the caller
 * frees it with gpuipc_doc_scan_free, also after a failure). Returns 0, or
 * -EBADMSG with err naming the byte and what is wrong there, or the member
 * missing, repeated or of the wrong type ("scenario 3: time_ms: ..."), or
 * -ENOMEM. */
int gpuipc_doc_scan_read(const char *text, size_t len, gpuipc_doc_scan *out, gpuipc_err *err);

/* Frees what gpuipc_doc_scan_read allocated; *s is empty afterwards. */
void gpuipc_doc_scan_free(gpuipc_doc_scan *s);

#endif
