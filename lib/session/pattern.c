/* pattern.c: filling and verifying the test pattern on the CPU. */
#include "session/pattern.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "core/clock.h"

uint64_t gpuipc_pattern_fill(uint64_t *p, uint64_t nwords, uint64_t first, uint64_t seed)
{
    uint64_t k, digest = 0;

    for (k = 0; k < nwords; k++) {
        p[k] = gpuipc_pattern_word(first + k, seed);
        digest += gpuipc_pattern_digest_term(first + k, p[k]);
    }
    return digest;
}

uint64_t gpuipc_pattern_digest(uint64_t nwords, uint64_t first, uint64_t seed)
{
    uint64_t k, digest = 0;

    for (k = 0; k < nwords; k++)
        digest += gpuipc_pattern_digest_term(first + k, gpuipc_pattern_word(first + k, seed));
    return digest;
}

uint64_t gpuipc_pattern_verify(const uint64_t *p, uint64_t nwords, uint64_t first,
                               uint64_t seed, gpuipc_check *out)
{
    uint64_t k;

    memset(out, 0, sizeof(*out));
    for (k = 0; k < nwords; k++) {
        uint64_t want = gpuipc_pattern_word(first + k, seed), got = p[k];

        out->words++;
        out->digest += gpuipc_pattern_digest_term(first + k, got);
        if (got == want)
            continue;
        if (out->mismatches++ == 0) {
            out->first_bad = first + k;
            out->expected = want;
            out->got = got;
        }
    }
    return out->mismatches;
}

char *gpuipc_pattern_describe(const gpuipc_check *check, uint64_t first, char *buf, size_t len)
{
    if (check->mismatches == 0)
        snprintf(buf, len, "0 mismatches in %llu words", (unsigned long long)check->words);
    else
        snprintf(buf, len,
                 "%llu mismatches in %llu words; first bad word %llu (byte offset 0x%llx): "
                 "expected 0x%016llx, got 0x%016llx",
                 (unsigned long long)check->mismatches, (unsigned long long)check->words,
                 (unsigned long long)check->first_bad,
                 (unsigned long long)((check->first_bad - first) * 8),
                 (unsigned long long)check->expected, (unsigned long long)check->got);
    return buf;
}

uint64_t gpuipc_pattern_seed(uint64_t avoid)
{
    uint64_t seed = 0;

    /* getrandom() with 8 bytes does not block once the pool is ready; the
     * clock is a fallback that is still different on every run. */
    if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed))
        seed = gpuipc_clock_ns() * 0x2545F4914F6CDD1Dull;
    if (seed == avoid)
        seed ^= 1;
    return seed;
}

static int cpu_fill(const gpuipc_view *v, uint64_t seed, gpuipc_written *wrote, gpuipc_err *err)
{
    (void)err;
    wrote->digest = gpuipc_pattern_fill(v->host, v->size / 8, v->first_word, seed);
    wrote->words = v->size / 8;
    return 0;
}

static int cpu_poke(const gpuipc_view *v, uint64_t index, uint64_t value, gpuipc_err *err)
{
    if (index < v->first_word || index - v->first_word >= v->size / 8)
        return gpuipc_err_set(err, -ERANGE, "word %llu is outside the view (words %llu to "
                              "%llu)", (unsigned long long)index,
                              (unsigned long long)v->first_word,
                              (unsigned long long)(v->first_word + v->size / 8 - 1));
    ((volatile uint64_t *)v->host)[index - v->first_word] = value;
    return 0;
}

static int cpu_verify(const gpuipc_view *v, uint64_t seed, gpuipc_check *check, gpuipc_err *err)
{
    (void)err;
    gpuipc_pattern_verify(v->host, v->size / 8, v->first_word, seed, check);
    return 0;
}

const gpuipc_view_ops gpuipc_pattern_cpu_ops = {
    .fill = cpu_fill,
    .verify = cpu_verify,
    .poke = cpu_poke,
};
