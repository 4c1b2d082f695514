/* SPDX-License-Identifier: Apache-2.0 */
/* rounds.c: the producer's scenarios as Check tests (one suite and case per
 * scenario, so that CK_RUN_SUITE, TAP and XML work as usual), run --repeat
 * times with both processes' holdings compared after every round. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/check_shim.h"
#include "app/cuda/phases.h"
#include "app/cuda/process.h"
#include "app/cuda/producer_run.h"
#include "app/cuda/scenario_ask.h"
#include "core/clock.h"
#include "core/status.h"
#include "core/step.h"
#include "core/stop.h"
#include "run/brief.h"
#include "session/report.h"

/* The run whose scenarios Check is running, set only while
 * srunner_run_all runs them (NULL otherwise). The one thing rounds.c keeps
 * at file scope: Check calls a test function with its loop index alone
 * (_i), and an exit hook (check_gave_up) gets no argument, so the run can
 * reach neither through an argument. */
static gpuipc_producer_run *g_run;

/* One scenario, driven together with the consumer over the socket. The
 * scenario releases everything it took before it returns, so the assertion
 * below (which longjmps in CK_NOFORK mode) can leave nothing behind. */
START_TEST(test_scenario_both_ways)
{
    gpuipc_result *res = &g_run->cells.results[_i];
    const gpuipc_mech *m = g_run->cells.sel[_i];

    if (g_run->played != NULL && g_run->played[_i]) {
        /* Its phase ran it, beside the other GPUs' cells (phases.c). */
        res->mech = g_run->cells.label[_i];
        res->mechanism = m->name;
        ck_assert_msg(res->status == GPUIPC_PASS, "%s: %s", res->mech, res->reason);
        return;
    }
    /* This process's handlers answer while a scenario runs (Check's are
     * kept out: check_shim.c), and outside the scenarios the signals wait,
     * blocked (run_suites). */
    if (gpuipc_stop_signal() != 0) {
        /* A stop came during an earlier scenario: this one is not run. */
        res->mech = g_run->cells.label[_i];
        res->mechanism = m->name;
        res->status = -1;
        snprintf(res->reason, sizeof(res->reason), "not run: the run was stopped before it");
        ck_abort_msg("%s: %s", res->mech, res->reason);
    }
    gpuipc_app_catch_stop_signals();
    gpuipc_app_block_stop_signals(0);
    if (gpuipc_app_wire_for(g_run, m) == NULL) {
        gpuipc_result_set(res, GPUIPC_FAIL, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_BEGIN, NULL,
                          "the sacrificial consumer is gone: %.400s", g_run->child2_desc);
    } else if (gpuipc_app_drive_cell(g_run, (size_t)_i, &g_run->env,
                                     gpuipc_app_wire_for(g_run, m), &g_run->timing)) {
        gpuipc_app_judge_pair(g_run, (size_t)_i);
    }
    res->mech = g_run->cells.label[_i];
    res->mechanism = m->name;
    gpuipc_app_block_stop_signals(1);
    ck_assert_msg(res->status == GPUIPC_PASS, "%s: %s", res->mech, res->reason);
}
END_TEST

/* While Check runs the scenarios (g_run is set), an exit() from inside it
 * (Check gives up with exit(2) when, say, it cannot create its temporary
 * file) is a failure of the run, not a usage error. */
static void check_gave_up(void)
{
    static const char why[] = "the test framework (Check) ended the run from inside "
                              "srunner_run_all with exit(); its own line above says why (for "
                              "example no temporary file: it writes one under $TEMP, else "
                              "/tmp, else in memory, a memfd)";
    char line[sizeof(why) + 48];

    if (g_run == NULL)
        return;
    g_run = NULL;
    snprintf(line, sizeof(line), "%s%s: %s (exit %d)", gpuipc_brief_fd() >= 0 ? "" : "result: ",
             gpuipc_exit_word(GPUIPC_FAIL), why, GPUIPC_FAIL);
    gpuipc_log_line(gpuipc_brief_fd() >= 0 ? gpuipc_brief_fd() : 1, line);
    _exit(GPUIPC_FAIL);
}

