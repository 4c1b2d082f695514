/* SPDX-License-Identifier: Apache-2.0 */
/* summary.h: the producer's outcome said in words, from its cells as data
 * (run/cellset.h): the one line of exit 77, and --brief's notes. */
#ifndef GPUIPC_RUN_SUMMARY_H
#define GPUIPC_RUN_SUMMARY_H

#include "core/err.h"
#include "run/cellset.h"

/* The one-line reason for exit 77 (or, where the FD check at exit turned
 * it into exit_code 1, that and the reason): the shared reason where the
 * driver is missing (cuda 1, cuda_why), one reason and cause said once
 * where every cell has them, else each cell's. */
void gpuipc_summary_skip_line(const gpuipc_cellset *cs, int cuda, const gpuipc_err *cuda_why,
                              int exit_code);

/* --brief's notes (run/brief.h), from the cells as data: the first
 * failure, as "<side> <scenario> <step>: <reason>", else why no session
 * ran (lost, NULL where one did), else, for a run that failed with no
 * failed cell, its last check (last, "" for none) or how the consumer
 * ended; and the first cause, the failure's where it has one, else the
 * first that any cell has. */
void gpuipc_summary_brief_notes(const gpuipc_cellset *cs, int code, const char *consumer,
                                const char *lost, const char *last);

#endif
