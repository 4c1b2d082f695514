/* SPDX-License-Identifier: Apache-2.0 */
/* test_sha256.c: SHA-256 against the FIPS 180-4 (NIST) examples, HMAC-SHA256
 * against the seven RFC 4231 test cases, pieces against one call, and the
 * constant-time comparison. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/random.h"
#include "core/sha256.h"
#include "suites.h"

/* Fails unless the first strlen(want) / 2 bytes of got are want in hex. */
static void expect_hex(const char *what, const uint8_t got[GPUIPC_SHA256_LEN], const char *want)
{
    char hex[2 * GPUIPC_SHA256_LEN + 1];

    gpuipc_random_hex(hex, got, strlen(want) / 2);
    ck_assert_msg(strcmp(hex, want) == 0, "%s: got %s, want %s", what, hex, want);
}

static void expect_sha256(const char *msg, const char *want)
{
    uint8_t out[GPUIPC_SHA256_LEN];

    gpuipc_sha256_digest(msg, strlen(msg), out);
    expect_hex(msg, out, want);
}

/* FIPS 180-4's examples (NIST, "SHA256.pdf" of the Examples with
 * Intermediate Values): one block, two blocks, and many. */
START_TEST(test_sha256_abc_one_block)
{
    expect_sha256("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
END_TEST

START_TEST(test_sha256_448_bit_message_two_blocks)
{
    /* 56 bytes: the length no longer fits, so padding takes a second block. */
    expect_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

START_TEST(test_sha256_one_million_a)
{
    uint8_t chunk[1000], out[GPUIPC_SHA256_LEN];
    gpuipc_sha256 s;
    int i;

    memset(chunk, 'a', sizeof(chunk));
    gpuipc_sha256_init(&s);
    for (i = 0; i < 1000; i++)
        gpuipc_sha256_update(&s, chunk, sizeof(chunk));
    gpuipc_sha256_final(&s, out);
    expect_hex("1000000 x 'a'", out,
               "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
END_TEST

START_TEST(test_sha256_empty_string)
{
    uint8_t out[GPUIPC_SHA256_LEN];

    expect_sha256("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    gpuipc_sha256_digest(NULL, 0, out); /* no bytes need no pointer */
    expect_hex("NULL, 0", out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
END_TEST

/* The lengths where padding changes shape: 55 (0x80 and the length just
 * fit), 56 (the length moves to a block of its own), 63, 64 (a full block,
 * then a block of padding only), 65. These digests are no standard's: they
 * came from OpenSSL (Python's hashlib), independent of this code. */
static const struct {
    size_t n;
    const char *want;
} boundary[] = {
    {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
    {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
    {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
    {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
    {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
};

START_TEST(test_sha256_padding_boundaries)
{
    uint8_t msg[65], out[GPUIPC_SHA256_LEN];
    char what[32];

    memset(msg, 'a', sizeof(msg));
    gpuipc_sha256_digest(msg, boundary[_i].n, out);
    snprintf(what, sizeof(what), "%zu x 'a'", boundary[_i].n);
    expect_hex(what, out, boundary[_i].want);
}
END_TEST

/* A message of n bytes that is not one byte repeated. */
static void fill_message(uint8_t *msg, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        msg[i] = (uint8_t)(i * 31 + 7);
}

START_TEST(test_sha256_every_split_point_gives_the_one_call_digest)
{
    /* Each length up to two blocks and a bit, cut at every point: the cut
     * falls before, on and after each block boundary. */
    uint8_t msg[140], whole[GPUIPC_SHA256_LEN], parts[GPUIPC_SHA256_LEN];
    char hw[2 * GPUIPC_SHA256_LEN + 1], hp[2 * GPUIPC_SHA256_LEN + 1];
    size_t n, k;

    fill_message(msg, sizeof(msg));
    for (n = 0; n <= sizeof(msg); n++) {
        gpuipc_sha256_digest(msg, n, whole);
        for (k = 0; k <= n; k++) {
            gpuipc_sha256 s;

            gpuipc_sha256_init(&s);
            gpuipc_sha256_update(&s, msg, k);
            gpuipc_sha256_update(&s, msg + k, n - k);
            gpuipc_sha256_final(&s, parts);
            ck_assert_msg(memcmp(whole, parts, sizeof(whole)) == 0,
                          "length %zu cut at %zu: got %s, one call gave %s", n, k,
                          gpuipc_random_hex(hp, parts, sizeof(parts)),
                          gpuipc_random_hex(hw, whole, sizeof(whole)));
        }
    }
}
END_TEST

START_TEST(test_sha256_odd_chunk_sizes_give_the_one_call_digest)
{
    static const size_t sizes[] = {1, 3, 7, 13, 55, 56, 63, 64, 65, 127, 200};
    uint8_t msg[1000], whole[GPUIPC_SHA256_LEN], parts[GPUIPC_SHA256_LEN];
    char hw[2 * GPUIPC_SHA256_LEN + 1], hp[2 * GPUIPC_SHA256_LEN + 1];
    size_t i, off;

    fill_message(msg, sizeof(msg));
    gpuipc_sha256_digest(msg, sizeof(msg), whole);
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        gpuipc_sha256 s;

        gpuipc_sha256_init(&s);
        for (off = 0; off < sizeof(msg); off += sizes[i]) {
            size_t take = sizeof(msg) - off < sizes[i] ? sizeof(msg) - off : sizes[i];

            gpuipc_sha256_update(&s, msg + off, take);
        }
        gpuipc_sha256_final(&s, parts);
        ck_assert_msg(memcmp(whole, parts, sizeof(whole)) == 0,
                      "chunks of %zu: got %s, one call gave %s", sizes[i],
                      gpuipc_random_hex(hp, parts, sizeof(parts)),
                      gpuipc_random_hex(hw, whole, sizeof(whole)));
    }
}
END_TEST

/* Fails unless the size bytes at p are all zero. */
static void expect_wiped(const char *what, const void *p, size_t size)
{
    const uint8_t *b = p;
    size_t i;

    for (i = 0; i < size && b[i] == 0; i++)
        ;
    ck_assert_msg(i == size, "%s: byte %zu of %zu is 0x%02x after final", what, i, size,
                  i < size ? b[i] : 0);
}

START_TEST(test_sha256_final_wipes_the_state)
{
    uint8_t out[GPUIPC_SHA256_LEN];
    gpuipc_sha256 s;

    gpuipc_sha256_init(&s);
    gpuipc_sha256_update(&s, "secret token", 12);
    gpuipc_sha256_final(&s, out);
    expect_wiped("gpuipc_sha256", &s, sizeof(s));
}
END_TEST

/* RFC 4231 section 4: HMAC-SHA-256 of each test case. */
static void expect_hmac(const char *what, const uint8_t *key, size_t klen, const void *msg,
                        size_t mlen, const char *want)
{
    uint8_t out[GPUIPC_SHA256_LEN];

    gpuipc_hmac_sha256(key, klen, msg, mlen, out);
    expect_hex(what, out, want);
}

static const char case6_data[] = "Test Using Larger Than Block-Size Key - Hash Key First";
static const char case7_data[] =
    "This is a test using a larger than block-size key and a larger than block-size data. "
    "The key needs to be hashed before being used by the HMAC algorithm.";

START_TEST(test_sha256_hmac_rfc4231_case1)
{
    uint8_t key[20];

    memset(key, 0x0b, sizeof(key));
    expect_hmac("RFC 4231 case 1", key, sizeof(key), "Hi There", 8,
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}
END_TEST

START_TEST(test_sha256_hmac_rfc4231_case2_key_shorter_than_output)
{
    const char *data = "what do ya want for nothing?";

    expect_hmac("RFC 4231 case 2", (const uint8_t *)"Jefe", 4, data, strlen(data),
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}
END_TEST

START_TEST(test_sha256_hmac_rfc4231_case3)
{
    uint8_t key[20], data[50];

    memset(key, 0xaa, sizeof(key));
    memset(data, 0xdd, sizeof(data));
    expect_hmac("RFC 4231 case 3", key, sizeof(key), data, sizeof(data),
                "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
}
END_TEST

START_TEST(test_sha256_hmac_rfc4231_case4)
{
    uint8_t key[25], data[50];
    size_t i;

    for (i = 0; i < sizeof(key); i++)
        key[i] = (uint8_t)(i + 1); /* 0x01 to 0x19 */
    memset(data, 0xcd, sizeof(data));
    expect_hmac("RFC 4231 case 4", key, sizeof(key), data, sizeof(data),
                "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
}
END_TEST

START_TEST(test_sha256_hmac_rfc4231_case5_truncated_to_128_bits)
{
    uint8_t key[20];

    /* The RFC gives only the first 128 bits of this one. */
    memset(key, 0x0c, sizeof(key));
    expect_hmac("RFC 4231 case 5", key, sizeof(key), "Test With Truncation", 20,
                "a3b6167473100ee06e0c796c2955552b");
}
END_TEST

START_TEST(test_sha256_hmac_rfc4231_case6_key_longer_than_a_block)
{
    uint8_t key[131];

    memset(key, 0xaa, sizeof(key));
    expect_hmac("RFC 4231 case 6", key, sizeof(key), case6_data, strlen(case6_data),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}
END_TEST

START_TEST(test_sha256_hmac_rfc4231_case7_key_and_data_longer_than_a_block)
{
    uint8_t key[131];

    memset(key, 0xaa, sizeof(key));
    expect_hmac("RFC 4231 case 7", key, sizeof(key), case7_data, strlen(case7_data),
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}
END_TEST

START_TEST(test_sha256_hmac_incremental_equals_one_call)
{
    uint8_t key[131], whole[GPUIPC_SHA256_LEN], parts[GPUIPC_SHA256_LEN];
    char hw[2 * GPUIPC_SHA256_LEN + 1], hp[2 * GPUIPC_SHA256_LEN + 1];
    size_t n = strlen(case7_data), k;

    memset(key, 0xaa, sizeof(key));
    gpuipc_hmac_sha256(key, sizeof(key), case7_data, n, whole);
    expect_hex("one call", whole,
               "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
    for (k = 0; k <= n; k++) {
        gpuipc_hmac h;

        gpuipc_hmac_init(&h, key, sizeof(key));
        gpuipc_hmac_update(&h, case7_data, k);
        gpuipc_hmac_update(&h, case7_data + k, n - k);
        gpuipc_hmac_final(&h, parts);
        ck_assert_msg(memcmp(whole, parts, sizeof(whole)) == 0,
                      "cut at %zu of %zu: got %s, one call gave %s", k, n,
                      gpuipc_random_hex(hp, parts, sizeof(parts)),
                      gpuipc_random_hex(hw, whole, sizeof(whole)));
    }
}
END_TEST

START_TEST(test_sha256_hmac_final_wipes_the_state)
{
    uint8_t out[GPUIPC_SHA256_LEN];
    gpuipc_hmac h;

    gpuipc_hmac_init(&h, "Jefe", 4);
    gpuipc_hmac_update(&h, "what do ya want for nothing?", 28);
    gpuipc_hmac_final(&h, out);
    expect_wiped("gpuipc_hmac", &h, sizeof(h));
}
END_TEST

START_TEST(test_sha256_ct_equal_equal)
{
    uint8_t a[GPUIPC_SHA256_LEN], b[GPUIPC_SHA256_LEN];

    fill_message(a, sizeof(a));
    memcpy(b, a, sizeof(b));
    ck_assert_int_eq(gpuipc_ct_equal(a, b, sizeof(a)), 1);
}
END_TEST

START_TEST(test_sha256_ct_equal_differs_at_first_byte)
{
    uint8_t a[GPUIPC_SHA256_LEN], b[GPUIPC_SHA256_LEN];

    fill_message(a, sizeof(a));
    memcpy(b, a, sizeof(b));
    b[0] ^= 0x01;
    ck_assert_int_eq(gpuipc_ct_equal(a, b, sizeof(a)), 0);
}
END_TEST

START_TEST(test_sha256_ct_equal_differs_at_last_byte)
{
    uint8_t a[GPUIPC_SHA256_LEN], b[GPUIPC_SHA256_LEN];

    fill_message(a, sizeof(a));
    memcpy(b, a, sizeof(b));
    b[sizeof(b) - 1] ^= 0x80; /* the top bit: a fold that drops it would call these equal */
    ck_assert_int_eq(gpuipc_ct_equal(a, b, sizeof(a)), 0);
}
END_TEST

START_TEST(test_sha256_ct_equal_zero_length_is_equal)
{
    ck_assert_int_eq(gpuipc_ct_equal("a", "b", 0), 1);
}
END_TEST

/* gpuipc_random_unhex reads what gpuipc_random_hex wrote, and refuses an
 * uppercase digit, a non-digit and a string shorter than 2n. */
START_TEST(test_sha256_unhex_inverts_hex_and_refuses_what_is_not_lowercase_hex)
{
    const uint8_t bytes[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xcd, 0xef, 0xff};
    uint8_t back[sizeof(bytes)];
    char hex[2 * sizeof(bytes) + 1];

    gpuipc_random_hex(hex, bytes, sizeof(bytes));
    ck_assert_str_eq(hex, "00017f80abcdefff");
    memset(back, 0x55, sizeof(back));
    ck_assert_int_eq(gpuipc_random_unhex(back, hex, sizeof(back)), 0);
    ck_assert(memcmp(back, bytes, sizeof(bytes)) == 0);
    ck_assert_int_eq(gpuipc_random_unhex(back, "00017F80abcdefff", sizeof(back)), -EINVAL);
    ck_assert_int_eq(gpuipc_random_unhex(back, "00017f80abcdefg0", sizeof(back)), -EINVAL);
    ck_assert_int_eq(gpuipc_random_unhex(back, "00017f80abcdef", sizeof(back)), -EINVAL);
    ck_assert_int_eq(gpuipc_random_unhex(back, "0", 1), -EINVAL);
    ck_assert_int_eq(gpuipc_random_unhex(back, "", 0), 0);
}
END_TEST

Suite *sha256_suite(void)
{
    Suite *s = suite_create("sha256");
    TCase *tc = tcase_create("sha256");

    tcase_add_test(tc, test_sha256_abc_one_block);
    tcase_add_test(tc, test_sha256_448_bit_message_two_blocks);
    tcase_add_test(tc, test_sha256_one_million_a);
    tcase_add_test(tc, test_sha256_empty_string);
    tcase_add_test(tc, test_sha256_unhex_inverts_hex_and_refuses_what_is_not_lowercase_hex);
    tcase_add_loop_test(tc, test_sha256_padding_boundaries, 0,
                        (int)(sizeof(boundary) / sizeof(boundary[0])));
    tcase_add_test(tc, test_sha256_every_split_point_gives_the_one_call_digest);
    tcase_add_test(tc, test_sha256_odd_chunk_sizes_give_the_one_call_digest);
    tcase_add_test(tc, test_sha256_final_wipes_the_state);
    tcase_add_test(tc, test_sha256_hmac_rfc4231_case1);
    tcase_add_test(tc, test_sha256_hmac_rfc4231_case2_key_shorter_than_output);
    tcase_add_test(tc, test_sha256_hmac_rfc4231_case3);
    tcase_add_test(tc, test_sha256_hmac_rfc4231_case4);
    tcase_add_test(tc, test_sha256_hmac_rfc4231_case5_truncated_to_128_bits);
    tcase_add_test(tc, test_sha256_hmac_rfc4231_case6_key_longer_than_a_block);
    tcase_add_test(tc, test_sha256_hmac_rfc4231_case7_key_and_data_longer_than_a_block);
    tcase_add_test(tc, test_sha256_hmac_incremental_equals_one_call);
    tcase_add_test(tc, test_sha256_hmac_final_wipes_the_state);
    tcase_add_test(tc, test_sha256_ct_equal_equal);
    tcase_add_test(tc, test_sha256_ct_equal_differs_at_first_byte);
    tcase_add_test(tc, test_sha256_ct_equal_differs_at_last_byte);
    tcase_add_test(tc, test_sha256_ct_equal_zero_length_is_equal);
    suite_add_tcase(s, tc);
    return s;
}
