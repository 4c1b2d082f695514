/* SPDX-License-Identifier: Apache-2.0 */
/* test_doc_scan.c: lib/run/doc_scan.c, a result document read back: a
 * document the project's writer (run/result_doc.c) wrote in this process,
 * the one a run of the program writes to its standard output with --json -
 * (as --bench reads it), and malformed texts, each refused for its own
 * reason. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/err.h"
#include "core/status.h"
#include "helpers.h"
#include "run/doc.h"
#include "run/doc_scan.h"
#include "run/result_doc.h"
#include "suites.h"

/* A document as small as the scanner takes: every member it reads, once. */
#define VALID_DOC                                                                            \
    "{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1.5, \"scenarios\": "     \
    "[{\"name\": \"vmm\", \"verdict\": \"pass\", \"gpu\": 0, \"peer_gpu\": null, "            \
    "\"time_ms\": 2.5}]}"

static int scan(const char *text, gpuipc_doc_scan *d, gpuipc_err *err)
{
    return gpuipc_doc_scan_read(text, strlen(text), d, err);
}

/* The writer's document of four results (on one GPU, across two, in host
 * memory, and one skipped with no time), in a file, read back: every
 * member the scanner reads is the value the results held. The first name
 * holds a quote, a backslash and a control byte, which the writer escapes. */
START_TEST(test_doc_scan_reads_the_writers_document)
{
    static gpuipc_result r[4];
    static const struct {
        const char *name;
        int gpu, peer, status;
        uint64_t ns;
    } want[4] = {
        {"vmm \"a\\b\x01", 0, -1, GPUIPC_PASS, 5500000},
        {"vmm 0->1", 0, 1, GPUIPC_FAIL, 7250000},
        {"memfd", -1, -1, GPUIPC_PASS, 1000000},
        {"fabric", 1, -1, GPUIPC_SKIP, 0},
    };
    char *argv[] = {"gpuipc_test", "--json", "doc.json", NULL};
    char path[64], *text;
    gpuipc_doc_program prog;
    gpuipc_doc_scan d;
    gpuipc_doc doc;
    gpuipc_err err;
    size_t i, n;

    snprintf(path, sizeof(path), "/tmp/gpuipc-scan-%d.json", (int)getpid());
    unlink(path);
    memset(&prog, 0, sizeof(prog));
    prog.version = "0.0.0";
    prog.commit = "test";
    prog.mode = "one-shot";
    prog.argc = 3;
    prog.argv = argv;
    prog.json_path = path;
    prog.repeat = 1;
    for (i = 0; i < 4; i++) {
        memset(&r[i], 0, sizeof(r[i]));
        r[i].mech = want[i].name;
        r[i].gpu = want[i].gpu;
        r[i].peer_gpu = want[i].peer;
        r[i].status = want[i].status;
        r[i].ns = want[i].ns;
        r[i].size = 1 << 20;
    }
    snprintf(r[1].reason, sizeof(r[1].reason), "check: 1 mismatches");
    snprintf(r[3].reason, sizeof(r[3].reason), "probe: no IMEX channel");
    memset(&doc, 0, sizeof(doc));
    doc.o = &prog;
    doc.role = "producer";
    doc.exit_code = 1;
    doc.wall_ns = 2250000000ull;
    doc.results = r;
    doc.n = 4;
    doc.rounds = 1;
    ck_assert_msg(gpuipc_doc_check_path(path, &err) == 0, "%s", err.msg);
    ck_assert_msg(gpuipc_doc_write(&doc, &err) == 0, "%s", err.msg);
    ck_assert_ptr_nonnull(text = th_read_file(path, &n));
    unlink(path);
    ck_assert_msg(gpuipc_doc_scan_read(text, n, &d, &err) == 0, "%s:\n%s", err.msg, text);
    ck_assert_int_eq(d.exit_status, 1);
    ck_assert_double_eq(d.wall_s, 2.25);
    ck_assert_uint_eq(d.n, 4);
    for (i = 0; i < 4; i++) {
        ck_assert_str_eq(d.cells[i].name, want[i].name);
        ck_assert_int_eq(d.cells[i].gpu, want[i].gpu);
        ck_assert_int_eq(d.cells[i].peer_gpu, want[i].peer);
        ck_assert_int_eq(d.cells[i].status, want[i].status);
        ck_assert_double_eq(d.cells[i].time_ms, (double)want[i].ns / 1e6);
    }
    gpuipc_doc_scan_free(&d);
    ck_assert_ptr_null(d.cells);
    free(text);
}
END_TEST

