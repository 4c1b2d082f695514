/* SPDX-License-Identifier: Apache-2.0 */
/* th_drive.h: driving one role inside the test process, without the
 * program: its environment, one producer scenario, a consumer that lies,
 * and raw frames sent on its socket as a broken peer would. */
#ifndef GPUIPC_TESTS_TH_DRIVE_H
#define GPUIPC_TESTS_TH_DRIVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "session/producer.h"

/* Runs scenario index of mech over size bytes as the producer, on no
 * device, with the consumer at the other end of w, into res. */
void th_scenario(gpuipc_env *env, gpuipc_wire *w, const gpuipc_mech *mech, uint64_t size,
                 unsigned index, gpuipc_result *res);

/* Sets env up for a role driven alone by a test: zeroed, the log at
 * --quiet into a memfd of its own (name; read it back with pread), waits
 * bounded by timeout_ns. */
void th_env(gpuipc_env *env, int role, const char *name, uint64_t timeout_ns);

/* In a child a test forked: a consumer that connects to the socket at path
 * and serves memfd, its wire rewriting every message it sends with fn and
 * arg (gpuipc_wire_set_tamper), its log a memfd named log_name, its waits
 * bounded by timeout_ns. Exits 0 after the session, 3 where it could not
 * connect; never returns. */
void th_lying_consumer(const char *path, gpuipc_wire_tamper_fn fn, void *arg,
                       const char *log_name, uint64_t timeout_ns) __attribute__((noreturn));

/* Sends len raw bytes and nfds FDs in one sendmsg(). Returns its result. */
ssize_t th_send_raw(int sock, const void *buf, size_t len, const int *fds, int nfds);

#endif
