/* SPDX-License-Identifier: Apache-2.0 */
/* registry.h: the mechanisms the program knows (registry.c), and the choice of
 * those a run runs. */
#ifndef GPUIPC_APP_CUDA_REGISTRY_H
#define GPUIPC_APP_CUDA_REGISTRY_H

#include <stddef.h>

#include "app/options.h"
#include "session/mech.h"

/* Every mechanism the program knows, in the order --list and --help show
 * them. Adding a mechanism is adding its file and one line there. */
extern const gpuipc_mech *const gpuipc_app_registry[];
extern const size_t gpuipc_app_nmech;
#define GPUIPC_APP_NMECH_MAX 32

/* What a run selects: the mechanisms to run (from --only, --pairs, the
 * defaults, --bench's baseline and --destructive) and those --require
 * names. */
typedef struct gpuipc_app_selection {
    const gpuipc_mech *sel[GPUIPC_APP_NMECH_MAX];
    size_t nsel;
    const gpuipc_mech *req[GPUIPC_APP_NMECH_MAX];
    size_t nreq;
} gpuipc_app_selection;

/* Chooses the mechanisms for o, after checking the registry's tables.
 * Returns 0, or GPUIPC_USAGE (or GPUIPC_FAIL for a registry that breaks a
 * rule of gpuipc_mech_check_registry) after saying why on stderr. */
int gpuipc_app_select(const gpuipc_options *o, gpuipc_app_selection *s);

/* The mechanism the others are measured against (its table's reference
 * field): --pairs runs it, --fault-matrix defaults to it. */
const gpuipc_mech *gpuipc_app_reference(void);

#endif
