/* SPDX-License-Identifier: Apache-2.0 */
/* test_reports.c: the TAP and XML reports of a run of the suites stay whole
 * while its tests start programs that use Check themselves (th_spawn passes
 * them none of the runner's CK_* variables), and the XML checker that reads
 * the reports rejects what is not XML.
 *
 * T (this test) makes a fresh directory; R (the suite runner,
 * /proc/self/exe) runs the program suite's basics case with
 * CK_TAP_LOG_FILE_NAME and CK_XML_LOG_FILE_NAME pointing into it; R's tests
 * start ./gpuipc_test (P) many times, and P runs its scenarios through Check
 * too, so that a P that saw R's CK_* variables would write its report over
 * R's; R exits; T reads both reports, removes the directory, and only then
 * checks them. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "suites.h"

/* R's deadline. It takes about a second; Check's timeout for the test
 * is above this deadline plus th_spawn's grace, so that T always gets to
 * remove its files. */
#define RUNNER_DEADLINE_S 20
#define RUNNER_TCASE_TIMEOUT_S 30

static th_run run;
static int checks;          /* N in R's "100%: Checks: N, Failures: 0, Errors: 0" */
static char *tap, *xml;     /* the reports R wrote, or NULL */
static size_t tap_len, xml_len;
static int tap_errno, xml_errno;

/* Removes dir and whatever is in it. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;

    while (d != NULL && (de = readdir(d)) != NULL) {
        char path[512];

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        unlink(path);
    }
    if (d != NULL)
        closedir(d);
    rmdir(dir);
}

/* Runs R with its reports in a fresh directory, reads them into tap and
 * xml, and removes the directory before asserting anything, so that no
 * path out of the test leaves files behind. Then asserts that R passed
 * every check, and sets checks. */
static void run_the_runner(void)
{
    char dir[] = "/tmp/gpuipc-reports-XXXXXX", tap_path[64], xml_path[64], exe[1024];
    char env_tap[96], env_xml[96], env_bin[1100];
    const char *env[] = {"CK_RUN_SUITE=program", "CK_RUN_CASE=basics", env_tap, env_xml, env_bin,
                         NULL};
    const char *args[] = {NULL};
    /* Under valgrind, readlink() names the suite runner rather than
     * valgrind, which exec'ing /proc/self/exe itself would start. */
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    int spawned, failures = -1, errors = -1;
    const char *summary;

    ck_assert_msg(n > 0 && (size_t)n < sizeof(exe) - 1, "readlink /proc/self/exe: %s",
                  n < 0 ? strerror(errno) : "name too long");
    exe[n] = '\0';
    ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
    snprintf(tap_path, sizeof(tap_path), "%s/check.tap", dir);
    snprintf(xml_path, sizeof(xml_path), "%s/check.xml", dir);
    snprintf(env_tap, sizeof(env_tap), "CK_TAP_LOG_FILE_NAME=%s", tap_path);
    snprintf(env_xml, sizeof(env_xml), "CK_XML_LOG_FILE_NAME=%s", xml_path);
    snprintf(env_bin, sizeof(env_bin), "GPUIPC_TEST_BIN=%s", th_program());

    spawned = th_spawn_file(&run, exe, args, env, RUNNER_DEADLINE_S, 3.0, NULL, NULL);
    tap = th_read_file(tap_path, &tap_len);
    tap_errno = errno;
    xml = th_read_file(xml_path, &xml_len);
    xml_errno = errno;
    remove_dir(dir);

    ck_assert_msg(spawned == 0, "could not start %s", exe);
    ck_assert_msg(th_exited(&run, 0), "%s: status 0x%x after %.1f s (deadline %d s):\n%s", exe,
                  run.status, run.seconds, RUNNER_DEADLINE_S, run.out);
    summary = strstr(run.out, "100%: Checks: ");
    ck_assert_msg(summary != NULL &&
                  sscanf(summary, "100%%: Checks: %d, Failures: %d, Errors: %d", &checks,
                         &failures, &errors) == 3 &&
                  checks > 0 && failures == 0 && errors == 0,
                  "no '100%%: Checks: N, Failures: 0, Errors: 0' in the output:\n%s", run.out);
}

