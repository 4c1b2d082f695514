/* SPDX-License-Identifier: Apache-2.0 */
/* test_options.c: the command line and the choice of mechanisms. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "mech/memfd.h"
#include "session/mech.h"
#include "app/options.h"
#include "suites.h"

static int parse(gpuipc_options *o, gpuipc_err *e, const char *a1, const char *a2)
{
    char *argv[4] = {(char *)"gpuipc_test", (char *)a1, (char *)a2, NULL};
    int argc = 1 + (a1 != NULL) + (a2 != NULL);

    return gpuipc_options_parse(o, argc, argv, e);
}

START_TEST(test_options_defaults)
{
    gpuipc_options o;
    gpuipc_err e;

    ck_assert_int_eq(parse(&o, &e, NULL, NULL), 0);
    ck_assert_uint_eq(o.size, 64ull << 20);
    ck_assert_uint_eq(o.timeout_ns, 30ull * 1000000000ull);
    ck_assert_int_eq(o.device, 0);
    ck_assert_ptr_null(o.only);
    ck_assert_int_eq(o.level, GPUIPC_LOG_NORMAL);
    ck_assert_int_eq(o.list + o.help + o.version, 0);
}
END_TEST

START_TEST(test_options_parses_every_option)
{
    char *argv[] = {"gpuipc_test", "--size", "4G", "--device=1", "--only", "memfd,vmm",
                    "--timeout", "500ms", "--verbose", "--list", NULL};
    gpuipc_options o;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_options_parse(&o, 10, argv, &e), 0);
    ck_assert_uint_eq(o.size, 4ull << 30);
    ck_assert_int_eq(o.device, 1);
    ck_assert_str_eq(o.only, "memfd,vmm");
    ck_assert_uint_eq(o.timeout_ns, 500000000ull);
    ck_assert_int_eq(o.level, GPUIPC_LOG_VERBOSE);
    ck_assert_int_eq(o.list, 1);
}
END_TEST

/* --json takes its file as the next word or after '=', and stays a bare
 * flag for --list when another option follows. */
START_TEST(test_options_bench_and_json_file)
{
    char *a[] = {"gpuipc_test", "--bench", "--json", "out.json", "--iters", "7", NULL};
    char *b[] = {"gpuipc_test", "--list", "--json", "-q", NULL};
    char *c[] = {"gpuipc_test", "--bench", "--json=x.json", NULL};
    gpuipc_options o;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_options_parse(&o, 6, a, &e), 0);
    ck_assert_int_eq(o.bench, 1);
    ck_assert_str_eq(o.json_path, "out.json");
    ck_assert_uint_eq(o.iters, 7);
    ck_assert_int_eq(gpuipc_options_parse(&o, 4, b, &e), 0);
    ck_assert_int_eq(o.json, 1);
    ck_assert_str_eq(o.json_path, "-"); /* --list: the report on standard output */
    ck_assert_int_eq(o.level, GPUIPC_LOG_QUIET);
    ck_assert_int_eq(gpuipc_options_parse(&o, 3, c, &e), 0);
    ck_assert_str_eq(o.json_path, "x.json");
    ck_assert_uint_eq(o.iters, 20); /* the default */
}
END_TEST

START_TEST(test_options_min_gbps_with_pairs)
{
    gpuipc_options o;
    gpuipc_err e;
    char *a[] = {"gpuipc_test", "--pairs", "all", "--min-gbps", "12.5", NULL};

    ck_assert_int_eq(gpuipc_options_parse(&o, 5, a, &e), 0);
    ck_assert_double_eq(o.min_gbps, 12.5);
    ck_assert_int_eq(parse(&o, &e, "--pairs=0:1", NULL), 0);
    ck_assert_double_eq(o.min_gbps, 0); /* none by default */
}
END_TEST

