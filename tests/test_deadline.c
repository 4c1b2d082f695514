/* SPDX-License-Identifier: Apache-2.0 */
/* test_deadline.c: every run ends by its deadline with a verdict, and every
 * stop reaches both processes at once. The program runs for real (memfd, no
 * GPU), many runs at a time to keep make check short:
 * - GPUIPC_FAULT=<role>:<step>:wedge (every signal blocked, a sleep nothing
 *   ends, as a wedged driver call) at every step of both roles, with
 *   --deadline 1: exit 1 by the deadline, the stuck process, its step and
 *   its call named, the --json document written, nothing left behind;
 * - SIGINT, SIGTERM and SIGHUP at every step (a hang parks the role there),
 *   to the producer and to the consumer alone, and during --repeat: both
 *   processes end at once with the signal's status, STOPPED said;
 * - Check's own exit(2) inside a run is a named failure, exit 1. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/step.h"
#include "core/watch.h"
#include "run/deadline.h"
#include "helpers.h"
#include "jschema.h"
#include "suites.h"

#define MAX_CASES 32

typedef struct wcase {
    int role;
    unsigned step;
} wcase;

/* Every step of both roles, as GPUIPC_FAULT takes them. */
static size_t every_step(wcase *c, size_t cap)
{
    static const int roles[] = {GPUIPC_ROLE_PRODUCER, GPUIPC_ROLE_CONSUMER};
    size_t n = 0, r;
    unsigned step;

    for (r = 0; r < 2; r++)
        for (step = 1; step < GPUIPC_STEP_COUNT && n < cap; step++)
            if (gpuipc_step_roles(step) & (unsigned)roles[r]) {
                c[n].role = roles[r];
                c[n++].step = step;
            }
    return n;
}

/* The document at path, held against the schema; the caller frees it. */
static jnode *valid_doc(const char *path, const char *out)
{
    char why[512];
    size_t n;
    char *schema_text = th_read_file("docs/result.schema.json", &n);
    char *text = th_read_file(path, &n);
    jnode *schema, *doc;

    ck_assert_msg(schema_text != NULL, "docs/result.schema.json: not readable");
    ck_assert_msg(text != NULL, "%s: no document was written:\n%s", path, out);
    schema = js_parse(schema_text, why, sizeof(why));
    doc = js_parse(text, why, sizeof(why));
    ck_assert_msg(doc != NULL, "%s does not parse: %s:\n%s", path, why, text);
    ck_assert_msg(js_check(schema, doc, why, sizeof(why)), "%s: not the schema's: %s:\n%s",
                  path, why, text);
    js_free(schema);
    free(schema_text);
    free(text);
    return doc;
}

/* wedge at every step of both roles: each run ends by --deadline 1 with exit
 * 1, names the wedged process, its step and its call, writes its document,
 * and leaves no process behind. */
