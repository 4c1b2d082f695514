/* SPDX-License-Identifier: Apache-2.0 */
/* test_results.c: --json FILE, the result document, from every run mode
 * that writes one (memfd, no GPU): each document parsed back and held
 * against docs/result.schema.json, and its verdict against the process's
 * exit status, in a pass, a failure, a refusal, --repeat, a run stopped by
 * SIGINT, both sides of --serve/--connect, a machine without a GPU, --list,
 * --bench (no GPU) and --fault-matrix (stopped by SIGINT); and, written in
 * this process from made-up rows, the document of the default run over 2,
 * 8 and 72 GPUs (each alone, then every ordered pair) and its per-GPU
 * verdicts. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/facts.h"
#include "core/status.h"
#include "core/step.h"
#include "run/cellset.h"
#include "run/plan.h"
#include "run/result_doc.h"
#include "session/mech.h"
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

/* ---- The document of every ordered pair of N GPUs (issue 38) ----
 * The rows the default run makes over N GPUs (app/cuda/scenarios.c): each
 * GPU alone with every GPU mechanism, then every ordered pair in the phases
 * of run/plan's gpuipc_plan_phases with every mechanism that crosses GPUs,
 * then host memory; named by run/cellset's gpuipc_cellset_name, as the
 * producer names them. The document is written in this process by
 * gpuipc_doc_write (after gpuipc_doc_check_path, as main does), read back
 * and held against docs/result.schema.json. */

/* Mechanisms as the registry describes them, as far as the rows need:
 * their names, and where they run. The first three cross GPUs. */
static const gpuipc_mech scale_mechs[] = {
    {.name = "vmm", .needs_cuda = 1, .cross_device = 1},
    {.name = "vmm-pidfd", .needs_cuda = 1, .cross_device = 1},
    {.name = "vmm-chunks", .needs_cuda = 1, .cross_device = 1},
};
static const gpuipc_mech scale_host = {.name = "memfd"};

/* The rows of a run over ngpus GPUs with the first nmech of scale_mechs. */
typedef struct scale_run {
    int ngpus;
    size_t nmech;
    size_t alone, across, n; /* rows: each GPU alone, across GPUs, all (a host row last) */
    gpuipc_cellset cs;
} scale_run;

/* The index of the row of mechanism m from GPU a to GPU b (a == b: alone;
 * a < 0: host memory) in the run's order: alone GPU by GPU, then pair by
 * pair in phase order (in phase k, a exports to a + k mod N), then host. */
static size_t scale_index(const scale_run *s, size_t m, int a, int b)
{
    size_t k;

    if (a < 0)
        return s->n - 1;
    if (a == b)
        return (size_t)a * s->nmech + m;
    k = (size_t)((b - a + s->ngpus) % s->ngpus); /* the phase, 1 to N - 1 */
    return s->alone + ((k - 1) * (size_t)s->ngpus + (size_t)a) * s->nmech + m;
}

/* r passed: 1 MiB read both ways, in a millisecond. */
static void scale_pass(gpuipc_result *r)
{
    r->status = GPUIPC_PASS;
    r->size = 1 << 20;
    r->forward.words = r->backward.words = r->consumer_wrote.words = (1 << 20) / 8;
    r->forward.ns = r->backward.ns = r->consumer_wrote.ns = 100000;
    r->ns = 1000000;
}

/* r failed on the consumer's side at import, as a refused import says. */
static void scale_fail(gpuipc_result *r)
{
    gpuipc_result_set(r, GPUIPC_FAIL, GPUIPC_ROLE_CONSUMER, GPUIPC_STEP_IMPORT, NULL,
                      "consumer import: cuMemImportFromShareableHandle: "
                      "CUDA_ERROR_INVALID_DEVICE");
}

