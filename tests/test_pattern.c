/* SPDX-License-Identifier: Apache-2.0 */
/* test_pattern.c: the pattern and its CPU fill and verify. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "session/pattern.h"
#include "suites.h"

#define WORDS 4096

START_TEST(test_pattern_verifies_its_own_fill)
{
    uint64_t *p = malloc(WORDS * 8);
    gpuipc_check k;

    gpuipc_pattern_fill(p, WORDS, 0, 42);
    ck_assert_uint_eq(gpuipc_pattern_verify(p, WORDS, 0, 42, &k), 0);
    ck_assert_uint_eq(k.words, WORDS);
    free(p);
}
END_TEST

START_TEST(test_pattern_wrong_seed_fails_every_word)
{
    uint64_t *p = malloc(WORDS * 8);
    gpuipc_check k;

    gpuipc_pattern_fill(p, WORDS, 100, 42);
    ck_assert_uint_eq(gpuipc_pattern_verify(p, WORDS, 100, 43, &k), WORDS);
    ck_assert_uint_eq(k.first_bad, 100);
    ck_assert_uint_eq(k.expected, gpuipc_pattern_word(100, 43));
    ck_assert_uint_eq(k.got, gpuipc_pattern_word(100, 42));
    free(p);
}
END_TEST

START_TEST(test_pattern_finds_one_flipped_bit)
{
    uint64_t *p = malloc(WORDS * 8);
    gpuipc_check k;
    char text[256];

    gpuipc_pattern_fill(p, WORDS, 0, 7);
    p[1234] ^= 1ull << 40;
    ck_assert_uint_eq(gpuipc_pattern_verify(p, WORDS, 0, 7, &k), 1);
    ck_assert_uint_eq(k.first_bad, 1234);
    gpuipc_pattern_describe(&k, 0, text, sizeof(text));
    ck_assert_msg(strstr(text, "1 mismatches in 4096 words; first bad word 1234 (byte offset "
                               "0x2690)") != NULL, "%s", text);
    free(p);
}
END_TEST

/* Two halves mapped in the wrong order: each half is a correct pattern for
 * some index, but not for where it sits. */
START_TEST(test_pattern_catches_pieces_out_of_order)
{
    uint64_t *p = malloc(WORDS * 8);
    gpuipc_check k;

    gpuipc_pattern_fill(p, WORDS / 2, WORDS / 2, 9);
    gpuipc_pattern_fill(p + WORDS / 2, WORDS / 2, 0, 9);
    ck_assert_uint_eq(gpuipc_pattern_verify(p, WORDS, 0, 9, &k), WORDS);
    ck_assert_uint_eq(k.first_bad, 0);
    free(p);
}
END_TEST

START_TEST(test_pattern_has_no_repeats_in_a_window)
{
    enum { N = 1 << 16 };
    uint64_t *v = malloc(N * 8);
    size_t i;

    for (i = 0; i < N; i++)
        v[i] = gpuipc_pattern_word(i, 0x1234);
    for (i = 1; i < N; i++)
        ck_assert_uint_ne(v[i], v[i - 1]);
    free(v);
}
END_TEST

/* Memory nobody wrote (zeros here) must not pass. */
START_TEST(test_pattern_unwritten_memory_fails)
{
    uint64_t *p = calloc(WORDS, 8);
    gpuipc_check k;

    ck_assert_uint_eq(gpuipc_pattern_verify(p, WORDS, 0, 0x8badf00d5eedull, &k), WORDS);
    free(p);
}
END_TEST

START_TEST(test_pattern_seed_differs_from_the_one_to_avoid)
{
    int i;

    for (i = 0; i < 100; i++) {
        uint64_t a = gpuipc_pattern_seed(0);

        ck_assert_uint_ne(gpuipc_pattern_seed(a), a);
    }
}
END_TEST

/* A buffer large enough to be divided among threads (2 MiB a part at least) gives
 * what one pass over it gives: every word, one digest, and the first bad
 * word of the whole, though the later parts hold bad words too. The single
 * pass is written out here, independent of pattern.c. */
