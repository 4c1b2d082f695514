/* SPDX-License-Identifier: Apache-2.0 */
/* bench_run.c: --bench's measurement plan, driven by the producer.
 *
 * Every measurement is a real scenario of the session (both patterns
 * written and checked, everything released and counted), asked with BEGIN
 * flags to time itself: the producer keeps its own figures and the consumer
 * sends its own in TIMES after END_ACK (laps.h). Each latency row starts
 * with one untimed warm-up scenario; the bandwidth runs warm up inside. */
#include "bench/cuda/bench_run.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "core/proc.h"
#include "core/stop.h"
#include "session/producer.h"
#include "core/units.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define SIZE_SCALING_MAX (16 * GiB)

typedef struct ctx {
    gpuipc_env *env;
    gpuipc_wire *w;
    const gpuipc_bench_cfg *cfg;
    gpuipc_bench *b;
    unsigned index;   /* scenario number in the session */
    unsigned chunks;  /* the chunked mechanisms' allocations in the row under way; 0: default */
    uint8_t uuid[GPUIPC_UUID_LEN];      /* the producer's device in the rows under way */
    uint8_t peer_uuid[GPUIPC_UUID_LEN]; /* the consumer's, where another (cross-device) */
    int failed;
    uint64_t t0;
} ctx;

static void progress(const ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void progress(const ctx *c, const char *fmt, ...)
{
    char line[256];
    va_list ap;

    if (!c->cfg->progress)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "bench: %6.1f s  %s\n", (double)(gpuipc_clock_ns() - c->t0) / 1e9, line);
}

static int lost(const ctx *c)
{
    return gpuipc_wire_broken(c->w) != NULL || gpuipc_stop_signal() != 0;
}

/* Free memory of the producer's GPU, or 0 if it cannot be read. */
static uint64_t free_mem(const ctx *c)
{
    uint64_t f = 0, total = 0;

    if (gpuipc_gpu_mem_info(c->env->gpu, &f, &total, NULL) != CUDA_SUCCESS)
        return 0;
    return f;
}

/* Runs one scenario with timing t. Returns 0, or -1 with the reason in note. */
static int scenario(ctx *c, const gpuipc_mech *m, uint64_t size, gpuipc_timing *t, char *note,
                    size_t len)
{
    gpuipc_scenario_ask ask = {.mech = m, .size = size, .index = c->index++,
                               .chunks = c->chunks, .uuid = c->uuid, .peer_uuid = c->peer_uuid,
                               .timing = t};
    gpuipc_result res;

    if (lost(c)) {
        snprintf(note, len, "the session with the consumer is over: %s",
                 gpuipc_stop_signal() ? "interrupted" : gpuipc_wire_broken(c->w));
        return -1;
    }
    gpuipc_producer_scenario(c->env, c->w, &ask, &res);
    c->b->passed += res.status == GPUIPC_PASS;
    c->b->failed += res.status != GPUIPC_PASS;
    if (res.status != GPUIPC_PASS) {
        snprintf(note, len, "%s", res.reason);
        return -1;
    }
    return 0;
}

/* One latency row: a warm-up, then iters timed scenarios. */
static void run_row(ctx *c, const gpuipc_mech *m, uint64_t size, unsigned chunks,
                    gpuipc_bench_lat *row)
{
    static gpuipc_timing t;
    double st[GPUIPC_STAGE_COUNT];
    unsigned i, k;

    snprintf(row->name, sizeof(row->name), "%s", m->name);
    row->size = size;
    row->chunks = chunks;
    c->chunks = chunks;
    gpuipc_proc_reset_hwm();
    for (i = 0; i <= c->cfg->iters; i++) {
        memset(&t, 0, sizeof(t));
        t.flags = GPUIPC_BEGIN_TIMES;
        if (scenario(c, m, size, &t, row->note, sizeof(row->note)) < 0) {
            c->failed = 1;
            break;
        }
        if (t.nlaps != GPUIPC_LAP_COUNT) {
            snprintf(row->note, sizeof(row->note), "the consumer sent %u of %d timings",
                     t.nlaps, GPUIPC_LAP_COUNT);
            c->failed = 1;
            break;
        }
        if (t.laps[GPUIPC_LAP_HWM] > row->hwm_consumer)
            row->hwm_consumer = t.laps[GPUIPC_LAP_HWM];
        if (i == 0)
            continue; /* the warm-up */
        gpuipc_bench_derive(&t, st);
        for (k = 0; k < GPUIPC_STAGE_COUNT; k++)
            if (gpuipc_samples_add(&row->st[k], st[k]) < 0) {
                snprintf(row->note, sizeof(row->note), "out of memory");
                c->failed = 1;
                return;
            }
    }
    row->hwm_producer = gpuipc_proc_hwm();
    if (row->note[0] != '\0')
        for (k = 0; k < GPUIPC_STAGE_COUNT; k++)
            gpuipc_samples_free(&row->st[k]);
}

