/* SPDX-License-Identifier: Apache-2.0 */
/* pattern.c: filling and verifying the test pattern on the CPU. */
#include "session/pattern.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "core/clock.h"
#include "core/progress.h"

/* ---- the CPU's loops, each over one range of words ---------------------------------- */

static uint64_t fill_range(uint64_t *p, uint64_t nwords, uint64_t first, uint64_t seed)
{
    uint64_t k, digest = 0;

    for (k = 0; k < nwords; k++) {
        p[k] = gpuipc_pattern_word(first + k, seed);
        digest += gpuipc_pattern_digest_term(first + k, p[k]);
    }
    return digest;
}

static uint64_t digest_range(uint64_t nwords, uint64_t first, uint64_t seed)
{
    uint64_t k, digest = 0;

    for (k = 0; k < nwords; k++)
        digest += gpuipc_pattern_digest_term(first + k, gpuipc_pattern_word(first + k, seed));
    return digest;
}

static void verify_range(const uint64_t *p, uint64_t nwords, uint64_t first, uint64_t seed,
                         gpuipc_check *out)
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
}

/* ---- the same over consecutive parts, one thread each ----------------------------------
 * A 64 MiB buffer takes one core about 16 ms each way (the pattern and the
 * digest cost two multiplications a word); host-memory mechanisms fill and
 * check on the CPU on both sides, so the parts run on up to PARTS_MAX cores.
 * The results do not depend on how the buffer was divided: digests are sums,
 * and the first bad word is the first part's that has one. */

#define PARTS_MAX 16
#define PART_MIN_WORDS (1ull << 18) /* 2 MiB: below this a thread costs more than it saves */

enum part_op { PART_FILL, PART_DIGEST, PART_VERIFY };

typedef struct part {
    enum part_op op;
    uint64_t *out;      /* PART_FILL: the words written */
    const uint64_t *in; /* PART_VERIFY: the words read */
    uint64_t nwords, first, seed;
    uint64_t digest;    /* PART_FILL, PART_DIGEST */
    gpuipc_check check; /* PART_VERIFY */
    unsigned nparts;    /* the first part only: how many there are, for progress */
} part;

/* Adds check c of the words after those of into to into. */
static void check_add(gpuipc_check *into, const gpuipc_check *c)
{
    if (c->mismatches != 0 && into->mismatches == 0) {
        into->first_bad = c->first_bad;
        into->expected = c->expected;
        into->got = c->got;
    }
    into->words += c->words;
    into->digest += c->digest;
    into->mismatches += c->mismatches;
}

#define PROGRESS_BLOCK (1ull << 21) /* words between two progress updates (16 MiB) */

/* Runs the part; the first part (nparts set) also reports progress for the
 * whole, as its own share times nparts, block by block. */
static void *part_run(void *arg)
{
    part *t = arg;
    uint64_t at = 0, block = t->nparts != 0 ? PROGRESS_BLOCK : t->nwords;

    t->digest = 0;
    memset(&t->check, 0, sizeof(t->check));
    while (at < t->nwords) {
        uint64_t n = t->nwords - at < block ? t->nwords - at : block;
        gpuipc_check c;

        if (t->op == PART_FILL) {
            t->digest += fill_range(t->out + at, n, t->first + at, t->seed);
        } else if (t->op == PART_DIGEST) {
            t->digest += digest_range(n, t->first + at, t->seed);
        } else {
            verify_range(t->in + at, n, t->first + at, t->seed, &c);
            check_add(&t->check, &c);
        }
        at += n;
        if (t->nparts != 0)
            gpuipc_progress_update((at * t->nparts * 8) >> 20);
    }
    return NULL;
}

/* How many parts nwords is worth: one per PART_MIN_WORDS, at most one per
 * core this process may run on, at most PARTS_MAX. */
static unsigned parts_for(uint64_t nwords)
{
    uint64_t want = nwords / PART_MIN_WORDS;
    cpu_set_t cpus;
    int ncpu = 1;

    if (want < 2)
        return 1;
    if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0)
        ncpu = CPU_COUNT(&cpus);
    if (ncpu < 1)
        ncpu = 1;
    if (want > (uint64_t)ncpu)
        want = (uint64_t)ncpu;
    return want > PARTS_MAX ? PARTS_MAX : (unsigned)want;
}

/* Runs op over words first..first+nwords-1 (of out or in, where it has one) in
 * parts[0..n-1], n from parts_for(), part 0 on this thread; a part whose
 * thread cannot be made runs here too. Returns n. */
static unsigned run_parts(part parts[PARTS_MAX], enum part_op op, uint64_t *out,
                          const uint64_t *in, uint64_t nwords, uint64_t first, uint64_t seed)
{
    pthread_t thread[PARTS_MAX];
    int started[PARTS_MAX] = {0};
    unsigned n = parts_for(nwords), i;
    uint64_t at = 0;

    for (i = 0; i < n; i++) {
        uint64_t len = nwords / n + (i < nwords % n);

        memset(&parts[i], 0, sizeof(parts[i]));
        parts[i].op = op;
        parts[i].out = out != NULL ? out + at : NULL;
        parts[i].in = in != NULL ? in + at : NULL;
        parts[i].nwords = len;
        parts[i].first = first + at;
        parts[i].seed = seed;
        at += len;
    }
    for (i = 1; i < n; i++)
        started[i] = pthread_create(&thread[i], NULL, part_run, &parts[i]) == 0;
    /* A large buffer's pass may take seconds: progress.h's line, on a
     * terminal, after 2 s. */
    gpuipc_progress_begin(op == PART_FILL ? "writing the pattern" : op == PART_DIGEST
                          ? "computing the digest" : "checking the pattern", "MiB",
                          (nwords * 8) >> 20);
    parts[0].nparts = n;
    part_run(&parts[0]);
    for (i = 1; i < n; i++) {
        if (started[i])
            pthread_join(thread[i], NULL);
        else
            part_run(&parts[i]);
    }
    gpuipc_progress_end();
    return n;
}

/* PART_FILL into out, or PART_DIGEST: the digest of the whole, the sum of
 * the parts'. */
static uint64_t run_digest(enum part_op op, uint64_t *out, uint64_t nwords, uint64_t first,
                           uint64_t seed)
{
    part parts[PARTS_MAX];
    unsigned n = run_parts(parts, op, out, NULL, nwords, first, seed), i;
    uint64_t digest = 0;

    for (i = 0; i < n; i++)
        digest += parts[i].digest;
    return digest;
}

uint64_t gpuipc_pattern_fill(uint64_t *p, uint64_t nwords, uint64_t first, uint64_t seed)
{
    return run_digest(PART_FILL, p, nwords, first, seed);
}

uint64_t gpuipc_pattern_digest(uint64_t nwords, uint64_t first, uint64_t seed)
{
    return run_digest(PART_DIGEST, NULL, nwords, first, seed);
}

uint64_t gpuipc_pattern_verify(const uint64_t *p, uint64_t nwords, uint64_t first,
                               uint64_t seed, gpuipc_check *out)
{
    part parts[PARTS_MAX];
    unsigned n = run_parts(parts, PART_VERIFY, NULL, p, nwords, first, seed), i;

    memset(out, 0, sizeof(*out));
    for (i = 0; i < n; i++)
        check_add(out, &parts[i].check);
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
