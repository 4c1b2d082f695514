/* SPDX-License-Identifier: Apache-2.0 */
/* units.h: parsing and printing of byte sizes, durations and device UUIDs. */
#ifndef GPUIPC_UNITS_H
#define GPUIPC_UNITS_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* The largest size any scenario or message may name: 16 TiB, beyond every
 * GPU's memory, so that a larger value is a typo or a corrupt message. */
#define GPUIPC_SIZE_MAX (1ull << 44)

/* Parses a size: a decimal number with an optional fraction and an optional
 * binary suffix K, M, G, T (also KiB, MiB, GiB, TiB) or B, such as "64M",
 * "2G", "1.5GiB", "4096". The result must be a whole number of bytes between
 * 1 and GPUIPC_SIZE_MAX. Returns 0, or -EINVAL / -ERANGE with the reason. */
int gpuipc_units_parse_size(const char *text, uint64_t *bytes, gpuipc_err *err);

/* Parses a duration in seconds: "30", "2.5", "2.5s" or "500ms", between 1 ms
 * and 24 h. Returns 0, or -EINVAL / -ERANGE with the reason. */
int gpuipc_units_parse_duration(const char *text, uint64_t *ns, gpuipc_err *err);

/* Writes a size such as "64 MiB", "1.50 GiB" or "4096 B" into buf and
 * returns buf. Exact multiples print without decimals. */
char *gpuipc_units_format_size(uint64_t bytes, char *buf, size_t len);

/* GB/s (10^9 bytes a second) for bytes moved in ns nanoseconds; 0 when ns is
 * 0 (not timed). */
double gpuipc_units_gbps(uint64_t bytes, uint64_t ns);

/* Writes a 16-byte device UUID in nvidia-smi's form,
 * "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", into buf (at least 41 bytes)
 * and returns buf. */
char *gpuipc_units_format_uuid(const uint8_t uuid[16], char *buf, size_t len);

/* Finds the kernel module's version ("580.159.04") in the text of
 * /proc/driver/nvidia/version (its "NVRM version: ... Kernel Module ...
 * 580.159.04 ..." line) and writes it into buf. Returns 0, or -ENOENT if the
 * text holds none; buf is then "". */
int gpuipc_units_nvrm_version(const char *text, char *buf, size_t len);

#endif