/* Below 8M a pass costs what a launch does: no link figures to judge. */
START_TEST(test_options_min_gbps_needs_a_size_the_link_shows_in)
{
    gpuipc_options o;
    gpuipc_err e;
    char *a[] = {"gpuipc_test", "--pairs", "all", "--min-gbps", "100", "--size", "1M", NULL};
    char *b[] = {"gpuipc_test", "--pairs", "all", "--min-gbps", "100", "--size", "8M", NULL};

    ck_assert_int_eq(gpuipc_options_parse(&o, 7, a, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, "--min-gbps: --size 1048576 bytes is below the 8M") != NULL,
                  "%s", e.msg);
    ck_assert_int_eq(gpuipc_options_parse(&o, 7, b, &e), 0);
}
END_TEST

/* --pairs ring: the one-shot run with the ring, not a mode of its own; with
 * --device too (the ring over the GPUs it names). */
START_TEST(test_options_pairs_ring_is_the_one_shot_run)
{
    gpuipc_options o;
    gpuipc_err e;

    ck_assert_int_eq(parse(&o, &e, "--pairs=ring", NULL), 0);
    ck_assert_int_eq(o.ring, 1);
    ck_assert_ptr_null(o.pairs);
    ck_assert_str_eq(gpuipc_options_mode_name(&o), "one-shot");
    ck_assert_str_eq(gpuipc_options_devices(&o), "all");
    ck_assert_int_eq(parse(&o, &e, "--pairs=ring", "--device=0,2"), 0);
    ck_assert_str_eq(gpuipc_options_devices(&o), "0,2");
    ck_assert_int_eq(parse(&o, &e, "--pairs=all", NULL), 0);
    ck_assert_int_eq(o.ring, 0); /* every ordered pair by default */
}
END_TEST

/* A list's form is checked at parse time, its ordinals once the GPUs are
 * counted: a list longer than GPUIPC_PAIRS_MAX, which a node of 40 GPUs
 * runs, is no usage error on any machine, and an ordinal is not held to a
 * machine the parse has not seen. */
START_TEST(test_options_pairs_list_form_only_at_parse)
{
    static char list[16384];
    gpuipc_options o;
    gpuipc_err e;
    size_t used = 0, n = 0;
    int a, b;

    snprintf(list, sizeof(list), "--pairs=");
    used = strlen(list);
    for (a = 0; a < 40 && n < 1100; a++)
        for (b = 0; b < 40 && n < 1100; b++)
            if (a != b) {
                used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%d:%d",
                                         n ? "," : "", a, b);
                n++;
            }
    ck_assert_uint_lt(used, sizeof(list));
    ck_assert_msg(parse(&o, &e, list, NULL) == 0, "1100 pairs: %s", e.msg);
    ck_assert_msg(parse(&o, &e, "--pairs=0:2000", NULL) == 0, "0:2000: %s", e.msg);
    ck_assert_int_eq(parse(&o, &e, "--pairs=0:1,0:1", NULL), -EINVAL);
    ck_assert_int_eq(parse(&o, &e, "--pairs=99999999999999999999:1", NULL), -EINVAL);
    ck_assert_msg(strstr(e.msg, "is neither 'all', 'ring' nor a list") != NULL, "%s", e.msg);
}
END_TEST

START_TEST(test_options_expect_gpus)
{
    gpuipc_options o;
    gpuipc_err e;

    ck_assert_int_eq(parse(&o, &e, "--expect-gpus=8", NULL), 0);
    ck_assert_int_eq(o.expect_gpus, 8);
    ck_assert_int_eq(parse(&o, &e, "-q", NULL), 0);
    ck_assert_int_eq(o.expect_gpus, 0); /* none by default */
}
END_TEST

