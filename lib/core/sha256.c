/* SPDX-License-Identifier: Apache-2.0 */
/* sha256.c: SHA-256 after FIPS 180-4, HMAC-SHA256 after RFC 2104 (sha256.h). */
#include <string.h>

#include "core/sha256.h"

/* FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the cube
 * roots of the first 64 primes. */
static const uint32_t k256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* FIPS 180-4 5.3.3: the first 32 bits of the fractional parts of the square
 * roots of the first 8 primes. */
static const uint32_t h256_initial[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

/* RFC 2104's inner and outer pad bytes. */
#define IPAD 0x36
#define OPAD 0x5c

/* Clears n bytes at p in a way the compiler may not drop as a dead store:
 * what is wiped is key material or derived from it. */
static void wipe(void *p, size_t n)
{
    explicit_bzero(p, n);
}

static uint32_t rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

/* The big-endian word at p, built from bytes whatever the host's order. */
static uint32_t load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void store_be64(uint8_t *p, uint64_t v)
{
    store_be32(p, (uint32_t)(v >> 32));
    store_be32(p + 4, (uint32_t)v);
}

/* FIPS 180-4 6.2.2: one 512-bit block into the chaining value h. */
static void compress(uint32_t h[8], const uint8_t block[GPUIPC_SHA256_BLOCK])
{
    uint32_t w[64], v[8], t1, t2;
    int t;

    for (t = 0; t < 16; t++)
        w[t] = load_be32(block + 4 * t);
    for (t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);

        w[t] = s1 + w[t - 7] + s0 + w[t - 16];
    }
    memcpy(v, h, sizeof(v));
    for (t = 0; t < 64; t++) {
        /* v[0..7] are a..h of the standard. */
        uint32_t big_s1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
        uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
        uint32_t big_s0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
        uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);

        t1 = v[7] + big_s1 + ch + k256[t] + w[t];
        t2 = big_s0 + maj;
        v[7] = v[6];
        v[6] = v[5];
        v[5] = v[4];
        v[4] = v[3] + t1;
        v[3] = v[2];
        v[2] = v[1];
        v[1] = v[0];
        v[0] = t1 + t2;
    }
    for (t = 0; t < 8; t++)
        h[t] += v[t];
    /* The schedule and the working variables are the block (a pad of a key,
     * in HMAC) in another form. */
    wipe(w, sizeof(w));
    wipe(v, sizeof(v));
}

void gpuipc_sha256_init(gpuipc_sha256 *s)
{
    memcpy(s->h, h256_initial, sizeof(s->h));
    s->bytes = 0;
    s->used = 0;
    memset(s->block, 0, sizeof(s->block));
}

void gpuipc_sha256_update(gpuipc_sha256 *s, const void *data, size_t n)
{
    const uint8_t *p = data;

    s->bytes += n;
    while (n > 0) {
        size_t take = GPUIPC_SHA256_BLOCK - s->used;

        if (s->used == 0 && n >= GPUIPC_SHA256_BLOCK) {
            /* Whole blocks straight from the caller's bytes, without a copy. */
            compress(s->h, p);
            p += GPUIPC_SHA256_BLOCK;
            n -= GPUIPC_SHA256_BLOCK;
            continue;
        }
        if (take > n)
            take = n;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        n -= take;
        if (s->used == GPUIPC_SHA256_BLOCK) {
            compress(s->h, s->block);
            s->used = 0;
        }
    }
}

void gpuipc_sha256_final(gpuipc_sha256 *s, uint8_t out[GPUIPC_SHA256_LEN])
{
    /* FIPS 180-4 5.1.1: a 1 bit, zeros up to 448 mod 512 bits, then the
     * length in bits as a 64-bit big-endian number. */
    uint64_t bits = s->bytes * 8;
    int i;

    s->block[s->used++] = 0x80;
    if (s->used > GPUIPC_SHA256_BLOCK - 8) {
        /* No room for the length: it goes in a block of its own. */
        memset(s->block + s->used, 0, GPUIPC_SHA256_BLOCK - s->used);
        compress(s->h, s->block);
        s->used = 0;
    }
    memset(s->block + s->used, 0, GPUIPC_SHA256_BLOCK - 8 - s->used);
    store_be64(s->block + GPUIPC_SHA256_BLOCK - 8, bits);
    compress(s->h, s->block);
    for (i = 0; i < 8; i++)
        store_be32(out + 4 * i, s->h[i]);
    wipe(s, sizeof(*s));
}

void gpuipc_sha256_digest(const void *data, size_t n, uint8_t out[GPUIPC_SHA256_LEN])
{
    gpuipc_sha256 s;

    gpuipc_sha256_init(&s);
    gpuipc_sha256_update(&s, data, n);
    gpuipc_sha256_final(&s, out);
}

void gpuipc_hmac_init(gpuipc_hmac *h, const void *key, size_t klen)
{
    /* RFC 2104: K padded with zeros to B = 64 bytes, or H(K) padded where
     * K is longer than B. */
    uint8_t k0[GPUIPC_SHA256_BLOCK], pad[GPUIPC_SHA256_BLOCK];
    size_t i;

    memset(k0, 0, sizeof(k0));
    if (klen > GPUIPC_SHA256_BLOCK)
        gpuipc_sha256_digest(key, klen, k0);
    else if (klen > 0)
        memcpy(k0, key, klen);

    for (i = 0; i < sizeof(pad); i++)
        pad[i] = k0[i] ^ IPAD;
    gpuipc_sha256_init(&h->inner);
    gpuipc_sha256_update(&h->inner, pad, sizeof(pad));

    for (i = 0; i < sizeof(pad); i++)
        pad[i] = k0[i] ^ OPAD;
    gpuipc_sha256_init(&h->outer);
    gpuipc_sha256_update(&h->outer, pad, sizeof(pad));

    wipe(k0, sizeof(k0));
    wipe(pad, sizeof(pad));
}

void gpuipc_hmac_update(gpuipc_hmac *h, const void *data, size_t n)
{
    gpuipc_sha256_update(&h->inner, data, n);
}

void gpuipc_hmac_final(gpuipc_hmac *h, uint8_t out[GPUIPC_SHA256_LEN])
{
    /* H(K xor opad, H(K xor ipad, text)). */
    uint8_t inner[GPUIPC_SHA256_LEN];

    gpuipc_sha256_final(&h->inner, inner);
    gpuipc_sha256_update(&h->outer, inner, sizeof(inner));
    gpuipc_sha256_final(&h->outer, out);
    wipe(inner, sizeof(inner));
    wipe(h, sizeof(*h));
}

void gpuipc_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                        uint8_t out[GPUIPC_SHA256_LEN])
{
    gpuipc_hmac h;

    gpuipc_hmac_init(&h, key, klen);
    gpuipc_hmac_update(&h, msg, mlen);
    gpuipc_hmac_final(&h, out);
}

int gpuipc_ct_equal(const void *a, const void *b, size_t n)
{
    const volatile uint8_t *x = a, *y = b;
    unsigned diff = 0;
    size_t i;

    /* Every byte is read and folded in, whatever came before: no early
     * exit, and no branch on the data until the end. */
    for (i = 0; i < n; i++)
        diff |= (unsigned)(x[i] ^ y[i]);
    /* diff is 0 to 255: diff - 1 has bit 8 set only where diff is 0. */
    return (int)(((diff - 1) >> 8) & 1);
}