START_TEST(test_deadline_ends_a_wedged_run_at_every_step)
{
    static wcase c[MAX_CASES];
    static char fault[MAX_CASES][64], doc[MAX_CASES][64], want[MAX_CASES][160];
    static const char *envs[MAX_CASES][2], *argvs[MAX_CASES][12];
    const char *const *args[MAX_CASES], *const *env[MAX_CASES];
    size_t n = every_step(c, MAX_CASES), i;
    th_run *runs = th_runs_alloc(n);

    ck_assert_ptr_nonnull(runs);
    for (i = 0; i < n; i++) {
        const char *a[] = {"--only", "memfd", "--size", "64K", "--deadline", "1", "-q",
                           "--json", doc[i], NULL};

        snprintf(fault[i], sizeof(fault[i]), "GPUIPC_FAULT=%s:%s:wedge",
                 gpuipc_role_name(c[i].role), gpuipc_step_name(c[i].step));
        snprintf(doc[i], sizeof(doc[i]), "/tmp/gpuipc-dl-%d-%zu.json", (int)getpid(), i);
        snprintf(want[i], sizeof(want[i]), "result: FAIL: --deadline 1.000 s passed: the %s is "
                 "stuck at %s in GPUIPC_FAULT wedge", gpuipc_role_name(c[i].role),
                 gpuipc_step_name(c[i].step));
        envs[i][0] = fault[i];
        envs[i][1] = NULL;
        memcpy(argvs[i], a, sizeof(a));
        args[i] = argvs[i];
        env[i] = envs[i];
    }
    ck_assert_int_eq(th_spawn_all(runs, n, args, env, 10, 3, NULL, NULL), 0);
    for (i = 0; i < n; i++) {
        jnode *d;

        ck_assert_msg(runs[i].finished && th_exited(&runs[i], 1), "%s: status 0x%x after "
                      "%.2f s:\n%s", fault[i], runs[i].status, runs[i].seconds, runs[i].out);
        ck_assert_msg(runs[i].seconds < 1.0 + 4.0, "%s: ended after %.2f s", fault[i],
                      runs[i].seconds);
        ck_assert_msg(strstr(runs[i].out, want[i]) != NULL, "%s: no line says '%s':\n%s",
                      fault[i], want[i], runs[i].out);
        ck_assert_msg(runs[i].leftover == 0, "%s: a process was left behind", fault[i]);
        d = valid_doc(doc[i], runs[i].out);
        ck_assert_int_eq((int)js_num(js_get(js_get(d, "exit"), "status")), 1);
        ck_assert_msg(strstr(js_str(js_get(d, "result")), "GPUIPC_FAULT wedge") != NULL,
                      "%s: the document's result: %s", fault[i], js_str(js_get(d, "result")));
        js_free(d);
        unlink(doc[i]);
    }
    th_runs_free(runs, n);
}
END_TEST