/* --deadline: 50 s for the one-shot run only, unless given; none turns it off. */
START_TEST(test_options_deadline)
{
    static const char *const no_default[] = {"--repeat=2", "--bench", "--fault-matrix",
                                             "--serve=@x", "--connect=@x", "--list"};
    gpuipc_options o;
    gpuipc_err e;
    size_t i;

    ck_assert_int_eq(parse(&o, &e, NULL, NULL), 0);
    ck_assert_uint_eq(o.deadline_ns, 50ull * 1000000000ull);
    ck_assert_int_eq(parse(&o, &e, "--deadline=2.5", NULL), 0);
    ck_assert_uint_eq(o.deadline_ns, 2500ull * 1000000ull);
    ck_assert_int_eq(parse(&o, &e, "--deadline", "none"), 0);
    ck_assert_uint_eq(o.deadline_ns, 0);
    for (i = 0; i < sizeof(no_default) / sizeof(no_default[0]); i++) {
        ck_assert_int_eq(parse(&o, &e, no_default[i], NULL), 0);
        ck_assert_msg(o.deadline_ns == 0, "%s: a deadline by default", no_default[i]);
    }
    ck_assert_int_eq(parse(&o, &e, "--repeat=2", "--deadline=9"), 0);
    ck_assert_uint_eq(o.deadline_ns, 9ull * 1000000000ull);
}
END_TEST

START_TEST(test_options_short_flags)
{
    gpuipc_options o;
    gpuipc_err e;

    ck_assert_int_eq(parse(&o, &e, "-q", NULL), 0);
    ck_assert_int_eq(o.level, GPUIPC_LOG_QUIET);
    ck_assert_int_eq(parse(&o, &e, "-h", NULL), 0);
    ck_assert_int_eq(o.help, 1);
    ck_assert_int_eq(parse(&o, &e, "-V", NULL), 0);
    ck_assert_int_eq(o.version, 1);
}
END_TEST

static const struct {
    const char *a1, *a2, *reason;
} bad[] = {
    {"--size", "banana", "--size: 'banana' is not a size"},
    {"--size", "0", "--size: '0' is zero bytes"},
    {"--size", "20T", "--size: '20T' is larger than the 16 TiB limit"},
    {"--device", "-1", "--device: '-1' is not an ordinal or a range a-b"},
    {"--device", "0,0", "--device: GPU 0 is named twice"},
    {"--device=all", "--bench", "--device all: --bench works on one GPU"},
    {"--device=0", "--pairs=all", "--device: does not combine with --pairs"},
    {"--device", "gpu0", "--device: 'gpu0' is not an ordinal or a range a-b"},
    {"--timeout", "never", "--timeout: 'never' is not a duration"},
    {"--timeout", "0", "--timeout: '0' is shorter than 1 ms"},
    {"--frobnicate", NULL, "unknown option '--frobnicate'"},
    {"-x", NULL, "unknown option '-x'"},
    {"--size", NULL, "--size: missing value"},
    {"extra", NULL, "unexpected argument 'extra'"},
    {"--quiet", "--verbose", "--quiet and --verbose contradict each other"},
    {"--json", NULL, "--json: give a FILE (or - for standard output)"},
    {"--brief", "--json=-", "--json - and --brief: both want standard output"},
    {"--iters", "5", "--iters: only with --bench"},
    {"--bench", "--json", "--json: --bench writes its JSON to a file"},
    {"--bench", "--iters=0", "--iters: '0' is not an iteration count from 1 to 1000"},
    {"--bench", "--iters=1001", "--iters: '1001' is not an iteration count from 1 to 1000"},
    {"--bench", "--repeat=2", "--bench: does not combine with --repeat"},
    {"--bench", "--pairs=all", "--bench: does not combine with --pairs"},
    {"--bench", "--list", "--bench: does not combine with --list"},
    {"--bench", "--json=", "--json: the file name is empty"},
    {"--chunks", "4097x", "--chunks: '4097x' is not a chunk count from 1 to 65536"},
    {"--min-gbps", "100", "--min-gbps: only with --pairs"},
    {"--pairs=ring", "--min-gbps=100", "--min-gbps: only with --pairs all or a list"},
    {"--pairs=ring", "--bench", "--pairs ring: only for the forked run over several GPUs"},
    {"--pairs=ring", "--list", "--pairs ring: only for the forked run over several GPUs"},
    {"--pairs=ring", "--serve=@x", "--pairs ring: only for the forked run over several GPUs"},
    {"--pairs=ring", "--ranks", "--ranks: does not combine with --pairs"},
    {"--pairs=ring", "--pairs=all", "--pairs given twice ('ring', then 'all')"},
    {"--pairs", "banana", "--pairs: 'banana' is neither 'all', 'ring' nor a list"},
    {"--pairs", "0:0", "--pairs: 0:0 is one device, not a pair"},
    {"--min-gbps", "fast", "--min-gbps: 'fast' is not a speed in GB/s"},
    {"--min-gbps", "0", "--min-gbps: '0' is not a speed in GB/s"},
    {"--min-gbps", "-5", "--min-gbps: '-5' is not a speed in GB/s"},
    {"--min-gbps", "nan", "--min-gbps: 'nan' is not a speed in GB/s"},
    {"--min-gbps", "1e7", "--min-gbps: '1e7' is not a speed in GB/s"},
    {"--min-gbps", "12GB", "--min-gbps: '12GB' is not a speed in GB/s"},
    {"--expect-gpus", "0", "--expect-gpus: '0' is not a GPU count from 1 to 1024"},
    {"--expect-gpus", "eight", "--expect-gpus: 'eight' is not a GPU count from 1 to 1024"},
    {"--expect-gpus=2", "--list", "--expect-gpus: does not combine with --list"},
    {"--expect-gpus=2", "--connect=@x", "--connect: --expect-gpus is the producer's choice"},
    {"--quiet=3", NULL, "--quiet takes no value (given '3')"},
    {"--only=memfd", "--only=memfd-pidfd", "--only given twice ('memfd', then 'memfd-pidfd')"},
    {"--require=vmm", "--require=memfd", "--require given twice ('vmm', then 'memfd')"},
    {"--pairs=all", "--pairs=0:1", "--pairs given twice ('all', then '0:1')"},
    {"--help=x", NULL, "--help takes no value (given 'x')"},
    {"--frobnicate=1", NULL, "unknown option '--frobnicate'"},
    {"--deadline", "soon", "--deadline: 'soon' is not a duration"},
    {"--deadline", "0", "--deadline: '0' is shorter than 1 ms"},
    {"--deadline=5", "--list", "--deadline: does not combine with --list"},
};

