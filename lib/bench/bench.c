/* SPDX-License-Identifier: Apache-2.0 */
/* bench.c: --bench's results: derived stages, Markdown tables, JSON. */
#include "bench/bench.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/json.h"
#include "core/proc.h"
#include "core/stats.h"
#include "core/units.h"
#include "run/cellset.h"

const char *const gpuipc_stage_names[GPUIPC_STAGE_COUNT] = {
    "alloc", "export", "transfer", "import", "reserve", "map", "access",
    "touch", "teardown_consumer", "teardown_producer", "export_to_mapped",
};

/* Column headers of the latency tables. */
static const char *const stage_headers[GPUIPC_STAGE_COUNT] = {
    "alloc+map (P)", "export (P)", "transfer", "import (C)", "reserve (C)", "map (C)",
    "set access (C)", "first touch (C)", "teardown (C)", "teardown (P)", "export to mapped",
};

static const char *const bw_names[GPUIPC_BW_COUNT] = {
    "fill_imported", "verify_imported", "copy_imported", "fill_local", "verify_local",
    "copy_local",
};

int gpuipc_samples_add(gpuipc_samples *s, double x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32;
        double *v = realloc(s->v, cap * sizeof(double));

        if (v == NULL)
            return -ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return 0;
}

void gpuipc_samples_free(gpuipc_samples *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}

/* Whether GPU g is one that a cell of s->cells[0..i) ran on (a cell not run
 * left out, as the document's gpus leaves it out). */
static int gpu_seen_before(const gpuipc_doc_scan *s, size_t i, int g)
{
    size_t k;

    for (k = 0; k < i; k++)
        if (s->cells[k].status != -1 && (s->cells[k].gpu == g || s->cells[k].peer_gpu == g))
            return 1;
    return 0;
}

void gpuipc_bench_cells_of(gpuipc_bench_cells *c, const gpuipc_doc_scan *s, int status)
{
    char how[96];
    size_t i;

    memset(c, 0, sizeof(*c));
    for (i = 0; i < s->n; i++) {
        const gpuipc_doc_scan_cell *x = &s->cells[i];

        switch (gpuipc_cell_where_of(x->gpu, x->peer_gpu)) {
        case GPUIPC_CELL_ONE_GPU:
            c->census.one_gpu++;
            break;
        case GPUIPC_CELL_ACROSS_GPUS:
            c->census.across_gpus++;
            break;
        case GPUIPC_CELL_HOST_MEMORY:
            c->census.host_memory++;
            break;
        }
        c->census.cells++;
        c->census.ns += (uint64_t)(x->time_ms * 1e6 + 0.5);
        if (x->status == -1)
            continue;
        if (x->gpu >= 0 && !gpu_seen_before(s, i, x->gpu))
            c->ngpus++;
        if (x->peer_gpu >= 0 && x->peer_gpu != x->gpu && !gpu_seen_before(s, i, x->peer_gpu))
            c->ngpus++;
    }
    c->wall_ns = s->wall_s * 1e9;
    c->read = 1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        c->measured = 1;
        return;
    }
    snprintf(c->note, sizeof(c->note), "the run %s, so its cells are not taken",
             gpuipc_proc_describe(status, how, sizeof(how)));
}

static double diff(uint64_t later, uint64_t earlier)
{
    return (double)later - (double)earlier;
}

/* How long a message took once both sides were ready: from the later of
 * its send and the receiver's wait beginning, to its arrival. A message
 * that waited in the socket while the receiver was busy counts only for
 * its recvmsg(). */
static double one_way(uint64_t sent, uint64_t waited, uint64_t received)
{
    return diff(received, sent > waited ? sent : waited);
}

void gpuipc_bench_derive(const gpuipc_timing *t, double st[GPUIPC_STAGE_COUNT])
{
    const uint64_t *l = t->laps;
    unsigned i, n = t->nfds_sent < t->nfds_recv / 2 ? t->nfds_sent : t->nfds_recv / 2;
    double inner = (double)l[GPUIPC_LAP_RESERVE] + (double)l[GPUIPC_LAP_MAP] +
                   (double)l[GPUIPC_LAP_ACCESS] + (double)l[GPUIPC_LAP_FETCH];

    st[GPUIPC_STAGE_ALLOC] = (double)t->alloc_ns;
    st[GPUIPC_STAGE_EXPORT] = (double)t->export_ns;
    st[GPUIPC_STAGE_TRANSFER] = one_way(t->offer_sent, l[GPUIPC_LAP_OFFER_WAIT],
                                        l[GPUIPC_LAP_OFFER_RECV]) +
                                (double)l[GPUIPC_LAP_FETCH];
    for (i = 0; i < n; i++)
        st[GPUIPC_STAGE_TRANSFER] += one_way(t->fds_sent[i], t->fds_recv[2 * i],
                                             t->fds_recv[2 * i + 1]);
    st[GPUIPC_STAGE_IMPORT] = (double)l[GPUIPC_LAP_IMPORT] - inner;
    if (st[GPUIPC_STAGE_IMPORT] < 0)
        st[GPUIPC_STAGE_IMPORT] = 0;
    st[GPUIPC_STAGE_RESERVE] = (double)l[GPUIPC_LAP_RESERVE];
    st[GPUIPC_STAGE_MAP] = (double)l[GPUIPC_LAP_MAP];
    st[GPUIPC_STAGE_ACCESS] = (double)l[GPUIPC_LAP_ACCESS];
    st[GPUIPC_STAGE_TOUCH] = (double)l[GPUIPC_LAP_TOUCH];
    st[GPUIPC_STAGE_RELEASE_C] = (double)l[GPUIPC_LAP_RELEASE];
    st[GPUIPC_STAGE_RELEASE_P] = (double)t->release_ns;
    st[GPUIPC_STAGE_E2E] = diff(l[GPUIPC_LAP_MAPPED], t->export_start);
}

