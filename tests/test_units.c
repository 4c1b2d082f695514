/* SPDX-License-Identifier: Apache-2.0 */
/* test_units.c: sizes, durations and UUIDs as people type and read them. */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "core/names.h"
#include "core/units.h"
#include "suites.h"

static const struct {
    const char *text;
    uint64_t bytes;
} good_sizes[] = {
    {"4096", 4096},          {"64M", 64ull << 20},   {"64m", 64ull << 20},
    {"2G", 2ull << 30},      {"2GiB", 2ull << 30},   {"1.5G", 3ull << 29},
    {"16T", 16ull << 40},    {"512K", 512ull << 10}, {"100B", 100},
};

START_TEST(test_units_parses_sizes)
{
    uint64_t v = 0;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_units_parse_size(good_sizes[_i].text, &v, &e), 0);
    ck_assert_uint_eq(v, good_sizes[_i].bytes);
}
END_TEST

static const struct {
    const char *text;
    int rc;
    const char *reason;
} bad_sizes[] = {
    {"banana", -EINVAL, "'banana' is not a size"},
    {"", -EINVAL, "is not a size"},
    {"-5M", -EINVAL, "is not a size"},
    {"0", -ERANGE, "is zero bytes"},
    {"17T", -ERANGE, "larger than the 16 TiB limit"},
    {"64MB", -EINVAL, "unknown unit 'MB'"},
    {"1.3", -EINVAL, "not a whole number of bytes"},
    {"99999999999999999999999", -ERANGE, "too large"},
};

START_TEST(test_units_rejects_bad_sizes)
{
    uint64_t v = 7;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_units_parse_size(bad_sizes[_i].text, &v, &e), bad_sizes[_i].rc);
    ck_assert_msg(strstr(e.msg, bad_sizes[_i].reason) != NULL, "'%s': reason '%s'",
                  bad_sizes[_i].text, e.msg);
    ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(test_units_parses_durations)
{
    uint64_t ns;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_units_parse_duration("30", &ns, &e), 0);
    ck_assert_uint_eq(ns, 30000000000ull);
    ck_assert_int_eq(gpuipc_units_parse_duration("2.5", &ns, &e), 0);
    ck_assert_uint_eq(ns, 2500000000ull);
    ck_assert_int_eq(gpuipc_units_parse_duration("500ms", &ns, &e), 0);
    ck_assert_uint_eq(ns, 500000000ull);
    ck_assert_int_eq(gpuipc_units_parse_duration("1s", &ns, &e), 0);
    ck_assert_uint_eq(ns, 1000000000ull);
}
END_TEST

START_TEST(test_units_rejects_bad_durations)
{
    uint64_t ns;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_units_parse_duration("0", &ns, &e), -ERANGE);
    ck_assert_int_eq(gpuipc_units_parse_duration("soon", &ns, &e), -EINVAL);
    ck_assert_int_eq(gpuipc_units_parse_duration("5m", &ns, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, "unknown unit 'm'") != NULL, "reason: %s", e.msg);
    ck_assert_int_eq(gpuipc_units_parse_duration("90000", &ns, &e), -ERANGE);
}
END_TEST

START_TEST(test_units_formats_sizes)
{
    char buf[32];

    ck_assert_str_eq(gpuipc_units_format_size(64ull << 20, buf, sizeof(buf)), "64 MiB");
    ck_assert_str_eq(gpuipc_units_format_size(3ull << 29, buf, sizeof(buf)), "1.50 GiB");
    ck_assert_str_eq(gpuipc_units_format_size(1000, buf, sizeof(buf)), "1000 B");
    ck_assert_str_eq(gpuipc_units_format_size(4096, buf, sizeof(buf)), "4 KiB");
    ck_assert_str_eq(gpuipc_units_format_size(0, buf, sizeof(buf)), "0 B");
}
END_TEST

START_TEST(test_units_formats_uuid_like_nvidia_smi)
{
    const uint8_t u[16] = {0x5c, 0x3a, 0x01, 0x02, 0xaa, 0xbb, 0xcc, 0xdd,
                           0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77};
    char buf[48];

    ck_assert_str_eq(gpuipc_units_format_uuid(u, buf, sizeof(buf)),
                     "GPU-5c3a0102-aabb-ccdd-0011-223344556677");
}
END_TEST

