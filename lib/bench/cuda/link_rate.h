/* SPDX-License-Identifier: Apache-2.0 */
/* link_rate.h: --pairs' link figures in the consumer (session/link.h):
 * where the driver puts the imported memory, then timed batches of the
 * fill and verify kernels over it and over a buffer of this GPU's own. */
#ifndef GPUIPC_LINK_RATE_H
#define GPUIPC_LINK_RATE_H

#include <stdint.h>

#include "core/err.h"
#include "session/env.h"
#include "session/link.h"
#include "session/mech.h"
#include "session/scenario.h"

/* env->link for a consumer with CUDA (see env.h). view is the imported
 * device memory of scenario sc on sc->env->gpu, holding the pattern of seed
 * that once describes (one pass: its words and digest); sc->home_uuid names
 * the producer's GPU. It asks cuPointerGetAttribute where the memory lies
 * and refuses memory not on the producer's GPU; fills a VMM buffer of
 * view->size on this GPU once with the same pattern; then times, after one
 * untimed pass each, GPUIPC_LINK_BATCHES batches of gpuipc_link_passes()
 * back-to-back launches between two CUDA events on one stream: the verify
 * kernel over view, the fill kernel over view (write set; it writes the
 * pattern view already holds) and the verify kernel over the local buffer.
 * Every pass and batch is held to its sums (gpuipc_link_check_sums) before
 * it counts. Fills f as far as it got. Every allocation and event is
 * released on every path, after the context is synchronized. Returns 0 or
 * a negative errno, err naming the call or the batch that failed. */
int gpuipc_link_rate_run(gpuipc_scenario *sc, const gpuipc_view *view, uint64_t seed,
                         const gpuipc_written *once, int write, gpuipc_link_figures *f,
                         gpuipc_err *err);

#endif
