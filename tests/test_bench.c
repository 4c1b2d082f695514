/* SPDX-License-Identifier: Apache-2.0 */
/* test_bench.c: --bench's arithmetic and reports on known figures: the
 * stages derived from raw timings, the tables' cells, the targets' verdicts,
 * and the JSON document (parsed back with the tests' validator and checked
 * for the very samples put in). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "core/json.h"
#include "helpers.h"
#include "suites.h"

#define US 1000.0
#define GiB (1ull << 30)

static char *doc;
static size_t doc_len;

/* A document is written to a file with an FD (the JSON writer's sink
 * writes to one), and read back into doc when it is closed. */
static FILE *open_doc(void)
{
    FILE *f = tmpfile();

    ck_assert_ptr_nonnull(f);
    return f;
}

static void close_doc(FILE *f)
{
    long len;

    ck_assert_int_eq(fflush(f), 0);
    ck_assert_int_ge(len = ftell(f), 0);
    doc_len = (size_t)len;
    ck_assert_ptr_nonnull(doc = malloc(doc_len + 1));
    rewind(f);
    ck_assert_uint_eq(fread(doc, 1, doc_len, f), doc_len);
    doc[doc_len] = '\0';
    fclose(f);
}

static void has(const char *needle)
{
    ck_assert_msg(strstr(doc, needle) != NULL, "'%s' not in:\n%s", needle, doc);
}

static void add(gpuipc_samples *s, double a, double b, double c)
{
    ck_assert_int_eq(gpuipc_samples_add(s, a), 0);
    ck_assert_int_eq(gpuipc_samples_add(s, b), 0);
    ck_assert_int_eq(gpuipc_samples_add(s, c), 0);
}

START_TEST(test_bench_derives_the_stages)
{
    gpuipc_timing t;
    double st[GPUIPC_STAGE_COUNT];

    memset(&t, 0, sizeof(t));
    t.alloc_ns = 100;
    t.export_ns = 700;
    t.export_start = 10000;
    t.offer_sent = 10800;
    t.laps[GPUIPC_LAP_OFFER_WAIT] = 9000;  /* the consumer waited first */
    t.laps[GPUIPC_LAP_OFFER_RECV] = 10830; /* 30 ns one way */
    t.laps[GPUIPC_LAP_IMPORT] = 500;       /* of which 80 + 5 + 60 + 7 inside */
    t.laps[GPUIPC_LAP_RESERVE] = 80;
    t.laps[GPUIPC_LAP_MAP] = 5;
    t.laps[GPUIPC_LAP_ACCESS] = 60;
    t.laps[GPUIPC_LAP_FETCH] = 7;
    t.laps[GPUIPC_LAP_MAPPED] = 11400;
    t.laps[GPUIPC_LAP_TOUCH] = 200;
    t.laps[GPUIPC_LAP_RELEASE] = 90;
    t.release_ns = 150;
    /* Two FDS batches: the first sent while the consumer waited (40 ns
     * late), the second queued while it was busy (its recvmsg: 3 ns). */
    t.nfds_sent = 2;
    t.fds_sent[0] = 11000;
    t.fds_sent[1] = 11100;
    t.nfds_recv = 4;
    t.fds_recv[0] = 10900;
    t.fds_recv[1] = 11040;
    t.fds_recv[2] = 11300;
    t.fds_recv[3] = 11303;
    gpuipc_bench_derive(&t, st);
    ck_assert_double_eq(st[GPUIPC_STAGE_ALLOC], 100);
    ck_assert_double_eq(st[GPUIPC_STAGE_EXPORT], 700);
    ck_assert_double_eq(st[GPUIPC_STAGE_TRANSFER], 30 + 7 + 40 + 3);
    ck_assert_double_eq(st[GPUIPC_STAGE_IMPORT], 500 - 80 - 5 - 60 - 7);
    ck_assert_double_eq(st[GPUIPC_STAGE_RESERVE], 80);
    ck_assert_double_eq(st[GPUIPC_STAGE_MAP], 5);
    ck_assert_double_eq(st[GPUIPC_STAGE_ACCESS], 60);
    ck_assert_double_eq(st[GPUIPC_STAGE_TOUCH], 200);
    ck_assert_double_eq(st[GPUIPC_STAGE_RELEASE_C], 90);
    ck_assert_double_eq(st[GPUIPC_STAGE_RELEASE_P], 150);
    ck_assert_double_eq(st[GPUIPC_STAGE_E2E], 1400);

    /* A batch the consumer never reported is not counted; nor is the import
     * allowed below zero when the laps inside exceed it. */
    t.nfds_recv = 2;
    t.laps[GPUIPC_LAP_IMPORT] = 10;
    gpuipc_bench_derive(&t, st);
    ck_assert_double_eq(st[GPUIPC_STAGE_TRANSFER], 30 + 7 + 40);
    ck_assert_double_eq(st[GPUIPC_STAGE_IMPORT], 0);
}
END_TEST

