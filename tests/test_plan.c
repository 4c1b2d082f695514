/* SPDX-License-Identifier: Apache-2.0 */
/* test_plan.c: lib/run/plan.c, the plan of a run over a node's GPUs:
 * --device's list, the ring of the default run, every ordered pair in
 * rounds of disjoint pairs (N from 1 to 72), and the verdicts gathered per
 * GPU and per pair; and lib/run/cellset.c, the run's cells and their
 * census; and lib/run/phase_loop.c, phases whose cells run at once and
 * the counts at their ends. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cause.h"
#include "core/clock.h"
#include "run/cellset.h"
#include "run/phase_loop.h"
#include "run/plan.h"
#include "helpers.h"
#include "suites.h"

static int ids[80];

static void setup(void)
{
    int i;

    for (i = 0; i < 80; i++)
        ids[i] = i;
}

START_TEST(test_plan_devices_all_and_lists)
{
    int out[16];
    size_t n;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_plan_devices("all", 4, out, 16, &n, &e), 0);
    ck_assert_uint_eq(n, 4);
    ck_assert_int_eq(out[3], 3);
    ck_assert_int_eq(gpuipc_plan_devices("2,0,4-6", 8, out, 16, &n, &e), 0);
    ck_assert_uint_eq(n, 5);
    ck_assert_int_eq(out[0], 2);
    ck_assert_int_eq(out[1], 0);
    ck_assert_int_eq(out[2], 4);
    ck_assert_int_eq(out[4], 6);
    ck_assert_int_eq(gpuipc_plan_devices("7", -1, out, 16, &n, &e), 0); /* syntax only */
    ck_assert_int_eq(gpuipc_plan_devices("all", -1, out, 16, &n, &e), 0);
}
END_TEST

static const struct {
    const char *spec;
    int count;
    const char *says;
} bad_devices[] = {
    {"", 4, "--device: empty"},
    {"x", 4, "'x' is not an ordinal"},
    {"-1", 4, "'-1' is not an ordinal"},
    {"1,", 4, "ends with a comma"},
    {"1,,2", 4, "'' is not an ordinal"},
    {"3-1", 4, "'3-1' is not an ordinal or a range"},
    {"0,0", 4, "GPU 0 is named twice"},
    {"0-2,1", 4, "GPU 1 is named twice"},
    {"4", 4, "no GPU 4 here (4 visible, ordinals from 0"},
    {"all", 0, "this process sees no GPU"},
    {"99999999999", -1, "is not an ordinal"},
    {"2147483648", -1, "is not an ordinal"},
    {"1024", -1, "is not an ordinal"},
};

START_TEST(test_plan_devices_refuses_bad_lists)
{
    int out[16];
    size_t n;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_plan_devices(bad_devices[_i].spec, bad_devices[_i].count, out, 16,
                                         &n, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, bad_devices[_i].says) != NULL, "'%s': %s",
                  bad_devices[_i].spec, e.msg);
}
END_TEST

/* The rounds of pairs[0..np) hold disjoint pairs: no GPU twice in a round. */
static void rounds_are_disjoint(const gpuipc_plan_pair *p, size_t np, size_t ngpus)
{
    char *seen = calloc(ngpus, 1);
    size_t i, start = 0;

    ck_assert_ptr_nonnull(seen);
    for (i = 0; i < np; i++) {
        if (i > 0 && p[i].round != p[i - 1].round) {
            memset(seen, 0, ngpus);
            start = i;
        }
        ck_assert_msg(!seen[p[i].a] && !seen[p[i].b], "round %u: GPU %d or %d twice (pairs %zu "
                      "to %zu)", p[i].round, p[i].a, p[i].b, start, i);
        seen[p[i].a] = seen[p[i].b] = 1;
    }
    free(seen);
}

/* The ring for n GPUs: every GPU exports once and imports once, to another. */
START_TEST(test_plan_ring_proves_every_gpu_both_ways)
{
    gpuipc_plan_pair p[80];
    size_t n = (size_t)_i, np = gpuipc_plan_ring(ids, n, p), i;
    int exports[80] = {0}, imports[80] = {0};
    unsigned rounds = 0;

    ck_assert_uint_eq(np, n < 2 ? 0 : n);
    for (i = 0; i < np; i++) {
        ck_assert_int_ne(p[i].a, p[i].b);
        exports[p[i].a]++;
        imports[p[i].b]++;
        if (p[i].round + 1 > rounds)
            rounds = p[i].round + 1;
    }
    for (i = 0; n >= 2 && i < n; i++)
        ck_assert_msg(exports[i] == 1 && imports[i] == 1, "n %zu: GPU %zu exports %d, imports "
                      "%d", n, i, exports[i], imports[i]);
    /* Disjoint within each round, taken in round order. */
    for (i = 0; i < rounds; i++) {
        gpuipc_plan_pair in[80];
        size_t k = 0, j;

        for (j = 0; j < np; j++)
            if (p[j].round == i)
                in[k++] = p[j];
        rounds_are_disjoint(in, k, n);
    }
    ck_assert_uint_le(rounds, n < 2 ? 0 : n % 2 ? 3 : 2);
}
END_TEST

