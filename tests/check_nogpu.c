/* SPDX-License-Identifier: Apache-2.0 */
/* check_nogpu.c: runs every suite that needs no GPU, each test in its own
 * forked process with Check's timeouts. Exits 0 only if all passed.
 * CK_RUN_SUITE, CK_RUN_CASE, CK_TAP_LOG_FILE_NAME and CK_XML_LOG_FILE_NAME
 * select tests and add reports as Check documents. */
#include <stdlib.h>

#include "suites.h"

int main(void)
{
    SRunner *sr;
    int failed;

    /* A view operation without a held buffer aborts, in the roles run here
     * and in every program the suites start (session/role.h). */
    setenv("GPUIPC_TEST_ABORT", "1", 1);
    sr = srunner_create(wire_suite());

    srunner_add_suite(sr, units_suite());
    srunner_add_suite(sr, options_suite());
    srunner_add_suite(sr, pattern_suite());
    srunner_add_suite(sr, account_suite());
    srunner_add_suite(sr, inject_suite());
    srunner_add_suite(sr, report_suite());
    srunner_add_suite(sr, pidfd_suite());
    srunner_add_suite(sr, facts_suite());
    srunner_add_suite(sr, imex_suite());
    srunner_add_suite(sr, chunks_suite());
    srunner_add_suite(sr, json_suite());
    srunner_add_suite(sr, stats_suite());
    srunner_add_suite(sr, bench_suite());
    srunner_add_suite(sr, roles_suite());
    srunner_add_suite(sr, liars_suite());
    srunner_add_suite(sr, lies_suite());
    srunner_add_suite(sr, deadline_suite());
    srunner_add_suite(sr, program_suite());
    srunner_add_suite(sr, faults_suite());
    srunner_add_suite(sr, twoterm_suite());
    srunner_add_suite(sr, containers_suite());
    srunner_add_suite(sr, reports_suite());
    srunner_add_suite(sr, results_suite());
    srunner_add_suite(sr, fleet_suite());
    srunner_add_suite(sr, progress_suite());
    srunner_add_suite(sr, outputs_suite());
    srunner_add_suite(sr, watch_suite());
    srunner_add_suite(sr, plan_suite());
    srunner_add_suite(sr, causes_suite());
    srunner_add_suite(sr, launch_suite());
    srunner_add_suite(sr, ranks_suite());
    srunner_add_suite(sr, rank_results_suite());
    srunner_add_suite(sr, sha256_suite());
    srunner_add_suite(sr, doc_scan_suite());
    srunner_add_suite(sr, link_suite());
    srunner_add_suite(sr, kmsg_suite());
    /* Each test runs in its own process: tests change per-process state (an
     * RLIMIT_NOFILE, a subreaper) and count FDs, which must not leak from one
     * test into the next, so CK_FORK=no is not honoured. */
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
