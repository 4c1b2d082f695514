/* test_account.c: FD accounting names what leaked. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/account.h"
#include "suites.h"

START_TEST(test_account_sees_no_leak_when_nothing_changed)
{
    gpuipc_fds a, b;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_account_snapshot(&a, &e), 0);
    ck_assert_int_eq(gpuipc_account_snapshot(&b, &e), 0);
    ck_assert_uint_eq(gpuipc_account_leaks(&a, &b, &e), 0);
    gpuipc_account_free(&a);
    gpuipc_account_free(&b);
}
END_TEST

START_TEST(test_account_names_a_leaked_fd)
{
    gpuipc_fds a, b;
    gpuipc_err e;
    char want[64];
    int fd;

    ck_assert_int_eq(gpuipc_account_snapshot(&a, &e), 0);
    fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(gpuipc_account_snapshot(&b, &e), 0);
    ck_assert_uint_eq(gpuipc_account_leaks(&a, &b, &e), 1);
    snprintf(want, sizeof(want), "1 FD leaked: fd %d (/dev/null)", fd);
    ck_assert_str_eq(e.msg, want);
    close(fd);
    gpuipc_account_free(&a);
    gpuipc_account_free(&b);
}
END_TEST

START_TEST(test_account_ignores_closed_fds)
{
    gpuipc_fds a, b;
    gpuipc_err e;
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

    ck_assert_int_eq(gpuipc_account_snapshot(&a, &e), 0);
    close(fd);
    ck_assert_int_eq(gpuipc_account_snapshot(&b, &e), 0);
    ck_assert_uint_eq(gpuipc_account_leaks(&a, &b, &e), 0);
    ck_assert_uint_eq(a.n, b.n + 1);
    gpuipc_account_free(&a);
    gpuipc_account_free(&b);
}
END_TEST

Suite *account_suite(void)
{
    Suite *s = suite_create("account");
    TCase *tc = tcase_create("fds");

    tcase_add_test(tc, test_account_sees_no_leak_when_nothing_changed);
    tcase_add_test(tc, test_account_names_a_leaked_fd);
    tcase_add_test(tc, test_account_ignores_closed_fds);
    suite_add_tcase(s, tc);
    return s;
}