/* Every ordered pair of n GPUs (1 to 72) once, in rounds of disjoint pairs,
 * both directions of each, in 2(n-1) rounds (2n for an odd n). */
START_TEST(test_plan_all_pairs_once_in_disjoint_rounds)
{
    size_t n = (size_t)_i, i, np = n * (n - 1);
    unsigned nrounds;
    gpuipc_plan_pair *p = gpuipc_plan_all_pairs(ids, n, &nrounds);
    char *met;

    if (n < 2) {
        ck_assert_ptr_null(p);
        ck_assert_uint_eq(nrounds, 0);
        return;
    }
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(nrounds, 2 * (n % 2 ? n : n - 1));
    met = calloc(n * n, 1);
    ck_assert_ptr_nonnull(met);
    for (i = 0; i < np; i++) {
        ck_assert_int_ne(p[i].a, p[i].b);
        ck_assert_msg(!met[p[i].a * n + p[i].b], "n %zu: %d->%d twice", n, p[i].a, p[i].b);
        met[p[i].a * n + p[i].b] = 1;
        ck_assert_uint_lt(p[i].round, nrounds);
        ck_assert(i == 0 || p[i].round >= p[i - 1].round); /* in round order */
    }
    rounds_are_disjoint(p, np, n);
    free(met);
    free(p);
}
END_TEST

/* The schedule of the default run and --pairs all, for 1 to 72 GPUs:
 * every ordered pair once, in n - 1 phases; in each phase every GPU exports
 * once and imports once (so a phase's pairs could all run at once), and
 * phase k is each GPU exporting to the one k places after it. */
START_TEST(test_plan_phases_each_gpu_exports_and_imports_once_per_phase)
{
    size_t n = (size_t)_i, i, np = n * (n - 1);
    unsigned nphases = 99, k;
    gpuipc_plan_pair *p = gpuipc_plan_phases(ids, n, &nphases);
    char *met;

    if (n < 2) {
        ck_assert_ptr_null(p);
        ck_assert_uint_eq(nphases, 0);
        return;
    }
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(nphases, n - 1);
    met = calloc(n * n, 1);
    ck_assert_ptr_nonnull(met);
    for (i = 0; i < np; i++) {
        ck_assert_int_ne(p[i].a, p[i].b);
        ck_assert_msg(!met[p[i].a * n + p[i].b], "n %zu: %d->%d twice", n, p[i].a, p[i].b);
        met[p[i].a * n + p[i].b] = 1;
        ck_assert_uint_ge(p[i].round, 1);
        ck_assert_uint_le(p[i].round, nphases);
        ck_assert(i == 0 || p[i].round >= p[i - 1].round); /* in phase order */
        ck_assert_int_eq((size_t)p[i].b, ((size_t)p[i].a + p[i].round) % n);
    }
    for (k = 1; k <= nphases; k++) {
        int exports[80] = {0}, imports[80] = {0};
        size_t in = 0;

        for (i = 0; i < np; i++)
            if (p[i].round == k) {
                exports[p[i].a]++;
                imports[p[i].b]++;
                in++;
            }
        ck_assert_uint_eq(in, n);
        for (i = 0; i < n; i++)
            ck_assert_msg(exports[i] == 1 && imports[i] == 1, "n %zu, phase %u: GPU %zu "
                          "exports %d, imports %d", n, k, i, exports[i], imports[i]);
    }
    free(met);
    free(p);
}
END_TEST

/* What one rank of --ranks plays in each phase, read back from the same
 * plan: it exports to the one k places after it and imports from the one k
 * places before, and over the phases to and from every other once. */