static int run_suites(gpuipc_producer_run *run)
{
    SRunner *sr = srunner_create(NULL);
    size_t i;
    int failed;

    for (i = 0; i < run->cells.n; i++) {
        Suite *s;
        TCase *tc;

        if (run->cells.results[i].status != -1 && !(run->played != NULL && run->played[i]))
            continue;
        /* The suite is the mechanism, the case the mechanism where it runs
         * ("vmm-gpu1", "vmm-gpu0to1", "memfd-host"): CK_RUN_SUITE=vmm runs
         * vmm on every GPU, CK_RUN_CASE=vmm-gpu1 that one scenario; Check's
         * TAP and XML name a test by its case. */
        s = suite_create(run->cells.sel[i]->name);
        tc = tcase_create(run->cells.ck_case[i]);
        tcase_add_loop_test(tc, test_scenario_both_ways, (int)i, (int)i + 1);
        suite_add_tcase(s, tc);
        srunner_add_suite(sr, s);
    }
    /* The parent holds a CUDA context, and a child forked from it could not
     * use CUDA, so the scenarios run in this process; every wait in them has
     * its own deadline, since Check's timeouts work only in fork mode. */
    srunner_set_fork_status(sr, CK_NOFORK);
    /* Between scenarios a stop signal waits, blocked in this thread, for
     * the next scenario or the end; Check's own SIGINT handler, which would
     * SIGKILL the whole process group, is kept out by the shield
     * (check_shim.c): the signal may land on a driver thread, whose mask
     * this does not set. */
    gpuipc_app_block_stop_signals(1);
    /* The exit hook, once a process (every mode sets run->proc), and at
     * its first scenarios, as it always was: after the driver's own. */
    if (run->proc != NULL && !run->proc->check_hooked)
        run->proc->check_hooked = atexit(check_gave_up) == 0;
    /* The console is the step log's and the summary's: Check's own lines
     * ("Running suite(s)", "100%: Checks: 9") stay out of it, while its TAP
     * and XML reports (CK_TAP_LOG_FILE_NAME, CK_XML_LOG_FILE_NAME) are
     * written as usual. */
    g_run = run;
    gpuipc_check_shield(1);
    srunner_run_all(sr, CK_SILENT);
    gpuipc_check_shield(0);
    g_run = NULL;
    gpuipc_app_block_stop_signals(0);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed;
}

/* --repeat: what the producer and the consumer held after round 1, which
 * every later round must come back to. Round 1 sets it, since the driver
 * allocates some of its own structures on first use. Both sides' figures
 * are their own (FDs, driver objects, shared memory, GPU memory by NVML),
 * so another process on the GPU cannot make a round drift. */
typedef struct soak {
    gpuipc_usage ref;                  /* the producer's, after round 1 */
    int have_ref;
    gpuipc_usage_figures consumer_ref; /* the consumer's, after round 1 */
    int have_consumer_ref;
    unsigned passed; /* scenarios passed in all rounds */
    char why[GPUIPC_ERR_LEN + 128];
} soak;

/* Checks round (1-based) for failures and drift on either side. Returns 0
 * to go on, or -1 to stop, with why. */