static void free_lat(gpuipc_bench_lat *r, size_t n)
{
    size_t i, k;

    for (i = 0; i < n; i++)
        for (k = 0; k < GPUIPC_STAGE_COUNT; k++)
            gpuipc_samples_free(&r[i].st[k]);
}

static void free_bw(gpuipc_bench_bw *r, size_t n)
{
    size_t i, k;

    for (i = 0; i < n; i++)
        for (k = 0; k < GPUIPC_BW_COUNT; k++)
            gpuipc_samples_free(&r[i].ns[k]);
}

void gpuipc_bench_free(gpuipc_bench *b)
{
    free_lat(b->lat, b->nlat);
    free_lat(b->sizes, b->nsizes);
    free_lat(b->chunks, b->nchunks);
    free_bw(b->bw, b->nbw);
    free_bw(b->cross, b->ncross);
    gpuipc_samples_free(&b->oneshot_ns);
}

/* ---- numbers ------------------------------------------------------------------------------ */

/* The median of s, or NaN if it has no samples. */
static double median(const gpuipc_samples *s)
{
    gpuipc_stats st;

    if (s->n == 0 || gpuipc_stats_summarize(s->v, s->n, &st, NULL) < 0)
        return NAN;
    return st.median;
}

/* Three significant digits, no unit. */
static char *num3(double v, char *buf, size_t len)
{
    double a = fabs(v);

    if (!isfinite(v))
        snprintf(buf, len, "-");
    else if (a >= 100 || a == 0)
        snprintf(buf, len, "%.0f", v);
    else if (a >= 10)
        snprintf(buf, len, "%.1f", v);
    else
        snprintf(buf, len, "%.2f", v);
    return buf;
}

/* "median (min-max)" of s scaled by 1/div, or "-" if s is empty or all 0. */
static char *cell(const gpuipc_samples *s, double div, char *buf, size_t len)
{
    char a[24], b[24], c[24];
    gpuipc_stats st;

    if (s->n == 0 || gpuipc_stats_summarize(s->v, s->n, &st, NULL) < 0 || st.max == 0) {
        snprintf(buf, len, "-");
        return buf;
    }
    snprintf(buf, len, "%s (%s-%s)", num3(st.median / div, a, sizeof(a)),
             num3(st.min / div, b, sizeof(b)), num3(st.max / div, c, sizeof(c)));
    return buf;
}

/* Bandwidth cell: bytes over each sample's time, in GB/s: "median (min-max)"
 * (the fastest sample is the maximum rate). */
static char *bw_cell(const gpuipc_samples *s, uint64_t bytes, char *buf, size_t len)
{
    char a[24], b[24], c[24];
    gpuipc_stats st;

    if (s->n == 0 || gpuipc_stats_summarize(s->v, s->n, &st, NULL) < 0 || st.min <= 0) {
        snprintf(buf, len, "-");
        return buf;
    }
    snprintf(buf, len, "%s (%s-%s)", num3(gpuipc_stats_gbps(bytes, st.median), a, sizeof(a)),
             num3(gpuipc_stats_gbps(bytes, st.max), b, sizeof(b)),
             num3(gpuipc_stats_gbps(bytes, st.min), c, sizeof(c)));
    return buf;
}

static double bw_median(const gpuipc_bench_bw *r, int op)
{
    double m = median(&r->ns[op]);

    return isfinite(m) && m > 0 ? gpuipc_stats_gbps(r->size, m) : NAN;
}

static char *size_text(uint64_t bytes, char *buf, size_t len)
{
    return gpuipc_units_format_size(bytes, buf, len);
}

static char *mib(uint64_t bytes, char *buf, size_t len)
{
    snprintf(buf, len, "%.0f", (double)bytes / (1024.0 * 1024.0));
    return buf;
}

/* ---- tables -------------------------------------------------------------------------------- */

static void lat_header(FILE *out, const char *first, const int *cols, size_t ncols,
                       const char *extra, size_t nextra)
{
    size_t i;

    fprintf(out, "| %s |", first);
    for (i = 0; i < ncols; i++)
        fprintf(out, " %s |", stage_headers[cols[i]]);
    if (extra != NULL)
        fprintf(out, " %s |", extra);
    fprintf(out, "\n|---|");
    for (i = 0; i < ncols + nextra; i++)
        fprintf(out, "---:|");
    fputc('\n', out);
}

/* After the row's first cell: "not measured: why" and 0, or the stages in
 * cols as "median (min-max)" microseconds and 1 (the caller ends the line). */
static int lat_cells(FILE *out, const gpuipc_bench_lat *r, const int *cols, size_t ncols)
{
    char c[64];
    size_t k;

    if (r->note[0] != '\0') {
        fprintf(out, " not measured: %s |\n", r->note);
        return 0;
    }
    for (k = 0; k < ncols; k++)
        fprintf(out, " %s |", cell(&r->st[cols[k]], 1e3, c, sizeof(c)));
    return 1;
}