START_TEST(test_plan_phase_peers_give_each_rank_one_export_and_one_import)
{
    size_t n = (size_t)_i, i;
    unsigned nphases = 0, k;
    gpuipc_plan_pair *p = gpuipc_plan_phases(ids, n, &nphases);
    char *to_seen, *from_seen;
    int to, from;

    if (n < 2) {
        ck_assert_int_eq(gpuipc_plan_phase_peers(p, ids, n, 1, 0, &to, &from), -1);
        return;
    }
    to_seen = calloc(n * n, 1);
    from_seen = calloc(n * n, 1);
    ck_assert_ptr_nonnull(to_seen);
    ck_assert_ptr_nonnull(from_seen);
    for (k = 1; k <= nphases; k++)
        for (i = 0; i < n; i++) {
            to = from = -7;
            ck_assert_int_eq(gpuipc_plan_phase_peers(p, ids, n, k, i, &to, &from), 0);
            ck_assert_int_eq(to, (int)((i + k) % n));
            ck_assert_int_eq(from, (int)((i + n - k) % n));
            ck_assert_msg(!to_seen[i * n + (size_t)to] && !from_seen[i * n + (size_t)from],
                          "n %zu: rank %zu meets a peer twice", n, i);
            to_seen[i * n + (size_t)to] = from_seen[i * n + (size_t)from] = 1;
        }
    for (i = 0; i < n * n; i++)
        ck_assert_int_eq(to_seen[i] + from_seen[i], i / n == i % n ? 0 : 2);
    /* Out of range: no phase 0 (each alone) or n, no rank n. */
    ck_assert_int_eq(gpuipc_plan_phase_peers(p, ids, n, 0, 0, &to, &from), -1);
    ck_assert_int_eq(gpuipc_plan_phase_peers(p, ids, n, (unsigned)n, 0, &to, &from), -1);
    ck_assert_int_eq(gpuipc_plan_phase_peers(p, ids, n, 1, n, &to, &from), -1);
    free(to_seen);
    free(from_seen);
    free(p);
}
END_TEST

/* The pairs are the GPUs named, not their positions. */
START_TEST(test_plan_pairs_use_the_ordinals_given)
{
    int gpus[3] = {5, 2, 7};
    gpuipc_plan_pair ring[3];
    unsigned nr;
    gpuipc_plan_pair *all = gpuipc_plan_all_pairs(gpus, 3, &nr);
    gpuipc_plan_pair *ph = gpuipc_plan_phases(gpus, 3, &nr);
    size_t i;

    ck_assert_uint_eq(gpuipc_plan_ring(gpus, 3, ring), 3);
    ck_assert_int_eq(ring[0].a, 5);
    ck_assert_int_eq(ring[0].b, 2);
    ck_assert_int_eq(ring[2].a, 7);
    ck_assert_int_eq(ring[2].b, 5);
    ck_assert_ptr_nonnull(all);
    for (i = 0; i < 6; i++)
        ck_assert(all[i].a == 5 || all[i].a == 2 || all[i].a == 7);
    free(all);
    /* Phase 1 is the ring; phase 2 each GPU to the one two after it. */
    ck_assert_ptr_nonnull(ph);
    ck_assert(ph[0].a == 5 && ph[0].b == 2 && ph[2].a == 7 && ph[2].b == 5);
    ck_assert(ph[3].a == 5 && ph[3].b == 7 && ph[5].a == 7 && ph[5].b == 2);
    free(ph);
}
END_TEST

START_TEST(test_plan_verdicts_per_gpu_and_pair)
{
    int gpus[3] = {0, 1, 3};
    gpuipc_plan_verdicts v;

    ck_assert_int_eq(gpuipc_plan_verdicts_init(&v, gpus, 3), 0);
    gpuipc_plan_verdicts_add(&v, 0, 0, GPUIPC_PASS);
    gpuipc_plan_verdicts_add(&v, 1, 1, GPUIPC_PASS);
    gpuipc_plan_verdicts_add(&v, 1, 1, GPUIPC_SKIP);
    gpuipc_plan_verdicts_add(&v, 0, 1, GPUIPC_PASS);
    gpuipc_plan_verdicts_add(&v, 1, 3, GPUIPC_FAIL);
    gpuipc_plan_verdicts_add(&v, 3, 3, -1);          /* not run: not counted */
    gpuipc_plan_verdicts_add(&v, 2, 0, GPUIPC_FAIL); /* no GPU 2 in the plan */
    /* GPU 0: its own pass and the pair 0->1. */
    ck_assert_uint_eq(v.per_gpu[0].passed, 2);
    ck_assert_int_eq(gpuipc_plan_tally_verdict(&v.per_gpu[0]), GPUIPC_PASS);
    /* GPU 1 took part in the failed pair 1->3. */
    ck_assert_uint_eq(v.per_gpu[1].passed, 2);
    ck_assert_uint_eq(v.per_gpu[1].failed, 1);
    ck_assert_uint_eq(v.per_gpu[1].skipped, 1);
    ck_assert_int_eq(gpuipc_plan_tally_verdict(&v.per_gpu[1]), GPUIPC_FAIL);
    ck_assert_int_eq(gpuipc_plan_tally_verdict(&v.per_gpu[2]), GPUIPC_FAIL);
    ck_assert_uint_eq(v.matrix[1 * 3 + 2].failed, 1);
    ck_assert_uint_eq(v.matrix[0 * 3 + 1].passed, 1);
    ck_assert_int_eq(gpuipc_plan_tally_verdict(&v.matrix[2 * 3 + 0]), GPUIPC_SKIP); /* none */
    ck_assert_int_eq(gpuipc_plan_verdicts_index(&v, 3), 2);
    ck_assert_int_eq(gpuipc_plan_verdicts_index(&v, 2), -1);
    gpuipc_plan_verdicts_free(&v);
}
END_TEST