/* The rows of a run over ngpus GPUs and nmech mechanisms, every one passed. */
static void scale_rows(scale_run *s, int ngpus, size_t nmech)
{
    gpuipc_plan_pair *pairs = NULL;
    unsigned nphases = 0;
    size_t npairs = (size_t)ngpus * (size_t)(ngpus - 1), k = 0, p, m;
    int *gpus = calloc((size_t)ngpus, sizeof(*gpus)), g;

    ck_assert_ptr_nonnull(gpus);
    for (g = 0; g < ngpus; g++)
        gpus[g] = g;
    pairs = gpuipc_plan_phases(gpus, (size_t)ngpus, &nphases);
    ck_assert_ptr_nonnull(pairs);
    ck_assert_uint_eq(nphases, (unsigned)ngpus - 1);
    s->ngpus = ngpus;
    s->nmech = nmech;
    s->alone = (size_t)ngpus * nmech;
    s->across = npairs * nmech;
    s->n = s->alone + s->across + 1;
    gpuipc_cellset_init(&s->cs, 0);
    ck_assert_int_eq(gpuipc_cellset_size(&s->cs, s->n), 0);
    for (g = 0; g < ngpus; g++)
        for (m = 0; m < nmech; m++)
            gpuipc_cellset_name(&s->cs, k++, &scale_mechs[m], g, g, 0);
    for (p = 0; p < npairs; p++)
        for (m = 0; m < nmech; m++)
            gpuipc_cellset_name(&s->cs, k++, &scale_mechs[m], pairs[p].a, pairs[p].b, 0);
    gpuipc_cellset_name(&s->cs, k++, &scale_host, -1, -1, 0);
    ck_assert_uint_eq(k, s->n);
    gpuipc_cellset_publish(&s->cs, k);
    for (k = 0; k < s->n; k++)
        scale_pass(&s->cs.results[k]);
    free(pairs);
    free(gpus);
}

/* GPU g's UUID, as the machine's table gives it. */
static void scale_uuid(int g, char *out, size_t len)
{
    snprintf(out, len, "GPU-%08x-0000-0000-0000-000000000000", (unsigned)g);
}

/* d written by gpuipc_doc_write to path (plen bytes: its --json path) in
 * a new directory dir ("...XXXXXX"), parsed back and held against the
 * schema, the directory removed. Returns the tree (the caller frees it),
 * or NULL with why. */
static jnode *doc_round_trip(const gpuipc_doc *d, char *dir, char *path, size_t plen, char *why,
                             size_t wlen)
{
    gpuipc_err err;
    jnode *doc;

    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, plen, "%s/doc.json", dir);
    ck_assert_msg(gpuipc_doc_check_path(path, &err) == 0, "%s", err.msg);
    ck_assert_msg(gpuipc_doc_write(d, &err) == 0, "%s", err.msg);
    gpuipc_doc_drop_file();
    doc = th_result_doc(path, why, wlen);
    th_remove_tree(dir);
    return doc;
}

/* The forked producer's document of s's rows, exit status code: written
 * by gpuipc_doc_write to a file in a directory of its own, parsed back and
 * held against the schema (the caller frees it). */
static jnode *scale_doc(const scale_run *s, int code)
{
    static gpuipc_doc_machine machine; /* 1024 UUIDs: not on the stack */
    static gpuipc_facts own;
    char dir[] = "/tmp/gpuipc-nxn-XXXXXX", path[64], why[512];
    char *argv[] = {"gpuipc_test", "--json", path, NULL};
    gpuipc_doc_program o = {.version = "9.9", .commit = "unknown", .mode = "one-shot",
                            .argc = 3, .argv = argv, .json_path = path, .size = 1 << 20,
                            .chunks = 1, .timeout_ns = 10000000000ull, .repeat = 1};
    gpuipc_doc d = {.o = &o, .machine = &machine, .role = "producer", .exit_code = code,
                    .wall_ns = 1000000000ull, .results = s->cs.results,
                    .n = gpuipc_cellset_count(&s->cs), .rounds = 1,
                    .own = &own, .result = code == 0 ? "PASS" : "FAIL"};
    jnode *doc;
    int g;

    gpuipc_facts_gather(&own);
    for (g = 0; g < s->ngpus; g++)
        scale_uuid(g, machine.uuids[g], sizeof(machine.uuids[g]));
    doc = doc_round_trip(&d, dir, path, sizeof(path), why, sizeof(why));
    ck_assert_msg(doc != NULL, "%d GPUs: %s", s->ngpus, why);
    return doc;
}

/* Each scenario of doc is a row of s, at its place in the run's order,
 * once, named and placed as the producer named it. */
