/* SPDX-License-Identifier: Apache-2.0 */
/* test_link.c: --pairs' link figures (session/link.c): the passes a size
 * takes, the sums a batch must reach, where the memory must lie, the median
 * batch, the verdict on the consumer's figures, --min-gbps, and the figures
 * as TIMES values; on figures whose answers are known. */
#include <string.h>

#include "session/link.h"
#include "suites.h"

#define MIB (1ull << 20)
#define BYTES (64 * MIB)
#define WORDS (BYTES / 8)
#define PASSES 16 /* 1 GiB over 64 MiB */

/* One pass of a pattern over BYTES: the words and a digest. */
static const gpuipc_written once = {.words = WORDS, .digest = 0x9e3779b97f4a7c15ull};

/* A batch time in ns that moves PASSES x BYTES at gbps. */
static uint64_t ns_at(double gbps)
{
    return (uint64_t)((double)PASSES * BYTES / gbps + 0.5);
}

/* Honest figures over BYTES: GPU 1 reading GPU 0's memory, every run's
 * sums what its passes give, the batches at the given rates. */
static void honest(gpuipc_link_figures *f, double read, double write, double local)
{
    const double rate[GPUIPC_LINK_RUNS] = {read, write, local};
    uint64_t total = (uint64_t)PASSES * GPUIPC_LINK_BATCHES;
    unsigned i;
    int kind;

    memset(f, 0, sizeof(*f));
    f->passes = PASSES;
    f->batches = GPUIPC_LINK_BATCHES;
    f->bytes = BYTES;
    f->pointer_ordinal = 0;
    f->home_ordinal = 0;
    f->own_ordinal = 1;
    f->wrote = 1;
    for (kind = 0; kind < GPUIPC_LINK_RUNS; kind++) {
        f->run[kind].words = total * once.words;
        f->run[kind].digest = total * once.digest;
        for (i = 0; i < GPUIPC_LINK_BATCHES; i++)
            f->run[kind].ns[i] = ns_at(rate[kind]);
    }
}

START_TEST(test_link_batch_moves_a_gib_in_at_least_four_passes)
{
    ck_assert_uint_eq(gpuipc_link_passes(64 * MIB), 16);
    ck_assert_uint_eq(gpuipc_link_passes(3 * MIB), 342); /* rounded up: 342 x 3 MiB >= 1 GiB */
    ck_assert_uint_eq(gpuipc_link_passes(2 * MIB), 512);
    ck_assert_uint_eq(gpuipc_link_passes(512 * MIB), GPUIPC_LINK_MIN_PASSES);
    ck_assert_uint_eq(gpuipc_link_passes(16ull << 30), GPUIPC_LINK_MIN_PASSES);
    ck_assert_uint_eq(gpuipc_link_passes(16), GPUIPC_LINK_MAX_PASSES);
    ck_assert_uint_eq(gpuipc_link_passes(0), 0);
}
END_TEST

START_TEST(test_link_sums_of_honest_passes_hold)
{
    char why[256] = "";

    ck_assert_msg(gpuipc_link_check_sums("read", PASSES, &once, PASSES * WORDS,
                                         PASSES * once.digest, 0, why, sizeof(why)) == 0,
                  "%s", why);
}
END_TEST

/* A kernel that read nothing gives no figure, whatever its time. */
START_TEST(test_link_sums_refuse_a_batch_that_read_nothing)
{
    char why[256];

    ck_assert_int_eq(gpuipc_link_check_sums("read", PASSES, &once, 0, 0, 0, why, sizeof(why)),
                     -1);
    ck_assert_msg(strstr(why, "read: the kernels counted 0 words, but 16 passes over 8388608 "
                              "words are 134217728") != NULL, "%s", why);
}
END_TEST

