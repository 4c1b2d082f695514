/* SPDX-License-Identifier: Apache-2.0 */
/* test_rank_results.c: a --ranks run's cells as the other outputs take
 * them (run/rank_results.c), without a launcher:
 * - the rows of --prom and --junit: one per scenario of each ordered pair,
 *   named "<mechanism> <p>-><c>" by ranks, every one of many made whole
 *   (a mechanism's longest name included); a pair failed as a whole is one
 *   row with its reason; a scenario that passed in a pair not proven is no
 *   pass; and the renderers' files from them;
 * - the culprits: a pair failed on the consumer's side names the consumer
 *   alone, a rank gone names that rank, a pass names none; and the
 *   gpuipc-ranks/1 document's "culprits" from them;
 * - the document of 72 ranks: every ordered pair once with its records'
 *   verdict, and one stuck rank the only culprit however far the waits
 *   for it spread; and its --junit report, a testsuite per rank, in time. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/outfile.h"
#include "core/status.h"
#include "core/step.h"
#include "run/junit.h"
#include "run/plan.h"
#include "run/prom.h"
#include "run/rank_results.h"
#include "run/result_doc.h"
#include "helpers.h"
#include "suites.h"

static const char *const who4[] = {"rank 0 (n0, GPU 0)", "rank 1 (n0, GPU 1)",
                                   "rank 2 (n1, GPU 0)", "rank 3 (n1, GPU 1)"};
static const char *const mechs2[] = {"memfd", "memfd-pidfd"};

/* cell with neither side's record (their scenarios freed), and no pair. */
#define empty_cell(cell) (gpuipc_cells_free((cell), 1), (cell)->p = (cell)->c = 0)

/* Frees cells (size x size) and their scenarios. */
static void free_cells(gpuipc_cell *cells, uint32_t size)
{
    gpuipc_cells_free(cells, size);
    free(cells);
}

/* Pair p -> c of a run over mechs (nmech of them) where every scenario
 * passed and both sides agree. */
static void proven(gpuipc_cell *cell, uint32_t p, uint32_t c, const char *const *mechs,
                   size_t nmech)
{
    size_t i;

    empty_cell(cell);
    cell->p = p;
    cell->c = c;
    cell->prod.have = cell->cons.have = 1;
    cell->prod.met = cell->cons.met = 1;
    cell->prod.code = cell->cons.code = GPUIPC_PASS;
    ck_assert_int_eq(gpuipc_cell_side_reserve(&cell->prod, nmech), 0);
    for (i = 0; i < nmech; i++) {
        snprintf(cell->prod.s[i].mech, sizeof(cell->prod.s[i].mech), "%s", mechs[i]);
        cell->prod.s[i].status = GPUIPC_PASS;
    }
    cell->cons.said_bye = 1;
    cell->cons.passed = (unsigned)nmech;
    cell->cons.own = GPUIPC_PASS;
}

/* size x size cells, every pair proven over mechs2. */
static gpuipc_cell *all_proven(uint32_t size)
{
    gpuipc_cell *cells = calloc((size_t)size * size, sizeof(*cells));
    uint32_t p, c;

    ck_assert_ptr_nonnull(cells);
    for (p = 0; p < size; p++)
        for (c = 0; c < size; c++)
            if (p != c)
                proven(&cells[(size_t)p * size + c], p, c, mechs2, 2);
    return cells;
}

/* Scenario i of cell failed on side, at step, for reason. */
static void fail_scenario(gpuipc_cell *cell, size_t i, int side, unsigned step,
                          const char *reason)
{
    gpuipc_cell_scenario *s = &cell->prod.s[i];

    s->status = GPUIPC_FAIL;
    s->side = side;
    s->step = step;
    snprintf(s->reason, sizeof(s->reason), "%s", reason);
    cell->prod.code = cell->cons.code = GPUIPC_FAIL;
    cell->cons.passed--;
    cell->cons.failed++;
}

/* The row named name, or NULL. */
static const gpuipc_result *row(const gpuipc_rank_results *rows, const char *name)
{
    size_t i;

    for (i = 0; i < rows->n; i++)
        if (strcmp(rows->results[i].mech, name) == 0)
            return &rows->results[i];
    return NULL;
}

START_TEST(test_rank_results_a_row_per_scenario_of_each_pair)
{
    gpuipc_cell *cells = all_proven(4);
    gpuipc_rank_results rows;
    const gpuipc_result *r;

    ck_assert_int_eq(gpuipc_rank_results_make(&rows, cells, 4, who4, mechs2, 2), 0);
    ck_assert_uint_eq(rows.n, 4 * 3 * 2);
    r = row(&rows, "memfd-pidfd 2->1");
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r->mechanism, "memfd-pidfd");
    ck_assert_int_eq(r->gpu, 2);
    ck_assert_int_eq(r->peer_gpu, 1);
    ck_assert_int_eq(r->status, GPUIPC_PASS);
    ck_assert_str_eq(r->reason, "");
    ck_assert_ptr_null(row(&rows, "memfd 1->1"));
    /* The rows own their text: the cells may go first. */
    free_cells(cells, 4);
    ck_assert_str_eq(rows.results[0].mech, "memfd 0->1");
    gpuipc_rank_results_free(&rows);
    ck_assert_ptr_null(rows.results);
}
END_TEST

/* Many rows, each named whole: the longest mechanism name a record carries
 * and two-digit ranks make a name the outcome's fixed label room (48) would
 * not be asked for: the rows carry their own. */