/* A small result set with known samples: one latency row (vmm, 1, 2, 3 us
 * and so on), one bandwidth row at 1 GiB, a 4096-chunk row, five one-shot
 * runs and one size row for the peak RSS. */
static void fill_known(gpuipc_bench *b)
{
    gpuipc_bench_lat *r;
    gpuipc_bench_bw *w;
    int k;

    memset(b, 0, sizeof(*b));
    snprintf(b->reference, sizeof(b->reference), "vmm");
    snprintf(b->device, sizeof(b->device), "Test GPU \"quoted\"");
    snprintf(b->driver, sizeof(b->driver), "1.2.3 (CUDA 13.0)");
    snprintf(b->timestamp, sizeof(b->timestamp), "2026-11-21T00:00:00Z");
    snprintf(b->version, sizeof(b->version), "0.1.0");
    b->iters = 3;
    b->size = 64u << 20;
    b->ngpus = 1;
    b->l2_bytes = 50u << 20;
    r = &b->lat[b->nlat++];
    snprintf(r->name, sizeof(r->name), "vmm");
    r->size = b->size;
    r->chunks = 1;
    for (k = 0; k < GPUIPC_STAGE_COUNT; k++)
        add(&r->st[k], 1 * US, 3 * US, 2 * US);
    r->st[GPUIPC_STAGE_E2E].v[1] = 900 * US; /* median 2 us: met */
    /* 1 GiB in 0.4 ms = 2684 GB/s local; imported 2% slower. */
    w = &b->bw[b->nbw++];
    w->size = GiB;
    for (k = 0; k < GPUIPC_BW_COUNT; k++)
        add(&w->ns[k], 400000, 400000, 400000);
    for (k = 0; k < 3; k++)
        w->ns[k].v[0] = w->ns[k].v[1] = w->ns[k].v[2] = 408000;
    r = &b->chunks[b->nchunks++];
    snprintf(r->name, sizeof(r->name), "vmm-chunks");
    r->chunks = 4096;
    r->size = 4096ull * (2u << 20);
    /* export 20, transfer 1, import 25, map 2 us per chunk: 48 us, met. */
    add(&r->st[GPUIPC_STAGE_EXPORT], 20 * US * 4096, 20 * US * 4096, 20 * US * 4096);
    add(&r->st[GPUIPC_STAGE_TRANSFER], 1 * US * 4096, 1 * US * 4096, 1 * US * 4096);
    add(&r->st[GPUIPC_STAGE_IMPORT], 25 * US * 4096, 25 * US * 4096, 25 * US * 4096);
    add(&r->st[GPUIPC_STAGE_MAP], 2 * US * 4096, 2 * US * 4096, 2 * US * 4096);
    r = &b->sizes[b->nsizes++];
    snprintf(r->name, sizeof(r->name), "vmm");
    r->size = 16 * GiB;
    r->hwm_producer = 60u << 20;
    r->hwm_consumer = 70u << 20;
    b->bare_hwm = 50u << 20; /* 20 MiB added: missed */
    add(&b->oneshot_ns, 0.40e9, 0.50e9, 0.45e9);
    add(&b->oneshot_ns, 0.44e9, 0.46e9, 0.9e9); /* median of six: 0.455 s */
}

