/* SPDX-License-Identifier: Apache-2.0 */
/* test_json.c: the JSON writer's documents parse, escape what they must,
 * and an unbalanced document is reported; the tests' JSON reader
 * (tests/jschema.c) rejects what is not JSON. */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json.h"
#include "core/sink.h"
#include "helpers.h"
#include "suites.h"

static char *doc;
static size_t doc_len;
static char sink_mem[16384];
static gpuipc_sink sink;

/* A document is written through a sink on a temporary file, and read back
 * into doc when it is closed. */
static FILE *open_doc(void)
{
    FILE *f = tmpfile();

    ck_assert_ptr_nonnull(f);
    gpuipc_sink_init(&sink, fileno(f), sink_mem, sizeof(sink_mem));
    return f;
}

static void close_doc(FILE *f)
{
    off_t len = lseek(fileno(f), 0, SEEK_END);

    ck_assert_int_ge(len, 0);
    doc_len = (size_t)len;
    ck_assert_ptr_nonnull(doc = malloc(doc_len + 1));
    ck_assert_int_eq(pread(fileno(f), doc, doc_len, 0), (ssize_t)doc_len);
    doc[doc_len] = '\0';
    fclose(f);
}

START_TEST(test_json_writes_a_parsable_document)
{
    FILE *f = open_doc();
    gpuipc_json j;
    char why[128];

    gpuipc_json_init(&j, &sink);
    gpuipc_json_object(&j, NULL);
    gpuipc_json_string(&j, "schema", "gpuipc_test/capabilities");
    gpuipc_json_int(&j, "schema_version", 1);
    gpuipc_json_int(&j, "negative", -42);
    gpuipc_json_bool(&j, "yes", 1);
    gpuipc_json_string(&j, "none", NULL);
    gpuipc_json_array(&j, "empty");
    gpuipc_json_end(&j, ']');
    gpuipc_json_array(&j, "list");
    gpuipc_json_int(&j, NULL, 1);
    gpuipc_json_object(&j, NULL);
    gpuipc_json_string(&j, "tricky", "quote \" backslash \\ newline \n tab \t bell \a");
    gpuipc_json_end(&j, '}');
    gpuipc_json_end(&j, ']');
    gpuipc_json_end(&j, '}');
    ck_assert_int_eq(gpuipc_json_finish(&j), 0);
    close_doc(f);
    ck_assert_msg(js_valid(doc, why, sizeof(why)), "%s:\n%s", why, doc);
    ck_assert_msg(strstr(doc, "\"schema_version\": 1,") != NULL, "%s", doc);
    ck_assert_msg(strstr(doc, "\"negative\": -42") != NULL, "%s", doc);
    ck_assert_msg(strstr(doc, "\"none\": null") != NULL, "%s", doc);
    ck_assert_msg(strstr(doc, "\"empty\": []") != NULL, "%s", doc);
    ck_assert_msg(strstr(doc, "\"quote \\\" backslash \\\\ newline \\n tab \\t bell \\u0007\"") !=
                  NULL, "%s", doc);
    free(doc);
}
END_TEST

START_TEST(test_json_reports_unbalanced_nesting)
{
    FILE *f = open_doc();
    gpuipc_json j;

    gpuipc_json_init(&j, &sink);
    gpuipc_json_object(&j, NULL);
    gpuipc_json_array(&j, "open");
    gpuipc_json_end(&j, ']');
    ck_assert_int_eq(gpuipc_json_finish(&j), -1); /* the object was never closed */
    close_doc(f);
    free(doc);
    f = open_doc();
    gpuipc_json_init(&j, &sink);
    gpuipc_json_end(&j, '}');
    ck_assert_int_eq(gpuipc_json_finish(&j), -1); /* closed what was never opened */
    close_doc(f);
    free(doc);
}
END_TEST

/* A string longer than the sink's buffer goes out whole, in pieces; a
 * write that fails makes the document count as not written. */