static void scale_check_scenarios(const jnode *doc, const scale_run *s)
{
    const jnode *sc = js_get(doc, "scenarios");
    unsigned char *seen = calloc(s->n, 1);
    char name[64];
    size_t i, m, at;

    ck_assert_ptr_nonnull(seen);
    ck_assert_uint_eq(js_len(sc), s->n);
    for (i = 0; i < js_len(sc); i++) {
        const jnode *x = js_at(sc, i);
        const char *got = js_str(js_get(x, "name"));
        double gpu = js_num(js_get(x, "gpu")), peer = js_num(js_get(x, "peer_gpu"));
        int a = gpu == gpu ? (int)gpu : -1, b = peer == peer ? (int)peer : a;

        ck_assert_ptr_nonnull(got);
        /* Host memory: no GPU at all; across GPUs: both, two of them. */
        ck_assert_msg(a >= 0 || peer != peer, "scenario %zu (%s): a peer_gpu without a gpu", i,
                      got);
        ck_assert_msg(peer != peer || (b >= 0 && b < s->ngpus && b != a),
                      "scenario %zu (%s): peer_gpu %d", i, got, b);
        ck_assert_msg(a < s->ngpus, "scenario %zu (%s): gpu %d", i, got, a);
        for (m = 0; m < s->nmech && a >= 0; m++) {
            if (a == b)
                snprintf(name, sizeof(name), "%s", scale_mechs[m].name);
            else
                snprintf(name, sizeof(name), "%s %d->%d", scale_mechs[m].name, a, b);
            if (strcmp(name, got) == 0)
                break;
        }
        ck_assert_msg(a < 0 ? strcmp(got, scale_host.name) == 0 : m < s->nmech,
                      "scenario %zu: '%s' is not the name of a row from GPU %d to GPU %d", i,
                      got, a, b);
        at = scale_index(s, m, a, b);
        ck_assert_msg(!seen[at], "scenario %zu (%s, %d->%d) twice", i, got, a, b);
        seen[at] = 1;
        ck_assert_msg(at == i, "scenario %zu (%s) out of the run's order: row %zu", i, got, at);
        ck_assert_str_eq(js_str(js_get(x, "verdict")),
                         gpuipc_status_name(s->cs.results[i].status));
    }
    for (at = 0; at < s->n; at++)
        ck_assert_msg(seen[at], "row %zu (%s) missing", at, s->cs.results[at].mech);
    free(seen);
}

/* doc's entry of GPU g in "gpus" (checked to be there once), or a failure. */
static const jnode *scale_gpu(const jnode *doc, int g)
{
    const jnode *gpus = js_get(doc, "gpus"), *found = NULL;
    size_t i;

    for (i = 0; i < js_len(gpus); i++)
        if ((int)js_num(js_get(js_at(gpus, i), "ordinal")) == g) {
            ck_assert_msg(found == NULL, "GPU %d twice in gpus", g);
            found = js_at(gpus, i);
        }
    ck_assert_msg(found != NULL, "GPU %d not in gpus", g);
    return found;
}

static long long scale_count(const jnode *gpu, const char *key)
{
    return (long long)js_num(js_get(gpu, key));
}

/* N GPUs and nmech mechanisms: 2, 8 and 72 GPUs (72: two mechanisms, to
 * keep the document's 10,369 rows quick). */
static const struct {
    int ngpus;
    size_t nmech;
} scale_cases[] = {{2, 3}, {8, 3}, {72, 2}};

START_TEST(test_results_every_ordered_pair_of_n_gpus_in_the_document)
{
    scale_run s;
    char uuid[GPUIPC_OUTCOME_UUID_LEN];
    long long sum = 0;
    jnode *doc;
    int g;

    scale_rows(&s, scale_cases[_i].ngpus, scale_cases[_i].nmech);
    doc = scale_doc(&s, 0);
    scale_check_scenarios(doc, &s);
    ck_assert_int_eq(num(doc, "counts", "passed"), (long long)s.n);
    ck_assert_int_eq(num(doc, "counts", "failed"), 0);
    /* gpus: each GPU once, by its UUID, with every scenario it took part
     * in: its own, and each across GPUs it exported or imported in. */
    ck_assert_uint_eq(js_len(js_get(doc, "gpus")), (size_t)s.ngpus);
    for (g = 0; g < s.ngpus; g++) {
        const jnode *x = scale_gpu(doc, g);

        scale_uuid(g, uuid, sizeof(uuid));
        ck_assert_str_eq(js_str(js_get(x, "uuid")), uuid);
        ck_assert_str_eq(js_str(js_get(x, "verdict")), "pass");
        ck_assert_int_eq(scale_count(x, "passed"),
                         (long long)(s.nmech + 2 * (size_t)(s.ngpus - 1) * s.nmech));
        ck_assert_int_eq(scale_count(x, "failed") + scale_count(x, "skipped") +
                         scale_count(x, "stopped"), 0);
        sum += scale_count(x, "passed");
    }
    /* Each across GPUs counted for both its GPUs; host memory for none. */
    ck_assert_int_eq(sum, (long long)(s.alone + 2 * s.across));
    js_free(doc);
    gpuipc_cellset_free(&s.cs);
}
END_TEST