/* One bandwidth row: one scenario whose consumer runs the kernels and the
 * copy iters times each. */
static void run_bw(ctx *c, uint64_t size, gpuipc_bench_bw *row)
{
    static gpuipc_timing t;
    unsigned k, i;

    row->size = size;
    memset(&t, 0, sizeof(t));
    t.flags = GPUIPC_BEGIN_TIMES | GPUIPC_BEGIN_BANDWIDTH;
    t.iters = c->cfg->iters;
    for (k = 0; k < GPUIPC_BW_COUNT; k++) {
        t.bw[k] = calloc(t.iters, sizeof(uint64_t));
        if (t.bw[k] == NULL) {
            snprintf(row->note, sizeof(row->note), "out of memory");
            goto out;
        }
    }
    if (scenario(c, c->cfg->reference, size, &t, row->note, sizeof(row->note)) < 0)
        goto out;
    row->hwm_consumer = t.laps[GPUIPC_LAP_HWM];
    for (k = 0; k < GPUIPC_BW_COUNT; k++) {
        if (t.nbw[k] != t.iters) {
            snprintf(row->note, sizeof(row->note), "the consumer sent %u of %u samples",
                     t.nbw[k], t.iters);
            goto out;
        }
        for (i = 0; i < t.iters; i++)
            if (gpuipc_samples_add(&row->ns[k], (double)t.bw[k][i]) < 0) {
                snprintf(row->note, sizeof(row->note), "out of memory");
                goto out;
            }
    }
out:
    if (row->note[0] != '\0') {
        c->failed = 1;
        for (k = 0; k < GPUIPC_BW_COUNT; k++)
            gpuipc_samples_free(&row->ns[k]);
    }
    for (k = 0; k < GPUIPC_BW_COUNT; k++)
        free(t.bw[k]);
}

/* Leaves a row unmeasured, for want of memory. */
static void too_big(char *note, size_t len, uint64_t need, uint64_t avail)
{
    char a[32], b[32];

    snprintf(note, len, "needs %s of GPU memory, %s free",
             gpuipc_units_format_size(need, a, sizeof(a)),
             gpuipc_units_format_size(avail, b, sizeof(b)));
}

static void section_latency(ctx *c)
{
    size_t i;

    for (i = 0; i < c->cfg->nlat && c->b->nlat < GPUIPC_BENCH_ROWS; i++) {
        progress(c, "latency: %s, %u scenarios", c->cfg->lat[i]->name, c->cfg->iters + 1);
        run_row(c, c->cfg->lat[i], c->cfg->size,
                strstr(c->cfg->lat[i]->name, "chunks") != NULL ? c->cfg->latency_chunks : 1,
                &c->b->lat[c->b->nlat++]);
    }
    c->chunks = 0;
}

static void section_bandwidth(ctx *c)
{
    static const uint64_t sizes[] = {64 * MiB, GiB, 4 * GiB};
    size_t i;

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        gpuipc_bench_bw *row = &c->b->bw[c->b->nbw++];
        uint64_t avail = free_mem(c);
        char h[32];

        row->a = row->b = c->cfg->device;
        /* The producer's buffer, the consumer's two local ones, and room. */
        if (3 * sizes[i] + GiB > avail) {
            row->size = sizes[i];
            too_big(row->note, sizeof(row->note), 3 * sizes[i] + GiB, avail);
            continue;
        }
        progress(c, "bandwidth: %s, %u runs of each operation",
                 gpuipc_units_format_size(sizes[i], h, sizeof(h)), c->cfg->iters);
        run_bw(c, sizes[i], row);
    }
}

static void section_scaling(ctx *c)
{
    uint64_t size;
    unsigned n;
    char h[32];

    for (size = 2 * MiB; c->b->nsizes < GPUIPC_BENCH_ROWS; size *= 4) {
        gpuipc_bench_lat *row;
        uint64_t avail = free_mem(c);

        if (size > SIZE_SCALING_MAX)
            size = SIZE_SCALING_MAX; /* the end point, after 8 GiB */
        row = &c->b->sizes[c->b->nsizes++];
        if (size + GiB > avail) {
            snprintf(row->name, sizeof(row->name), "%s", c->cfg->reference->name);
            row->size = size;
            too_big(row->note, sizeof(row->note), size + GiB, avail);
            break;
        }
        progress(c, "size scaling: %s, %u scenarios",
                 gpuipc_units_format_size(size, h, sizeof(h)), c->cfg->iters + 1);
        run_row(c, c->cfg->reference, size, 1, row);
        if (size == SIZE_SCALING_MAX)
            break;
    }
    for (n = 1; c->cfg->chunked != NULL && n <= 4096 && c->b->nchunks < GPUIPC_BENCH_ROWS;
         n *= 4) {
        gpuipc_bench_lat *row = &c->b->chunks[c->b->nchunks++];
        uint64_t avail = free_mem(c);

        if ((uint64_t)n * 2 * MiB + GiB > avail) {
            snprintf(row->name, sizeof(row->name), "%s", c->cfg->chunked->name);
            row->size = (uint64_t)n * 2 * MiB;
            row->chunks = n;
            too_big(row->note, sizeof(row->note), row->size + GiB, avail);
            break;
        }
        progress(c, "chunk scaling: %u chunks of 2 MiB, %u scenarios", n, c->cfg->iters + 1);
        run_row(c, c->cfg->chunked, (uint64_t)n * 2 * MiB, n, row);
    }
    c->chunks = 0;
}

