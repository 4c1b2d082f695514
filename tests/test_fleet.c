/* SPDX-License-Identifier: Apache-2.0 */
/* test_fleet.c: the files fleet tools read, --prom FILE and --junit FILE,
 * and who and where in the result document:
 * - the escaping of XML and of Prometheus label values (markup, quotes,
 *   control bytes, bytes that are not UTF-8) and UTC times, checked byte
 *   for byte;
 * - the JUnit renderer fed a scenario whose reason holds <, &, quotes and
 *   control bytes: well-formed (tests/th_text.c's checker and xmllint) and
 *   the reason read back by xmllint as it was, less what XML cannot hold;
 * - the program (memfd, no GPU) passing, failing over an earlier pass,
 *   stuck until --deadline, stopped by SIGINT (the files say the run is
 *   under way while it is), skipping: each --prom file passes `promtool
 *   check metrics` and says the verdict the exit status says; each --junit
 *   file is well-formed and has the testsuites, testcases, skipped and
 *   failure that xmllint's XPath finds;
 * - the paths refused before the run (exit 2, untouched), the modes that
 *   take neither option, and a full disk (no stale pass, exit 1).
 * promtool (Debian's prometheus) and xmllint (libxml2-utils) are what
 * .ci/run installs; a test that needs one fails where it is missing. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app/options.h"
#include "core/escape.h"
#include "core/runinfo.h"
#include "helpers.h"
#include "jschema.h"
#include "run/junit.h"
#include "run/prom.h"
#include "suites.h"

static char dir[64], prom[96], junit[96], doc[96];
static th_run run, tool;

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gpuipc-fleet-XXXXXX");
    ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    snprintf(prom, sizeof(prom), "%s/gpuipc.prom", dir);
    snprintf(junit, sizeof(junit), "%s/junit.xml", dir);
    snprintf(doc, sizeof(doc), "%s/result.json", dir);
}

static void teardown(void)
{
    th_remove_tree(dir);
}

/* Runs cmd with sh -c into tool; returns its exit status (-1: none). */
static int sh(const char *cmd)
{
    const char *args[] = {"-c", cmd, NULL};

    ck_assert_int_eq(th_spawn_file(&tool, "/bin/sh", args, NULL, 30, 3, NULL, NULL), 0);
    return WIFEXITED(tool.status) ? WEXITSTATUS(tool.status) : -1;
}

static void need(const char *name, const char *package)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "command -v %s", name);
    ck_assert_msg(sh(cmd) == 0, "%s is not installed: apt-get install %s (.ci/run does)", name,
                  package);
}

/* Whether promtool is installed (CI installs Debian's prometheus; a
 * developer's `make deps` does not, for it starts a Prometheus server). */
static int have_promtool(void)
{
    return sh("command -v promtool") == 0;
}

/* The file at path passes the tests' own checker of the format
 * (tests/promcheck.c) and, where it is installed, `promtool check metrics`. */
static void promtool_passes(const char *path)
{
    char cmd[512];

    snprintf(cmd, sizeof(cmd), "'%s' < '%s' 2>&1", th_beside("promcheck"), path);
    ck_assert_msg(sh(cmd) == 0, "promcheck %s:\n%s", path, tool.out);
    if (!have_promtool())
        return;
    snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' 2>&1", path);
    ck_assert_msg(sh(cmd) == 0, "promtool check metrics %s:\n%s", path, tool.out);
}

/* The document at path, parsed (free with js_free) after it held to
 * docs/result.schema.json; its text in *text (free it too), for messages. */
static jnode *doc_holds(const char *path, char **text)
{
    char why[512];
    size_t n;
    jnode *d = th_result_doc(path, why, sizeof(why));

    *text = th_read_file(path, &n);
    ck_assert_msg(d != NULL && *text != NULL, "%s: %s:\n%s", path, why,
                  *text != NULL ? *text : "(not read)");
    return d;
}

/* The file at path is well-formed XML, by both checkers. */
static void xml_well_formed(const char *path)
{
    char cmd[256], why[256];
    size_t n;
    char *text = th_read_file(path, &n);

    ck_assert_msg(text != NULL, "%s: not written", path);
    ck_assert_msg(th_xml_valid(text, n, why, sizeof(why)), "%s: %s:\n%s", path, why, text);
    free(text);
    need("xmllint", "libxml2-utils");
    snprintf(cmd, sizeof(cmd), "xmllint --noout '%s' 2>&1", path);
    ck_assert_msg(sh(cmd) == 0, "xmllint %s:\n%s", path, tool.out);
}

/* XPath expr over the file at path, as xmllint evaluates it (a string). */
static const char *xpath(const char *path, const char *expr)
{
    char cmd[1024];

    need("xmllint", "libxml2-utils");
    snprintf(cmd, sizeof(cmd), "xmllint --xpath '%s' '%s' 2>&1", expr, path);
    ck_assert_msg(sh(cmd) == 0, "xmllint --xpath %s %s:\n%s", expr, path, tool.out);
    if (tool.len > 0 && tool.out[tool.len - 1] == '\n') /* xmllint ends its answer so */
        tool.out[--tool.len] = '\0';
    return tool.out;
}

