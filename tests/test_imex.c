/* SPDX-License-Identifier: Apache-2.0 */
/* test_imex.c: the reasons FABRIC handles cannot work, each from a fake
 * /proc/devices and channel directory; and what nvidia-imex-ctl says, from a
 * stand-in run as the real tool would be. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "mech/imex.h"
#include "mech/imex_ctl.h"
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

/* nvidia-imex-ctl, asked through the stand-in tests/standin/nvidia-imex-ctl:
 * each test copies it, with the recorded-like domain of three nodes, into a
 * directory of its own and writes standin.conf beside it (the tool runs with
 * a cleaned environment, so the conf file is how the test speaks to it). */
static char ctl_dir[64], ctl_tool[128], ctl_domain[128];

static void copy_file(const char *from, const char *to, mode_t mode)
{
    size_t n;
    char *bytes = th_read_file(from, &n);
    int fd;

    ck_assert_msg(bytes != NULL, "%s: %s", from, strerror(errno));
    fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    ck_assert_msg(fd >= 0, "%s: %s", to, strerror(errno));
    ck_assert_int_eq(write(fd, bytes, n), (ssize_t)n);
    close(fd);
    free(bytes);
}

/* Sets the stand-in up, its conf file holding conf (sh assignments). */
static void standin(const char *conf)
{
    char path[160];
    FILE *f;

    snprintf(ctl_dir, sizeof(ctl_dir), "/tmp/gpuipc-imexctl-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(ctl_dir));
    snprintf(ctl_tool, sizeof(ctl_tool), "%s/nvidia-imex-ctl", ctl_dir);
    snprintf(ctl_domain, sizeof(ctl_domain), "%s/domain.json", ctl_dir);
    copy_file("tests/standin/nvidia-imex-ctl", ctl_tool, 0755);
    copy_file("tests/standin/domain-3-nodes.json", ctl_domain, 0644);
    snprintf(path, sizeof(path), "%s/standin.conf", ctl_dir);
    f = fopen(path, "we");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "GPUIPC_STANDIN_IMEX_N=%s\n%s\n", ctl_domain, conf);
    fclose(f);
}

static void ctl_cleanup(void)
{
    if (ctl_dir[0] != '\0')
        th_remove_tree(ctl_dir);
}

static void ask(const char *tool, unsigned timeout_ms, gpuipc_imex_daemon *d)
{
    gpuipc_err e = {0};
    int rc = gpuipc_imex_daemon_ask(tool, timeout_ms, d, &e);

    ck_assert_msg(rc == 0, "gpuipc_imex_daemon_ask: %d: %s", rc, e.msg);
}

START_TEST(test_imex_ctl_ready)
{
    gpuipc_imex_daemon d;

    standin("");
    ask(ctl_tool, 5000, &d);
    ck_assert_int_eq(d.tool, 1);
    ck_assert_int_eq(d.ready, 1);
    ck_assert_str_eq(d.state, "READY");
    ck_assert_msg(d.error[0] == '\0', "error: %s", d.error);
}
END_TEST

START_TEST(test_imex_ctl_not_ready)
{
    gpuipc_imex_daemon d;

    standin("GPUIPC_STANDIN_IMEX_Q=WAITING_FOR_PEERS");
    ask(ctl_tool, 5000, &d);
    ck_assert_int_eq(d.ready, 0);
    ck_assert_str_eq(d.state, "WAITING_FOR_PEERS");
}
END_TEST

START_TEST(test_imex_ctl_state_made_printable)
{
    gpuipc_imex_daemon d;

    standin("GPUIPC_STANDIN_IMEX_Q=$(printf 'RE\\001AD\\033Y')");
    ask(ctl_tool, 5000, &d);
    ck_assert_int_eq(d.ready, 0);
    ck_assert_str_eq(d.state, "RE?AD?Y");
}
END_TEST

START_TEST(test_imex_ctl_domain_nodes)
{
    gpuipc_imex_daemon d;

    standin("");
    ask(ctl_tool, 5000, &d);
    /* Three nodes, not the nine connections inside them. */
    ck_assert_int_eq(d.nnodes, 3);
    ck_assert_str_eq(d.node[0].addr, "10.114.0.11");
    ck_assert_str_eq(d.node[0].host, "gb200-tray01");
    ck_assert_str_eq(d.node[0].status, "READY");
    ck_assert_str_eq(d.node[2].addr, "10.114.0.13");
    ck_assert_str_eq(d.node[2].status, "UNAVAILABLE");
    ck_assert_msg(d.error[0] == '\0', "error: %s", d.error);
}
END_TEST