void gpuipc_bench_print_latency(FILE *out, const gpuipc_bench *b)
{
    static const int cols[] = {GPUIPC_STAGE_ALLOC,     GPUIPC_STAGE_EXPORT,
                               GPUIPC_STAGE_TRANSFER,  GPUIPC_STAGE_IMPORT,
                               GPUIPC_STAGE_RESERVE,   GPUIPC_STAGE_MAP,
                               GPUIPC_STAGE_ACCESS,    GPUIPC_STAGE_TOUCH,
                               GPUIPC_STAGE_RELEASE_C, GPUIPC_STAGE_RELEASE_P,
                               GPUIPC_STAGE_E2E};
    char sz[32];
    size_t i;

    if (b->nlat == 0)
        return;
    fprintf(out, "\n## Latency of one allocation of %s, per mechanism\n\n"
            "Microseconds, median (min-max) of %u scenarios after one warm-up. P: the "
            "producer, C: the consumer. Transfer: one way, from the producer's sendmsg() (or "
            "the consumer's wait, if that began later) to the consumer's recvmsg() returning, "
            "summed over the messages, plus pidfd_getfd for vmm-pidfd. Import: the import "
            "calls less reserve, map and access. First touch: the consumer's first kernel over "
            "the memory (the verify kernel, launch to completion, host clock). Export to "
            "mapped: from the producer's first export call to the consumer's last import call "
            "returning, mapped and accessible. '-': the mechanism has no such "
            "step. memfd is the host baseline (no GPU).\n\n",
            size_text(b->size, sz, sizeof(sz)), b->iters);
    lat_header(out, "mechanism", cols, sizeof(cols) / sizeof(cols[0]), NULL, 0);
    for (i = 0; i < b->nlat; i++) {
        const gpuipc_bench_lat *r = &b->lat[i];

        fprintf(out, "| %s |", r->name);
        if (lat_cells(out, r, cols, sizeof(cols) / sizeof(cols[0])))
            fputc('\n', out);
    }
}

static void print_bw_rows(FILE *out, const gpuipc_bench_bw *rows, size_t n, uint64_t l2)
{
    static const char *const ops[3] = {"fill (bytes written)", "verify (bytes read)",
                                       "copy to local (bytes copied)"};
    char sz[32], l2t[32], a[64], c[64], r[32];
    size_t i;
    int op;

    fprintf(out, "| size | operation | imported | local | imported/local |\n"
            "|---|---|---:|---:|---:|\n");
    for (i = 0; i < n; i++) {
        const gpuipc_bench_bw *w = &rows[i];

        size_text(w->size, sz, sizeof(sz));
        if (l2 != 0 && w->size < 4 * l2) {
            size_t used = strlen(sz);

            snprintf(sz + used, sizeof(sz) - used, " (< 4x L2 %s)",
                     size_text(l2, l2t, sizeof(l2t)));
        }
        if (w->note[0] != '\0') {
            fprintf(out, "| %s | not measured: %s | | | |\n", sz, w->note);
            continue;
        }
        for (op = 0; op < 3; op++) {
            double ratio = bw_median(w, op) / bw_median(w, op + 3);

            fprintf(out, "| %s | %s | %s | %s | %s |\n", sz, ops[op],
                    bw_cell(&w->ns[op], w->size, a, sizeof(a)),
                    bw_cell(&w->ns[op + 3], w->size, c, sizeof(c)),
                    isfinite(ratio) ? (snprintf(r, sizeof(r), "%.3f", ratio), r) : "-");
        }
    }
}

void gpuipc_bench_print_bandwidth(FILE *out, const gpuipc_bench *b)
{
    if (b->nbw == 0)
        return;
    fprintf(out, "\n## Bandwidth through imported memory and local memory, GPU %d\n\n"
            "GB/s (10^9 bytes/s), median (min-max) of %u runs, each timed alone with CUDA "
            "events. Bytes are counted as nvbandwidth counts them: the fill kernel's bytes "
            "written, the verify kernel's bytes read, a copy's size once (not read plus "
            "written). Imported: the vmm mechanism's mapping in the consumer; local: the "
            "consumer's own cuMemCreate memory of the same size; the copy goes from either "
            "into a second local buffer.\n\n", b->ordinal, b->iters);
    print_bw_rows(out, b->bw, b->nbw, b->l2_bytes);
}

/* The growth of stage k from the first to the last row, per unit. */
static double slope(const gpuipc_bench_lat *rows, size_t n, int k, int by_chunks)
{
    double x0, x1, y0, y1;

    if (n < 2)
        return NAN;
    x0 = by_chunks ? rows[0].chunks : (double)rows[0].size;
    x1 = by_chunks ? rows[n - 1].chunks : (double)rows[n - 1].size;
    y0 = median(&rows[0].st[k]);
    y1 = median(&rows[n - 1].st[k]);
    return x1 > x0 ? (y1 - y0) / (x1 - x0) : NAN;
}

/* The last row of a scaling table: each stage's growth from the first row
 * to the last, per unit (per byte, or per chunk) times scale, in us; tail
 * ends the line (empty cells for the extra columns). */
static void growth_row(FILE *out, const char *label, const gpuipc_bench_lat *rows, size_t n,
                       const int *cols, size_t ncols, int by_chunks, double scale,
                       const char *tail)
{
    char c[32];
    size_t k;

    fprintf(out, "| %s |", label);
    for (k = 0; k < ncols; k++)
        fprintf(out, " %s |", num3(slope(rows, n, cols[k], by_chunks) * scale / 1e3, c,
                                   sizeof(c)));
    fprintf(out, "%s\n", tail);
}