START_TEST(test_reports_tap_has_one_ok_line_per_check)
{
    const char *line, *end, *tap_end;
    char plan[32];
    int number = 0, plans = 0;

    run_the_runner();
    ck_assert_msg(tap != NULL, "reading the TAP report: %s", strerror(tap_errno));
    snprintf(plan, sizeof(plan), "1..%d", checks);
    tap_end = tap + tap_len;
    for (line = tap; line < tap_end; line = end + 1) {
        size_t len;
        char *after;
        long k;

        end = memchr(line, '\n', (size_t)(tap_end - line));
        if (end == NULL)
            end = tap_end;
        len = (size_t)(end - line);
        ck_assert_msg(memchr(line, '\0', len) == NULL,
                      "TAP line %d holds a NUL byte (was the file written over?): '%.*s'",
                      number + plans + 1, (int)len, line);
        if (len == strlen(plan) && memcmp(line, plan, len) == 0) {
            plans++;
            continue;
        }
        ck_assert_msg(len > 3 && strncmp(line, "ok ", 3) == 0,
                      "TAP line %d is neither 'ok %d - ...' nor the plan '%s': '%.*s'",
                      number + plans + 1, number + 1, plan, (int)len, line);
        k = strtol(line + 3, &after, 10);
        ck_assert_msg(k == number + 1 && after + 3 <= end && strncmp(after, " - ", 3) == 0,
                      "TAP line %d is not 'ok %d - ...': '%.*s'", number + plans + 1,
                      number + 1, (int)len, line);
        number++;
    }
    ck_assert_msg(number == checks, "TAP report: %d 'ok' lines for %d checks", number, checks);
    ck_assert_msg(plans == 1, "TAP report: the plan '%s' appears %d times", plan, plans);
    free(tap);
    free(xml);
}
END_TEST

/* Every CK_* variable of the runner is gone in what th_spawn starts, the
 * adjacent ones too (unsetenv() moves the entries after the one it removes),
 * while those the test passes arrive. */