/* A GPU that fell off the bus (GPU 1: its own scenario fails, and so do
 * the ring's pairs 0->1 and 1->2) is the one that fails: GPU 0 passes. A
 * link that fails between two GPUs whose own scenarios pass (2 and 3)
 * fails both. Every scenario a GPU took part in is counted. */
START_TEST(test_plan_a_failed_pair_is_charged_to_the_failed_gpu)
{
    static const struct {
        int gpu, peer, status;
    } made[] = {
        {0, -1, GPUIPC_PASS}, {1, -1, GPUIPC_FAIL}, {2, -1, GPUIPC_PASS}, {3, -1, GPUIPC_PASS},
        {0, 1, GPUIPC_FAIL},  {1, 2, GPUIPC_FAIL},  {2, 3, GPUIPC_FAIL},  {3, 0, GPUIPC_PASS},
        {3, -1, -1}, /* not run: counts for nothing */
    };
    gpuipc_result r[9];
    gpuipc_plan_tally t;
    size_t k;

    memset(r, 0, sizeof(r));
    for (k = 0; k < 9; k++) {
        r[k].gpu = made[k].gpu;
        r[k].peer_gpu = made[k].peer;
        r[k].status = made[k].status;
    }
    ck_assert_int_eq(gpuipc_plan_gpu_verdict(r, 9, 0, &t), GPUIPC_PASS);
    ck_assert_uint_eq(t.failed, 1); /* counted, not charged */
    ck_assert_uint_eq(t.passed, 2);
    ck_assert_int_eq(gpuipc_plan_gpu_verdict(r, 9, 1, &t), GPUIPC_FAIL);
    ck_assert_int_eq(gpuipc_plan_gpu_verdict(r, 9, 2, &t), GPUIPC_FAIL);
    ck_assert_int_eq(gpuipc_plan_gpu_verdict(r, 9, 3, &t), GPUIPC_FAIL);
    ck_assert_uint_eq(t.passed + t.failed + t.skipped + t.stopped, 3);
    ck_assert_int_eq(gpuipc_plan_gpu_verdict(r, 9, 7, &t), GPUIPC_SKIP); /* no scenario */
}
END_TEST

/* Every GPU's verdict over the default run of 72 GPUs with 4 mechanisms
 * whose every pair failed while each GPU's own scenarios passed (a fabric
 * down: 20,448 failures across GPUs): each GPU fails, its counts whole, and
 * the 72 verdicts (the document's gpus, --prom's, the watchdog's document
 * at the deadline) take well under a second. Each failure across GPUs asks
 * whether the other GPU failed on its own; answering that by reading every
 * row again made the 72 verdicts take about 6 s here, and about a minute
 * with the 12 mechanisms that cross GPUs. */
START_TEST(test_plan_gpu_verdicts_of_72_gpus_take_one_pass_each)
{
    enum { N = 72, M = 4 };
    size_t n = (size_t)N * M + (size_t)N * (N - 1) * M, k = 0, p, m;
    gpuipc_result *r = calloc(n, sizeof(*r));
    gpuipc_plan_pair *pairs;
    gpuipc_plan_tally t;
    unsigned nphases;
    uint64_t t0, ns;
    int g;

    ck_assert_ptr_nonnull(r);
    pairs = gpuipc_plan_phases(ids, N, &nphases);
    ck_assert_ptr_nonnull(pairs);
    for (g = 0; g < N; g++)
        for (m = 0; m < M; m++, k++) {
            r[k].gpu = g;
            r[k].peer_gpu = -1;
            r[k].status = GPUIPC_PASS;
        }
    for (p = 0; p < (size_t)N * (N - 1); p++)
        for (m = 0; m < M; m++, k++) {
            r[k].gpu = pairs[p].a;
            r[k].peer_gpu = pairs[p].b;
            r[k].status = GPUIPC_FAIL;
        }
    ck_assert_uint_eq(k, n);
    t0 = gpuipc_clock_ns();
    for (g = 0; g < N; g++) {
        ck_assert_int_eq(gpuipc_plan_gpu_verdict(r, n, g, &t), GPUIPC_FAIL);
        ck_assert_uint_eq(t.passed, M);
        ck_assert_uint_eq(t.failed, 2 * (N - 1) * M);
    }
    ns = gpuipc_clock_ns() - t0;
    ck_assert_msg(ns < 2000000000ull, "the verdicts of 72 GPUs over %zu rows took %.2f s", n,
                  (double)ns / 1e9);
    free(pairs);
    free(r);
}
END_TEST

