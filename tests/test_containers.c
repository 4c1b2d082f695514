/* SPDX-License-Identifier: Apache-2.0 */
/* test_containers.c: the two-terminal pair across the boundaries containers
 * put between processes (tests/containers.c), over memfd and memfd-pidfd,
 * and refusals made on purpose (a seccomp filter, a producer that is not
 * dumpable, another user): each gives its named cause. The namespace cases
 * need root and unshare(1); where they cannot run, the suite says so and
 * leaves them out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "containers.h"
#include "core/facts.h"
#include "helpers.h"
#include "suites.h"

#define ONLY "memfd,memfd-pidfd"

/* What memfd-pidfd does across each split of ct_splits, in order: PASS,
 * or the words its SKIP's cause must hold. */
static const char *const pidfd_expect[] = {
    "PASS",                                  /* none */
    "cause: the consumer is in another PID namespace", /* pid (consumer) */
    "cause: the consumer is in another PID namespace", /* pid, same pid */
    "cause: the consumer is in another PID namespace", /* pid, other pids */
    "PASS",                                  /* ipc */
    "PASS",                                  /* net, socket file */
    NULL,                                    /* net, abstract name: no session */
    "PASS",                                  /* mnt, bind mount */
    "PASS",                                  /* uts */
    "cause: the consumer is in another user namespace", /* user */
};

/* tests/wrap, beside this suite's binary. */
static const char *wrap_path(void)
{
    return th_beside("wrap");
}

static ct_run run;

/* The splits that can be made here, as indexes into ct_splits. */
static int splits_here[16];

START_TEST(test_containers_split)
{
    const int k = splits_here[_i];
    const ct_split *s = &ct_splits[k];
    const ct_row *memfd, *pidfd;
    char why[256];

    ck_assert_int_eq(sizeof(pidfd_expect) / sizeof(pidfd_expect[0]), ct_nsplits);
    ck_assert_msg(ct_run_split(th_program(), s, ONLY, NULL, s->no_session ? 2 : 10, &run, why,
                               sizeof(why)) == 0, "%s: %s", s->name, why);
    if (s->no_session) {
        /* Nothing to share: both fail, and the consumer says why. */
        ck_assert_msg(ct_exit(&run, 1) == 1 &&
                      strstr(run.pair.proc[1].out, "an abstract name belongs to one network "
                                                   "namespace"),
                      "%s: consumer:\n%s", s->name, run.pair.proc[1].out);
        ck_assert_msg(ct_exit(&run, 0) == 1 &&
                      strstr(run.pair.proc[0].out, "no consumer connected before the deadline"),
                      "%s: producer:\n%s", s->name, run.pair.proc[0].out);
        return;
    }
    ck_assert_msg(ct_exit(&run, 0) == 0 && ct_exit(&run, 1) == 0,
                  "%s: producer %d, consumer %d:\n%s\n%s", s->name, ct_exit(&run, 0),
                  ct_exit(&run, 1), run.pair.proc[0].out, run.pair.proc[1].out);
    memfd = ct_row_of(&run, "memfd");
    pidfd = ct_row_of(&run, "memfd-pidfd");
    ck_assert_msg(memfd != NULL && strcmp(memfd->result, "PASS") == 0, "%s: memfd:\n%s",
                  s->name, run.pair.proc[0].out);
    ck_assert_msg(pidfd != NULL, "%s: no memfd-pidfd row:\n%s", s->name, run.pair.proc[0].out);
    if (strcmp(pidfd_expect[k], "PASS") == 0)
        ck_assert_msg(strcmp(pidfd->result, "PASS") == 0, "%s: memfd-pidfd %s: %s %s", s->name,
                      pidfd->result, pidfd->reason, pidfd->cause);
    else
        ck_assert_msg(strcmp(pidfd->result, "SKIP") == 0 &&
                      strstr(pidfd->cause, pidfd_expect[k]) != NULL &&
                      strstr(pidfd->cause, "; fix: ") != NULL,
                      "%s: memfd-pidfd %s, reason '%s', cause '%s', expected '%s'", s->name,
                      pidfd->result, pidfd->reason, pidfd->cause, pidfd_expect[k]);
}
END_TEST

/* Runs the pair with the consumer under wrap (its options, NULL-ended) and
 * extra environment for the producer; no namespaces. */
/* The producer's --json document of the last refusal (js_free), or NULL. */
static jnode *refusal_doc;

