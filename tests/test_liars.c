/* SPDX-License-Identifier: Apache-2.0 */
/* test_liars.c: the real program against a peer that lies. The liar runs the
 * real role over a real socket, but its wire rewrites one kind of message on
 * the way out (gpuipc_wire_set_tamper); the program under test is the honest
 * side, started as --serve (the liar is its consumer) or --connect (the liar
 * is its producer). The rule held: each side derives its verdict from the
 * counts, the coverage and the digests it can check itself; a peer's word can
 * lower a verdict, never raise it, and a message that contradicts itself is
 * a protocol error that names itself. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/step.h"
#include "mech/memfd.h"
#include "session/producer.h"
#include "wire/endpoint.h"
#include "helpers.h"
#include "suites.h"

#define SIZE (64u << 10)
#define WORDS (SIZE / 8)
#define LIAR_TIMEOUT_NS (8 * GPUIPC_NS_PER_S)

static th_run run;
static char dir[64], path[96];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gpuipc-liar-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/sock", dir);
}

static void teardown(void)
{
    unlink(path);
    rmdir(dir);
}

/* The lies, one message type each. */
static void report_pass_with_bad_words(gpuipc_msg *m, void *arg)
{
    (void)arg;
    if (m->type != GPUIPC_MSG_REPORT)
        return;
    gpuipc_wire_status(&m->u.report.st, GPUIPC_PASS, GPUIPC_STEP_NONE, NULL);
    m->u.report.check.mismatches = 5;
    m->u.report.check.first_bad = 7;
}

static void report_pass_with_bad_words_no_digest(gpuipc_msg *m, void *arg)
{
    report_pass_with_bad_words(m, arg);
    if (m->type == GPUIPC_MSG_REPORT)
        m->u.report.check.digest = 0;
}

static void ready_says_skip(gpuipc_msg *m, void *arg)
{
    (void)arg;
    if (m->type == GPUIPC_MSG_READY)
        gpuipc_wire_status(&m->u.ready, GPUIPC_SKIP, GPUIPC_STEP_READY,
                           "ready: the liar says it cannot take part");
}

/* BYE: PASS, with the counts the liar chooses (arg: {passed, failed}). */
static void bye_says_pass(gpuipc_msg *m, void *arg)
{
    const unsigned *counts = arg;

    if (m->type != GPUIPC_MSG_BYE)
        return;
    m->u.bye.code = GPUIPC_PASS;
    m->u.bye.passed = counts[0];
    m->u.bye.failed = counts[1];
    m->u.bye.skipped = 0;
}

static const unsigned one_passed[2] = {1, 0}, none_passed[2] = {0, 0}, five_failed[2] = {1, 5};

/* BYE: SKIP, nothing counted, whatever ran. */
static void bye_says_skip(gpuipc_msg *m, void *arg)
{
    (void)arg;
    if (m->type != GPUIPC_MSG_BYE)
        return;
    m->u.bye.code = GPUIPC_SKIP;
    m->u.bye.passed = m->u.bye.failed = m->u.bye.skipped = 0;
}

/* An offer of one byte, with a fill of nothing, and BYE: PASS, 1 passed. */
static void offer_of_one_byte(gpuipc_msg *m, void *arg)
{
    (void)arg;
    if (m->type == GPUIPC_MSG_OFFER && m->u.offer.st.code == GPUIPC_PASS) {
        m->u.offer.size = 1;
        m->u.offer.granularity = 1;
        memset(&m->u.offer.wrote, 0, sizeof(m->u.offer.wrote));
    }
    bye_says_pass(m, (void *)one_passed);
}

/* END: PASS, with 5 bad words counted; BYE: PASS, 1 passed. */
static void end_pass_with_bad_words(gpuipc_msg *m, void *arg)
{
    (void)arg;
    if (m->type == GPUIPC_MSG_END) {
        gpuipc_wire_status(&m->u.end.st, GPUIPC_PASS, GPUIPC_STEP_NONE, NULL);
        m->u.end.check.mismatches = 5;
    }
    bye_says_pass(m, (void *)one_passed);
}

/* END: FAIL (the producer found the consumer's bytes wrong), and BYE: PASS,
 * 1 passed anyway. */
static void end_fail_then_bye_pass(gpuipc_msg *m, void *arg)
{
    (void)arg;
    if (m->type == GPUIPC_MSG_END)
        gpuipc_wire_status(&m->u.end.st, GPUIPC_FAIL, GPUIPC_STEP_CHECK,
                           "check: the liar says the consumer's bytes were wrong");
    bye_says_pass(m, (void *)one_passed);
}

static void liar_env(gpuipc_env *env, int role)
{
    th_env(env, role, "liar-log", LIAR_TIMEOUT_NS);
}

