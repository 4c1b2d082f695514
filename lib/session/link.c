/* SPDX-License-Identifier: Apache-2.0 */
/* link.c: --pairs' link figures and their verdicts (link.h), without CUDA. */
#include "session/link.h"

#include <stdio.h>
#include <string.h>

#include "core/stats.h"
#include "core/units.h"

static const char *const run_names[GPUIPC_LINK_RUNS] = {
    "the read across the link", "the write across the link", "the read of this GPU's own memory"};

unsigned gpuipc_link_passes(uint64_t bytes)
{
    uint64_t p;

    if (bytes == 0)
        return 0;
    p = (GPUIPC_LINK_BATCH_BYTES + bytes - 1) / bytes;
    if (p < GPUIPC_LINK_MIN_PASSES)
        p = GPUIPC_LINK_MIN_PASSES;
    if (p > GPUIPC_LINK_MAX_PASSES)
        p = GPUIPC_LINK_MAX_PASSES;
    return (unsigned)p;
}

int gpuipc_link_check_sums(const char *what, uint64_t passes, const gpuipc_written *once,
                           uint64_t words, uint64_t digest, uint64_t mismatches, char *why,
                           size_t len)
{
    uint64_t want;

    if (once->words == 0) {
        snprintf(why, len, "%s: no pass of the pattern to hold it to (the scenario's fill "
                 "wrote no word)", what);
        return -1;
    }
    if (passes == 0 || __builtin_mul_overflow(passes, once->words, &want)) {
        snprintf(why, len, "%s: %llu passes over %llu words cannot be counted", what,
                 (unsigned long long)passes, (unsigned long long)once->words);
        return -1;
    }
    if (words != want) {
        snprintf(why, len, "%s: the kernels counted %llu words, but %llu passes over %llu "
                 "words are %llu: no figure from kernels that moved less", what,
                 (unsigned long long)words, (unsigned long long)passes,
                 (unsigned long long)once->words, (unsigned long long)want);
        return -1;
    }
    if (mismatches != 0) {
        snprintf(why, len, "%s: %llu words read were unlike the pattern", what,
                 (unsigned long long)mismatches);
        return -1;
    }
    /* Each pass adds the same terms to the same 64-bit sum, so passes
     * passes sum to passes times one pass's digest, wrapping alike. */
    if (digest != passes * once->digest) {
        snprintf(why, len, "%s: the kernels' digest 0x%016llx is not %llu x 0x%016llx "
                 "(0x%016llx): they did not move these bytes", what,
                 (unsigned long long)digest, (unsigned long long)passes,
                 (unsigned long long)once->digest,
                 (unsigned long long)(passes * once->digest));
        return -1;
    }
    return 0;
}

int gpuipc_link_check_where(int pointer, int home, int own, int ipc_opened, char *why,
                            size_t len)
{
    /* An ordinal below 0 is unknown (link.h: the wire's values out of an
     * int's range decode to -1): two unknowns are not one GPU, so memory
     * whose GPU, or the producer's, or this one's, is unknown is not placed
     * across the link. */
    if (pointer < 0 || home < 0 || own < 0) {
        snprintf(why, len, "where the imported memory lies is unknown: cuPointerGetAttribute "
                 "(DEVICE_ORDINAL) GPU %d, the producer's GPU %d, this process's GPU %d (-1: "
                 "unknown)", pointer, home, own);
        return -1;
    }
    if (home == own) {
        snprintf(why, len, "the producer's GPU is this process's own (GPU %d): there is no "
                 "link between them to measure", own);
        return -1;
    }
    if (pointer == home || (ipc_opened && pointer == own))
        return 0;
    if (pointer == own)
        snprintf(why, len, "cuPointerGetAttribute (DEVICE_ORDINAL) puts the imported memory on "
                 "this process's own GPU %d, not on the producer's GPU %d: its reads and "
                 "writes would not cross the link", own, home);
    else
        snprintf(why, len, "cuPointerGetAttribute (DEVICE_ORDINAL) puts the imported memory on "
                 "GPU %d, neither the producer's GPU %d nor this process's GPU %d", pointer,
                 home, own);
    return -1;
}

/* The batches of a run that count: at most GPUIPC_LINK_BATCHES. */
static unsigned batches_of(const gpuipc_link_figures *f)
{
    return f->batches < GPUIPC_LINK_BATCHES ? (unsigned)f->batches : GPUIPC_LINK_BATCHES;
}

/* Whether run kind was measured: passes, every batch timed. */
static int measured(const gpuipc_link_figures *f, int kind)
{
    unsigned i, n = batches_of(f);

    if (kind < 0 || kind >= GPUIPC_LINK_RUNS || f->passes == 0 || n == 0 ||
        (kind == GPUIPC_LINK_WRITE && !f->wrote))
        return 0;
    for (i = 0; i < n; i++)
        if (f->run[kind].ns[i] == 0)
            return 0;
    return 1;
}

