/* SPDX-License-Identifier: Apache-2.0 */
/* test_imex.c: the reasons FABRIC handles cannot work, each from a fake
 * /proc/devices and channel directory. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mech/imex.h"
#include "suites.h"

static char root[64], devices[128], channels[128];

static void make_root(const char *devices_text, int make_dir, int make_channel)
{
    FILE *f;

    snprintf(root, sizeof(root), "/tmp/gpuipc-imex-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    snprintf(devices, sizeof(devices), "%s/devices", root);
    snprintf(channels, sizeof(channels), "%s/nvidia-caps-imex-channels", root);
    f = fopen(devices, "w");
    ck_assert_ptr_nonnull(f);
    fputs(devices_text, f);
    fclose(f);
    if (make_dir)
        ck_assert_int_eq(mkdir(channels, 0755), 0);
    if (make_channel) {
        char path[160];
        int fd;

        snprintf(path, sizeof(path), "%s/channel0", channels);
        fd = open(path, O_CREAT | O_RDWR, 0600);
        ck_assert_int_ge(fd, 0);
        close(fd);
    }
}

#define DEVICES_WITHOUT "Character devices:\n  1 mem\n195 nvidia-frontend\n"
#define DEVICES_WITH DEVICES_WITHOUT "234 nvidia-caps-imex-channels\n"

START_TEST(test_imex_driver_without_imex)
{
    gpuipc_err e;

    make_root(DEVICES_WITHOUT, 1, 1);
    ck_assert_int_eq(gpuipc_imex_check(devices, channels, &e), -ENOTSUP);
    ck_assert_msg(strstr(e.msg, "lists no nvidia-caps-imex-channels") != NULL, "%s", e.msg);
}
END_TEST

START_TEST(test_imex_no_channel_directory)
{
    gpuipc_err e;

    make_root(DEVICES_WITH, 0, 0);
    ck_assert_int_eq(gpuipc_imex_check(devices, channels, &e), -ENOTSUP);
    ck_assert_msg(strstr(e.msg, "No such file or directory: no IMEX channel was created") != NULL,
                  "%s", e.msg);
}
END_TEST

START_TEST(test_imex_empty_channel_directory)
{
    gpuipc_err e;

    make_root(DEVICES_WITH, 1, 0);
    ck_assert_int_eq(gpuipc_imex_check(devices, channels, &e), -ENOTSUP);
    ck_assert_msg(strstr(e.msg, "holds no channel file") != NULL, "%s", e.msg);
}
END_TEST

START_TEST(test_imex_channel_present)
{
    gpuipc_err e;

    make_root(DEVICES_WITH, 1, 1);
    ck_assert_int_eq(gpuipc_imex_check(devices, channels, &e), 0);
}
END_TEST

START_TEST(test_imex_unreadable_devices_list)
{
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_imex_check("/nonexistent/devices", "/nonexistent", &e), -ENOTSUP);
    ck_assert_msg(strstr(e.msg, "cannot read /nonexistent/devices") != NULL, "%s", e.msg);
}
END_TEST

static void cleanup(void)
{
    char cmd[200];

    if (root[0] != '\0') {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", root);
    }
}

Suite *imex_suite(void)
{
    Suite *s = suite_create("imex");
    TCase *tc = tcase_create("imex");

    tcase_add_checked_fixture(tc, NULL, cleanup);
    tcase_add_test(tc, test_imex_driver_without_imex);
    tcase_add_test(tc, test_imex_no_channel_directory);
    tcase_add_test(tc, test_imex_empty_channel_directory);
    tcase_add_test(tc, test_imex_channel_present);
    tcase_add_test(tc, test_imex_unreadable_devices_list);
    suite_add_tcase(s, tc);
    return s;
}