/* One pass short of a batch: the figure would claim bytes never moved. */
START_TEST(test_link_sums_refuse_a_pass_short)
{
    char why[256];

    ck_assert_int_eq(gpuipc_link_check_sums("read", PASSES, &once, (PASSES - 1) * WORDS,
                                            (PASSES - 1) * once.digest, 0, why, sizeof(why)),
                     -1);
    ck_assert_msg(strstr(why, "counted 125829120 words") != NULL, "%s", why);
}
END_TEST

START_TEST(test_link_sums_refuse_mismatches)
{
    char why[256];

    ck_assert_int_eq(gpuipc_link_check_sums("read", PASSES, &once, PASSES * WORDS,
                                            PASSES * once.digest, 3, why, sizeof(why)),
                     -1);
    ck_assert_msg(strstr(why, "3 words read were unlike the pattern") != NULL, "%s", why);
}
END_TEST

/* The right count of words, but other bytes: the digest tells. */
START_TEST(test_link_sums_refuse_a_wrong_digest)
{
    char why[256];

    ck_assert_int_eq(gpuipc_link_check_sums("read", PASSES, &once, PASSES * WORDS,
                                            PASSES * once.digest + 1, 0, why, sizeof(why)),
                     -1);
    ck_assert_msg(strstr(why, "they did not move these bytes") != NULL, "%s", why);
}
END_TEST

/* The kernels add in 64 bits and wrap; so does the expected sum. */
START_TEST(test_link_sums_wrap_as_the_kernels_do)
{
    const gpuipc_written big = {.words = 2, .digest = 0xfedcba9876543210ull};
    uint64_t sum = 0;
    char why[256] = "";
    unsigned i;

    for (i = 0; i < 7; i++)
        sum += big.digest;
    ck_assert_msg(gpuipc_link_check_sums("write", 7, &big, 14, sum, 0, why, sizeof(why)) == 0,
                  "%s", why);
}
END_TEST

START_TEST(test_link_sums_refuse_a_scenario_that_wrote_nothing)
{
    const gpuipc_written none = {0};
    char why[256];

    ck_assert_int_eq(gpuipc_link_check_sums("read", PASSES, &none, 0, 0, 0, why, sizeof(why)),
                     -1);
    ck_assert_msg(strstr(why, "no pass of the pattern to hold it to") != NULL, "%s", why);
}
END_TEST

START_TEST(test_link_where_accepts_memory_on_the_producers_gpu)
{
    char why[256] = "";

    ck_assert_msg(gpuipc_link_check_where(2, 2, 3, 0, why, sizeof(why)) == 0, "%s", why);
}
END_TEST

START_TEST(test_link_where_refuses_memory_on_this_gpu)
{
    char why[256];

    ck_assert_int_eq(gpuipc_link_check_where(3, 2, 3, 0, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "on this process's own GPU 3, not on the producer's GPU 2") != NULL,
                  "%s", why);
}
END_TEST

START_TEST(test_link_where_refuses_memory_on_a_third_gpu)
{
    char why[256];

    ck_assert_int_eq(gpuipc_link_check_where(1, 2, 3, 0, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "on GPU 1, neither the producer's GPU 2 nor this process's GPU "
                              "3") != NULL, "%s", why);
}
END_TEST

START_TEST(test_link_where_refuses_one_gpu_for_both)
{
    char why[256];

    ck_assert_int_eq(gpuipc_link_check_where(0, 0, 0, 0, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "no link between them to measure") != NULL, "%s", why);
}
END_TEST

/* An ordinal below 0 is unknown (the wire's out-of-range values decode to
 * -1): two unknowns are not the same GPU, so memory whose GPU is unknown is
 * not placed on the producer's, nor is an unknown own GPU another one. */
START_TEST(test_link_where_refuses_unknown_ordinals)
{
    char why[256];

    ck_assert_int_eq(gpuipc_link_check_where(-1, -1, 1, 0, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "unknown") != NULL, "%s", why);
    ck_assert_int_eq(gpuipc_link_check_where(0, 0, -1, 0, why, sizeof(why)), -1);
    ck_assert_int_eq(gpuipc_link_check_where(-1, 0, -1, 1, why, sizeof(why)), -1);
    ck_assert_int_eq(gpuipc_link_check_where(-1, -1, -1, 0, why, sizeof(why)), -1);
}
END_TEST