START_TEST(test_pattern_parts_agree_with_one_pass)
{
    const uint64_t n = (5ull << 20) + 3, first = 77, seed = 0x1234;
    const uint64_t bad[] = {n - 1, (3ull << 20) + 9, (1ull << 20) + 5};
    uint64_t *p = malloc(n * 8), digest = 0, want_digest = 0, k;
    gpuipc_check c;
    size_t i;

    ck_assert_ptr_nonnull(p);
    for (k = 0; k < n; k++)
        want_digest += gpuipc_pattern_digest_term(first + k, gpuipc_pattern_word(first + k, seed));
    digest = gpuipc_pattern_fill(p, n, first, seed);
    ck_assert_uint_eq(digest, want_digest);
    ck_assert_uint_eq(gpuipc_pattern_digest(n, first, seed), want_digest);
    for (k = 0; k < n; k++)
        if (p[k] != gpuipc_pattern_word(first + k, seed))
            ck_abort_msg("word %llu not written", (unsigned long long)k);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        p[bad[i]] ^= 1ull << i;
    want_digest = 0;
    for (k = 0; k < n; k++)
        want_digest += gpuipc_pattern_digest_term(first + k, p[k]);
    ck_assert_uint_eq(gpuipc_pattern_verify(p, n, first, seed, &c), 3);
    ck_assert_uint_eq(c.words, n);
    ck_assert_uint_eq(c.digest, want_digest);
    ck_assert_uint_eq(c.first_bad, first + bad[2]);
    ck_assert_uint_eq(c.expected, gpuipc_pattern_word(first + bad[2], seed));
    ck_assert_uint_eq(c.got, gpuipc_pattern_word(first + bad[2], seed) ^ 4);
    free(p);
}
END_TEST

START_TEST(test_pattern_cpu_view_ops)
{
    uint64_t *p = calloc(WORDS, 8);
    gpuipc_view v = {.ops = &gpuipc_pattern_cpu_ops, .host = p, .size = WORDS * 8,
                     .first_word = 77};
    gpuipc_written w;
    gpuipc_check k;
    gpuipc_err e;

    ck_assert_int_eq(v.ops->fill(&v, 5, &w, &e), 0);
    ck_assert_uint_eq(w.words, WORDS);
    ck_assert_uint_eq(w.digest, gpuipc_pattern_digest(WORDS, 77, 5));
    ck_assert_uint_eq(p[0], gpuipc_pattern_word(77, 5));
    ck_assert_int_eq(v.ops->verify(&v, 5, &k, &e), 0);
    ck_assert_uint_eq(k.mismatches, 0);
    ck_assert_uint_eq(k.words, WORDS);
    ck_assert_uint_eq(k.digest, w.digest);
    p[WORDS - 1] = 0;
    ck_assert_int_eq(v.ops->verify(&v, 5, &k, &e), 0);
    ck_assert_uint_eq(k.mismatches, 1);
    ck_assert_uint_eq(k.first_bad, 77 + WORDS - 1);
    ck_assert_uint_ne(k.digest, w.digest);
    /* poke writes one word by its pattern index, and only inside the view */
    ck_assert_int_eq(v.ops->poke(&v, 77 + 3, 42, &e), 0);
    ck_assert_uint_eq(p[3], 42);
    ck_assert_int_eq(v.ops->poke(&v, 76, 42, &e), -ERANGE);
    ck_assert_int_eq(v.ops->poke(&v, 77 + WORDS, 42, &e), -ERANGE);
    free(p);
}
END_TEST

Suite *pattern_suite(void)
{
    Suite *s = suite_create("pattern");
    TCase *tc = tcase_create("pattern");

    tcase_add_test(tc, test_pattern_verifies_its_own_fill);
    tcase_add_test(tc, test_pattern_wrong_seed_fails_every_word);
    tcase_add_test(tc, test_pattern_finds_one_flipped_bit);
    tcase_add_test(tc, test_pattern_catches_pieces_out_of_order);
    tcase_add_test(tc, test_pattern_has_no_repeats_in_a_window);
    tcase_add_test(tc, test_pattern_unwritten_memory_fails);
    tcase_add_test(tc, test_pattern_seed_differs_from_the_one_to_avoid);
    tcase_add_test(tc, test_pattern_cpu_view_ops);
    tcase_add_test(tc, test_pattern_parts_agree_with_one_pass);
    suite_add_tcase(s, tc);
    return s;
}
