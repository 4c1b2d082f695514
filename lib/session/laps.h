/* SPDX-License-Identifier: Apache-2.0 */
/* laps.h: where a benchmarked scenario's time goes. The roles time whole
 * calls (alloc, export, import, release); a mechanism adds the steps that
 * only it can see inside them (reserve, map, set access, a pidfd_getfd) to
 * env->laps, which is NULL outside --bench, so that timing costs nothing
 * there. The consumer reports its laps to the producer in TIMES messages. */
#ifndef GPUIPC_LAPS_H
#define GPUIPC_LAPS_H

#include <stdint.h>

#include "core/clock.h"
#include "session/link.h"

/* The consumer's figures, in this order, in TIMES series GPUIPC_SERIES_LAPS.
 * Durations in ns unless marked absolute (CLOCK_MONOTONIC, which every
 * process on a host shares, so the producer may subtract its own stamps). */
enum gpuipc_lap {
    GPUIPC_LAP_OFFER_WAIT, /* absolute: began to wait for OFFER */
    GPUIPC_LAP_OFFER_RECV, /* absolute: OFFER received (recvmsg returned) */
    GPUIPC_LAP_MAPPED,     /* absolute: the last import call returned: mapped, readable */
    GPUIPC_LAP_IMPORT,     /* every import call together, the laps below included */
    GPUIPC_LAP_RESERVE,    /* cuMemAddressReserve */
    GPUIPC_LAP_MAP,        /* cuMemMap */
    GPUIPC_LAP_ACCESS,     /* cuMemSetAccess */
    GPUIPC_LAP_FETCH,      /* pidfd_getfd: the handle's transfer inside import */
    GPUIPC_LAP_TOUCH,      /* the first kernel over the imported memory (verify) */
    GPUIPC_LAP_RELEASE,    /* the consumer's release */
    GPUIPC_LAP_HWM,        /* bytes: the consumer's VmHWM at the end of the scenario */
    GPUIPC_LAP_COUNT
};

/* TIMES series. */
enum gpuipc_series {
    GPUIPC_SERIES_LAPS = 0,   /* GPUIPC_LAP_COUNT values */
    GPUIPC_SERIES_FDS_RECV,   /* absolute, two per FDS batch: began to wait, received */
    GPUIPC_SERIES_BW_FIRST,   /* GPUIPC_BW_COUNT series of --iters kernel times (ns) */
    GPUIPC_SERIES_LINK = GPUIPC_SERIES_BW_FIRST + 6, /* --pairs: GPUIPC_LINK_VALUES values,
                                                      * the link figures (session/link.h) */
    GPUIPC_SERIES_MAX
};

/* The bandwidth runs, each on the imported memory and on local memory. */
enum gpuipc_bw {
    GPUIPC_BW_FILL_IMPORTED,   /* the fill kernel: bytes written */
    GPUIPC_BW_VERIFY_IMPORTED, /* the verify kernel: bytes read */
    GPUIPC_BW_COPY_IMPORTED,   /* cuMemcpyDtoDAsync imported -> local: bytes copied */
    GPUIPC_BW_FILL_LOCAL,
    GPUIPC_BW_VERIFY_LOCAL,
    GPUIPC_BW_COPY_LOCAL,      /* local -> local */
    GPUIPC_BW_COUNT
};

/* Every series has a number the wire accepts. */
_Static_assert(GPUIPC_SERIES_MAX == GPUIPC_WIRE_SERIES_MAX, "the TIMES series and the wire's");

typedef struct gpuipc_laps {
    uint64_t ns[GPUIPC_LAP_COUNT];
} gpuipc_laps;

/* FDS batches of one offer at most: GPUIPC_WIRE_MAX_OFFER_FDS / 253, rounded up. */
#define GPUIPC_TIMING_BATCHES 260

/* --bench, producer: what it asks of one scenario (env->timing) and the raw
 * figures of both sides, from which the benchmark derives each stage. */
typedef struct gpuipc_timing {
    unsigned flags; /* GPUIPC_BEGIN_TIMES, GPUIPC_BEGIN_BANDWIDTH, GPUIPC_BEGIN_LINK */
    unsigned iters; /* bandwidth iterations */

    /* The producer's. */
    uint64_t alloc_ns;     /* alloc: create and map */
    uint64_t export_ns;    /* every export call */
    uint64_t release_ns;
    uint64_t export_start; /* absolute: the first export call began */
    uint64_t offer_sent;   /* absolute: OFFER's sendmsg began */
    uint64_t fds_sent[GPUIPC_TIMING_BATCHES]; /* absolute, each FDS batch */
    unsigned nfds_sent;

    /* The consumer's, from TIMES. */
    uint64_t laps[GPUIPC_LAP_COUNT];
    unsigned nlaps;
    uint64_t fds_recv[2 * GPUIPC_TIMING_BATCHES]; /* per batch: wait began, received */
    unsigned nfds_recv;                           /* values, two per batch */
    uint64_t *bw[GPUIPC_BW_COUNT]; /* iters ns each, the caller's arrays */
    unsigned nbw[GPUIPC_BW_COUNT];
    uint64_t link[GPUIPC_LINK_VALUES]; /* --pairs: the link figures, as sent */
    unsigned nlink;
} gpuipc_timing;

/* Adds the time since t0 to lap, if laps are being kept. */
static inline void gpuipc_laps_add(gpuipc_laps *l, int lap, uint64_t t0)
{
    if (l != NULL)
        l->ns[lap] += gpuipc_clock_ns() - t0;
}

#endif