/* Figures whose ordinals came off the wire out of an int's range are
 * refused by the judge, not taken as memory on the producer's GPU. */
START_TEST(test_link_judge_refuses_ordinals_off_the_wire_out_of_range)
{
    uint64_t v[GPUIPC_LINK_VALUES];
    gpuipc_link_figures f, g;
    char why[512] = "";

    honest(&f, 370, 365, 2100);
    gpuipc_link_to_values(&f, v);
    v[3] = 1ull << 32; /* pointer: unknown */
    v[4] = 1ull << 33; /* home: unknown */
    gpuipc_link_from_values(v, &g);
    ck_assert_int_eq(gpuipc_link_judge(&g, BYTES, &once, 1, 0, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "unknown") != NULL, "%s", why);
}
END_TEST

/* A slow batch (another process on the link) moves the median by nothing. */
START_TEST(test_link_figure_is_the_median_batch)
{
    gpuipc_link_figures f;
    double lo, hi;

    honest(&f, 370, 365, 3000);
    f.run[GPUIPC_LINK_READ].ns[0] = ns_at(100);
    f.run[GPUIPC_LINK_READ].ns[3] = ns_at(380);
    ck_assert_double_eq_tol(gpuipc_link_gbps(&f, GPUIPC_LINK_READ), 370, 0.01);
    gpuipc_link_spread(&f, GPUIPC_LINK_READ, &lo, &hi);
    ck_assert_double_eq_tol(lo, 100, 0.01);
    ck_assert_double_eq_tol(hi, 380, 0.01);
}
END_TEST

START_TEST(test_link_figure_not_measured_is_zero)
{
    gpuipc_link_figures f;

    honest(&f, 370, 365, 3000);
    f.run[GPUIPC_LINK_READ].ns[4] = 0;
    ck_assert_double_eq(gpuipc_link_gbps(&f, GPUIPC_LINK_READ), 0);
    f.wrote = 0;
    ck_assert_double_eq(gpuipc_link_gbps(&f, GPUIPC_LINK_WRITE), 0);
    f.passes = 0;
    ck_assert_double_eq(gpuipc_link_gbps(&f, GPUIPC_LINK_LOCAL), 0);
}
END_TEST

START_TEST(test_link_judge_passes_honest_figures)
{
    gpuipc_link_figures f;
    char why[256] = "";

    honest(&f, 370, 365, 3000);
    ck_assert_msg(gpuipc_link_judge(&f, BYTES, &once, 1, 0, why, sizeof(why)) == 0, "%s", why);
}
END_TEST

/* A read of the peer as fast as a read of local memory: the pointer was
 * not across the link. The verdict names both figures. */
START_TEST(test_link_judge_refuses_a_peer_read_as_fast_as_local)
{
    gpuipc_link_figures f;
    char why[256];

    honest(&f, 3000, 365, 3000);
    ck_assert_int_eq(gpuipc_link_judge(&f, BYTES, &once, 1, 0, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "the read across the link (3000.0 GB/s) is not 1.5 times slower "
                              "than the read of GPU 1's own memory (3000.0 GB/s)") != NULL, "%s",
                  why);
}
END_TEST

/* A peer read a little slower than local, within noise, is no link either:
 * the read of local memory must be well faster (GPUIPC_LINK_LOCAL_MARGIN). */
START_TEST(test_link_judge_refuses_a_peer_read_nearly_as_fast_as_local)
{
    gpuipc_link_figures f;
    char why[256] = "";

    honest(&f, 2900, 365, 3000);
    ck_assert_int_eq(gpuipc_link_judge(&f, BYTES, &once, 1, 0, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "is not 1.5 times slower") != NULL, "%s", why);
    honest(&f, 1990, 365, 3000);
    ck_assert_msg(gpuipc_link_judge(&f, BYTES, &once, 1, 0, why, sizeof(why)) == 0, "%s", why);
}
END_TEST