START_TEST(test_bench_targets_on_known_samples)
{
    gpuipc_bench_target t[GPUIPC_BENCH_TARGETS];
    static gpuipc_bench b;
    size_t n;

    fill_known(&b);
    n = gpuipc_bench_targets(&b, t, GPUIPC_BENCH_TARGETS);
    ck_assert_uint_eq(n, 7);
    ck_assert_int_eq(t[0].met, 1); /* 1 GiB / 408 us = 2632 GB/s */
    ck_assert_str_eq(t[0].achieved, "2632 GB/s (the slowest)");
    ck_assert_int_eq(t[1].met, 1);
    ck_assert_str_eq(t[1].achieved, "0.980 (the lowest)");
    ck_assert_int_eq(t[2].met, 1);
    ck_assert_str_eq(t[2].achieved, "0.002 ms median");
    ck_assert_int_eq(t[3].met, 1);
    ck_assert_str_eq(t[3].achieved, "48.0 us");
    ck_assert_int_eq(t[4].met, 1);
    ck_assert_str_eq(t[4].achieved, "0.455 s");
    ck_assert_int_eq(t[5].met, 0);
    ck_assert_str_eq(t[5].achieved,
                     "+20.0 MiB (producer 60, consumer 70, bare context 50 MiB)");
    ck_assert_int_eq(t[6].met, -1); /* no floor, no cells: no verdict */
    ck_assert_str_eq(t[6].achieved, "- (the floor was not measured: no figure)");

    /* Slower kernels miss both bandwidth targets; no rows: not measured. */
    b.bw[0].ns[GPUIPC_BW_FILL_IMPORTED].v[1] = 500000; /* median 2147 GB/s */
    b.bw[0].ns[GPUIPC_BW_FILL_IMPORTED].v[2] = 500000;
    n = gpuipc_bench_targets(&b, t, GPUIPC_BENCH_TARGETS);
    ck_assert_int_eq(t[0].met, 0);
    ck_assert_int_eq(t[1].met, 0);
    b.nchunks = 0;
    b.oneshot_failed = 1;
    n = gpuipc_bench_targets(&b, t, GPUIPC_BENCH_TARGETS);
    ck_assert_int_eq(t[3].met, -1);
    ck_assert_str_eq(t[3].achieved, "-");
    ck_assert_int_eq(t[4].met, -1);
    ck_assert_str_eq(t[4].achieved, "0.455 s (a run failed)");
    b.bare_hwm = 0; /* the bare context not measured: no verdict on RSS */
    n = gpuipc_bench_targets(&b, t, GPUIPC_BENCH_TARGETS);
    ck_assert_int_eq(t[5].met, -1);
    ck_assert_str_eq(t[5].achieved, "-");
    ck_assert_uint_eq(gpuipc_bench_targets(&b, t, 2), 0); /* too little room */
    gpuipc_bench_free(&b);
}
END_TEST

/* The floor and the cells of a default run on 2 GPUs: cuInit 0.2 s and
 * two contexts of 0.1 s (the floor 0.4 s); 8 cells whose times add to
 * 0.2 s (0.1 s a GPU): the limit 0.4 + 1.25 x 0.1 = 0.525 s. */
static void fill_floor(gpuipc_bench *b)
{
    b->floor.measured = 1;
    b->floor.init_ns = 200000000;
    b->floor.ngpus = 2;
    b->floor.ctx_ns[0] = b->floor.ctx_ns[1] = 100000000;
    b->floor.ctx_sum_ns = 200000000;
    b->cells.measured = b->cells.read = 1;
    b->cells.census.cells = 8;
    b->cells.census.one_gpu = 4;
    b->cells.census.across_gpus = 4;
    b->cells.census.ns = 200000000;
    b->cells.ngpus = 2;
    b->cells.wall_ns = 0.5e9;
}

/* The default run's target: the one-shot median (0.455 s) against the
 * floor + 1.25 x the cells per GPU, met, missed, and no verdict for each
 * figure that was not measured, saying which. */