START_TEST(test_rank_results_every_row_of_many_ranks_whole)
{
    const uint32_t size = 24;
    char mech[GPUIPC_CELL_MECH_LEN], name[96];
    const char *const mechs[] = {mech, "memfd"};
    gpuipc_cell *cells = calloc((size_t)size * size, sizeof(*cells));
    const char **who = calloc(size, sizeof(*who));
    gpuipc_rank_results rows;
    uint32_t p, c;

    ck_assert_ptr_nonnull(cells);
    ck_assert_ptr_nonnull(who);
    memset(mech, 'm', sizeof(mech) - 1);
    mech[sizeof(mech) - 1] = '\0';
    for (p = 0; p < size; p++) {
        who[p] = "rank";
        for (c = 0; c < size; c++)
            if (p != c)
                proven(&cells[(size_t)p * size + c], p, c, mechs, 2);
    }
    ck_assert_int_eq(gpuipc_rank_results_make(&rows, cells, size, who, mechs, 2), 0);
    ck_assert_uint_eq(rows.n, (size_t)size * (size - 1) * 2);
    snprintf(name, sizeof(name), "%s 23->22", mech);
    ck_assert_ptr_nonnull(row(&rows, name));
    ck_assert_str_eq(row(&rows, name)->mechanism, mech);
    ck_assert_ptr_nonnull(row(&rows, "memfd 22->23"));
    gpuipc_rank_results_free(&rows);
    free_cells(cells, size);
    free(who);
}
END_TEST

/* A pair with no scenario (its producer never reported; another node) is
 * one row, "pair p->c", with the pair's verdict and reason. */
START_TEST(test_rank_results_a_pair_failed_whole_is_one_row)
{
    gpuipc_cell *cells = all_proven(4);
    gpuipc_rank_results rows;
    const gpuipc_result *r;

    gpuipc_cell_side_free(&cells[1 * 4 + 2].prod);
    empty_cell(&cells[3 * 4 + 0]);
    cells[3 * 4 + 0].p = 3;
    cells[3 * 4 + 0].prod.have = cells[3 * 4 + 0].cons.have = 1;
    cells[3 * 4 + 0].prod.code = cells[3 * 4 + 0].cons.code = GPUIPC_SKIP;
    snprintf(cells[3 * 4 + 0].prod.note, sizeof(cells[0].prod.note), "not on this node");
    ck_assert_int_eq(gpuipc_rank_results_make(&rows, cells, 4, who4, mechs2, 2), 0);
    ck_assert_uint_eq(rows.n, 10 * 2 + 2);
    ck_assert_ptr_null(row(&rows, "memfd 1->2"));
    r = row(&rows, "pair 1->2");
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r->mechanism, "pair");
    ck_assert_int_eq(r->status, GPUIPC_FAIL);
    ck_assert_msg(strstr(r->reason, "rank 1 (n0, GPU 1) never reported") != NULL, "%s",
                  r->reason);
    r = row(&rows, "pair 3->0");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->status, GPUIPC_SKIP);
    ck_assert_str_eq(r->reason, "not on this node");
    gpuipc_rank_results_free(&rows);
    free_cells(cells, 4);
}
END_TEST

/* The consumer never reported its side: the scenarios that passed prove
 * nothing, and their rows say why; one that failed keeps its own reason. */
START_TEST(test_rank_results_a_pass_in_a_pair_not_proven_is_no_pass)
{
    gpuipc_cell *cells = all_proven(3);
    gpuipc_rank_results rows;
    const gpuipc_result *r;

    fail_scenario(&cells[0 * 3 + 1], 1, GPUIPC_ROLE_CONSUMER, GPUIPC_STEP_VERIFY, "3 mismatches");
    cells[0 * 3 + 1].cons.have = 0;
    ck_assert_int_eq(gpuipc_rank_results_make(&rows, cells, 3, who4, mechs2, 2), 0);
    r = row(&rows, "memfd 0->1");
    ck_assert_int_eq(r->status, GPUIPC_FAIL);
    ck_assert_msg(strstr(r->reason, "the pair is not proven: rank 1 (n0, GPU 1) never "
                                    "reported its side") != NULL, "%s", r->reason);
    r = row(&rows, "memfd-pidfd 0->1");
    ck_assert_int_eq(r->status, GPUIPC_FAIL);
    ck_assert_str_eq(r->reason, "3 mismatches");
    ck_assert_int_eq(r->failed_side, GPUIPC_ROLE_CONSUMER);
    ck_assert_uint_eq(r->failure.step, GPUIPC_STEP_VERIFY);
    ck_assert_int_eq(row(&rows, "memfd 1->0")->status, GPUIPC_PASS);
    gpuipc_rank_results_free(&rows);
    free_cells(cells, 3);
}
END_TEST

/* The renderers take the rows: the textfile's series and the JUnit
 * testcases by rank, each GPU by its UUID. */