static void refusal_of(const char *only, const char *const *wrap_opts, const char *const *penv)
{
    static char dir[] = "/tmp/gpuipc-rf-XXXXXX";
    char sock[64], json[64], why[256];
    const char *wrap[8];
    const char *pargs[] = {"--only", only, "--size", "1M", "--timeout", "10", "--quiet",
                           "--json", json, NULL};
    const char *cargs[] = {"--timeout", "10", "--quiet", NULL};
    gpuipc_pair_side p = {.sock = sock, .args = pargs, .env = penv};
    gpuipc_pair_side c = {.wrap = wrap, .sock = sock, .args = cargs};
    gpuipc_err err;
    size_t n = 0, i;

    strcpy(dir, "/tmp/gpuipc-rf-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(sock, sizeof(sock), "%s/sock", dir);
    snprintf(json, sizeof(json), "%s/r.json", dir);
    wrap[n++] = wrap_path();
    for (i = 0; wrap_opts[i] != NULL && n < 6; i++)
        wrap[n++] = wrap_opts[i];
    wrap[n++] = "--";
    wrap[n] = NULL;
    memset(&run, 0, sizeof(run));
    ck_assert_msg(gpuipc_pair_run_sides(th_program(), &p, &c, NULL, 1, 40, 5, &run.pair, &err) ==
                  0, "%s", err.msg);
    js_free(refusal_doc);
    refusal_doc = th_result_doc(json, why, sizeof(why));
    ck_assert_msg(refusal_doc != NULL, "--json: %s", why);
    unlink(json);
    unlink(sock);
    rmdir(dir);
}

/* The document's cause and fix of scenario name: apart, as data (the cause
 * without "cause: ", the fix without "; fix: "), says in the cause. */
static void doc_names_cause(const char *name, const char *says)
{
    const jnode *list = js_get(refusal_doc, "scenarios"), *s = NULL;
    const char *cause, *fix;
    size_t i;

    for (i = 0; i < js_len(list) && s == NULL; i++)
        if (js_str(js_get(js_at(list, i), "name")) != NULL &&
            strcmp(js_str(js_get(js_at(list, i), "name")), name) == 0)
            s = js_at(list, i);
    ck_assert_msg(s != NULL, "the document has no scenario %s", name);
    cause = js_str(js_get(s, "cause"));
    fix = js_str(js_get(s, "fix"));
    ck_assert_msg(cause != NULL && strncmp(says, "cause: ", 7) == 0 &&
                  strstr(cause, says + 7) == cause && fix != NULL && fix[0] != '\0' &&
                  strstr(cause, "; fix: ") == NULL && strstr(fix, "fix: ") == NULL,
                  "%s: cause '%s', fix '%s', expected a cause starting '%s'", name,
                  cause ? cause : "(null)", fix ? fix : "(null)", says + 7);
}

static void refusal(const char *const *wrap_opts, const char *const *penv)
{
    refusal_of(ONLY, wrap_opts, penv);
}

/* The memfd-pidfd row of the last refusal must be a SKIP with says in its
 * cause, beside a memfd that passed, and both sides must exit 0. */
static void expect_skip(const char *says)
{
    const ct_row *memfd, *pidfd;

    ck_assert_msg(ct_exit(&run, 0) == 0 && ct_exit(&run, 1) == 0, "producer %d, consumer %d:\n%s\n%s",
                  ct_exit(&run, 0), ct_exit(&run, 1), run.pair.proc[0].out, run.pair.proc[1].out);
    ct_read_rows(&run); /* the pair was run directly, not by ct_run_split */
    memfd = ct_row_of(&run, "memfd");
    pidfd = ct_row_of(&run, "memfd-pidfd");
    ck_assert_msg(memfd && strcmp(memfd->result, "PASS") == 0, "memfd:\n%s", run.pair.proc[0].out);
    ck_assert_msg(pidfd && strcmp(pidfd->result, "SKIP") == 0 && strstr(pidfd->cause, says) &&
                  strstr(pidfd->cause, "; fix: "), "memfd-pidfd: expected a SKIP saying '%s':\n%s",
                  says, run.pair.proc[0].out);
    doc_names_cause("memfd-pidfd", says);
}

/* Docker's default profile refuses pidfd_getfd without CAP_SYS_PTRACE;
 * here a filter of the same kind, with no privilege needed. */
START_TEST(test_containers_seccomp_filter_is_named)
{
    const char *const opts[] = {"--deny-pidfd-getfd", NULL};

    refusal(opts, NULL);
    expect_skip("cause: a seccomp filter in the consumer (Seccomp: 2) refuses pidfd_getfd");
}
END_TEST

/* A producer that is not dumpable gives its FDs only to CAP_SYS_PTRACE. */
START_TEST(test_containers_not_dumpable_producer_is_named)
{
    const char *const penv[] = {"GPUIPC_SABOTAGE=producer:not-dumpable", NULL};
    const char *const root_opts[] = {"--drop-cap-sys-ptrace", NULL};
    const char *const no_opts[] = {NULL};

    refusal(geteuid() == 0 ? root_opts : no_opts, penv);
    expect_skip("cause: the producer is not dumpable");
}
END_TEST

/* The same, with memfd-pidfd alone: nothing runs, and the one line of exit
 * 77 names the same cause as the summary would (before, it said only the
 * probe's reason, which blames Yama or the user). */
START_TEST(test_containers_a_lone_skip_names_its_cause_in_one_line)
{
    const char *const penv[] = {"GPUIPC_SABOTAGE=producer:not-dumpable", NULL};
    const char *const root_opts[] = {"--drop-cap-sys-ptrace", NULL};
    const char *const no_opts[] = {NULL};
    const char *out = run.pair.proc[0].out;

    refusal_of("memfd-pidfd", geteuid() == 0 ? root_opts : no_opts, penv);
    ck_assert_msg(ct_exit(&run, 0) == 77, "producer exit %d:\n%s", ct_exit(&run, 0), out);
    ck_assert_msg(th_line_has(out, "gpuipc_test: SKIP: memfd-pidfd: ",
                              "(cause: the producer is not dumpable") &&
                  th_line_has(out, "gpuipc_test: SKIP: ", "; fix: leave the producer dumpable"),
                  "the SKIP line names no cause:\n%s", out);
}
END_TEST

/* A consumer of another user, without --allow-uid: both refuse, and say so. */
START_TEST(test_containers_other_user_is_refused_by_both)
{
    static const ct_split abstract = {"uid", "another uid", NULL, NULL, CT_SOCK_ABSTRACT, 1};
    const char *wrap[] = {wrap_path(), "--uid", "65534", "--", NULL};
    ct_split s = abstract;
    char why[256];

    s.cwrap = wrap;
    ck_assert_msg(ct_run_split(th_program(), &s, ONLY, NULL, 2, &run, why, sizeof(why)) == 0,
                  "%s", why);
    ck_assert_msg(ct_exit(&run, 1) == 1 &&
                  strstr(run.pair.proc[1].out, "refused: the server there") &&
                  strstr(run.pair.proc[1].out, "not as this user (uid 65534)"),
                  "consumer:\n%s", run.pair.proc[1].out);
    ck_assert_msg(ct_exit(&run, 0) == 1 &&
                  strstr(run.pair.proc[0].out, "uid 65534: only uid 0 (this user) may connect; "
                                               "--allow-uid 65534 would admit it"),
                  "producer:\n%s", run.pair.proc[0].out);
}
END_TEST

Suite *containers_suite(void)
{
    Suite *s = suite_create("containers");
    TCase *matrix = tcase_create("matrix"), *refusals = tcase_create("refusals");
    gpuipc_facts f;
    char why[256];
    int n = 0;
    size_t j;

    tcase_set_timeout(matrix, 120);
    tcase_set_timeout(refusals, 60);
    for (j = 0; j < ct_nsplits && j < sizeof(splits_here) / sizeof(splits_here[0]); j++) {
        if (ct_split_works(&ct_splits[j], why, sizeof(why)))
            splits_here[n++] = (int)j;
        else
            fprintf(stderr, "NOT RUN: containers: split '%s': %s\n", ct_splits[j].name, why);
    }
    if (n > 0)
        tcase_add_loop_test(matrix, test_containers_split, 0, n);
    gpuipc_facts_gather(&f);
    /* Without root, pidfd_getfd between two sibling processes needs Yama
     * off; the refusals must be the only thing in the way. */
    if (geteuid() == 0 || f.yama == GPUIPC_FACTS_UNKNOWN || f.yama == 0) {
        tcase_add_test(refusals, test_containers_seccomp_filter_is_named);
        tcase_add_test(refusals, test_containers_not_dumpable_producer_is_named);
        tcase_add_test(refusals, test_containers_a_lone_skip_names_its_cause_in_one_line);
    } else {
        fprintf(stderr, "NOT RUN: containers: the seccomp and not-dumpable refusals: Yama "
                        "ptrace_scope is %u and this is not root, so pidfd_getfd between two "
                        "sibling processes is refused already\n", f.yama);
    }
    if (geteuid() == 0)
        tcase_add_test(refusals, test_containers_other_user_is_refused_by_both);
    else
        fprintf(stderr, "NOT RUN: containers: a consumer of another user: switching users "
                        "needs root\n");
    suite_add_tcase(s, matrix);
    suite_add_tcase(s, refusals);
    return s;
}