/* GB/s of a batch that took ns. */
static double batch_gbps(const gpuipc_link_figures *f, double ns)
{
    uint64_t bytes;

    if (__builtin_mul_overflow(f->passes, f->bytes, &bytes))
        return 0;
    return gpuipc_stats_gbps(bytes, ns);
}

/* The batch times of run kind, sorted into ns (fastest first). Returns how
 * many, 0 if it was not measured. Sorted here, without malloc, since the
 * watchdog's document at the deadline renders these figures too. */
static unsigned sorted_times(const gpuipc_link_figures *f, int kind,
                             uint64_t ns[GPUIPC_LINK_BATCHES])
{
    unsigned n = batches_of(f), i, k;
    uint64_t t;

    if (!measured(f, kind))
        return 0;
    for (i = 0; i < n; i++) /* insertion sort: a handful of values */
        for (ns[i] = f->run[kind].ns[i], k = i; k > 0 && ns[k - 1] > ns[k]; k--) {
            t = ns[k];
            ns[k] = ns[k - 1];
            ns[k - 1] = t;
        }
    return n;
}

double gpuipc_link_gbps(const gpuipc_link_figures *f, int kind)
{
    uint64_t ns[GPUIPC_LINK_BATCHES];
    unsigned n = sorted_times(f, kind, ns);

    /* The median batch time (of an even count, the mean of the middle
     * two), as nvbandwidth reports the median of its samples. */
    if (n == 0)
        return 0;
    return batch_gbps(f, n % 2 ? (double)ns[n / 2]
                               : ((double)ns[n / 2 - 1] + (double)ns[n / 2]) / 2);
}

void gpuipc_link_spread(const gpuipc_link_figures *f, int kind, double *lo, double *hi)
{
    uint64_t ns[GPUIPC_LINK_BATCHES];
    unsigned n = sorted_times(f, kind, ns);

    *lo = n > 0 ? batch_gbps(f, (double)ns[n - 1]) : 0; /* the slowest batch */
    *hi = n > 0 ? batch_gbps(f, (double)ns[0]) : 0;
}

int gpuipc_link_judge(const gpuipc_link_figures *f, uint64_t bytes, const gpuipc_written *once,
                      int write_expected, int ipc_opened, char *why, size_t len)
{
    uint64_t total;
    double peer, local;
    int kind;

    if (f->passes == 0) {
        snprintf(why, len, "no link figures: nothing was measured");
        return -1;
    }
    if (f->bytes != bytes || f->passes != gpuipc_link_passes(bytes) ||
        f->batches != GPUIPC_LINK_BATCHES) {
        snprintf(why, len, "the figures come from %llu batches of %llu passes over %llu bytes, "
                 "but the mapping of %llu bytes takes %u batches of %u passes",
                 (unsigned long long)f->batches, (unsigned long long)f->passes,
                 (unsigned long long)f->bytes, (unsigned long long)bytes, GPUIPC_LINK_BATCHES,
                 gpuipc_link_passes(bytes));
        return -1;
    }
    if (gpuipc_link_check_where(f->pointer_ordinal, f->home_ordinal, f->own_ordinal, ipc_opened,
                                why, len) < 0)
        return -1;
    if (f->wrote != (write_expected != 0)) {
        snprintf(why, len, "the write across the link was %s, but %s", f->wrote ? "measured"
                 : "not measured", write_expected ? "the mapping is writable"
                 : "the mapping is read-only");
        return -1;
    }
    total = f->passes * f->batches; /* at most 16384 x 5 */
    for (kind = 0; kind < GPUIPC_LINK_RUNS; kind++) {
        const gpuipc_link_run *r = &f->run[kind];

        if (kind == GPUIPC_LINK_WRITE && !write_expected)
            continue;
        if (!measured(f, kind)) {
            snprintf(why, len, "%s: a batch was not timed", run_names[kind]);
            return -1;
        }
        if (gpuipc_link_check_sums(run_names[kind], total, once, r->words, r->digest,
                                   r->mismatches, why, len) < 0)
            return -1;
    }
    peer = gpuipc_link_gbps(f, GPUIPC_LINK_READ);
    local = gpuipc_link_gbps(f, GPUIPC_LINK_LOCAL);
    if (!(local >= GPUIPC_LINK_LOCAL_MARGIN * peer)) {
        snprintf(why, len, "the read across the link (%.1f GB/s) is not %.1f times slower than "
                 "the read of GPU %d's own memory (%.1f GB/s): the imported memory cannot be "
                 "across a link", peer, GPUIPC_LINK_LOCAL_MARGIN, f->own_ordinal, local);
        return -1;
    }
    return 0;
}

const char *gpuipc_link_below(double read_gbps, double write_gbps, int write_expected,
                              double min)
{
    int read_low = read_gbps <= 0 || read_gbps < min;
    int write_low = write_expected && (write_gbps <= 0 || write_gbps < min);

    if (read_low && write_low)
        return read_gbps <= 0 || (write_gbps > 0 && read_gbps <= write_gbps) ? "read" : "wrote";
    return read_low ? "read" : write_low ? "wrote" : NULL;
}

