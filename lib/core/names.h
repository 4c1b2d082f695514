/* SPDX-License-Identifier: Apache-2.0 */
/* names.h: the names of errno values and signals ("ENOENT", "SIGINT"), from
 * tables of the program's own: glibc's strerrorname_np and sigabbrev_np
 * appeared in 2.32, and the program runs on glibc 2.28 and later.
 * Async-signal-safe. */
#ifndef GPUIPC_NAMES_H
#define GPUIPC_NAMES_H

/* "ENOENT" for ENOENT, or NULL for a value without a name here. */
const char *gpuipc_errno_name(int e);

/* "INT" for SIGINT (as sigabbrev_np), or NULL for a signal without one. */
const char *gpuipc_sig_abbrev(int sig);

#endif
