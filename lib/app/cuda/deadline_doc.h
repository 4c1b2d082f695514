/* SPDX-License-Identifier: Apache-2.0 */
/* deadline_doc.h: the --json document at the deadline (run/deadline.h's
 * gpuipc_deadline_doc), prepared at the start, where malloc, stdio and the
 * driver may be used: what the program gathers of the machine, the
 * document as known then, the writer's buffer. The watchdog finishes it
 * (run/deadline.c). Only deadline.c and deadline_doc.c include it. */
#ifndef GPUIPC_APP_CUDA_DEADLINE_DOC_H
#define GPUIPC_APP_CUDA_DEADLINE_DOC_H

#include "app/cuda/producer_run.h"
#include "run/deadline.h"

/* The producer's document (run) or a --connect consumer's (run NULL, o its
 * options), as known now; uuids (GPUIPC_DOC_GPUS_MAX of them, "" where
 * unknown) fill the UUIDs the machine lacks. Returns it, or NULL (out of
 * memory). */
gpuipc_deadline_doc *gpuipc_deadline_doc_make(const gpuipc_options *o,
                                              const gpuipc_producer_run *run,
                                              const char (*uuids)[GPUIPC_OUTCOME_UUID_LEN]);
void gpuipc_deadline_doc_free(gpuipc_deadline_doc *dd);

#endif