START_TEST(test_options_rejects_bad_input)
{
    gpuipc_options o;
    gpuipc_err e;

    ck_assert_int_eq(parse(&o, &e, bad[_i].a1, bad[_i].a2), -EINVAL);
    /* The reason starts with the option and what is wrong; a hint may follow. */
    ck_assert_msg(strncmp(e.msg, bad[_i].reason, strlen(bad[_i].reason)) == 0,
                  "reason '%s' does not start with '%s'", e.msg, bad[_i].reason);
}
END_TEST

static int no_probe(struct gpuipc_scenario *sc, gpuipc_err *why)
{
    (void)sc;
    (void)why;
    return 0;
}

static const gpuipc_mech fake_a = {.name = "alpha", .by_default = 1, .probe = no_probe};
static const gpuipc_mech fake_b = {.name = "beta", .by_default = 0, .probe = no_probe};
static const gpuipc_mech fake_c = {.name = "gamma", .by_default = 1, .probe = no_probe};
static const gpuipc_mech *const fakes[] = {&fake_a, &fake_b, &fake_c};

START_TEST(test_options_selects_the_default_set)
{
    const gpuipc_mech *sel[3];
    size_t n = 99;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_mech_select(fakes, 3, NULL, sel, &n, &e), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_ptr_eq(sel[0], &fake_a);
    ck_assert_ptr_eq(sel[1], &fake_c);
}
END_TEST

START_TEST(test_options_selects_named_mechanisms_in_order)
{
    const gpuipc_mech *sel[3];
    size_t n = 0;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_mech_select(fakes, 3, "gamma,beta", sel, &n, &e), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_ptr_eq(sel[0], &fake_c);
    ck_assert_ptr_eq(sel[1], &fake_b);
}
END_TEST

