/* SPDX-License-Identifier: Apache-2.0 */
/* kmsg.h: what the NVIDIA kernel driver logged about the run's GPUs while
 * the run went on, from the kernel log (/dev/kmsg): its Xid lines
 * ("NVRM: Xid (PCI:0000:1b:00): 79, pid=..., name=..., GPU has fallen off
 * the bus.") and its fabric errors (NV_ERR_OBJECT_NOT_FOUND from
 * fabric_vaspace.c after a cross-node cuMemSetAccess). Reading the log
 * needs CAP_SYSLOG or kernel.dmesg_restrict=0; where it cannot be read,
 * that is a fact reported, not a failure of the run. */
#ifndef GPUIPC_KMSG_H
#define GPUIPC_KMSG_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define GPUIPC_KMSG "/dev/kmsg"
#define GPUIPC_KMSG_MAX_LINES 8
/* The bounds of one call: it reads no more records than this, nor more
 * bytes, whatever the path gives. */
#define GPUIPC_KMSG_MAX_RECORDS 65536
#define GPUIPC_KMSG_MAX_BYTES (16u << 20)

typedef struct gpuipc_kmsg_found {
    int readable;      /* 1 the log could be read, 0 not (error says why) */
    int partial;       /* 1 a bound above ended the read before the log's end:
                        * later records were not seen */
    unsigned nlines;   /* lines kept (at most GPUIPC_KMSG_MAX_LINES) */
    unsigned nmatched; /* lines that matched, kept or not */
    char line[GPUIPC_KMSG_MAX_LINES][200]; /* each message, printable, with its time
                                            * "[+1.234 s]" relative to since_us */
    char error[160];
} gpuipc_kmsg_found;

/* Reads path (NULL: the file GPUIPC_TEST_KMSG names, a test-only hook, else
 * GPUIPC_KMSG) and keeps the kernel's records logged at or after since_us
 * (microseconds on the kernel's clock, gpuipc_kmsg_now_us) that are NVRM Xid lines of one of the GPUs
 * named by bus_ids (PCI addresses as "0000:1b:00.0" or CUDA's
 * "00000000:1B:00.0", matched on domain, bus and device, whatever their case
 * and width; n == 0 means any GPU), or NVRM lines naming
 * NV_ERR_OBJECT_NOT_FOUND or fabric. A regular file (a recorded log) is
 * read a record a line, continuation lines (" KEY=VALUE") skipped; a
 * character device a record a read; anything else (a FIFO, a directory) is
 * refused as not readable. Never blocks, and holds no FD on return.
 * Returns 0 with f filled (readable or not), -EINVAL where a bus id is not a
 * PCI address, or -ENOMEM; why names the failure. */
int gpuipc_kmsg_gpu_lines(const char *path, uint64_t since_us, const char *const *bus_ids,
                          size_t n, gpuipc_kmsg_found *f, gpuipc_err *why);

/* Now on the clock the kernel log's records are stamped with, as near as a
 * process can read it (CLOCK_MONOTONIC_RAW: not slewed by NTP), in
 * microseconds: the since_us of a run that starts now. */
uint64_t gpuipc_kmsg_now_us(void);

/* The since_us of a moment ago_ns before now (a run's start, measured on
 * any clock: the elapsed time is carried over, not the clock), 0 at the
 * earliest. */
uint64_t gpuipc_kmsg_since_us(uint64_t ago_ns);

#endif
