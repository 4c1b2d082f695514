/* SPDX-License-Identifier: Apache-2.0 */
/* runinfo.h: who and where a run is, for its result files: the host name,
 * the boot id, the kernel, and when the run started (wall clock), gathered
 * once at the start; and UTC times written without stdio or malloc, so that
 * a watchdog may write them while another thread holds those locks. */
#ifndef GPUIPC_RUNINFO_H
#define GPUIPC_RUNINFO_H

#include <stdint.h>

#include "core/watch.h"

typedef struct gpuipc_runinfo {
    char hostname[256];       /* uname's node name, "" where unknown */
    char boot_id[40];         /* /proc/sys/kernel/random/boot_id, "" where unknown */
    char kernel[128];         /* uname's release, "" where unknown */
    uint64_t start_real_ns;   /* the run's start, in ns since the Unix epoch (UTC) */
    uint64_t start_mono_ns;   /* the same moment on the monotonic clock (gpuipc_clock_ns) */
} gpuipc_runinfo;

/* Gathers the run's identity once, t0 being the monotonic time main took at
 * its start (the wall clock's start is reckoned back from now). Later calls
 * change nothing. */
void gpuipc_runinfo_gather(uint64_t t0);

/* What gpuipc_runinfo_gather found (all empty, start 0, before it ran). */
const gpuipc_runinfo *gpuipc_runinfo_get(void);

/* The wall clock now, in ns since the Unix epoch. Async-signal-safe. */
uint64_t gpuipc_runinfo_now_ns(void);

/* real_ns (ns since the Unix epoch) as UTC in ISO 8601, to the millisecond
 * with millis ("2026-11-23T10:04:05.123Z"), else to the second without a
 * zone ("2026-11-23T10:04:05", as JUnit's timestamp attribute has it).
 * Async-signal-safe (no gmtime: the arithmetic is done here). */
void gpuipc_sbuf_utc(gpuipc_sbuf *b, uint64_t real_ns, int millis);

#endif