static void print_sizes(FILE *out, const gpuipc_bench *b)
{
    static const int cols[] = {GPUIPC_STAGE_ALLOC,     GPUIPC_STAGE_EXPORT,
                               GPUIPC_STAGE_TRANSFER,  GPUIPC_STAGE_IMPORT,
                               GPUIPC_STAGE_MAP,       GPUIPC_STAGE_ACCESS,
                               GPUIPC_STAGE_RELEASE_C, GPUIPC_STAGE_RELEASE_P,
                               GPUIPC_STAGE_E2E};
    const size_t ncols = sizeof(cols) / sizeof(cols[0]);
    char sz[32], p[24], q[24];
    size_t i;

    fprintf(out, "\n## Scaling with size (vmm, one allocation)\n\n"
            "Microseconds, median (min-max) of %u. Peak RSS: VmHWM of the producer and the "
            "consumer during that size's scenarios, in MiB. The last row is the growth from "
            "the smallest size to the largest, in microseconds per GiB.\n\n", b->iters);
    lat_header(out, "size", cols, ncols, "peak RSS P/C (MiB)", 1);
    for (i = 0; i < b->nsizes; i++) {
        const gpuipc_bench_lat *r = &b->sizes[i];

        fprintf(out, "| %s |", size_text(r->size, sz, sizeof(sz)));
        if (lat_cells(out, r, cols, ncols))
            fprintf(out, " %s / %s |\n", mib(r->hwm_producer, p, sizeof(p)),
                    mib(r->hwm_consumer, q, sizeof(q)));
    }
    growth_row(out, "growth per GiB", b->sizes, b->nsizes, cols, ncols, 0, 1073741824.0, " |");
}

/* Export + transfer + import + map of one chunk, in ns, for row r. */
static double per_chunk(const gpuipc_bench_lat *r)
{
    return (median(&r->st[GPUIPC_STAGE_EXPORT]) + median(&r->st[GPUIPC_STAGE_TRANSFER]) +
            median(&r->st[GPUIPC_STAGE_IMPORT]) + median(&r->st[GPUIPC_STAGE_MAP])) /
           (r->chunks ? r->chunks : 1);
}

static void print_chunks(FILE *out, const gpuipc_bench *b)
{
    static const int cols[] = {GPUIPC_STAGE_ALLOC,  GPUIPC_STAGE_EXPORT, GPUIPC_STAGE_TRANSFER,
                               GPUIPC_STAGE_IMPORT, GPUIPC_STAGE_MAP,    GPUIPC_STAGE_ACCESS,
                               GPUIPC_STAGE_E2E};
    const size_t ncols = sizeof(cols) / sizeof(cols[0]);
    char sz[32], d[24], e[24];
    size_t i;

    fprintf(out, "\n## Scaling with chunk count (vmm-chunks, 2 MiB chunks)\n\n"
            "Microseconds for all chunks together, median (min-max) of %u. Per chunk: "
            "(export + transfer + import + map) / chunks, from the medians; pipelined: export "
            "to mapped / chunks (the consumer imports one batch of 253 FDs while the producer "
            "exports the next). The last row is the growth per chunk from the fewest chunks to "
            "the most.\n\n", b->iters);
    lat_header(out, "chunks", cols, ncols, "per chunk (us) | pipelined per chunk (us)", 2);
    for (i = 0; i < b->nchunks; i++) {
        const gpuipc_bench_lat *r = &b->chunks[i];

        fprintf(out, "| %u (%s) |", r->chunks, size_text(r->size, sz, sizeof(sz)));
        if (lat_cells(out, r, cols, ncols))
            fprintf(out, " %s | %s |\n", num3(per_chunk(r) / 1e3, d, sizeof(d)),
                    num3(median(&r->st[GPUIPC_STAGE_E2E]) / r->chunks / 1e3, e, sizeof(e)));
    }
    growth_row(out, "growth per chunk", b->chunks, b->nchunks, cols, ncols, 1, 1.0, " | |");
}

void gpuipc_bench_print_scaling(FILE *out, const gpuipc_bench *b)
{
    if (b->nsizes > 0)
        print_sizes(out, b);
    if (b->nchunks > 0)
        print_chunks(out, b);
}

void gpuipc_bench_print_cross(FILE *out, const gpuipc_bench *b)
{
    static const struct {
        int op;
        const char *what;
    } mats[] = {{GPUIPC_BW_VERIFY_IMPORTED, "read (verify kernel, bytes read)"},
                {GPUIPC_BW_FILL_IMPORTED, "write (fill kernel, bytes written)"},
                {GPUIPC_BW_COPY_IMPORTED, "copy into the consumer's local memory (bytes copied)"}};
    char sz[32], c[24];
    size_t m, i;
    int a, bb;

    if (b->ncross == 0)
        return;
    fprintf(out, "\n## Cross-device bandwidth matrix, %d GPUs\n\n"
            "GB/s, median of %u: the consumer on GPU b reads and writes the producer's %s of "
            "%s memory on GPU a. The diagonal is one device (imported memory, same GPU).\n",
            b->ngpus, b->iters, size_text(b->cross[0].size, sz, sizeof(sz)), b->reference);
    for (m = 0; m < sizeof(mats) / sizeof(mats[0]); m++) {
        fprintf(out, "\n%s:\n\n| memory on \\ consumer on |", mats[m].what);
        for (bb = 0; bb < b->ngpus; bb++)
            fprintf(out, " GPU %d |", bb);
        fprintf(out, "\n|---|");
        for (bb = 0; bb < b->ngpus; bb++)
            fprintf(out, "---:|");
        fputc('\n', out);
        for (a = 0; a < b->ngpus; a++) {
            fprintf(out, "| GPU %d |", a);
            for (bb = 0; bb < b->ngpus; bb++) {
                const char *text = "n/a";

                for (i = 0; i < b->ncross; i++)
                    if (b->cross[i].a == a && b->cross[i].b == bb)
                        text = b->cross[i].note[0] != '\0'
                                   ? "failed"
                                   : num3(bw_median(&b->cross[i], mats[m].op), c, sizeof(c));
                fprintf(out, " %s |", text);
            }
            fputc('\n', out);
        }
    }
    for (i = 0; i < b->ncross; i++)
        if (b->cross[i].note[0] != '\0')
            fprintf(out, "\nGPU %d -> GPU %d failed: %s\n", b->cross[i].a, b->cross[i].b,
                    b->cross[i].note);
}

