/* test_faults.c: the fault suite. Every step of both roles, times every
 * GPUIPC_FAULT action (exit, kill, hang, corrupt, extra-fds, close), on the
 * memfd mechanism, each case run as two separately started processes
 * (--serve and --connect) so that both exit statuses are seen. For each
 * case the survivor must exit 1 by itself within the deadline plus a small
 * margin, name the step it was waiting in and what the peer did, count the
 * same FDs at exit as at its start, and leave no process behind. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app/pair.h"
#include "helpers.h"
#include "suites.h"

#define TIMEOUT "0.5"
#define TIMEOUT_S 0.5
#define MARGIN_S 1.5

/* Each role's steps, and the step the survivor waits in when the fault
 * strikes there (what its report must name). */
static const struct {
    const char *role, *step, *waiting;
} steps[] = {
    {"producer", "hello", "hello"},   {"producer", "begin", "begin"},
    {"producer", "probe", "begin"},   {"producer", "alloc", "offer"},
    {"producer", "fill", "offer"},    {"producer", "export", "offer"},
    {"producer", "offer", "offer"},   {"producer", "check", "end"},
    {"producer", "release", "begin"}, {"producer", "end", "end"},
    {"producer", "bye", "begin"},     {"consumer", "hello", "hello"},
    {"consumer", "probe", "probe"},   {"consumer", "ready", "ready"},
    {"consumer", "import", "report"}, {"consumer", "verify", "report"},
    {"consumer", "write", "report"},  {"consumer", "report", "report"},
    {"consumer", "release", "end-ack"}, {"consumer", "end-ack", "end-ack"},
    {"consumer", "bye-ack", "bye-ack"},
};
#define N_STEPS (int)(sizeof(steps) / sizeof(steps[0]))

/* Each action, and what the survivor's report says of it. */
static const struct {
    const char *action, *said;
} actions[] = {
    {"exit", "peer gone during"},
    {"kill", "peer gone during"},
    {"hang", "timed out during"},
    {"corrupt", "bad magic"},
    {"extra-fds", "HELLO: carries 2 FDs, at most 0 allowed"},
    {"close", "closed the connection"},
};
#define N_ACTIONS (int)(sizeof(actions) / sizeof(actions[0]))

static gpuipc_pair pair;

static int gone(pid_t pid)
{
    return kill(pid, 0) < 0 && errno == ESRCH;
}

START_TEST(test_faults_survivor_reports_and_leaks_nothing)
{
    const char *role = steps[_i / N_ACTIONS].role, *action = actions[_i % N_ACTIONS].action;
    const char *said = actions[_i % N_ACTIONS].said;
    int consumer_faults = strcmp(role, "consumer") == 0;
    const gpuipc_pair_proc *s = &pair.proc[consumer_faults ? 0 : 1];
    char fault[96], sock[64], during[48];
    const char *env[] = {fault, NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "--timeout", TIMEOUT, "-v", NULL};
    const char *cargs[] = {"--timeout", TIMEOUT, "-v", NULL};
    gpuipc_err err;

    snprintf(fault, sizeof(fault), "GPUIPC_FAULT=%s:%s:%s", role, steps[_i / N_ACTIONS].step,
             action);
    snprintf(during, sizeof(during), "during %s", steps[_i / N_ACTIONS].waiting);
    /* A consumer that ends its connection before its HELLO is, to --serve, a
     * connection that was not a consumer: dropped, and the wait times out. */
    if (consumer_faults && strcmp(steps[_i / N_ACTIONS].step, "hello") == 0 &&
        (strcmp(action, "exit") == 0 || strcmp(action, "kill") == 0 ||
         strcmp(action, "close") == 0))
        said = "closed before its HELLO";
    snprintf(sock, sizeof(sock), "@gpuipc-faults-%d", (int)getpid());
    ck_assert_msg(gpuipc_pair_run(th_program(), sock, args, cargs, env, 8.0,
                                  strcmp(action, "hang") == 0 ? 0.2 : 3.0, &pair, &err) == 0,
                  "%s: %s", fault, err.msg);
    ck_assert_msg(s->exited, "%s: the survivor did not exit by itself:\n%s", fault, s->out);
    ck_assert_msg(WIFEXITED(s->status) && WEXITSTATUS(s->status) == 1,
                  "%s: survivor status 0x%x:\n%s", fault, (unsigned)s->status, s->out);
    ck_assert_msg(s->seconds < TIMEOUT_S + MARGIN_S, "%s: the survivor took %.2f s", fault,
                  s->seconds);
    ck_assert_msg(strstr(s->out, during) != NULL && strstr(s->out, said),
                  "%s: the survivor does not say '%s' and '%s':\n%s", fault, during, said,
                  s->out);
    /* -v: the check at exit (or at the end of a session that reached BYE)
     * says so when the FDs match the start. */
    ck_assert_msg(strstr(s->out, "the same as at the start") && !strstr(s->out, "leaked"),
                  "%s: the survivor's FDs:\n%s", fault, s->out);
    ck_assert_msg(gone(pair.proc[0].pid) && gone(pair.proc[1].pid) && pair.leftover == 0,
                  "%s: a process was left behind", fault);
}
END_TEST

/* The last checks can fail: a consumer that keeps an FD it opened outside
 * any scenario's count says so in its answer to BYE, and both processes of
 * the two-terminal session exit 1, the producer naming the FD too. */
START_TEST(test_faults_fd_kept_by_a_role_is_found_at_the_end)
{
    const char *env[] = {"GPUIPC_SABOTAGE=consumer:leak-fd", NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "--timeout", "2", NULL};
    const char *cargs[] = {"--timeout", "2", NULL};
    char sock[64];
    gpuipc_err err;

    snprintf(sock, sizeof(sock), "@gpuipc-faults-leak-%d", (int)getpid());
    ck_assert_int_eq(gpuipc_pair_run(th_program(), sock, args, cargs, env, 8.0, 3.0, &pair,
                                     &err), 0);
    ck_assert_msg(WIFEXITED(pair.proc[1].status) && WEXITSTATUS(pair.proc[1].status) == 1,
                  "consumer status 0x%x:\n%s", (unsigned)pair.proc[1].status, pair.proc[1].out);
    ck_assert_msg(strstr(pair.proc[1].out, "FAIL consumer, at the end of the session: 1 FD "
                                           "leaked: fd ") &&
                  strstr(pair.proc[1].out, "(/dev/null)"), "consumer:\n%s", pair.proc[1].out);
    ck_assert_msg(WIFEXITED(pair.proc[0].status) && WEXITSTATUS(pair.proc[0].status) == 1,
                  "producer status 0x%x:\n%s", (unsigned)pair.proc[0].status, pair.proc[0].out);
    ck_assert_msg(strstr(pair.proc[0].out, "its last checks failed: consumer, at the end of the "
                                           "session: 1 FD leaked: fd ") &&
                  strstr(pair.proc[0].out, "result: FAIL: 1 passed, 0 failed"),
                  "producer:\n%s", pair.proc[0].out);
}
END_TEST

Suite *faults_suite(void)
{
    Suite *s = suite_create("faults");
    TCase *tc = tcase_create("step x action");

    tcase_set_timeout(tc, 30);
    tcase_add_loop_test(tc, test_faults_survivor_reports_and_leaks_nothing, 0,
                        N_STEPS * N_ACTIONS);
    tcase_add_test(tc, test_faults_fd_kept_by_a_role_is_found_at_the_end);
    suite_add_tcase(s, tc);
    return s;
}