START_TEST(test_options_rejects_bad_mechanism_lists)
{
    const gpuipc_mech *sel[3];
    size_t n;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_mech_select(fakes, 3, "alpha,omicron", sel, &n, &e), -EINVAL);
    ck_assert_str_eq(e.msg, "unknown mechanism 'omicron' (known: alpha, beta, gamma)");
    /* A typo gets the name it was most likely meant for, not the list. */
    ck_assert_int_eq(gpuipc_mech_select(fakes, 3, "alpha,gama", sel, &n, &e), -EINVAL);
    ck_assert_str_eq(e.msg, "unknown mechanism 'gama': did you mean 'gamma'? (gpuipc_test "
                            "--list names them all)");
    ck_assert_int_eq(gpuipc_mech_select(fakes, 3, "btea", sel, &n, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, "did you mean 'beta'?") != NULL, "reason: %s", e.msg);
    ck_assert_int_eq(gpuipc_mech_select(fakes, 3, "alp", sel, &n, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, "did you mean 'alpha'?") != NULL, "reason: %s", e.msg);
    ck_assert_int_eq(gpuipc_mech_select(fakes, 3, "alpha,,beta", sel, &n, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, "empty mechanism name") != NULL, "reason: %s", e.msg);
    ck_assert_int_eq(gpuipc_mech_select(fakes, 3, "beta,beta", sel, &n, &e), -EINVAL);
    ck_assert_str_eq(e.msg, "mechanism 'beta' is named twice");
}
END_TEST

