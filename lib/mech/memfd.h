/* SPDX-License-Identifier: Apache-2.0 */
/* memfd.h: the steps of host shared memory that memfd.c, memfd_chunks.c and
 * memfd_pidfd.c share. */
#ifndef GPUIPC_MEMFD_H
#define GPUIPC_MEMFD_H

#include <stdint.h>

#include "session/scenario.h"
#include "session/mech.h"
#include "core/err.h"

/* Says whether memfd_create works here. Returns 0 or -ENOTSUP with why. */
int gpuipc_memfd_probe(gpuipc_scenario *sc, gpuipc_err *why);

/* Creates a close-on-exec memfd of len bytes, every page allocated, sealed
 * against shrinking, growing and further sealing. Returns the FD or a
 * negative errno. */
int gpuipc_memfd_create(uint64_t len, gpuipc_err *err);

/* Checks that a received fd is a memfd of at least len bytes that can never
 * shrink under a mapping. Returns 0 or -EPROTO/-errno with the reason. */
int gpuipc_memfd_check(int fd, uint64_t len, gpuipc_err *err);

/* The producer's side of memfd: a sealed memfd of at least size bytes,
 * mapped; its FD stays open until gpuipc_memfd_release. */
int gpuipc_memfd_alloc(gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err);

/* The producer's memfd of buf, or -1. */
int gpuipc_memfd_fd(const gpuipc_buf *buf);

/* The consumer's side: checks that fd is a memfd of offer->size bytes,
 * sealed against shrinking, and maps it (fd itself is not kept). Returns 0
 * or a negative errno with err. */
int gpuipc_memfd_map(const gpuipc_msg_offer *offer, int fd, gpuipc_buf *buf, gpuipc_err *err);

/* Both sides: unmaps, and closes the producer's memfd. */
int gpuipc_memfd_release(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err);

/* The mechanisms themselves (memfd.c, memfd_chunks.c, memfd_pidfd.c). */
extern const gpuipc_mech gpuipc_mech_memfd;
extern const gpuipc_mech gpuipc_mech_memfd_chunks;
extern const gpuipc_mech gpuipc_mech_memfd_pidfd;

#endif