/* --brief at the deadline: still one line, the verdict's. */
START_TEST(test_deadline_brief_is_one_line)
{
    const char *env[] = {"GPUIPC_FAULT=consumer:import:wedge", NULL};
    const char *args[] = {"--only", "memfd", "--size", "64K", "--deadline", "500ms", "--brief",
                          NULL};
    static th_run run;
    const char *nl;

    ck_assert_int_eq(th_spawn(&run, args, env, 10, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    nl = strchr(run.out, '\n');
    ck_assert_msg(nl != NULL && nl[1] == '\0', "not one line:\n%s", run.out);
    ck_assert_msg(strncmp(run.out, "FAIL: --deadline 0.500 s passed: the consumer is stuck at "
                          "import in GPUIPC_FAULT wedge", 70) == 0, "%s", run.out);
}
END_TEST

/* What a stop test sends, and to whom, once the role it parks has said so
 * (the fault's own line). */
typedef struct stopper {
    int sig;
    int to_consumer; /* the consumer alone; else the producer alone */
    const char *when; /* the line that says the run is where it should be */
    int sent;
} stopper;

static const char *sig_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "?";
}

/* n stoppers the runs' processes share (they set sent). */
static stopper *stoppers(size_t n)
{
    void *m = mmap(NULL, n * sizeof(stopper), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    ck_assert_msg(m != MAP_FAILED, "mmap");
    memset(m, 0, n * sizeof(stopper));
    return m;
}

static void stop_when_there(const char *line, pid_t pgid, void *arg)
{
    stopper *s = arg;
    pid_t target;

    if (s->sent || strstr(line, s->when) == NULL)
        return;
    if (strncmp(s->when, "producer", 8) == 0 && strstr(line, "  producer  ") == NULL)
        return;
    usleep(50000); /* the other process is in its wait by now */
    target = s->to_consumer ? th_child_of(pgid) : pgid;
    if (target > 0 && kill(target, s->sig) == 0)
        s->sent = 1;
}

/* The status a run stopped by sig ends with, and what it must say. */
static void expect_stopped(const th_run *r, const stopper *s, const char *what)
{
    char consumer[48];

    ck_assert_msg(s->sent, "%s: the signal was never sent:\n%s", what, r->out);
    ck_assert_msg(r->finished && th_exited(r, 128 + s->sig), "%s: status 0x%x after %.2f s:\n%s",
                  what, r->status, r->seconds, r->out);
    ck_assert_msg(strstr(r->out, "result: STOPPED: ") != NULL, "%s: not said STOPPED:\n%s", what,
                  r->out);
    /* A stop is no failure: no scenario, step or count says FAIL. */
    ck_assert_msg(strstr(r->out, "FAIL") == NULL && (strstr(r->out, " 0 failed,") != NULL ||
                                                    strstr(r->out, "no scenario ran") != NULL),
                  "%s: a stop said as a failure:\n%s", what, r->out);
    snprintf(consumer, sizeof(consumer), "consumer: exited %d", 128 + s->sig);
    ck_assert_msg(strstr(r->out, consumer) != NULL, "%s: the consumer did not end with the "
                  "signal's status:\n%s", what, r->out);
    ck_assert_msg(r->leftover == 0, "%s: a process was left behind", what);
}

/* A hang at every step of both roles, and each of SIGINT, SIGTERM and
 * SIGHUP there, sent to the producer or to the consumer alone (the two take
 * turns): both processes end at once, 128 + the signal, the consumer too,
 * STOPPED said. */
START_TEST(test_deadline_a_stop_at_every_step_ends_both_at_once)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    static wcase c[MAX_CASES];
    static char fault[MAX_CASES][64], when[MAX_CASES][64];
    static const char *envs[MAX_CASES][2];
    const char *a[] = {"--only", "memfd", "--size", "64K", "--timeout", "20", "-q", NULL};
    const char *const *args[3 * MAX_CASES], *const *env[3 * MAX_CASES];
    th_line_fn fns[3 * MAX_CASES];
    void *argp[3 * MAX_CASES];
    size_t steps = every_step(c, MAX_CASES), n = 3 * steps, i;
    th_run *runs = th_runs_alloc(n);
    stopper *shared = stoppers(n);

    ck_assert_ptr_nonnull(runs);
    ck_assert_ptr_nonnull(shared);
    for (i = 0; i < steps; i++) {
        snprintf(fault[i], sizeof(fault[i]), "GPUIPC_FAULT=%s:%s:hang",
                 gpuipc_role_name(c[i].role), gpuipc_step_name(c[i].step));
        snprintf(when[i], sizeof(when[i]), "FAULT INJECTED: hang at %s",
                 gpuipc_step_name(c[i].step));
        envs[i][0] = fault[i];
        envs[i][1] = NULL;
    }
    for (i = 0; i < n; i++) {
        shared[i].sig = sigs[i % 3];
        shared[i].to_consumer = (i / 3 + i % 3) % 2;
        shared[i].when = when[i / 3];
        args[i] = a;
        env[i] = envs[i / 3];
        fns[i] = stop_when_there;
        argp[i] = &shared[i];
    }
    ck_assert_int_eq(th_spawn_all(runs, n, args, env, 15, 3, fns, argp), 0);
    for (i = 0; i < n; i++) {
        char what[128];

        snprintf(what, sizeof(what), "%.64s, %s to the %s", fault[i / 3],
                 sig_name(shared[i].sig), shared[i].to_consumer ? "consumer" : "producer");
        expect_stopped(&runs[i], &shared[i], what);
        /* The wait was 20 s: the stop, not a timeout, ended it. */
        ck_assert_msg(runs[i].seconds < 10.0, "%s: ended after %.2f s", what, runs[i].seconds);
    }
    th_runs_free(runs, n);
    munmap(shared, n * sizeof(stopper));
}
END_TEST

/* A stop signal to the consumer alone stops the producer too (each signal
 * once, with the consumer parked in its verify); and during --repeat, to
 * the producer. */
START_TEST(test_deadline_a_stop_reaches_the_other_process)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    static const char *hang_env[] = {"GPUIPC_FAULT=consumer:verify:hang", NULL};
    const char *a[] = {"--only", "memfd", "--size", "64K", "--timeout", "20", "-q", NULL};
    const char *rep[] = {"--only", "memfd", "--size", "64K", "--repeat", "1000000", NULL};
    const char *const *args[6], *const *env[6];
    th_line_fn fns[6];
    void *argp[6];
    th_run *runs = th_runs_alloc(6);
    stopper *s = stoppers(6);
    size_t i;

    ck_assert_ptr_nonnull(runs);
    for (i = 0; i < 6; i++) {
        s[i].sig = sigs[i % 3];
        s[i].to_consumer = i < 3;
        s[i].when = i < 3 ? "FAULT INJECTED: hang at verify" : "producer  memfd            release";
        s[i].sent = 0;
        args[i] = i < 3 ? a : rep;
        env[i] = i < 3 ? hang_env : NULL;
        fns[i] = stop_when_there;
        argp[i] = &s[i];
    }
    ck_assert_int_eq(th_spawn_all(runs, 6, args, env, 15, 3, fns, argp), 0);
    for (i = 0; i < 6; i++) {
        char what[96];

        snprintf(what, sizeof(what), "%s to the %s%s", sig_name(s[i].sig),
                 i < 3 ? "consumer" : "producer", i < 3 ? "" : " during --repeat");
        expect_stopped(&runs[i], &s[i], what);
        ck_assert_msg(runs[i].seconds < 10.0, "%s: ended after %.2f s", what, runs[i].seconds);
    }
    th_runs_free(runs, 6);
    munmap(s, 6 * sizeof(stopper));
}
END_TEST

