/* SPDX-License-Identifier: Apache-2.0 */
/* test_results.c: --json FILE, the result document, from every run mode
 * that writes one (memfd, no GPU): each document parsed back and held
 * against docs/result.schema.json, and its verdict against the process's
 * exit status, in a pass, a failure, a refusal, --repeat, a run stopped by
 * SIGINT, both sides of --serve/--connect, a machine without a GPU, --list,
 * --bench (no GPU) and --fault-matrix (stopped by SIGINT). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "jschema.h"
#include "suites.h"

static th_run run;
static char doc_path[64];

static void setup(void)
{
    snprintf(doc_path, sizeof(doc_path), "/tmp/gpuipc-doc-%d.json", (int)getpid());
    unlink(doc_path);
}

static void teardown(void)
{
    unlink(doc_path);
}

/* The document at path, parsed, after it passed the schema; the caller
 * frees it. */
static jnode *valid_doc(const char *path)
{
    char why[512];
    jnode *doc = th_result_doc(path, why, sizeof(why));

    ck_assert_msg(doc != NULL, "%s: %s:\n%s", path, why, run.out);
    return doc;
}

/* The number at member key of doc's member obj (doc itself for NULL), or
 * -1 where there is none. */
static long long num(const jnode *doc, const char *obj, const char *key)
{
    double v = js_num(js_get(obj != NULL ? js_get(doc, obj) : doc, key));

    return v == v ? (long long)v : -1;
}

static const struct {
    const char *args[12];
    const char *env;
    int code;
    const char *mode, *verdict, *reason;
} cases[] = {
    {{"--only", "memfd", "--size", "1M", "--json"}, NULL, 0, "one-shot", "pass", NULL},
    {{"--only", "memfd", "--size", "1M", "--json"}, "GPUIPC_SABOTAGE=producer:flip-one", 1,
     "one-shot", "fail", "the producer's bytes: 1 mismatches"},
    {{"--only", "memfd,memfd-chunks", "--size", "1M", "--repeat", "3", "--json"}, NULL, 0,
     "repeat", "pass", NULL},
    {{"--only", "memfd", "--size", "1M", "--brief", "--json"}, NULL, 0, "one-shot", "pass",
     NULL},
    {{"--only", "nosuch", "--json"}, NULL, 2, "one-shot", NULL, NULL},
    {{"--json"}, "CUDA_VISIBLE_DEVICES=", 77, "one-shot", NULL, NULL},
    {{"--pairs", "all", "--json"}, "CUDA_VISIBLE_DEVICES=", 77, "pairs", NULL, NULL},
};

START_TEST(test_results_document_matches_the_schema_and_the_exit)
{
    const char *args[16];
    const char *env[] = {cases[_i].env, NULL};
    const jnode *sc;
    struct utsname u;
    char *boot;
    size_t blen;
    jnode *doc;
    int k;

    for (k = 0; cases[_i].args[k] != NULL; k++)
        args[k] = cases[_i].args[k];
    args[k++] = doc_path;
    args[k] = NULL;
    ck_assert_int_eq(th_spawn(&run, args, env, 30, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, cases[_i].code), "case %d: status 0x%x:\n%s", _i, run.status,
                  run.out);
    doc = valid_doc(doc_path);
    ck_assert_int_eq(num(doc, "exit", "status"), cases[_i].code);
    ck_assert_str_eq(js_str(js_get(doc, "mode")), cases[_i].mode);
    ck_assert_str_eq(js_str(js_get(doc, "role")), "producer");
    /* Who and where: this host, this boot, and a start before the end. */
    ck_assert_int_eq(uname(&u), 0);
    ck_assert_str_eq(js_str(js_get(js_get(doc, "machine"), "hostname")), u.nodename);
    boot = th_read_file("/proc/sys/kernel/random/boot_id", &blen);
    if (boot != NULL) {
        boot[strcspn(boot, "\n")] = '\0';
        ck_assert_str_eq(js_str(js_get(js_get(doc, "machine"), "boot_id")), boot);
        free(boot);
    }
    ck_assert_msg(strlen(js_str(js_get(doc, "start_time"))) == 24 &&
                  strcmp(js_str(js_get(doc, "start_time")), js_str(js_get(doc, "end_time"))) <= 0,
                  "start %s, end %s", js_str(js_get(doc, "start_time")),
                  js_str(js_get(doc, "end_time")));
    sc = js_at(js_get(doc, "scenarios"), 0);
    if (cases[_i].verdict == NULL) {
        ck_assert_msg(sc == NULL || strcmp(js_str(js_get(sc, "verdict")), "pass") != 0,
                      "case %d: a passed scenario in a run that exited %d", _i, cases[_i].code);
    } else {
        ck_assert_str_eq(js_str(js_get(sc, "verdict")), cases[_i].verdict);
    }
    if (cases[_i].reason != NULL)
        ck_assert_msg(strstr(js_str(js_get(sc, "reason")), cases[_i].reason) != NULL,
                      "case %d: reason '%s'", _i, js_str(js_get(sc, "reason")));
    if (cases[_i].code == 0)
        ck_assert_int_eq(num(doc, "counts", "failed"), 0);
    /* The counts' cells are the scenarios listed, each counted where it ran. */
    ck_assert_int_eq(num(doc, "counts", "cells"), (long long)js_len(js_get(doc, "scenarios")));
    ck_assert_int_eq(num(doc, "counts", "cells_on_one_gpu") +
                     num(doc, "counts", "cells_across_gpus") +
                     num(doc, "counts", "cells_in_host_memory"), num(doc, "counts", "cells"));
    /* Each step's time, from both clocks, for a scenario that passed only. */
    if (cases[_i].verdict != NULL && strcmp(cases[_i].verdict, "pass") == 0)
        ck_assert_msg(js_num(js_get(js_get(sc, "steps_ns"), "export_to_mapped")) > 0 &&
                      js_num(js_get(js_get(sc, "steps_ns"), "touch")) > 0,
                      "case %d: no step times", _i);
    else if (sc != NULL)
        ck_assert_ptr_null(js_get(js_get(sc, "steps_ns"), "alloc"));
    js_free(doc);
}
END_TEST