START_TEST(test_plan_a_stop_is_its_own_verdict)
{
    gpuipc_plan_tally t = {.passed = 3, .stopped = 1};

    ck_assert_int_eq(gpuipc_plan_tally_verdict(&t), GPUIPC_STOPPED);
    t.failed = 1;
    ck_assert_int_eq(gpuipc_plan_tally_verdict(&t), GPUIPC_FAIL);
    memset(&t, 0, sizeof(t));
    t.skipped = 2;
    ck_assert_int_eq(gpuipc_plan_tally_verdict(&t), GPUIPC_SKIP);
}
END_TEST

/* The compute-mode rule from made-up facts: DEFAULT lets both processes
 * in; PROHIBITED, EXCLUSIVE_PROCESS and an MPS daemon each keep them apart,
 * with a cause and a fix that name the GPU and never tell anyone to change
 * the mode for this check's sake alone. */
START_TEST(test_plan_compute_modes)
{
    gpuipc_cause c;
    char why[1024];

    ck_assert_int_eq(gpuipc_plan_mode_blocks(0, GPUIPC_PLAN_MODE_DEFAULT, 0, NULL, &c), 0);
    ck_assert_int_eq(gpuipc_plan_mode_blocks(0, -1, 0, NULL, &c), 0);
    ck_assert_int_eq(gpuipc_plan_mode_blocks(3, GPUIPC_PLAN_MODE_EXCLUSIVE_PROCESS, 0, NULL, &c), 1);
    gpuipc_cause_line(&c, why, sizeof(why));
    ck_assert_msg(strstr(why, "cause: GPU 3 is in compute mode EXCLUSIVE_PROCESS") != NULL &&
                  strstr(why, "fix: none needed for this check") != NULL, "%s", why);
    ck_assert_int_eq(gpuipc_plan_mode_blocks(1, GPUIPC_PLAN_MODE_PROHIBITED, 0, NULL, &c), 1);
    gpuipc_cause_line(&c, why, sizeof(why));
    ck_assert_msg(strstr(why, "cause: GPU 1 is in compute mode PROHIBITED") != NULL, "%s", why);
    ck_assert_int_eq(gpuipc_plan_mode_blocks(0, GPUIPC_PLAN_MODE_DEFAULT, 1, "/run/mps", &c), 1);
    gpuipc_cause_line(&c, why, sizeof(why));
    ck_assert_msg(strstr(why, "an MPS control daemon serves the GPUs (its pipe directory "
                          "/run/mps)") != NULL, "%s", why);
    /* MPS with EXCLUSIVE_PROCESS (its usual setting) is said as MPS. */
    ck_assert_int_eq(gpuipc_plan_mode_blocks(0, GPUIPC_PLAN_MODE_EXCLUSIVE_PROCESS, 1, NULL, &c), 1);
    gpuipc_cause_line(&c, why, sizeof(why));
    ck_assert_msg(strstr(why, "MPS control daemon") != NULL, "%s", why);
}
END_TEST

/* The run's cells as a watchdog sees them: none between a sizing and the
 * naming of the new cells, then every one, named; a table replaced is
 * kept, and at least as long as the count a reader may hold. */
START_TEST(test_plan_cells_are_shown_once_named)
{
    static const gpuipc_mech m = {.name = "memfd"};
    gpuipc_cellset cs;
    size_t i;

    gpuipc_cellset_init(&cs, 4);
    ck_assert_int_eq(gpuipc_cellset_size(&cs, 3), 0);
    ck_assert_uint_eq(gpuipc_cellset_count(&cs), 0);
    for (i = 0; i < 3; i++)
        gpuipc_cellset_name(&cs, i, &m, (int)i, (int)(i + 1) % 3, 0);
    gpuipc_cellset_publish(&cs, 3);
    ck_assert_uint_eq(gpuipc_cellset_count(&cs), 3);
    ck_assert_str_eq(cs.label[1], "memfd 1->2");
    ck_assert_str_eq(cs.ck_case[2], "memfd-gpu2to0");
    ck_assert_int_eq(cs.results[0].status, -1); /* not run until it runs */
    /* Sized again (fewer): hidden until named, and no shorter than before. */
    ck_assert_int_eq(gpuipc_cellset_size(&cs, 1), 0);
    ck_assert_uint_eq(gpuipc_cellset_count(&cs), 0);
    ck_assert_str_eq(cs.label[2], "");
    gpuipc_cellset_name(&cs, 0, &m, -1, -1, 0);
    gpuipc_cellset_publish(&cs, 1);
    ck_assert_uint_eq(gpuipc_cellset_count(&cs), 1);
    ck_assert_str_eq(cs.ck_case[0], "memfd-host");
    gpuipc_cellset_free(&cs);
    ck_assert_uint_eq(gpuipc_cellset_count(&cs), 0);
    ck_assert_ptr_null(cs.results);
}
END_TEST