/* Each GPU's verdict in doc: "fail" for those failing says, "pass" for the
 * rest, with failed scenarios as failed(g) says. */
static void scale_check_verdicts(const jnode *doc, const scale_run *s,
                                 int (*failing)(int g), long long (*failed)(const scale_run *s,
                                                                           int g))
{
    int g;

    ck_assert_uint_eq(js_len(js_get(doc, "gpus")), (size_t)s->ngpus);
    for (g = 0; g < s->ngpus; g++) {
        const jnode *x = scale_gpu(doc, g);
        const char *v = js_str(js_get(x, "verdict"));

        ck_assert_msg(v != NULL && strcmp(v, failing(g) ? "fail" : "pass") == 0,
                      "GPU %d: verdict %s", g, v);
        ck_assert_msg(scale_count(x, "failed") == failed(s, g), "GPU %d: %lld failed, not %lld",
                      g, scale_count(x, "failed"), failed(s, g));
        ck_assert_int_eq(scale_count(x, "passed") + scale_count(x, "failed"),
                         (long long)(s->nmech + 2 * (size_t)(s->ngpus - 1) * s->nmech));
    }
}

/* One pair failed among healthy GPUs: 5 -> 41, with one mechanism. */
enum { PAIR_A = 5, PAIR_B = 41 };

static int pair_failing(int g)
{
    return g == PAIR_A || g == PAIR_B;
}

static long long pair_failed(const scale_run *s, int g)
{
    (void)s;
    return pair_failing(g);
}

/* One failed pair a -> b among healthy GPUs fails GPUs a and b, each with
 * that one failure, and no other GPU: the pair's link, or either GPU. */
START_TEST(test_results_a_failed_pair_fails_its_two_gpus_alone)
{
    const jnode *sc;
    scale_run s;
    jnode *doc;

    scale_rows(&s, 72, 2);
    scale_fail(&s.cs.results[scale_index(&s, 1, PAIR_A, PAIR_B)]);
    doc = scale_doc(&s, 1);
    ck_assert_int_eq(num(doc, "counts", "failed"), 1);
    sc = js_at(js_get(doc, "scenarios"), scale_index(&s, 1, PAIR_A, PAIR_B));
    ck_assert_str_eq(js_str(js_get(sc, "name")), "vmm-pidfd 5->41");
    ck_assert_str_eq(js_str(js_get(sc, "verdict")), "fail");
    ck_assert_msg(strstr(js_str(js_get(sc, "reason")), "CUDA_ERROR_INVALID_DEVICE") != NULL,
                  "%s", js_str(js_get(sc, "reason")));
    scale_check_verdicts(doc, &s, pair_failing, pair_failed);
    js_free(doc);
    gpuipc_cellset_free(&s.cs);
}
END_TEST

/* GPU 17 failed on its own (one of its own scenarios), and with it every
 * pair it took part in, both ways (a GPU fallen off the bus). */
enum { LOST_GPU = 17 };

static int lost_failing(int g)
{
    return g == LOST_GPU;
}

static long long lost_failed(const scale_run *s, int g)
{
    /* Its own one and all its pairs'; each other GPU's two pairs with it. */
    return g == LOST_GPU ? 1 + 2 * (long long)(s->ngpus - 1) * (long long)s->nmech
                         : 2 * (long long)s->nmech;
}

/* A GPU that fails on its own takes the blame for its neighbours' pairs
 * with it (run/plan.h's rule): it alone fails; the others' counts still
 * hold those pairs' failures. */
