/* SPDX-License-Identifier: Apache-2.0 */
/* test_stats.c: the statistics and units that the benchmark reports, on
 * samples whose answers are known. */
#include <errno.h>
#include <math.h>

#include "core/stats.h"
#include "suites.h"

START_TEST(test_stats_odd_count_unsorted)
{
    const double v[] = {9, 1, 5, 3, 7};
    gpuipc_stats s;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_stats_summarize(v, 5, &s, &e), 0);
    ck_assert_uint_eq(s.n, 5);
    ck_assert_double_eq(s.median, 5);
    ck_assert_double_eq(s.min, 1);
    ck_assert_double_eq(s.max, 9);
    ck_assert_double_eq(s.mean, 5);
    ck_assert_double_eq(v[0], 9); /* the caller's samples stay as they were */
}
END_TEST

START_TEST(test_stats_even_count_takes_the_middle_two)
{
    const double v[] = {4, 100, 1, 2};
    gpuipc_stats s;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_stats_summarize(v, 4, &s, &e), 0);
    ck_assert_double_eq(s.median, 3); /* (2 + 4) / 2: an outlier moves the mean, not the median */
    ck_assert_double_eq(s.min, 1);
    ck_assert_double_eq(s.max, 100);
    ck_assert_double_eq(s.mean, 26.75);
}
END_TEST

START_TEST(test_stats_one_sample_and_repeats)
{
    const double one[] = {2.5}, same[] = {7, 7, 7};
    gpuipc_stats s;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_stats_summarize(one, 1, &s, &e), 0);
    ck_assert_double_eq(s.median, 2.5);
    ck_assert_double_eq(s.min, s.max);
    ck_assert_int_eq(gpuipc_stats_summarize(same, 3, &s, &e), 0);
    ck_assert_double_eq(s.median, 7);
    ck_assert_double_eq(s.mean, 7);
}
END_TEST

START_TEST(test_stats_refuses_no_samples_and_non_numbers)
{
    const double bad[] = {1, NAN, 3}, inf[] = {INFINITY};
    gpuipc_stats s;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_stats_summarize(bad, 0, &s, &e), -EINVAL);
    ck_assert_str_eq(e.msg, "no samples to summarize");
    ck_assert_int_eq(gpuipc_stats_summarize(bad, 3, &s, &e), -EINVAL);
    ck_assert_str_eq(e.msg, "sample 1 of 3 is not a finite number");
    ck_assert_int_eq(gpuipc_stats_summarize(inf, 1, &s, &e), -EINVAL);
}
END_TEST

START_TEST(test_stats_rates_count_bytes_per_nanosecond)
{
    ck_assert_double_eq_tol(gpuipc_stats_gbps(1ull << 30, 1e6), 1073.741824, 1e-9);
    ck_assert_double_eq(gpuipc_stats_gbps(1000, 0), 0);
}
END_TEST

static const struct {
    double v;
    const char *ns, *gbps;
} fmt[] = {
    {0, "0 ns", "0 GB/s"},          {812, "812 ns", "812 GB/s"},
    {1250, "1.25 us", "1.25 TB/s"}, {38400000, "38.4 ms", "38400 TB/s"},
    {2.1e9, "2.10 s", "2100000 TB/s"}, {999.4, "999 ns", "999 GB/s"},
    {999.6, "1.00 us", "1.00 TB/s"}, {3.35e3, "3.35 us", "3.35 TB/s"},
};

START_TEST(test_stats_formats_durations_and_rates)
{
    char buf[32];

    ck_assert_str_eq(gpuipc_stats_format_ns(fmt[_i].v, buf, sizeof(buf)), fmt[_i].ns);
    ck_assert_str_eq(gpuipc_stats_format_gbps(fmt[_i].v, buf, sizeof(buf)), fmt[_i].gbps);
}
END_TEST

Suite *stats_suite(void)
{
    Suite *s = suite_create("stats");
    TCase *tc = tcase_create("stats");

    tcase_add_test(tc, test_stats_odd_count_unsorted);
    tcase_add_test(tc, test_stats_even_count_takes_the_middle_two);
    tcase_add_test(tc, test_stats_one_sample_and_repeats);
    tcase_add_test(tc, test_stats_refuses_no_samples_and_non_numbers);
    tcase_add_test(tc, test_stats_rates_count_bytes_per_nanosecond);
    tcase_add_loop_test(tc, test_stats_formats_durations_and_rates, 0,
                        (int)(sizeof(fmt) / sizeof(fmt[0])));
    suite_add_tcase(s, tc);
    return s;
}
