/* SPDX-License-Identifier: Apache-2.0 */
/* selftest.c: the kernels' self-test, run when a device opens (gpu.c), on
 * the kernels it loaded and their result words: the fill and verify kernels
 * held to the CPU's pattern, every word written and read, planted errors
 * found at their indexes. */
#include "gpu/selftest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cudrv.h"
#include "session/pattern.h"

/* One self-test case: fill nwords at scratch with the pattern from first on
 * a grid of blocks (0: the device's), and check the fill's own count and
 * digest against the CPU's; then plant wrong words at the indexes in plant
 * (through host, which holds the CPU's copy when check_all is set, else only
 * the planted words are written), verify on the same grid, and check that
 * it counted every word, found exactly the planted ones with the lowest
 * first, and read the digest the CPU expects. */
static int self_test_case(const gpuipc_kernels *k, CUdeviceptr result, CUdeviceptr scratch,
                          uint64_t *host, uint64_t nwords, unsigned blocks, const uint64_t *plant,
                          unsigned nplant, int check_all, gpuipc_err *err)
{
    const uint64_t first = 1000003, seed = 0x0123456789abcdefull;
    uint64_t r[GPUIPC_KERNELS_RESULT_WORDS], digest, i;
    char what[96];
    gpuipc_check check;
    CUresult rc;
    int ret;

    snprintf(what, sizeof(what), "%llu words on %u block%s of %u threads",
             (unsigned long long)nwords, blocks ? blocks : k->max_blocks,
             blocks == 1 ? "" : "s", k->threads);
    if ((ret = gpuipc_kernels_run(k, result, 0, scratch, nwords, first, seed, blocks, NULL, r,
                                  err)) < 0)
        return ret;
    digest = gpuipc_pattern_digest(nwords, first, seed);
    if (r[GPUIPC_KERNELS_WORDS] != nwords || r[GPUIPC_KERNELS_DIGEST] != digest)
        return gpuipc_err_set(err, -EIO, "self-test, %s: the fill kernel counted %llu words "
                              "and digest 0x%016llx; the CPU expects %llu and 0x%016llx", what,
                              (unsigned long long)r[GPUIPC_KERNELS_WORDS],
                              (unsigned long long)r[GPUIPC_KERNELS_DIGEST],
                              (unsigned long long)nwords, (unsigned long long)digest);
    if (check_all) {
        /* The CPU's own indexing, independent of the kernels' grid-stride
         * loop, reads every word the GPU wrote. */
        GPUIPC_CU_GOTO(rc, err, out, cuMemcpyDtoH, host, scratch, nwords * sizeof(uint64_t));
        if (gpuipc_pattern_verify(host, nwords, first, seed, &check) != 0) {
            char text[256];

            return gpuipc_err_set(err, -EIO, "self-test, %s: the GPU fill kernel disagrees "
                                  "with the CPU pattern: %s", what,
                                  gpuipc_pattern_describe(&check, first, text, sizeof(text)));
        }
    }
    for (i = 0; i < nplant; i++) {
        uint64_t good = gpuipc_pattern_word(first + plant[i], seed), bad = good ^ (1ull << 17);

        digest += gpuipc_pattern_digest_term(first + plant[i], bad) -
                  gpuipc_pattern_digest_term(first + plant[i], good);
        GPUIPC_CU_GOTO(rc, err, out, cuMemcpyHtoD, scratch + plant[i] * sizeof(uint64_t), &bad,
                       sizeof(bad));
    }
    if ((ret = gpuipc_kernels_run(k, result, 1, scratch, nwords, first, seed, blocks, NULL, r,
                                  err)) < 0)
        return ret;
    if (r[GPUIPC_KERNELS_MISMATCHES] != nplant || r[GPUIPC_KERNELS_FIRST_BAD] !=
                                                      first + plant[0] ||
        r[GPUIPC_KERNELS_WORDS] != nwords || r[GPUIPC_KERNELS_DIGEST] != digest)
        return gpuipc_err_set(err, -EIO, "self-test, %s: the verify kernel reported %llu "
                              "mismatches (first at %llu) in %llu words, digest 0x%016llx, for "
                              "%u planted (first at %llu) in %llu words, digest 0x%016llx", what,
                              (unsigned long long)r[GPUIPC_KERNELS_MISMATCHES],
                              (unsigned long long)r[GPUIPC_KERNELS_FIRST_BAD],
                              (unsigned long long)r[GPUIPC_KERNELS_WORDS],
                              (unsigned long long)r[GPUIPC_KERNELS_DIGEST], nplant,
                              (unsigned long long)(first + plant[0]), (unsigned long long)nwords,
                              (unsigned long long)digest);
    return 0;
out:
    return gpuipc_cudrv_errno(rc);
}

/* Proves on this device, before any scenario, that the kernels compute the
 * same pattern as the CPU, that every word of a buffer is written and read
 * however the grid-stride loop divides it, and that verify reports planted
 * errors at the right index: a GPU or JIT problem then shows up as itself,
 * not as a sharing failure. Two cases:
 *   - 2 blocks over 5.07 times their threads' reach (a size that is not a
 *     multiple of the grid), every word read back by the CPU, errors planted
 *     at the first word, in the fourth round of the loop, and at the last;
 *   - the device's own grid over 2.5 times its reach, as every real size uses
 *     it, with the last word planted. */
int gpuipc_selftest_run(const gpuipc_kernels *k, CUdeviceptr result, char *summary, size_t len,
                        gpuipc_err *err)
{
    const unsigned small = 2;
    const uint64_t reach = (uint64_t)small * k->threads * 2; /* words per round */
    const uint64_t n1 = 5 * reach + 2 * 37;
    const uint64_t plant1[] = {0, 3 * reach + 5, n1 - 1};
    const uint64_t full = (uint64_t)k->max_blocks * k->threads * 2;
    const uint64_t n2 = 2 * full + full / 2 + 6;
    const uint64_t plant2[] = {n2 - 1};
    uint64_t *host = malloc(n1 * sizeof(uint64_t));
    CUdeviceptr scratch = 0;
    CUresult rc;
    int ret = -EIO;

    if (host == NULL)
        return gpuipc_err_set(err, -ENOMEM, "self-test: out of memory");
    GPUIPC_CU_GOTO(rc, err, out, cuMemAlloc, &scratch, n2 * sizeof(uint64_t));
    ret = self_test_case(k, result, scratch, host, n1, small, plant1, 3, 1, err);
    if (ret == 0)
        ret = self_test_case(k, result, scratch, host, n2, 0, plant2, 1, 0, err);
    GPUIPC_CU_CALL(cuMemFree, scratch);
    snprintf(summary, len, "self-test: %llu words on %u blocks of %u "
             "threads (%.2f rounds of the loop) and %llu words on the device's %u blocks "
             "(%.2f rounds): every word written and read, planted wrong words found at their "
             "indexes; digests and word counts match the CPU's", (unsigned long long)n1, small,
             k->threads, (double)n1 / (double)reach, (unsigned long long)n2,
             k->max_blocks, (double)n2 / (double)full);
out:
    free(host);
    if (ret != 0 && err != NULL && strncmp(err->msg, "self-test", 9) != 0)
        gpuipc_err_prefix(err, "self-test");
    return ret;
}