static void xpath_is(const char *path, const char *expr, const char *want)
{
    const char *got = xpath(path, expr);

    ck_assert_msg(strcmp(got, want) == 0, "%s: %s is '%s', not '%s'", path, expr, got, want);
}

/* Whether the file at path holds the line line. */
static int has_line(const char *path, const char *line)
{
    size_t n, len = strlen(line);
    char *text = th_read_file(path, &n), *p;
    int found = 0;

    for (p = text; p != NULL && !found && (p = strstr(p, line)) != NULL; p++)
        found = (p == text || p[-1] == '\n') && (p[len] == '\n' || p[len] == '\0');
    free(text);
    return found;
}

static void write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

#define OUT_HAS(r, text) ck_assert_msg(strstr((r).out, (text)) != NULL, "output lacks '%s':\n%s", \
                                       (text), (r).out)

/* ---- the escaping and the times ---- */

static const char hostile[] = "a<b>&c\"d'e\x01" "f\x1bg\th\ni\rj\xff" "k\xc3\xa9";

START_TEST(test_fleet_xml_escapes_every_character_it_must)
{
    char mem[512];
    gpuipc_sbuf b;

    gpuipc_sbuf_init(&b, mem, sizeof(mem));
    gpuipc_sbuf_xml(&b, hostile, 1);
    ck_assert_str_eq(mem, "a&lt;b&gt;&amp;c&quot;d&apos;e\xef\xbf\xbd" "f\xef\xbf\xbdg&#9;h&#10;i"
                          "&#13;j\xef\xbf\xbdk\xc3\xa9");
    gpuipc_sbuf_init(&b, mem, sizeof(mem));
    gpuipc_sbuf_xml(&b, hostile, 0);
    ck_assert_str_eq(mem, "a&lt;b&gt;&amp;c&quot;d&apos;e\xef\xbf\xbd" "f\xef\xbf\xbdg\th\ni"
                          "&#13;j\xef\xbf\xbdk\xc3\xa9");
}
END_TEST

START_TEST(test_fleet_prom_label_escapes_backslash_quote_and_newline)
{
    char mem[512];
    gpuipc_sbuf b;

    gpuipc_sbuf_init(&b, mem, sizeof(mem));
    gpuipc_sbuf_prom_label(&b, "a\\b\"c\nd\x01" "e\xff" "f");
    ck_assert_str_eq(mem, "a\\\\b\\\"c\\nd e\xef\xbf\xbd" "f");
    gpuipc_sbuf_init(&b, mem, sizeof(mem));
    gpuipc_sbuf_prom_help(&b, "a\\b\"c\nd");
    ck_assert_str_eq(mem, "a\\\\b\"c\\nd");
}
END_TEST

/* UTC without gmtime, against gmtime_r, across leap days and centuries. */
START_TEST(test_fleet_utc_times_match_gmtime)
{
    static const time_t at[] = {0, 951782400, 951868799, 4107542400, 1795647449, 16725225599};
    char mem[64], want[64];
    gpuipc_sbuf b;
    struct tm tm;
    size_t i;

    for (i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
        gpuipc_sbuf_init(&b, mem, sizeof(mem));
        gpuipc_sbuf_utc(&b, (uint64_t)at[i] * 1000000000ull + 123456789ull, 1);
        strftime(want, sizeof(want), "%Y-%m-%dT%H:%M:%S.123Z", gmtime_r(&at[i], &tm));
        ck_assert_str_eq(mem, want);
        gpuipc_sbuf_init(&b, mem, sizeof(mem));
        gpuipc_sbuf_utc(&b, (uint64_t)at[i] * 1000000000ull, 0);
        strftime(want, sizeof(want), "%Y-%m-%dT%H:%M:%S", gmtime_r(&at[i], &tm));
        ck_assert_str_eq(mem, want);
    }
}
END_TEST

/* ---- the renderers, fed by hand ---- */

/* A failed scenario whose reason is hostile, a skipped one, a passed one
 * across two GPUs: the JUnit file holds them, well-formed, with the
 * reasons read back as they were (less what XML cannot hold). */