START_TEST(test_units_finds_the_kernel_module_version)
{
    char v[32];

    ck_assert_int_eq(gpuipc_units_nvrm_version(
                         "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Sun Oct  "
                         "5 2025\nGCC version:  gcc version 13.3.0\n", v, sizeof(v)), 0);
    ck_assert_str_eq(v, "580.159.04");
    ck_assert_int_eq(gpuipc_units_nvrm_version(
                         "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  "
                         "Release Build  (dvs-builder@U16)\n", v, sizeof(v)), 0);
    ck_assert_str_eq(v, "570.86.15");
    ck_assert_int_eq(gpuipc_units_nvrm_version("GCC version: 13.3.0\n", v, sizeof(v)), -ENOENT);
    ck_assert_str_eq(v, "");
    /* A version on the next line is not this line's. */
    ck_assert_int_eq(gpuipc_units_nvrm_version("NVRM version: Kernel Module\n1.2.3\n", v,
                                               sizeof(v)), -ENOENT);
}
END_TEST

/* The program's own names of errno values and signals (glibc's came in
 * 2.32; the program runs on 2.28). Where this C library has them, every
 * value's name is held against its own. */
START_TEST(test_units_names_errnos_and_signals)
{
    int v;

    ck_assert_str_eq(gpuipc_errno_name(ENOENT), "ENOENT");
    ck_assert_str_eq(gpuipc_errno_name(ECONNREFUSED), "ECONNREFUSED");
    ck_assert_ptr_null(gpuipc_errno_name(0));
    ck_assert_ptr_null(gpuipc_errno_name(100000));
    ck_assert_str_eq(gpuipc_sig_abbrev(SIGINT), "INT");
    ck_assert_str_eq(gpuipc_sig_abbrev(SIGTERM), "TERM");
    ck_assert_str_eq(gpuipc_sig_abbrev(SIGHUP), "HUP");
    ck_assert_str_eq(gpuipc_sig_abbrev(SIGKILL), "KILL");
    ck_assert_ptr_null(gpuipc_sig_abbrev(0));
    ck_assert_ptr_null(gpuipc_sig_abbrev(1000));
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 32)
    for (v = 1; v < 134; v++) {
        const char *theirs = strerrorname_np(v), *ours = gpuipc_errno_name(v);

        ck_assert_msg((theirs == NULL) == (ours == NULL) &&
                      (theirs == NULL || strcmp(theirs, ours) == 0),
                      "errno %d: the C library says %s, this table %s", v,
                      theirs ? theirs : "nothing", ours ? ours : "nothing");
    }
    for (v = 1; v < 32; v++) {
        const char *theirs = sigabbrev_np(v), *ours = gpuipc_sig_abbrev(v);

        ck_assert_msg(theirs != NULL && ours != NULL && strcmp(theirs, ours) == 0,
                      "signal %d: the C library says %s, this table %s", v,
                      theirs ? theirs : "nothing", ours ? ours : "nothing");
    }
#else
    (void)v;
#endif
}
END_TEST

Suite *units_suite(void)
{
    Suite *s = suite_create("units");
    TCase *tc = tcase_create("units");

    tcase_add_loop_test(tc, test_units_parses_sizes, 0,
                        (int)(sizeof(good_sizes) / sizeof(good_sizes[0])));
    tcase_add_loop_test(tc, test_units_rejects_bad_sizes, 0,
                        (int)(sizeof(bad_sizes) / sizeof(bad_sizes[0])));
    tcase_add_test(tc, test_units_parses_durations);
    tcase_add_test(tc, test_units_names_errnos_and_signals);
    tcase_add_test(tc, test_units_rejects_bad_durations);
    tcase_add_test(tc, test_units_formats_sizes);
    tcase_add_test(tc, test_units_formats_uuid_like_nvidia_smi);
    tcase_add_test(tc, test_units_finds_the_kernel_module_version);
    suite_add_tcase(s, tc);
    return s;
}
