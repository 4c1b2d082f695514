/* SPDX-License-Identifier: Apache-2.0 */
/* junit.c: the JUnit XML of a run (junit.h).
 *
 *   <testsuites name="gpuipc_test" tests failures errors skipped time timestamp>
 *     <testsuite name="GPU 0 (GPU-...)" ... hostname timestamp>   one per GPU, by exporter
 *       <properties><property name="gpu_uuid" value="GPU-..."/></properties>
 *       <testcase name="vmm" classname="gpuipc_test.gpu0" time="0.006"/>
 *       <testcase name="fabric" ...><skipped message="probe: ..."/></testcase>
 *       <testcase name="vmm 0-&gt;1" ...>
 *         <failure message="the first failure" type="consumer import">
 *           the first failure, cause and fix</failure></testcase>
 *     <testsuite name="run" ...>  the program, host and exit status as properties
 *       <testcase name="exit status" classname="gpuipc_test.run"/>  its verdict
 *
 * A stopped scenario is an <error type="stopped">; one that did not run is
 * <skipped>. Times are seconds; timestamps UTC, to the second, without a
 * zone (as JUnit's schema has them). */
#include "run/junit.h"

#include "core/err.h"
#include "core/escape.h"
#include "core/status.h"
#include "core/step.h"

static char mem[1 << 16];

/* Counts of a group of testcases. */
typedef struct tally {
    unsigned tests, failures, errors, skipped;
    uint64_t ns;
} tally;

static void count(tally *t, const gpuipc_result *r)
{
    t->tests++;
    t->failures += r->status == GPUIPC_FAIL;
    t->errors += r->status == GPUIPC_STOPPED;
    t->skipped += r->status == GPUIPC_SKIP || r->status < 0;
    t->ns += r->ns;
}

/* The run's own testcase: its verdict from the exit status. */
static void count_run(tally *t, const gpuipc_outcome *oc)
{
    t->tests++;
    if (oc->running || oc->exit_code > 128)
        t->errors++;
    else if (oc->exit_code == GPUIPC_SKIP)
        t->skipped++;
    else if (oc->exit_code != GPUIPC_PASS)
        t->failures++;
    t->ns += oc->running ? 0 : oc->wall_ns;
}

static void attr(gpuipc_sink *s, const char *name, const char *value)
{
    gpuipc_sbuf_str(&s->b, " ");
    gpuipc_sbuf_str(&s->b, name);
    gpuipc_sbuf_str(&s->b, "=\"");
    gpuipc_sbuf_xml(&s->b, value != NULL ? value : "", 1);
    gpuipc_sbuf_str(&s->b, "\"");
}

static void attr_uint(gpuipc_sink *s, const char *name, uint64_t v)
{
    gpuipc_sbuf_str(&s->b, " ");
    gpuipc_sbuf_str(&s->b, name);
    gpuipc_sbuf_str(&s->b, "=\"");
    gpuipc_sbuf_uint(&s->b, v);
    gpuipc_sbuf_str(&s->b, "\"");
}

static void attr_secs(gpuipc_sink *s, const char *name, uint64_t ns)
{
    gpuipc_sbuf_str(&s->b, " ");
    gpuipc_sbuf_str(&s->b, name);
    gpuipc_sbuf_str(&s->b, "=\"");
    gpuipc_sbuf_secs(&s->b, ns, 3);
    gpuipc_sbuf_str(&s->b, "\"");
}

static void attr_time(gpuipc_sink *s, const char *name, uint64_t real_ns)
{
    gpuipc_sbuf_str(&s->b, " ");
    gpuipc_sbuf_str(&s->b, name);
    gpuipc_sbuf_str(&s->b, "=\"");
    gpuipc_sbuf_utc(&s->b, real_ns, 0);
    gpuipc_sbuf_str(&s->b, "\"");
}

static void counts(gpuipc_sink *s, const tally *t)
{
    attr_uint(s, "tests", t->tests);
    attr_uint(s, "failures", t->failures);
    attr_uint(s, "errors", t->errors);
    attr_uint(s, "skipped", t->skipped);
    attr_secs(s, "time", t->ns);
}

static void property(gpuipc_sink *s, const char *name, const char *value)
{
    if (value == NULL || value[0] == '\0')
        return;
    gpuipc_sink_maybe_flush(s);
    gpuipc_sbuf_str(&s->b, "      <property");
    attr(s, "name", name);
    attr(s, "value", value);
    gpuipc_sbuf_str(&s->b, "/>\n");
}

/* "gpu3", or "host" for -1, into buf. */
static const char *group_name(int g, char *buf, size_t len)
{
    gpuipc_sbuf b;

    gpuipc_sbuf_init(&b, buf, len);
    if (g < 0) {
        gpuipc_sbuf_str(&b, "host");
    } else {
        gpuipc_sbuf_str(&b, "gpu");
        gpuipc_sbuf_uint(&b, (uint64_t)g);
    }
    return buf;
}

