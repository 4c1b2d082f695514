/* SPDX-License-Identifier: Apache-2.0 */
/* check_shim.h: what the program changes of Check's behaviour (its
 * temporary file, its signal handlers): see check_shim.c. */
#ifndef GPUIPC_CHECK_SHIM_H
#define GPUIPC_CHECK_SHIM_H

/* On (1) while the program runs its scenarios through srunner_run_all:
 * Check's SIGINT and SIGTERM handlers, which would SIGKILL the process
 * group, are then not installed. Off (0) afterwards. */
void gpuipc_check_shield(int on);

#endif
