/* check_gpu.c: the GPU suite, run on a machine with a GPU (make check-gpu):
 * ./gpuipc_test with the default and a 4 GiB size, each sabotage on the VMM
 * path, and a consumer killed with SIGKILL in the middle of a GPU scenario.
 * Exits 77 with the reason if this machine has no GPU. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

/* The mechanisms that run on a single GPU with a POSIX-FD driver (the
 * H100 machine): each must pass both ways in the default run. */
static const char *const runnable[] = {"vmm",           "vmm-pidfd",  "vmm-chunks",
                                       "vmm-compressible", "vmm-host-numa", "vmm-alias",
                                       "vmm-readonly",  "legacy-ipc", "mempool-ipc"};
#define N_RUNNABLE (int)(sizeof(runnable) / sizeof(runnable[0]))

/* Those whose consumer writes (all but vmm-readonly), for the sabotages that
 * need a consumer write to spoil. */
static const char *const writers[] = {"vmm",           "vmm-pidfd",  "vmm-chunks",
                                      "vmm-compressible", "vmm-host-numa", "vmm-alias",
                                      "legacy-ipc",    "mempool-ipc"};
#define N_WRITERS (int)(sizeof(writers) / sizeof(writers[0]))

/* The first two spoil the producer's bytes, the last two the consumer's. */
static const char *const sabotages[] = {
    "GPUIPC_SABOTAGE=producer:skip-write",
    "GPUIPC_SABOTAGE=producer:wrong-seed",
    "GPUIPC_SABOTAGE=consumer:skip-write",
    "GPUIPC_SABOTAGE=consumer:wrong-seed",
};
#define N_SABOTAGES (int)(sizeof(sabotages) / sizeof(sabotages[0]))

static void out_has_row(const char *mech, const char *rest)
{
    char want[128];

    snprintf(want, sizeof(want), "  %-16s %s", mech, rest);
    OUT_HAS(want);
}

START_TEST(test_gpu_default_run_passes_both_ways)
{
    const char *args[] = {NULL};
    int i;

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    for (i = 0; i < N_RUNNABLE; i++)
        out_has_row(runnable[i], "PASS   64 MiB     0/8388608 bad          0/8388608 bad");
    OUT_HAS("kernels self-tested");
    OUT_HAS("consumer: exited 0");
    ck_assert_int_eq(run.leftover, 0);
    /* vmm-offset passes where the driver maps at an offset, else is a skip. */
    ck_assert_msg(strstr(run.out, "  vmm-offset       PASS   64 MiB     0/8388608 bad") ||
                  strstr(run.out, "  vmm-offset       SKIP"), "vmm-offset:\n%s", run.out);
}
END_TEST

/* A non-zero cuMemMap offset into an imported handle: verified where the
 * driver allows it, else a skip that names the refusal and the driver. */