START_TEST(test_bench_default_run_against_its_floor)
{
    gpuipc_bench_target t[GPUIPC_BENCH_TARGETS];
    gpuipc_bench_floor_target ft;
    static gpuipc_bench b;

    fill_known(&b);
    fill_floor(&b);
    gpuipc_bench_floor_target_of(&b, &ft);
    ck_assert_int_eq(ft.met, 1);
    ck_assert_double_eq_tol(ft.oneshot_ns, 0.455e9, 1);
    ck_assert_double_eq_tol(ft.floor_ns, 0.4e9, 1);
    ck_assert_double_eq_tol(ft.per_gpu_ns, 0.1e9, 1);
    ck_assert_double_eq_tol(ft.limit_ns, 0.525e9, 1);
    ck_assert_uint_eq(gpuipc_bench_targets(&b, t, GPUIPC_BENCH_TARGETS), 7);
    ck_assert_int_eq(t[6].met, 1);
    ck_assert_str_eq(t[6].achieved, "0.455 s against 0.400 + 1.25 x 0.100 = 0.525 s");
    ck_assert_str_eq(t[6].target, "<= floor + 1.25 x (cells' times / GPUs)");
    /* A slower floor, 0.325 s: the limit 0.325 + 1.25 x 0.1 = 0.450 s, which
     * the median of 0.455 s misses. */
    b.floor.init_ns = 125000000;
    b.floor.ctx_sum_ns = 200000000;
    gpuipc_bench_floor_target_of(&b, &ft);
    ck_assert_double_eq_tol(ft.limit_ns, 0.45e9, 1);
    ck_assert_int_eq(ft.met, 0);
    gpuipc_bench_targets(&b, t, GPUIPC_BENCH_TARGETS);
    ck_assert_int_eq(t[6].met, 0);
    /* Each figure not measured: no verdict, and which one says why. */
    b.oneshot_failed = 1;
    gpuipc_bench_floor_target_of(&b, &ft);
    ck_assert_int_eq(ft.met, -1);
    ck_assert_str_eq(ft.why, "a one-shot run failed");
    b.cells.ngpus = 0;
    gpuipc_bench_floor_target_of(&b, &ft);
    ck_assert_str_eq(ft.why, "the cells ran on no GPU");
    b.cells.measured = 0;
    snprintf(b.cells.note, sizeof(b.cells.note), "the run exited 1, so its cells are not taken");
    gpuipc_bench_floor_target_of(&b, &ft);
    ck_assert_str_eq(ft.why, "the cells were not measured: the run exited 1, so its cells "
                     "are not taken");
    ck_assert(isnan(ft.limit_ns));
    b.floor.measured = 0;
    snprintf(b.floor.note, sizeof(b.floor.note), "GPU 1: cuDevicePrimaryCtxRetain: "
             "CUDA_ERROR_OUT_OF_MEMORY");
    gpuipc_bench_floor_target_of(&b, &ft);
    ck_assert_str_eq(ft.why, "the floor was not measured: GPU 1: cuDevicePrimaryCtxRetain: "
                     "CUDA_ERROR_OUT_OF_MEMORY");
    ck_assert(isnan(ft.floor_ns));
    gpuipc_bench_free(&b);
}
END_TEST

/* A default run's cells from its document: each counted where it ran, the
 * times added, the GPUs those that ran used (one not run left out); taken
 * only where the run exited 0. */
START_TEST(test_bench_cells_of_a_document)
{
    static const char text[] =
        "{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 0.5, \"scenarios\": ["
        "{\"name\": \"vmm\", \"verdict\": \"pass\", \"gpu\": 0, \"peer_gpu\": null, "
        "\"time_ms\": 10},"
        "{\"name\": \"vmm\", \"verdict\": \"pass\", \"gpu\": 1, \"peer_gpu\": null, "
        "\"time_ms\": 20},"
        "{\"name\": \"vmm 0->1\", \"verdict\": \"pass\", \"gpu\": 0, \"peer_gpu\": 1, "
        "\"time_ms\": 30},"
        "{\"name\": \"vmm 1->0\", \"verdict\": \"fail\", \"gpu\": 1, \"peer_gpu\": 0, "
        "\"time_ms\": 40},"
        "{\"name\": \"memfd\", \"verdict\": \"pass\", \"gpu\": null, \"peer_gpu\": null, "
        "\"time_ms\": 5.5},"
        "{\"name\": \"fabric\", \"verdict\": \"not run\", \"gpu\": 2, \"peer_gpu\": null, "
        "\"time_ms\": 0}]}";
    gpuipc_bench_cells c;
    gpuipc_doc_scan d;
    gpuipc_err err;

    ck_assert_msg(gpuipc_doc_scan_read(text, strlen(text), &d, &err) == 0, "%s", err.msg);
    gpuipc_bench_cells_of(&c, &d, 0); /* exited 0 */
    ck_assert_int_eq(c.measured, 1);
    ck_assert_uint_eq(c.census.cells, 6);
    ck_assert_uint_eq(c.census.one_gpu, 3);
    ck_assert_uint_eq(c.census.across_gpus, 2);
    ck_assert_uint_eq(c.census.host_memory, 1);
    ck_assert_uint_eq(c.census.ns, 105500000);
    ck_assert_uint_eq(c.ngpus, 2); /* GPU 2's only cell never ran */
    ck_assert_double_eq_tol(c.wall_ns, 0.5e9, 1);
    ck_assert_str_eq(c.note, "");
    gpuipc_bench_cells_of(&c, &d, 1 << 8); /* exited 1 */
    ck_assert_int_eq(c.measured, 0);
    ck_assert_int_eq(c.read, 1);
    ck_assert_str_eq(c.note, "the run exited 1, so its cells are not taken");
    gpuipc_doc_scan_free(&d);
}
END_TEST

