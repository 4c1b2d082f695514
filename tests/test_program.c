/* SPDX-License-Identifier: Apache-2.0 */
/* test_program.c: ./gpuipc_test as a user runs it: exit codes, usage
 * errors, the memfd round trip, sabotage, and a peer that dies or hangs at
 * every step, checking that the survivor reports it within the deadline and
 * that no process is left behind. */
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/matrix.h"
#include "core/step.h"
#include "session/inject.h"
#include "helpers.h"
#include "suites.h"

static th_run run;

static void spawn(const char *const *args, const char *const *env, double timeout_s)
{
    ck_assert_int_eq(th_spawn(&run, args, env, timeout_s, 3.0, NULL, NULL), 0);
}

#define OUT_HAS(text) ck_assert_msg(strstr(run.out, (text)) != NULL, "output lacks '%s':\n%s", \
                                    (text), run.out)

START_TEST(test_program_memfd_round_trip_passes)
{
    const char *args[] = {"--only", "memfd", "--size", "8M", NULL};

    spawn(args, NULL, 20);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("  scenario result size       producer->consumer     consumer->producer");
    OUT_HAS("  memfd    PASS   8 MiB      0/1048576 bad          0/1048576 bad");
    /* Check runs the scenario as a test, but its runner's lines stay off
     * the console: the step log and the summary are the output. */
    ck_assert_msg(strstr(run.out, "Running suite") == NULL && strstr(run.out, "Checks: ") == NULL,
                  "Check's runner lines in the output:\n%s", run.out);
    OUT_HAS("consumer: exited 0");
    OUT_HAS("result: PASS: 1 passed, 0 failed, 0 skipped");
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* --brief: one line, and nothing else, in every outcome. Standard output
 * and error are read together here, so a stray line on either fails. */
static const struct {
    const char *args[8];
    const char *env;
    int code;
    const char *starts, *has;
} brief_cases[] = {
    {{"--brief", "--only", "memfd", "--size", "1M"}, NULL, 0,
     "PASS: 1 passed, 0 failed, 0 skipped, in ", "(exit 0)"},
    {{"--brief", "--only", "memfd", "--size", "1M"}, "GPUIPC_SABOTAGE=consumer:flip-one", 1,
     "FAIL: 0 passed, 1 failed, 0 skipped, in ",
     " | first failure: producer memfd check: the consumer's bytes: 1 mismatches"},
    {{"--brief", "--only", "memfd", "--size", "1M"}, "GPUIPC_FAULT=consumer:verify:exit", 1,
     "FAIL: 0 passed, 1 failed", "first failure: producer memfd report: peer gone during report"},
    {{"--brief", "--size", "banana"}, NULL, 2, "USAGE ERROR: --size: 'banana' is not a size",
     "(exit 2)"},
    {{"--brief", "--list"}, NULL, 2, "USAGE ERROR: --brief: a verdict in one line", "(exit 2)"},
    {{"--brief", "--only", "memfd"}, "GPUIPC_SABOTAGE=nobody:flip-one", 2, "USAGE ERROR: ",
     "(exit 2)"},
    {{"--brief"}, "CUDA_VISIBLE_DEVICES=", 77, "SKIP: ", "(exit 77)"},
    {{"--brief", "--connect", "@gpuipc-brief-nobody", "--timeout", "200ms"}, NULL, 1,
     "FAIL: no session with @gpuipc-brief-nobody: ", "(exit 1)"},
    /* A failure that no step line names: the line still names it. */
    {{"--brief", "--require", "vmm"}, "CUDA_VISIBLE_DEVICES=", 1, "FAIL: ",
     " | first failure: producer vmm probe: required by --require, but skipped: "},
    /* A required mechanism that Check's selection left out fails the run. */
    {{"--brief", "--only", "memfd,memfd-chunks", "--require", "memfd-chunks", "--size", "1M"},
     "CK_RUN_SUITE=memfd", 1, "FAIL: 1 passed, 1 failed, 0 skipped, in ",
     " | first failure: producer memfd-chunks -: required by --require, but not run: not "
     "selected by CK_RUN_SUITE/CK_RUN_CASE"},
    /* Fewer GPUs than expected: a failure, never a skip. */
    {{"--brief", "--expect-gpus", "1", "--only", "memfd"}, "CUDA_VISIBLE_DEVICES=", 1,
     "FAIL: no scenario ran: --expect-gpus 1: no GPU here (CUDA_VISIBLE_DEVICES=): ",
     "(exit 1)"},
};

START_TEST(test_program_brief_is_one_line)
{
    const char *env[] = {brief_cases[_i].env, NULL};
    const char *nl;

    spawn(brief_cases[_i].args, env, 20);
    ck_assert_msg(th_exited(&run, brief_cases[_i].code), "case %d: status 0x%x:\n%s", _i,
                  run.status, run.out);
    nl = strchr(run.out, '\n');
    ck_assert_msg(nl != NULL && nl[1] == '\0', "case %d: not exactly one line:\n%s", _i,
                  run.out);
    ck_assert_msg(strncmp(run.out, brief_cases[_i].starts, strlen(brief_cases[_i].starts)) == 0,
                  "case %d: '%s' does not start with '%s'", _i, run.out,
                  brief_cases[_i].starts);
    OUT_HAS(brief_cases[_i].has);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* Check's TAP output names each scenario by its case: the mechanism and
 * where it ran (memfd-host; vmm-gpu0 on a GPU). */
START_TEST(test_program_writes_tap_naming_the_mechanism)
{
    char tap[] = "/tmp/gpuipc-tap-XXXXXX", text[512] = "", env_tap[64];
    const char *env[] = {env_tap, NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "--quiet", NULL};
    int fd = mkstemp(tap);
    ssize_t n;

    ck_assert_int_ge(fd, 0);
    snprintf(env_tap, sizeof(env_tap), "CK_TAP_LOG_FILE_NAME=%s", tap);
    spawn(args, env, 20);
    ck_assert(th_exited(&run, 0));
    n = pread(fd, text, sizeof(text) - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(tap);
    ck_assert_msg(strstr(text, ":memfd-host:test_scenario_both_ways: Passed") &&
                  strncmp(text, "ok 1 - ", 7) == 0 &&
                  strstr(text, "1..1"), "TAP:\n%s", text);
}
END_TEST

START_TEST(test_program_a_selection_that_matches_nothing_is_not_a_pass)
{
    const char *env[] = {"CK_RUN_SUITE=nosuch", NULL};
    const char *args[] = {"--only", "memfd", NULL};

    spawn(args, env, 20);
    ck_assert_msg(th_exited(&run, 77), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("gpuipc_test: SKIP: memfd: not selected by CK_RUN_SUITE/CK_RUN_CASE");
}
END_TEST

START_TEST(test_program_logs_each_step_with_role_and_time)
{
    const char *args[] = {"--only", "memfd", "--size", "1M", NULL};

    spawn(args, NULL, 20);
    ck_assert(th_exited(&run, 0));
    OUT_HAS("producer  memfd            alloc    1 MiB of host memory");
    OUT_HAS("consumer  memfd            import   mapped 1048576 bytes");
    OUT_HAS("consumer  memfd            verify   0 mismatches in 131072 words from the producer");
    OUT_HAS("producer  memfd            check    0 mismatches in 131072 words from the consumer");
    OUT_HAS(" ms]");
}
END_TEST

START_TEST(test_program_without_a_gpu_exits_77_with_one_line)
{
    /* No device visible: the same answer with or without a driver. */
    const char *env[] = {"CUDA_VISIBLE_DEVICES=", NULL};
    const char *args[] = {NULL};

    spawn(args, env, 30);
    ck_assert_msg(th_exited(&run, 77), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(strncmp(run.out, "gpuipc_test: SKIP: ", 19) == 0, "output:\n%s", run.out);
    ck_assert_msg(strchr(run.out, '\n') == run.out + run.len - 1, "more than one line:\n%s",
                  run.out);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

static const struct {
    const char *a1, *a2, *reason;
} usage_errors[] = {
    {"--size", "banana", "gpuipc_test: --size: 'banana' is not a size"},
    {"--size", "0", "--size: '0' is zero bytes"},
    {"--timeout", "-3", "--timeout: '-3' is not a duration"},
    {"--only", "nosuch", "--only: unknown mechanism 'nosuch' (known: vmm, vmm-pidfd, "
                         "vmm-chunks, vmm-offset, vmm-compressible, vmm-host-numa, vmm-alias, "
                         "vmm-readonly, vmm-ro-fault, legacy-ipc, mempool-ipc, ipc-event, fabric, "
                         "memfd, memfd-chunks, memfd-pidfd)"},
    {"--only", "vmn", "--only: unknown mechanism 'vmn': did you mean 'vmm'? (gpuipc_test "
                      "--list names them all)"},
    {"--only", "legacy", "--only: unknown mechanism 'legacy': did you mean 'legacy-ipc'?"},
    {"--only", "memfd-pifd", "did you mean 'memfd-pidfd'?"},
    {"--chunks", "0", "--chunks: '0' is not a chunk count from 1 to 65536"},
    {"--json", NULL, "--json: give a FILE (or - for standard output)"},
    {"--only", "vmm-ro-fault", "add --destructive to run it"},
    {"--chunks", "65537", "--chunks: '65537' is not a chunk count from 1 to 65536"},
    {"--bogus", NULL, "unknown option '--bogus'"},
    {"--device", "x", "--device: 'x' is not an ordinal or a range a-b"},
    {"--bench", "--json", "--json: --bench writes its JSON to a file"},
    {"--iters", "3", "--iters: only with --bench"},
};

/* --bench needs a GPU even for the host baseline alone: 77 and one line. */
START_TEST(test_program_bench_without_a_gpu_exits_77_with_one_line)
{
    const char *env[] = {"CUDA_VISIBLE_DEVICES=", NULL};
    const char *args[] = {"--bench", "--only", "memfd", NULL};

    spawn(args, env, 60);
    ck_assert_msg(th_exited(&run, 77), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(strncmp(run.out, "gpuipc_test: SKIP: --bench measures GPU memory sharing: ",
                          56) == 0, "output:\n%s", run.out);
    ck_assert_msg(strchr(run.out, '\n') == run.out + run.len - 1, "more than one line:\n%s",
                  run.out);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

START_TEST(test_program_usage_errors_exit_2)
{
    const char *args[] = {usage_errors[_i].a1, usage_errors[_i].a2, NULL};

    spawn(args, NULL, 10);
    ck_assert_msg(th_exited(&run, 2), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS(usage_errors[_i].reason);
    OUT_HAS("Try 'gpuipc_test --help'");
}
END_TEST

/* Without a driver, the GPU mechanisms beside memfd skip for one cause: it
 * is written once, after the scenarios it stopped; the result line is last. */
START_TEST(test_program_a_shared_cause_is_said_once)
{
    const char *env[] = {"CUDA_VISIBLE_DEVICES=", NULL};
    const char *args[] = {"--only", "memfd,vmm,legacy-ipc", "--size", "1M", "-q", NULL};
    const char *first, *last;

    spawn(args, env, 20);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("  vmm        SKIP   (a cause shared with others: below)\n"
            "  legacy-ipc SKIP   (a cause shared with others: below)\n"
            "  the same cause for 2 scenarios (vmm, legacy-ipc): ");
    first = strstr(run.out, "the same cause for 2 scenarios (vmm, legacy-ipc): ");
    ck_assert_ptr_nonnull(first);
    first += strlen("the same cause for 2 scenarios (vmm, legacy-ipc): ");
    /* The cause itself (no driver, or no device) appears nowhere else. */
    last = strchr(first, '\n');
    ck_assert_ptr_nonnull(last);
    {
        char cause[256];
        size_t len = (size_t)(last - first) < sizeof(cause) - 1 ? (size_t)(last - first)
                                                               : sizeof(cause) - 1;

        memcpy(cause, first, len);
        cause[len] = '\0';
        ck_assert_msg(strstr(run.out, cause) == first && strstr(first + 1, cause) == NULL,
                      "the cause is said more than once:\n%s", run.out);
    }
    last = strstr(run.out, "result: PASS: 1 passed, 0 failed, 2 skipped");
    ck_assert_msg(last != NULL && strchr(last, '\n') == run.out + run.len - 1,
                  "result: is not the last line:\n%s", run.out);
}
END_TEST

/* --pairs runs the reference mechanism, or --only's, each of which must
 * cross GPUs: host memory (or a destructive mechanism) is a usage error,
 * said before any device is looked at; GPU mechanisms are taken (then, with
 * no driver here, nothing runs: exit 77). */
START_TEST(test_program_pairs_refuses_another_mechanism)
{
    const char *args[] = {"--pairs", "all", "--only", "vmm,memfd", NULL};
    const char *ro[] = {"--pairs", "all", "--only", "vmm-ro-fault", "--destructive", NULL};
    const char *gpu[] = {"--pairs", "all", "--only", "legacy-ipc,ipc-event", NULL};

    spawn(args, NULL, 10);
    ck_assert_msg(th_exited(&run, 2), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("--pairs: memfd does not cross GPUs (host memory, no GPU's), and --pairs runs "
            "mechanisms between devices; take it out of --only");
    OUT_HAS("Try 'gpuipc_test --help'");
    spawn(ro, NULL, 10);
    ck_assert_msg(th_exited(&run, 2), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("vmm-ro-fault does not cross GPUs (destructive");
    spawn(gpu, NULL, 10);
    ck_assert_msg(!th_exited(&run, 2), "GPU mechanisms refused with --pairs:\n%s", run.out);
}
END_TEST

START_TEST(test_program_rejects_a_bad_fault_hook)
{
    const char *env[] = {"GPUIPC_FAULT=consumer:nowhere:exit", NULL};
    const char *args[] = {"--only", "memfd", NULL};

    spawn(args, env, 10);
    ck_assert(th_exited(&run, 2));
    OUT_HAS("GPUIPC_FAULT='consumer:nowhere:exit': 'nowhere' is not a step of the consumer");
}
END_TEST

START_TEST(test_program_memfd_size_beyond_host_memory_exits_2)
{
    const char *args[] = {"--only", "memfd", "--size", "16T", NULL};

    spawn(args, NULL, 10);
    ck_assert_msg(th_exited(&run, 2), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("--size 16 TiB: larger than the host's available memory for memfd");
    ck_assert_int_eq(run.leftover, 0);
    /* The verdict line carries the reason; the consumer, which ended as
     * told, adds no line. */
    OUT_HAS("\nresult: USAGE ERROR: --size 16 TiB: larger than the host's available memory "
            "for memfd");
    ck_assert_msg(strstr(run.out, "consumer:") == NULL && strstr(run.out, "summary:") == NULL,
                  "lines besides the reason and the verdict:\n%s", run.out);
}
END_TEST

/* --device with only host-memory mechanisms names a GPU nothing would use:
 * a usage error, not a silent pass. */
START_TEST(test_program_device_without_a_gpu_mechanism_is_a_usage_error)
{
    const char *args[] = {"--only", "memfd", "--device", "9", NULL};

    spawn(args, NULL, 10);
    ck_assert_msg(th_exited(&run, 2), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("--device: no selected mechanism uses a GPU");
    ck_assert_msg(strstr(run.out, "summary") == NULL, "the run ran:\n%s", run.out);
}
END_TEST

START_TEST(test_program_brief_keeps_the_reason_of_a_usage_error)
{
    const char *args[] = {"--only", "memfd", "--size", "16T", "--brief", NULL};

    spawn(args, NULL, 10);
    ck_assert_msg(th_exited(&run, 2), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(strncmp(run.out, "USAGE ERROR: --size 16 TiB: larger than the host's "
                          "available memory for memfd", 73) == 0 &&
                  strchr(run.out, '\n') == run.out + run.len - 1,
                  "not one line with the reason:\n%s", run.out);
}
END_TEST

START_TEST(test_program_help_describes_every_option)
{
    static const char *const words[] = {"--size", "--device", "--chunks", "--only", "--timeout",
                                        "--list", "--bench", "--iters", "--json FILE",
                                        "--brief", "--min-gbps",
                                        "--quiet", "--verbose", "--help", "--version", "vmm",
                                        "memfd", "77"};
    const char *args[] = {"--help", NULL};
    size_t i;

    spawn(args, NULL, 10);
    ck_assert(th_exited(&run, 0));
    for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        OUT_HAS(words[i]);
    /* The exit codes as the README and the manual page give them. */
    OUT_HAS("  1   a scenario failed on either side, a process leaked, a mechanism\n"
            "      named by --require did not pass, fewer GPUs than --expect-gpus,\n");
    OUT_HAS("  77  nothing could run here (no CUDA driver, no GPU, or every selected\n"
            "      mechanism skipped); one line says why\n");
    OUT_HAS("(default: the default\n                  set, marked (default) below)");
    /* Every line fits in 80 columns. */
    {
        const char *line = run.out;

        while (*line != '\0') {
            size_t len = strcspn(line, "\n");

            ck_assert_msg(len <= 80, "a --help line of %zu columns: %.*s", len, (int)len, line);
            line += len + (line[len] == '\n');
        }
    }
}
END_TEST

START_TEST(test_program_version)
{
    const char *args[] = {"--version", NULL};

    spawn(args, NULL, 10);
    ck_assert(th_exited(&run, 0));
    OUT_HAS("gpuipc_test 0.2.0 (commit ");
    OUT_HAS(", protocol 14, the CUDA driver API as of ");
}
END_TEST

START_TEST(test_program_list_names_every_mechanism)
{
    const char *env[] = {"CUDA_VISIBLE_DEVICES=", NULL};
    const char *args[] = {"--list", NULL};

    spawn(args, env, 30);
    ck_assert(th_exited(&run, 0));
    OUT_HAS("  vmm              no ");
    OUT_HAS("  memfd            yes");
    OUT_HAS("host: RLIMIT_NOFILE ");
    OUT_HAS("host: pidfd_getfd from a child to its parent: ");
    OUT_HAS("host: IMEX channel for FABRIC handles: ");
    /* Why CUDA cannot be had is said once, not once per mechanism. */
    OUT_HAS("mechanisms (those that need the CUDA driver cannot run: see above):");
    {
        const char *why = strstr(run.out, "CUDA: not available: ");
        char cause[128];

        ck_assert_msg(why != NULL, "no CUDA line:\n%s", run.out);
        why += strlen("CUDA: not available: ");
        snprintf(cause, sizeof(cause), "%.*s", (int)strcspn(why, "\n"), why);
        ck_assert_msg(strstr(why + 1, cause) == NULL, "the reason is repeated:\n%s", run.out);
    }
}
END_TEST

/* The capability report as JSON: one valid document with its schema
 * version, the host's checks and every mechanism's verdict. */
START_TEST(test_program_list_json_is_a_valid_document)
{
    const char *env[] = {"CUDA_VISIBLE_DEVICES=", NULL};
    const char *args[] = {"--list", "--json", NULL};
    char why[160];

    spawn(args, env, 30);
    ck_assert(th_exited(&run, 0));
    ck_assert_msg(js_valid(run.out, why, sizeof(why)), "%s:\n%s", why, run.out);
    OUT_HAS("\"schema\": \"gpuipc_test/capabilities\",\n    \"schema_version\": 2,");
    OUT_HAS("\"mode\": \"list\"");
    OUT_HAS("\"rlimit_nofile\": {");
    OUT_HAS("\"pidfd_getfd\": {");
    OUT_HAS("\"imex_channel\": {");
    OUT_HAS("\"devices\": [");
    OUT_HAS("\"name\": \"memfd-chunks\",");
    OUT_HAS("\"runs\": true");
}
END_TEST

static const struct {
    const char *sabotage, *reason;
} sabotages[] = {
    {"GPUIPC_SABOTAGE=producer:skip-write", "the producer's bytes: 131072 mismatches"},
    {"GPUIPC_SABOTAGE=producer:wrong-seed", "the producer's bytes: 131072 mismatches"},
    {"GPUIPC_SABOTAGE=consumer:skip-write", "check: the consumer's bytes: 131072 mismatches"},
    {"GPUIPC_SABOTAGE=consumer:wrong-seed", "check: the consumer's bytes: 131072 mismatches"},
};

START_TEST(test_program_sabotage_exits_1_naming_the_first_bad_word)
{
    const char *env[] = {sabotages[_i].sabotage, NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", NULL};

    spawn(args, env, 20);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS(sabotages[_i].reason);
    OUT_HAS("first bad word 0 (byte offset 0x0)");
    OUT_HAS("  memfd    FAIL");
    OUT_HAS("result: FAIL");
}
END_TEST

/* The fault matrix's cases (run/matrix.h) where the peer dies, killed or by
 * exiting: every step of both roles, twice. The matrix also says which step
 * the survivor waits in. program_suite() lists them. */
static gpuipc_matrix_case deaths[GPUIPC_MATRIX_MAX];

static unsigned list_deaths(void)
{
    gpuipc_matrix_case all[GPUIPC_MATRIX_MAX];
    unsigned n = gpuipc_matrix_cases(all, GPUIPC_MATRIX_MAX), i, k = 0;

    for (i = 0; i < n; i++)
        if (all[i].action == GPUIPC_FAULT_EXIT || all[i].action == GPUIPC_FAULT_KILL)
            deaths[k++] = all[i];
    return k;
}

START_TEST(test_program_survivor_reports_a_dead_peer)
{
    const gpuipc_matrix_case *c = &deaths[_i];
    int consumer_dies = c->role == GPUIPC_ROLE_CONSUMER, killed = c->action == GPUIPC_FAULT_KILL;
    char fault[96], want[96];
    const char *env[] = {fault, NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "--timeout", "3", NULL};

    snprintf(fault, sizeof(fault), "GPUIPC_FAULT=%s:%s:%s", gpuipc_role_name(c->role),
             gpuipc_step_name(c->step), gpuipc_inject_action_name(c->action));
    snprintf(want, sizeof(want), "FAIL peer gone during %s",
             gpuipc_step_name(gpuipc_matrix_waiting(c->role, c->step)));
    spawn(args, env, 10);
    ck_assert_msg(run.finished, "%s: still running after 10 s:\n%s", fault, run.out);
    ck_assert_msg(th_line_has(run.out, consumer_dies ? "  producer  " : "  consumer  ", want),
                  "%s: no %s line says '%s':\n%s", fault,
                  consumer_dies ? "producer" : "consumer", want, run.out);
    ck_assert_msg(run.seconds < 3.0 + 2.0, "%s: took %.2f s", fault, run.seconds);
    ck_assert_msg(run.leftover == 0, "%s: a process was left behind", fault);
    if (consumer_dies) {
        ck_assert_msg(th_exited(&run, 1), "%s: status 0x%x", fault, run.status);
    } else if (killed) {
        ck_assert(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGKILL);
    } else {
        ck_assert(th_exited(&run, 1));
    }
}
END_TEST

START_TEST(test_program_producer_times_out_on_a_hung_consumer)
{
    const char *env[] = {"GPUIPC_FAULT=consumer:report:hang", NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "--timeout", "1", NULL};

    spawn(args, env, 10);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("timed out during report: no REPORT from the consumer");
    /* where the consumer is, by the page both share */
    OUT_HAS("the consumer is at report in GPUIPC_FAULT hang for ");
    OUT_HAS("consumer: killed by signal 9 (SIGKILL) (by the producer");
    /* the deadline, then at most the 2 s grace before SIGKILL */
    ck_assert_msg(run.seconds < 1.0 + 2.0 + 3.0, "took %.2f s", run.seconds);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

START_TEST(test_program_consumer_times_out_on_a_hung_producer)
{
    const char *env[] = {"GPUIPC_FAULT=producer:offer:hang", NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "--timeout", "1", NULL};

    /* The producer hangs for good; the harness kills it after 4 s. */
    ck_assert_int_eq(th_spawn(&run, args, env, 4, 1, NULL, NULL), 0);
    OUT_HAS("consumer  memfd            offer    FAIL timed out during offer: no OFFER from the producer");
    OUT_HAS("the producer is at offer in GPUIPC_FAULT hang for ");
}
END_TEST

static pid_t signalled;

static void term_consumer_when_hung(const char *line, pid_t pgid, void *arg)
{
    (void)arg;
    if (signalled == 0 && strstr(line, "FAULT INJECTED: hang at report") != NULL) {
        signalled = th_child_of(pgid);
        if (signalled > 0)
            kill(signalled, SIGTERM);
    }
}

/* The consumer catches SIGTERM to report its parent's death; a SIGTERM from
 * anyone else stops the run, the producer too (it is passed on), and is
 * not reported as that death. */
START_TEST(test_program_foreign_sigterm_still_ends_the_consumer)
{
    const char *env[] = {"GPUIPC_FAULT=consumer:report:hang", NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "--timeout", "10", NULL};

    ck_assert_int_eq(th_spawn(&run, args, env, 20, 3, term_consumer_when_hung, NULL), 0);
    ck_assert_msg(signalled > 0, "the consumer was never found:\n%s", run.out);
    ck_assert_msg(th_exited(&run, 143), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("consumer: exited 143");
    OUT_HAS("result: STOPPED: ");
    ck_assert_msg(strstr(run.out, "parent-death") == NULL, "mistaken for the producer's death:\n%s",
                  run.out);
    ck_assert_msg(run.seconds < 10.0, "took %.2f s", run.seconds);
}
END_TEST

/* ---- chunked memory: FD batches, their order, a receiver's RLIMIT_NOFILE ---------------- */

/* 600 chunks travel as 253 + 253 + 94 FDs, in OFFER and two FDS messages. */
START_TEST(test_program_chunks_travel_in_batches)
{
    const char *args[] = {"--only", "memfd-chunks", "--chunks", "600", "--size", "8M", NULL};

    spawn(args, NULL, 30);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("export   600 FDs, the first 253 of them now");
    OUT_HAS("offer    FDs 253 to 599 sent in 2 more messages");
    OUT_HAS("import   FDs 253 to 599 received in 2 more messages and imported");
    OUT_HAS("  memfd-chunks PASS");
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

static const char *const chunk_sabotages[] = {
    "GPUIPC_SABOTAGE=producer:chunk-order",
    "GPUIPC_SABOTAGE=consumer:chunk-order",
};

/* Chunks 0 and 1 swapped, by either side: both directions see it, from the
 * very first word, because the pattern runs over the whole range. */
START_TEST(test_program_chunk_order_is_caught)
{
    const char *env[] = {chunk_sabotages[_i], NULL};
    const char *args[] = {"--only", "memfd-chunks", "--size", "8M", NULL};

    spawn(args, env, 30);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("the producer's bytes: 262144 mismatches in 1048576 words; first bad word 0 ");
    OUT_HAS("check: the consumer's bytes: 262144 mismatches in 1048576 words; first bad "
            "word 0 ");
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* The consumer's soft limit cannot hold a batch; the producer raises its own
 * (the soft one, up to the hard one). The kernel drops FDs (MSG_CTRUNC): the
 * consumer says so with both numbers, keeps in step, and both exit. */
START_TEST(test_program_low_fd_limit_fails_cleanly_with_ctrunc)
{
    const char *args[] = {"--only", "memfd-chunks", "--chunks", "600", "--size", "8M",
                          "--timeout", "5", NULL};
    struct rlimit rl, low;

    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 1000)
        ck_abort_msg("this test needs a hard RLIMIT_NOFILE of 1000 or more, not %llu",
                     (unsigned long long)rl.rlim_max);
    low = rl;
    low.rlim_cur = 64;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    spawn(args, NULL, 30);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("producer  memfd-chunks     alloc    RLIMIT_NOFILE raised from 64 to");
    OUT_HAS("consumer import: recvmsg during offer: control data truncated "
            "(MSG_CTRUNC): 253 FDs sent,");
    OUT_HAS("because this process's RLIMIT_NOFILE is 64 and only");
    OUT_HAS("consumer: exited 1");
    ck_assert_msg(run.seconds < 5.0, "took %.2f s: something waited for a deadline",
                  run.seconds);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* `ulimit -n 64`: soft and hard. Whichever side hits the limit first says
 * so with the numbers; nothing hangs and nothing is left behind. */
START_TEST(test_program_low_hard_fd_limit_fails_cleanly)
{
    const char *args[] = {"--only", "memfd-chunks", "--chunks", "600", "--size", "8M",
                          "--timeout", "5", NULL};
    struct rlimit low = {.rlim_cur = 64, .rlim_max = 64};

    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    spawn(args, NULL, 30);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(strstr(run.out, "do not fit: RLIMIT_NOFILE is 64 (hard 64)") != NULL ||
                  strstr(run.out, "(MSG_CTRUNC): 253 FDs sent") != NULL,
                  "no RLIMIT_NOFILE explanation:\n%s", run.out);
    ck_assert_msg(run.seconds < 5.0, "took %.2f s", run.seconds);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* ---- what a pass means: every byte read and written ---- */

/* A reader that reads nothing (or only 2 words) but says it read all is
 * caught by the writer of those bytes, whichever side reads: the producer
 * judges the consumer's REPORT, the consumer the producer's END. */
static const struct {
    const char *sabotage, *says, *who;
} readers[] = {
    {"GPUIPC_SABOTAGE=consumer:read-nothing", "it did not read these bytes", "producer"},
    {"GPUIPC_SABOTAGE=consumer:read-partial", "the consumer read 2 of the 131072 words",
     "producer"},
    {"GPUIPC_SABOTAGE=producer:read-nothing", "the producer's check of this side's bytes: the "
                                              "producer reports every word right, but the "
                                              "digest", "consumer"},
    {"GPUIPC_SABOTAGE=producer:read-partial", "the producer read 2 of the 131072 words",
     "consumer"},
};
#define N_READERS (int)(sizeof(readers) / sizeof(readers[0]))
static const char *const host_mechs[] = {"memfd", "memfd-chunks"};

START_TEST(test_program_a_reader_that_did_not_read_fails)
{
    const char *mech = host_mechs[_i / N_READERS];
    const char *env[] = {readers[_i % N_READERS].sabotage, NULL};
    const char *args[] = {"--only", mech, "--size", "1M", NULL};

    spawn(args, env, 20);
    ck_assert_msg(th_exited(&run, 1), "%s %s: status 0x%x:\n%s", mech, env[0], run.status,
                  run.out);
    ck_assert_msg(th_line_has(run.out, readers[_i % N_READERS].who,
                              readers[_i % N_READERS].says),
                  "%s %s: no %s line says '%s':\n%s", mech, env[0],
                  readers[_i % N_READERS].who, readers[_i % N_READERS].says, run.out);
    OUT_HAS("result: FAIL");
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* An offer of the wrong kind (an FD that is not a sealed memfd of the size
 * offered, or a size the FD does not have) is refused by the importer with
 * a named reason: exit 1, no signal, nothing leaked, nothing left. */
static const struct {
    const char *sabotage, *says;
} wrong_offers[] = {
    {"GPUIPC_SABOTAGE=producer:offer-memfd", "memfd holds 4096 bytes, the offer claims "},
    {"GPUIPC_SABOTAGE=producer:offer-pipe", "the FD offered as a memfd is a pipe, not a memfd"},
    {"GPUIPC_SABOTAGE=producer:offer-size", "import: "},
};
#define N_WRONG_OFFERS (int)(sizeof(wrong_offers) / sizeof(wrong_offers[0]))

START_TEST(test_program_a_wrong_kind_offer_is_refused)
{
    const char *mech = host_mechs[_i / N_WRONG_OFFERS];
    const char *env[] = {wrong_offers[_i % N_WRONG_OFFERS].sabotage, NULL};
    const char *args[] = {"--only", mech, "--size", "1M", NULL};

    spawn(args, env, 20);
    ck_assert_msg(th_exited(&run, 1), "%s %s: status 0x%x:\n%s", mech, env[0], run.status,
                  run.out);
    ck_assert_msg(th_line_has(run.out, "consumer", "FAIL import: ") &&
                  th_line_has(run.out, "FAIL import: ", wrong_offers[_i % N_WRONG_OFFERS].says),
                  "%s %s: the consumer names no refused import:\n%s", mech, env[0], run.out);
    ck_assert_msg(strstr(run.out, "leaked") == NULL, "%s %s: a leak:\n%s", mech, env[0],
                  run.out);
    OUT_HAS("consumer: exited 1");
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* One wrong word, written after the fill by either side, is found and named
 * by its index: a third of the way in, and the last. */
static const struct {
    const char *sabotage, *says;
} flips[] = {
    {"GPUIPC_SABOTAGE=producer:flip-one",
     "the producer's bytes: 1 mismatches in 131072 words; first bad word 43691 "},
    {"GPUIPC_SABOTAGE=consumer:flip-last",
     "check: the consumer's bytes: 1 mismatches in 131072 words; first bad word 131071 "},
    {"GPUIPC_SABOTAGE=producer:flip-past-4g", "flip-past-4g needs a --size above 4G"},
};

START_TEST(test_program_one_wrong_word_is_named_by_its_index)
{
    const char *env[] = {flips[_i].sabotage, NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", NULL};

    spawn(args, env, 20);
    ck_assert_msg(th_exited(&run, 1), "%s: status 0x%x:\n%s", env[0], run.status, run.out);
    OUT_HAS(flips[_i].says);
}
END_TEST

/* A leak of either side is found by that side's own count, once and under
 * --repeat 3: host memory kept mapped (memfd), an FD kept after the
 * scenario's count. */
static const struct {
    const char *sabotage, *once, *soak;
} leaks[] = {
    {"GPUIPC_SABOTAGE=producer:leak", "producer leaked: 1 FD leaked: fd ",
     "producer leaked: 1 FD leaked: fd "},
    {"GPUIPC_SABOTAGE=consumer:leak", "consumer leaked: 1 MiB more shared memory resident",
     "consumer leaked: 1 MiB more shared memory resident"},
    {"GPUIPC_SABOTAGE=producer:leak-fd", "producer, at the end of the session: 1 FD leaked: fd ",
     "drift since round 1: 1 FD leaked: fd "},
    {"GPUIPC_SABOTAGE=consumer:leak-fd", "consumer, at the end of the session: 1 FD leaked: fd ",
     "drift since round 1: the consumer has "},
};
#define N_LEAKS (int)(sizeof(leaks) / sizeof(leaks[0]))

START_TEST(test_program_every_leak_is_named)
{
    const char *env[] = {leaks[_i % N_LEAKS].sabotage, NULL};
    const char *once[] = {"--only", "memfd", "--size", "1M", NULL};
    const char *soak[] = {"--only", "memfd", "--size", "1M", "--repeat", "3", NULL};

    spawn(_i < N_LEAKS ? once : soak, env, 20);
    ck_assert_msg(th_exited(&run, 1), "%s%s: status 0x%x:\n%s", env[0],
                  _i < N_LEAKS ? "" : " --repeat 3", run.status, run.out);
    OUT_HAS(_i < N_LEAKS ? leaks[_i].once : leaks[_i % N_LEAKS].soak);
    OUT_HAS("result: FAIL");
}
END_TEST

Suite *program_suite(void)
{
    Suite *s = suite_create("program");
    TCase *basics = tcase_create("basics");
    TCase *faults = tcase_create("faults");

    tcase_set_timeout(basics, 60);
    tcase_set_timeout(faults, 60);
    tcase_add_test(basics, test_program_memfd_round_trip_passes);
    tcase_add_loop_test(basics, test_program_brief_is_one_line, 0,
                        (int)(sizeof(brief_cases) / sizeof(brief_cases[0])));
    tcase_add_test(basics, test_program_logs_each_step_with_role_and_time);
    tcase_add_test(basics, test_program_writes_tap_naming_the_mechanism);
    tcase_add_test(basics, test_program_a_selection_that_matches_nothing_is_not_a_pass);
    tcase_add_test(basics, test_program_without_a_gpu_exits_77_with_one_line);
    tcase_add_test(basics, test_program_bench_without_a_gpu_exits_77_with_one_line);
    tcase_add_loop_test(basics, test_program_usage_errors_exit_2, 0,
                        (int)(sizeof(usage_errors) / sizeof(usage_errors[0])));
    tcase_add_test(basics, test_program_pairs_refuses_another_mechanism);
    tcase_add_test(basics, test_program_a_shared_cause_is_said_once);
    tcase_add_test(basics, test_program_rejects_a_bad_fault_hook);
    tcase_add_test(basics, test_program_memfd_size_beyond_host_memory_exits_2);
    tcase_add_test(basics, test_program_brief_keeps_the_reason_of_a_usage_error);
    tcase_add_test(basics, test_program_device_without_a_gpu_mechanism_is_a_usage_error);
    tcase_add_test(basics, test_program_help_describes_every_option);
    tcase_add_test(basics, test_program_version);
    tcase_add_test(basics, test_program_list_names_every_mechanism);
    tcase_add_test(basics, test_program_list_json_is_a_valid_document);
    tcase_add_loop_test(basics, test_program_sabotage_exits_1_naming_the_first_bad_word, 0,
                        (int)(sizeof(sabotages) / sizeof(sabotages[0])));
    tcase_add_test(basics, test_program_chunks_travel_in_batches);
    tcase_add_loop_test(basics, test_program_a_reader_that_did_not_read_fails, 0, 2 * N_READERS);
    tcase_add_loop_test(basics, test_program_a_wrong_kind_offer_is_refused, 0,
                        2 * N_WRONG_OFFERS);
    tcase_add_loop_test(basics, test_program_one_wrong_word_is_named_by_its_index, 0,
                        (int)(sizeof(flips) / sizeof(flips[0])));
    tcase_add_loop_test(basics, test_program_every_leak_is_named, 0, 2 * N_LEAKS);
    tcase_add_loop_test(basics, test_program_chunk_order_is_caught, 0, 2);
    th_add_unless_valgrind(basics, test_program_low_fd_limit_fails_cleanly_with_ctrunc,
                           "valgrind refuses to lower RLIMIT_NOFILE (it keeps FDs of its own at the top)");
    th_add_unless_valgrind(basics, test_program_low_hard_fd_limit_fails_cleanly,
                           "valgrind refuses to lower RLIMIT_NOFILE (it keeps FDs of its own at the top)");
    tcase_add_loop_test(faults, test_program_survivor_reports_a_dead_peer, 0, (int)list_deaths());
    tcase_add_test(faults, test_program_producer_times_out_on_a_hung_consumer);
    tcase_add_test(faults, test_program_consumer_times_out_on_a_hung_producer);
    tcase_add_test(faults, test_program_foreign_sigterm_still_ends_the_consumer);
    suite_add_tcase(s, basics);
    suite_add_tcase(s, faults);
    return s;
}