START_TEST(test_gpu_offset_passes_or_names_the_refusal)
{
    const char *args[] = {"--only", "vmm,vmm-offset", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    if (strstr(run.out, "  vmm-offset       PASS") != NULL) {
        OUT_HAS("mapped from offset 2 MiB of the allocation");
        return;
    }
    OUT_HAS("  vmm-offset       SKIP");
    OUT_HAS("unsupported by driver ");
    OUT_HAS("into an imported handle returns CUDA_ERROR_NOT_SUPPORTED");
}
END_TEST

/* The capability report on a GPU machine: valid JSON naming the driver,
 * each device's granularity and attributes, and the verdicts. */
START_TEST(test_gpu_list_json_describes_the_devices)
{
    const char *args[] = {"--list", "--json", NULL};
    char why[160];

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(th_json_valid(run.out, why, sizeof(why)), "%s:\n%s", why, run.out);
    OUT_HAS("\"cuda\": true");
    OUT_HAS("\"granularity_posix_fd\": {");
    OUT_HAS("\"VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED\": 1");
    OUT_HAS("\"MULTICAST_SUPPORTED\": ");
    OUT_HAS("\"name\": \"vmm\",");
}
END_TEST

/* --pairs all: with two or more GPUs, vmm passes both ways between every
 * ordered pair; with one, it is a usage error that says so. */
START_TEST(test_gpu_pairs_pass_or_need_two_gpus)
{
    const char *args[] = {"--pairs", "all", NULL};

    spawn(args, NULL, 120, NULL);
    if (th_exited(&run, 2)) {
        OUT_HAS("--pairs: this machine has 1 GPU; pairs need two or more");
        return;
    }
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    out_has_row("vmm 0->1", "PASS   64 MiB     0/8388608 bad          0/8388608 bad");
    out_has_row("vmm 1->0", "PASS   64 MiB     0/8388608 bad          0/8388608 bad");
    OUT_HAS("read and written by this process's GPU over the peer path");
}
END_TEST

/* --destructive: a kernel store into a read-only mapping faults in the
 * sacrificial consumer, which exits; the producer's bytes are unchanged and
 * nothing leaks once it is gone; the main consumer is untouched. */
START_TEST(test_gpu_destructive_fault_is_the_expected_outcome)
{
    const char *args[] = {"--only", "vmm,vmm-ro-fault", "--destructive", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("mapped read-only in a sacrificial consumer");
    OUT_HAS("refused, as it must be: the kernel's store faulted, as expected: ");
    OUT_HAS("sacrificial consumer exited 0");
    OUT_HAS("0 mismatches in 8388608 words: own pattern unchanged");
    out_has_row("vmm-ro-fault", "PASS   64 MiB     0/8388608 bad          0/8388608 bad");
    out_has_row("vmm", "PASS   64 MiB");
    OUT_HAS("consumer: exited 0; sacrificial consumer: exited 0");
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* The sacrificial consumer's verification must be able to fail too. */
START_TEST(test_gpu_destructive_sabotage_is_caught)
{
    const char *env[] = {sabotages[_i], NULL};
    const char *args[] = {"--only", "vmm-ro-fault", "--destructive", NULL};

    spawn(args, env, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "%s: status 0x%x:\n%s", env[0], run.status, run.out);
    OUT_HAS("the producer's bytes: 8388608 mismatches in 8388608 words; first bad word 0");
    OUT_HAS("sacrificial consumer: exited ");
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* 4096 chunks: 17 messages of FDs, mapped back to back, both ways. */
START_TEST(test_gpu_4096_chunks_pass)
{
    const char *args[] = {"--only", "vmm-chunks", "--chunks", "4096", NULL};

    spawn(args, NULL, 120, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("export   4096 FDs, the first 253 of them now");
    OUT_HAS("FDs 253 to 4095 received in 16 more messages and imported");
    out_has_row("vmm-chunks", "PASS   8 GiB      0/1073741824 bad       0/1073741824 bad");
}
END_TEST

static const char *const chunk_sabotages[] = {
    "GPUIPC_SABOTAGE=producer:chunk-order",
    "GPUIPC_SABOTAGE=consumer:chunk-order",
};

/* Chunks 0 and 1 swapped by either side: the pattern over the whole range
 * finds it at the first word, both ways. */
START_TEST(test_gpu_chunk_order_is_caught)
{
    const char *env[] = {chunk_sabotages[_i], NULL};
    const char *args[] = {"--only", "vmm-chunks", NULL};

    spawn(args, env, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "%s: status 0x%x:\n%s", env[0], run.status, run.out);
    OUT_HAS("the producer's bytes: 2097152 mismatches in 8388608 words; first bad word 0 ");
    OUT_HAS("check of the consumer's bytes: 2097152 mismatches in 8388608 words; first bad "
            "word 0 ");
}
END_TEST

/* `ulimit -n 64` (soft and hard) with 4096 chunks: a clean failure that
 * names RLIMIT_NOFILE and its numbers, within the deadline, nothing left. */
START_TEST(test_gpu_chunks_under_a_low_fd_limit_fail_cleanly)
{
    const char *args[] = {"--only", "vmm-chunks", "--chunks", "4096", "--timeout", "20", NULL};
    struct rlimit low = {.rlim_cur = 64, .rlim_max = 64};

    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(strstr(run.out, "(MSG_CTRUNC): 253 FDs sent") != NULL ||
                  strstr(run.out, "do not fit: RLIMIT_NOFILE is 64 (hard 64)") != NULL,
                  "no RLIMIT_NOFILE explanation:\n%s", run.out);
    ck_assert_msg(run.seconds < 20.0, "took %.2f s", run.seconds);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* Where IMEX is absent, fabric is a skip that says which piece is missing,
 * never a pass; --require makes that skip a failure. */
START_TEST(test_gpu_fabric_skip_names_the_reason)
{
    const char *args[] = {"--only", "fabric", "--quiet", NULL};

    spawn(args, NULL, 60, NULL);
    if (th_exited(&run, 0)) {
        OUT_HAS("fabric           PASS"); /* a machine with IMEX */
        return;
    }
    ck_assert_msg(th_exited(&run, 77), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("gpuipc_test: SKIP: fabric: probe: ");
    OUT_HAS("CUDA_ERROR_NOT_PERMITTED");
}
END_TEST

START_TEST(test_gpu_require_turns_a_skip_into_a_failure)
{
    const char *args[] = {"--only", "vmm,fabric", "--require", "fabric", "--quiet", NULL};

    spawn(args, NULL, 60, NULL);
    if (strstr(run.out, "fabric           PASS") != NULL)
        return; /* nothing to turn into a failure on a machine with IMEX */
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("required by --require, but skipped: ");
    OUT_HAS("vmm              PASS");
}
END_TEST

START_TEST(test_gpu_legacy_ipc_shows_the_vmm_refusal)
{
    const char *args[] = {"--only", "legacy-ipc", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("expected refusal: cuIpcGetMemHandle on a VMM (cuMemCreate) allocation returns "
            "CUDA_ERROR_INVALID_VALUE");
}
END_TEST

/* A read-only mapping: reads pass, copy-engine writes are refused with the
 * context intact, and the producer's bytes are unchanged. */
START_TEST(test_gpu_readonly_refuses_writes)
{
    const char *args[] = {"--only", "vmm-readonly", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("mapped read-only");
    OUT_HAS("refused, as it must be: cuMemGetAccess PROT_READ; cuMemcpyHtoD "
            "CUDA_ERROR_INVALID_VALUE; cuMemsetD32 CUDA_ERROR_INVALID_VALUE");
    OUT_HAS("0 mismatches in 8388608 words: own pattern unchanged");
}
END_TEST

/* The read-only consumer writes nothing to spoil; its verification must
 * still fail when the producer's bytes are wrong. */
START_TEST(test_gpu_readonly_sabotage_is_caught)
{
    const char *env[] = {sabotages[_i], NULL};
    const char *args[] = {"--only", "vmm-readonly", NULL};

    spawn(args, env, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "%s: status 0x%x:\n%s", env[0], run.status, run.out);
    OUT_HAS("the producer's bytes: 8388608 mismatches in 8388608 words; first bad word 0");
}
END_TEST

/* HOST_NUMA memory: the producer's CPU writes, the consumer's GPU and CPU
 * read it; the consumer's GPU writes, its CPU and the producer's CPU read. */
START_TEST(test_gpu_host_numa_is_shared_by_cpus_and_gpu)
{
    const char *args[] = {"--only", "vmm-host-numa", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("on host NUMA node 0, granularity 2 MiB; the CPU fills and checks it");
    OUT_HAS("the producer's bytes read through this process's CPU: 0 mismatches in 8388608 words");
    OUT_HAS("this side's own write read through this process's CPU: 0 mismatches in 8388608 "
            "words");
}
END_TEST

START_TEST(test_gpu_alias_reads_what_the_other_mapping_wrote)
{
    const char *args[] = {"--only", "vmm-alias", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("this side's own write read through the alias at 0x");
}
END_TEST

START_TEST(test_gpu_compressible_reports_what_was_granted)
{
    const char *args[] = {"--only", "vmm-compressible", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("compression to the producer: ");
    OUT_HAS("compression as the importer sees it: ");
}
END_TEST

START_TEST(test_gpu_4g_passes_both_ways)
{
    const char *args[] = {"--size", "4G", NULL};
    int i;

    spawn(args, NULL, 120, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    for (i = 0; i < N_RUNNABLE; i++)
        out_has_row(runnable[i], "PASS   4 GiB      0/536870912 bad        0/536870912 bad");
}
END_TEST

START_TEST(test_gpu_vmm_and_memfd_in_one_session)
{
    const char *args[] = {"--only", "vmm,memfd", NULL};

    spawn(args, NULL, 60, NULL);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("vmm              PASS");
    OUT_HAS("memfd            PASS");
}
END_TEST


/* Every mechanism's verification must be able to fail, on the GPU, in both
 * directions. */
START_TEST(test_gpu_sabotage_is_caught)
{
    const char *mech = writers[_i / N_SABOTAGES];
    const char *env[] = {sabotages[_i % N_SABOTAGES], NULL};
    const char *args[] = {"--only", mech, NULL};

    spawn(args, env, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "%s %s: status 0x%x:\n%s", mech, env[0], run.status,
                  run.out);
    OUT_HAS("8388608 mismatches in 8388608 words; first bad word 0 (byte offset 0x0)");
    out_has_row(mech, "FAIL");
}
END_TEST

static pid_t killed;

/* The consumer has imported, mapped and verified the GPU memory and stops
 * before writing: kill -9 it there, from outside, as a crash would. */
static void kill_consumer_mid_scenario(const char *line, pid_t pgid, void *arg)
{
    (void)arg;
    if (killed == 0 && strstr(line, "FAULT INJECTED: hang at write") != NULL) {
        killed = th_child_of(pgid);
        if (killed > 0)
            kill(killed, SIGKILL);
    }
}

START_TEST(test_gpu_consumer_killed_mid_scenario_is_reported)
{
    const char *env[] = {"GPUIPC_FAULT=consumer:write:hang", NULL};
    const char *args[] = {"--only", "vmm", "--size", "1G", "--timeout", "20", NULL};

    spawn(args, env, 60, kill_consumer_mid_scenario);
    ck_assert_msg(killed > 0, "the consumer was never found to kill:\n%s", run.out);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("producer  vmm              report   FAIL peer gone during report: the consumer closed the "
            "connection");
    OUT_HAS("consumer: killed by signal 9 (SIGKILL)");
    ck_assert_msg(run.seconds < 20.0, "took %.2f s, the deadline is 20 s", run.seconds);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* The accounting must be able to fail: a side that skips its release keeps
 * the allocation alive, and the producer's free-memory check names it. */
static const char *const leaks[] = {
    "GPUIPC_SABOTAGE=producer:leak",
    "GPUIPC_SABOTAGE=consumer:leak",
};

START_TEST(test_gpu_leaked_memory_fails_the_scenario)
{
    const char *env[] = {leaks[_i], NULL};
    const char *args[] = {"--only", "vmm", NULL};

    spawn(args, env, 60, NULL);
    ck_assert_msg(th_exited(&run, 1), "%s: status 0x%x:\n%s", leaks[_i], run.status, run.out);
    OUT_HAS("GPU memory leaked: ");
    OUT_HAS("(64 MiB missing)");
    OUT_HAS("0/8388608 bad          0/8388608 bad"); /* the bytes were fine */
}
END_TEST

/* The steps at which one side holds GPU memory, and the step the survivor is
 * waiting in. With CUDA, the consumer has driver threads, which changes how
 * the parent-death signal reaches it, so these run here and not only on memfd. */
static const struct {
    const char *fault, *survivor, *waiting;
} deaths[] = {
    {"GPUIPC_FAULT=consumer:import:kill", "  producer  ", "peer gone during report"},
    {"GPUIPC_FAULT=consumer:verify:kill", "  producer  ", "peer gone during report"},
    {"GPUIPC_FAULT=consumer:release:kill", "  producer  ", "peer gone during end-ack"},
    {"GPUIPC_FAULT=producer:export:kill", "  consumer  ", "peer gone during offer"},
    {"GPUIPC_FAULT=producer:check:kill", "  consumer  ", "peer gone during end"},
    {"GPUIPC_FAULT=producer:check:exit", "  consumer  ", "peer gone during end"},
    {"GPUIPC_FAULT=producer:release:kill", "  consumer  ", "peer gone during begin"},
    {"GPUIPC_FAULT=producer:end:kill", "  consumer  ", "peer gone during end"},
};

START_TEST(test_gpu_survivor_reports_a_dead_peer)
{
    const char *env[] = {deaths[_i].fault, NULL};
    const char *args[] = {"--only", "vmm", "--timeout", "20", NULL};

    spawn(args, env, 60, NULL);
    ck_assert_msg(th_line_has(run.out, deaths[_i].survivor, deaths[_i].waiting),
                  "%s: no%sline says '%s':\n%s", deaths[_i].fault, deaths[_i].survivor,
                  deaths[_i].waiting, run.out);
    ck_assert_msg(run.seconds < 20.0, "%s: took %.2f s", deaths[_i].fault, run.seconds);
    ck_assert_msg(run.leftover == 0, "%s: a process was left behind", deaths[_i].fault);
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
        strstr(run.out, "  vmm              yes") == NULL) {
        printf("SKIP: check_gpu: vmm cannot run here (see ./gpuipc_test --list)\n");
        return 77;
    }
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, test_gpu_default_run_passes_both_ways);
    tcase_add_test(tc, test_gpu_4g_passes_both_ways);
    tcase_add_test(tc, test_gpu_vmm_and_memfd_in_one_session);
    tcase_add_loop_test(tc, test_gpu_sabotage_is_caught, 0, N_WRITERS * N_SABOTAGES);
    tcase_add_test(tc, test_gpu_offset_passes_or_names_the_refusal);
    tcase_add_test(tc, test_gpu_4096_chunks_pass);
    tcase_add_test(tc, test_gpu_destructive_fault_is_the_expected_outcome);
    tcase_add_loop_test(tc, test_gpu_destructive_sabotage_is_caught, 0, 2); /* producer's */
    tcase_add_test(tc, test_gpu_pairs_pass_or_need_two_gpus);
    tcase_add_test(tc, test_gpu_list_json_describes_the_devices);
    tcase_add_loop_test(tc, test_gpu_chunk_order_is_caught, 0, 2);
    tcase_add_test(tc, test_gpu_chunks_under_a_low_fd_limit_fail_cleanly);
    tcase_add_test(tc, test_gpu_readonly_refuses_writes);
    tcase_add_loop_test(tc, test_gpu_readonly_sabotage_is_caught, 0, 2); /* producer's */
    tcase_add_test(tc, test_gpu_fabric_skip_names_the_reason);
    tcase_add_test(tc, test_gpu_require_turns_a_skip_into_a_failure);
    tcase_add_test(tc, test_gpu_legacy_ipc_shows_the_vmm_refusal);
    tcase_add_test(tc, test_gpu_compressible_reports_what_was_granted);
    tcase_add_test(tc, test_gpu_host_numa_is_shared_by_cpus_and_gpu);
    tcase_add_test(tc, test_gpu_alias_reads_what_the_other_mapping_wrote);
    tcase_add_test(tc, test_gpu_consumer_killed_mid_scenario_is_reported);
    tcase_add_loop_test(tc, test_gpu_leaked_memory_fails_the_scenario, 0,
                        (int)(sizeof(leaks) / sizeof(leaks[0])));
    tcase_add_loop_test(tc, test_gpu_survivor_reports_a_dead_peer, 0,
                        (int)(sizeof(deaths) / sizeof(deaths[0])));
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_VERBOSE);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