/* The floor's table: each term, measured or not, and the verdict line. */
START_TEST(test_bench_floor_table)
{
    static gpuipc_bench b;
    FILE *f;

    fill_known(&b);
    fill_floor(&b);
    f = open_doc();
    gpuipc_bench_print_floor(f, &b);
    close_doc(f);
    has("## The default run against its floor");
    has("| default one-shot run, whole process, median of 6 | 0.455 |");
    has("| floor: cuInit | 0.200 |");
    has("| floor: GPU 1's primary context | 0.100 |");
    has("| floor, in all (cuInit and 2 contexts) | 0.400 |");
    has("| cells: 8 (4 on one GPU, 4 across GPUs), their times added | 0.200 |");
    has("| cells per GPU (2 GPUs) | 0.100 |");
    has("| floor + 1.25 x cells per GPU | 0.525 |");
    has("\n0.455 s against 0.400 + 1.25 x 0.100 = 0.525 s: met.\n");
    free(doc);
    b.floor.measured = 0;
    snprintf(b.floor.note, sizeof(b.floor.note), "the process forked for it gave no answer");
    f = open_doc();
    gpuipc_bench_print_floor(f, &b);
    close_doc(f);
    has("| floor | not measured: the process forked for it gave no answer |");
    has("\nNo verdict: the floor was not measured: the process forked for it gave no "
        "answer.\n");
    ck_assert_msg(strstr(doc, "| floor: cuInit") == NULL, "%s", doc);
    free(doc);
    gpuipc_bench_free(&b);
}
END_TEST

START_TEST(test_bench_tables_show_median_min_max)
{
    static gpuipc_bench b;
    FILE *f;

    fill_known(&b);
    f = open_doc();
    gpuipc_bench_print_latency(f, &b);
    gpuipc_bench_print_bandwidth(f, &b);
    gpuipc_bench_print_scaling(f, &b);
    gpuipc_bench_print_targets(f, &b);
    close_doc(f);
    has("## Latency of one allocation of 64 MiB");
    has("| vmm | 2.00 (1.00-3.00) | 2.00 (1.00-3.00) |");
    has("| 1 GiB | fill (bytes written) | 2632 (2632-2632) | 2684 (2684-2684) | 0.980 |");
    has("| 4096 (8 GiB) |");
    has("| 48.0 |"); /* per chunk */
    has("| peak RSS of either process above a bare CUDA context, vmm at every size up to "
        "16 GiB | <= 16 MiB added | +20.0 MiB (producer 60, consumer 70, bare context 50 MiB) "
        "| MISSED |");
    free(doc);
    gpuipc_bench_free(&b);
}
END_TEST

/* b alone as one JSON document on f (as --json's writer puts it in its
 * document, through a sink on the file's FD). */
static int write_bench_json(FILE *f, const gpuipc_bench *b)
{
    char mem[32 * 1024];
    gpuipc_sink sink;
    gpuipc_json j;

    if (fflush(f) != 0)
        return -1;
    gpuipc_sink_init(&sink, fileno(f), mem, sizeof(mem));
    gpuipc_json_init(&j, &sink);
    gpuipc_bench_json(&j, NULL, b);
    return gpuipc_json_finish(&j);
}

/* doc, the bench's JSON, held against the bench member of
 * docs/result.schema.json. */
static void bench_schema_holds(void)
{
    char why[512], *schema_text;
    jnode *schema, *parsed;
    size_t n;

    ck_assert_ptr_nonnull(schema_text = th_read_file("docs/result.schema.json", &n));
    ck_assert_msg((schema = js_parse(schema_text, why, sizeof(why))) != NULL, "%s", why);
    ck_assert_msg((parsed = js_parse(doc, why, sizeof(why))) != NULL, "%s", why);
    ck_assert_msg(js_check(js_get(js_get(schema, "properties"), "bench"), parsed, why,
                           sizeof(why)), "not the schema's bench: %s:\n%.2000s", why, doc);
    js_free(parsed);
    js_free(schema);
    free(schema_text);
}