/* The consumer dies of its own cause (a signal it does not handle, as a
 * crash would be: SIGUSR1, which no sanitizer takes over) while the producer
 * is wedged: at the deadline the verdict says how the consumer ended, not
 * that the producer killed it, and not that it still waits. */
static void crash_the_consumer(const char *line, pid_t pgid, void *arg)
{
    int *sent = arg;
    pid_t consumer;

    if (*sent || strstr(line, "FAULT INJECTED: wedge at fill") == NULL)
        return;
    usleep(100000);
    consumer = th_child_of(pgid);
    if (consumer > 0 && kill(consumer, SIGUSR1) == 0)
        *sent = 1;
}

START_TEST(test_deadline_names_a_consumer_that_died_before_it)
{
    const char *env[] = {"GPUIPC_FAULT=producer:fill:wedge", NULL};
    const char *args[] = {"--only", "memfd", "--size", "64K", "--deadline", "2", NULL};
    const char *const *argv[1] = {args}, *const *envv[1] = {env};
    th_line_fn fns[1] = {crash_the_consumer};
    /* The runs' watchers are processes of their own: the flag is shared. */
    int *sent = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                     -1, 0);
    void *argp[1] = {sent};
    th_run *runs = th_runs_alloc(1);

    ck_assert(sent != MAP_FAILED);
    *sent = 0;
    ck_assert_int_eq(th_spawn_all(runs, 1, argv, envv, 15, 3, fns, argp), 0);
    ck_assert_msg(*sent, "the consumer was never crashed:\n%s", runs[0].out);
    ck_assert_msg(th_exited(&runs[0], 1), "status 0x%x:\n%s", runs[0].status, runs[0].out);
    ck_assert_msg(strstr(runs[0].out, "the producer is stuck at fill in GPUIPC_FAULT wedge") !=
                  NULL && strstr(runs[0].out, "; the consumer had ended before the deadline: "
                                 "killed by signal 10 (SIGUSR1) (it was last at ") != NULL,
                  "the verdict does not say how the consumer ended:\n%s", runs[0].out);
    ck_assert_msg(strstr(runs[0].out, "consumer: had ended before the deadline: killed by "
                         "signal 10 (SIGUSR1)") != NULL, "the consumer line:\n%s", runs[0].out);
    ck_assert_msg(strstr(runs[0].out, "killed by the producer at the deadline") == NULL,
                  "said killed at the deadline:\n%s", runs[0].out);
    ck_assert_int_eq(runs[0].leftover, 0);
    th_runs_free(runs, 1);
    munmap(sent, sizeof(int));
}
END_TEST