START_TEST(test_rank_results_render_as_prom_and_junit)
{
    static const char uuids[3][GPUIPC_OUTCOME_UUID_LEN] = {"GPU-a", "", "GPU-c"};
    gpuipc_cell *cells = all_proven(3);
    gpuipc_rank_results rows;
    gpuipc_outcome oc = {.version = "9.9", .commit = "abc", .mode = "ranks", .role = "rank 0",
                         .exit_code = 1, .result = "FAIL: 3 ranks", .uuids = uuids,
                         .nuuids = 3};
    char why[256], *text;
    size_t i, n;
    off_t len;
    int fd;

    fail_scenario(&cells[2 * 3 + 0], 0, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_EXPORT,
                  "export: <EPERM> & more");
    ck_assert_int_eq(gpuipc_rank_results_make(&rows, cells, 3, who4, mechs2, 2), 0);
    oc.results = rows.results;
    oc.n = rows.n;
    for (i = 0; i < rows.n; i++) {
        oc.passed += rows.results[i].status == GPUIPC_PASS;
        oc.failed += rows.results[i].status == GPUIPC_FAIL;
    }
    fd = memfd_create("prom", MFD_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(gpuipc_prom_write(fd, &oc), 0);
    len = lseek(fd, 0, SEEK_CUR);
    text = calloc(1, (size_t)len + 1);
    ck_assert_int_eq(pread(fd, text, (size_t)len, 0), len);
    ck_assert_msg(strstr(text, "\ngpuipc_test_scenario_success{mechanism=\"memfd\",gpu=\"2\","
                               "gpu_uuid=\"GPU-c\",peer_gpu=\"0\",peer_gpu_uuid=\"GPU-a\"} 0\n"),
                  "%s", text);
    ck_assert_msg(strstr(text, "\ngpuipc_test_scenario_success{mechanism=\"memfd-pidfd\","
                               "gpu=\"1\",peer_gpu=\"2\",peer_gpu_uuid=\"GPU-c\"} 1\n"),
                  "%s", text);
    ck_assert_msg(strstr(text, "gpuipc_test_scenarios{verdict=\"pass\"} 11\n"), "%s", text);
    free(text);
    close(fd);
    fd = memfd_create("junit", MFD_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(gpuipc_junit_write(fd, &oc), 0);
    len = lseek(fd, 0, SEEK_CUR);
    text = calloc(1, (size_t)len + 1);
    ck_assert_int_eq(pread(fd, text, (size_t)len, 0), len);
    n = (size_t)len;
    ck_assert_msg(th_xml_valid(text, n, why, sizeof(why)), "%s\n%s", why, text);
    ck_assert_msg(strstr(text, "<testcase name=\"memfd 2-&gt;0\" classname=\"gpuipc_test.gpu2\" "
                               "time=\"0.000\">\n      <failure message=\"export: &lt;EPERM&gt; "
                               "&amp; more\" type=\"producer export\">"), "%s", text);
    ck_assert_msg(strstr(text, "<testsuite name=\"GPU 2 (GPU-c)\" tests=\"4\" failures=\"1\""),
                  "%s", text);
    free(text);
    close(fd);
    gpuipc_rank_results_free(&rows);
    free_cells(cells, 3);
}
END_TEST

/* ---- culprits ---- */

START_TEST(test_rank_results_a_consumer_side_failure_names_the_consumer_alone)
{
    gpuipc_cell *cells = all_proven(3);

    fail_scenario(&cells[0 * 3 + 1], 1, GPUIPC_ROLE_CONSUMER, GPUIPC_STEP_VERIFY, "mismatch");
    ck_assert_uint_eq(gpuipc_cell_blames(&cells[0 * 3 + 1], who4, mechs2, 2),
                      GPUIPC_CELL_BLAMES_CONSUMER);
    /* On the producer's side: the producer alone. */
    fail_scenario(&cells[1 * 3 + 2], 0, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_EXPORT, "export");
    ck_assert_uint_eq(gpuipc_cell_blames(&cells[1 * 3 + 2], who4, mechs2, 2),
                      GPUIPC_CELL_BLAMES_PRODUCER);
    /* The producer timed out waiting for the consumer's report: the
     * consumer, whose wait it was. */
    fail_scenario(&cells[2 * 3 + 1], 0, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_REPORT, "timed out");
    cells[2 * 3 + 1].prod.s[0].errnum = ETIMEDOUT;
    ck_assert_uint_eq(gpuipc_cell_blames(&cells[2 * 3 + 1], who4, mechs2, 2),
                      GPUIPC_CELL_BLAMES_CONSUMER);
    /* ... and a consumer whose record says it was stuck in the session:
     * the consumer too, whatever the producer's scenario says. */
    cells[2 * 3 + 1].prod.s[0].errnum = 0;
    cells[2 * 3 + 1].cons.blame = GPUIPC_CELL_BLAME_SELF;
    ck_assert_uint_eq(gpuipc_cell_blames(&cells[2 * 3 + 1], who4, mechs2, 2),
                      GPUIPC_CELL_BLAMES_CONSUMER);
    /* On no known side: both. */
    fail_scenario(&cells[2 * 3 + 0], 0, 0, 0, "stopped");
    ck_assert_uint_eq(gpuipc_cell_blames(&cells[2 * 3 + 0], who4, mechs2, 2),
                      GPUIPC_CELL_BLAMES_PRODUCER | GPUIPC_CELL_BLAMES_CONSUMER);
    free_cells(cells, 3);
}
END_TEST

START_TEST(test_rank_results_a_gone_rank_is_named)
{
    gpuipc_cell *cells = all_proven(3);

    /* Rank 1 never reported: as producer and as consumer, it alone. */
    gpuipc_cell_side_free(&cells[1 * 3 + 0].prod);
    gpuipc_cell_side_free(&cells[1 * 3 + 2].prod);
    gpuipc_cell_side_free(&cells[0 * 3 + 1].cons);
    gpuipc_cell_side_free(&cells[2 * 3 + 1].cons);
    ck_assert_uint_eq(gpuipc_cell_blames(&cells[1 * 3 + 0], who4, mechs2, 2),
                      GPUIPC_CELL_BLAMES_PRODUCER);
    ck_assert_uint_eq(gpuipc_cell_blames(&cells[0 * 3 + 1], who4, mechs2, 2),
                      GPUIPC_CELL_BLAMES_CONSUMER);
    /* Rank 2, the consumer, died during the session, which its producer
     * saw: rank 2, though its scenario failed on the producer's side. */
    fail_scenario(&cells[0 * 3 + 2], 0, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_REPORT, "EOF");
    cells[0 * 3 + 2].prod.gone = 1;
    ck_assert_uint_eq(gpuipc_cell_blames(&cells[0 * 3 + 2], who4, mechs2, 2),
                      GPUIPC_CELL_BLAMES_CONSUMER);
    free_cells(cells, 3);
}
END_TEST

/* No session: the side whose note leads says whom it blames. */
START_TEST(test_rank_results_no_session_the_leading_side_names_the_culprit)
{
    gpuipc_cell *cells = all_proven(2);
    gpuipc_cell *c = &cells[0 * 2 + 1];

    empty_cell(c);
    c->p = 0;
    c->c = 1;
    c->prod.have = c->cons.have = 1;
    c->prod.code = c->cons.code = GPUIPC_FAIL;
    /* A wrong token: the consumer refused the producer (its note weighs
     * more than the producer's lost connection): the producer alone. */
    c->prod.weight = GPUIPC_CELL_PLAIN;
    c->prod.blame = GPUIPC_CELL_BLAME_PEER;
    snprintf(c->prod.note, sizeof(c->prod.note), "peer gone during hello");
    c->cons.weight = GPUIPC_CELL_SURE;
    c->cons.blame = GPUIPC_CELL_BLAME_PEER;
    snprintf(c->cons.note, sizeof(c->cons.note), "hello: refused the producer");
    ck_assert_uint_eq(gpuipc_cell_blames(c, who4, mechs2, 2), GPUIPC_CELL_BLAMES_PRODUCER);
    /* The consumer stuck in the driver, the producer timed out: the
     * consumer alone. */
    c->cons.weight = GPUIPC_CELL_STUCK;
    c->cons.blame = GPUIPC_CELL_BLAME_SELF;
    c->prod.weight = GPUIPC_CELL_VAGUE;
    ck_assert_uint_eq(gpuipc_cell_blames(c, who4, mechs2, 2), GPUIPC_CELL_BLAMES_CONSUMER);
    /* The leading note names nobody: the other's does (the producer
     * blamed its peer). */
    c->cons.blame = GPUIPC_CELL_BLAME_NONE;
    ck_assert_uint_eq(gpuipc_cell_blames(c, who4, mechs2, 2), GPUIPC_CELL_BLAMES_CONSUMER);
    /* Neither says: both. */
    c->prod.blame = GPUIPC_CELL_BLAME_NONE;
    ck_assert_uint_eq(gpuipc_cell_blames(c, who4, mechs2, 2),
                      GPUIPC_CELL_BLAMES_PRODUCER | GPUIPC_CELL_BLAMES_CONSUMER);
    free_cells(cells, 2);
}
END_TEST

/* The culprits follow the waits the records name: rank 0 waited for rank
 * 2 in pair 0 -> 2, rank 2 for rank 1 in pair 2 -> 1, where rank 1 was
 * stuck in the driver: every failed pair names rank 1 alone. */
START_TEST(test_rank_results_culprits_follow_the_waits_to_the_stuck_rank)
{
    gpuipc_cell *cells = all_proven(3);
    uint32_t *c, p, q;
    size_t k;

    for (k = 0; k < 9; k++) {
        gpuipc_cell *x = &cells[k];

        if (k / 3 == k % 3)
            continue;
        gpuipc_cell_side_free(&x->prod);
        gpuipc_cell_side_free(&x->cons);
        x->prod.have = x->cons.have = 1;
        x->prod.code = x->cons.code = GPUIPC_FAIL;
        snprintf(x->prod.note, sizeof(x->prod.note), "not reached");
        snprintf(x->cons.note, sizeof(x->cons.note), "not reached");
        x->prod.weight = x->cons.weight = GPUIPC_CELL_VAGUE;
    }
    /* Rank 1: stuck in cuMemImportFromShareableHandle (all its records). */
    cells[0 * 3 + 1].cons.weight = cells[2 * 3 + 1].cons.weight = GPUIPC_CELL_STUCK;
    cells[1 * 3 + 0].prod.weight = cells[1 * 3 + 2].prod.weight = GPUIPC_CELL_STUCK;
    cells[0 * 3 + 1].cons.blame = cells[2 * 3 + 1].cons.blame = GPUIPC_CELL_BLAME_SELF;
    cells[1 * 3 + 0].prod.blame = cells[1 * 3 + 2].prod.blame = GPUIPC_CELL_BLAME_SELF;
    /* Rank 2 waits in 2 -> 1 (in poll), rank 0 in 0 -> 2. */
    cells[2 * 3 + 1].prod.weight = GPUIPC_CELL_PLAIN;
    cells[2 * 3 + 1].prod.blame = GPUIPC_CELL_BLAME_WAITS;
    cells[0 * 3 + 2].prod.blame = GPUIPC_CELL_BLAME_WAITS;
    ck_assert_int_eq(gpuipc_rank_culprits(cells, 3, who4, mechs2, 2, &c), 0);
    for (p = 0; p < 3; p++)
        for (q = 0; q < 3; q++) {
            if (p == q)
                continue;
            ck_assert_msg((c[(p * 3 + q) * 2] == 1 && c[(p * 3 + q) * 2 + 1] == UINT32_MAX) ||
                          (c[(p * 3 + q) * 2] == UINT32_MAX && c[(p * 3 + q) * 2 + 1] == 1),
                          "pair %u -> %u: %u %u", p, q, c[(p * 3 + q) * 2],
                          c[(p * 3 + q) * 2 + 1]);
        }
    free(c);
    /* A pair that had its session and failed on the producer's side names
     * the producer, whatever the producer waited for later: rank 1 -> 2
     * here (rank 1 also is the stuck one, so take pair 2 -> 0 with rank 2
     * waiting for rank 1 later). */
    proven(&cells[2 * 3 + 0], 2, 0, mechs2, 2);
    fail_scenario(&cells[2 * 3 + 0], 0, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_EXPORT, "export");
    ck_assert_int_eq(gpuipc_rank_culprits(cells, 3, who4, mechs2, 2, &c), 0);
    ck_assert_msg((c[(2 * 3 + 0) * 2] == 2 && c[(2 * 3 + 0) * 2 + 1] == UINT32_MAX) ||
                  (c[(2 * 3 + 0) * 2] == UINT32_MAX && c[(2 * 3 + 0) * 2 + 1] == 2),
                  "pair 2 -> 0, failed on its producer's side: %u %u", c[(2 * 3 + 0) * 2],
                  c[(2 * 3 + 0) * 2 + 1]);
    free(c);
    /* Without the waits, pair 0 -> 2 would name rank 2, whom rank 0 waited
     * for: the chain is what clears it. */
    ck_assert_uint_eq(gpuipc_cell_blames(&cells[0 * 3 + 2], who4, mechs2, 2),
                      GPUIPC_CELL_BLAMES_CONSUMER);
    free_cells(cells, 3);
}
END_TEST

START_TEST(test_rank_results_a_pass_or_skip_names_none)
{
    gpuipc_cell *cells = all_proven(2);

    ck_assert_uint_eq(gpuipc_cell_blames(&cells[0 * 2 + 1], who4, mechs2, 2), 0);
    empty_cell(&cells[1 * 2 + 0]);
    cells[1 * 2 + 0].p = 1;
    cells[1 * 2 + 0].prod.have = cells[1 * 2 + 0].cons.have = 1;
    cells[1 * 2 + 0].prod.code = cells[1 * 2 + 0].cons.code = GPUIPC_SKIP;
    ck_assert_uint_eq(gpuipc_cell_blames(&cells[1 * 2 + 0], who4, mechs2, 2), 0);
    free_cells(cells, 2);
}
END_TEST

/* d written by gpuipc_ranks_doc_write at path (checked first, as rank 0
 * checks it before the run), read back and parsed. */
static jnode *write_ranks_doc(const char *path, const gpuipc_ranks_doc *d)
{
    gpuipc_outfile file = {.dirfd = -1};
    gpuipc_err err;
    char why[256], *text;
    jnode *doc;
    size_t n;
    int checked = 1;

    ck_assert_msg(gpuipc_outfile_check(&file, path, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(gpuipc_ranks_doc_write(&file, &checked, path, "9.9", d), 0);
    gpuipc_outfile_close(&file);
    text = th_read_file(path, &n);
    ck_assert_ptr_nonnull(text);
    doc = js_parse(text, why, sizeof(why));
    ck_assert_msg(doc != NULL, "%s: %.2000s", why, text);
    free(text);
    return doc;
}

/* The document of a run of 4 ranks, cells judged, at path. */
static jnode *ranks_doc(const char *path, const gpuipc_cell *cells, int code)
{
    gpuipc_ranks_doc_rank ranks[4];
    gpuipc_ranks_doc d = {.code = code, .pmix = "test", .size = 4, .ranks = ranks,
                          .cells = cells, .who = who4, .mechs = mechs2, .nmech = 2};
    jnode *doc;
    int r;
    uint32_t *culprits;

    ck_assert_int_eq(gpuipc_rank_culprits(cells, 4, who4, mechs2, 2, &culprits), 0);
    d.culprits = culprits;
    memset(ranks, 0, sizeof(ranks));
    for (r = 0; r < 4; r++) {
        ranks[r].host = r < 2 ? "n0" : "n1";
        ranks[r].gpu = r == 3 ? -1 : r % 2;
        snprintf(ranks[r].gpu_uuid, sizeof(ranks[r].gpu_uuid), "GPU-%d", r);
    }
    doc = write_ranks_doc(path, &d);
    free(culprits);
    return doc;
}

START_TEST(test_rank_results_the_document_names_the_culprits)
{
    char dir[] = "/tmp/gpuipc-culprits-XXXXXX", path[64];
    gpuipc_cell *cells = all_proven(4);
    const jnode *culprits, *c;
    jnode *doc;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/doc.json", dir);
    /* A pass: an empty array. */
    doc = ranks_doc(path, cells, GPUIPC_PASS);
    culprits = js_get(doc, "culprits");
    ck_assert_ptr_nonnull(culprits);
    ck_assert_uint_eq(js_len(culprits), 0);
    ck_assert_ptr_null(js_at(culprits, 0));
    js_free(doc);
    /* 0 -> 1 failed on the consumer's side; rank 3 (no GPU) never reported. */
    fail_scenario(&cells[0 * 4 + 1], 0, GPUIPC_ROLE_CONSUMER, GPUIPC_STEP_VERIFY, "mismatch");
    gpuipc_cell_side_free(&cells[3 * 4 + 0].prod);
    gpuipc_cell_side_free(&cells[3 * 4 + 1].prod);
    gpuipc_cell_side_free(&cells[3 * 4 + 2].prod);
    gpuipc_cell_side_free(&cells[2 * 4 + 3].cons);
    doc = ranks_doc(path, cells, GPUIPC_FAIL);
    culprits = js_get(doc, "culprits");
    ck_assert_uint_eq(js_len(culprits), 2);
    c = js_at(culprits, 0);
    ck_assert_int_eq((int)js_num(js_get(c, "rank")), 1);
    ck_assert_str_eq(js_str(js_get(c, "node")), "n0");
    ck_assert_str_eq(js_str(js_get(c, "gpu_uuid")), "GPU-1");
    ck_assert_uint_eq(js_len(js_get(c, "pairs")), 1);
    ck_assert_str_eq(js_str(js_at(js_get(c, "pairs"), 0)), "0->1");
    c = js_at(culprits, 1);
    ck_assert_int_eq((int)js_num(js_get(c, "rank")), 3);
    ck_assert_str_eq(js_str(js_get(c, "node")), "n1");
    ck_assert_ptr_nonnull(js_get(c, "gpu_uuid"));
    ck_assert_ptr_null(js_str(js_get(c, "gpu_uuid"))); /* null: no GPU */
    ck_assert_uint_eq(js_len(js_get(c, "pairs")), 4);
    ck_assert_str_eq(js_str(js_at(js_get(c, "pairs"), 0)), "2->3");
    ck_assert_str_eq(js_str(js_at(js_get(c, "pairs"), 1)), "3->0");
    ck_assert_str_eq(js_str(js_at(js_get(c, "pairs"), 3)), "3->2");
    js_free(doc);
    th_remove_tree(dir);
    free_cells(cells, 4);
}
END_TEST

/* ---- 72 ranks: every ordered pair in the document (issue 38) ---- */

enum { MANY = 72 };

/* Rank r of a run of MANY: 4 ranks a node, each its own GPU. */
static char many_who_text[MANY][48];
static const char *many_who[MANY];

static void many_ranks(gpuipc_ranks_doc_rank *ranks)
{
    static char hosts[MANY / 4][16];
    uint32_t r;

    memset(ranks, 0, MANY * sizeof(*ranks));
    for (r = 0; r < MANY; r++) {
        snprintf(hosts[r / 4], sizeof(hosts[r / 4]), "n%u", r / 4);
        snprintf(many_who_text[r], sizeof(many_who_text[r]), "rank %u (n%u, GPU %u)", r, r / 4,
                 r % 4);
        many_who[r] = many_who_text[r];
        ranks[r].host = hosts[r / 4];
        ranks[r].pid = 1000 + r;
        ranks[r].gpu = (int)(r % 4);
        snprintf(ranks[r].gpu_uuid, sizeof(ranks[r].gpu_uuid), "GPU-%u", r);
        ranks[r].on_this_node = r < 4;
    }
}

/* The document of a run of MANY ranks over mechs2, its cells judged as
 * rank 0 judges them (gpuipc_cells_judge, gpuipc_rank_culprits), written
 * by gpuipc_ranks_doc_write in a directory of its own and parsed back; the
 * judge's counts into *t. */
static jnode *many_doc(const gpuipc_cell *cells, gpuipc_cells_tally *t)
{
    static gpuipc_ranks_doc_rank ranks[MANY];
    char dir[] = "/tmp/gpuipc-ranks-XXXXXX", path[64];
    FILE *null = fopen("/dev/null", "w");
    gpuipc_ranks_doc d = {.pmix = "test", .size = MANY, .ranks = ranks, .cells = cells,
                          .who = many_who, .mechs = mechs2, .nmech = 2};
    uint32_t *culprits;
    jnode *doc;

    many_ranks(ranks);
    ck_assert_ptr_nonnull(null);
    ck_assert_int_eq(gpuipc_cells_judge((gpuipc_cell *)cells, MANY, many_who, mechs2, 2, NULL, null,
                                        t), 0);
    fclose(null);
    d.proven = t->proven;
    d.failed = t->failed;
    d.skipped = t->skipped;
    d.code = gpuipc_status_verdict(t->proven, t->failed, 0);
    ck_assert_int_eq(gpuipc_rank_culprits(cells, MANY, many_who, mechs2, 2, &culprits), 0);
    d.culprits = culprits;
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/ranks.json", dir);
    doc = write_ranks_doc(path, &d);
    free(culprits);
    th_remove_tree(dir);
    return doc;
}

/* Each of doc's pairs: every ordered pair of MANY ranks once, its verdict
 * as want[p * MANY + c] says (a word of core/status: "PASS", "FAIL",
 * "SKIP"), a proven one with its two scenarios and no reason, one not
 * proven with its reason. */
static void many_check_pairs(const jnode *doc, const char *const *want)
{
    const jnode *pairs = js_get(doc, "pairs");
    unsigned char seen[MANY * MANY];
    size_t i;

    memset(seen, 0, sizeof(seen));
    ck_assert_str_eq(js_str(js_get(doc, "schema")), "gpuipc-ranks/1");
    ck_assert_int_eq((int)js_num(js_get(doc, "size")), MANY);
    ck_assert_uint_eq(js_len(js_get(doc, "ranks")), MANY);
    ck_assert_uint_eq(js_len(pairs), MANY * (MANY - 1));
    for (i = 0; i < js_len(pairs); i++) {
        const jnode *x = js_at(pairs, i);
        double p = js_num(js_get(x, "producer")), c = js_num(js_get(x, "consumer"));
        size_t at = (size_t)p * MANY + (size_t)c;
        const char *v = js_str(js_get(x, "verdict"));

        ck_assert_msg(p >= 0 && p < MANY && c >= 0 && c < MANY && p != c, "pair %zu: %g -> %g",
                      i, p, c);
        ck_assert_msg(!seen[at], "pair %g -> %g twice", p, c);
        seen[at] = 1;
        ck_assert_msg(v != NULL && strcmp(v, want[at]) == 0, "pair %g -> %g: %s, not %s", p, c,
                      v, want[at]);
        if (strcmp(v, "PASS") == 0) {
            ck_assert_uint_eq(js_len(js_get(x, "scenarios")), 2);
            ck_assert_ptr_null(js_str(js_get(x, "reason")));
        } else {
            ck_assert_msg(js_str(js_get(x, "reason")) != NULL ||
                          js_len(js_get(x, "scenarios")) > 0, "pair %g -> %g: %s, saying "
                          "nothing", p, c, v);
        }
    }
}

/* 72 ranks: every ordered pair (5,112) in "pairs" once, with the verdict
 * its records give: proven, failed on the consumer's side, its producer
 * never reported, skipped; and the counts and the culprits that go with
 * them. */
START_TEST(test_rank_results_every_pair_of_72_ranks_in_the_document)
{
    gpuipc_cell *cells = all_proven(MANY);
    const char **want = calloc(MANY * MANY, sizeof(*want));
    gpuipc_cells_tally t;
    const jnode *culprits;
    gpuipc_cell *x;
    jnode *doc;
    size_t k;

    ck_assert_ptr_nonnull(want);
    for (k = 0; k < MANY * MANY; k++)
        want[k] = "PASS";
    fail_scenario(&cells[3 * MANY + 70], 1, GPUIPC_ROLE_CONSUMER, GPUIPC_STEP_VERIFY,
                  "3 mismatches");
    want[3 * MANY + 70] = "FAIL";
    gpuipc_cell_side_free(&cells[71 * MANY + 0].prod);
    want[71 * MANY + 0] = "FAIL";
    x = &cells[70 * MANY + 3];
    empty_cell(x);
    x->p = 70;
    x->c = 3;
    x->prod.have = x->cons.have = 1;
    x->prod.code = x->cons.code = GPUIPC_SKIP;
    snprintf(x->prod.note, sizeof(x->prod.note), "not on this node");
    want[70 * MANY + 3] = "SKIP";
    doc = many_doc(cells, &t);
    many_check_pairs(doc, want);
    ck_assert_uint_eq(t.proven, MANY * (MANY - 1) - 3);
    ck_assert_int_eq((int)js_num(js_get(doc, "pairs_proven")), MANY * (MANY - 1) - 3);
    ck_assert_int_eq((int)js_num(js_get(doc, "pairs_failed")), 2);
    ck_assert_int_eq((int)js_num(js_get(doc, "pairs_skipped")), 1);
    ck_assert_str_eq(js_str(js_get(doc, "verdict")), "FAIL");
    /* The consumer of 3 -> 70 (its side failed) and the producer of
     * 71 -> 0 (it never reported): each with that one pair. */
    culprits = js_get(doc, "culprits");
    ck_assert_uint_eq(js_len(culprits), 2);
    ck_assert_int_eq((int)js_num(js_get(js_at(culprits, 0), "rank")), 70);
    ck_assert_str_eq(js_str(js_at(js_get(js_at(culprits, 0), "pairs"), 0)), "3->70");
    ck_assert_uint_eq(js_len(js_get(js_at(culprits, 0), "pairs")), 1);
    ck_assert_int_eq((int)js_num(js_get(js_at(culprits, 1), "rank")), 71);
    ck_assert_str_eq(js_str(js_get(js_at(culprits, 1), "node")), "n17");
    ck_assert_str_eq(js_str(js_at(js_get(js_at(culprits, 1), "pairs"), 0)), "71->0");
    ck_assert_uint_eq(js_len(js_get(js_at(culprits, 1), "pairs")), 1);
    js_free(doc);
    free(want);
    free_cells(cells, MANY);
}
END_TEST

/* One side of a pair not ended when the verdict's time came, as a rank's
 * records say it (app/cuda/ranks_verdict.c's not_ended): weight is what
 * the rank was doing then; current, whether this was its pair under way. */
static void pair_not_ended(gpuipc_cell_side *side, int weight, int current)
{
    gpuipc_cell_side_free(side);
    side->have = 1;
    side->code = GPUIPC_FAIL;
    side->weight = weight;
    side->blame = weight >= GPUIPC_CELL_SURE ? GPUIPC_CELL_BLAME_SELF
                  : current ? GPUIPC_CELL_BLAME_WAITS : GPUIPC_CELL_BLAME_NONE;
    snprintf(side->note, sizeof(side->note), current ? "under way when the verdict's time came"
                                                     : "not reached");
}

/* 72 ranks in the rounds of disjoint pairs of --ranks (run/plan.h), rank
 * 29 stuck in a driver call in its pair of round 3 (from 0). A rank whose pair's
 * peer is held (stuck, or waiting in a pair of its own) waits for it in
 * that pair from then on, so the wait spreads round by round until nearly
 * every pair failed: whatever each failed pair's records say, its culprit
 * is rank 29, the end of every chain of waits, and it alone. */
START_TEST(test_rank_results_one_stuck_rank_of_72_is_the_only_culprit)
{
    enum { STUCK = 29, ROUND = 3 };
    gpuipc_cell *cells = all_proven(MANY);
    const char **want = calloc(MANY * MANY, sizeof(*want));
    int held[MANY], weight[MANY], ids[MANY];
    gpuipc_plan_pair *pairs;
    gpuipc_cells_tally t;
    const jnode *culprits, *named;
    unsigned nrounds, failed = 0;
    size_t k, i;
    jnode *doc;

    ck_assert_ptr_nonnull(want);
    for (k = 0; k < MANY; k++) {
        ids[k] = (int)k;
        held[k] = 0;
        weight[k] = GPUIPC_CELL_VAGUE;
    }
    for (k = 0; k < MANY * MANY; k++)
        want[k] = "PASS";
    pairs = gpuipc_plan_all_pairs(ids, MANY, &nrounds);
    ck_assert_ptr_nonnull(pairs);
    for (k = 0; k < (size_t)MANY * (MANY - 1); k = i) {
        unsigned round = pairs[k].round;
        int now[MANY];

        /* A round's pairs are disjoint: each sees the ranks held at its start. */
        memcpy(now, held, sizeof(now));
        for (i = k; i < (size_t)MANY * (MANY - 1) && pairs[i].round == round; i++) {
            int p = pairs[i].a, c = pairs[i].b;
            gpuipc_cell *x = &cells[(size_t)p * MANY + (size_t)c];

            if (!now[p] && !now[c] && !(round == ROUND && (p == STUCK || c == STUCK)))
                continue; /* proven */
            want[(size_t)p * MANY + (size_t)c] = "FAIL";
            failed++;
            if (!now[p] && !now[c]) {
                /* Rank 29 stuck in the driver; its peer waits in the session. */
                weight[p] = p == STUCK ? GPUIPC_CELL_STUCK : GPUIPC_CELL_PLAIN;
                weight[c] = c == STUCK ? GPUIPC_CELL_STUCK : GPUIPC_CELL_PLAIN;
                pair_not_ended(&x->prod, weight[p], 1);
                pair_not_ended(&x->cons, weight[c], 1);
                held[p] = held[c] = 1;
                continue;
            }
            /* One held: the other comes and waits for it to come. */
            if (!now[p]) {
                weight[p] = GPUIPC_CELL_VAGUE;
                held[p] = 1;
            }
            if (!now[c]) {
                weight[c] = GPUIPC_CELL_VAGUE;
                held[c] = 1;
            }
            pair_not_ended(&x->prod, weight[p], !now[p]);
            pair_not_ended(&x->cons, weight[c], !now[c]);
        }
    }
    free(pairs);
    doc = many_doc(cells, &t);
    many_check_pairs(doc, want);
    ck_assert_uint_eq(t.failed, failed);
    ck_assert_uint_gt(failed, MANY * (MANY - 1) / 2); /* the wait spread */
    ck_assert_int_eq((int)js_num(js_get(doc, "pairs_failed")), (int)failed);
    culprits = js_get(doc, "culprits");
    ck_assert_uint_eq(js_len(culprits), 1);
    named = js_at(culprits, 0);
    ck_assert_int_eq((int)js_num(js_get(named, "rank")), STUCK);
    ck_assert_str_eq(js_str(js_get(named, "node")), "n7");
    ck_assert_str_eq(js_str(js_get(named, "gpu_uuid")), "GPU-29");
    /* Every failed pair, each once. */
    ck_assert_uint_eq(js_len(js_get(named, "pairs")), failed);
    for (i = 0; i < failed; i++) {
        unsigned p, c;

        ck_assert_int_eq(sscanf(js_str(js_at(js_get(named, "pairs"), i)), "%u->%u", &p, &c), 2);
        ck_assert_msg(p < MANY && c < MANY && strcmp(want[p * MANY + c], "FAIL") == 0,
                      "%u->%u named, not failed", p, c);
        want[p * MANY + c] = "named";
    }
    for (k = 0; k < MANY * MANY; k++)
        ck_assert_msg(strcmp(want[k], "FAIL") != 0, "%zu->%zu failed, not named", k / MANY,
                      k % MANY);
    js_free(doc);
    free(want);
    free_cells(cells, MANY);
}
END_TEST

/* --junit of 72 ranks with 6 mechanisms (30,672 rows, producer by
 * producer, as gpuipc_rank_results_make makes them): a testsuite per rank,
 * each once, in well under a second. Finding each row's exporter among the
 * rows before it made the report quadratic in the rows where the first row
 * of a late rank comes late: about 3 s here, and 12 s with 12 mechanisms. */
START_TEST(test_rank_results_junit_of_72_ranks_finds_each_suite_once)
{
    static const char *const m6[] = {"vmm", "vmm-pidfd", "vmm-chunks", "vmm-offset",
                                      "vmm-alias", "vmm-readonly"};
    gpuipc_cell *cells = calloc((size_t)MANY * MANY, sizeof(*cells));
    gpuipc_outcome oc = {.version = "9.9", .commit = "abc", .mode = "ranks", .role = "rank 0",
                         .exit_code = 0, .result = "PASS"};
    gpuipc_rank_results rows;
    uint64_t t0, ns;
    uint32_t p, c;
    char *text, *at;
    off_t len;
    int fd, n;

    ck_assert_ptr_nonnull(cells);
    for (p = 0; p < MANY; p++) {
        many_who[p] = "rank";
        for (c = 0; c < MANY; c++)
            if (p != c)
                proven(&cells[(size_t)p * MANY + c], p, c, m6, 6);
    }
    ck_assert_int_eq(gpuipc_rank_results_make(&rows, cells, MANY, many_who, m6, 6), 0);
    free_cells(cells, MANY);
    ck_assert_uint_eq(rows.n, (size_t)MANY * (MANY - 1) * 6);
    oc.results = rows.results;
    oc.n = rows.n;
    oc.passed = (unsigned)rows.n;
    fd = memfd_create("junit", MFD_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    t0 = gpuipc_clock_ns();
    ck_assert_int_eq(gpuipc_junit_write(fd, &oc), 0);
    ns = gpuipc_clock_ns() - t0;
    ck_assert_msg(ns < 1000000000ull, "--junit of %zu rows took %.2f s", rows.n,
                  (double)ns / 1e9);
    len = lseek(fd, 0, SEEK_CUR);
    text = calloc(1, (size_t)len + 1);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(pread(fd, text, (size_t)len, 0), len);
    close(fd);
    /* A testsuite per rank and the run's, each rank's with its 71 x 6. */
    for (n = 0, at = text; (at = strstr(at, "<testsuite ")) != NULL; at++)
        n++;
    ck_assert_int_eq(n, MANY + 1);
    ck_assert_msg(strstr(text, "<testsuite name=\"GPU 71\" tests=\"426\" failures=\"0\"") !=
                  NULL, "%.1000s", text);
    ck_assert_ptr_null(strstr(strstr(text, "<testsuite name=\"GPU 71\"") + 1,
                              "<testsuite name=\"GPU 71\""));
    free(text);
    gpuipc_rank_results_free(&rows);
}
END_TEST

Suite *rank_results_suite(void)
{
    Suite *s = suite_create("rank_results");
    TCase *tc = tcase_create("rank_results");

    /* 72 ranks' documents: about 0.1 s each, 3 s under valgrind. */
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_rank_results_a_row_per_scenario_of_each_pair);
    tcase_add_test(tc, test_rank_results_every_row_of_many_ranks_whole);
    tcase_add_test(tc, test_rank_results_a_pair_failed_whole_is_one_row);
    tcase_add_test(tc, test_rank_results_a_pass_in_a_pair_not_proven_is_no_pass);
    tcase_add_test(tc, test_rank_results_render_as_prom_and_junit);
    tcase_add_test(tc, test_rank_results_a_consumer_side_failure_names_the_consumer_alone);
    tcase_add_test(tc, test_rank_results_a_gone_rank_is_named);
    tcase_add_test(tc, test_rank_results_a_pass_or_skip_names_none);
    tcase_add_test(tc, test_rank_results_no_session_the_leading_side_names_the_culprit);
    tcase_add_test(tc, test_rank_results_culprits_follow_the_waits_to_the_stuck_rank);
    tcase_add_test(tc, test_rank_results_the_document_names_the_culprits);
    tcase_add_test(tc, test_rank_results_every_pair_of_72_ranks_in_the_document);
    tcase_add_test(tc, test_rank_results_one_stuck_rank_of_72_is_the_only_culprit);
    /* A bound on time means nothing under valgrind. */
    th_add_unless_valgrind(tc, test_rank_results_junit_of_72_ranks_finds_each_suite_once,
                           "its bound on time is for native code");
    suite_add_tcase(s, tc);
    return s;
}