/* Memory opened with cuIpcOpenMemHandle: the driver names the importing
 * context's GPU (measured), so the pointer on this GPU is no refusal there,
 * and only there; the read of local memory, well faster, places it across
 * the link, and without it the figures fail. */
START_TEST(test_link_where_takes_an_ipc_mapping_on_this_gpu_by_its_rates)
{
    gpuipc_link_figures f;
    char why[256] = "";

    ck_assert_msg(gpuipc_link_check_where(3, 2, 3, 1, why, sizeof(why)) == 0, "%s", why);
    ck_assert_int_eq(gpuipc_link_check_where(1, 2, 3, 1, why, sizeof(why)), -1);
    ck_assert_int_eq(gpuipc_link_check_where(3, 3, 3, 1, why, sizeof(why)), -1);
    honest(&f, 370, 365, 3000);
    f.pointer_ordinal = f.own_ordinal;
    ck_assert_msg(gpuipc_link_judge(&f, BYTES, &once, 1, 1, why, sizeof(why)) == 0, "%s", why);
    ck_assert_int_eq(gpuipc_link_judge(&f, BYTES, &once, 1, 0, why, sizeof(why)), -1);
    honest(&f, 3000, 365, 3000);
    f.pointer_ordinal = f.own_ordinal;
    ck_assert_int_eq(gpuipc_link_judge(&f, BYTES, &once, 1, 1, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "is not 1.5 times slower") != NULL, "%s", why);
}
END_TEST

/* No target is met by fewer passes than the size calls for. */
START_TEST(test_link_judge_refuses_fewer_passes_than_the_size_takes)
{
    gpuipc_link_figures f;
    char why[256];

    honest(&f, 370, 365, 3000);
    f.passes = 1;
    ck_assert_int_eq(gpuipc_link_judge(&f, BYTES, &once, 1, 0, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "5 batches of 1 passes over 67108864 bytes, but the mapping of "
                              "67108864 bytes takes 5 batches of 16 passes") != NULL, "%s", why);
}
END_TEST

/* Figures of a smaller buffer than the one shared do not speak for it. */
START_TEST(test_link_judge_refuses_figures_of_another_size)
{
    gpuipc_link_figures f;
    char why[256];

    honest(&f, 370, 365, 3000);
    ck_assert_int_eq(gpuipc_link_judge(&f, 2 * BYTES, &once, 1, 0, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "the mapping of 134217728 bytes takes") != NULL, "%s", why);
}
END_TEST

START_TEST(test_link_judge_refuses_a_write_run_that_wrote_nothing)
{
    gpuipc_link_figures f;
    char why[256];

    honest(&f, 370, 365, 3000);
    f.run[GPUIPC_LINK_WRITE].words = 0;
    ck_assert_int_eq(gpuipc_link_judge(&f, BYTES, &once, 1, 0, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "the write across the link: the kernels counted 0 words") != NULL,
                  "%s", why);
}
END_TEST

START_TEST(test_link_judge_refuses_a_local_run_of_other_bytes)
{
    gpuipc_link_figures f;
    char why[256];

    honest(&f, 370, 365, 3000);
    f.run[GPUIPC_LINK_LOCAL].digest ^= 1;
    ck_assert_int_eq(gpuipc_link_judge(&f, BYTES, &once, 1, 0, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "the read of this GPU's own memory: the kernels' digest") != NULL,
                  "%s", why);
}
END_TEST

START_TEST(test_link_judge_refuses_memory_on_this_gpu)
{
    gpuipc_link_figures f;
    char why[256];

    honest(&f, 370, 365, 3000);
    f.pointer_ordinal = 1;
    ck_assert_int_eq(gpuipc_link_judge(&f, BYTES, &once, 1, 0, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "own GPU 1, not on the producer's GPU 0") != NULL, "%s", why);
}
END_TEST