/* The consumer is stopped (SIGSTOP, as by job control or an operator's
 * kill -STOP) at its first line: it waits for nothing, it runs no further.
 * The producer's --timeout and the deadline name it stopped, with its
 * state in /proc/<pid>/stat, not "both wait for each other". */
static void stop_the_consumer(const char *line, pid_t pgid, void *arg)
{
    int *sent = arg;
    pid_t consumer;

    if (*sent || strstr(line, "consumer") == NULL)
        return;
    consumer = th_child_of(pgid);
    if (consumer > 0 && kill(consumer, SIGSTOP) == 0)
        *sent = (int)consumer;
}

START_TEST(test_deadline_names_a_stopped_consumer)
{
    /* Run 0: the producer's --timeout (1 s) comes first; run 1: its
     * --deadline (2 s). */
    const char *timeout[] = {"--only", "memfd", "--size", "64M", "--timeout", "1",
                             "--deadline", "10", NULL};
    const char *deadline[] = {"--only", "memfd", "--size", "64M", "--timeout", "30",
                              "--deadline", "2", NULL};
    const char *const *argv[2] = {timeout, deadline};
    th_line_fn fns[2] = {stop_the_consumer, stop_the_consumer};
    int *sent = mmap(NULL, 2 * sizeof(int), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    void *argp[2] = {sent, sent + 1};
    th_run *runs = th_runs_alloc(2);
    char said[128];
    int i;

    ck_assert(sent != MAP_FAILED);
    sent[0] = sent[1] = 0;
    ck_assert_int_eq(th_spawn_all(runs, 2, argv, NULL, 20, 3, fns, argp), 0);
    for (i = 0; i < 2; i++) {
        ck_assert_msg(sent[i] > 0, "run %d: the consumer was never stopped:\n%s", i,
                      runs[i].out);
        ck_assert_msg(th_exited(&runs[i], 1), "run %d: status 0x%x:\n%s", i, runs[i].status,
                      runs[i].out);
        ck_assert_msg(strstr(runs[i].out, "both wait for each other") == NULL,
                      "run %d: a stopped process said to wait:\n%s", i, runs[i].out);
        ck_assert_int_eq(runs[i].leftover, 0);
    }
    snprintf(said, sizeof(said), "is stopped (state T in /proc/%d/stat: SIGSTOP or job control",
             sent[0]);
    ck_assert_msg(th_line_has(runs[0].out, "timed out during ", said),
                  "the timeout does not say the consumer is stopped:\n%s", runs[0].out);
    ck_assert_msg(th_line_has(runs[0].out, "consumer: killed by signal 9", "it was stopped"),
                  "the consumer's end does not say it was stopped:\n%s", runs[0].out);
    snprintf(said, sizeof(said), "the consumer (pid %d) is stopped (state T in /proc/%d/stat",
             sent[1], sent[1]);
    ck_assert_msg(th_line_has(runs[1].out, "result: FAIL: --deadline 2.000 s passed: ", said),
                  "the deadline does not say the consumer is stopped:\n%s", runs[1].out);
    th_runs_free(runs, 2);
    munmap(sent, 2 * sizeof(int));
}
END_TEST

/* A stop signal while a process is wedged (every signal blocked, as a
 * thread stuck in the driver may be): no thread but the watchdog can take
 * it; the run still ends within 2 s, 128 + the signal, STOPPED, naming the
 * stuck process and step, nothing left; no --deadline is needed for it. */
START_TEST(test_deadline_a_stop_ends_a_wedged_run)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    static const char *const wedged[][2] = {
        {"GPUIPC_FAULT=producer:check:wedge", "FAULT INJECTED: wedge at check"},
        {"GPUIPC_FAULT=producer:hello:wedge", "FAULT INJECTED: wedge at hello"},
        {"GPUIPC_FAULT=consumer:verify:wedge", "FAULT INJECTED: wedge at verify"},
    };
    const char *a[] = {"--only", "memfd", "--size", "64K", "--timeout", "20", "--deadline",
                       "none", NULL};
    enum { N = 9 };
    const char *const *args[N], *const *env[N];
    static const char *envs[N][2];
    th_line_fn fns[N];
    void *argp[N];
    th_run *runs = th_runs_alloc(N);
    stopper *s = stoppers(N);
    size_t i;

    ck_assert_ptr_nonnull(runs);
    for (i = 0; i < N; i++) {
        s[i].sig = sigs[i % 3];
        s[i].to_consumer = 0; /* the producer alone, as a runner's kill does */
        s[i].when = wedged[i / 3][1];
        envs[i][0] = wedged[i / 3][0];
        envs[i][1] = NULL;
        args[i] = a;
        env[i] = envs[i];
        fns[i] = stop_when_there;
        argp[i] = &s[i];
    }
    ck_assert_int_eq(th_spawn_all(runs, N, args, env, 15, 3, fns, argp), 0);
    for (i = 0; i < N; i++) {
        char what[96], stuck[64];

        snprintf(what, sizeof(what), "%s, %s to the producer", wedged[i / 3][0],
                 sig_name(s[i].sig));
        snprintf(stuck, sizeof(stuck), " is stuck at %s in GPUIPC_FAULT wedge",
                 strrchr(wedged[i / 3][1], ' ') + 1);
        ck_assert_msg(s[i].sent, "%s: never sent:\n%s", what, runs[i].out);
        ck_assert_msg(runs[i].finished && th_exited(&runs[i], 128 + s[i].sig),
                      "%s: status 0x%x after %.2f s:\n%s", what, runs[i].status,
                      runs[i].seconds, runs[i].out);
        ck_assert_msg(strstr(runs[i].out, "STOPPED") != NULL &&
                      strstr(runs[i].out, stuck) != NULL, "%s: the stuck process is not "
                      "named:\n%s", what, runs[i].out);
        ck_assert_msg(runs[i].seconds < 10.0, "%s: ended after %.2f s", what, runs[i].seconds);
        ck_assert_msg(runs[i].leftover == 0, "%s: a process was left behind", what);
    }
    th_runs_free(runs, N);
    munmap(s, N * sizeof(stopper));
}
END_TEST

