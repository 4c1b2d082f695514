/* SPDX-License-Identifier: Apache-2.0 */
/* test_kmsg.c: the NVIDIA driver's Xid and fabric lines picked from the
 * kernel log (lib/core/kmsg.c), from logs recorded here in a temporary
 * directory, and once from this machine's /dev/kmsg. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/kmsg.h"
#include "helpers.h"
#include "suites.h"

/* A recorded log in a directory of its own, removed by the test. */
typedef struct recorded {
    char dir[64];
    char path[96];
} recorded;

static void record_bytes(recorded *r, const char *text, size_t len)
{
    FILE *fp;

    snprintf(r->dir, sizeof(r->dir), "/tmp/gpuipc-kmsg-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(r->dir));
    snprintf(r->path, sizeof(r->path), "%s/kmsg", r->dir);
    fp = fopen(r->path, "w");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(text, 1, len, fp), len);
    ck_assert_int_eq(fclose(fp), 0);
}

static void record(recorded *r, const char *text)
{
    record_bytes(r, text, strlen(text));
}

/* Reads r's log from since_us for the GPUs named, expecting success. */
static void read_log(const recorded *r, uint64_t since_us, const char *const *ids, size_t n,
                     gpuipc_kmsg_found *f)
{
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_kmsg_gpu_lines(r->path, since_us, ids, n, f, &e), 0);
    ck_assert_msg(f->readable == 1, "not readable: %s", f->error);
}

static double seconds_since(uint64_t t0_us)
{
    return (double)(gpuipc_kmsg_now_us() - t0_us) / 1e6;
}

START_TEST(test_kmsg_keeps_only_the_named_gpus_xid)
{
    static const char *const ids[] = {"00000000:1B:00.0"};
    recorded r;
    gpuipc_kmsg_found f;

    record(&r, "3,100,5000000,-;NVRM: Xid (PCI:0000:3c:00): 79, pid=1234, name=python, "
               "GPU has fallen off the bus.\n"
               "3,101,5000100,-;NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, name=python, "
               "GPU has fallen off the bus.\n");
    read_log(&r, 0, ids, 1, &f);
    th_remove_tree(r.dir);
    ck_assert_uint_eq(f.nmatched, 1);
    ck_assert_uint_eq(f.nlines, 1);
    ck_assert_msg(strstr(f.line[0], "Xid (PCI:0000:1b:00): 79") != NULL, "%s", f.line[0]);
}
END_TEST

START_TEST(test_kmsg_keeps_every_gpu_where_none_is_named)
{
    recorded r;
    gpuipc_kmsg_found f;

    record(&r, "3,100,5000000,-;NVRM: Xid (PCI:0000:3c:00): 79, pid=1, name=a, x\n"
               "3,101,5000100,-;NVRM: Xid (PCI:0000:1b:00): 13, pid=1, name=a, x\n");
    read_log(&r, 0, NULL, 0, &f);
    th_remove_tree(r.dir);
    ck_assert_uint_eq(f.nmatched, 2);
}
END_TEST

START_TEST(test_kmsg_matches_the_old_form_without_pci)
{
    static const char *const ids[] = {"0000:01:00.0"};
    recorded r;
    gpuipc_kmsg_found f;

    /* Drivers of about 2012 wrote the address without "PCI:". */
    record(&r, "4,7,4909922970,-;NVRM: Xid (0000:01:00): 13, 0005 00000000 0000502d\n");
    read_log(&r, 0, ids, 1, &f);
    th_remove_tree(r.dir);
    ck_assert_uint_eq(f.nmatched, 1);
}
END_TEST

START_TEST(test_kmsg_leaves_out_records_before_since)
{
    recorded r;
    gpuipc_kmsg_found f;

    record(&r, "3,1,4999999,-;NVRM: Xid (PCI:0000:1b:00): 79, before the run\n"
               "3,2,5000000,-;NVRM: Xid (PCI:0000:1b:00): 79, at its start\n"
               "3,3,6234000,-;NVRM: Xid (PCI:0000:1b:00): 79, during it\n");
    read_log(&r, 5000000, NULL, 0, &f);
    th_remove_tree(r.dir);
    ck_assert_uint_eq(f.nmatched, 2);
    ck_assert_str_eq(f.line[0], "[+0.000 s] NVRM: Xid (PCI:0000:1b:00): 79, at its start");
    ck_assert_str_eq(f.line[1], "[+1.234 s] NVRM: Xid (PCI:0000:1b:00): 79, during it");
}
END_TEST