START_TEST(test_bench_json_parses_and_holds_the_samples)
{
    static gpuipc_bench b;
    char why[128];
    FILE *f;

    fill_known(&b);
    f = open_doc();
    ck_assert_int_eq(write_bench_json(f, &b), 0);
    close_doc(f);
    ck_assert_msg(js_valid(doc, why, sizeof(why)), "%s:\n%s", why, doc);
    has("\"schema\": \"gpuipc_test/bench\",\n  \"schema_version\": 3,");
    has("\"name\": \"Test GPU \\\"quoted\\\"\"");
    has("\"driver\": \"1.2.3 (CUDA 13.0)\"");
    has("\"timestamp\": \"2026-11-21T00:00:00Z\"");
    has("\"iters\": 3");
    has("\"alloc\": [1000, 3000, 2000]"); /* every sample, in order, exact */
    has("\"export_to_mapped\": [1000, 900000, 2000]");
    has("\"fill_imported\": [408000, 408000, 408000]");
    has("\"oneshot_wall_ns\": [400000000, 500000000, 450000000, 440000000, 460000000, "
        "900000000]");
    has("\"vmhwm_bare_context\": 52428800");
    has("\"verdict\": \"missed\"");
    has("\"note\": null");
    /* No floor and no cells: nulls, not zeros, and no verdict. */
    has("\"floor\": {\n    \"measured\": false,\n    \"cuinit_ns\": null,");
    has("\"cells\": {\n    \"measured\": false,\n    \"count\": null,");
    has("\"limit_ns\": null,\n    \"verdict\": \"not measured\",\n    \"why\": \"the floor "
        "was not measured: no figure\"");
    bench_schema_holds();
    free(doc);
    fill_floor(&b);
    f = open_doc();
    ck_assert_int_eq(write_bench_json(f, &b), 0);
    close_doc(f);
    ck_assert_msg(js_valid(doc, why, sizeof(why)), "%s:\n%s", why, doc);
    has("\"cuinit_ns\": 200000000,\n    \"gpus\": 2,\n    \"context_ns\": [100000000, "
        "100000000],\n    \"contexts_ns\": 200000000,\n    \"total_ns\": 400000000");
    has("\"count\": 8,\n    \"on_one_gpu\": 4,\n    \"across_gpus\": 4,");
    has("\"time_sum_ns\": 200000000");
    has("\"factor\": 1.25,\n    \"oneshot_median_ns\": 455000000,\n    \"floor_ns\": "
        "400000000,\n    \"cells_per_gpu_ns\": 100000000,\n    \"limit_ns\": 525000000,\n    "
        "\"verdict\": \"met\",\n    \"why\": null");
    bench_schema_holds();
    free(doc);
    gpuipc_bench_free(&b);
}
END_TEST

START_TEST(test_json_writes_numbers_and_refuses_non_finite)
{
    const double v[] = {0, 1, -2.5, 123456789012345.0, NAN, INFINITY, 1e-9};
    char why[128], mem[16384];
    gpuipc_sink sink;
    gpuipc_json j;
    FILE *f = open_doc();

    gpuipc_sink_init(&sink, fileno(f), mem, sizeof(mem));
    gpuipc_json_init(&j, &sink);
    gpuipc_json_object(&j, NULL);
    gpuipc_json_numbers(&j, "v", v, sizeof(v) / sizeof(v[0]));
    gpuipc_json_numbers(&j, "none", NULL, 0);
    gpuipc_json_double(&j, "ratio", 0.9871);
    gpuipc_json_end(&j, '}');
    ck_assert_int_eq(gpuipc_json_finish(&j), 0);
    close_doc(f);
    ck_assert_msg(js_valid(doc, why, sizeof(why)), "%s:\n%s", why, doc);
    has("\"v\": [0, 1, -2.5, 123456789012345, null, null, 1e-09]");
    has("\"none\": []");
    has("\"ratio\": 0.9871");
    free(doc);
}
END_TEST

Suite *bench_suite(void)
{
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("bench");

    tcase_add_test(tc, test_bench_derives_the_stages);
    tcase_add_test(tc, test_bench_targets_on_known_samples);
    tcase_add_test(tc, test_bench_default_run_against_its_floor);
    tcase_add_test(tc, test_bench_cells_of_a_document);
    tcase_add_test(tc, test_bench_floor_table);
    tcase_add_test(tc, test_bench_tables_show_median_min_max);
    tcase_add_test(tc, test_bench_json_parses_and_holds_the_samples);
    tcase_add_test(tc, test_json_writes_numbers_and_refuses_non_finite);
    suite_add_tcase(s, tc);
    return s;
}
