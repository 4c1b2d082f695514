/* SPDX-License-Identifier: Apache-2.0 */
/* stats.c: median, minimum, maximum and mean of benchmark samples, and
 * their units. */
#include "core/stats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

int gpuipc_stats_summarize(const double *v, size_t n, gpuipc_stats *s, gpuipc_err *err)
{
    double *sorted, sum = 0;
    size_t i;

    memset(s, 0, sizeof(*s));
    if (n == 0)
        return gpuipc_err_set(err, -EINVAL, "no samples to summarize");
    for (i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return gpuipc_err_set(err, -EINVAL, "sample %zu of %zu is not a finite number", i,
                                  n);
    sorted = malloc(n * sizeof(*sorted));
    if (sorted == NULL)
        return gpuipc_err_set(err, -ENOMEM, "out of memory for %zu samples", n);
    memcpy(sorted, v, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), compare);
    for (i = 0; i < n; i++)
        sum += sorted[i];
    s->n = n;
    s->min = sorted[0];
    s->max = sorted[n - 1];
    s->median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    s->mean = sum / (double)n;
    free(sorted);
    return 0;
}

double gpuipc_stats_gbps(uint64_t bytes, double ns)
{
    return ns > 0 ? (double)bytes / ns : 0.0;
}

/* Three significant digits of v followed by unit. */
static char *three_digits(double v, const char *unit, char *buf, size_t len)
{
    if (v >= 100 || v == 0)
        snprintf(buf, len, "%.0f %s", v, unit);
    else if (v >= 10)
        snprintf(buf, len, "%.1f %s", v, unit);
    else
        snprintf(buf, len, "%.2f %s", v, unit);
    return buf;
}

char *gpuipc_stats_format_ns(double ns, char *buf, size_t len)
{
    if (ns < 999.5)
        return three_digits(ns, "ns", buf, len);
    if (ns < 999.5e3)
        return three_digits(ns / 1e3, "us", buf, len);
    if (ns < 999.5e6)
        return three_digits(ns / 1e6, "ms", buf, len);
    return three_digits(ns / 1e9, "s", buf, len);
}

char *gpuipc_stats_format_gbps(double gbps, char *buf, size_t len)
{
    if (gbps < 999.5)
        return three_digits(gbps, "GB/s", buf, len);
    return three_digits(gbps / 1e3, "TB/s", buf, len);
}