static void section_cross(ctx *c)
{
    int a, bb;
    gpuipc_err err;

    for (a = 0; a < c->b->ngpus; a++)
        for (bb = 0; bb < c->b->ngpus && c->b->ncross < GPUIPC_BENCH_CROSS; bb++) {
            gpuipc_bench_bw *row = &c->b->cross[c->b->ncross++];

            row->a = a;
            row->b = bb;
            row->size = GiB;
            if (gpuipc_gpu_point(c->env, a, bb, c->uuid, c->peer_uuid, &err) < 0) {
                snprintf(row->note, sizeof(row->note), "%s", err.msg);
                c->failed = 1;
                continue;
            }
            progress(c, "cross-device: memory on GPU %d, consumer on GPU %d", a, bb);
            run_bw(c, GiB, row);
        }
    if (gpuipc_gpu_point(c->env, c->cfg->device, c->cfg->device, c->uuid, c->peer_uuid,
                         &err) < 0) {
        gpuipc_log_say("--bench: back to GPU %d: %s", c->cfg->device, err.msg);
        c->failed = 1;
    }
}

static void describe_device(ctx *c)
{
    gpuipc_bench *b = c->b;
    time_t now = time(NULL);
    struct tm tm;
    int l2 = 0;

    snprintf(b->device, sizeof(b->device), "%s", gpuipc_gpu_name(c->env->gpu));
    gpuipc_units_format_uuid(gpuipc_gpu_uuid(c->env->gpu), b->uuid, sizeof(b->uuid));
    gpuipc_cudrv_version(b->driver, sizeof(b->driver));
    if (gmtime_r(&now, &tm) != NULL)
        strftime(b->timestamp, sizeof(b->timestamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(b->version, sizeof(b->version), "%s", c->cfg->version);
    b->ordinal = c->cfg->device;
    b->iters = c->cfg->iters;
    b->size = c->cfg->size;
    b->timeout_ns = c->env->timeout_ns;
    if (gpuipc_gpu_attr(c->env->gpu, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &l2, NULL) ==
        CUDA_SUCCESS)
        b->l2_bytes = (uint64_t)l2;
    if (gpuipc_gpu_count(&b->ngpus, NULL) < 0)
        b->ngpus = 1;
}

int gpuipc_bench_run(gpuipc_env *env, gpuipc_wire *w, const gpuipc_bench_cfg *cfg,
                     gpuipc_bench *b)
{
    ctx c = {.env = env, .w = w, .cfg = cfg, .b = b, .t0 = gpuipc_clock_ns()};
    uint64_t hwm;

    memcpy(c.uuid, gpuipc_gpu_uuid(env->gpu), GPUIPC_UUID_LEN);
    describe_device(&c);
    snprintf(b->reference, sizeof(b->reference), "%s",
             cfg->reference != NULL ? cfg->reference->name : "-");
    printf("# gpuipc_test --bench: %s (GPU %d), driver %s, %s\n", b->device, b->ordinal,
           b->driver, b->timestamp);
    /* Scaling first: its rows' peak RSS (the RSS target's) is then the
     * reference mechanism's own, not what other mechanisms left in this
     * process (on an H100, mempool-ipc leaves the producer 15 MiB more
     * resident after its pool is destroyed). The tables print in their
     * usual order at the end. */
    gpuipc_proc_reset_hwm();
    if (cfg->reference != NULL)
        section_scaling(&c);
    section_latency(&c);
    hwm = gpuipc_proc_hwm();
    if (cfg->reference != NULL)
        section_bandwidth(&c);
    if (hwm > b->hwm_producer)
        b->hwm_producer = hwm;
    {
        size_t i;

        for (i = 0; i < b->nsizes; i++)
            if (b->sizes[i].hwm_producer > b->hwm_producer)
                b->hwm_producer = b->sizes[i].hwm_producer;
    }
    if (cfg->reference != NULL && b->ngpus >= 2)
        section_cross(&c);
    gpuipc_bench_print_latency(stdout, b);
    if (cfg->reference != NULL) {
        gpuipc_bench_print_bandwidth(stdout, b);
        gpuipc_bench_print_scaling(stdout, b);
    }
    if (b->ncross > 0)
        gpuipc_bench_print_cross(stdout, b);
    gpuipc_bench_print_floor(stdout, b);
    gpuipc_bench_print_targets(stdout, b);
    progress(&c, "done%s", c.failed ? ", with failures (see the tables)" : "");
    return c.failed ? 1 : 0;
}