/* ---- targets -------------------------------------------------------------------------------- */

static void target(gpuipc_bench_target *t, const char *name, const char *goal, int met,
                   const char *fmt, double v1, double v2)
{
    snprintf(t->name, sizeof(t->name), "%s", name);
    snprintf(t->target, sizeof(t->target), "%s", goal);
    if (met < 0 && (!isfinite(v1) || v1 == 0))
        snprintf(t->achieved, sizeof(t->achieved), "-");
    else
        snprintf(t->achieved, sizeof(t->achieved), fmt, v1, v2);
    t->met = met;
}

size_t gpuipc_bench_targets(const gpuipc_bench *b, gpuipc_bench_target *t, size_t cap)
{
    double worst_k = INFINITY, worst_r = INFINITY, e2e = NAN, chunk = NAN, wall = NAN;
    char one[96];
    size_t n = 0, i;
    int op, have_big = 0;

    if (cap < GPUIPC_BENCH_TARGETS)
        return 0;
    for (i = 0; i < b->nbw; i++) {
        if (b->bw[i].size < (1ull << 30) || b->bw[i].note[0] != '\0')
            continue;
        have_big = 1;
        for (op = 0; op < 2; op++) {
            double imp = bw_median(&b->bw[i], op), loc = bw_median(&b->bw[i], op + 3);

            worst_k = fmin(worst_k, fmin(imp, loc));
            worst_r = fmin(worst_r, imp / loc);
        }
    }
    target(&t[n++], "fill and verify kernels at 1 GiB and above, local and imported",
           ">= 2500 GB/s", have_big ? worst_k >= 2500 : -1, "%.0f GB/s (the slowest)", worst_k,
           0);
    target(&t[n++], "imported/local, fill and verify, at 1 GiB and above", ">= 0.97",
           have_big ? worst_r >= 0.97 : -1, "%.3f (the lowest)", worst_r, 0);
    for (i = 0; i < b->nlat; i++)
        if (strcmp(b->lat[i].name, b->reference) == 0)
            e2e = median(&b->lat[i].st[GPUIPC_STAGE_E2E]);
    snprintf(one, sizeof(one), "one allocation (%s), export to mapped in the consumer",
             b->reference);
    target(&t[n++], one, "<= 1.0 ms median",
           isfinite(e2e) ? e2e <= 1e6 : -1, "%.3f ms median", e2e / 1e6, 0);
    for (i = 0; i < b->nchunks; i++)
        if (b->chunks[i].chunks == 4096 && b->chunks[i].note[0] == '\0')
            chunk = per_chunk(&b->chunks[i]);
    target(&t[n++], "per chunk at 4096 chunks: export + transfer + import + map", "<= 50 us median",
           isfinite(chunk) ? chunk <= 50e3 : -1, "%.1f us", chunk / 1e3, 0);
    if (b->oneshot_ns.n > 0)
        wall = median(&b->oneshot_ns);
    target(&t[n++], "default one-shot run, whole process, median of 5", "<= 0.50 s",
           isfinite(wall) && !b->oneshot_failed ? wall <= 0.5e9 : -1,
           b->oneshot_failed ? "%.3f s (a run failed)" : "%.3f s", wall / 1e9, 0);
    {
        uint64_t p = 0, c = 0;

        /* Device memory of every size, 2 MiB to 16 GiB: the host memory
         * mechanisms (memfd, vmm-host-numa) map their buffer into the
         * process, and it counts in RSS by nature. */
        for (i = 0; i < b->nsizes; i++) {
            p = b->sizes[i].hwm_producer > p ? b->sizes[i].hwm_producer : p;
            c = b->sizes[i].hwm_consumer > c ? b->sizes[i].hwm_consumer : c;
        }
        uint64_t bare = b->bare_hwm, most = p > c ? p : c;
        double added = bare != 0 && most > bare ? (double)(most - bare) : 0;

        /* What this program adds to the driver's context, which is the same
         * in every CUDA process (about 100 MiB on an H100). */
        snprintf(t[n].achieved, sizeof(t[n].achieved), "-");
        target(&t[n], "peak RSS of either process above a bare CUDA context, vmm at every "
               "size up to 16 GiB", "<= 16 MiB added", p && c && bare ? added <= 16.0 * 1048576
               : -1, "+%.1f MiB", added / 1048576.0, 0);
        if (p && c && bare)
            snprintf(t[n].achieved, sizeof(t[n].achieved), "+%.1f MiB (producer %.0f, consumer "
                     "%.0f, bare context %.0f MiB)", added / 1048576.0, (double)p / 1048576.0,
                     (double)c / 1048576.0, (double)bare / 1048576.0);
        n++;
    }
    {
        gpuipc_bench_floor_target ft;

        gpuipc_bench_floor_target_of(b, &ft);
        snprintf(t[n].name, sizeof(t[n].name), "default run, whole process, median of %zu, "
                 "against its floor and cells", b->oneshot_ns.n);
        snprintf(t[n].target, sizeof(t[n].target), "<= floor + %.2f x (cells' times / GPUs)",
                 GPUIPC_BENCH_CELLS_FACTOR);
        if (ft.met < 0)
            snprintf(t[n].achieved, sizeof(t[n].achieved), "- (%.90s)", ft.why);
        else
            snprintf(t[n].achieved, sizeof(t[n].achieved), "%.3f s against %.3f + %.2f x %.3f "
                     "= %.3f s", ft.oneshot_ns / 1e9, ft.floor_ns / 1e9,
                     GPUIPC_BENCH_CELLS_FACTOR, ft.per_gpu_ns / 1e9, ft.limit_ns / 1e9);
        t[n++].met = ft.met;
    }
    return n;
}

