/* chunks.h: memory made of many equal allocations, mapped back to back into
 * one address range, the way PyTorch's expandable segments grow: what the
 * chunked mechanisms (vmm-chunks, memfd-chunks) share, none of it GPU code.
 *
 * The offer describes the chunks in its blob (u32 count, u32 reserved 0,
 * u64 chunk size, little-endian) and hands over one FD per chunk, in order:
 * FD number i is chunk i, mapped at offset i * chunk. The pattern runs over
 * the whole range, so a chunk mapped in the wrong place shows as bad words. */
#ifndef GPUIPC_CHUNKS_H
#define GPUIPC_CHUNKS_H

#include <stdint.h>

#include "core/err.h"
#include "wire/wire.h"

#define GPUIPC_DEFAULT_CHUNKS 8
#define GPUIPC_CHUNKS_MAX GPUIPC_WIRE_MAX_OFFER_FDS /* one FD per chunk */

typedef struct gpuipc_chunk_plan {
    unsigned count;  /* allocations */
    uint64_t chunk;  /* bytes each, a multiple of the granularity */
    uint64_t total;  /* count * chunk */
} gpuipc_chunk_plan;

/* Splits at least size bytes into count chunks of equal size, each a
 * multiple of gran (a power of two) and at least one granule: with many
 * chunks the total grows beyond size. Returns 0, or -EINVAL if count is 0
 * or above GPUIPC_WIRE_MAX_OFFER_FDS, or if the total would exceed
 * GPUIPC_SIZE_MAX (err says which). */
int gpuipc_chunks_plan(uint64_t size, unsigned count, uint64_t gran, gpuipc_chunk_plan *plan,
                       gpuipc_err *err);

/* Writes plan into the offer: size, granularity, blob and fds_total. */
void gpuipc_chunks_offer(const gpuipc_chunk_plan *plan, uint64_t gran, gpuipc_msg_offer *offer);

/* Reads the plan back from an offer and checks that it is whole: a count
 * equal to the FDs announced, a chunk size that is a non-zero multiple of
 * the granularity, and count * chunk equal to the offered size. Returns 0
 * or -EPROTO with what is wrong. */
int gpuipc_chunks_from_offer(const gpuipc_msg_offer *offer, gpuipc_chunk_plan *plan,
                             gpuipc_err *err);

/* The slot (position in the range) where chunk i goes: i itself, unless
 * swap is set (the chunk-order sabotage), which exchanges chunks 0 and 1. */
unsigned gpuipc_chunks_slot(unsigned i, unsigned count, int swap);

/* Makes room in this process for n more FDs (what they are: for messages)
 * before they are opened:
 * if fewer FD numbers than n (plus a small margin) are free below the soft
 * RLIMIT_NOFILE, the soft limit is raised, and the hard one too where this
 * process may (CAP_SYS_RESOURCE). Only the side that sends FDs does this:
 * a receiver's limit is part of what a test proves. Writes what was changed,
 * if anything, into note (cap bytes; "" if nothing). Returns 0, or -EMFILE
 * with both numbers and the fix. */
int gpuipc_chunks_fd_room(unsigned n, const char *what, char *note, size_t cap,
                          gpuipc_err *err);

#endif