START_TEST(test_options_pairs_expand_all_and_lists)
{
    int p[GPUIPC_PAIRS_MAX][2];
    gpuipc_err e;
    size_t n;

    ck_assert_int_eq(gpuipc_options_pairs("all", 2, p, GPUIPC_PAIRS_MAX, &n, &e), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert(p[0][0] == 0 && p[0][1] == 1 && p[1][0] == 1 && p[1][1] == 0);
    ck_assert_int_eq(gpuipc_options_pairs("all", 8, p, GPUIPC_PAIRS_MAX, &n, &e), 0);
    ck_assert_uint_eq(n, 56);
    /* In phases: the first eight are phase 1 (each GPU to the next), the
     * next eight phase 2 (each to the one two after it). */
    ck_assert(p[0][0] == 0 && p[0][1] == 1 && p[7][0] == 7 && p[7][1] == 0);
    ck_assert(p[8][0] == 0 && p[8][1] == 2 && p[15][0] == 7 && p[15][1] == 1);
    ck_assert_int_eq(gpuipc_options_pairs("all", 33, p, GPUIPC_PAIRS_MAX, &n, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, "--pairs all: 33 GPUs make more than 1024 pairs") != NULL,
                  "%s", e.msg);
    ck_assert_int_eq(gpuipc_options_pairs("2:0,0:3", 4, p, GPUIPC_PAIRS_MAX, &n, &e), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert(p[0][0] == 2 && p[0][1] == 0 && p[1][0] == 0 && p[1][1] == 3);
}
END_TEST

static const struct {
    const char *text;
    int ngpus;
    const char *reason;
} bad_pairs[] = {
    {"all", 1, "this machine has 1 GPU; pairs need two or more"},
    {"0:1", 0, "this machine has 0 GPUs"},
    {"0:2", 2, "0:2 names a GPU this machine does not have (ordinals 0 to 1)"},
    {"1:1", 2, "1:1 is one device, not a pair"},
    {"0:1,0:1", 2, "0:1 is named twice"},
    {"0-1", 2, "'0-1' is neither 'all', 'ring' nor a list"},
    {"0:1,", 2, "is neither 'all', 'ring' nor a list"},
    {"", 2, "is neither 'all', 'ring' nor a list"},
    {"-1:0", 2, "is neither 'all', 'ring' nor a list"},
};

START_TEST(test_options_pairs_refuse_bad_lists)
{
    int p[GPUIPC_PAIRS_MAX][2];
    gpuipc_err e;
    size_t n;

    ck_assert_int_eq(gpuipc_options_pairs(bad_pairs[_i].text, bad_pairs[_i].ngpus, p,
                                          GPUIPC_PAIRS_MAX, &n, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, bad_pairs[_i].reason) != NULL, "'%s': %s", bad_pairs[_i].text,
                  e.msg);
}
END_TEST

/* The registry's rules, over copies of the memfd tables: the good one
 * passes, and each broken copy is refused with what is wrong. */
START_TEST(test_options_registry_rules)
{
    gpuipc_mech ref = gpuipc_mech_memfd, chunks = gpuipc_mech_memfd_chunks, broken;
    const gpuipc_mech *all[2] = {&ref, &chunks};
    static const struct {
        const char *name, *says;
    } names[] = {
        {"a-name-of-thirty-two-characters!", "is not 1 to 31 bytes"},
        {"a-name-of-32-characters-exactly-", "is not 1 to 31 bytes"},
        {"Memfd", "is not 1 to 31 bytes of a-z"},
        {"", "is not 1 to 31 bytes"},
        {"memfd-chunks", "registered twice"},
    };
    gpuipc_err e;
    size_t i;

    ref.reference = 1;
    ck_assert_int_eq(gpuipc_mech_check_registry(all, 2, &e), 0);
    broken = chunks;
    all[1] = &broken;
    broken.name = "a-name-of-thirty-one-characters";
    ck_assert_int_eq(gpuipc_mech_check_registry(all, 2, &e), 0);
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        broken = chunks;
        ref.name = i == 4 ? "memfd-chunks" : "memfd";
        broken.name = i == 4 ? "memfd-chunks" : names[i].name;
        ck_assert_int_eq(gpuipc_mech_check_registry(all, 2, &e), -EINVAL);
        ck_assert_msg(strstr(e.msg, names[i].says), "'%s': %s", names[i].name, e.msg);
    }
    ref.name = "memfd";
    broken = chunks;
    broken.import_more = NULL;
    ck_assert_int_eq(gpuipc_mech_check_registry(all, 2, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, "'memfd-chunks' lacks its summary or an operation"), "%s", e.msg);
    broken = chunks;
    broken.reference = 1;
    ck_assert_int_eq(gpuipc_mech_check_registry(all, 2, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, "2 reference mechanisms"), "%s", e.msg);
    ref.reference = 0;
    broken.reference = 0;
    ck_assert_int_eq(gpuipc_mech_check_registry(all, 2, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, "0 reference mechanisms"), "%s", e.msg);
}
END_TEST

Suite *options_suite(void)
{
    Suite *s = suite_create("options");
    TCase *tc = tcase_create("options");

    tcase_add_test(tc, test_options_defaults);
    tcase_add_test(tc, test_options_parses_every_option);
    tcase_add_test(tc, test_options_short_flags);
    tcase_add_test(tc, test_options_expect_gpus);
    tcase_add_test(tc, test_options_pairs_ring_is_the_one_shot_run);
    tcase_add_test(tc, test_options_min_gbps_needs_a_size_the_link_shows_in);
    tcase_add_test(tc, test_options_pairs_list_form_only_at_parse);
    tcase_add_test(tc, test_options_deadline);
    tcase_add_test(tc, test_options_bench_and_json_file);
    tcase_add_loop_test(tc, test_options_rejects_bad_input, 0, (int)(sizeof(bad) / sizeof(bad[0])));
    tcase_add_test(tc, test_options_selects_the_default_set);
    tcase_add_test(tc, test_options_selects_named_mechanisms_in_order);
    tcase_add_test(tc, test_options_rejects_bad_mechanism_lists);
    tcase_add_test(tc, test_options_registry_rules);
    tcase_add_test(tc, test_options_pairs_expand_all_and_lists);
    tcase_add_test(tc, test_options_min_gbps_with_pairs);
    tcase_add_loop_test(tc, test_options_pairs_refuse_bad_lists, 0,
                        (int)(sizeof(bad_pairs) / sizeof(bad_pairs[0])));
    suite_add_tcase(s, tc);
    return s;
}
