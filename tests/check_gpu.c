/* check_gpu.c: the GPU suite, run on a machine with a GPU (make check-gpu):
 * ./gpuipc_test with the default and a 4 GiB size, each sabotage on the VMM
 * path, and a consumer killed with SIGKILL in the middle of a GPU scenario.
 * Exits 77 with the reason if this machine has no GPU. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "helpers.h"

static th_run run;

#define OUT_HAS(text) ck_assert_msg(strstr(run.out, (text)) != NULL, "output lacks '%s':\n%s", \
                                    (text), run.out)

static void spawn(const char *const *args, const char *const *env, double timeout_s,
                  th_line_fn on_line)
{
    ck_assert_int_eq(th_spawn(&run, args, env, timeout_s, 5.0, on_line, NULL), 0);
}

START_TEST(test_gpu_default_run_passes_both_ways)
{
    const char *args[] = {NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("vmm      PASS   64 MiB     0/8388608 bad          0/8388608 bad");
    OUT_HAS("kernels self-tested");
    OUT_HAS("consumer: exited 0");
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

START_TEST(test_gpu_4g_passes_both_ways)
{
    const char *args[] = {"--size", "4G", NULL};

    spawn(args, NULL, 120, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("vmm      PASS   4 GiB      0/536870912 bad        0/536870912 bad");
}
END_TEST

START_TEST(test_gpu_vmm_and_memfd_in_one_session)
{
    const char *args[] = {"--only", "vmm,memfd", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("vmm      PASS");
    OUT_HAS("memfd    PASS");
}
END_TEST

static const char *const sabotages[] = {
    "GPUIPC_SABOTAGE=producer:skip-write",
    "GPUIPC_SABOTAGE=producer:wrong-seed",
    "GPUIPC_SABOTAGE=consumer:skip-write",
    "GPUIPC_SABOTAGE=consumer:wrong-seed",
};

START_TEST(test_gpu_sabotage_is_caught)
{
    const char *env[] = {sabotages[_i], NULL};
    const char *args[] = {NULL};

    spawn(args, env, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "%s: status 0x%x:\n%s", sabotages[_i], run.status, run.out);
    OUT_HAS("8388608 mismatches in 8388608 words; first bad word 0 (byte offset 0x0)");
    OUT_HAS("vmm      FAIL");
}
END_TEST

/* Returns the pid of a child of parent, or -1. */
static pid_t child_of(pid_t parent)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    pid_t found = -1;

    while (d != NULL && (de = readdir(d)) != NULL && found < 0) {
        char path[300], buf[512], *p;
        FILE *f;
        int ppid;

        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
        f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(buf, sizeof(buf), f) != NULL && (p = strrchr(buf, ')')) != NULL &&
            sscanf(p + 2, "%*c %d", &ppid) == 1 && ppid == parent)
            found = atoi(de->d_name);
        fclose(f);
    }
    if (d != NULL)
        closedir(d);
    return found;
}

static pid_t killed;

/* The consumer has imported, mapped and verified the GPU memory and stops
 * before writing: kill -9 it there, from outside, as a crash would. */
static void kill_consumer_mid_scenario(const char *line, pid_t pgid, void *arg)
{
    (void)arg;
    if (killed == 0 && strstr(line, "FAULT INJECTED: hang at write") != NULL) {
        killed = child_of(pgid);
        if (killed > 0)
            kill(killed, SIGKILL);
    }
}

START_TEST(test_gpu_consumer_killed_mid_scenario_is_reported)
{
    const char *env[] = {"GPUIPC_FAULT=consumer:write:hang", NULL};
    const char *args[] = {"--size", "1G", "--timeout", "20", NULL};

    spawn(args, env, 60, kill_consumer_mid_scenario);
    ck_assert_msg(killed > 0, "the consumer was never found to kill:\n%s", run.out);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("producer  vmm     report   FAIL peer gone during report: the consumer closed the "
            "connection");
    OUT_HAS("consumer: killed by signal 9 (SIGKILL)");
    ck_assert_msg(run.seconds < 20.0, "took %.2f s, the deadline is 20 s", run.seconds);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

START_TEST(test_gpu_producer_killed_mid_scenario_is_reported)
{
    const char *env[] = {"GPUIPC_FAULT=producer:check:kill", NULL};
    const char *args[] = {"--timeout", "20", NULL};

    spawn(args, env, 60, NULL);
    ck_assert(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGKILL);
    ck_assert_msg(th_line_has(run.out, "  consumer  ", "FAIL peer gone during end"),
                  "the consumer did not report it:\n%s", run.out);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

int main(void)
{
    const char *args[] = {"--list", NULL};
    Suite *s = suite_create("gpu");
    TCase *tc = tcase_create("vmm");
    SRunner *sr;
    int failed;

    /* Skip, visibly, where there is nothing to test. */
    if (th_spawn(&run, args, NULL, 60, 1, NULL, NULL) != 0 ||
        strstr(run.out, "  vmm     yes") == NULL) {
        printf("SKIP: check_gpu: vmm cannot run here (see ./gpuipc_test --list)\n");
        return 77;
    }
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_gpu_default_run_passes_both_ways);
    tcase_add_test(tc, test_gpu_4g_passes_both_ways);
    tcase_add_test(tc, test_gpu_vmm_and_memfd_in_one_session);
    tcase_add_loop_test(tc, test_gpu_sabotage_is_caught, 0,
                        (int)(sizeof(sabotages) / sizeof(sabotages[0])));
    tcase_add_test(tc, test_gpu_consumer_killed_mid_scenario_is_reported);
    tcase_add_test(tc, test_gpu_producer_killed_mid_scenario_is_reported);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_VERBOSE);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