START_TEST(test_imex_ctl_lists_answers)
{
    gpuipc_imex_daemon d, unknown;
    const char *status = NULL;

    standin("");
    ask(ctl_tool, 5000, &d);
    ck_assert_int_eq(gpuipc_imex_daemon_lists(&d, "10.114.0.12", NULL, &status), 1);
    ck_assert_str_eq(status, "READY");
    ck_assert_int_eq(gpuipc_imex_daemon_lists(&d, NULL, "GB200-Tray03", &status), 1);
    ck_assert_str_eq(status, "UNAVAILABLE");
    ck_assert_int_eq(gpuipc_imex_daemon_lists(&d, "10.114.0.99", "gb200-tray09", &status), 0);
    ck_assert_int_eq(gpuipc_imex_daemon_lists(&d, NULL, NULL, NULL), 0);
    memset(&unknown, 0, sizeof(unknown));
    unknown.nnodes = -1;
    ck_assert_int_eq(gpuipc_imex_daemon_lists(&unknown, "10.114.0.12", NULL, &status), -1);
}
END_TEST

/* The daemon in words, as --list and the causes say it; a short host name
 * matches its fully qualified one, and only that. */
START_TEST(test_imex_ctl_said_in_words)
{
    gpuipc_imex_daemon d;
    char text[600];

    standin("GPUIPC_STANDIN_IMEX_Q=WAITING_FOR_PEERS");
    ask(ctl_tool, 5000, &d);
    gpuipc_imex_daemon_text(&d, text, sizeof(text));
    ck_assert_str_eq(text, "not READY (-q says \"WAITING_FOR_PEERS\"); its domain lists 3 "
                           "nodes: 10.114.0.11 (gb200-tray01) READY, 10.114.0.12 "
                           "(gb200-tray02) READY, 10.114.0.13 (gb200-tray03) UNAVAILABLE");
    ck_assert_int_eq(gpuipc_imex_daemon_lists(&d, NULL, "gb200-tray02.cluster.example", NULL),
                     1);
    ck_assert_int_eq(gpuipc_imex_daemon_lists(&d, NULL, "gb200-tray0", NULL), 0);
    ck_assert_int_eq(gpuipc_imex_daemon_lists(&d, NULL, "gb200-tray02x", NULL), 0);
    memset(&d, 0, sizeof(d));
    d.nnodes = -1;
    gpuipc_imex_daemon_text(&d, text, sizeof(text));
    ck_assert_msg(strncmp(text, "not installed (/", 16) == 0, "%s", text);
}
END_TEST

/* The daemon's view of a peer's node, each case, as a cause says it. */
START_TEST(test_imex_ctl_of_a_peer)
{
    gpuipc_imex_daemon d;
    char text[400];

    standin("");
    ask(ctl_tool, 5000, &d);
    gpuipc_imex_daemon_of_peer(&d, "10.114.0.12", "x", 4, text, sizeof(text));
    ck_assert_str_eq(text, "this node's IMEX daemon is READY and lists rank 4's node as READY");
    gpuipc_imex_daemon_of_peer(&d, "10.0.0.9", "gb200-tray03.example", 5, text, sizeof(text));
    ck_assert_str_eq(text, "this node's IMEX daemon (READY) lists rank 5's node as UNAVAILABLE: "
                           "the daemon there is down or out of reach (nvidia-imex-ctl -N)");
    gpuipc_imex_daemon_of_peer(&d, "10.0.0.9", "tray09", 6, text, sizeof(text));
    ck_assert_str_eq(text, "this node's IMEX daemon (READY) lists 3 nodes, none of them rank "
                           "6's address 10.0.0.9 or host tray09 (nvidia-imex-ctl -N)");
    gpuipc_imex_daemon_of_peer(&d, "", NULL, 6, text, sizeof(text));
    ck_assert_str_eq(text, "this node's IMEX daemon (READY) lists 3 nodes, none of them rank "
                           "6's address (not known) or host (not known) (nvidia-imex-ctl -N)");
    d.nnodes = -1;
    snprintf(d.error, sizeof(d.error), "exit status 255");
    gpuipc_imex_daemon_of_peer(&d, "10.0.0.9", "tray09", 6, text, sizeof(text));
    ck_assert_str_eq(text, "this node's IMEX daemon is READY; its domain's nodes not known "
                           "(nvidia-imex-ctl -N -j: exit status 255)");
    ctl_cleanup();
    standin("GPUIPC_STANDIN_IMEX_Q=WAITING_FOR_PEERS");
    ask(ctl_tool, 5000, &d);
    gpuipc_imex_daemon_of_peer(&d, "10.114.0.12", "x", 4, text, sizeof(text));
    ck_assert_str_eq(text, "this node's IMEX daemon is not READY (nvidia-imex-ctl -q: "
                           "WAITING_FOR_PEERS)");
    d.ready = -1;
    snprintf(d.error, sizeof(d.error), "no answer within 1000 ms (killed)");
    gpuipc_imex_daemon_of_peer(&d, "10.114.0.12", "x", 4, text, sizeof(text));
    ck_assert_str_eq(text, "this node's IMEX daemon did not say its state (nvidia-imex-ctl -q: "
                           "no answer within 1000 ms (killed))");
}
END_TEST