START_TEST(test_kmsg_keeps_the_fabric_not_found_line)
{
    static const char *const ids[] = {"0000:1b:00.0"};
    recorded r;
    gpuipc_kmsg_found f;

    record(&r, "3,9,7000000,-;NVRM: nvAssertOkFailedNoLog: Assertion failed: Requested object "
               "not found [NV_ERR_OBJECT_NOT_FOUND] (0x00000057) returned from "
               "btreeSearch(pteArray[0], &pNode, pFabricVAS->pFabricVaToGpaMap) @ "
               "fabric_vaspace.c:727\n"
               "6,10,7000001,-;NVRM: loading NVIDIA UNIX Open Kernel Module\n");
    read_log(&r, 0, ids, 1, &f);
    th_remove_tree(r.dir);
    ck_assert_uint_eq(f.nmatched, 1);
    ck_assert_msg(strstr(f.line[0], "NV_ERR_OBJECT_NOT_FOUND") != NULL, "%s", f.line[0]);
}
END_TEST

START_TEST(test_kmsg_keeps_eight_and_counts_the_rest)
{
    char text[4096];
    size_t o = 0;
    unsigned i;
    recorded r;
    gpuipc_kmsg_found f;

    for (i = 0; i < 11; i++)
        o += (size_t)snprintf(text + o, sizeof(text) - o,
                              "3,%u,%u,-;NVRM: Xid (PCI:0000:1b:00): 31, fault %u\n", i,
                              1000000 + i, i);
    record(&r, text);
    read_log(&r, 0, NULL, 0, &f);
    th_remove_tree(r.dir);
    ck_assert_uint_eq(f.nlines, GPUIPC_KMSG_MAX_LINES);
    ck_assert_uint_eq(f.nmatched, 11);
    ck_assert_msg(strstr(f.line[7], "fault 7") != NULL, "%s", f.line[7]);
}
END_TEST

START_TEST(test_kmsg_escapes_control_bytes)
{
    static const char text[] = "3,1,1000000,-;NVRM: Xid (PCI:0000:1b:00): 79, \x01\x1b[31m\xff"
                               "\0end\r\n";
    recorded r;
    gpuipc_kmsg_found f;
    const char *c;

    record_bytes(&r, text, sizeof(text) - 1);
    read_log(&r, 0, NULL, 0, &f);
    th_remove_tree(r.dir);
    ck_assert_uint_eq(f.nlines, 1);
    for (c = f.line[0]; *c != '\0'; c++)
        ck_assert_msg(*c >= 0x20 && *c < 0x7f, "byte 0x%02x at %td", (unsigned char)*c,
                      c - f.line[0]);
    ck_assert_msg(strstr(f.line[0], "79, \\x01\\x1b[31m\\xff\\x00end\\x0d") != NULL, "%s",
                  f.line[0]);
}
END_TEST

START_TEST(test_kmsg_ignores_lines_that_are_no_records)
{
    static const char text[] = "garbage NVRM: Xid (PCI:0000:1b:00): 79\n"
                               "x,1,2,-;NVRM: Xid (PCI:0000:1b:00): 79, no priority\n"
                               "3,1;NVRM: Xid (PCI:0000:1b:00): 79, no time\n"
                               "\xfe\xfe\x01\x02;;;,,\n"
                               "\n"
                               "3,2,1000000,-;NVRM: Xid (PCI:0000:1b:00): 79, the record\n";
    recorded r;
    gpuipc_kmsg_found f;

    record_bytes(&r, text, sizeof(text) - 1);
    read_log(&r, 0, NULL, 0, &f);
    th_remove_tree(r.dir);
    ck_assert_uint_eq(f.nmatched, 1);
    ck_assert_msg(strstr(f.line[0], "the record") != NULL, "%s", f.line[0]);
}
END_TEST

START_TEST(test_kmsg_ignores_continuation_lines)
{
    recorded r;
    gpuipc_kmsg_found f;

    record(&r, "3,1,1000000,-;NVRM: Xid (PCI:0000:1b:00): 79, the record\n"
               " SUBSYSTEM=pci\n"
               " DEVICE=+pci:0000:1b:00.0\n"
               " 3,2,1000001,-;NVRM: Xid (PCI:0000:1b:00): 31, a continuation\n");
    read_log(&r, 0, NULL, 0, &f);
    th_remove_tree(r.dir);
    ck_assert_uint_eq(f.nmatched, 1);
}
END_TEST

