/* SPDX-License-Identifier: Apache-2.0 */
/* test_report.c: the exit code a set of results implies, and the summary
 * that shows them. */
#include "session/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"
#include "suites.h"

static gpuipc_result with(int status)
{
    gpuipc_result r = {.mech = "x", .status = status};

    return r;
}

/* The one table of words: each status and exit status has its word, its
 * name in the files and its meaning, and what the table does not name
 * falls to the safe side (FAIL; "not run"; "unknown"). */
START_TEST(test_report_status_words_come_from_one_table)
{
    ck_assert_str_eq(gpuipc_status_word(GPUIPC_PASS), "PASS");
    ck_assert_str_eq(gpuipc_status_word(GPUIPC_FAIL), "FAIL");
    ck_assert_str_eq(gpuipc_status_word(GPUIPC_SKIP), "SKIP");
    ck_assert_str_eq(gpuipc_status_word(GPUIPC_STOPPED), "STOPPED");
    ck_assert_str_eq(gpuipc_status_word(-1), "NOT RUN");
    ck_assert_str_eq(gpuipc_status_name(GPUIPC_STOPPED), "stopped");
    ck_assert_str_eq(gpuipc_status_name(-1), "not run");
    ck_assert_str_eq(gpuipc_status_name(GPUIPC_USAGE), "not run"); /* no scenario status */
    ck_assert_str_eq(gpuipc_exit_word(0), "PASS");
    ck_assert_str_eq(gpuipc_exit_word(1), "FAIL");
    ck_assert_str_eq(gpuipc_exit_word(2), "USAGE ERROR");
    ck_assert_str_eq(gpuipc_exit_word(77), "SKIP");
    ck_assert_str_eq(gpuipc_exit_word(130), "STOPPED");
    ck_assert_str_eq(gpuipc_exit_word(143), "STOPPED");
    ck_assert_str_eq(gpuipc_exit_word(128), "FAIL"); /* 128 is no signal's */
    ck_assert_str_eq(gpuipc_exit_word(3), "FAIL");
    ck_assert_str_eq(gpuipc_exit_meaning(130), "stopped by SIGINT");
    ck_assert_str_eq(gpuipc_exit_meaning(77), "nothing could run here (no driver or GPU)");
    ck_assert_str_eq(gpuipc_exit_meaning(5), "unknown");
    /* The statuses a record may carry, and no other number. */
    ck_assert(gpuipc_status_known(GPUIPC_PASS) && gpuipc_status_known(GPUIPC_FAIL) &&
              gpuipc_status_known(GPUIPC_SKIP) && gpuipc_status_known(GPUIPC_STOPPED) &&
              gpuipc_status_known(-1));
    ck_assert(!gpuipc_status_known(GPUIPC_USAGE) && !gpuipc_status_known(-2) &&
              !gpuipc_status_known(130) && !gpuipc_status_known(4));
    /* The one rule over counts: a failure outweighs a stop, a stop a pass,
     * a pass a skip. */
    ck_assert_int_eq(gpuipc_status_verdict(5, 1, 1), GPUIPC_FAIL);
    ck_assert_int_eq(gpuipc_status_verdict(5, 0, 1), GPUIPC_STOPPED);
    ck_assert_int_eq(gpuipc_status_verdict(1, 0, 0), GPUIPC_PASS);
    ck_assert_int_eq(gpuipc_status_verdict(0, 0, 0), GPUIPC_SKIP);
}
END_TEST

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

/* The summary of results[0..n), as the program writes it to a file. */
static char *summary_of(const gpuipc_result *results, size_t n)
{
    const char *notes[2] = {"a note", NULL};
    FILE *f = tmpfile();
    char *text;
    long len;

    ck_assert_ptr_nonnull(f);
    gpuipc_report_summary(fileno(f), "where", results, n, notes, "exited 0", 0, 1000000000u);
    len = lseek(fileno(f), 0, SEEK_END);
    ck_assert_int_gt(len, 0);
    text = calloc(1, (size_t)len + 1);
    ck_assert_int_eq(pread(fileno(f), text, (size_t)len, 0), len);
    fclose(f);
    return text;
}

static size_t occurrences(const char *text, const char *what)
{
    size_t n = 0;

    for (; (text = strstr(text, what)) != NULL; text++)
        n++;
    return n;
}

