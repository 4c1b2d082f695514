/* SPDX-License-Identifier: Apache-2.0 */
/* report_files.h: --prom FILE and --junit FILE, the files fleet tools read
 * (run/prom.h, run/junit.h), for the modes that end with a verdict: the
 * one-shot run, --repeat, --pairs, --serve, --connect and --ranks (rank 0's,
 * app/cuda/ranks_files.c). Each path is
 * checked before the run as --json's is (core/outfile.h); at the start the
 * files are replaced by ones that say the run is under way and claim no
 * verdict, so that nothing after that (a failure, the deadline, SIGKILL, a
 * full disk) can leave an earlier run's pass in place; at the end, however
 * it ends, they say its verdict. */
#ifndef GPUIPC_REPORT_FILES_H
#define GPUIPC_REPORT_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "run/doc.h"
#include "run/outcome.h"

enum { GPUIPC_FILE_PROM, GPUIPC_FILE_JUNIT, GPUIPC_FILE_COUNT };

/* Checks, before the run, that --prom's and --junit's files may be written
 * (absent or a regular file, never followed). Returns 0, or a negative
 * errno with err naming the option, the path and the reason: a usage error
 * (exit 2, nothing touched), except -EMFILE or -ENFILE (no FD to look with:
 * the run fails, and every file given was made to claim nothing, as err
 * says). */
int gpuipc_files_check(const gpuipc_doc_program *o, gpuipc_err *err);

/* At the start, once every path passed its check: writes each file as a
 * run under way (no verdict). Where one cannot be written, an empty file
 * takes its place if it can (an empty textfile has no series, so no stale
 * pass either), and a line on standard error says so. */
void gpuipc_files_begin(const gpuipc_doc_program *o);

/* The same, the files naming role as the process's (--ranks: "rank 0"). */
void gpuipc_files_begin_as(const gpuipc_doc_program *o, const char *role);

/* Whether --prom or --junit was given. */
int gpuipc_files_wanted(const gpuipc_doc_program *o);

/* Writes file which (GPUIPC_FILE_PROM, _JUNIT; not given: nothing) from
 * d's data (the driver and the GPUs' UUIDs from d->machine, or the UUIDs
 * from d->uuids; the result line d->result, else the step log's last) with
 * exit status exit_code. Returns 0, or -1 with why naming the
 * option, the path, the step, the call and its errno. */
int gpuipc_files_write(const gpuipc_doc *d, int which, int exit_code, gpuipc_err *why);

/* Caches what the watchdog cannot ask for itself: the driver's version in
 * words (gpu/cudrv.h), once the driver is loaded (NULL: not yet; the first
 * one given stays); the run's thread calls it before the watchdog can
 * fire. */
void gpuipc_files_prepare(const char *driver);

/* The watchdog's write of both files at the deadline or a stop the run did
 * not end (no stdio, no malloc): results[0..n) as far as they got, with
 * labels (their names) and the GPUs' UUIDs by ordinal. Returns 0, or -1
 * where a file could not be written whole (it then says the run is under
 * way, or is as it was: never the pass of an earlier run it replaced). */
int gpuipc_files_at_deadline(const gpuipc_doc_program *o, const char *role,
                             const gpuipc_result *results,
                             const char (*labels)[GPUIPC_OUTCOME_LABEL_LEN],
                             size_t n, const char (*uuids)[GPUIPC_OUTCOME_UUID_LEN],
                             size_t nuuids, int exit_code, const char *result, uint64_t wall_ns);

/* A forked consumer, which writes none of the files: lets go of their
 * directories (an FD each it would otherwise hold for nothing). */
void gpuipc_files_drop(void);

#endif
