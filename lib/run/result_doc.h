/* SPDX-License-Identifier: Apache-2.0 */
/* result_doc.h: --json FILE for every mode (the one-shot run, --repeat,
 * --pairs, --serve, --connect, --list, --bench, --fault-matrix): one
 * document per process, in the schema of docs/result.schema.json
 * (schema_version 3), written at the end of every run, a failed or
 * interrupted one included. The writer takes only data (run/doc.h); its
 * state (the checked file, the standard output set aside) is the
 * process's, set up before the run. */
#ifndef GPUIPC_RESULT_DOC_H
#define GPUIPC_RESULT_DOC_H

#include <stddef.h>
#include <stdint.h>

#include "core/json.h"
#include "run/doc.h"

#define GPUIPC_RESULT_SCHEMA_VERSION 3

/* The room for the environment's effects (core/facts.h), gathered before
 * rendering. */
#define GPUIPC_DOC_EFFECTS_LEN 1024

/* The markers of a deadline template, each standing for one JSON value. */
#define GPUIPC_DOC_MARK_EXIT "@@EXIT@@"
#define GPUIPC_DOC_MARK_RESULT "@@RESULT@@"
#define GPUIPC_DOC_MARK_WALL "@@WALL@@"
#define GPUIPC_DOC_MARK_SCENARIOS "@@SCENARIOS@@"
#define GPUIPC_DOC_MARK_COUNTS "@@COUNTS@@"
#define GPUIPC_DOC_MARK_CONSUMER "@@CONSUMER@@"
#define GPUIPC_DOC_MARK_GPUS "@@GPUS@@"
#define GPUIPC_DOC_MARK_END "@@END@@"

/* The document d as the watchdog writes it at the run's deadline, rendered
 * ahead, while malloc and stdio may still be used: every member as d has it,
 * but exit, result, wall_s, scenarios, counts and consumer, which are the
 * markers above for the watchdog to replace (memory and write(2) only).
 * Returns the text (the caller frees it), or NULL. */
char *gpuipc_doc_template(const gpuipc_doc *d);

/* The GPUs results[0..n) ran on (as exporter or importer; not-run ones
 * left out), in order of first use, into gpus (room for cap). Returns the
 * count. Async-signal-safe. */
size_t gpuipc_doc_gpus_of(const gpuipc_result *results, size_t n, int *gpus, size_t cap);

/* Where a document for "-" goes: the standard output main set aside, or 1. */
int gpuipc_doc_stdout_fd(void);

/* What a mode adds to its document: fn writes member key (an object or an
 * array) into j from arg, which must live until the document is written.
 * --list, --bench and --fault-matrix register theirs; the one-shot and
 * two-terminal runs need none. */
typedef void (*gpuipc_doc_payload_fn)(gpuipc_json *j, const char *key, const void *arg);
void gpuipc_doc_set_payload(const char *key, gpuipc_doc_payload_fn fn, const void *arg);

/* Writes d to d->o->json_path ("-": the standard output main set aside
 * with gpuipc_doc_take_stdout), through the file checked before the run
 * (core/outfile.h). Returns 0, or -1 with why. */
int gpuipc_doc_write(const gpuipc_doc *d, gpuipc_err *why);

/* Checks, before the run, that the document may be written at path
 * (core/outfile.h: absent or a regular file, never followed; "-" is always
 * fine), and keeps its directory open for the write. Returns 0, or a
 * negative errno with err naming --json, the path and the reason. */
int gpuipc_doc_check_path(const char *path, gpuipc_err *err);

/* In a forked consumer, which writes no file of the producer's: lets go of
 * the directory held for --json. */
void gpuipc_doc_drop_file(void);

/* The checked file, for the watchdog's document, or NULL (none, or "-"). */
struct gpuipc_outfile *gpuipc_doc_outfile(void);

/* Whether gpuipc_doc_write ran (main writes a short document for a run
 * that ended before its mode wrote one). */
int gpuipc_doc_written(void);

/* --json -: keeps the real standard output for the document and sends what
 * the run prints there to standard error instead. Returns 0 or -1 (said). */
int gpuipc_doc_take_stdout(void);

#endif