START_TEST(test_report_a_shared_cause_is_said_once_with_its_scenarios)
{
    gpuipc_result r[4] = {with(GPUIPC_PASS), with(GPUIPC_SKIP), with(GPUIPC_SKIP),
                          with(GPUIPC_FAIL)};
    char *text;

    r[0].mech = "memfd";
    r[1].mech = "legacy-ipc";
    r[2].mech = "mempool-ipc";
    r[3].mech = "vmm";
    strcpy(r[1].reason, "consumer cannot see the GPU");
    strcpy(r[2].reason, "consumer cannot see the GPU");
    strcpy(r[3].reason, "a cause of its own");
    text = summary_of(r, 4);
    ck_assert_uint_eq(occurrences(text, "consumer cannot see the GPU"), 1);
    ck_assert_ptr_nonnull(strstr(text, "the same cause for 2 scenarios (legacy-ipc, "
                                       "mempool-ipc): consumer cannot see the GPU\n"));
    ck_assert_ptr_nonnull(strstr(text, "  legacy-ipc  SKIP   (a cause shared with others: "
                                       "below)\n  mempool-ipc SKIP   (a cause shared"));
    ck_assert_uint_eq(occurrences(text, "a cause of its own"), 1);
    ck_assert_ptr_nonnull(strstr(text, "  vmm         FAIL\n              a cause of its own\n"));
    free(text);
}
END_TEST

START_TEST(test_report_long_names_widen_the_column_and_result_is_last)
{
    gpuipc_result r[2] = {with(GPUIPC_SKIP), with(GPUIPC_SKIP)};
    char *text, *last;

    r[0].mech = "a-mechanism-with-a-name-of-40-characters";
    r[1].mech = "short";
    strcpy(r[0].reason, "one");
    strcpy(r[1].reason, "two");
    text = summary_of(r, 2);
    ck_assert_ptr_nonnull(strstr(text, "  a-mechanism-with-a-name-of-40-characters SKIP\n"));
    ck_assert_ptr_nonnull(strstr(text, "  short                                    SKIP\n"));
    ck_assert_ptr_nonnull(strstr(text, "  scenario                                 result"));
    last = strstr(text, "result: ");
    ck_assert_ptr_nonnull(last);
    ck_assert_str_eq(last, "result: PASS: 0 passed, 0 failed, 2 skipped, in 1.00 s (exit 0)\n");
    free(text);
}
END_TEST

/* Over several GPUs each GPU's rows stand under its heading (once), and a
 * failed GPU's rows do not hide the others'. */
START_TEST(test_report_rows_are_grouped_by_gpu)
{
    gpuipc_result r[5] = {with(GPUIPC_PASS), with(GPUIPC_PASS), with(GPUIPC_FAIL),
                          with(GPUIPC_PASS), with(GPUIPC_PASS)};
    const char *g0 = "GPU 0: NVIDIA H100 (GPU-aaaa, 0000:19:00.0)";
    const char *g1 = "GPU 1: NVIDIA H100 (GPU-bbbb, 0000:3b:00.0)";
    const char *ring = "across GPUs, the ring: each GPU exports to the next (vmm)";
    char *text, *h0, *h1, *hr;

    r[0].mech = "vmm";
    r[0].group = g0;
    r[1].mech = "vmm";
    r[1].group = g1;
    r[2].mech = "vmm-pidfd";
    r[2].group = g1;
    strcpy(r[2].reason, "a failure of GPU 1");
    r[3].mech = "vmm 0->1";
    r[3].group = ring;
    r[4].mech = "vmm 1->0";
    r[4].group = ring;
    text = summary_of(r, 5);
    ck_assert_uint_eq(occurrences(text, g0), 1);
    ck_assert_uint_eq(occurrences(text, g1), 1);
    ck_assert_uint_eq(occurrences(text, ring), 1);
    h0 = strstr(text, g0);
    h1 = strstr(text, g1);
    hr = strstr(text, ring);
    ck_assert_msg(h0 < h1 && h1 < hr, "the headings are out of order:\n%s", text);
    ck_assert_ptr_nonnull(strstr(h1, "\n  vmm-pidfd FAIL"));
    ck_assert_ptr_nonnull(strstr(hr, "\n  vmm 0->1  PASS"));
    ck_assert_ptr_nonnull(strstr(text, "result: PASS: 4 passed, 1 failed"));
    free(text);
}
END_TEST

Suite *report_suite(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("exit_code");

    tcase_add_test(tc, test_report_status_words_come_from_one_table);
    tcase_add_test(tc, test_report_all_passed_is_0);
    tcase_add_test(tc, test_report_a_skip_beside_a_pass_is_0);
    tcase_add_test(tc, test_report_any_failure_is_1);
    tcase_add_test(tc, test_report_a_failed_consumer_is_1);
    tcase_add_test(tc, test_report_only_skips_is_77);
    tcase_add_test(tc, test_report_nothing_run_is_not_a_pass);
    tcase_add_test(tc, test_report_rows_are_grouped_by_gpu);
    suite_add_tcase(s, tc);
    tc = tcase_create("summary");
    tcase_add_test(tc, test_report_a_shared_cause_is_said_once_with_its_scenarios);
    tcase_add_test(tc, test_report_long_names_widen_the_column_and_result_is_last);
    suite_add_tcase(s, tc);
    return s;
}
