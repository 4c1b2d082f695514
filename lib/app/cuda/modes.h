/* SPDX-License-Identifier: Apache-2.0 */
/* modes.h: the program's modes, one file each: the forked one-shot run
 * (oneshot.c), --serve (serve.c), --connect (connect.c), --ranks (ranks.c),
 * --list (list.c), --fault-matrix (fault_matrix.c). */
#ifndef GPUIPC_APP_CUDA_MODES_H
#define GPUIPC_APP_CUDA_MODES_H

#include <stdint.h>

#include "app/cuda/registry.h"
#include "app/options.h"
#include "session/inject.h"

/* The forked one-shot run (and --repeat, --pairs, --bench, --destructive). */
int gpuipc_app_oneshot(const gpuipc_options *o, const gpuipc_app_selection *s,
                       const gpuipc_inject *inject, uint64_t t0);

/* --serve PATH: the producer, for one consumer that connects there. */
int gpuipc_app_serve(const gpuipc_options *o, const gpuipc_app_selection *s,
                     const gpuipc_inject *inject, uint64_t t0);

/* --connect PATH: the consumer of the producer that serves there. */
int gpuipc_app_connect(const gpuipc_options *o, const gpuipc_inject *inject, uint64_t t0);

/* --ranks: one rank of a job a PMIx launcher started (ranks.c). */
int gpuipc_app_ranks(const gpuipc_options *o, const gpuipc_app_selection *s,
                     const gpuipc_inject *inject, uint64_t t0);

/* --list [--json [FILE]]: what this machine can do. */
int gpuipc_app_list(const gpuipc_options *o, const gpuipc_inject *inject, uint64_t t0);

/* --fault-matrix: every step x action as --serve/--connect pairs. */
int gpuipc_app_fault_matrix(const gpuipc_options *o, const gpuipc_app_selection *s);

#endif