static int soak_round(gpuipc_producer_run *run, unsigned round, soak *k, uint64_t t0)
{
    unsigned every = run->o->repeat >= 10 ? run->o->repeat / 10 : 1;
    gpuipc_counts counts = gpuipc_report_count(run->cells.results, run->cells.n);
    gpuipc_usage_figures theirs, mine;
    int have_theirs = gpuipc_app_consumer_figures(run, &theirs);
    char drift[GPUIPC_ERR_LEN];
    gpuipc_err e;

    k->passed += counts.passed;
    if (counts.failed > 0) {
        snprintf(k->why, sizeof(k->why), "round %u: %u scenario%s failed", round,
                 counts.failed, counts.failed == 1 ? "" : "s");
        return -1;
    }
    if (!k->have_ref) {
        if (gpuipc_usage_take(&k->ref, run->env.gpu_bytes, &e) < 0) {
            snprintf(k->why, sizeof(k->why), "round %u: FD accounting: %s", round, e.msg);
            gpuipc_usage_free(&k->ref);
            return -1;
        }
        k->have_ref = 1;
        k->have_consumer_ref = have_theirs;
        k->consumer_ref = theirs;
    } else {
        if (gpuipc_usage_leaks(&k->ref, run->env.gpu_bytes, GPUIPC_ENV_SETTLE_NS, &e) > 0) {
            snprintf(k->why, sizeof(k->why), "round %u: drift since round 1: %s", round, e.msg);
            return -1;
        }
        if (k->have_consumer_ref && have_theirs &&
            gpuipc_usage_drift(&k->consumer_ref, &theirs, "consumer", drift, sizeof(drift))) {
            snprintf(k->why, sizeof(k->why), "round %u: drift since round 1: %s", round, drift);
            return -1;
        }
    }
    /* A progress line a tenth of the way, unless --quiet asked for failures
     * and the summary only (the step log itself is quiet after round 1). */
    if (run->o->level >= GPUIPC_LOG_NORMAL &&
        (round % every == 0 || round == run->o->repeat || run->o->level == GPUIPC_LOG_VERBOSE)) {
        gpuipc_usage_figures_of(&k->ref, &mine);
        gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_NONE,
                        GPUIPC_LOG_NO_TIME, "round %u/%u passed; both sides hold what they held "
                        "after round 1 (producer: %llu FDs, %llu driver objects; consumer: "
                        "%llu FDs, %llu driver objects); %.1f s", round, run->o->repeat,
                        (unsigned long long)mine.fds, (unsigned long long)mine.objects,
                        (unsigned long long)(have_theirs ? theirs.fds : 0),
                        (unsigned long long)(have_theirs ? theirs.objects : 0),
                        (double)(gpuipc_clock_ns() - t0) / 1e9);
    }
    return 0;
}

/* --repeat with --json: keeps round's record (its counts, its time since
 * began, both sides' figures after it). Out of memory or past
 * GPUIPC_DOC_ROUNDS_MAX, the round is counted as left out. */
static void record_round(gpuipc_producer_run *run, unsigned round, uint64_t began)
{
    gpuipc_round_record *r;
    gpuipc_counts counts;
    gpuipc_usage now;
    gpuipc_err e;

    if (run->nround_records == run->round_records_cap) {
        size_t cap = run->round_records_cap ? 2 * run->round_records_cap : 16;
        gpuipc_round_record *bigger;

        if (cap > GPUIPC_DOC_ROUNDS_MAX)
            cap = GPUIPC_DOC_ROUNDS_MAX;
        bigger = cap > run->round_records_cap
                     ? realloc(run->round_records, cap * sizeof(*bigger)) : NULL;
        if (bigger == NULL) {
            run->round_records_left_out++;
            return;
        }
        run->round_records = bigger;
        run->round_records_cap = cap;
    }
    r = &run->round_records[run->nround_records++];
    memset(r, 0, sizeof(*r));
    r->round = round;
    r->ns = gpuipc_clock_ns() - began;
    counts = gpuipc_report_count(run->cells.results, run->cells.n);
    r->passed = counts.passed;
    r->failed = counts.failed;
    r->skipped = counts.skipped;
    gpuipc_usage_take(&now, run->env.gpu_bytes, &e);
    gpuipc_usage_figures_of(&now, &r->producer);
    gpuipc_usage_free(&now);
    r->have_consumer = gpuipc_app_consumer_figures(run, &r->consumer);
}

/* The soak's line for a stop signal that came in round (1-based): the
 * round it broke off, or the last whole one if the stop came after it. */
