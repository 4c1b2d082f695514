/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose.h: the cause of a failed or skipped scenario, and its fix, named
 * from facts both processes gathered about themselves (core/facts.h) and
 * exchanged at HELLO: which boundary between them broke which mechanism. */
#ifndef GPUIPC_DIAGNOSE_H
#define GPUIPC_DIAGNOSE_H

#include <stddef.h>

#include "core/cause.h"
#include "core/facts.h"
#include "wire/wire.h"

typedef struct gpuipc_diag_case {
    const char *mech;   /* the mechanism's name */
    int fetched_fd;     /* it takes the producer's FD with pidfd_getfd */
    /* What failed, as data (never the reason's text, which a rewording
     * would change): the side (enum gpuipc_role), and its status, whose
     * step, call, errno and CUresult the rules match. */
    int side;
    const gpuipc_status *failure;
    const gpuipc_facts *producer; /* NULL where not known */
    const gpuipc_facts *consumer; /* NULL where not known (no HELLO from it) */
    const char *producer_gpus;    /* "0=GPU-1d269889 1=GPU-..." or NULL */
    int mig;            /* the producer's GPU in MIG mode: 1; 0 not; -1 not known */
    int cc;             /* confidential computing on: 1; 0 off; -1 not known */
    double min_gbps;    /* --min-gbps, or 0 */
    const char *fabric; /* NVML's GPU fabric state of the producer's GPU, or NULL */
    /* A scenario between two GPUs: the link between them as described for
     * the summary (NVML, the driver, the PCIe path), or NULL for one GPU;
     * and whether the driver claims peer access between them (1 yes, 0 no,
     * -1 not known). */
    const char *link;
    int peer_claimed;
} gpuipc_diag_case;

/* The call a failed --min-gbps judgement names in a status: a link slower
 * than asked for. */
#define GPUIPC_DIAG_MIN_GBPS "--min-gbps"

/* Less free space than this in /dev/shm is named as the cause of a failed
 * interprocess event (64 KiB failed on an H100, docs/troubleshooting.md). */
#define GPUIPC_DIAG_SHM_MIN (1u << 20)

/* The CUresult values the rules match (cuda.h's; this layer has no driver
 * header, and tests/cuda_check.c holds these to the toolkit's). */
#define GPUIPC_DIAG_CU_NO_DEVICE 100
#define GPUIPC_DIAG_CU_INVALID_DEVICE 101
#define GPUIPC_DIAG_CU_INVALID_VALUE 1
#define GPUIPC_DIAG_CU_INVALID_CONTEXT 201
#define GPUIPC_DIAG_CU_MAP_FAILED 205
#define GPUIPC_DIAG_CU_OPERATING_SYSTEM 304
#define GPUIPC_DIAG_CU_INVALID_HANDLE 400
#define GPUIPC_DIAG_CU_NOT_PERMITTED 800
#define GPUIPC_DIAG_CU_NOT_SUPPORTED 801
#define GPUIPC_DIAG_CU_SYSTEM_NOT_READY 802

/* Fills out with the cause and the fix of the first rule that explains c
 * and returns 1; returns 0, with out empty, where the facts explain nothing
 * more than the reason already says. */
int gpuipc_diagnose(const gpuipc_diag_case *c, gpuipc_cause *out);

#endif
