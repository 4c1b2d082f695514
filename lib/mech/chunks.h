/* SPDX-License-Identifier: Apache-2.0 */
/* chunks.h: memory made of many equal allocations, mapped back to back into
 * one address range, the way PyTorch's expandable segments grow: the one
 * chunk engine of the chunked mechanisms (vmm-chunks, memfd-chunks), none of
 * it GPU code. A mechanism gives the engine a small table of operations on
 * its kind of memory (gpuipc_chunk_ops); the engine does the plan, the
 * bookkeeping of handles and slots, the FD batches, the chunk-order
 * sabotage and the release on every path.
 *
 * The offer describes the chunks in its blob (u32 count, u32 reserved 0,
 * u64 chunk size, little-endian) and hands over one FD per chunk, in order:
 * FD number i is chunk i, mapped at offset i * chunk. The pattern runs over
 * the whole range, so a chunk mapped in the wrong place shows as bad words. */
#ifndef GPUIPC_CHUNKS_H
#define GPUIPC_CHUNKS_H

#include <stdint.h>

#include "core/err.h"
#include "session/scenario.h"
#include "session/mech.h"
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

typedef struct gpuipc_chunks gpuipc_chunks;

/* What differs between kinds of chunked memory. Every operation returns 0
 * or a negative errno with err (import: 1 or 0, see below). A handle is
 * what names one allocation on this side: a memfd, or a VMM handle. */
typedef struct gpuipc_chunk_ops {
    const char *mech;      /* the mechanism's name, for log lines */
    size_t mem_size;       /* bytes of the operations' own state, at c->mem */
    /* If this side keeps one FD per chunk (its handles are FDs), what they
     * are: room is made for them and a batch at allocation. NULL: only the
     * batch being exported is held, and room is made per batch. */
    const char *held_fds;
    /* This side's allocation granularity (a power of two) into *gran. */
    int (*granularity)(gpuipc_scenario *sc, uint64_t *gran, gpuipc_err *err);
    /* Optional: refuses a plan that cannot fit, before any allocation. */
    int (*fits)(gpuipc_scenario *sc, const gpuipc_chunk_plan *plan, gpuipc_err *err);
    /* Reserves c->plan.total bytes of address space into c->base. */
    int (*reserve)(gpuipc_scenario *sc, gpuipc_chunks *c, gpuipc_err *err);
    /* Producer: creates chunk i (c->plan.chunk bytes) into c->h[i]. */
    int (*create)(gpuipc_chunks *c, unsigned i, gpuipc_err *err);
    /* Maps handle h over the chunk at slot of the range. */
    int (*map)(gpuipc_chunks *c, unsigned slot, uint64_t h, gpuipc_err *err);
    /* Optional: grants this side access to slots first .. first+n-1. */
    int (*grant)(gpuipc_chunks *c, unsigned first, unsigned n, gpuipc_err *err);
    /* Producer: a new FD for handle h, to send. Returns it or -errno. */
    int (*export_fd)(gpuipc_scenario *sc, gpuipc_chunks *c, uint64_t h, gpuipc_err *err);
    /* Consumer: turns received FD number i into c->h[i]. Returns 1 if that
     * is a handle of its own to release (the FD may be closed), 0 if the FD
     * itself is the handle (valid until the FDs are closed), or -errno. */
    int (*import_fd)(gpuipc_scenario *sc, gpuipc_chunks *c, unsigned i, int fd, gpuipc_err *err);
    /* Unmaps every mapped slot and frees the range (c->base is not 0),
     * going on past failures; returns the first. */
    int (*unmap)(gpuipc_chunks *c, gpuipc_err *err);
    /* Releases handle h. Returns 0 or the failure. */
    int (*drop)(uint64_t h, gpuipc_err *err);
    /* Sets buf->view (and the detail line) for the whole range; imported
     * says which side this is, ns (0: none) the time the allocation took. */
    void (*describe)(gpuipc_chunks *c, gpuipc_buf *buf, int imported, uint64_t ns);
    /* Optional: a step is over for the whole range (ALLOC, EXPORT or
     * IMPORT): for the operations' own log lines. */
    void (*done)(gpuipc_scenario *sc, gpuipc_chunks *c, unsigned step);
} gpuipc_chunk_ops;

/* One side's chunked memory: gpuipc_buf.priv of a chunked mechanism. */
struct gpuipc_chunks {
    const gpuipc_chunk_ops *ops;
    gpuipc_chunk_plan plan;
    uint64_t gran;
    uint64_t base;          /* the reserved range, plan.total bytes (0: none) */
    uint64_t *h;            /* producer: chunk i; consumer: FD number i */
    unsigned char *held;    /* h[i] is a handle to release */
    unsigned char *mapped;  /* slot i of the range is mapped */
    int swap;               /* the chunk-order sabotage is armed on this side */
    void *mem;              /* the operations' own state */
};

/* The address of slot i of the range. */
static inline uint64_t gpuipc_chunks_at(const gpuipc_chunks *c, unsigned slot)
{
    return c->base + (uint64_t)slot * c->plan.chunk;
}

/* The producer's side of a chunked mechanism: --chunks (or the default)
 * allocations of at least size bytes in all, created and mapped in order
 * into one range. Returns 0 with buf filled, or a negative errno with err
 * and nothing held. */
int gpuipc_chunks_alloc(gpuipc_scenario *sc, const gpuipc_chunk_ops *ops, uint64_t size,
                        gpuipc_buf *buf, gpuipc_err *err);

/* The offer of buf and its first batch of FDs (gpuipc_mech.export). */
int gpuipc_chunks_export(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                         unsigned *nfds, gpuipc_err *err);

/* The batch of FDs from FD number first (gpuipc_mech.export_more). */
int gpuipc_chunks_export_more(gpuipc_scenario *sc, gpuipc_buf *buf, unsigned first, int *fds,
                              unsigned max, unsigned *nfds, gpuipc_err *err);

/* The consumer's side: reads the plan from offer, checks that its chunks
 * suit this side's granularity, reserves the range and maps the first
 * batch. Returns 0 with buf filled, or a negative errno with err and
 * nothing held. */
int gpuipc_chunks_import(gpuipc_scenario *sc, const gpuipc_chunk_ops *ops,
                         const gpuipc_msg_offer *offer, const int *fds, unsigned nfds,
                         gpuipc_buf *buf, gpuipc_err *err);

/* Maps the batch of FDs from FD number first (gpuipc_mech.import_more). */
int gpuipc_chunks_import_more(gpuipc_scenario *sc, gpuipc_buf *buf, unsigned first, const int *fds,
                              unsigned nfds, gpuipc_err *err);

/* Unmaps and releases all of buf, going on past failures
 * (gpuipc_mech.release). Returns 0 or the first failure. */
int gpuipc_chunks_release(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err);

#endif