/* ---- the default run against its floor --------------------------------------------------- */

void gpuipc_bench_floor_target_of(const gpuipc_bench *b, gpuipc_bench_floor_target *t)
{
    const gpuipc_bench_floor *f = &b->floor;
    const gpuipc_bench_cells *c = &b->cells;

    memset(t, 0, sizeof(*t));
    t->oneshot_ns = b->oneshot_ns.n > 0 ? median(&b->oneshot_ns) : NAN;
    t->floor_ns = f->measured ? (double)f->init_ns + (double)f->ctx_sum_ns : NAN;
    t->per_gpu_ns = c->measured && c->ngpus > 0 ? (double)c->census.ns / c->ngpus : NAN;
    t->limit_ns = t->floor_ns + GPUIPC_BENCH_CELLS_FACTOR * t->per_gpu_ns;
    t->met = -1;
    if (!f->measured)
        snprintf(t->why, sizeof(t->why), "the floor was not measured: %s",
                 f->note[0] ? f->note : "no figure");
    else if (!c->measured)
        snprintf(t->why, sizeof(t->why), "the cells were not measured: %s",
                 c->note[0] ? c->note : "no figure");
    else if (c->ngpus == 0)
        snprintf(t->why, sizeof(t->why), "the cells ran on no GPU");
    else if (b->oneshot_ns.n == 0)
        snprintf(t->why, sizeof(t->why), "no one-shot run was timed");
    else if (b->oneshot_failed)
        snprintf(t->why, sizeof(t->why), "a one-shot run failed");
    else
        t->met = t->oneshot_ns <= t->limit_ns;
}

static void seconds_row(FILE *out, const char *what, double ns)
{
    fprintf(out, "| %s | %.3f |\n", what, ns / 1e9);
}

void gpuipc_bench_print_floor(FILE *out, const gpuipc_bench *b)
{
    const gpuipc_bench_floor *f = &b->floor;
    const gpuipc_bench_cells *c = &b->cells;
    gpuipc_bench_floor_target t;
    char what[256], count[160];
    double listed = 0;
    int g;

    gpuipc_bench_floor_target_of(b, &t);
    fprintf(out, "\n## The default run against its floor\n\n"
            "Seconds, on CLOCK_MONOTONIC, of processes started before this one touched CUDA. "
            "The floor: a process of its own that calls cuInit with every GPU visible, then "
            "retains each GPU's primary context and makes it current, one after the other. The "
            "cells: one more default run (not one of the timed ones) with --json -, each "
            "cell's time_ms from its document. The target: the one-shot median at most the "
            "floor + %.2f x (the cells' times added / the GPUs they ran on).\n\n"
            "| what | s |\n|---|---:|\n", GPUIPC_BENCH_CELLS_FACTOR);
    if (b->oneshot_ns.n > 0) {
        snprintf(what, sizeof(what), "default one-shot run, whole process, median of %zu%s",
                 b->oneshot_ns.n, b->oneshot_failed ? " (a run failed)" : "");
        seconds_row(out, what, t.oneshot_ns);
    } else {
        fprintf(out, "| default one-shot run, whole process | not measured |\n");
    }
    if (f->measured) {
        seconds_row(out, "floor: cuInit", (double)f->init_ns);
        for (g = 0; g < f->ngpus && g < GPUIPC_BENCH_FLOOR_GPUS; g++) {
            snprintf(what, sizeof(what), "floor: GPU %d's primary context", g);
            seconds_row(out, what, (double)f->ctx_ns[g]);
            listed += (double)f->ctx_ns[g];
        }
        if (f->ngpus > GPUIPC_BENCH_FLOOR_GPUS) {
            snprintf(what, sizeof(what), "floor: GPUs %d to %d's primary contexts, together",
                     GPUIPC_BENCH_FLOOR_GPUS, f->ngpus - 1);
            seconds_row(out, what, (double)f->ctx_sum_ns - listed);
        }
        snprintf(what, sizeof(what), "floor, in all (cuInit and %d context%s)", f->ngpus,
                 f->ngpus == 1 ? "" : "s");
        seconds_row(out, what, t.floor_ns);
    } else {
        fprintf(out, "| floor | not measured: %s |\n", f->note[0] ? f->note : "-");
    }
    if (c->read) {
        snprintf(what, sizeof(what), "cells: %s, their times added%s",
                 gpuipc_cellset_census_text(&c->census, count, sizeof(count)),
                 c->measured ? "" : " (not taken: see below)");
        seconds_row(out, what, (double)c->census.ns);
        seconds_row(out, "that run, whole, as its document says", c->wall_ns);
    }
    if (isfinite(t.per_gpu_ns)) {
        snprintf(what, sizeof(what), "cells per GPU (%u GPU%s)", c->ngpus,
                 c->ngpus == 1 ? "" : "s");
        seconds_row(out, what, t.per_gpu_ns);
    } else if (!c->measured) {
        fprintf(out, "| cells | not measured: %s |\n", c->note[0] ? c->note : "-");
    }
    if (isfinite(t.limit_ns)) {
        snprintf(what, sizeof(what), "floor + %.2f x cells per GPU", GPUIPC_BENCH_CELLS_FACTOR);
        seconds_row(out, what, t.limit_ns);
    }
    if (t.met < 0)
        fprintf(out, "\nNo verdict: %s.\n", t.why);
    else
        fprintf(out, "\n%.3f s against %.3f + %.2f x %.3f = %.3f s: %s.\n", t.oneshot_ns / 1e9,
                t.floor_ns / 1e9, GPUIPC_BENCH_CELLS_FACTOR, t.per_gpu_ns / 1e9,
                t.limit_ns / 1e9, t.met ? "met" : "MISSED");
}