START_TEST(test_fleet_junit_carries_a_hostile_reason_whole)
{
    static gpuipc_result r[3];
    static const char uuids[2][GPUIPC_OUTCOME_UUID_LEN] = {"GPU-aaaa", "GPU-bbbb"};
    gpuipc_runinfo who = {.hostname = "node<1>", .start_real_ns = 1795647449000000000ull};
    gpuipc_outcome oc = {.version = "9.9", .commit = "abc", .mode = "one-shot",
                         .role = "producer", .who = &who, .exit_code = 1,
                         .result = "FAIL: 1 passed, 1 failed & \"1\" skipped", .results = r,
                         .n = 3, .uuids = uuids, .nuuids = 2, .passed = 1, .failed = 1,
                         .skipped = 1, .wall_ns = 2500000000ull};
    int fd;

    memset(r, 0, sizeof(r));
    r[0].mech = "vmm";
    r[0].gpu = 0;
    r[0].peer_gpu = -1;
    r[0].status = GPUIPC_FAIL;
    r[0].failed_side = 2;
    r[0].failure.step = 0;
    snprintf(r[0].reason, sizeof(r[0].reason), "%s", hostile);
    snprintf(r[0].cause.what, sizeof(r[0].cause.what), "<the & cause>");
    snprintf(r[0].cause.fix, sizeof(r[0].cause.fix), "\"quote\" it");
    r[1].mech = "fabric";
    r[1].gpu = 0;
    r[1].peer_gpu = -1;
    r[1].status = GPUIPC_SKIP;
    snprintf(r[1].reason, sizeof(r[1].reason), "no <IMEX> channel & \"none\" to open");
    r[2].mech = "vmm 0->1";
    r[2].gpu = 0;
    r[2].peer_gpu = 1;
    r[2].status = GPUIPC_PASS;
    r[2].ns = 6000000;
    fd = open(junit, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(gpuipc_junit_write(fd, &oc), 0);
    close(fd);
    xml_well_formed(junit);
    xpath_is(junit, "string(/testsuites/@tests)", "4");
    xpath_is(junit, "string(/testsuites/@failures)", "2");
    xpath_is(junit, "string(/testsuites/@skipped)", "1");
    xpath_is(junit, "string(/testsuites/testsuite[1]/@name)", "GPU 0 (GPU-aaaa)");
    xpath_is(junit, "string(/testsuites/testsuite[1]/@hostname)", "node<1>");
    xpath_is(junit, "string(//testcase[@name=\"vmm\"]/failure/@message)",
             "a<b>&c\"d'e\xef\xbf\xbd" "f\xef\xbf\xbdg\th\ni\rj\xef\xbf\xbdk\xc3\xa9");
    xpath_is(junit, "string(//testcase[@name=\"vmm\"]/failure/@type)", "consumer FAIL");
    ck_assert_msg(strstr(xpath(junit, "string(//testcase[@name=\"vmm\"]/failure)"),
                         "cause: <the & cause>; fix: \"quote\" it") != NULL, "%s", tool.out);
    xpath_is(junit, "string(//testcase[@name=\"fabric\"]/skipped/@message)",
             "no <IMEX> channel & \"none\" to open");
    xpath_is(junit, "count(//testcase[@name=\"vmm 0->1\"]/*)", "0");
    xpath_is(junit, "string(//testcase[@name=\"vmm 0->1\"]/@time)", "0.006");
    xpath_is(junit, "string(//testsuite[@name=\"run\"]/testcase/failure/@message)",
             "FAIL: 1 passed, 1 failed & \"1\" skipped");
}
END_TEST

/* The same scenarios as a textfile: promtool takes it, and the series say
 * what the results say, by GPU UUID; a running outcome claims nothing. */
START_TEST(test_fleet_prom_series_come_from_the_results)
{
    static gpuipc_result r[2];
    static const char uuids[2][GPUIPC_OUTCOME_UUID_LEN] = {"GPU-aaaa", "GPU-b\"b"};
    gpuipc_runinfo who = {.hostname = "node\\1", .boot_id = "b-1", .kernel = "6.1"};
    gpuipc_outcome oc = {.version = "9.9", .commit = "abc", .mode = "pairs", .role = "producer",
                         .who = &who, .exit_code = 1, .results = r, .n = 2, .uuids = uuids,
                         .nuuids = 2, .passed = 1, .failed = 1};
    int fd;

    memset(r, 0, sizeof(r));
    r[0].mech = "vmm 0->1";
    r[0].mechanism = "vmm";
    r[0].gpu = 0;
    r[0].peer_gpu = 1;
    r[0].status = GPUIPC_PASS;
    r[1].mech = "vmm 1->0";
    r[1].mechanism = "vmm";
    r[1].gpu = 1;
    r[1].peer_gpu = 0;
    r[1].status = GPUIPC_FAIL;
    fd = open(prom, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(gpuipc_prom_write(fd, &oc), 0);
    close(fd);
    promtool_passes(prom);
    ck_assert(has_line(prom, "gpuipc_test_success 0"));
    ck_assert(has_line(prom, "gpuipc_test_exit_status 1"));
    ck_assert(has_line(prom, "gpuipc_test_scenarios{verdict=\"fail\"} 1"));
    ck_assert(has_line(prom, "gpuipc_test_scenario_success{mechanism=\"vmm\",gpu=\"0\","
                             "gpu_uuid=\"GPU-aaaa\",peer_gpu=\"1\",peer_gpu_uuid=\"GPU-b\\\"b\"} 1"));
    ck_assert(has_line(prom, "gpuipc_test_scenario_success{mechanism=\"vmm\",gpu=\"1\","
                             "gpu_uuid=\"GPU-b\\\"b\",peer_gpu=\"0\",peer_gpu_uuid=\"GPU-aaaa\"} 0"));
    /* The pair failed both ways round: run/plan.h charges both GPUs. */
    ck_assert(has_line(prom, "gpuipc_test_gpu_success{gpu=\"0\",gpu_uuid=\"GPU-aaaa\"} 0"));
    ck_assert(has_line(prom, "gpuipc_test_gpu_success{gpu=\"1\",gpu_uuid=\"GPU-b\\\"b\"} 0"));
    ck_assert(has_line(prom, "gpuipc_test_run_info{hostname=\"node\\\\1\",boot_id=\"b-1\","
                             "kernel=\"6.1\",mode=\"pairs\",role=\"producer\"} 1"));
    /* Under way: no verdict at all. */
    oc.running = 1;
    unlink(prom);
    fd = open(prom, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ck_assert_int_eq(gpuipc_prom_write(fd, &oc), 0);
    close(fd);
    promtool_passes(prom);
    ck_assert(has_line(prom, "gpuipc_test_running 1"));
    {
        size_t n;
        char *text = th_read_file(prom, &n);

        ck_assert_msg(strstr(text, "_success") == NULL && strstr(text, "exit_status") == NULL,
                      "a running file claims a verdict:\n%s", text);
        free(text);
    }
}
END_TEST

/* promtool refuses what is not the format: the checker can fail. */
START_TEST(test_fleet_promtool_refuses_a_bad_textfile)
{
    static const char *const broken[] = {
        "# TYPE gpuipc_test_x gauge\ngpuipc_test_x{a=\"b} 1\n",
        "# TYPE gpuipc_test_x gauge\ngpuipc_test_x{a=\"b\"} 1\ngpuipc_test_x{a=\"b\"} 2\n",
        "# TYPE gpuipc_test_x gauge\ngpuipc_test_x 1\n# TYPE gpuipc_test_x gauge\n",
        "gpuipc_test_x one\n",
        "# TYPE gpuipc_test_x gauge\ngpuipc_test_x{a=\"b\\q\"} 1\n",
    };
    char cmd[512];
    size_t i;

    for (i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
        write_text(prom, broken[i]);
        snprintf(cmd, sizeof(cmd), "'%s' < '%s' 2>&1", th_beside("promcheck"), prom);
        ck_assert_msg(sh(cmd) != 0, "promcheck took broken text %zu:\n%s", i, broken[i]);
        if (!have_promtool())
            continue;
        snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' 2>&1", prom);
        ck_assert_msg(sh(cmd) != 0, "promtool took broken text %zu:\n%s", i, broken[i]);
    }
}
END_TEST

/* ---- the program ---- */

START_TEST(test_fleet_a_pass)
{
    const char *args[] = {"--only", "memfd,memfd-chunks", "--size", "1M", "-q", "--prom", prom,
                          "--junit", junit, "--json", doc, NULL};
    struct utsname u;
    char line[512];

    ck_assert_int_eq(th_spawn(&run, args, NULL, 30, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    promtool_passes(prom);
    ck_assert(has_line(prom, "gpuipc_test_success 1"));
    ck_assert(has_line(prom, "gpuipc_test_exit_status 0"));
    ck_assert(has_line(prom, "gpuipc_test_running 0"));
    ck_assert(has_line(prom, "gpuipc_test_scenario_success{mechanism=\"memfd\"} 1"));
    ck_assert(has_line(prom, "gpuipc_test_scenario_success{mechanism=\"memfd-chunks\"} 1"));
    ck_assert(has_line(prom, "gpuipc_test_scenarios{verdict=\"pass\"} 2"));
    ck_assert_int_eq(uname(&u), 0);
    snprintf(line, sizeof(line), "hostname=\"%s\"", u.nodename);
    ck_assert_msg(th_file_has(prom, line), "no %s in %s", line, prom);
    xml_well_formed(junit);
    xpath_is(junit, "string(/testsuites/@tests)", "3");
    xpath_is(junit, "string(/testsuites/@failures)", "0");
    xpath_is(junit, "count(/testsuites/testsuite)", "2");
    xpath_is(junit, "string(/testsuites/testsuite[1]/@name)", "host memory");
    xpath_is(junit, "count(//testcase[@classname=\"gpuipc_test.host\"])", "2");
    xpath_is(junit, "count(//failure|//skipped|//error)", "0");
    xpath_is(junit, "string(//property[@name=\"exit_status\"]/@value)", "0");
}
END_TEST

/* A failure over an earlier run's pass: no pass is left anywhere. */
START_TEST(test_fleet_a_failure_replaces_an_earlier_pass)
{
    const char *env[] = {"GPUIPC_SABOTAGE=consumer:flip-one", NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "-q", "--prom", prom, "--junit",
                          junit, NULL};

    write_text(prom, "gpuipc_test_success 1\n");
    write_text(junit, "<testsuites/>\n");
    ck_assert_int_eq(th_spawn(&run, args, env, 30, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    promtool_passes(prom);
    ck_assert(has_line(prom, "gpuipc_test_success 0"));
    ck_assert(!has_line(prom, "gpuipc_test_success 1"));
    ck_assert(has_line(prom, "gpuipc_test_scenario_success{mechanism=\"memfd\"} 0"));
    ck_assert(has_line(prom, "gpuipc_test_scenarios{verdict=\"fail\"} 1"));
    xml_well_formed(junit);
    xpath_is(junit, "string(/testsuites/@failures)", "2");
    xpath_is(junit, "string(//testcase[@name=\"memfd\"]/failure/@type)", "producer check");
    ck_assert_msg(strstr(xpath(junit, "string(//testcase[@name=\"memfd\"]/failure/@message)"),
                         "1 mismatches") != NULL, "%s", tool.out);
    ck_assert_msg(strstr(xpath(junit, "string(//testcase[@name=\"exit status\"]/failure/"
                               "@message)"), "(exit 1)") != NULL, "%s", tool.out);
}
END_TEST

/* Stuck until --deadline: the watchdog writes both files. */
START_TEST(test_fleet_the_deadline_writes_both_files)
{
    const char *env[] = {"GPUIPC_FAULT=producer:check:wedge", NULL};
    const char *args[] = {"--only", "memfd,memfd-chunks", "--size", "1M", "-q", "--deadline",
                          "1", "--prom", prom, "--junit", junit, "--json", doc, NULL};
    char *text;
    jnode *d;

    write_text(prom, "gpuipc_test_success 1\n");
    ck_assert_int_eq(th_spawn(&run, args, env, 30, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS(run, "result: FAIL: --deadline 1.000 s passed");
    promtool_passes(prom);
    ck_assert(has_line(prom, "gpuipc_test_success 0"));
    ck_assert(has_line(prom, "gpuipc_test_exit_status 1"));
    ck_assert(has_line(prom, "gpuipc_test_scenario_success{mechanism=\"memfd\"} 0"));
    xml_well_formed(junit);
    ck_assert_msg(strstr(xpath(junit, "string(//testcase[@name=\"exit status\"]/failure/"
                               "@message)"), "--deadline 1.000 s passed") != NULL, "%s",
                  tool.out);
    xpath_is(junit, "string(//testcase[@name=\"memfd\"]/failure/@type)", "FAIL");
    xpath_is(junit, "count(//testcase[@name=\"memfd-chunks\"]/skipped)", "1");
    /* The document's end is the watchdog's, after its start. */
    d = doc_holds(doc, &text);
    ck_assert_msg(strcmp(js_str(js_get(d, "start_time")), js_str(js_get(d, "end_time"))) < 0,
                  "start %s, end %s", js_str(js_get(d, "start_time")),
                  js_str(js_get(d, "end_time")));
    js_free(d);
    free(text);
}
END_TEST

/* While the run is under way, the files say so and claim no verdict; a
 * SIGINT then ends it as stopped. */
static int saw_running;

static void look_then_stop(const char *line, pid_t pgid, void *arg)
{
    (void)arg;
    if (strstr(line, "FAULT INJECTED: hang at report") == NULL)
        return;
    saw_running = has_line(prom, "gpuipc_test_running 1") &&
                  !has_line(prom, "gpuipc_test_success 1") &&
                  !has_line(prom, "gpuipc_test_success 0");
    kill(-pgid, SIGINT);
}

START_TEST(test_fleet_under_way_then_stopped)
{
    const char *env[] = {"GPUIPC_FAULT=consumer:report:hang", NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "--timeout", "10", "--prom", prom,
                          "--junit", junit, NULL};

    write_text(prom, "gpuipc_test_success 1\n");
    ck_assert_int_eq(th_spawn(&run, args, env, 30, 3, look_then_stop, NULL), 0);
    ck_assert_msg(th_exited(&run, 130), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(saw_running, "while the run was under way the textfile did not say so");
    promtool_passes(prom);
    ck_assert(has_line(prom, "gpuipc_test_success 0"));
    ck_assert(has_line(prom, "gpuipc_test_exit_status 130"));
    ck_assert(has_line(prom, "gpuipc_test_scenarios{verdict=\"stopped\"} 1"));
    xml_well_formed(junit);
    xpath_is(junit, "string(//testcase[@name=\"memfd\"]/error/@type)", "stopped");
    xpath_is(junit, "string(//testcase[@name=\"exit status\"]/error/@type)", "exit 130");
}
END_TEST

/* Nothing could run (no GPU for --pairs): a skip, never a pass. */
START_TEST(test_fleet_nothing_could_run)
{
    const char *env[] = {"CUDA_VISIBLE_DEVICES=", NULL};
    const char *args[] = {"--pairs", "all", "--prom", prom, "--junit", junit, NULL};

    ck_assert_int_eq(th_spawn(&run, args, env, 30, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 77), "status 0x%x:\n%s", run.status, run.out);
    promtool_passes(prom);
    ck_assert(has_line(prom, "gpuipc_test_success 0"));
    ck_assert(has_line(prom, "gpuipc_test_exit_status 77"));
    xml_well_formed(junit);
    xpath_is(junit, "count(//testcase[@name=\"exit status\"]/skipped)", "1");
    xpath_is(junit, "string(/testsuites/@failures)", "0");
}
END_TEST

/* ---- what is refused ---- */

enum { K_FIFO, K_DIRECTORY, K_SYMLINK, K_MISSING_DIR, K_COUNT };

START_TEST(test_fleet_paths_refused_before_the_run)
{
    int k = _i % K_COUNT, junit_side = _i / K_COUNT;
    char path[128], victim[128];
    const char *opt = junit_side ? "--junit" : "--prom";
    const char *args[] = {"--only", "memfd", "--size", "64K", "-q", opt, path, "--json", doc,
                          NULL};
    static const char *const says[K_COUNT] = {"is a FIFO;", "is a directory;",
                                              "is a symbolic link (not followed",
                                              "does not exist"};
    struct stat before, after;

    snprintf(path, sizeof(path), "%s/out", dir);
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    write_text(victim, "gpuipc_test_success 1\n");
    if (k == K_FIFO)
        ck_assert_int_eq(mkfifo(path, 0644), 0);
    else if (k == K_DIRECTORY)
        ck_assert_int_eq(mkdir(path, 0755), 0);
    else if (k == K_SYMLINK)
        ck_assert_int_eq(symlink(victim, path), 0);
    else
        snprintf(path, sizeof(path), "%s/missing/out", dir);
    lstat(path, &before);
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 2), "%s %s: status 0x%x:\n%s", opt, says[k], run.status,
                  run.out);
    OUT_HAS(run, opt);
    OUT_HAS(run, says[k]);
    ck_assert_msg(strstr(run.out, "summary") == NULL, "the run ran:\n%s", run.out);
    ck_assert_msg(access(doc, F_OK) < 0, "--json's file was written for a refused run");
    if (k != K_MISSING_DIR) {
        ck_assert_int_eq(lstat(path, &after), 0);
        ck_assert(after.st_ino == before.st_ino && (after.st_mode & S_IFMT) ==
                                                   (before.st_mode & S_IFMT));
    }
    ck_assert(has_line(victim, "gpuipc_test_success 1"));
}
END_TEST

static const struct {
    const char *args[8];
    const char *says;
} refusals[] = {
    {{"--list", "--prom", "x.prom"}, "--prom: does not combine with --list"},
    {{"--bench", "--json", "b.json", "--junit", "x.xml"}, "--junit: does not combine with --bench"},
    {{"--fault-matrix", "--prom", "x.prom"}, "--prom: does not combine with --fault-matrix"},
    {{"--prom", "-"}, "--prom: give a FILE, not standard output"},
    {{"--junit", "-"}, "--junit: give a FILE, not standard output"},
    {{"--prom", "same", "--junit", "same"}, "--prom and --junit: both name same"},
    {{"--json", "same", "--prom", "same"}, "--json and --prom: both name same"},
    {{"--prom", "a", "--prom", "b"}, "--prom given twice"},
    {{"--junit", ""}, "--junit: the file name is empty"},
    {{"--ranks", "--prom", "-"}, "--prom: give a FILE, not standard output"},
    {{"--ranks", "--junit", "-"}, "--junit: give a FILE, not standard output"},
    {{"--ranks", "--json", "same", "--junit", "same"}, "--json and --junit: both name same"},
};

START_TEST(test_fleet_options_refused)
{
    const char *argv[10] = {"gpuipc_test"};
    gpuipc_options o;
    gpuipc_err err;
    int n;

    for (n = 0; refusals[_i].args[n] != NULL; n++)
        argv[n + 1] = refusals[_i].args[n];
    ck_assert_int_eq(gpuipc_options_parse(&o, n + 1, (char **)argv, &err), -EINVAL);
    ck_assert_msg(strstr(err.msg, refusals[_i].says) != NULL, "'%s' lacks '%s'", err.msg,
                  refusals[_i].says);
}
END_TEST

START_TEST(test_fleet_options_taken_by_the_verdict_modes)
{
    const char *modes[][4] = {{"--repeat", "2"}, {"--pairs", "all"}, {"--serve", "@x"},
                              {"--connect", "@x"}, {"--ranks", "-q"}, {NULL}};
    gpuipc_options o;
    gpuipc_err err;
    int m;

    for (m = 0; modes[m][0] != NULL; m++) {
        const char *argv[] = {"gpuipc_test", modes[m][0], modes[m][1], "--prom", "p", "--junit",
                              "j", NULL};

        ck_assert_msg(gpuipc_options_parse(&o, 7, (char **)argv, &err) == 0, "%s: %s",
                      modes[m][0], err.msg);
        ck_assert_str_eq(o.prom_path, "p");
        ck_assert_str_eq(o.junit_path, "j");
    }
}
END_TEST

/* The options are refused (exit 2) over an earlier run's pass in every
 * file: each file says the usage error, however the options came (--json
 * after the refused option; --json=FILE), naming the reason; a --json that
 * names a symbolic link leaves it and its target as they were. */
START_TEST(test_fleet_refused_options_still_write_the_files)
{
    char link[128], victim[128], json_eq[128];
    const char *first[] = {"--prom", prom, "--size", "banana", "--junit", junit, "--json", doc,
                           NULL};
    const char *second[] = {"--bogus", "--junit", junit, json_eq, "--prom", prom, NULL};
    const char *linked[] = {"--only", "memfd", "--json", link, "--size", "banana", NULL};
    const char *const *args = _i == 0 ? first : _i == 1 ? second : linked;
    const char *reason = _i == 1 ? "unknown option '--bogus'" : "'banana' is not a size";
    char *text;
    jnode *d;

    snprintf(json_eq, sizeof(json_eq), "--json=%s", doc);
    snprintf(link, sizeof(link), "%s/link.json", dir);
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    write_text(victim, "{\"exit\": {\"status\": 0}}\n");
    ck_assert_int_eq(symlink(victim, link), 0);
    write_text(prom, "gpuipc_test_success 1\n");
    write_text(junit, "<testsuites/>\n");
    write_text(doc, "{\"exit\": {\"status\": 0}}\n");
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 2), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS(run, reason);
    if (_i == 2) {
        OUT_HAS(run, "is a symbolic link (not followed");
        ck_assert_msg(th_file_has(victim, "\"status\": 0"), "the link's target was changed");
        ck_assert(has_line(prom, "gpuipc_test_success 1")); /* not named: untouched */
        return;
    }
    promtool_passes(prom);
    ck_assert(has_line(prom, "gpuipc_test_exit_status 2"));
    ck_assert(has_line(prom, "gpuipc_test_success 0"));
    ck_assert(!has_line(prom, "gpuipc_test_success 1"));
    xml_well_formed(junit);
    xpath_is(junit, "string(//property[@name=\"exit_status\"]/@value)", "2");
    ck_assert_msg(strstr(xpath(junit, "string(//testcase[@name=\"exit status\"]/failure/"
                               "@message)"), reason) != NULL, "%s", tool.out);
    d = doc_holds(doc, &text);
    ck_assert_int_eq((int)js_num(js_get(js_get(d, "exit"), "status")), 2);
    ck_assert_msg(strstr(js_str(js_get(d, "no_session")), reason) != NULL, "%s", text);
    js_free(d);
    free(text);
}
END_TEST

/* ---- a full disk ---- */

static void fill(const char *path)
{
    ck_assert_msg(th_fill(path) == 0, "%s: %s", path, strerror(errno));
}

/* The disk is full, an earlier pass is in the textfile, and this run
 * fails: the start cannot write its mark, so an empty file takes the
 * pass's place, and the end writes the failure into the room that left. */
START_TEST(test_fleet_a_full_disk_leaves_no_stale_pass)
{
    char full[128], path[160], filler[160], why[160];
    const char *env[] = {"GPUIPC_SABOTAGE=consumer:flip-one", NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "-q", "--prom", path, NULL};

    ck_assert_msg(th_private_mounts(why, sizeof(why)) == 0, "%s", why);
    snprintf(full, sizeof(full), "%s/full", dir);
    mkdir(full, 0755);
    ck_assert_msg(mount("tmpfs", full, "tmpfs", 0, "size=64k") == 0, "mount: %s",
                  strerror(errno));
    snprintf(path, sizeof(path), "%s/gpuipc.prom", full);
    snprintf(filler, sizeof(filler), "%s/filler", full);
    write_text(path, "gpuipc_test_success 1\n");
    fill(filler);
    ck_assert_int_eq(th_spawn(&run, args, env, 20, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS(run, "marking the run under way at its start: write: No space left on device "
                 "(ENOSPC); an empty file took its place");
    ck_assert_msg(!has_line(path, "gpuipc_test_success 1"), "the earlier pass is still there");
    ck_assert_msg(has_line(path, "gpuipc_test_success 0") || !th_file_has(path, "success"),
                  "neither the failure nor an empty file");
    umount2(full, MNT_DETACH);
}
END_TEST

/* No inode left for a temporary file (a full inode table, as on a file
 * system of many small files): the start cannot write its mark, so the
 * earlier pass is emptied (or removed) in place, and the end, which cannot
 * write either, leaves it claiming nothing. */
START_TEST(test_fleet_no_inode_left_leaves_no_stale_pass)
{
    char full[128], path[160], filler[160], why[160];
    const char *env[] = {"GPUIPC_SABOTAGE=consumer:flip-one", NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "-q", "--prom", path, NULL};
    int i;

    ck_assert_msg(th_private_mounts(why, sizeof(why)) == 0, "%s", why);
    snprintf(full, sizeof(full), "%s/full", dir);
    mkdir(full, 0755);
    ck_assert_msg(mount("tmpfs", full, "tmpfs", 0, "size=1m,nr_inodes=8") == 0, "mount: %s",
                  strerror(errno));
    snprintf(path, sizeof(path), "%s/gpuipc.prom", full);
    write_text(path, "gpuipc_test_success 1\n");
    for (i = 0; i < 16; i++) { /* every inode taken */
        snprintf(filler, sizeof(filler), "%s/filler%d", full, i);
        if (open(filler, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) < 0)
            break;
    }
    ck_assert_int_eq(th_spawn(&run, args, env, 20, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS(run, "marking the run under way at its start: creating its temporary file beside "
                 "it: No space left on device; the file was emptied (or removed) instead");
    ck_assert_msg(!has_line(path, "gpuipc_test_success 1"), "the earlier pass is still there");
    umount2(full, MNT_DETACH);
}
END_TEST

/* Few FDs: ulimit -n 6 to 12, run as it is (_i 0) and with 3 more FDs
 * inherited (_i 1: a shell or a launcher that leaves some open). What the
 * program holds from its start is counted, not assumed. At each limit
 * either the program cannot even be loaded (no FD number free for the
 * dynamic loader: exit 127, which no program can help), or it runs, fails
 * (exit 1) on a result line, and no earlier pass is left in the files; at
 * one limit at least the files could not be written and were emptied (or
 * removed) instead. */
START_TEST(test_fleet_no_fd_left_leaves_no_stale_pass)
{
    char cmd[512];
    const char *args[] = {"-c", cmd, NULL};
    /* LeakSanitizer (make asan) needs FDs of its own at exit: not here. */
    const char *env[] = {"GPUIPC_SABOTAGE=consumer:flip-one", "ASAN_OPTIONS=detect_leaks=0",
                         NULL};
    int extra[3] = {-1, -1, -1}, n, k, voided = 0, ran = 0;

    for (k = 0; _i == 1 && k < 3; k++)
        ck_assert_int_ge(extra[k] = open("/dev/null", O_RDONLY), 0); /* kept across exec */
    for (n = 6; n <= 12; n++) {
        int held = th_fds_inherited_below(n);

        ck_assert_int_ge(held, 3);
        write_text(prom, "gpuipc_test_success 1\n");
        write_text(junit, "<testsuites tests=\"1\" failures=\"0\"/>\n");
        snprintf(cmd, sizeof(cmd), "ulimit -n %d && exec '%s' --only memfd --size 1M -q "
                 "--prom '%s' --junit '%s'", n, th_program(), prom, junit);
        ck_assert_int_eq(th_spawn_file(&run, "/bin/sh", args, env, 20, 3, NULL, NULL), 0);
        if (held >= n) {
            ck_assert_msg(th_exited(&run, 127) &&
                          strstr(run.out, "error while loading shared libraries") != NULL,
                          "ulimit -n %d, %d FDs held from the start: status 0x%x:\n%s", n,
                          held, run.status, run.out);
            continue;
        }
        ran++;
        ck_assert_msg(th_exited(&run, 1), "ulimit -n %d, %d FDs held from the start: status "
                      "0x%x:\n%s", n, held, run.status, run.out);
        ck_assert_msg(strstr(run.out, "\nresult: FAIL: ") != NULL ||
                      strncmp(run.out, "result: FAIL: ", 14) == 0,
                      "ulimit -n %d: no result line:\n%s", n, run.out);
        ck_assert_msg(!has_line(prom, "gpuipc_test_success 1"), "ulimit -n %d: the earlier "
                      "pass is still there:\n%s", n, run.out);
        ck_assert_msg(!th_file_has(junit, "<testsuites tests=\"1\" failures=\"0\"/>") &&
                      !th_file_has(junit, "failures=\"0\" errors=\"0\" skipped=\"0\""),
                      "ulimit -n %d: the earlier report is still there, or a pass:\n%s", n,
                      run.out);
        voided |= strstr(run.out, "emptied (or removed) instead") != NULL;
    }
    for (k = 0; k < 3; k++)
        if (extra[k] >= 0)
            close(extra[k]);
    ck_assert_msg(ran >= 3, "only %d limits let the program start: the test proves little", ran);
    ck_assert_msg(voided, "no limit made the start's mark fail: the test proves nothing");
}
END_TEST

Suite *fleet_suite(void)
{
    Suite *s = suite_create("fleet");
    TCase *units = tcase_create("formats"), *prog = tcase_create("program");
    char why[160];

    tcase_add_checked_fixture(units, setup, teardown);
    tcase_add_checked_fixture(prog, setup, teardown);
    tcase_set_timeout(units, 60);
    tcase_set_timeout(prog, 60);
    tcase_add_test(units, test_fleet_xml_escapes_every_character_it_must);
    tcase_add_test(units, test_fleet_prom_label_escapes_backslash_quote_and_newline);
    tcase_add_test(units, test_fleet_utc_times_match_gmtime);
    tcase_add_test(units, test_fleet_junit_carries_a_hostile_reason_whole);
    tcase_add_test(units, test_fleet_prom_series_come_from_the_results);
    tcase_add_test(units, test_fleet_promtool_refuses_a_bad_textfile);
    tcase_add_loop_test(units, test_fleet_options_refused, 0,
                        (int)(sizeof(refusals) / sizeof(refusals[0])));
    tcase_add_test(units, test_fleet_options_taken_by_the_verdict_modes);
    tcase_add_test(prog, test_fleet_a_pass);
    tcase_add_test(prog, test_fleet_a_failure_replaces_an_earlier_pass);
    tcase_add_test(prog, test_fleet_the_deadline_writes_both_files);
    tcase_add_test(prog, test_fleet_under_way_then_stopped);
    tcase_add_test(prog, test_fleet_nothing_could_run);
    tcase_add_loop_test(prog, test_fleet_paths_refused_before_the_run, 0, 2 * K_COUNT);
    tcase_add_loop_test(prog, test_fleet_refused_options_still_write_the_files, 0, 3);
    tcase_add_loop_test(prog, test_fleet_no_fd_left_leaves_no_stale_pass, 0, 2);
    if (th_mounts_work(why, sizeof(why))) {
        tcase_add_test(prog, test_fleet_a_full_disk_leaves_no_stale_pass);
        tcase_add_test(prog, test_fleet_no_inode_left_leaves_no_stale_pass);
    } else {
        fprintf(stderr, "NOT RUN: fleet: a full disk and a full inode table: %s\n", why);
    }
    suite_add_tcase(s, units);
    suite_add_tcase(s, prog);
    return s;
}
