/* SPDX-License-Identifier: Apache-2.0 */
/* progress.h: a live progress line for long work, on a terminal only.
 *
 * Work that may run for more than a couple of seconds (--fault-matrix's
 * cases, --bench's measurements, thousands of --chunks) says how far it has
 * got on standard error, as one line rewritten in place:
 *
 *   fault matrix over vmm: 37 of 126 cases (29%), 12.3 s, about 30 s left
 *
 * It appears only once the work has run for GPUIPC_PROGRESS_AFTER_NS, only
 * if standard error is a terminal, and never with -q or --brief (main
 * decides with gpuipc_progress_enable). A log line written meanwhile clears
 * it first (log.c), so that the two never share a line; the end of the work
 * clears it for good. One piece of work at a time per process, and only
 * the producer's process draws it (the consumer turns it off). */
#ifndef GPUIPC_PROGRESS_H
#define GPUIPC_PROGRESS_H

#include <stdint.h>

#define GPUIPC_PROGRESS_AFTER_NS 2000000000ull  /* shown after 2 s of work */
#define GPUIPC_PROGRESS_EVERY_NS 200000000ull   /* redrawn at most 5 times a second */

/* Allows the line at all (1) or not (0): main passes whether the run is
 * neither -q nor --brief; the line also needs standard error to be a
 * terminal, which is checked here. Off until called. */
void gpuipc_progress_enable(int allowed);

/* Starts a piece of work of total units (what names it, units its unit:
 * "cases", "chunks"); what and units must live until gpuipc_progress_end.
 * A piece still under way is ended first. */
void gpuipc_progress_begin(const char *what, const char *units, uint64_t total);

/* done of total units are done. */
void gpuipc_progress_update(uint64_t done);

/* Ends the piece of work and clears its line, if one was shown. */
void gpuipc_progress_end(void);

/* Clears the line, if one is shown, before other output (log.c calls it);
 * the next update draws it again. */
void gpuipc_progress_clear(void);

/* Writes the line for done of total units after elapsed_ns into buf:
 * "<what>: <done> of <total> <units> (<pct>%), <s> s[, about <s> s left]".
 * Exposed for the tests. */
void gpuipc_progress_format(char *buf, unsigned long len, const char *what, const char *units,
                            uint64_t done, uint64_t total, uint64_t elapsed_ns);

#endif