/* The census of a run's cells, as its summary and its document count them:
 * a ring over 3 GPUs (every cell across two), each GPU alone (the exporter
 * is the importer), the run's own GPU (a < 0, a GPU mechanism) and host
 * memory; their times added, a cell that never ran adding 0; and the
 * census in the summary's words. */
START_TEST(test_plan_census_counts_where_cells_ran)
{
    static const gpuipc_mech gpu = {.name = "vmm", .needs_cuda = 1};
    static const gpuipc_mech host = {.name = "memfd"};
    gpuipc_cellset_census c;
    gpuipc_cellset cs;
    char text[96];
    size_t i;

    gpuipc_cellset_init(&cs, 1);
    ck_assert_int_eq(gpuipc_cellset_size(&cs, 8), 0);
    for (i = 0; i < 3; i++)
        gpuipc_cellset_name(&cs, i, &gpu, (int)i, (int)(i + 1) % 3, 0);
    gpuipc_cellset_name(&cs, 3, &gpu, 1, 1, 0);
    gpuipc_cellset_name(&cs, 4, &gpu, 2, 2, 0);
    gpuipc_cellset_name(&cs, 5, &gpu, -1, -1, 1); /* on the run's GPU, 1 */
    gpuipc_cellset_name(&cs, 6, &host, -1, -1, 1);
    gpuipc_cellset_name(&cs, 7, &host, -1, -1, 1);
    gpuipc_cellset_publish(&cs, 8);
    for (i = 0; i < 7; i++)
        cs.results[i].ns = 1000 * (i + 1); /* the last never ran: 0 */
    c = gpuipc_cellset_census_of(cs.results, gpuipc_cellset_count(&cs));
    ck_assert_uint_eq(c.cells, 8);
    ck_assert_uint_eq(c.across_gpus, 3);
    ck_assert_uint_eq(c.one_gpu, 3);
    ck_assert_uint_eq(c.host_memory, 2);
    ck_assert_uint_eq(c.ns, 28000);
    ck_assert_int_eq(gpuipc_cell_where_of(0, 1), GPUIPC_CELL_ACROSS_GPUS);
    ck_assert_int_eq(gpuipc_cell_where_of(1, 1), GPUIPC_CELL_ONE_GPU); /* the same GPU */
    ck_assert_int_eq(gpuipc_cell_where_of(1, -1), GPUIPC_CELL_ONE_GPU);
    ck_assert_int_eq(gpuipc_cell_where_of(-1, -1), GPUIPC_CELL_HOST_MEMORY);
    ck_assert_str_eq(gpuipc_cellset_census_text(&c, text, sizeof(text)),
                     "8 (3 on one GPU, 3 across GPUs, 2 in host memory)");
    c = gpuipc_cellset_census_of(NULL, 0);
    ck_assert_uint_eq(c.cells, 0);
    ck_assert_str_eq(gpuipc_cellset_census_text(&c, text, sizeof(text)), "0");
    c.cells = c.across_gpus = 2;
    ck_assert_str_eq(gpuipc_cellset_census_text(&c, text, sizeof(text)), "2 (2 across GPUs)");
    gpuipc_cellset_free(&cs);
}
END_TEST

/* The peer path between two GPUs, from faked facts: no path only where the
 * driver says no and NVML shows no NVLink (or cannot say); an NVLink, or
 * the driver's yes, or its silence, lets the cell run (a refusal there is
 * a failure, diagnose's). */
START_TEST(test_plan_no_peer_path_from_the_facts)
{
    static const struct {
        int can_access, nvlink, none;
        const char *says;
    } cases[] = {
        {0, 0, 1, "no peer path from GPU 1 to GPU 0's memory: the driver says GPU 1 cannot "
                  "access GPU 0 (cuDeviceCanAccessPeer 0) and NVML shows no NVLink between "
                  "them"},
        {0, -1, 1, "and NVML cannot say whether an NVLink joins them"},
        {0, 1, 0, NULL},
        {1, 0, 0, NULL},
        {1, 1, 0, NULL},
        {-1, 0, 0, NULL},
        {-1, -1, 0, NULL},
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gpuipc_plan_peer f = {cases[i].can_access, cases[i].nvlink};
        gpuipc_cause c;

        memset(&c, 0, sizeof(c));
        ck_assert_int_eq(gpuipc_plan_no_peer_path(0, 1, &f, &c), cases[i].none);
        if (cases[i].says != NULL) {
            ck_assert_msg(strstr(c.what, cases[i].says) != NULL, "case %zu: %s", i, c.what);
            ck_assert_msg(strstr(c.fix, "vmm-host-numa") != NULL, "case %zu: %s", i, c.fix);
        } else {
            ck_assert_str_eq(c.what, "");
        }
    }
}
END_TEST