START_TEST(test_results_a_gpu_failed_on_its_own_takes_its_pairs)
{
    scale_run s;
    jnode *doc;
    size_t m;
    int g;

    scale_rows(&s, 72, 2);
    scale_fail(&s.cs.results[scale_index(&s, 0, LOST_GPU, LOST_GPU)]);
    for (g = 0; g < s.ngpus; g++)
        for (m = 0; m < s.nmech && g != LOST_GPU; m++) {
            scale_fail(&s.cs.results[scale_index(&s, m, LOST_GPU, g)]);
            scale_fail(&s.cs.results[scale_index(&s, m, g, LOST_GPU)]);
        }
    doc = scale_doc(&s, 1);
    ck_assert_int_eq(num(doc, "counts", "failed"), lost_failed(&s, LOST_GPU));
    scale_check_verdicts(doc, &s, lost_failing, lost_failed);
    js_free(doc);
    gpuipc_cellset_free(&s.cs);
}
END_TEST

static int every_failing(int g)
{
    (void)g;
    return 1;
}

static long long every_failed(const scale_run *s, int g)
{
    (void)g;
    return 2 * (long long)(s->ngpus - 1) * (long long)s->nmech;
}

/* No GPU reaches another (every scenario across GPUs failed, each GPU's own
 * passed: a fabric down): every GPU fails, none of them to blame alone. */
START_TEST(test_results_no_pair_passing_fails_every_gpu)
{
    scale_run s;
    jnode *doc;
    size_t k;

    scale_rows(&s, scale_cases[_i].ngpus, scale_cases[_i].nmech);
    for (k = s.alone; k < s.alone + s.across; k++)
        scale_fail(&s.cs.results[k]);
    doc = scale_doc(&s, 1);
    ck_assert_int_eq(num(doc, "counts", "failed"), (long long)s.across);
    scale_check_verdicts(doc, &s, every_failing, every_failed);
    js_free(doc);
    gpuipc_cellset_free(&s.cs);
}
END_TEST

/* A machine's GPUs in the document with NVML's fabric info: a completed
 * fabric as its fields (state, status, the cluster's UUID alone, clique,
 * health mask), a GPU whose fabric is not reported as null; and this
 * node's IMEX daemon, not READY, with a node of its domain known by its
 * address alone; all held against the schema. */