/* One scenario's testcase. */
static void testcase(gpuipc_sink *s, const gpuipc_outcome *oc, size_t i, const char *classname)
{
    const gpuipc_result *r = &oc->results[i];
    const char *name = oc->labels != NULL ? oc->labels[i] : r->mech;
    char cause[GPUIPC_ERR_LEN];

    gpuipc_sink_maybe_flush(s);
    gpuipc_sbuf_str(&s->b, "    <testcase");
    attr(s, "name", name);
    attr(s, "classname", classname);
    attr_secs(s, "time", r->ns);
    if (r->status == GPUIPC_PASS) {
        gpuipc_sbuf_str(&s->b, "/>\n");
        return;
    }
    gpuipc_sbuf_str(&s->b, ">\n      <");
    if (r->status == GPUIPC_FAIL) {
        gpuipc_sbuf_str(&s->b, "failure");
        attr(s, "message", r->reason[0] != '\0' ? r->reason
                           : "under way when the run ended (the testcase 'exit status' says "
                             "where it was stuck)");
        /* Where it failed: the side and the step, as the failure's data say. */
        gpuipc_sbuf_str(&s->b, " type=\"");
        if (r->failed_side != 0) {
            gpuipc_sbuf_xml(&s->b, gpuipc_role_name(r->failed_side), 1);
            gpuipc_sbuf_str(&s->b, " ");
        }
        gpuipc_sbuf_xml(&s->b, r->failure.step != 0 ? gpuipc_step_name(r->failure.step)
                                                    : gpuipc_status_word(GPUIPC_FAIL), 1);
        gpuipc_sbuf_str(&s->b, "\"");
    } else if (r->status == GPUIPC_STOPPED) {
        gpuipc_sbuf_str(&s->b, "error");
        attr(s, "message", r->reason[0] != '\0' ? r->reason : "stopped by a signal");
        attr(s, "type", gpuipc_status_name(GPUIPC_STOPPED));
    } else if (r->status == GPUIPC_SKIP) {
        gpuipc_sbuf_str(&s->b, "skipped");
        attr(s, "message", r->reason);
    } else {
        gpuipc_sbuf_str(&s->b, "skipped");
        attr(s, "message", r->reason[0] != '\0' ? r->reason
                           : "not run: the run ended before it, or while it was under way "
                             "(the testcase 'exit status' says how)");
    }
    gpuipc_sbuf_str(&s->b, ">");
    /* The text: the reason, then the cause and fix the diagnosis named. */
    gpuipc_sbuf_xml(&s->b, r->reason, 0);
    if (r->cause.what[0] != '\0') {
        gpuipc_sbuf_str(&s->b, "\n");
        gpuipc_sbuf_xml(&s->b, gpuipc_cause_line(&r->cause, cause, sizeof(cause)), 0);
    }
    gpuipc_sbuf_str(&s->b, r->status == GPUIPC_FAIL ? "</failure>\n"
                           : r->status == GPUIPC_STOPPED ? "</error>\n" : "</skipped>\n");
    gpuipc_sbuf_str(&s->b, "    </testcase>\n");
}

/* The testsuite of the scenarios whose exporter is GPU g (-1: host). */
static void gpu_suite(gpuipc_sink *s, const gpuipc_outcome *oc, int g)
{
    const char *uuid = gpuipc_outcome_uuid(oc, g);
    char group[24], classname[48], name[96];
    gpuipc_sbuf nb;
    tally t = {0, 0, 0, 0, 0};
    size_t i;

    for (i = 0; i < oc->n; i++)
        if (oc->results[i].gpu == g)
            count(&t, &oc->results[i]);
    group_name(g, group, sizeof(group));
    gpuipc_sbuf_init(&nb, classname, sizeof(classname));
    gpuipc_sbuf_str(&nb, "gpuipc_test.");
    gpuipc_sbuf_str(&nb, group);
    gpuipc_sbuf_init(&nb, name, sizeof(name));
    if (g < 0) {
        gpuipc_sbuf_str(&nb, "host memory");
    } else {
        gpuipc_sbuf_str(&nb, "GPU ");
        gpuipc_sbuf_uint(&nb, (uint64_t)g);
        if (uuid != NULL) {
            gpuipc_sbuf_str(&nb, " (");
            gpuipc_sbuf_str(&nb, uuid);
            gpuipc_sbuf_str(&nb, ")");
        }
    }
    gpuipc_sink_maybe_flush(s);
    gpuipc_sbuf_str(&s->b, "  <testsuite");
    attr(s, "name", name);
    counts(s, &t);
    attr_time(s, "timestamp", oc->who != NULL ? oc->who->start_real_ns : 0);
    attr(s, "hostname", oc->who != NULL ? oc->who->hostname : NULL);
    gpuipc_sbuf_str(&s->b, ">\n    <properties>\n");
    property(s, "gpu", g >= 0 ? group + 3 : NULL);
    property(s, "gpu_uuid", uuid);
    property(s, "memory", g < 0 ? "host" : "device");
    gpuipc_sbuf_str(&s->b, "    </properties>\n");
    for (i = 0; i < oc->n; i++)
        if (oc->results[i].gpu == g)
            testcase(s, oc, i, classname);
    gpuipc_sbuf_str(&s->b, "  </testsuite>\n");
}