void gpuipc_bench_print_targets(FILE *out, const gpuipc_bench *b)
{
    gpuipc_bench_target t[GPUIPC_BENCH_TARGETS];
    size_t n = gpuipc_bench_targets(b, t, GPUIPC_BENCH_TARGETS), i;

    fprintf(out, "\n## Targets (set for the H100)\n\n| target | goal | achieved | verdict |\n"
            "|---|---|---|---|\n");
    for (i = 0; i < n; i++)
        fprintf(out, "| %s | %s | %s | %s |\n", t[i].name, t[i].target, t[i].achieved,
                t[i].met > 0 ? "met" : t[i].met == 0 ? "MISSED" : "not measured");
}

/* ---- JSON ----------------------------------------------------------------------------------- */

static void json_lat(gpuipc_json *j, const char *key, const gpuipc_bench_lat *r, size_t n)
{
    size_t i, k;

    gpuipc_json_array(j, key);
    for (i = 0; i < n; i++) {
        gpuipc_json_object(j, NULL);
        gpuipc_json_string(j, "mechanism", r[i].name);
        gpuipc_json_int(j, "size", (long long)r[i].size);
        gpuipc_json_int(j, "chunks", r[i].chunks);
        gpuipc_json_string(j, "note", r[i].note[0] ? r[i].note : NULL);
        gpuipc_json_int(j, "vmhwm_producer", (long long)r[i].hwm_producer);
        gpuipc_json_int(j, "vmhwm_consumer", (long long)r[i].hwm_consumer);
        gpuipc_json_object(j, "ns");
        for (k = 0; k < GPUIPC_STAGE_COUNT; k++)
            gpuipc_json_numbers(j, gpuipc_stage_names[k], r[i].st[k].v, r[i].st[k].n);
        gpuipc_json_end(j, '}');
        gpuipc_json_end(j, '}');
    }
    gpuipc_json_end(j, ']');
}

static void json_bw(gpuipc_json *j, const char *key, const gpuipc_bench_bw *r, size_t n)
{
    size_t i, k;

    gpuipc_json_array(j, key);
    for (i = 0; i < n; i++) {
        gpuipc_json_object(j, NULL);
        gpuipc_json_int(j, "producer_gpu", r[i].a);
        gpuipc_json_int(j, "consumer_gpu", r[i].b);
        gpuipc_json_int(j, "size", (long long)r[i].size);
        gpuipc_json_string(j, "note", r[i].note[0] ? r[i].note : NULL);
        gpuipc_json_int(j, "vmhwm_consumer", (long long)r[i].hwm_consumer);
        gpuipc_json_object(j, "ns");
        for (k = 0; k < GPUIPC_BW_COUNT; k++)
            gpuipc_json_numbers(j, bw_names[k], r[i].ns[k].v, r[i].ns[k].n);
        gpuipc_json_end(j, '}');
        gpuipc_json_object(j, "gbps_median");
        for (k = 0; k < GPUIPC_BW_COUNT; k++)
            gpuipc_json_double(j, bw_names[k], bw_median(&r[i], (int)k));
        gpuipc_json_end(j, '}');
        gpuipc_json_end(j, '}');
    }
    gpuipc_json_end(j, ']');
}

/* An integer member, or null where not measured. */
static void json_int_or_null(gpuipc_json *j, const char *key, int measured, long long v)
{
    if (measured)
        gpuipc_json_int(j, key, v);
    else
        gpuipc_json_string(j, key, NULL);
}

/* The default run against its floor: floor, cells and default_run_target,
 * null where not measured. */