START_TEST(test_json_writes_past_its_buffer_and_says_a_failed_write)
{
    static char big[40000];
    FILE *f = open_doc();
    gpuipc_json j;
    char why[128];
    int fd;

    memset(big, 'x', sizeof(big) - 1);
    gpuipc_json_init(&j, &sink);
    gpuipc_json_object(&j, NULL);
    gpuipc_json_string(&j, "big", big);
    gpuipc_json_double(&j, "third", 1.0 / 3);
    gpuipc_json_end(&j, '}');
    ck_assert_int_eq(gpuipc_json_finish(&j), 0);
    close_doc(f);
    ck_assert_msg(js_valid(doc, why, sizeof(why)), "%s", why);
    ck_assert_uint_eq(doc_len, sizeof(big) - 1 + strlen("{\n  \"big\": \"\",\n  \"third\": "
                                                      "0.333333333333333\n}\n"));
    free(doc);
    if ((fd = open("/dev/full", O_WRONLY | O_CLOEXEC)) < 0)
        return;
    gpuipc_sink_init(&sink, fd, sink_mem, sizeof(sink_mem));
    gpuipc_json_init(&j, &sink);
    gpuipc_json_object(&j, NULL);
    gpuipc_json_end(&j, '}');
    ck_assert_int_eq(gpuipc_json_finish(&j), -1);
    ck_assert_int_eq(errno, ENOSPC);
    close(fd);
}
END_TEST

static const char *const not_json[] = {
    "", "{", "{\"a\" 1}", "{\"a\": 1,}", "[1 2]", "\"unterminated", "01", "1.", "{'a': 1}",
    "\"bad \\q escape\"", "[1] [2]", "nul", "\"raw\ttab\"",
};

START_TEST(test_json_validator_rejects_what_is_not_json)
{
    char why[128];

    ck_assert_msg(!js_valid(not_json[_i], why, sizeof(why)), "accepted '%s'",
                  not_json[_i]);
    ck_assert_msg(why[0] != '\0', "no reason for '%s'", not_json[_i]);
}
END_TEST

START_TEST(test_json_validator_accepts_json)
{
    char why[128];

    ck_assert_msg(js_valid(" {\"a\": [1, -2.5e3, true, false, null, \"\\u00e9\"]} ", why,
                                sizeof(why)), "%s", why);
}
END_TEST

/* gpuipc_sbuf_double(v) against snprintf's "%.15g": the bytes of both, or
 * a message naming v where they differ. Returns 1 where they are the same. */
static int same_as_printf(double v, char *msg, size_t len)
{
    char mem[64], ref[64];
    gpuipc_sbuf b;
    uint64_t bits;

    gpuipc_sbuf_init(&b, mem, sizeof(mem));
    gpuipc_sbuf_double(&b, v);
    snprintf(ref, sizeof(ref), "%.15g", v);
    if (strcmp(mem, ref) == 0 && !b.dropped)
        return 1;
    memcpy(&bits, &v, sizeof(bits));
    snprintf(msg, len, "%a (bits 0x%016llx): \"%s\", printf \"%s\"", v,
             (unsigned long long)bits, mem, ref);
    return 0;
}

static const double double_edges[] = {
    0.0, -0.0, 1e-5, 1e-4, 0.1, 0.5, 1.5, 30, 123456789012345.0, 1e15, 1e16, 1e300,
    5e-324, DBL_MAX, -DBL_MAX, DBL_MIN, 2.2250738585072009e-308, 1e-300, 1e-320,
    0.30000000000000004, 0.1 + 0.2, 1.0 / 3, 2.0 / 3, -1.25e-7, 9.5, 99999.5,
    /* Ties at the 15th digit, exact in binary: to even, either way. */
    100000000000000.5, 100000000000001.5, 100000000000002.5, 999999999999999.5,
    0.000123456789012345, 9.99999999999999e-5, 9.999999999999995e-5, 0.0001 - 1e-20,
    999999999999999.0, 9999999999999995.0, 9.999999999999995e14, 1e15 - 0.5, 1e15 + 1,
    1e22, 1e23, 123456.789, 1e-7, 4503599627370496.5, 9007199254740993.0, 1e100, 1e-100,
    3.14159265358979, 2.718281828459045, 65536, 4294967296.0, 18446744073709551616.0,
};