START_TEST(test_reports_spawned_programs_see_only_the_ck_variables_passed)
{
    static const char entry[] = "CK_RUN_SUITE=passed";
    const char *env[] = {entry, NULL};
    const char *args[] = {NULL};
    const char *line, *end;
    int passed = 0;

    setenv("CK_TAP_LOG_FILE_NAME", "/nonexistent/runner.tap", 1);
    setenv("CK_XML_LOG_FILE_NAME", "/nonexistent/runner.xml", 1);
    setenv("CK_LOG_FILE_NAME", "/nonexistent/runner.log", 1);
    setenv("CK_RUN_SUITE", "runner", 1);
    setenv("CK_VERBOSITY", "verbose", 1);
    ck_assert_int_eq(th_spawn_file(&run, "/usr/bin/env", args, env, 10, 1, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "env: status 0x%x:\n%s", run.status, run.out);
    for (line = run.out; *line != '\0'; line = *end == '\n' ? end + 1 : end) {
        size_t len = strcspn(line, "\n");

        end = line + len;
        if (len == strlen(entry) && memcmp(line, entry, len) == 0)
            passed++;
        else
            ck_assert_msg(strncmp(line, "CK_", 3) != 0, "the program saw '%.*s'", (int)len,
                          line);
    }
    ck_assert_msg(passed == 1, "%s arrived %d times:\n%s", entry, passed, run.out);
}
END_TEST

/* Returns the number of times needle occurs in text. */
static int count(const char *text, const char *needle)
{
    int n = 0;

    for (text = strstr(text, needle); text != NULL; text = strstr(text + 1, needle))
        n++;
    return n;
}

START_TEST(test_reports_xml_is_well_formed_with_one_success_per_check)
{
    char why[256];
    int tests, successes;

    run_the_runner();
    ck_assert_msg(xml != NULL, "reading the XML report: %s", strerror(xml_errno));
    ck_assert_msg(th_xml_valid(xml, xml_len, why, sizeof(why)),
                  "XML report of %zu bytes: %s; it begins:\n%.1500s", xml_len, why, xml);
    /* Check writes one <test result="..."> per check; the root element is
     * <testsuites>, which "<test " does not match. */
    tests = count(xml, "<test ");
    successes = count(xml, "<test result=\"success\">");
    ck_assert_msg(tests == checks, "XML report: %d <test> elements for %d checks", tests, checks);
    ck_assert_msg(successes == checks,
                  "XML report: %d of %d <test> elements have result=\"success\"", successes,
                  tests);
    free(tap);
    free(xml);
}
END_TEST

/* What a report written over by another process looks like (a second
 * document inside the first, a hole of NUL bytes), and other ways a text
 * can fail to be XML. */
#define DECL "<?xml version=\"1.0\"?>"
#define TEXT(s) {s, sizeof(s) - 1}
static const struct {
    const char *text;
    size_t len;
} not_xml[] = {
    TEXT(""),
    TEXT("<a/>"),
    TEXT(" " DECL "<a/>"),
    TEXT("<?xml?><a/>"),
    TEXT("<?xml version=\"2.0\"?><a/>"),
    TEXT("<?xml version=\"1.0\" standalone=\"maybe\"?><a/>"),
    TEXT(DECL),
    TEXT(DECL "text<a/>"),
    TEXT(DECL "<a>"),
    TEXT(DECL "<a></b>"),
    TEXT(DECL "<a><b></a></b>"),
    TEXT(DECL "<a/><b/>"),
    TEXT(DECL "<a>" DECL "<b/></a>"),
    TEXT(DECL "<a>\0\0\0</a>"),
    TEXT(DECL "<a>\xc3</a>"),
    TEXT(DECL "<a>1 < 2</a>"),
    TEXT(DECL "<a>R&D</a>"),
    TEXT(DECL "<a>&nbsp;</a>"),
    TEXT(DECL "<a>&#0;</a>"),
    TEXT(DECL "<a>&#xZ;</a>"),
    TEXT(DECL "<a x=1/>"),
    TEXT(DECL "<a x=\"1/>"),
    TEXT(DECL "<a x=\"1\"y=\"2\"/>"),
    TEXT(DECL "<a x=\"1\" x=\"2\"/>"),
    TEXT(DECL "<a x=\"<\"/>"),
    TEXT(DECL "<a><!-- a -- b --></a>"),
    TEXT(DECL "<a><![CDATA[x</a>"),
    TEXT(DECL "<a>]]></a>"),
};

START_TEST(test_reports_xml_checker_rejects_what_is_not_xml)
{
    char why[128];

    ck_assert_msg(!th_xml_valid(not_xml[_i].text, not_xml[_i].len, why, sizeof(why)),
                  "accepted '%s'", not_xml[_i].text);
    ck_assert_msg(why[0] != '\0', "no reason for '%s'", not_xml[_i].text);
}
END_TEST

START_TEST(test_reports_xml_checker_accepts_xml)
{
    static const char doc[] =
        "<?xml version='1.0' encoding=\"UTF-8\" standalone='yes' ?>\n"
        "<?xml-stylesheet type=\"text/xsl\" href=\"check_unittest.xslt\"?>\n"
        "<testsuites xmlns=\"http://check.sourceforge.net/ns\">\n"
        "  <!-- a comment -->\n"
        "  <suite><title>&lt;a&gt; &amp; &quot;b&quot; &apos;c&apos;</title>\n"
        "    <title>&#233; &#x1F600; \xc3\xa9</title>\n"
        "    <test result='success' n = \"1\"><message><![CDATA[1 < 2 & 3]]></message><e/></test>\n"
        "  </suite >\n"
        "</testsuites>\n";
    char why[128];

    ck_assert_msg(th_xml_valid(doc, sizeof(doc) - 1, why, sizeof(why)), "%s:\n%s", why, doc);
}
END_TEST

Suite *reports_suite(void)
{
    Suite *s = suite_create("reports");
    TCase *runner = tcase_create("runner");
    TCase *spawn = tcase_create("spawn");
    TCase *checker = tcase_create("xml_checker");

    tcase_set_timeout(runner, RUNNER_TCASE_TIMEOUT_S);
    tcase_add_test(runner, test_reports_tap_has_one_ok_line_per_check);
    tcase_add_test(runner, test_reports_xml_is_well_formed_with_one_success_per_check);
    tcase_add_test(spawn, test_reports_spawned_programs_see_only_the_ck_variables_passed);
    tcase_add_loop_test(checker, test_reports_xml_checker_rejects_what_is_not_xml, 0,
                        (int)(sizeof(not_xml) / sizeof(not_xml[0])));
    tcase_add_test(checker, test_reports_xml_checker_accepts_xml);
    suite_add_tcase(s, runner);
    suite_add_tcase(s, spawn);
    suite_add_tcase(s, checker);
    return s;
}