/* Check gives up with exit(2) when it cannot create its temporary file
 * (TEMP names a directory where no file can be made, and the memfd the
 * program offers instead is refused by a seccomp filter): inside a run that
 * is a named failure, exit 1, not a usage error. */
START_TEST(test_deadline_checks_own_exit_is_a_named_failure)
{
    const char *env[] = {"TEMP=/proc", NULL};
    const char *args[] = {"--deny-memfd-create", "1", "--", th_program(), "--only", "memfd",
                          "--size", "64K", "-q", NULL};
    static th_run run;

    ck_assert_int_eq(th_spawn_file(&run, th_beside("wrap"), args, env, 10, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(strstr(run.out, "result: FAIL: the test framework (Check) ended the run from "
                                  "inside srunner_run_all") != NULL, "%s", run.out);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* A phase's cells at once: the result line names every worker at work,
 * the stuck ones first, each with its GPU, step, call and scenario; the
 * waiting ones only where none is stuck; past WORKERS_NAMED, a count. */
static void put_worker(gpuipc_watch_page *pg, int r, unsigned i, int gpu, unsigned step,
                       const char *call, const char *scenario)
{
    gpuipc_watch_side *s = &pg->worker[r][i];

    s->pid = 4242;
    s->gpu = gpu;
    s->step = step;
    s->since_ns = call[0] ? 1000000000ull : 0;
    snprintf(s->call, sizeof(s->call), "%s", call);
    snprintf(s->scenario, sizeof(s->scenario), "%s", scenario);
}

START_TEST(test_deadline_names_every_worker_of_a_phase)
{
    static gpuipc_watch_page pg;
    char text[4096];
    unsigned i;

    memset(&pg, 0, sizeof(pg));
    ck_assert_uint_eq(gpuipc_deadline_workers_text(&pg, 5000000000ull, text, sizeof(text)), 0);
    put_worker(&pg, 0, 0, 0, GPUIPC_STEP_BEGIN, "poll", "vmm");
    put_worker(&pg, 0, 2, 2, GPUIPC_STEP_EXPORT, "cuMemExportToShareableHandle", "vmm");
    put_worker(&pg, 1, 3, -1, GPUIPC_STEP_IMPORT, "GPUIPC_FAULT wedge", "legacy-ipc");
    ck_assert_uint_gt(gpuipc_deadline_workers_text(&pg, 5000000000ull, text, sizeof(text)), 0);
    ck_assert_msg(strstr(text, "a phase's cells at once, 3 workers at work: the producer's "
                         "worker 2 (GPU 2) is stuck at export in cuMemExportToShareableHandle "
                         "for 4.000 s, scenario vmm; the consumer's worker 3 is stuck at import "
                         "in GPUIPC_FAULT wedge for 4.000 s, scenario legacy-ipc") == text,
                  "%s", text);
    ck_assert_msg(strstr(text, "worker 0") == NULL, "a waiting worker named beside stuck ones: "
                  "%s", text);
    /* Only waiting ones: each named, and said to wait. */
    memset(&pg, 0, sizeof(pg));
    put_worker(&pg, 0, 1, 1, GPUIPC_STEP_REPORT, "poll", "vmm");
    gpuipc_deadline_workers_text(&pg, 5000000000ull, text, sizeof(text));
    ck_assert_msg(strstr(text, "the producer's worker 1 (GPU 1) waits at report in poll") != NULL &&
                  strstr(text, "(none stuck in a call or a step of its own: each waits)") != NULL,
                  "%s", text);
    /* Many: six named, the rest counted. */
    memset(&pg, 0, sizeof(pg));
    for (i = 0; i < 10; i++)
        put_worker(&pg, 1, i, -1, GPUIPC_STEP_VERIFY, "cuCtxSynchronize", "vmm");
    gpuipc_deadline_workers_text(&pg, 5000000000ull, text, sizeof(text));
    ck_assert_msg(strstr(text, "10 workers at work") != NULL && strstr(text, "worker 5 ") != NULL &&
                  strstr(text, "worker 6 ") == NULL && strstr(text, "; and 4 more") != NULL,
                  "%s", text);
}
END_TEST

Suite *deadline_suite(void)
{
    Suite *s = suite_create("deadline");
    TCase *tc = tcase_create("deadline");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_deadline_ends_a_wedged_run_at_every_step);
    tcase_add_test(tc, test_deadline_brief_is_one_line);
    tcase_add_test(tc, test_deadline_a_stop_at_every_step_ends_both_at_once);
    tcase_add_test(tc, test_deadline_a_stop_reaches_the_other_process);
    tcase_add_test(tc, test_deadline_checks_own_exit_is_a_named_failure);
    tcase_add_test(tc, test_deadline_names_a_consumer_that_died_before_it);
    tcase_add_test(tc, test_deadline_names_a_stopped_consumer);
    tcase_add_test(tc, test_deadline_a_stop_ends_a_wedged_run);
    tcase_add_test(tc, test_deadline_names_every_worker_of_a_phase);
    suite_add_tcase(s, tc);
    return s;
}