/* A consumer that connects to path and serves memfd, lying with fn. */
static pid_t spawn_lying_consumer(gpuipc_wire_tamper_fn fn, const void *arg)
{
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        th_lying_consumer(path, fn, (void *)arg, "liar-log", LIAR_TIMEOUT_NS);
    return pid;
}

/* A producer that serves at path, runs scenarios memfd scenarios (0: none)
 * and says BYE with its verdict, lying with fn. */
static pid_t spawn_lying_producer(gpuipc_wire_tamper_fn fn, const void *arg, unsigned scenarios)
{
    pid_t pid;
    gpuipc_endpoint ep;
    gpuipc_err e;

    ck_assert_msg(gpuipc_endpoint_listen(&ep, path, &e) == 0, "listen: %s", e.msg);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        gpuipc_msg_bye verdict = {.code = GPUIPC_SKIP};
        gpuipc_status ack;
        gpuipc_result res;
        gpuipc_peer peer;
        gpuipc_env env;
        gpuipc_wire *w;
        unsigned i;
        int fd, peer_pid;

        liar_env(&env, GPUIPC_ROLE_PRODUCER);
        fd = gpuipc_endpoint_accept(&ep, -1, gpuipc_clock_deadline(LIAR_TIMEOUT_NS), NULL, NULL,
                                    &peer, &e);
        gpuipc_endpoint_close(&ep);
        if (fd < 0 || gpuipc_wire_open(&w, fd, "consumer", &e) < 0)
            _exit(3);
        env.cred_pid = peer.pid > 0 ? peer.pid : -1;
        gpuipc_wire_set_tamper(w, fn, (void *)arg);
        if (gpuipc_producer_hello(&env, w, 0, &peer_pid, &e) < 0)
            _exit(4);
        for (i = 0; i < scenarios; i++) {
            th_scenario(&env, w, &gpuipc_mech_memfd, SIZE, i, &res);
            if (res.status == GPUIPC_PASS)
                verdict.passed++;
            else
                verdict.failed++;
        }
        verdict.code = verdict.failed ? GPUIPC_FAIL : verdict.passed ? GPUIPC_PASS : GPUIPC_SKIP;
        gpuipc_producer_bye(&env, w, &verdict, &ack, &e);
        _exit(0);
    }
    /* The child listens now; this process lets go of its copy without
     * removing the socket file. */
    close(ep.fd);
    return pid;
}

static void reap(pid_t pid)
{
    int status;

    if (waitpid(pid, &status, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
}

/* The program as --serve's producer (memfd, SIZE), against a lying consumer. */
static void serve_against(gpuipc_wire_tamper_fn fn, const void *arg)
{
    const char *args[] = {"--serve", path, "--only", "memfd", "--size", "64K", "--timeout",
                          "5", NULL};
    pid_t liar = spawn_lying_consumer(fn, arg);

    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 2, NULL, NULL), 0);
    reap(liar);
}

/* The program as --connect's consumer, against a lying producer. */
static void connect_against(gpuipc_wire_tamper_fn fn, const void *arg, unsigned scenarios)
{
    const char *args[] = {"--connect", path, "--timeout", "5", NULL};
    pid_t liar = spawn_lying_producer(fn, arg, scenarios);

    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 2, NULL, NULL), 0);
    reap(liar);
}

#define OUT_HAS(text) ck_assert_msg(strstr(run.out, (text)) != NULL, "output lacks '%s':\n%s", \
                                    (text), run.out)
#define EXITED(code) ck_assert_msg(th_exited(&run, (code)), "exit status 0x%x, not %d:\n%s", \
                                   run.status, (code), run.out)

/* The liars' own honesty: without a lie, both sides pass, so that every test
 * below fails for its lie alone. */
START_TEST(test_liars_an_honest_consumer_passes)
{
    serve_against(NULL, NULL);
    EXITED(0);
    OUT_HAS("result: PASS: 1 passed, 0 failed, 0 skipped");
}
END_TEST

START_TEST(test_liars_an_honest_producer_passes)
{
    connect_against(NULL, NULL, 1);
    EXITED(0);
    OUT_HAS("the producer concluded PASS: 1 passed, 0 failed, 0 skipped; this side passed");
}
END_TEST

/* REPORT: PASS, although its own check counts 5 bad words. */
START_TEST(test_liars_a_report_of_pass_with_bad_words_fails)
{
    serve_against(report_pass_with_bad_words, NULL);
    EXITED(1);
    OUT_HAS("REPORT: a self-contradictory message: REPORT says PASS, but its check counts 5 "
            "mismatches in 8192 words");
}
END_TEST

