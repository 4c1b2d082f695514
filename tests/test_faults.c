/* SPDX-License-Identifier: Apache-2.0 */
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

#include "run/matrix.h"
#include "run/pair.h"
#include "core/step.h"
#include "session/inject.h"
#include "helpers.h"
#include "suites.h"

#define TIMEOUT "0.5"
#define TIMEOUT_S 0.5
#define MARGIN_S 1.5

/* The cases are the fault matrix's (run/matrix.h): every step of both roles
 * times every action, the matrix also saying which step the survivor waits
 * in and what it says the peer did. faults_suite() lists them. */
static gpuipc_matrix_case cases[GPUIPC_MATRIX_MAX];

static gpuipc_pair pair;

static int gone(pid_t pid)
{
    return kill(pid, 0) < 0 && errno == ESRCH;
}

START_TEST(test_faults_survivor_reports_and_leaks_nothing)
{
    const gpuipc_matrix_case *c = &cases[_i];
    const char *action = gpuipc_inject_action_name(c->action);
    /* What the peer did (the matrix knows the odd one out: a consumer that
     * ends its connection before its HELLO is, to --serve, a connection
     * that was not a consumer, dropped while the wait goes on). */
    const char *said = gpuipc_matrix_phrase(c->role, c->step, c->action);
    /* Beyond the matrix's words: a peer that shut the connection down is
     * seen to have closed it, not merely to be gone. */
    const char *closed = c->action == GPUIPC_FAULT_CLOSE && strcmp(said, "peer gone during") == 0
                             ? "closed the connection" : NULL;
    int consumer_faults = c->role == GPUIPC_ROLE_CONSUMER;
    const gpuipc_pair_proc *s = &pair.proc[consumer_faults ? 0 : 1];
    char fault[96], sock[64], during[48];
    const char *env[] = {fault, NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "--timeout", TIMEOUT, "-v", NULL};
    const char *cargs[] = {"--timeout", TIMEOUT, "-v", NULL};
    gpuipc_err err;

    snprintf(fault, sizeof(fault), "GPUIPC_FAULT=%s:%s:%s", gpuipc_role_name(c->role),
             gpuipc_step_name(c->step), action);
    snprintf(during, sizeof(during), "during %s",
             gpuipc_step_name(gpuipc_matrix_waiting(c->role, c->step)));
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
    ck_assert_msg(closed == NULL || strstr(s->out, closed) != NULL,
                  "%s: the survivor does not say '%s':\n%s", fault, closed, s->out);
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
                        (int)gpuipc_matrix_cases(cases, GPUIPC_MATRIX_MAX));
    tcase_add_test(tc, test_faults_fd_kept_by_a_role_is_found_at_the_end);
    suite_add_tcase(s, tc);
    return s;
}
