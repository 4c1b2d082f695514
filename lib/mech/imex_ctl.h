/* SPDX-License-Identifier: Apache-2.0 */
/* imex_ctl.h: what the IMEX daemon's own control tool, nvidia-imex-ctl,
 * says of this node's daemon (-q) and of the whole IMEX domain (-N -j),
 * asked read-only, by absolute path, under a deadline. */
#ifndef GPUIPC_IMEX_CTL_H
#define GPUIPC_IMEX_CTL_H

#include <stddef.h>

#include "core/err.h"
#include "core/imex_facts.h"

#define GPUIPC_IMEX_CTL "/usr/bin/nvidia-imex-ctl"
/* The most either command may print on its standard output; more is an
 * error (the answer is then not known), never a bigger buffer. */
#define GPUIPC_IMEX_CTL_OUTPUT_MAX (256u * 1024u)


/* The tool to ask: GPUIPC_IMEX_CTL, or the path the test hook
 * GPUIPC_TEST_IMEX_CTL names (docs/testing.md). The string is static or the
 * environment's; the caller does not free it. */
const char *gpuipc_imex_ctl_path(void);

/* Runs `tool -q` and `tool -N -j` (tool an absolute path; NULL means
 * gpuipc_imex_ctl_path(), that is GPUIPC_IMEX_CTL unless a test names
 * another), each within timeout_ms, in a process group of its own that is
 * killed whole at the deadline, and fills d. A tool that is not there gives
 * tool 0 and no error; one that is not a regular executable file gives
 * tool 0 and the reason in d->error. Returns 0 (d says what is known), or a
 * negative errno with why only for this process's own failures (out of FDs,
 * memory, a pipe or the spawn itself) or a tool path that is not absolute
 * (-EINVAL). */
int gpuipc_imex_daemon_ask(const char *tool, unsigned timeout_ms, gpuipc_imex_daemon *d,
                           gpuipc_err *why);

/* Whether d's node list names this address (compared exactly) or host name
 * (compared without case, with either the node's host name or its
 * address); addr and host may be NULL or "". Returns 1 if it is listed (its
 * status in *status, which points into d, if status is not NULL), 0 if d
 * lists nodes but not this one, -1 if d holds no list. */
int gpuipc_imex_daemon_lists(const gpuipc_imex_daemon *d, const char *addr, const char *host,
                             const char **status);

/* What d says, in words, into buf (len bytes, cut to fit): "not installed
 * (/usr/bin/nvidia-imex-ctl)", or "READY; its domain lists 2 nodes:
 * 10.0.0.1 (node1) READY, 10.0.0.2 UNAVAILABLE", or "not READY (-q says
 * \"WAITING_FOR_PEERS\"); ...", or what kept an answer away. */
void gpuipc_imex_daemon_text(const gpuipc_imex_daemon *d, char *buf, size_t len);

/* What d says of itself and of the node of rank (its address addr, its host
 * name host), as one clause of a failure's cause, into buf (len bytes): not
 * READY, no state said, the node not listed (naming what was looked for),
 * listed but not READY there, or all READY; short, for a cause's 400
 * characters. */
void gpuipc_imex_daemon_of_peer(const gpuipc_imex_daemon *d, const char *addr, const char *host,
                                unsigned rank, char *buf, size_t len);

#endif
