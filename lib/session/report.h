/* SPDX-License-Identifier: Apache-2.0 */
/* report.h: the summary printed after a run, and the exit code it implies. */
#ifndef GPUIPC_REPORT_H
#define GPUIPC_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "session/producer.h"

/* The exit code for results[0..n) and the consumer's own verdict
 * (consumer_ok: it exited 0): GPUIPC_FAIL if any scenario failed or the
 * consumer did not exit 0; otherwise GPUIPC_PASS if at least one scenario
 * passed; otherwise GPUIPC_SKIP (nothing could run). Results with status -1
 * (not run) count for nothing. */
int gpuipc_report_exit_code(const gpuipc_result *results, size_t n, int consumer_ok);

/* How many of results[0..n) passed, failed and were skipped (status -1, not
 * run, counts for nothing). */
typedef struct gpuipc_counts {
    unsigned passed, failed, skipped;
    unsigned stopped; /* ended by a stop signal before a verdict */
} gpuipc_counts;

gpuipc_counts gpuipc_report_count(const gpuipc_result *results, size_t n);

/* r's name where it must stand alone: "vmm on GPU 1" for a scenario of a
 * run over several GPUs (under its GPU's heading in the summary it is
 * "vmm"), else its name. Into buf; returns buf. */
const char *gpuipc_report_name(const gpuipc_result *r, char *buf, size_t len);

/* Writes the summary to fd: a heading (where), one line per scenario with
 * its result, size, both directions' checks and time (the first column as
 * wide as the longest name), each GPU's rows under its heading where the
 * results have groups, an indented reason under every FAIL and SKIP,
 * except that a reason shared by two or more scenarios is written once,
 * below the table, after the scenarios it stopped; then the lines in notes
 * (NULL-terminated, may be NULL), the consumer line, and last the overall
 * result with its counts and the wall time. */
void gpuipc_report_summary(int fd, const char *where, const gpuipc_result *results, size_t n,
                           const char *const *notes, const char *consumer, int exit_code,
                           uint64_t wall_ns);

#endif
