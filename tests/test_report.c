/* test_report.c: the exit code a set of results implies. */
#include "session/report.h"
#include "suites.h"

static gpuipc_result with(int status)
{
    gpuipc_result r = {.mech = "x", .status = status};

    return r;
}

START_TEST(test_report_all_passed_is_0)
{
    gpuipc_result r[2] = {with(GPUIPC_PASS), with(GPUIPC_PASS)};

    ck_assert_int_eq(gpuipc_report_exit_code(r, 2, 1), 0);
}
END_TEST

START_TEST(test_report_a_skip_beside_a_pass_is_0)
{
    gpuipc_result r[2] = {with(GPUIPC_SKIP), with(GPUIPC_PASS)};

    ck_assert_int_eq(gpuipc_report_exit_code(r, 2, 1), 0);
}
END_TEST

START_TEST(test_report_any_failure_is_1)
{
    gpuipc_result r[3] = {with(GPUIPC_PASS), with(GPUIPC_FAIL), with(GPUIPC_SKIP)};

    ck_assert_int_eq(gpuipc_report_exit_code(r, 3, 1), 1);
}
END_TEST

START_TEST(test_report_a_failed_consumer_is_1)
{
    gpuipc_result r[1] = {with(GPUIPC_PASS)};

    ck_assert_int_eq(gpuipc_report_exit_code(r, 1, 0), 1);
}
END_TEST

START_TEST(test_report_only_skips_is_77)
{
    gpuipc_result r[2] = {with(GPUIPC_SKIP), with(GPUIPC_SKIP)};

    ck_assert_int_eq(gpuipc_report_exit_code(r, 2, 1), 77);
}
END_TEST

START_TEST(test_report_nothing_run_is_not_a_pass)
{
    gpuipc_result r[1] = {with(-1)};

    ck_assert_int_eq(gpuipc_report_exit_code(r, 1, 1), 77);
}
END_TEST

Suite *report_suite(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("exit_code");

    tcase_add_test(tc, test_report_all_passed_is_0);
    tcase_add_test(tc, test_report_a_skip_beside_a_pass_is_0);
    tcase_add_test(tc, test_report_any_failure_is_1);
    tcase_add_test(tc, test_report_a_failed_consumer_is_1);
    tcase_add_test(tc, test_report_only_skips_is_77);
    tcase_add_test(tc, test_report_nothing_run_is_not_a_pass);
    suite_add_tcase(s, tc);
    return s;
}
