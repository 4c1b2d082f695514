/* SPDX-License-Identifier: Apache-2.0 */
/* outputs.h: the run's result files together (--json, --junit, --prom). */
#ifndef GPUIPC_OUTPUTS_H
#define GPUIPC_OUTPUTS_H

#include "run/doc.h"

/* Whether the run writes a document or a file made from its data (--json,
 * --prom, --junit). */
int gpuipc_outputs_wanted(const gpuipc_doc_program *o);

/* Writes d (--json) and the files made from its data (d->machine: what the
 * program gathered of the driver and the GPUs, or NULL) (--junit, --prom, in
 * that order) and returns the exit status: exit_code, or GPUIPC_FAIL where
 * the run passed or skipped but one of them could not be written (a last
 * result: line says so, and those already written are written again with
 * the failure, so that none says a pass the exit status does not); otherwise
 * a failure to write is said on standard error and exit_code stands. */
int gpuipc_outputs_finish(const gpuipc_doc *d, int exit_code);

/* In a forked consumer, which writes no file of the producer's: lets go of
 * the directories held for --json, --prom and --junit. */
void gpuipc_outputs_drop(void);

#endif
