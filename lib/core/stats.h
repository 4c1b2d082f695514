/* SPDX-License-Identifier: Apache-2.0 */
/* stats.h: what a benchmark reports of its samples (median, minimum,
 * maximum, mean), and the units it reports them in. */
#ifndef GPUIPC_STATS_H
#define GPUIPC_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

typedef struct gpuipc_stats {
    size_t n;
    double median; /* the middle sample, or the mean of the middle two */
    double min;
    double max;
    double mean;
} gpuipc_stats;

/* Summarizes the n samples in v (left as they are). Returns 0, or -EINVAL
 * if n is 0 or a sample is not a finite number (err says which). */
int gpuipc_stats_summarize(const double *v, size_t n, gpuipc_stats *s, gpuipc_err *err);

/* Bytes per nanosecond is GB/s (10^9 bytes per second, as nvbandwidth
 * counts). Returns 0 for a zero time. */
double gpuipc_stats_gbps(uint64_t bytes, double ns);

/* Writes a duration in the unit that keeps 3 significant digits: "812 ns",
 * "1.25 us", "38.4 ms", "2.10 s". Returns buf. */
char *gpuipc_stats_format_ns(double ns, char *buf, size_t len);

/* Writes a rate in GB/s, or TB/s from 1000 GB/s on: "812 GB/s",
 * "2.61 TB/s". Returns buf. */
char *gpuipc_stats_format_gbps(double gbps, char *buf, size_t len);

#endif
