/* memfd.h: the steps of host shared memory that mech_memfd.c and
 * mech_memfd_chunks.c share. */
#ifndef GPUIPC_MEMFD_H
#define GPUIPC_MEMFD_H

#include <stdint.h>

#include "session/env.h"
#include "session/mech.h"
#include "core/err.h"

/* Says whether memfd_create works here. Returns 0 or -ENOTSUP with why. */
int gpuipc_memfd_probe(gpuipc_env *env, gpuipc_err *why);

/* Creates a close-on-exec memfd of len bytes, every page allocated, sealed
 * against shrinking, growing and further sealing. Returns the FD or a
 * negative errno. */
int gpuipc_memfd_create(uint64_t len, gpuipc_err *err);

/* Checks that a received fd is a memfd of at least len bytes that can never
 * shrink under a mapping. Returns 0 or -EPROTO/-errno with the reason. */
int gpuipc_memfd_check(int fd, uint64_t len, gpuipc_err *err);

/* The mechanisms themselves (memfd.c, memfd_chunks.c). */
extern const gpuipc_mech gpuipc_mech_memfd;
extern const gpuipc_mech gpuipc_mech_memfd_chunks;

#endif