START_TEST(test_link_judge_refuses_nothing_measured)
{
    gpuipc_link_figures f;
    char why[256];

    memset(&f, 0, sizeof(f));
    ck_assert_int_eq(gpuipc_link_judge(&f, BYTES, &once, 1, 0, why, sizeof(why)), -1);
    ck_assert_str_eq(why, "no link figures: nothing was measured");
}
END_TEST

/* Under a read-only mapping there is no write run, and none may be claimed. */
START_TEST(test_link_judge_read_only_has_no_write_run)
{
    gpuipc_link_figures f;
    char why[256] = "";

    honest(&f, 370, 0, 3000);
    f.wrote = 0;
    memset(&f.run[GPUIPC_LINK_WRITE], 0, sizeof(f.run[GPUIPC_LINK_WRITE]));
    ck_assert_msg(gpuipc_link_judge(&f, BYTES, &once, 0, 0, why, sizeof(why)) == 0, "%s", why);
    ck_assert_int_eq(gpuipc_link_judge(&f, BYTES, &once, 1, 0, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "was not measured, but the mapping is writable") != NULL, "%s",
                  why);
}
END_TEST

START_TEST(test_link_below_names_the_slow_direction)
{
    ck_assert_ptr_null(gpuipc_link_below(370, 365, 1, 300));
    ck_assert_str_eq(gpuipc_link_below(250, 365, 1, 300), "read");
    ck_assert_str_eq(gpuipc_link_below(370, 250, 1, 300), "wrote");
    ck_assert_str_eq(gpuipc_link_below(250, 200, 1, 300), "wrote"); /* the slower of two */
    ck_assert_str_eq(gpuipc_link_below(0, 365, 1, 300), "read");    /* not measured */
    ck_assert_str_eq(gpuipc_link_below(370, 0, 1, 300), "wrote");
}
END_TEST

START_TEST(test_link_below_judges_no_write_under_a_read_only_mapping)
{
    ck_assert_ptr_null(gpuipc_link_below(370, 0, 0, 300));
    ck_assert_str_eq(gpuipc_link_below(250, 0, 0, 300), "read");
}
END_TEST

START_TEST(test_link_values_round_trip)
{
    uint64_t v[GPUIPC_LINK_VALUES];
    gpuipc_link_figures f, g;

    honest(&f, 370, 365, 3000);
    f.pointer_ordinal = -1;
    f.run[GPUIPC_LINK_READ].mismatches = 5;
    f.run[GPUIPC_LINK_LOCAL].ns[4] = 12345;
    gpuipc_link_to_values(&f, v);
    gpuipc_link_from_values(v, &g);
    ck_assert_int_eq(memcmp(&f, &g, sizeof(f)), 0);
}
END_TEST

/* An ordinal out of an int's range from the wire is unknown, not a wrapped
 * number that could match a real GPU. */
START_TEST(test_link_values_refuse_an_ordinal_out_of_range)
{
    uint64_t v[GPUIPC_LINK_VALUES] = {0};
    gpuipc_link_figures g;

    v[3] = 1ull << 32; /* an int would wrap this to 0 */
    gpuipc_link_from_values(v, &g);
    ck_assert_int_eq(g.pointer_ordinal, -1);
}
END_TEST

START_TEST(test_link_describe_says_median_spread_and_batches)
{
    gpuipc_link_figures f;
    char text[400];

    honest(&f, 370, 365, 3000);
    gpuipc_link_describe(&f, text, sizeof(text));
    ck_assert_msg(strstr(text, "read 370.0 GB/s across the link (batches 370.0-370.0), wrote "
                               "365.0 GB/s across it (365.0-365.0), read 3000.0 GB/s of this "
                               "GPU's own memory (3000.0-3000.0); each the median of 5 batches "
                               "of 16 passes over 64 MiB, timed with CUDA events") != NULL,
                  "%s", text);
}
END_TEST