START_TEST(test_kmsg_leaves_out_user_space_lines)
{
    recorded r;
    gpuipc_kmsg_found f;

    /* 14: facility user, as `echo ... > /dev/kmsg` writes. */
    record(&r, "14,1,1000000,-;NVRM: Xid (PCI:0000:1b:00): 79, written by a user\n");
    read_log(&r, 0, NULL, 0, &f);
    th_remove_tree(r.dir);
    ck_assert_uint_eq(f.nmatched, 0);
}
END_TEST

START_TEST(test_kmsg_stops_at_the_record_bound)
{
    FILE *fp;
    recorded r;
    gpuipc_kmsg_found f;
    unsigned i;

    record(&r, "");
    fp = fopen(r.path, "w");
    ck_assert_ptr_nonnull(fp);
    for (i = 0; i < GPUIPC_KMSG_MAX_RECORDS; i++)
        fprintf(fp, "6,%u,%u,-;usb 1-1: new device\n", i, i);
    fprintf(fp, "3,%u,%u,-;NVRM: Xid (PCI:0000:1b:00): 79, too late\n", i, i);
    ck_assert_int_eq(fclose(fp), 0);
    read_log(&r, 0, NULL, 0, &f);
    th_remove_tree(r.dir);
    ck_assert_uint_eq(f.nmatched, 0);
    ck_assert_int_eq(f.partial, 1);
}
END_TEST

START_TEST(test_kmsg_refuses_a_fifo)
{
    recorded r;
    gpuipc_kmsg_found f;
    gpuipc_err e;
    uint64_t t0;

    snprintf(r.dir, sizeof(r.dir), "/tmp/gpuipc-kmsg-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(r.dir));
    snprintf(r.path, sizeof(r.path), "%s/fifo", r.dir);
    ck_assert_int_eq(mkfifo(r.path, 0600), 0);
    t0 = gpuipc_kmsg_now_us();
    ck_assert_int_eq(gpuipc_kmsg_gpu_lines(r.path, 0, NULL, 0, &f, &e), 0);
    ck_assert_msg(seconds_since(t0) < 1.0, "took %.3f s", seconds_since(t0));
    th_remove_tree(r.dir);
    ck_assert_int_eq(f.readable, 0);
    ck_assert_msg(strstr(f.error, "not the kernel log") != NULL, "%s", f.error);
}
END_TEST

/* Review: the path may come from the environment (GPUIPC_TEST_KMSG) of a
 * run as root, and opening a device can act (a watchdog starts, a tape
 * rewinds): a character device other than /dev/kmsg (1:11) is refused
 * before it is opened. /dev/null (1:3) stands for one here. */
START_TEST(test_kmsg_refuses_a_device_other_than_dev_kmsg)
{
    gpuipc_kmsg_found f;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_kmsg_gpu_lines("/dev/null", 0, NULL, 0, &f, &e), 0);
    ck_assert_int_eq(f.readable, 0);
    ck_assert_msg(strstr(f.error, "not the kernel log") != NULL, "%s", f.error);
}
END_TEST

START_TEST(test_kmsg_names_the_errno_of_a_missing_file)
{
    gpuipc_kmsg_found f;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_kmsg_gpu_lines("/nonexistent/kmsg", 0, NULL, 0, &f, &e), 0);
    ck_assert_int_eq(f.readable, 0);
    ck_assert_msg(strstr(f.error, "ENOENT") != NULL, "%s", f.error);
}
END_TEST

START_TEST(test_kmsg_rejects_a_bus_id_that_is_no_address)
{
    static const char *const ids[] = {"0000:1b:00.0", "GPU-1234"};
    gpuipc_kmsg_found f;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_kmsg_gpu_lines("/nonexistent/kmsg", 0, ids, 2, &f, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, "bus id 1") != NULL, "%s", e.msg);
}
END_TEST

START_TEST(test_kmsg_test_hook_names_the_log)
{
    recorded r;
    gpuipc_kmsg_found f;
    gpuipc_err e;

    record(&r, "3,1,1000000,-;NVRM: Xid (PCI:0000:1b:00): 79, from the hook\n");
    setenv("GPUIPC_TEST_KMSG", r.path, 1);
    ck_assert_int_eq(gpuipc_kmsg_gpu_lines(NULL, 0, NULL, 0, &f, &e), 0);
    unsetenv("GPUIPC_TEST_KMSG");
    th_remove_tree(r.dir);
    ck_assert_uint_eq(f.nmatched, 1);
}
END_TEST