static void say_stopped(gpuipc_producer_run *run, unsigned round, const soak *k)
{
    gpuipc_counts c = gpuipc_report_count(run->cells.results, run->cells.n);
    int sig = gpuipc_stop_signal();
    const char *name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
    unsigned whole = c.stopped == 0 && c.failed == 0;
    size_t i;

    for (i = 0; i < run->cells.n; i++)
        whole = whole && run->cells.results[i].status != -1;
    if (whole)
        gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_NONE,
                        GPUIPC_LOG_NO_TIME, "soak: stopped by %s after round %u of %u; the %u "
                        "rounds passed (%u scenarios)", name, round, run->o->repeat, round,
                        k->passed + c.passed);
    else
        gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_NONE,
                        GPUIPC_LOG_NO_TIME, "soak: stopped by %s in round %u of %u; the %u "
                        "rounds before it passed (%u scenarios)", name, round, run->o->repeat,
                        round - 1, k->passed);
}

/* Runs the scenarios that can run, --repeat times. Returns 0, or GPUIPC_FAIL
 * if the soak stopped at a failure or a drift (said on stdout). */
int gpuipc_app_run_rounds(gpuipc_producer_run *run)
{
    gpuipc_result *probed;
    uint64_t start = gpuipc_clock_ns();
    unsigned round;
    soak k;
    size_t i;
    int code = GPUIPC_PASS;

    for (i = 0; i < run->cells.n; i++)
        if (run->cells.results[i].status == -1)
            break;
    if (i == run->cells.n) /* nothing can run */
        return GPUIPC_PASS;
    memset(&k, 0, sizeof(k));
    /* What the probes left, the start of every round. */
    if ((probed = malloc(run->cells.n * sizeof(*probed))) == NULL) {
        gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_NONE,
                        GPUIPC_LOG_NO_TIME, "%s out of memory for %zu scenarios",
                        gpuipc_status_word(GPUIPC_FAIL), run->cells.n);
        return GPUIPC_FAIL;
    }
    memcpy(probed, run->cells.results, run->cells.n * sizeof(probed[0]));
    for (round = 1; round <= run->o->repeat; round++) {
        uint64_t began = gpuipc_clock_ns();

        if (round > 1) {
            memcpy(run->cells.results, probed, run->cells.n * sizeof(probed[0]));
            /* After round 1, only failures and the progress lines. */
            if (run->env.log.level < GPUIPC_LOG_VERBOSE)
                run->env.log.level = GPUIPC_LOG_QUIET;
        }
        if (round == 1 && gpuipc_app_phases_wanted(run))
            gpuipc_app_play_phases(run);
        run_suites(run);
        run->rounds = round;
        if (run->o->repeat == 1)
            break;
        if (run->o->json_path != NULL)
            record_round(run, round, began);
        if (gpuipc_stop_signal() != 0) {
            say_stopped(run, round, &k);
            code = GPUIPC_FAIL;
            break;
        }
        if (soak_round(run, round, &k, start) < 0) {
            if (gpuipc_stop_signal() == 0)
                gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_NONE,
                                GPUIPC_LOG_NO_TIME, "%s soak stopped at %s",
                                gpuipc_status_word(GPUIPC_FAIL), k.why);
            code = GPUIPC_FAIL;
            break;
        }
    }
    if (run->o->repeat > 1 && code == GPUIPC_PASS)
        gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_NONE,
                        GPUIPC_LOG_NO_TIME, "soak: %u rounds, %u scenarios passed; drift: 0 "
                        "FDs, 0 driver objects, 0 bytes of shared memory, 0 bytes of GPU "
                        "memory%s, on both sides; %.1f s (%.1f ms a round)",
                        run->o->repeat, k.passed,
                        k.ref.gpu == GPUIPC_USAGE_UNKNOWN ? " (NVML: not attributable here)"
                                                          : " by NVML",
                        (double)(gpuipc_clock_ns() - start) / 1e9,
                        (double)(gpuipc_clock_ns() - start) / 1e6 / run->o->repeat);
    if (k.have_ref)
        gpuipc_usage_free(&k.ref);
    free(probed);
    return code;
}