/* The program's own document on its standard output, as --bench takes it
 * from a default run: --json - (the text goes to standard error). */
START_TEST(test_doc_scan_reads_a_runs_document_from_its_stdout)
{
    char *text = NULL;
    size_t len = 0, cap = 0;
    gpuipc_doc_scan d;
    gpuipc_err err;
    int fds[2], status;
    pid_t pid;
    ssize_t got;

    ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

        /* CK_RUN_SUITE=doc_scan would select none of its scenarios. */
        if (th_unset_check_variables() < 0 || null < 0 || dup2(fds[1], 1) < 0 ||
            dup2(null, 2) < 0)
            _exit(126);
        execl(th_program(), th_program(), "--only", "memfd,memfd-chunks", "--size", "1M",
              "--json", "-", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    for (;;) {
        if (len + 4096 > cap) {
            cap = cap ? 2 * cap : 65536;
            ck_assert_ptr_nonnull(text = realloc(text, cap));
        }
        got = read(fds[0], text + len, cap - len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        ck_assert_int_ge(got, 0);
        if (got == 0)
            break;
        len += (size_t)got;
    }
    close(fds[0]);
    text[len] = '\0';
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x:\n%s", status,
                  text);
    ck_assert_msg(gpuipc_doc_scan_read(text, len, &d, &err) == 0, "%s:\n%s", err.msg, text);
    ck_assert_int_eq(d.exit_status, 0);
    ck_assert(d.wall_s > 0);
    ck_assert_uint_eq(d.n, 2);
    ck_assert_str_eq(d.cells[0].name, "memfd");
    ck_assert_str_eq(d.cells[1].name, "memfd-chunks");
    ck_assert_int_eq(d.cells[1].status, GPUIPC_PASS);
    ck_assert_int_eq(d.cells[1].gpu, -1);
    ck_assert_int_eq(d.cells[1].peer_gpu, -1);
    ck_assert(d.cells[0].time_ms > 0 && d.cells[1].time_ms > 0);
    ck_assert(d.cells[0].time_ms + d.cells[1].time_ms < d.wall_s * 1e3);
    gpuipc_doc_scan_free(&d);
    free(text);
}
END_TEST

/* The smallest document the malformed ones below are made from is read,
 * and so is one with no scenarios, members in another order and an unknown
 * member of every kind of value: so that each malformed one fails for its
 * own reason. */
START_TEST(test_doc_scan_reads_the_smallest_document)
{
    gpuipc_doc_scan d;
    gpuipc_err err;

    ck_assert_msg(scan(VALID_DOC, &d, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(d.n, 1);
    ck_assert_str_eq(d.cells[0].name, "vmm");
    ck_assert_int_eq(d.cells[0].peer_gpu, -1);
    ck_assert_double_eq(d.cells[0].time_ms, 2.5);
    gpuipc_doc_scan_free(&d);
    ck_assert_msg(scan(" {\"scenarios\": [], \"other\": [{\"a\": [true, false, null, -1.5e+3, "
                       "\"\\u00e9\\ud83d\\ude00\\/\"]}, {}, []], \"wall_s\": 0, \"exit\": "
                       "{\"meaning\": \"x\", \"status\": 77}, \"schema_version\": 3}\n",
                       &d, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(d.n, 0);
    ck_assert_int_eq(d.exit_status, 77);
    gpuipc_doc_scan_free(&d);
}
END_TEST

/* Texts that are not the writer's document, each with what the refusal
 * must say. */
static const struct {
    const char *text, *says;
} malformed[] = {
    {"", "the text ends"},
    {"[1]", "the document is not an object"},
    {VALID_DOC " x", "more text after the document"},
    {VALID_DOC VALID_DOC, "more text after the document"},
    {"{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1.5, \"scenarios\": [",
     "the text ends"},
    {"{\"schema_version\": 2, \"exit\": {\"status\": 0}, \"wall_s\": 1, \"scenarios\": []}",
     "schema_version 2: this program reads 3"},
    {"{\"exit\": {\"status\": 0}, \"wall_s\": 1, \"scenarios\": []}",
     "the document has no schema_version"},
    {"{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1}",
     "the document has no scenarios"},
    {"{\"schema_version\": 3, \"exit\": {}, \"wall_s\": 1, \"scenarios\": []}",
     "exit has no status"},
    {"{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1, \"scenarios\": {}}",
     "scenarios is not an array"},
    {"{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1, \"scenarios\": [1]}",
     "scenario 0 is not an object"},
    {"{\"schema_version\": 3, \"schema_version\": 3}", "schema_version a second time"},
    {"{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1, \"scenarios\": "
     "[{\"name\": \"vmm\", \"verdict\": \"pass\", \"gpu\": 0, \"peer_gpu\": null}]}",
     "scenario 0 has no time_ms"},
    {"{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1, \"scenarios\": "
     "[{\"name\": \"vmm\", \"verdict\": \"pass\", \"gpu\": 0, \"peer_gpu\": null, "
     "\"time_ms\": 1, \"time_ms\": 2}]}", "scenario 0: time_ms a second time"},
    {"{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1, \"scenarios\": "
     "[{\"name\": \"vmm\", \"verdict\": \"pass\", \"gpu\": \"0\", \"peer_gpu\": null, "
     "\"time_ms\": 1}]}", "scenario 0: gpu is not an integer or null"},
    {"{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1, \"scenarios\": "
     "[{\"name\": \"vmm\", \"verdict\": \"pass\", \"gpu\": -1, \"peer_gpu\": null, "
     "\"time_ms\": 1}]}", "scenario 0: gpu is -1, not an integer from 0"},
    {"{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1, \"scenarios\": "
     "[{\"name\": \"vmm\", \"verdict\": \"pass\", \"gpu\": 0, \"peer_gpu\": 0.5, "
     "\"time_ms\": 1}]}", "scenario 0: peer_gpu is 0.5, not an integer from 0"},
    {"{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1, \"scenarios\": "
     "[{\"name\": \"vmm\", \"verdict\": \"passed\", \"gpu\": 0, \"peer_gpu\": null, "
     "\"time_ms\": 1}]}", "scenario 0: verdict 'passed' is not a verdict"},
    {"{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1, \"scenarios\": "
     "[{\"name\": \"vmm\", \"verdict\": \"pass\", \"gpu\": 0, \"peer_gpu\": null, "
     "\"time_ms\": -1}]}", "scenario 0: time_ms is -1, below 0"},
    {"{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1, \"scenarios\": "
     "[{\"name\": \"vmm\", \"verdict\": \"pass\", \"gpu\": 0, \"peer_gpu\": null, "
     "\"time_ms\": null}]}", "scenario 0: time_ms is not a number"},
    {"{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1, \"scenarios\": "
     "[{\"name\": 7, \"verdict\": \"pass\", \"gpu\": 0, \"peer_gpu\": null, "
     "\"time_ms\": 1}]}", "scenario 0: name is not a string"},
    {"{\"x\": 1e999}", "a number out of range"},
    {"{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1e300, "
     "\"scenarios\": []}", "wall_s is 1e+300, above"},
    {"{\"schema_version\": 3, \"exit\": {\"status\": 0}, \"wall_s\": 1, \"scenarios\": "
     "[{\"name\": \"vmm\", \"verdict\": \"pass\", \"gpu\": 0, \"peer_gpu\": null, "
     "\"time_ms\": 1e300}]}", "scenario 0: time_ms is 1e+300, above"},
    {"{\"wall_s\": 01}", "a number with a leading zero"},
    {"{\"wall_s\": 1.}", "a number without a digit after its '.'"},
    {"{\"wall_s\": 1e}", "a number without digits in its exponent"},
    {"{\"wall_s\": +1}", "wall_s is not a number"},
    {"{\"x\": NaN}", "not a number"},
    {"{\"x\": tru}", "not a JSON value"},
    {"{\"x\": 'a'}", "not a number"},
    {"{\"x\": \"a\\q\"}", "an unknown escape '\\q'"},
    {"{\"x\": \"a\x01\"}", "a control character (0x01) inside a string"},
    {"{\"x\": \"a}", "the text ends inside a string"},
    {"{\"x\": \"\\u12\"}", "\\u without four hex digits"},
    {"{\"x\": \"\\ud800\"}", "\\ud800: a high surrogate without its low one"},
    {"{\"x\": \"\\udc00\"}", "\\udc00: a low surrogate without its high one"},
    {"{\"x\": 1 \"y\": 2}", "expected ',' or '}' after a member"},
    {"{\"x\" 1}", "expected ':' after a key"},
    {"{\"x\": [1, 2,]}", "not a number"},
    {"{\"x\": [1 2]}", "expected ',' or ']' after an element"},
    {"{x: 1}", "expected '\"' to begin a string"},
};

START_TEST(test_doc_scan_refuses_malformed_text)
{
    gpuipc_doc_scan d;
    gpuipc_err err;
    int rc;

    memset(&err, 0, sizeof(err));
    rc = scan(malformed[_i].text, &d, &err);
    ck_assert_msg(rc == -EBADMSG, "case %d: %d for: %s", _i, rc, malformed[_i].text);
    ck_assert_msg(strstr(err.msg, malformed[_i].says) != NULL, "case %d: '%s', not '%s'", _i,
                  err.msg, malformed[_i].says);
    ck_assert_msg(strncmp(err.msg, "the document", 12) == 0, "case %d: '%s'", _i, err.msg);
    gpuipc_doc_scan_free(&d);
}
END_TEST

/* Nesting deeper than the scanner's limit is refused before it runs out
 * of stack, in a member it would otherwise skip. */
START_TEST(test_doc_scan_refuses_deep_nesting)
{
    char text[256];
    gpuipc_doc_scan d;
    gpuipc_err err;
    int i, n = 0;

    n += snprintf(text + n, sizeof(text) - (size_t)n, "{\"x\": ");
    for (i = 0; i < 100; i++)
        text[n++] = '[';
    for (i = 0; i < 100; i++)
        text[n++] = ']';
    snprintf(text + n, sizeof(text) - (size_t)n, "}");
    ck_assert_int_eq(scan(text, &d, &err), -EBADMSG);
    ck_assert_msg(strstr(err.msg, "nested deeper than 64") != NULL, "%s", err.msg);
    gpuipc_doc_scan_free(&d);
}
END_TEST

/* A text cut anywhere short of its end is refused, never read as a
 * shorter document. */
START_TEST(test_doc_scan_refuses_every_truncation)
{
    const char *text = VALID_DOC;
    size_t len = strlen(text), cut;
    gpuipc_doc_scan d;
    gpuipc_err err;

    for (cut = 0; cut < len; cut++) {
        ck_assert_msg(gpuipc_doc_scan_read(text, cut, &d, &err) == -EBADMSG,
                      "read when cut at %zu", cut);
        gpuipc_doc_scan_free(&d);
    }
}
END_TEST

Suite *doc_scan_suite(void)
{
    Suite *s = suite_create("doc_scan");
    TCase *tc = tcase_create("doc_scan");

    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_doc_scan_reads_the_writers_document);
    tcase_add_test(tc, test_doc_scan_reads_a_runs_document_from_its_stdout);
    tcase_add_test(tc, test_doc_scan_reads_the_smallest_document);
    tcase_add_loop_test(tc, test_doc_scan_refuses_malformed_text, 0,
                        (int)(sizeof(malformed) / sizeof(malformed[0])));
    tcase_add_test(tc, test_doc_scan_refuses_deep_nesting);
    tcase_add_test(tc, test_doc_scan_refuses_every_truncation);
    suite_add_tcase(s, tc);
    return s;
}