START_TEST(test_kmsg_holds_no_fd)
{
    static const char *const ids[] = {"0000:1b:00.0"};
    recorded r;
    gpuipc_kmsg_found f;
    gpuipc_err e;
    char fifo[128];
    int before = th_fd_count();

    record(&r, "3,1,1000000,-;NVRM: Xid (PCI:0000:1b:00): 79, x\n");
    snprintf(fifo, sizeof(fifo), "%s/fifo", r.dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(gpuipc_kmsg_gpu_lines(r.path, 0, ids, 1, &f, &e), 0);
    ck_assert_int_eq(gpuipc_kmsg_gpu_lines(fifo, 0, ids, 1, &f, &e), 0);
    ck_assert_int_eq(gpuipc_kmsg_gpu_lines(r.dir, 0, ids, 1, &f, &e), 0);
    ck_assert_int_eq(gpuipc_kmsg_gpu_lines("/nonexistent/kmsg", 0, ids, 1, &f, &e), 0);
    ck_assert_int_eq(gpuipc_kmsg_gpu_lines(GPUIPC_KMSG, 0, ids, 1, &f, &e), 0);
    th_remove_tree(r.dir);
    ck_assert_int_eq(th_fd_count(), before);
}
END_TEST

START_TEST(test_kmsg_reads_this_machines_log_at_once)
{
    gpuipc_kmsg_found f;
    gpuipc_err e;
    uint64_t t0;
    int fd = open(GPUIPC_KMSG, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    char one[8192];

    /* Where this process may not read the log, there is nothing to test. */
    if (fd < 0 || (read(fd, one, sizeof(one)) < 0 && errno != EAGAIN && errno != EPIPE)) {
        fprintf(stderr, "test_kmsg_reads_this_machines_log_at_once: %s not readable here (%s)\n",
                GPUIPC_KMSG, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    close(fd);
    unsetenv("GPUIPC_TEST_KMSG");
    t0 = gpuipc_kmsg_now_us();
    ck_assert_int_eq(gpuipc_kmsg_gpu_lines(NULL, t0, NULL, 0, &f, &e), 0);
    ck_assert_msg(seconds_since(t0) < 2.0, "took %.3f s", seconds_since(t0));
    ck_assert_msg(f.readable == 1, "%s", f.error);
}
END_TEST

Suite *kmsg_suite(void)
{
    Suite *s = suite_create("kmsg");
    TCase *tc = tcase_create("kmsg");

    tcase_add_test(tc, test_kmsg_keeps_only_the_named_gpus_xid);
    tcase_add_test(tc, test_kmsg_keeps_every_gpu_where_none_is_named);
    tcase_add_test(tc, test_kmsg_matches_the_old_form_without_pci);
    tcase_add_test(tc, test_kmsg_leaves_out_records_before_since);
    tcase_add_test(tc, test_kmsg_keeps_the_fabric_not_found_line);
    tcase_add_test(tc, test_kmsg_keeps_eight_and_counts_the_rest);
    tcase_add_test(tc, test_kmsg_escapes_control_bytes);
    tcase_add_test(tc, test_kmsg_ignores_lines_that_are_no_records);
    tcase_add_test(tc, test_kmsg_ignores_continuation_lines);
    tcase_add_test(tc, test_kmsg_leaves_out_user_space_lines);
    tcase_add_test(tc, test_kmsg_stops_at_the_record_bound);
    tcase_add_test(tc, test_kmsg_refuses_a_fifo);
    tcase_add_test(tc, test_kmsg_refuses_a_device_other_than_dev_kmsg);
    tcase_add_test(tc, test_kmsg_names_the_errno_of_a_missing_file);
    tcase_add_test(tc, test_kmsg_rejects_a_bus_id_that_is_no_address);
    tcase_add_test(tc, test_kmsg_test_hook_names_the_log);
    tcase_add_test(tc, test_kmsg_holds_no_fd);
    tcase_add_test(tc, test_kmsg_reads_this_machines_log_at_once);
    suite_add_tcase(s, tc);
    return s;
}
