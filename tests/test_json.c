/* SPDX-License-Identifier: Apache-2.0 */
/* test_json.c: the JSON writer's documents parse, escape what they must,
 * and an unbalanced document is reported; the tests' JSON reader
 * (tests/jschema.c) rejects what is not JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "helpers.h"
#include "suites.h"

static char *doc;
static size_t doc_len;

static FILE *open_doc(void)
{
    FILE *f = open_memstream(&doc, &doc_len);

    ck_assert_ptr_nonnull(f);
    return f;
}

START_TEST(test_json_writes_a_parsable_document)
{
    FILE *f = open_doc();
    gpuipc_json j;
    char why[128];

    gpuipc_json_init(&j, f);
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
    fclose(f);
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

    gpuipc_json_init(&j, f);
    gpuipc_json_object(&j, NULL);
    gpuipc_json_array(&j, "open");
    gpuipc_json_end(&j, ']');
    ck_assert_int_eq(gpuipc_json_finish(&j), -1); /* the object was never closed */
    fclose(f);
    free(doc);
    f = open_doc();
    gpuipc_json_init(&j, f);
    gpuipc_json_end(&j, '}');
    ck_assert_int_eq(gpuipc_json_finish(&j), -1); /* closed what was never opened */
    fclose(f);
    free(doc);
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

Suite *json_suite(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("writer");

    tcase_add_test(tc, test_json_writes_a_parsable_document);
    tcase_add_test(tc, test_json_reports_unbalanced_nesting);
    tcase_add_loop_test(tc, test_json_validator_rejects_what_is_not_json, 0,
                        (int)(sizeof(not_json) / sizeof(not_json[0])));
    tcase_add_test(tc, test_json_validator_accepts_json);
    suite_add_tcase(s, tc);
    return s;
}
