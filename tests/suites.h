/* SPDX-License-Identifier: Apache-2.0 */
/* suites.h: the no-GPU Check suites, one per area, run by check_nogpu.c. */
#ifndef GPUIPC_TESTS_SUITES_H
#define GPUIPC_TESTS_SUITES_H

#include <check.h>

Suite *wire_suite(void);
Suite *units_suite(void);
Suite *options_suite(void);
Suite *pattern_suite(void);
Suite *account_suite(void);
Suite *inject_suite(void);
Suite *report_suite(void);
Suite *roles_suite(void);
Suite *liars_suite(void);
Suite *lies_suite(void);
Suite *deadline_suite(void);
Suite *program_suite(void);
Suite *pidfd_suite(void);
Suite *imex_suite(void);
Suite *chunks_suite(void);
Suite *json_suite(void);
Suite *faults_suite(void);
Suite *twoterm_suite(void);
Suite *stats_suite(void);
Suite *bench_suite(void);
Suite *reports_suite(void);
Suite *facts_suite(void);
Suite *containers_suite(void);
Suite *results_suite(void);
Suite *fleet_suite(void);
Suite *progress_suite(void);
Suite *outputs_suite(void);
Suite *watch_suite(void);
Suite *plan_suite(void);
Suite *causes_suite(void);
Suite *launch_suite(void);
Suite *ranks_suite(void);
Suite *rank_results_suite(void);
Suite *sha256_suite(void);
Suite *doc_scan_suite(void);
Suite *link_suite(void);
Suite *kmsg_suite(void);

#endif