START_TEST(test_liars_a_report_of_pass_with_bad_words_and_no_digest_fails)
{
    serve_against(report_pass_with_bad_words_no_digest, NULL);
    EXITED(1);
    OUT_HAS("REPORT: a self-contradictory message: REPORT says PASS, but its check counts 5 "
            "mismatches in 8192 words");
}
END_TEST

/* READY: SKIP. The consumer takes no part, so nothing passes. */
START_TEST(test_liars_a_ready_that_says_skip_is_not_ready)
{
    serve_against(ready_says_skip, NULL);
    EXITED(77);
    OUT_HAS("the liar says it cannot take part");
}
END_TEST

/* BYE: PASS, 1 passed, after no scenario at all. */
START_TEST(test_liars_a_bye_of_pass_after_no_scenario_fails)
{
    connect_against(bye_says_pass, one_passed, 0);
    EXITED(1);
    OUT_HAS("the producer's BYE counts 1 passed, but this side saw 0 scenarios pass");
}
END_TEST

/* BYE: PASS with 0 passed contradicts itself. */
START_TEST(test_liars_a_bye_of_pass_with_nothing_passed_fails)
{
    connect_against(bye_says_pass, none_passed, 0);
    EXITED(1);
    OUT_HAS("BYE: a self-contradictory message: BYE says PASS, but counts no scenario passed");
}
END_TEST

/* BYE: PASS with 5 failed contradicts itself. */
START_TEST(test_liars_a_bye_of_pass_with_failures_fails)
{
    connect_against(bye_says_pass, five_failed, 1);
    EXITED(1);
    OUT_HAS("BYE: a self-contradictory message: BYE says PASS, but counts 5 failed");
}
END_TEST

/* BYE: SKIP (nothing could run) after a scenario passed on both sides:
 * the consumer knows better than 77. */
START_TEST(test_liars_a_bye_of_skip_after_a_pass_fails)
{
    connect_against(bye_says_skip, NULL, 1);
    EXITED(1);
    OUT_HAS("the producer's BYE says SKIP (nothing could run), but this side saw 1 scenario "
            "pass");
}
END_TEST

/* An offer of one byte: nothing the consumer could check. */
START_TEST(test_liars_an_offer_of_one_byte_fails)
{
    connect_against(offer_of_one_byte, NULL, 1);
    EXITED(1);
    OUT_HAS("the offer holds 1 bytes, but BEGIN asked for 65536");
}
END_TEST

/* END: PASS, although the producer's own check counts 5 bad words. */
START_TEST(test_liars_an_end_of_pass_with_bad_words_fails)
{
    connect_against(end_pass_with_bad_words, NULL, 1);
    EXITED(1);
    OUT_HAS("END: a self-contradictory message: END says PASS, but its check counts 5 "
            "mismatches in 8192 words");
}
END_TEST

/* END: FAIL, then BYE: PASS, 1 passed: the verdict hides a failure the
 * producer itself said (and the consumer saw no scenario pass). */
START_TEST(test_liars_a_bye_of_pass_after_a_failed_end_fails)
{
    connect_against(end_fail_then_bye_pass, NULL, 1);
    EXITED(1);
    OUT_HAS("the producer's BYE says PASS, but its END said it failed 1 scenario here");
}
END_TEST

Suite *liars_suite(void)
{
    Suite *s = suite_create("liars");
    TCase *consumer = tcase_create("lying-consumer");
    TCase *producer = tcase_create("lying-producer");

    tcase_add_checked_fixture(consumer, setup, teardown);
    tcase_add_checked_fixture(producer, setup, teardown);
    tcase_set_timeout(consumer, 30);
    tcase_set_timeout(producer, 30);
    tcase_add_test(consumer, test_liars_an_honest_consumer_passes);
    tcase_add_test(consumer, test_liars_a_report_of_pass_with_bad_words_fails);
    tcase_add_test(consumer, test_liars_a_report_of_pass_with_bad_words_and_no_digest_fails);
    tcase_add_test(consumer, test_liars_a_ready_that_says_skip_is_not_ready);
    tcase_add_test(producer, test_liars_an_honest_producer_passes);
    tcase_add_test(producer, test_liars_a_bye_of_pass_after_no_scenario_fails);
    tcase_add_test(producer, test_liars_a_bye_of_pass_with_nothing_passed_fails);
    tcase_add_test(producer, test_liars_a_bye_of_pass_with_failures_fails);
    tcase_add_test(producer, test_liars_a_bye_of_skip_after_a_pass_fails);
    tcase_add_test(producer, test_liars_an_offer_of_one_byte_fails);
    tcase_add_test(producer, test_liars_an_end_of_pass_with_bad_words_fails);
    tcase_add_test(producer, test_liars_a_bye_of_pass_after_a_failed_end_fails);
    suite_add_tcase(s, consumer);
    suite_add_tcase(s, producer);
    return s;
}