/* ---- run/phase_loop: phases whose cells run at once -------------------------------------- */

/* Cells of a test's own: a phase's play may leave an FD open (a leak the
 * phase's count sees and no cell's), its second run one at a time may
 * leave one again (the leak named by a cell there). */
typedef struct fake_phases {
    int leak_in;        /* the phase whose play leaks an FD (-1: none) */
    int leak_again;     /* its second run leaks too, and a cell says so */
    int peer_drift_in;  /* the phase whose end brings the peer's drift (-1: none) */
    int stop_after;     /* the phase after which the run is stopped (-1: none) */
    int fds[16];
    unsigned nfds;
    unsigned played[4], again[4], stood[4], ended[4];
    char text[GPUIPC_ERR_LEN + 160];
} fake_phases;

static int fake_stop;

static size_t fake_cells(void *arg, size_t k)
{
    (void)arg;
    return k == 2 ? 0 : 3; /* phase 2 has no cells: passed over */
}

static void fake_leak(fake_phases *f)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

    ck_assert_int_ge(fd, 0);
    ck_assert_uint_lt(f->nfds, 16);
    f->fds[f->nfds++] = fd;
}

static void fake_play(void *arg, size_t k)
{
    fake_phases *f = arg;

    f->played[k]++;
    if ((int)k == f->leak_in)
        fake_leak(f);
    if ((int)k == f->stop_after)
        fake_stop = 1;
}

static int fake_end(void *arg, size_t k, char *drift, size_t len, gpuipc_err *err)
{
    fake_phases *f = arg;

    (void)err;
    if ((int)k == f->peer_drift_in)
        snprintf(drift, len, "the consumer: 1 FD leaked: fd 99 (/memfd:x (deleted))");
    return 0;
}

static unsigned fake_again(void *arg, size_t k)
{
    fake_phases *f = arg;

    f->again[k]++;
    if (f->leak_again && (int)k == f->leak_in) {
        fake_leak(f);
        return 1; /* the cell's own count named it */
    }
    return 0;
}

static void fake_stands(void *arg, size_t k, const char *text)
{
    fake_phases *f = arg;

    f->stood[k]++;
    snprintf(f->text, sizeof(f->text), "%s", text);
}

static int fake_stopped(void *arg)
{
    (void)arg;
    return fake_stop;
}

static void fake_ended(void *arg, size_t k)
{
    fake_phases *f = arg;

    f->ended[k]++;
}

/* Runs 4 phases of f; with_again 0: the cells cannot run again. */
static void fake_run(fake_phases *f, int with_again)
{
    gpuipc_log log = {0};
    gpuipc_phase_loop l;
    gpuipc_err err;
    unsigned i;

    log.level = GPUIPC_LOG_QUIET;
    log.fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    ck_assert_int_ge(log.fd, 0);
    memset(&l, 0, sizeof(l));
    l.arg = f;
    l.nphases = 4;
    l.who = "the producer";
    l.log = &log;
    l.cells = fake_cells;
    l.play = fake_play;
    l.end = fake_end;
    l.again = with_again ? fake_again : NULL;
    l.stands = fake_stands;
    l.stopped = fake_stopped;
    l.ended = fake_ended;
    fake_stop = 0;
    ck_assert_int_eq(gpuipc_phase_loop_run(&l, &err), 0);
    for (i = 0; i < f->nfds; i++)
        close(f->fds[i]);
    close(log.fd);
}

static void fake_init(fake_phases *f)
{
    memset(f, 0, sizeof(*f));
    f->leak_in = f->peer_drift_in = f->stop_after = -1;
}

START_TEST(test_phase_loop_clean_phases_run_once)
{
    fake_phases f;

    fake_init(&f);
    fake_run(&f, 1);
    ck_assert_uint_eq(f.played[0], 1);
    ck_assert_uint_eq(f.played[1], 1);
    ck_assert_uint_eq(f.played[2], 0); /* no cells */
    ck_assert_uint_eq(f.played[3], 1);
    ck_assert_uint_eq(f.ended[0] + f.ended[1] + f.ended[3], 3);
    ck_assert_uint_eq(f.ended[2], 0);
    ck_assert_uint_eq(f.again[0] + f.again[1] + f.again[3], 0);
    ck_assert_uint_eq(f.stood[0] + f.stood[1] + f.stood[3], 0);
}
END_TEST