/* --repeat 3: the rounds run are counted. */
START_TEST(test_results_repeat_counts_rounds)
{
    const char *args[] = {"--only", "memfd", "--size", "1M", "--repeat", "3", "--json",
                          doc_path, NULL};
    const jnode *rec;
    jnode *doc;
    int r;

    ck_assert_int_eq(th_spawn(&run, args, NULL, 30, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    doc = valid_doc(doc_path);
    ck_assert_int_eq(num(doc, NULL, "rounds"), 3);
    /* A record per round, in order, with both sides' figures after it. */
    ck_assert_uint_eq(js_len(js_get(doc, "round_records")), 3);
    for (r = 0; r < 3; r++) {
        rec = js_at(js_get(doc, "round_records"), (size_t)r);
        ck_assert_int_eq((int)js_num(js_get(rec, "round")), r + 1);
        ck_assert_int_eq((int)js_num(js_get(rec, "passed")), 1);
        ck_assert_int_eq((int)js_num(js_get(rec, "failed")), 0);
        ck_assert(js_num(js_get(js_get(rec, "producer_holds_after"), "fds")) > 0);
        ck_assert(js_num(js_get(js_get(rec, "consumer_holds_after"), "fds")) > 0);
    }
    js_free(doc);
}
END_TEST

static void ctrl_c_when_hung(const char *line, pid_t pgid, void *arg)
{
    (void)arg;
    if (strstr(line, "FAULT INJECTED: hang at report") != NULL)
        kill(-pgid, SIGINT);
}

/* A run stopped by SIGINT still leaves a whole document, saying so. */
START_TEST(test_results_sigint_still_writes_the_document)
{
    const char *env[] = {"GPUIPC_FAULT=consumer:report:hang", NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "--timeout", "10", "--json",
                          doc_path, NULL};
    jnode *doc;

    ck_assert_int_eq(th_spawn(&run, args, env, 20, 3, ctrl_c_when_hung, NULL), 0);
    ck_assert_msg(th_exited(&run, 130), "status 0x%x:\n%s", run.status, run.out);
    doc = valid_doc(doc_path);
    ck_assert_int_eq(num(doc, "exit", "status"), 130);
    ck_assert_str_eq(js_str(js_get(js_get(doc, "exit"), "meaning")), "stopped by SIGINT");
    js_free(doc);
}
END_TEST

/* --serve and --connect: each side writes its own; the consumer's carries
 * the producer's verdict. */
START_TEST(test_results_both_sides_of_two_terminals)
{
    char name[64], serve_doc[80], status_text[16];
    const char *args[] = {"--connect", name, "--timeout", "10", "--json", doc_path, NULL};
    pid_t server;
    int status;
    jnode *doc;

    snprintf(name, sizeof(name), "@gpuipc-doc-%d", (int)getpid());
    snprintf(serve_doc, sizeof(serve_doc), "%s.serve", doc_path);
    unlink(serve_doc);
    server = fork();
    ck_assert_int_ge(server, 0);
    if (server == 0) {
        /* As th_spawn does: no CK_* variable (CK_RUN_SUITE=results would
         * select none of the server's scenarios). */
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

        if (th_unset_check_variables() < 0)
            _exit(126);
        /* Its summary goes nowhere: its document is what the test reads. */
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        execl(th_program(), th_program(), "--serve", name, "--only", "memfd", "--size", "1M",
              "--timeout", "10", "--json", serve_doc, "-q", (char *)NULL);
        _exit(127);
    }
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, NULL, NULL), 0);
    /* th_spawn may reap the server with the rest of its group: then its
     * document alone says how it ended. */
    if (waitpid(server, &status, 0) == server) {
        snprintf(status_text, sizeof(status_text), "0x%x", (unsigned)status);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "server: %s",
                      status_text);
    }
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    doc = valid_doc(doc_path);
    ck_assert_str_eq(js_str(js_get(doc, "role")), "consumer");
    ck_assert_str_eq(js_str(js_get(doc, "mode")), "connect");
    ck_assert_int_eq(num(doc, "producer_verdict", "status"), 0);
    ck_assert_int_eq(num(doc, "counts", "passed"), 1);
    /* The consumer holds no cells: its counts are the producer's. */
    ck_assert_ptr_nonnull(js_get(js_get(doc, "counts"), "cells"));
    ck_assert_int_eq(num(doc, "counts", "cells"), -1); /* null (the schema allows no other) */
    js_free(doc);
    doc = valid_doc(serve_doc);
    ck_assert_int_eq(num(doc, "counts", "cells"), 1);
    ck_assert_int_eq(num(doc, "counts", "cells_in_host_memory"), 1);
    ck_assert_str_eq(js_str(js_get(doc, "role")), "producer");
    ck_assert_str_eq(js_str(js_get(doc, "mode")), "serve");
    ck_assert_str_eq(js_str(js_get(js_get(doc, "exit"), "meaning")), "all that ran passed");
    ck_assert_str_eq(js_str(js_get(js_at(js_get(doc, "scenarios"), 0), "verdict")), "pass");
    js_free(doc);
    unlink(serve_doc);
}
END_TEST