START_TEST(test_results_the_gpus_fabric_info_is_in_the_document)
{
    static gpuipc_doc_machine machine;
    static gpuipc_facts own;
    static gpuipc_imex_daemon imex = {.tool = 1, .ready = 0, .state = "WAITING_FOR_PEERS",
                                      .nnodes = 2};
    const jnode *dmn;
    gpuipc_doc_gpu gpus[2];
    char dir[] = "/tmp/gpuipc-fab-XXXXXX", path[64], why[512];
    char *argv[] = {"gpuipc_test", "--json", path, NULL};
    gpuipc_doc_program o = {.version = "9.9", .commit = "unknown", .mode = "one-shot",
                            .argc = 3, .argv = argv, .json_path = path, .size = 1 << 20,
                            .chunks = 1, .timeout_ns = 10000000000ull, .repeat = 1};
    gpuipc_doc d = {.o = &o, .machine = &machine, .role = "producer", .exit_code = 77,
                    .wall_ns = 1000000000ull, .rounds = 1, .own = &own, .result = "SKIP"};
    const jnode *list, *f;
    jnode *doc;

    memset(gpus, 0, sizeof(gpus));
    gpus[0].ordinal = 0;
    gpus[0].have_uuid = 1;
    snprintf(gpus[0].name, sizeof(gpus[0].name), "NVIDIA GB200");
    snprintf(gpus[0].uuid, sizeof(gpus[0].uuid), "GPU-1d269889-0000-0000-0000-000000000001");
    snprintf(gpus[0].modes, sizeof(gpus[0].modes), "GPU fabric completed");
    gpus[0].fabric.state = 3;
    gpus[0].fabric.clique = 7;
    gpus[0].fabric.health_mask = 0x0012; /* route unhealthy; degraded bandwidth false */
    gpus[0].fabric.health_summary = 2;
    snprintf(gpus[0].fabric.cluster, sizeof(gpus[0].fabric.cluster), "GPU-abababab-abab-abab-abab-abababababab");
    gpus[1] = gpus[0];
    gpus[1].ordinal = 1;
    gpus[1].fabric.state = -1;
    machine.have_driver = 1;
    snprintf(machine.driver, sizeof(machine.driver), "580.159.04");
    snprintf(imex.node[0].addr, sizeof(imex.node[0].addr), "10.0.0.1");
    snprintf(imex.node[0].host, sizeof(imex.node[0].host), "tray01");
    snprintf(imex.node[0].status, sizeof(imex.node[0].status), "READY");
    snprintf(imex.node[1].addr, sizeof(imex.node[1].addr), "10.0.0.2");
    snprintf(imex.node[1].status, sizeof(imex.node[1].status), "UNAVAILABLE");
    machine.imex = &imex;
    machine.imex_tool = "/usr/bin/nvidia-imex-ctl";
    machine.ngpus = 2;
    machine.gpus = gpus;
    gpuipc_facts_gather(&own);
    doc = doc_round_trip(&d, dir, path, sizeof(path), why, sizeof(why));
    ck_assert_msg(doc != NULL, "%s", why);
    list = js_get(js_get(doc, "machine"), "gpus");
    ck_assert_uint_eq(js_len(list), 2);
    f = js_get(js_at(list, 0), "fabric");
    ck_assert_str_eq(js_str(js_get(f, "state")), "completed");
    ck_assert_str_eq(js_str(js_get(f, "cluster_uuid")), "abababab-abab-abab-abab-abababababab");
    ck_assert(js_num(js_get(f, "clique")) == 7);
    ck_assert(js_num(js_get(f, "health_mask")) == 0x12);
    ck_assert_str_eq(js_str(js_get(f, "health_summary")), "unhealthy");
    ck_assert_str_eq(js_str(js_get(f, "health_faults")), "route unhealthy, health summary "
                                                          "unhealthy");
    ck_assert(js_num(js_get(f, "status")) == 0);
    ck_assert_ptr_nonnull(js_get(js_at(list, 1), "fabric")); /* present, and null */
    ck_assert_ptr_null(js_str(js_get(js_at(list, 1), "fabric")));
    dmn = js_get(js_get(doc, "machine"), "imex_daemon");
    ck_assert_str_eq(js_str(js_get(dmn, "state")), "WAITING_FOR_PEERS");
    ck_assert_uint_eq(js_len(js_get(dmn, "nodes")), 2);
    ck_assert_str_eq(js_str(js_get(js_at(js_get(dmn, "nodes"), 1), "status")), "UNAVAILABLE");
    ck_assert_ptr_null(js_str(js_get(js_at(js_get(dmn, "nodes"), 1), "host")));
    js_free(doc);
    machine.gpus = NULL;
    machine.ngpus = 0;
    machine.imex = NULL;
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
    tcase_add_test(tc, test_results_the_gpus_fabric_info_is_in_the_document);
    tcase_add_test(tc, test_results_sigint_still_writes_the_document);
    tcase_add_test(tc, test_results_both_sides_of_two_terminals);
    tcase_add_test(tc, test_results_schema_checker_can_fail);
    tcase_add_test(tc, test_results_list_document);
    tcase_add_test(tc, test_results_bench_document_without_a_gpu);
    tcase_add_test(tc, test_results_fault_matrix_document_when_stopped);
    tcase_add_test(tc, test_results_unwritable_document_is_refused_first);
    suite_add_tcase(s, tc);
    /* In-process, no program run: every ordered pair of N GPUs. */
    tc = tcase_create("n_by_n");
    tcase_set_timeout(tc, 60); /* about 0.5 s each; 10 s under valgrind */
    tcase_add_loop_test(tc, test_results_every_ordered_pair_of_n_gpus_in_the_document, 0,
                        (int)(sizeof(scale_cases) / sizeof(scale_cases[0])));
    tcase_add_test(tc, test_results_a_failed_pair_fails_its_two_gpus_alone);
    tcase_add_test(tc, test_results_a_gpu_failed_on_its_own_takes_its_pairs);
    tcase_add_loop_test(tc, test_results_no_pair_passing_fails_every_gpu, 0,
                        (int)(sizeof(scale_cases) / sizeof(scale_cases[0])));
    suite_add_tcase(s, tc);
    return s;
}
