/* SPDX-License-Identifier: Apache-2.0 */
/* sha256.h: SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) for the HELLO
 * handshake of ranks, in which each side proves it holds the job's token
 * without sending it; held to the FIPS 180-4 and RFC 4231 vectors by
 * tests/test_sha256.c. System calls only, no stdio or malloc: they may run
 * anywhere. */
#ifndef GPUIPC_SHA256_H
#define GPUIPC_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define GPUIPC_SHA256_LEN 32   /* bytes of a digest */
#define GPUIPC_SHA256_BLOCK 64 /* bytes of a block, and HMAC's key size B */

/* A hash under way: the chaining value, the bytes taken so far and the
 * block not yet compressed (used bytes of it). */
typedef struct gpuipc_sha256 {
    uint32_t h[8];
    uint64_t bytes;
    uint8_t block[GPUIPC_SHA256_BLOCK];
    size_t used;
} gpuipc_sha256;

/* Starts s as the hash of no bytes. */
void gpuipc_sha256_init(gpuipc_sha256 *s);

/* Adds the n bytes at data (NULL where n is 0) to s; the caller keeps data. */
void gpuipc_sha256_update(gpuipc_sha256 *s, const void *data, size_t n);

/* Writes the digest of everything s took to out, then wipes s (init it again
 * to reuse it). */
void gpuipc_sha256_final(gpuipc_sha256 *s, uint8_t out[GPUIPC_SHA256_LEN]);

/* Writes the digest of the n bytes at data to out, in one call. (Not named
 * gpuipc_sha256: a function cannot share its name with the typedef.) */
void gpuipc_sha256_digest(const void *data, size_t n, uint8_t out[GPUIPC_SHA256_LEN]);

/* An HMAC-SHA256 under way: the hash of (K xor ipad) || text so far, and the
 * hash already fed K xor opad. */
typedef struct gpuipc_hmac {
    gpuipc_sha256 inner, outer;
} gpuipc_hmac;

/* Starts h under the klen bytes of key (hashed first where longer than 64
 * bytes, per RFC 2104); h holds no copy of the key, and the pads built from
 * it are wiped. */
void gpuipc_hmac_init(gpuipc_hmac *h, const void *key, size_t klen);

/* Adds the n bytes at data (NULL where n is 0) to the message h authenticates. */
void gpuipc_hmac_update(gpuipc_hmac *h, const void *data, size_t n);

/* Writes the 32-byte tag of the message to out, then wipes h. */
void gpuipc_hmac_final(gpuipc_hmac *h, uint8_t out[GPUIPC_SHA256_LEN]);

/* Writes HMAC-SHA256 of the mlen bytes at msg under the klen bytes of key to
 * out, in one call, and wipes what it derived from the key. */
void gpuipc_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                        uint8_t out[GPUIPC_SHA256_LEN]);

/* 1 if the n bytes at a and b are equal (also where n is 0), 0 if not, in a
 * time that depends on n only, never on where they differ: compare tags with
 * this, not memcmp. */
int gpuipc_ct_equal(const void *a, const void *b, size_t n);

#endif
