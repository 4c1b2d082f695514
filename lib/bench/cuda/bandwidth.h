/* SPDX-License-Identifier: Apache-2.0 */
/* bandwidth.h: --bench's bandwidth runs in the consumer: the fill and
 * verify kernels and a device-to-device copy, timed with CUDA events over
 * imported memory and over local memory of the same size and kind. */
#ifndef GPUIPC_BANDWIDTH_H
#define GPUIPC_BANDWIDTH_H

#include <stdint.h>

#include "session/env.h"
#include "core/err.h"
#include "session/laps.h"
#include "session/mech.h"
#include "session/scenario.h"

/* env->bandwidth for a consumer with CUDA (see env.h). view is a device view
 * of scenario sc on sc->env->gpu holding the pattern of seed. It allocates two local VMM
 * buffers of view->size on env->gpu (one for the kernels and as a copy
 * source, one as the copy destination), runs each operation once untimed,
 * then iters times, each timed alone between two events on the default
 * stream, and finally checks that every buffer holds the pattern. Every
 * allocation and event is released on every path. Returns 0 or a negative
 * errno, err naming the call. */
int gpuipc_bandwidth_run(gpuipc_scenario *sc, const gpuipc_view *view, uint64_t seed,
                         unsigned iters, uint64_t *const ns[GPUIPC_BW_COUNT], gpuipc_err *err);

#endif
