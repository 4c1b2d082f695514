/* SPDX-License-Identifier: Apache-2.0 */
/* stop.h: the stop channel: one datagram socket pair, made before the fork and
 * watched by every process of the run, so that a stop signal that reaches any
 * of them wakes every wait in all of them (a self-pipe per process would lose
 * the wake-up across processes). */
#ifndef GPUIPC_STOP_H
#define GPUIPC_STOP_H

#include "core/err.h"

/* Opens the stop channel: a datagram socket pair that the processes the
 * program forks afterwards share, so that a stop raised in any of them
 * wakes every wait in all of them at once, whichever process the signal
 * reached (no signal lands between a flag test and a poll unseen). Once per
 * program, before any fork. Returns 0 or a negative errno with err. */
int gpuipc_stop_open(gpuipc_err *err);

/* Async-signal-safe, for a stop signal's handler: records sig (SIGINT,
 * SIGTERM, SIGHUP) as this process's stop signal and tells every process
 * that shares the channel. Once a stop is raised, every wait of every wire
 * ends at once with -EINTR and "interrupted by SIGINT during <step>", and
 * the wire becomes unusable. */
void gpuipc_stop_raise(int sig);

/* The stop signal this process learned of, from its own record or the
 * channel (a stop raised in another process of the run); 0 if none. */
int gpuipc_stop_signal(void);

/* "STOPPED" once a stop was raised, else "FAIL": the word a step log line
 * about a broken-off step begins with. */
const char *gpuipc_stop_fail_word(void);

/* The channel's end for a poll set (readable once a stop was raised), or -1
 * where it was not opened. */
int gpuipc_stop_fd(void);

#endif