/* The modes that report more than scenarios: --list (to a file, and to
 * standard output with a bare --json), --bench on a machine without a GPU
 * (77) and --fault-matrix stopped by SIGINT each write the same envelope
 * with their own member. */
START_TEST(test_results_list_document)
{
    const char *args[] = {"--list", "--json", doc_path, NULL};
    const char *bare[] = {"--list", "--json", NULL};
    jnode *doc;
    FILE *f;

    ck_assert_int_eq(th_spawn(&run, args, NULL, 30, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    doc = valid_doc(doc_path);
    ck_assert_str_eq(js_str(js_get(doc, "mode")), "list");
    ck_assert_str_eq(js_str(js_get(doc, "role")), "none");
    ck_assert_str_eq(js_str(js_get(js_get(doc, "list"), "schema")), "gpuipc_test/capabilities");
    ck_assert_ptr_nonnull(js_at(js_get(js_get(doc, "list"), "mechanisms"), 0));
    /* The plan between GPUs (issue 37): every GPU mechanism crosses GPUs
     * but a destructive one; host memory is no GPU's to cross. */
    {
        const jnode *ms = js_get(js_get(doc, "list"), "mechanisms"), *m;
        size_t i, crossing = 0;

        for (i = 0; (m = js_at(ms, i)) != NULL; i++) {
            int gpu = js_bool(js_get(m, "needs_cuda")) == 1;
            int destructive = js_bool(js_get(m, "destructive")) == 1;
            int across = js_bool(js_get(m, "across_gpus"));

            ck_assert_msg(across == (gpu && !destructive), "%s: across_gpus %d",
                          js_str(js_get(m, "name")), across);
            crossing += across;
        }
        ck_assert_uint_ge(crossing, 12);
    }
    js_free(doc);
    /* A bare --json: the document is standard output, all of it. */
    ck_assert_int_eq(th_spawn(&run, bare, NULL, 30, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    f = fopen(doc_path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(run.out, f);
    fclose(f);
    doc = valid_doc(doc_path);
    ck_assert_str_eq(js_str(js_get(doc, "mode")), "list");
    js_free(doc);
}
END_TEST

START_TEST(test_results_bench_document_without_a_gpu)
{
    const char *args[] = {"--bench", "--iters", "1", "--json", doc_path, NULL};
    const char *env[] = {"CUDA_VISIBLE_DEVICES=", NULL};
    jnode *doc;

    ck_assert_int_eq(th_spawn(&run, args, env, 60, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 77), "status 0x%x:\n%s", run.status, run.out);
    doc = valid_doc(doc_path);
    ck_assert_str_eq(js_str(js_get(doc, "mode")), "bench");
    ck_assert_int_eq(num(doc, "exit", "status"), 77);
    js_free(doc);
}
END_TEST

/* One Ctrl-C when the matrix starts (a second one may end it at once). */
static void ctrl_c_after_a_case(const char *line, pid_t pgid, void *arg)
{
    int *sent = arg;

    if (!*sent && strstr(line, "fault matrix over memfd: every step") != NULL) {
        *sent = 1;
        kill(-pgid, SIGINT);
    }
}

START_TEST(test_results_fault_matrix_document_when_stopped)
{
    const char *args[] = {"--fault-matrix", "--only", "memfd", "--size", "4K", "--json",
                          doc_path, NULL};
    const jnode *fm;
    jnode *doc;
    int sent = 0;

    ck_assert_int_eq(th_spawn(&run, args, NULL, 30, 3, ctrl_c_after_a_case, &sent), 0);
    ck_assert_msg(th_exited(&run, 130), "status 0x%x:\n%s", run.status, run.out);
    doc = valid_doc(doc_path);
    ck_assert_str_eq(js_str(js_get(doc, "mode")), "fault-matrix");
    ck_assert_int_eq(num(doc, "exit", "status"), 130);
    fm = js_get(doc, "fault_matrix");
    ck_assert_ptr_nonnull(fm);
    ck_assert_str_eq(js_str(js_get(fm, "mechanism")), "memfd");
    ck_assert_ptr_nonnull(js_get(fm, "stopped"));
    ck_assert_msg(strstr(js_str(js_get(doc, "result")), "STOPPED") != NULL, "%s",
                  js_str(js_get(doc, "result")));
    ck_assert_int_lt(num(doc, "fault_matrix", "cases"), 126);
    ck_assert(js_num(js_get(fm, "seconds")) > 0);
    js_free(doc);
}
END_TEST

/* A document that cannot be written is a bad argument, said before the
 * run: exit 2 at once, even for the matrix that would run for a minute. */
START_TEST(test_results_unwritable_document_is_refused_first)
{
    const char *one[] = {"--only", "memfd", "--size", "1M", "--json", "/nonexistent/d.json",
                         NULL};
    const char *fm[] = {"--fault-matrix", "--only", "memfd", "--json", "/nonexistent/d.json",
                        NULL};

    ck_assert_int_eq(th_spawn(&run, one, NULL, 30, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 2), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(strstr(run.out, "--json /nonexistent/d.json: its directory /nonexistent: "
                         "does not exist") != NULL, "%s", run.out);
    ck_assert_msg(strstr(run.out, "result:") == NULL, "the run ran:\n%s", run.out);
    ck_assert_int_eq(th_spawn(&run, fm, NULL, 10, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 2), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(strstr(run.out, "fault matrix over") == NULL, "the matrix ran:\n%s", run.out);
}
END_TEST

/* The checker refuses what the schema refuses: a test of the test. */
START_TEST(test_results_schema_checker_can_fail)
{
    char why[256];
    size_t n;
    char *schema_text = th_read_file("docs/result.schema.json", &n);
    jnode *schema = js_parse(schema_text, why, sizeof(why));
    jnode *doc = js_parse("{\"schema_version\": 1}", why, sizeof(why));

    ck_assert_ptr_nonnull(schema);
    ck_assert_ptr_nonnull(doc);
    ck_assert(!js_check(schema, doc, why, sizeof(why)));
    ck_assert_msg(strstr(why, "is required and missing") != NULL, "%s", why);
    js_free(doc);
    doc = js_parse("{\"schema_version\": 1.5,}", why, sizeof(why));
    ck_assert_ptr_null(doc);
    js_free(schema);
    free(schema_text);
}
END_TEST

Suite *results_suite(void)
{
    Suite *s = suite_create("results");
    TCase *tc = tcase_create("documents");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_results_document_matches_the_schema_and_the_exit, 0,
                        (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, test_results_repeat_counts_rounds);
    tcase_add_test(tc, test_results_sigint_still_writes_the_document);
    tcase_add_test(tc, test_results_both_sides_of_two_terminals);
    tcase_add_test(tc, test_results_schema_checker_can_fail);
    tcase_add_test(tc, test_results_list_document);
    tcase_add_test(tc, test_results_bench_document_without_a_gpu);
    tcase_add_test(tc, test_results_fault_matrix_document_when_stopped);
    tcase_add_test(tc, test_results_unwritable_document_is_refused_first);
    suite_add_tcase(s, tc);
    return s;
}
