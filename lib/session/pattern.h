/* SPDX-License-Identifier: Apache-2.0 */
/* pattern.h: the one definition of the test pattern, used by the CPU code and
 * spliced into the GPU kernels' PTX, so that the two cannot drift apart. */
#ifndef GPUIPC_PATTERN_H
#define GPUIPC_PATTERN_H

#include <stdint.h>

#include "core/err.h"
#include "session/mech.h"
#include "wire/wire.h"

/* Word i of a buffer (64-bit words, counted from the start of the whole
 * logical buffer, so that a piece mapped at the wrong place is caught) holds
 * pattern(i, seed). For a fixed seed the map i -> word is a bijection, so no
 * shifted or reordered copy matches; for a fixed i it is a bijection in the
 * seed, so a wrong seed fails every word. The constants appear in the PTX as
 * text, through GPUIPC_PATTERN_MUL_TEXT and GPUIPC_PATTERN_SHIFT_TEXT. */
#define GPUIPC_PATTERN_MUL 0x9E3779B97F4A7C15
#define GPUIPC_PATTERN_SHIFT 29
#define GPUIPC_PATTERN_STR_(x) #x
#define GPUIPC_PATTERN_STR(x) GPUIPC_PATTERN_STR_(x)
#define GPUIPC_PATTERN_MUL_TEXT GPUIPC_PATTERN_STR(GPUIPC_PATTERN_MUL)
#define GPUIPC_PATTERN_SHIFT_TEXT GPUIPC_PATTERN_STR(GPUIPC_PATTERN_SHIFT)

static inline uint64_t gpuipc_pattern_word(uint64_t index, uint64_t seed)
{
    uint64_t x = (index ^ seed) * (uint64_t)GPUIPC_PATTERN_MUL;

    return x ^ (x >> GPUIPC_PATTERN_SHIFT);
}

/* The digest of a buffer is the sum (mod 2^64) over its words of
 * digest_term(index, word): a keyed mix of each word with its pattern index,
 * so that a word not read, read twice, read from another place or holding
 * another value changes the sum. Addition does not care about order, so GPU
 * threads may add their parts in any order. The key appears in the PTX as
 * text, through GPUIPC_DIGEST_KEY_TEXT. */
#define GPUIPC_DIGEST_KEY 0xD6E8FEB86659FD93
#define GPUIPC_DIGEST_KEY_TEXT GPUIPC_PATTERN_STR(GPUIPC_DIGEST_KEY)

static inline uint64_t gpuipc_pattern_digest_term(uint64_t index, uint64_t word)
{
    return gpuipc_pattern_word(word ^ index, (uint64_t)GPUIPC_DIGEST_KEY);
}

/* Writes the pattern into words 0..nwords-1 of p, word k holding
 * pattern(first + k, seed), and returns the digest of what it wrote. */
uint64_t gpuipc_pattern_fill(uint64_t *p, uint64_t nwords, uint64_t first, uint64_t seed);

/* Reads every word of p once and fills out: the word count, the mismatches,
 * for the first bad word its pattern index, the expected and the found
 * value, and the digest of what it read. Returns the number of mismatches. */
uint64_t gpuipc_pattern_verify(const uint64_t *p, uint64_t nwords, uint64_t first,
                               uint64_t seed, gpuipc_check *out);

/* The digest of nwords words of the pattern of seed from index first, as a
 * fill of them would report it. */
uint64_t gpuipc_pattern_digest(uint64_t nwords, uint64_t first, uint64_t seed);

/* Writes "N mismatches in M words; first bad word I (byte offset 0x..):
 * expected 0x..., got 0x..." for check into buf and returns buf. */
char *gpuipc_pattern_describe(const gpuipc_check *check, uint64_t first, char *buf,
                              size_t len);

/* View operations for memory the CPU can address (view->host): fill and
 * verify with the functions above. */
extern const gpuipc_view_ops gpuipc_pattern_cpu_ops;

/* Returns a seed from getrandom(), never equal to avoid. */
uint64_t gpuipc_pattern_seed(uint64_t avoid);

#endif