START_TEST(test_imex_ctl_malformed_json)
{
    gpuipc_imex_daemon d;
    FILE *f;

    standin("");
    f = fopen(ctl_domain, "we");
    ck_assert_ptr_nonnull(f);
    fputs("{\"nodes\": {\"0\": {\"host\": \"10.114.0.11\", \"status\": \"READY\",}}", f);
    fclose(f);
    ask(ctl_tool, 5000, &d);
    ck_assert_int_eq(d.nnodes, -1);
    ck_assert_int_eq(gpuipc_imex_daemon_lists(&d, "10.114.0.11", NULL, NULL), -1);
    ck_assert_msg(strstr(d.error, "nvidia-imex-ctl -N -j: not the JSON expected") != NULL,
                  "%s", d.error);
    ck_assert_int_eq(d.ready, 1);
}
END_TEST

START_TEST(test_imex_ctl_json_without_nodes)
{
    gpuipc_imex_daemon d;
    FILE *f;

    standin("");
    f = fopen(ctl_domain, "we");
    ck_assert_ptr_nonnull(f);
    fputs("{\"status\": \"UP\", \"members\": [{\"host\": \"10.114.0.11\"}]}\n", f);
    fclose(f);
    ask(ctl_tool, 5000, &d);
    ck_assert_int_eq(d.nnodes, -1);
    ck_assert_msg(strstr(d.error, "no \"nodes\"") != NULL, "%s", d.error);
}
END_TEST

START_TEST(test_imex_ctl_json_two_node_lists)
{
    gpuipc_imex_daemon d;
    FILE *f;

    standin("");
    f = fopen(ctl_domain, "we");
    ck_assert_ptr_nonnull(f);
    fputs("{\"nodes\": [{\"host\": \"10.0.0.1\"}], \"nodes\": [{\"host\": \"10.0.0.2\"}]}", f);
    fclose(f);
    ask(ctl_tool, 5000, &d);
    ck_assert_int_eq(d.nnodes, -1);
    ck_assert_msg(strstr(d.error, "a second \"nodes\" member") != NULL, "%s", d.error);
}
END_TEST

START_TEST(test_imex_ctl_exit_status_named)
{
    gpuipc_imex_daemon d;

    standin("GPUIPC_STANDIN_IMEX_EXIT=3");
    ask(ctl_tool, 5000, &d);
    ck_assert_int_eq(d.tool, 1);
    ck_assert_int_eq(d.ready, -1);
    ck_assert_int_eq(d.nnodes, -1);
    ck_assert_msg(strstr(d.error, "nvidia-imex-ctl -q: exit status 3") != NULL, "%s", d.error);
    ck_assert_msg(strstr(d.error, "nvidia-imex-ctl -N -j: exit status 3") != NULL, "%s",
                  d.error);
}
END_TEST

/* Whether pid has ended: it is gone (ESRCH), or it is a zombie, which is
 * what an orphan stays where its new parent is a subreaper that reaps only
 * later (a Check runner can be one). */
static int ended(pid_t pid)
{
    char path[64], buf[256], *p;
    FILE *f;
    int dead = 0;

    if (kill(pid, 0) < 0 && errno == ESRCH)
        return 1;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "re");
    if (f == NULL)
        return errno == ENOENT;
    if (fgets(buf, sizeof(buf), f) != NULL && (p = strrchr(buf, ')')) != NULL)
        dead = p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
    fclose(f);
    return dead;
}