START_TEST(test_phase_loop_a_drift_that_does_not_come_back_still_fails)
{
    fake_phases f;

    fake_init(&f);
    f.leak_in = 1;
    fake_run(&f, 1);
    ck_assert_uint_eq(f.again[1], 1);
    ck_assert_uint_eq(f.again[0] + f.again[3], 0);
    ck_assert_uint_eq(f.stood[1], 1);
    ck_assert_uint_eq(f.stood[0] + f.stood[3], 0);
    ck_assert_msg(strstr(f.text, "phase 1: the producer holds what it did not at the phase's "
                         "beginning: 1 FD leaked: fd ") != NULL, "%s", f.text);
    ck_assert_msg(strstr(f.text, "(/dev/null)") != NULL, "%s", f.text);
    ck_assert_msg(strstr(f.text, "a drift not tied to a cell") != NULL, "%s", f.text);
    ck_assert_uint_eq(f.played[3], 1); /* the phases go on */
}
END_TEST

START_TEST(test_phase_loop_a_drift_that_comes_back_is_the_cells)
{
    fake_phases f;

    fake_init(&f);
    f.leak_in = 0;
    f.leak_again = 1;
    fake_run(&f, 1);
    ck_assert_uint_eq(f.again[0], 1);
    ck_assert_uint_eq(f.stood[0], 0); /* the cell that leaked again names it */
}
END_TEST

START_TEST(test_phase_loop_the_peers_drift_runs_the_phase_again)
{
    fake_phases f;

    fake_init(&f);
    f.peer_drift_in = 3;
    fake_run(&f, 1);
    ck_assert_uint_eq(f.again[3], 1);
    ck_assert_uint_eq(f.stood[3], 1);
    ck_assert_msg(strstr(f.text, "phase 3: the consumer: 1 FD leaked") != NULL, "%s", f.text);
}
END_TEST

START_TEST(test_phase_loop_a_drift_that_cannot_run_again_fails_at_once)
{
    fake_phases f;

    fake_init(&f);
    f.leak_in = 0;
    fake_run(&f, 0);
    ck_assert_uint_eq(f.stood[0], 1);
    ck_assert_msg(strstr(f.text, "cannot run again one at a time here: a drift not tied to a "
                         "cell") != NULL, "%s", f.text);
}
END_TEST

START_TEST(test_phase_loop_a_stop_ends_the_phases_and_blames_none)
{
    fake_phases f;

    fake_init(&f);
    f.leak_in = 1;
    f.stop_after = 1;
    fake_run(&f, 1);
    ck_assert_uint_eq(f.played[1], 1);
    ck_assert_uint_eq(f.played[3], 0);
    ck_assert_uint_eq(f.stood[1], 0); /* its cells did not all run again */
}
END_TEST

Suite *plan_suite(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("plan");

    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_plan_devices_all_and_lists);
    tcase_add_loop_test(tc, test_plan_devices_refuses_bad_lists, 0,
                        (int)(sizeof(bad_devices) / sizeof(bad_devices[0])));
    tcase_add_loop_test(tc, test_plan_ring_proves_every_gpu_both_ways, 0, 73);
    tcase_add_loop_test(tc, test_plan_all_pairs_once_in_disjoint_rounds, 1, 73);
    tcase_add_loop_test(tc, test_plan_phases_each_gpu_exports_and_imports_once_per_phase, 0, 73);
    tcase_add_loop_test(tc, test_plan_phase_peers_give_each_rank_one_export_and_one_import, 0,
                        73);
    tcase_add_test(tc, test_plan_pairs_use_the_ordinals_given);
    tcase_add_test(tc, test_plan_verdicts_per_gpu_and_pair);
    tcase_add_test(tc, test_plan_a_stop_is_its_own_verdict);
    tcase_add_test(tc, test_plan_cells_are_shown_once_named);
    tcase_add_test(tc, test_plan_census_counts_where_cells_ran);
    tcase_add_test(tc, test_plan_a_failed_pair_is_charged_to_the_failed_gpu);
    tcase_add_test(tc, test_plan_compute_modes);
    tcase_add_test(tc, test_plan_no_peer_path_from_the_facts);
    /* A bound on time means nothing under valgrind. */
    th_add_unless_valgrind(tc, test_plan_gpu_verdicts_of_72_gpus_take_one_pass_each,
                           "its bound on time is for native code");
    suite_add_tcase(s, tc);
    tc = tcase_create("phase_loop");
    tcase_add_test(tc, test_phase_loop_clean_phases_run_once);
    tcase_add_test(tc, test_phase_loop_a_drift_that_does_not_come_back_still_fails);
    tcase_add_test(tc, test_phase_loop_a_drift_that_comes_back_is_the_cells);
    tcase_add_test(tc, test_phase_loop_the_peers_drift_runs_the_phase_again);
    tcase_add_test(tc, test_phase_loop_a_drift_that_cannot_run_again_fails_at_once);
    tcase_add_test(tc, test_phase_loop_a_stop_ends_the_phases_and_blames_none);
    suite_add_tcase(s, tc);
    return s;
}