START_TEST(test_sbuf_double_edges)
{
    char msg[256];

    ck_assert_msg(same_as_printf(double_edges[_i], msg, sizeof(msg)), "%s", msg);
}
END_TEST

/* What JSON cannot hold, as printf writes it (json.c writes null instead). */
START_TEST(test_sbuf_double_not_finite)
{
    char msg[256];

    ck_assert_msg(same_as_printf(INFINITY, msg, sizeof(msg)), "%s", msg);
    ck_assert_msg(same_as_printf(-INFINITY, msg, sizeof(msg)), "%s", msg);
    ck_assert_msg(same_as_printf(NAN, msg, sizeof(msg)), "%s", msg);
}
END_TEST

/* xorshift64: the same pseudo-random doubles on every run. */
static uint64_t next_bits(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* 1,100,000 pseudo-random doubles: 200,000 of any bit pattern (every
 * magnitude, subnormals included), 800,000 of a 53-bit fraction times a
 * power of ten from 1e-20 to 1e20, and 100,000 halves and quarters next to
 * 15 digits (ties and near-ties), each byte for byte as printf writes it. */
START_TEST(test_sbuf_double_random)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    char msg[256];
    long i, bad = 0, n = 0;
    double v;

    for (i = 0; i < 1100000; i++) {
        uint64_t r = next_bits(&s);

        if (i < 200000) {
            memcpy(&v, &r, sizeof(v));
            if (!isfinite(v))
                continue;
        } else if (i < 1000000) {
            v = (double)(r >> 11) / 9007199254740992.0 * pow(10, (int)(r % 41) - 20);
        } else {
            v = (double)(r % 1000000000000000ull) + (double)(r >> 62) * 0.25;
            v = ldexp(v, (int)(r >> 58 & 7) - 3);
        }
        n++;
        if (!same_as_printf(r & 1 ? -v : v, msg, sizeof(msg)) && bad++ == 0)
            ck_assert_msg(0, "%s", msg);
    }
    ck_assert_int_eq(bad, 0);
    ck_assert_int_gt(n, 1000000);
}
END_TEST

START_TEST(test_sbuf_int)
{
    static const int64_t v[] = {0, 1, -1, 42, -42, INT64_MAX, INT64_MIN};
    char mem[32], ref[32];
    gpuipc_sbuf b;
    size_t i;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        gpuipc_sbuf_init(&b, mem, sizeof(mem));
        gpuipc_sbuf_int(&b, v[i]);
        snprintf(ref, sizeof(ref), "%lld", (long long)v[i]);
        ck_assert_str_eq(mem, ref);
    }
}
END_TEST

Suite *json_suite(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("writer");

    tcase_add_test(tc, test_json_writes_a_parsable_document);
    tcase_add_test(tc, test_json_reports_unbalanced_nesting);
    tcase_add_test(tc, test_json_writes_past_its_buffer_and_says_a_failed_write);
    tcase_add_loop_test(tc, test_json_validator_rejects_what_is_not_json, 0,
                        (int)(sizeof(not_json) / sizeof(not_json[0])));
    tcase_add_test(tc, test_json_validator_accepts_json);
    suite_add_tcase(s, tc);
    tc = tcase_create("numbers");
    tcase_add_test(tc, test_sbuf_int);
    tcase_add_test(tc, test_sbuf_double_not_finite);
    tcase_add_loop_test(tc, test_sbuf_double_edges, 0,
                        (int)(sizeof(double_edges) / sizeof(double_edges[0])));
    tcase_add_test(tc, test_sbuf_double_random); /* about 1.5 s */
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}