/* Waits up to 3 s for pid to end; returns 1 if it did. */
static int gone(pid_t pid)
{
    int i;

    for (i = 0; i < 300; i++) {
        if (ended(pid))
            return 1;
        usleep(10000);
    }
    return 0;
}

START_TEST(test_imex_ctl_hang_killed_with_its_group)
{
    gpuipc_imex_daemon d;
    struct timespec t0, t1;
    char path[160];
    FILE *f;
    int pid, seen = 0;
    double s;

    standin("GPUIPC_STANDIN_IMEX_HANG=1");
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ask(ctl_tool, 300, &d);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ck_assert_msg(s < 5.0, "the ask took %.1f s", s);
    ck_assert_int_eq(d.ready, -1);
    ck_assert_int_eq(d.nnodes, -1);
    ck_assert_msg(strstr(d.error, "nvidia-imex-ctl -q: no answer within 300 ms (killed)") != NULL,
                  "%s", d.error);
    ck_assert_msg(strstr(d.error, "nvidia-imex-ctl -N -j: no answer within 300 ms (killed)") !=
                  NULL, "%s", d.error);
    /* The tool itself was reaped: no child, not even a zombie, is left. */
    ck_assert_int_eq(th_child_of(getpid()), -1);
    /* The sleep each run started in the background died with its group. */
    snprintf(path, sizeof(path), "%s/grandchild.pids", ctl_dir);
    f = fopen(path, "re");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    while (fscanf(f, "%d", &pid) == 1) {
        seen++;
        ck_assert_msg(gone(pid), "the tool's background sleep %d is still there", pid);
    }
    fclose(f);
    ck_assert_int_eq(seen, 2);
}
END_TEST

START_TEST(test_imex_ctl_relative_path_refused)
{
    gpuipc_imex_daemon d;
    gpuipc_err e = {0};

    ck_assert_int_eq(gpuipc_imex_daemon_ask("nvidia-imex-ctl", 1000, &d, &e), -EINVAL);
    ck_assert_int_eq(d.tool, 0);
    ck_assert_msg(strstr(e.msg, "not an absolute path") != NULL, "%s", e.msg);
}
END_TEST

START_TEST(test_imex_ctl_directory_refused)
{
    gpuipc_imex_daemon d;

    standin("");
    ask(ctl_dir, 1000, &d);
    ck_assert_int_eq(d.tool, 0);
    ck_assert_int_eq(d.ready, -1);
    ck_assert_int_eq(d.nnodes, -1);
    ck_assert_msg(strstr(d.error, "not a regular file (a directory)") != NULL, "%s", d.error);
}
END_TEST

START_TEST(test_imex_ctl_not_executable_refused)
{
    gpuipc_imex_daemon d;

    standin("");
    ck_assert_int_eq(chmod(ctl_tool, 0644), 0);
    ask(ctl_tool, 1000, &d);
    ck_assert_int_eq(d.tool, 0);
    ck_assert_msg(strstr(d.error, "not executable (mode 0644)") != NULL, "%s", d.error);
}
END_TEST

START_TEST(test_imex_ctl_absent_is_not_installed)
{
    gpuipc_imex_daemon d;

    ask("/nonexistent/bin/nvidia-imex-ctl", 1000, &d);
    ck_assert_int_eq(d.tool, 0);
    ck_assert_int_eq(d.ready, -1);
    ck_assert_int_eq(d.nnodes, -1);
    ck_assert_str_eq(d.state, "");
    ck_assert_msg(d.error[0] == '\0', "error: %s", d.error);
}
END_TEST

START_TEST(test_imex_ctl_output_over_cap)
{
    gpuipc_imex_daemon d;
    FILE *f;
    int i;

    standin("");
    f = fopen(ctl_domain, "we");
    ck_assert_ptr_nonnull(f);
    fputs("{\"nodes\": [", f);
    for (i = 0; i < 20000; i++)
        fputs("{\"host\": \"10.0.0.1\"},", f);
    fputs("{}]}", f);
    fclose(f);
    ask(ctl_tool, 5000, &d);
    ck_assert_int_eq(d.nnodes, -1);
    ck_assert_msg(strstr(d.error, "-N -j: more than 262144 bytes of output (killed)") != NULL,
                  "%s", d.error);
}
END_TEST

START_TEST(test_imex_ctl_fds_unchanged)
{
    gpuipc_imex_daemon d;
    int before;

    standin("GPUIPC_STANDIN_IMEX_EXIT=1");
    before = th_fd_count();
    ask(ctl_tool, 5000, &d);
    ask("/nonexistent/bin/nvidia-imex-ctl", 1000, &d);
    ask(ctl_dir, 1000, &d);
    ck_assert_int_eq(th_fd_count(), before);
}
END_TEST