/* The run's testsuite: who and where, and the verdict. */
static void run_suite(gpuipc_sink *s, const gpuipc_outcome *oc)
{
    const gpuipc_runinfo *who = oc->who;
    tally t = {0, 0, 0, 0, 0};
    char code[16];
    gpuipc_sbuf cb;

    count_run(&t, oc);
    gpuipc_sbuf_init(&cb, code, sizeof(code));
    gpuipc_sbuf_uint(&cb, (uint64_t)oc->exit_code);
    gpuipc_sink_maybe_flush(s);
    gpuipc_sbuf_str(&s->b, "  <testsuite name=\"run\"");
    counts(s, &t);
    attr_time(s, "timestamp", who != NULL ? who->start_real_ns : 0);
    attr(s, "hostname", who != NULL ? who->hostname : NULL);
    gpuipc_sbuf_str(&s->b, ">\n    <properties>\n");
    property(s, "version", oc->version);
    property(s, "commit", oc->commit);
    property(s, "hostname", who != NULL ? who->hostname : NULL);
    property(s, "boot_id", who != NULL ? who->boot_id : NULL);
    property(s, "kernel", who != NULL ? who->kernel : NULL);
    property(s, "driver", oc->driver);
    property(s, "mode", oc->mode);
    property(s, "role", oc->role);
    if (!oc->running)
        property(s, "exit_status", code);
    gpuipc_sbuf_str(&s->b, "    </properties>\n    <testcase name=\"exit status\" "
                           "classname=\"gpuipc_test.run\"");
    attr_secs(s, "time", t.ns);
    if (!oc->running && oc->exit_code == GPUIPC_PASS) {
        gpuipc_sbuf_str(&s->b, "/>\n  </testsuite>\n");
        return;
    }
    gpuipc_sbuf_str(&s->b, ">\n      <");
    if (oc->running) {
        gpuipc_sbuf_str(&s->b, "error message=\"the run started and has not written its "
                               "verdict: it is under way, or it was killed (SIGKILL, the "
                               "OOM killer, a reboot) before it could\" type=\"no verdict\"/>\n");
    } else {
        const char *what = oc->exit_code == GPUIPC_SKIP ? "skipped"
                         : oc->exit_code > 128 ? "error" : "failure";

        gpuipc_sbuf_str(&s->b, what);
        attr(s, "message", oc->result != NULL && oc->result[0] != '\0' ? oc->result
                           : "the run ended without a result line");
        if (oc->exit_code != GPUIPC_SKIP) {
            gpuipc_sbuf_str(&s->b, " type=\"exit ");
            gpuipc_sbuf_str(&s->b, code);
            gpuipc_sbuf_str(&s->b, "\"");
        }
        gpuipc_sbuf_str(&s->b, "/>\n");
    }
    gpuipc_sbuf_str(&s->b, "    </testcase>\n  </testsuite>\n");
}

/* The exporters below this have their suite marked in a bitmap on the
 * stack; any other (host memory's -1, a rank beyond it) is looked for
 * among the rows before. */
#define SUITES_MARKED 4096

/* Whether row i is the first of its exporter, g (marked in seen when it is). */
static int first_of_suite(const gpuipc_outcome *oc, size_t i, unsigned char *seen)
{
    int g = oc->results[i].gpu;
    size_t k;

    if (g >= 0 && g < SUITES_MARKED) {
        if (seen[g / 8] & (1u << (g % 8)))
            return 0;
        seen[g / 8] |= (unsigned char)(1u << (g % 8));
        return 1;
    }
    for (k = 0; k < i && oc->results[k].gpu != g; k++)
        ;
    return k == i;
}

int gpuipc_junit_write(int fd, const gpuipc_outcome *oc)
{
    tally all = {0, 0, 0, 0, 0};
    unsigned char seen[SUITES_MARKED / 8] = {0};
    gpuipc_sink s;
    size_t i;

    gpuipc_sink_init(&s, fd, mem, sizeof(mem));
    for (i = 0; i < oc->n; i++)
        count(&all, &oc->results[i]);
    count_run(&all, oc);
    all.ns = oc->running ? 0 : oc->wall_ns;
    gpuipc_sbuf_str(&s.b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "
                          "name=\"gpuipc_test\"");
    counts(&s, &all);
    attr_time(&s, "timestamp", oc->who != NULL ? oc->who->start_real_ns : 0);
    gpuipc_sbuf_str(&s.b, ">\n");
    /* A suite per exporting GPU, in the order of their first scenario. Each
     * row's exporter was looked for among the rows before it: --ranks'
     * rows come producer by producer, so 72 ranks with 12 mechanisms
     * (61,344 rows) took 12 s. */
    for (i = 0; i < oc->n; i++)
        if (first_of_suite(oc, i, seen))
            gpu_suite(&s, oc, oc->results[i].gpu);
    run_suite(&s, oc);
    gpuipc_sbuf_str(&s.b, "</testsuites>\n");
    return gpuipc_sink_finish(&s);
}