/* The summary's words for a pair: tests/check_gpu.c reads them back. */
START_TEST(test_link_pair_words_name_both_gpus_and_the_figures)
{
    gpuipc_link_figures f;
    char text[300];

    honest(&f, 370, 365, 3000);
    gpuipc_link_pair_words(&f, 0, 1, text, sizeof(text));
    ck_assert_str_eq(text, "across the link, GPU 1 read 370.0 GB/s from GPU 0 and wrote 365.0 "
                           "GB/s to it (GPU 1's own memory: 3000.0 GB/s; medians of 5 batches "
                           "of 16 x 64 MiB)");
    f.wrote = 0;
    gpuipc_link_pair_words(&f, 0, 1, text, sizeof(text));
    ck_assert_msg(strstr(text, "from GPU 0 and wrote nothing to it, a read-only mapping "
                               "(GPU 1's") != NULL, "%s", text);
}
END_TEST

Suite *link_suite(void)
{
    Suite *s = suite_create("link");
    TCase *tc = tcase_create("link");

    tcase_add_test(tc, test_link_batch_moves_a_gib_in_at_least_four_passes);
    tcase_add_test(tc, test_link_sums_of_honest_passes_hold);
    tcase_add_test(tc, test_link_sums_refuse_a_batch_that_read_nothing);
    tcase_add_test(tc, test_link_sums_refuse_a_pass_short);
    tcase_add_test(tc, test_link_sums_refuse_mismatches);
    tcase_add_test(tc, test_link_sums_refuse_a_wrong_digest);
    tcase_add_test(tc, test_link_sums_wrap_as_the_kernels_do);
    tcase_add_test(tc, test_link_sums_refuse_a_scenario_that_wrote_nothing);
    tcase_add_test(tc, test_link_where_accepts_memory_on_the_producers_gpu);
    tcase_add_test(tc, test_link_where_refuses_memory_on_this_gpu);
    tcase_add_test(tc, test_link_where_refuses_memory_on_a_third_gpu);
    tcase_add_test(tc, test_link_where_refuses_one_gpu_for_both);
    tcase_add_test(tc, test_link_where_refuses_unknown_ordinals);
    tcase_add_test(tc, test_link_judge_refuses_ordinals_off_the_wire_out_of_range);
    tcase_add_test(tc, test_link_figure_is_the_median_batch);
    tcase_add_test(tc, test_link_figure_not_measured_is_zero);
    tcase_add_test(tc, test_link_judge_passes_honest_figures);
    tcase_add_test(tc, test_link_judge_refuses_a_peer_read_as_fast_as_local);
    tcase_add_test(tc, test_link_judge_refuses_a_peer_read_nearly_as_fast_as_local);
    tcase_add_test(tc, test_link_where_takes_an_ipc_mapping_on_this_gpu_by_its_rates);
    tcase_add_test(tc, test_link_judge_refuses_fewer_passes_than_the_size_takes);
    tcase_add_test(tc, test_link_judge_refuses_figures_of_another_size);
    tcase_add_test(tc, test_link_judge_refuses_a_write_run_that_wrote_nothing);
    tcase_add_test(tc, test_link_judge_refuses_a_local_run_of_other_bytes);
    tcase_add_test(tc, test_link_judge_refuses_memory_on_this_gpu);
    tcase_add_test(tc, test_link_judge_refuses_nothing_measured);
    tcase_add_test(tc, test_link_judge_read_only_has_no_write_run);
    tcase_add_test(tc, test_link_below_names_the_slow_direction);
    tcase_add_test(tc, test_link_below_judges_no_write_under_a_read_only_mapping);
    tcase_add_test(tc, test_link_values_round_trip);
    tcase_add_test(tc, test_link_values_refuse_an_ordinal_out_of_range);
    tcase_add_test(tc, test_link_describe_says_median_spread_and_batches);
    tcase_add_test(tc, test_link_pair_words_name_both_gpus_and_the_figures);
    suite_add_tcase(s, tc);
    return s;
}