char *gpuipc_link_describe(const gpuipc_link_figures *f, char *buf, size_t len)
{
    static const char *const verbs[GPUIPC_LINK_RUNS] = {
        "read %.1f GB/s across the link (batches %.1f-%.1f)",
        ", wrote %.1f GB/s across it (%.1f-%.1f)",
        ", read %.1f GB/s of this GPU's own memory (%.1f-%.1f)"};
    char size[32];
    double lo, hi;
    size_t used = 0;
    int kind;

    buf[0] = '\0';
    if (f->passes == 0) {
        snprintf(buf, len, "not measured");
        return buf;
    }
    for (kind = 0; kind < GPUIPC_LINK_RUNS && used < len; kind++) {
        if (!measured(f, kind))
            continue;
        gpuipc_link_spread(f, kind, &lo, &hi);
        snprintf(buf + used, len - used, verbs[kind], gpuipc_link_gbps(f, kind), lo, hi);
        used = strlen(buf);
    }
    if (used < len)
        snprintf(buf + used, len - used, "; each the median of %llu batches of %llu passes "
                 "over %s, timed with CUDA events", (unsigned long long)f->batches,
                 (unsigned long long)f->passes,
                 gpuipc_units_format_size(f->bytes, size, sizeof(size)));
    return buf;
}

char *gpuipc_link_gbps_text(double gbps, char *buf, size_t len)
{
    snprintf(buf, len, gbps > 0 ? "%.1f GB/s" : "not measured", gbps);
    return buf;
}

char *gpuipc_link_pair_words(const gpuipc_link_figures *f, int a, int b, char *buf, size_t len)
{
    char rs[32], ws[32], wrote[64], ls[32], size[32];

    if (f->wrote)
        snprintf(wrote, sizeof(wrote), "wrote %s to it",
                 gpuipc_link_gbps_text(gpuipc_link_gbps(f, GPUIPC_LINK_WRITE), ws, sizeof(ws)));
    else
        snprintf(wrote, sizeof(wrote), "wrote nothing to it, a read-only mapping");
    snprintf(buf, len, "across the link, GPU %d read %s from GPU %d and %s (GPU %d's own memory: "
             "%s; medians of %llu batches of %llu x %s)", b,
             gpuipc_link_gbps_text(gpuipc_link_gbps(f, GPUIPC_LINK_READ), rs, sizeof(rs)), a,
             wrote, b,
             gpuipc_link_gbps_text(gpuipc_link_gbps(f, GPUIPC_LINK_LOCAL), ls, sizeof(ls)),
             (unsigned long long)f->batches, (unsigned long long)f->passes,
             gpuipc_units_format_size(f->bytes, size, sizeof(size)));
    return buf;
}

void gpuipc_link_to_values(const gpuipc_link_figures *f, uint64_t v[GPUIPC_LINK_VALUES])
{
    unsigned k = 0, i;
    int kind;

    v[k++] = f->passes;
    v[k++] = f->batches;
    v[k++] = f->bytes;
    v[k++] = (uint64_t)(int64_t)f->pointer_ordinal;
    v[k++] = (uint64_t)(int64_t)f->home_ordinal;
    v[k++] = (uint64_t)(int64_t)f->own_ordinal;
    v[k++] = (uint64_t)f->wrote;
    for (kind = 0; kind < GPUIPC_LINK_RUNS; kind++) {
        v[k++] = f->run[kind].words;
        v[k++] = f->run[kind].digest;
        v[k++] = f->run[kind].mismatches;
        for (i = 0; i < GPUIPC_LINK_BATCHES; i++)
            v[k++] = f->run[kind].ns[i];
    }
}

/* An ordinal from its value: outside an int's range is unknown (-1). */
static int ordinal_of(uint64_t v)
{
    int64_t s = (int64_t)v;

    return s >= -1 && s <= 0x7fffffff ? (int)s : -1;
}

void gpuipc_link_from_values(const uint64_t v[GPUIPC_LINK_VALUES], gpuipc_link_figures *f)
{
    unsigned k = 0, i;
    int kind;

    memset(f, 0, sizeof(*f));
    f->passes = v[k++];
    f->batches = v[k++];
    f->bytes = v[k++];
    f->pointer_ordinal = ordinal_of(v[k++]);
    f->home_ordinal = ordinal_of(v[k++]);
    f->own_ordinal = ordinal_of(v[k++]);
    f->wrote = v[k++] != 0;
    for (kind = 0; kind < GPUIPC_LINK_RUNS; kind++) {
        f->run[kind].words = v[k++];
        f->run[kind].digest = v[k++];
        f->run[kind].mismatches = v[k++];
        for (i = 0; i < GPUIPC_LINK_BATCHES; i++)
            f->run[kind].ns[i] = v[k++];
    }
}