static void json_floor(gpuipc_json *j, const gpuipc_bench *b)
{
    const gpuipc_bench_floor *f = &b->floor;
    const gpuipc_bench_cells *c = &b->cells;
    gpuipc_bench_floor_target t;
    double ctx[GPUIPC_BENCH_FLOOR_GPUS];
    int g, n = f->ngpus < GPUIPC_BENCH_FLOOR_GPUS ? f->ngpus : GPUIPC_BENCH_FLOOR_GPUS;

    gpuipc_json_object(j, "floor");
    gpuipc_json_bool(j, "measured", f->measured);
    json_int_or_null(j, "cuinit_ns", f->measured, (long long)f->init_ns);
    json_int_or_null(j, "gpus", f->measured, f->ngpus);
    for (g = 0; g < n; g++)
        ctx[g] = (double)f->ctx_ns[g];
    if (f->measured)
        gpuipc_json_numbers(j, "context_ns", ctx, (size_t)n);
    else
        gpuipc_json_string(j, "context_ns", NULL);
    json_int_or_null(j, "contexts_ns", f->measured, (long long)f->ctx_sum_ns);
    json_int_or_null(j, "total_ns", f->measured, (long long)(f->init_ns + f->ctx_sum_ns));
    gpuipc_json_string(j, "note", f->note[0] ? f->note : NULL);
    gpuipc_json_end(j, '}');
    gpuipc_json_object(j, "cells");
    gpuipc_json_bool(j, "measured", c->measured);
    json_int_or_null(j, "count", c->read, c->census.cells);
    json_int_or_null(j, "on_one_gpu", c->read, c->census.one_gpu);
    json_int_or_null(j, "across_gpus", c->read, c->census.across_gpus);
    json_int_or_null(j, "in_host_memory", c->read, c->census.host_memory);
    json_int_or_null(j, "gpus", c->read, c->ngpus);
    json_int_or_null(j, "time_sum_ns", c->read, (long long)c->census.ns);
    json_int_or_null(j, "run_wall_ns", c->read, (long long)c->wall_ns);
    gpuipc_json_string(j, "note", c->note[0] ? c->note : NULL);
    gpuipc_json_end(j, '}');
    gpuipc_bench_floor_target_of(b, &t);
    gpuipc_json_object(j, "default_run_target");
    gpuipc_json_double(j, "factor", GPUIPC_BENCH_CELLS_FACTOR);
    gpuipc_json_double(j, "oneshot_median_ns", t.oneshot_ns);
    gpuipc_json_double(j, "floor_ns", t.floor_ns);
    gpuipc_json_double(j, "cells_per_gpu_ns", t.per_gpu_ns);
    gpuipc_json_double(j, "limit_ns", t.limit_ns);
    gpuipc_json_string(j, "verdict", t.met > 0 ? "met" : t.met == 0 ? "missed" : "not measured");
    gpuipc_json_string(j, "why", t.met < 0 ? t.why : NULL);
    gpuipc_json_end(j, '}');
}

void gpuipc_bench_json(gpuipc_json *jp, const char *key, const gpuipc_bench *b)
{
    gpuipc_bench_target t[GPUIPC_BENCH_TARGETS];
    size_t n = gpuipc_bench_targets(b, t, GPUIPC_BENCH_TARGETS), i;
    gpuipc_json_object(jp, key);
    gpuipc_json_string(jp, "schema", "gpuipc_test/bench");
    /* 2: the "bench" member of the run's result document (1: a document of
     * its own); vmhwm_bare_context added. 3: floor, cells and
     * default_run_target added. */
    gpuipc_json_int(jp, "schema_version", 3);
    gpuipc_json_string(jp, "version", b->version);
    gpuipc_json_string(jp, "timestamp", b->timestamp);
    gpuipc_json_object(jp, "device");
    gpuipc_json_string(jp, "name", b->device);
    gpuipc_json_string(jp, "uuid", b->uuid);
    gpuipc_json_int(jp, "ordinal", b->ordinal);
    gpuipc_json_int(jp, "gpus", b->ngpus);
    gpuipc_json_int(jp, "l2_bytes", (long long)b->l2_bytes);
    gpuipc_json_string(jp, "driver", b->driver);
    gpuipc_json_end(jp, '}');
    gpuipc_json_object(jp, "options");
    gpuipc_json_int(jp, "iters", b->iters);
    gpuipc_json_int(jp, "size", (long long)b->size);
    gpuipc_json_int(jp, "device", b->ordinal);
    gpuipc_json_int(jp, "timeout_ns", (long long)b->timeout_ns);
    gpuipc_json_end(jp, '}');
    gpuipc_json_string(jp, "units", "samples in ns (CLOCK_MONOTONIC for host steps, CUDA "
                       "events for the bandwidth runs); GB/s = 1e9 bytes/s; fill counts bytes "
                       "written, verify bytes read, a copy its size once (as nvbandwidth)");
    gpuipc_json_numbers(jp, "oneshot_wall_ns", b->oneshot_ns.v, b->oneshot_ns.n);
    gpuipc_json_bool(jp, "oneshot_failed", b->oneshot_failed);
    gpuipc_json_int(jp, "vmhwm_producer", (long long)b->hwm_producer);
    gpuipc_json_int(jp, "vmhwm_bare_context", (long long)b->bare_hwm);
    json_floor(jp, b);
    json_lat(jp, "latency", b->lat, b->nlat);
    json_bw(jp, "bandwidth", b->bw, b->nbw);
    json_lat(jp, "size_scaling", b->sizes, b->nsizes);
    json_lat(jp, "chunk_scaling", b->chunks, b->nchunks);
    json_bw(jp, "cross_device", b->cross, b->ncross);
    gpuipc_json_array(jp, "targets");
    for (i = 0; i < n; i++) {
        gpuipc_json_object(jp, NULL);
        gpuipc_json_string(jp, "name", t[i].name);
        gpuipc_json_string(jp, "goal", t[i].target);
        gpuipc_json_string(jp, "achieved", t[i].achieved);
        gpuipc_json_string(jp, "verdict", t[i].met > 0 ? "met" : t[i].met == 0 ? "missed"
                                                                              : "not measured");
        gpuipc_json_end(jp, '}');
    }
    gpuipc_json_end(jp, ']');
    gpuipc_json_end(jp, '}');
}
