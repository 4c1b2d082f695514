/* SPDX-License-Identifier: Apache-2.0 */
/* doc_data.h: what only the program knows, gathered for the result files'
 * writers (run/doc.h): its version and the options they print, and the
 * driver and the GPUs this process sees. */
#ifndef GPUIPC_DOC_DATA_H
#define GPUIPC_DOC_DATA_H

#include <stddef.h>

#include "app/options.h"
#include "run/doc.h"

/* Fills p from o, its command line included (o must live as long as p is
 * read: p points into it). Returns p. */
const gpuipc_doc_program *gpuipc_doc_program_of(const gpuipc_options *o,
                                                gpuipc_doc_program *p);

/* What p's result files print of the machine, asked now: the driver's
 * version, every GPU the driver lists (only for a --json document), and
 * the UUIDs of the GPUs results[0..n) name; for gpuipc_doc_machine_free.
 * NULL where memory ran out (the files then say no driver is known). */
gpuipc_doc_machine *gpuipc_doc_machine_gather(const gpuipc_doc_program *p,
                                              const gpuipc_result *results, size_t n);
void gpuipc_doc_machine_free(gpuipc_doc_machine *m);

/* The driver's version in words into buf, where it is loaded; else NULL. */
const char *gpuipc_doc_driver(char *buf, size_t len);

/* The run's result files from d (run/outputs.h), with the machine gathered
 * for them. Returns the exit status. */
int gpuipc_doc_finish(gpuipc_doc *d, int exit_code);

#endif