/* Review: an FD this process holds without close-on-exec (a launcher's, or
 * the driver's for a handle just exported) is not inherited by the tool,
 * run as root. */
START_TEST(test_imex_ctl_inherits_no_fd)
{
    gpuipc_imex_daemon d;
    char path[200], *said;
    size_t n;
    int fd;

    standin("GPUIPC_STANDIN_IMEX_CHECK_FD=77");
    fd = open("/dev/null", O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(dup2(fd, 77), 77); /* dup2: no close-on-exec */
    close(fd);
    ask(ctl_tool, 5000, &d);
    close(77);
    snprintf(path, sizeof(path), "%s/fd.77", ctl_dir);
    said = th_read_file(path, &n);
    ck_assert_msg(said != NULL, "%s: %s", path, strerror(errno));
    ck_assert_str_eq(said, "closed\n");
    free(said);
}
END_TEST

/* The same where glibc has no posix_spawn_file_actions_addclosefrom_np
 * (before 2.34: Debian 11), each FD open named instead. */
START_TEST(test_imex_ctl_inherits_no_fd_before_glibc_2_34)
{
    setenv("GPUIPC_TEST_NO_CLOSEFROM", "1", 1);
    test_imex_ctl_inherits_no_fd_fn(0);
}
END_TEST

START_TEST(test_imex_ctl_fds_unchanged_after_kill)
{
    gpuipc_imex_daemon d;
    int before;

    standin("GPUIPC_STANDIN_IMEX_HANG=1");
    before = th_fd_count();
    ask(ctl_tool, 200, &d);
    ck_assert_int_eq(th_fd_count(), before);
}
END_TEST

START_TEST(test_imex_ctl_path_hook)
{
    gpuipc_imex_daemon d;

    unsetenv("GPUIPC_TEST_IMEX_CTL");
    ck_assert_str_eq(gpuipc_imex_ctl_path(), GPUIPC_IMEX_CTL);
    standin("GPUIPC_STANDIN_IMEX_Q=INIT_GPU");
    setenv("GPUIPC_TEST_IMEX_CTL", ctl_tool, 1);
    ck_assert_str_eq(gpuipc_imex_ctl_path(), ctl_tool);
    ask(NULL, 5000, &d);
    ck_assert_str_eq(d.state, "INIT_GPU");
    unsetenv("GPUIPC_TEST_IMEX_CTL");
}
END_TEST

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

    tc = tcase_create("imex_ctl");
    tcase_add_checked_fixture(tc, NULL, ctl_cleanup);
    tcase_add_test(tc, test_imex_ctl_ready);
    tcase_add_test(tc, test_imex_ctl_not_ready);
    tcase_add_test(tc, test_imex_ctl_state_made_printable);
    tcase_add_test(tc, test_imex_ctl_domain_nodes);
    tcase_add_test(tc, test_imex_ctl_lists_answers);
    tcase_add_test(tc, test_imex_ctl_said_in_words);
    tcase_add_test(tc, test_imex_ctl_of_a_peer);
    tcase_add_test(tc, test_imex_ctl_malformed_json);
    tcase_add_test(tc, test_imex_ctl_json_without_nodes);
    tcase_add_test(tc, test_imex_ctl_json_two_node_lists);
    tcase_add_test(tc, test_imex_ctl_exit_status_named);
    tcase_add_test(tc, test_imex_ctl_hang_killed_with_its_group);
    tcase_add_test(tc, test_imex_ctl_relative_path_refused);
    tcase_add_test(tc, test_imex_ctl_directory_refused);
    tcase_add_test(tc, test_imex_ctl_not_executable_refused);
    tcase_add_test(tc, test_imex_ctl_absent_is_not_installed);
    tcase_add_test(tc, test_imex_ctl_output_over_cap);
    tcase_add_test(tc, test_imex_ctl_fds_unchanged);
    tcase_add_test(tc, test_imex_ctl_inherits_no_fd);
    tcase_add_test(tc, test_imex_ctl_inherits_no_fd_before_glibc_2_34);
    tcase_add_test(tc, test_imex_ctl_fds_unchanged_after_kill);
    tcase_add_test(tc, test_imex_ctl_path_hook);
    suite_add_tcase(s, tc);
    return s;
}
