/* SPDX-License-Identifier: Apache-2.0 */
/* test_inject.c: the test-only hooks parse strictly and fire only where armed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "session/inject.h"
#include "core/step.h"
#include "suites.h"

START_TEST(test_inject_is_inert_when_unset)
{
    gpuipc_inject in;
    gpuipc_err e;
    unsigned s;

    ck_assert_int_eq(gpuipc_inject_parse(NULL, "", &in, &e), 0);
    for (s = 0; s < GPUIPC_STEP_COUNT; s++) {
        ck_assert_int_eq(gpuipc_inject_fault(&in, GPUIPC_ROLE_PRODUCER, s), GPUIPC_FAULT_NONE);
        ck_assert_int_eq(gpuipc_inject_fault(&in, GPUIPC_ROLE_CONSUMER, s), GPUIPC_FAULT_NONE);
    }
    ck_assert_int_eq(gpuipc_inject_sabotage(&in, GPUIPC_ROLE_CONSUMER, GPUIPC_SABOTAGE_SKIP_WRITE),
                     0);
}
END_TEST

START_TEST(test_inject_fires_only_where_armed)
{
    gpuipc_inject in;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_inject_parse("consumer:import:kill", "producer:wrong-seed", &in, &e),
                     0);
    ck_assert_int_eq(gpuipc_inject_fault(&in, GPUIPC_ROLE_CONSUMER, GPUIPC_STEP_IMPORT),
                     GPUIPC_FAULT_KILL);
    ck_assert_int_eq(gpuipc_inject_fault(&in, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_IMPORT),
                     GPUIPC_FAULT_NONE);
    ck_assert_int_eq(gpuipc_inject_fault(&in, GPUIPC_ROLE_CONSUMER, GPUIPC_STEP_VERIFY),
                     GPUIPC_FAULT_NONE);
    ck_assert_int_eq(gpuipc_inject_sabotage(&in, GPUIPC_ROLE_PRODUCER, GPUIPC_SABOTAGE_WRONG_SEED),
                     1);
    ck_assert_int_eq(gpuipc_inject_sabotage(&in, GPUIPC_ROLE_CONSUMER, GPUIPC_SABOTAGE_WRONG_SEED),
                     0);
}
END_TEST

static const struct {
    const char *fault, *sabotage, *reason;
} bad[] = {
    {"consumer:import", NULL, "expected <producer|consumer>:<step>:<exit|kill|hang|corrupt|extra-fds|close|wedge>"},
    {"server:import:kill", NULL, "role must be producer or consumer"},
    {"consumer:alloc:kill", NULL, "'alloc' is not a step of the consumer"},
    {"producer:nowhere:exit", NULL, "'nowhere' is not a step of the producer"},
    {"producer:alloc:explode", NULL, "action must be exit, kill, hang, corrupt, extra-fds, close or wedge"},
    {NULL, "consumer", "expected <producer|consumer>:<what>, what being wrong-seed, "
                       "skip-write, leak, chunk-order, leak-fd, read-nothing, read-partial, "
                       "flip-one, flip-last, flip-past-4g, offer-memfd, offer-pipe, "
                       "offer-size, not-dumpable, early-event, wrong-token, "
                       "import-invalid-handle, access-invalid-value or access-not-supported"},
    {NULL, "consumer:flip", "expected wrong-seed, skip-write, leak, chunk-order, leak-fd, "
                            "read-nothing, read-partial, flip-one, flip-last, flip-past-4g, "
                            "offer-memfd, offer-pipe, offer-size, not-dumpable, early-event, "
                            "wrong-token, import-invalid-handle, access-invalid-value or "
                            "access-not-supported after the role"},
    {NULL, "consumer:offer-pipe", "offer-pipe is the producer's (only it makes offers)"},
    {NULL, "producer:access-not-supported", "access-not-supported is the consumer's (only it "
                                            "imports)"},
};

START_TEST(test_inject_rejects_bad_specifications)
{
    gpuipc_inject in;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_inject_parse(bad[_i].fault, bad[_i].sabotage, &in, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, bad[_i].reason) != NULL, "reason: %s", e.msg);
}
END_TEST

/* Every action parses to itself and is named back the same way. */
START_TEST(test_inject_every_action_parses)
{
    static const char *const names[] = {"exit",      "kill",  "hang", "corrupt",
                                        "extra-fds", "close", "wedge"};
    char spec[64];
    gpuipc_inject in;
    gpuipc_err e;

    snprintf(spec, sizeof(spec), "producer:offer:%s", names[_i]);
    ck_assert_int_eq(gpuipc_inject_parse(spec, NULL, &in, &e), 0);
    ck_assert_int_eq(gpuipc_inject_fault(&in, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_OFFER), _i + 1);
    ck_assert_str_eq(gpuipc_inject_action_name(_i + 1), names[_i]);
    ck_assert_int_eq(gpuipc_inject_fault(&in, GPUIPC_ROLE_CONSUMER, GPUIPC_STEP_OFFER),
                     GPUIPC_FAULT_NONE);
}
END_TEST

START_TEST(test_inject_step_names_round_trip)
{
    unsigned s;

    for (s = 1; s < GPUIPC_STEP_COUNT; s++)
        ck_assert_int_eq(gpuipc_step_parse(gpuipc_step_name(s)), (int)s);
    ck_assert_int_eq(gpuipc_step_parse("bogus"), -1);
}
END_TEST

Suite *inject_suite(void)
{
    Suite *s = suite_create("inject");
    TCase *tc = tcase_create("inject");

    tcase_add_test(tc, test_inject_is_inert_when_unset);
    tcase_add_test(tc, test_inject_fires_only_where_armed);
    tcase_add_loop_test(tc, test_inject_rejects_bad_specifications, 0,
                        (int)(sizeof(bad) / sizeof(bad[0])));
    tcase_add_test(tc, test_inject_step_names_round_trip);
    tcase_add_loop_test(tc, test_inject_every_action_parses, 0, GPUIPC_FAULT_ACTIONS - 1);
    suite_add_tcase(s, tc);
    return s;
}
