/* SPDX-License-Identifier: Apache-2.0 */
/* usage.h: the --help text. */
#ifndef GPUIPC_APP_USAGE_H
#define GPUIPC_APP_USAGE_H

#include <stddef.h>
#include <stdio.h>

#include "session/mech.h"

/* Writes the help text to out, listing the n mechanisms in mechs. */
void gpuipc_app_usage(FILE *out, const gpuipc_mech *const *mechs, size_t n);

#endif
