/* SPDX-License-Identifier: Apache-2.0 */
/* rank_results.c: a --ranks run's cells as rows, culprits and words
 * (rank_results.h). */
#include "run/rank_results.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/status.h"
#include "core/step.h"

/* Room for one row's texts: its name ("<mechanism> <p>-><c>", two numbers
 * of up to 10 digits) and its mechanism, each with its NUL. */
#define ROW_NAME_LEN (GPUIPC_CELL_MECH_LEN + 24)
#define ROW_TEXT_LEN (ROW_NAME_LEN + GPUIPC_CELL_MECH_LEN)

/* The rows pair p -> c makes: a row per scenario, or one for the pair. */
static size_t rows_of(const gpuipc_cell *cell)
{
    return cell->prod.have && cell->prod.n > 0 ? cell->prod.n : 1;
}

/* Row r's texts at text (ROW_TEXT_LEN bytes): its name, then its
 * mechanism. */
static void name_row(gpuipc_result *r, char *text, const char *mech, uint32_t p, uint32_t c)
{
    char *mechanism = text + ROW_NAME_LEN;

    snprintf(text, ROW_NAME_LEN, "%s %u->%u", mech, p, c);
    snprintf(mechanism, GPUIPC_CELL_MECH_LEN, "%s", mech);
    r->mech = text;
    r->mechanism = mechanism;
    r->gpu = (int)p;
    r->peer_gpu = (int)c;
}

/* The failure's own reason, as the row's (cut to what a status holds). */
static void copy_reason(gpuipc_result *r)
{
    snprintf(r->failure.reason, sizeof(r->failure.reason), "%.*s",
             (int)sizeof(r->failure.reason) - 1, r->reason);
}

/* A scenario of the producer's record as a row; why: the pair's reason
 * where it failed as a whole ("" where its scenarios say it). */
static void scenario_row(gpuipc_result *r, const gpuipc_cell_scenario *s, const char *why)
{
    r->status = s->status;
    r->failed_side = s->side;
    snprintf(r->reason, sizeof(r->reason), "%s", s->reason);
    snprintf(r->cause.what, sizeof(r->cause.what), "%s", s->what);
    snprintf(r->cause.fix, sizeof(r->cause.fix), "%s", s->fix);
    r->failure.code = s->status;
    r->failure.step = s->step;
    r->failure.errnum = s->errnum;
    r->failure.cu = s->cu;
    snprintf(r->failure.call, sizeof(r->failure.call), "%s", s->call);
    copy_reason(r);
    if (s->status == GPUIPC_PASS) {
        r->reason[0] = '\0'; /* a pass's text is its detail, not a reason */
        snprintf(r->detail, sizeof(r->detail), "%s", s->reason);
        if (why[0] != '\0') {
            /* Its pair is not proven: neither is the scenario. */
            r->status = GPUIPC_FAIL;
            r->failure.code = GPUIPC_FAIL;
            r->failure.step = 0;
            snprintf(r->reason, sizeof(r->reason), "the pair is not proven: %.*s",
                     (int)sizeof(r->reason) - 32, why);
            copy_reason(r);
        }
    }
}

int gpuipc_rank_results_make(gpuipc_rank_results *out, const gpuipc_cell *cells, uint32_t size,
                             const char *const *who, const char *const *mechs, size_t nmech)
{
    size_t n = 0, i, k = 0;
    uint32_t p, c;

    memset(out, 0, sizeof(*out));
    for (p = 0; p < size; p++)
        for (c = 0; c < size; c++)
            if (p != c)
                n += rows_of(&cells[(size_t)p * size + c]);
    if (n == 0)
        return 0;
    out->results = calloc(n, sizeof(*out->results));
    out->names = calloc(n, ROW_TEXT_LEN);
    if (out->results == NULL || out->names == NULL) {
        gpuipc_rank_results_free(out);
        return -ENOMEM;
    }
    for (p = 0; p < size; p++)
        for (c = 0; c < size; c++) {
            const gpuipc_cell *cell = &cells[(size_t)p * size + c];
            char why[GPUIPC_ERR_LEN];
            int v;

            if (p == c)
                continue;
            v = gpuipc_cell_verdict(cell, who, mechs, nmech, why, sizeof(why), NULL, NULL,
                                    NULL);
            if (rows_of(cell) == 1 && (!cell->prod.have || cell->prod.n == 0)) {
                gpuipc_result *r = &out->results[k];

                name_row(r, out->names + k * ROW_TEXT_LEN, "pair", p, c);
                r->status = v;
                r->failure.code = v;
                snprintf(r->reason, sizeof(r->reason), "%s",
                         why[0] != '\0' ? why : "no scenario ran in this pair");
                copy_reason(r);
                k++;
                continue;
            }
            for (i = 0; i < cell->prod.n; i++, k++) {
                name_row(&out->results[k], out->names + k * ROW_TEXT_LEN, cell->prod.s[i].mech,
                         p, c);
                scenario_row(&out->results[k], &cell->prod.s[i], why);
            }
        }
    out->n = k;
    return 0;
}

void gpuipc_rank_results_free(gpuipc_rank_results *out)
{
    free(out->results);
    free(out->names);
    memset(out, 0, sizeof(*out));
}

/* Whether the producer's record holds each of mechs once, and nothing
 * else (as gpuipc_cell_verdict asks it to). */
static int holds_the_run(const gpuipc_cell_side *pr, const char *const *mechs, size_t nmech)
{
    size_t i, k, seen;

    if (mechs == NULL)
        return 1;
    for (i = 0; i < nmech; i++) {
        for (k = seen = 0; k < pr->n; k++)
            seen += strcmp(pr->s[k].mech, mechs[i]) == 0;
        if (seen != 1)
            return 0;
    }
    return pr->n == nmech;
}

/* Whether the counts BYE gave the consumer are those of the producer's
 * record (as gpuipc_cell_verdict compares them). */
static int agree(const gpuipc_cell_side *pr, const gpuipc_cell_side *co)
{
    unsigned np = 0, nf = 0, ns = 0;
    size_t i;

    for (i = 0; i < pr->n; i++) {
        np += pr->s[i].status == GPUIPC_PASS;
        nf += pr->s[i].status == GPUIPC_FAIL || pr->s[i].status == GPUIPC_STOPPED ||
              pr->s[i].status < 0;
        /* A skip the producer left out of the session is not in BYE's. */
        ns += pr->s[i].status == GPUIPC_SKIP && pr->s[i].side != 0;
    }
    return co->passed == np && co->failed == nf && co->skipped == ns;
}

unsigned gpuipc_cell_blames(const gpuipc_cell *cell, const char *const *who,
                            const char *const *mechs, size_t nmech)
{
    const unsigned both = GPUIPC_CELL_BLAMES_PRODUCER | GPUIPC_CELL_BLAMES_CONSUMER;
    const gpuipc_cell_side *pr = &cell->prod, *co = &cell->cons;
    char why[GPUIPC_ERR_LEN];
    unsigned blames = 0;
    size_t i;

    if (gpuipc_cell_verdict(cell, who, mechs, nmech, why, sizeof(why), NULL, NULL, NULL) !=
        GPUIPC_FAIL)
        return 0;
    /* A rank gone, hung or refused: what the other side saw follows from it. */
    if (!pr->have)
        blames |= GPUIPC_CELL_BLAMES_PRODUCER;
    if (!co->have)
        blames |= GPUIPC_CELL_BLAMES_CONSUMER;
    if (pr->have && pr->gone)
        blames |= GPUIPC_CELL_BLAMES_CONSUMER; /* the producer saw it die */
    if (co->have && co->gone)
        blames |= GPUIPC_CELL_BLAMES_PRODUCER; /* the consumer saw it die */
    if (blames != 0)
        return blames;
    /* Both reported, and no session: the side whose note leads says whom
     * it blames (a consumer that refused the producer's token: the
     * producer; a rank stuck in a call: itself), else both. */
    if (!pr->met) {
        const gpuipc_cell_side *lead = gpuipc_cell_lead(cell);
        const gpuipc_cell_side *other = lead == pr ? co : pr;

        if (lead->blame == GPUIPC_CELL_BLAME_NONE && other->have &&
            other->blame != GPUIPC_CELL_BLAME_NONE)
            lead = other; /* the leading note names nobody: the other's does */
        blames = lead == pr ? GPUIPC_CELL_BLAMES_PRODUCER : GPUIPC_CELL_BLAMES_CONSUMER;
        return lead->blame == GPUIPC_CELL_BLAME_SELF ? blames
               : lead->blame == GPUIPC_CELL_BLAME_NONE ? both : both & ~blames;
    }
    if (!holds_the_run(pr, mechs, nmech))
        return GPUIPC_CELL_BLAMES_PRODUCER;
    /* A side still in the session when the verdict's time came, stuck in
     * a step or call of its own, is the one its record blames. */
    if (co->have && co->blame == GPUIPC_CELL_BLAME_SELF)
        return GPUIPC_CELL_BLAMES_CONSUMER;
    if (pr->blame == GPUIPC_CELL_BLAME_SELF)
        return GPUIPC_CELL_BLAMES_PRODUCER;
    for (i = 0; i < pr->n; i++) {
        const gpuipc_cell_scenario *s = &pr->s[i];
        unsigned side;

        if (s->status == GPUIPC_PASS || s->status == GPUIPC_SKIP)
            continue;
        side = s->side == GPUIPC_ROLE_PRODUCER ? GPUIPC_CELL_BLAMES_PRODUCER
             : s->side == GPUIPC_ROLE_CONSUMER ? GPUIPC_CELL_BLAMES_CONSUMER : both;
        /* A side that timed out waiting for the other names the other. */
        if (s->errnum == ETIMEDOUT && side != both)
            side = both & ~side;
        blames |= side;
    }
    if (blames != 0)
        return blames;
    /* No scenario failed: where the consumer's side held and its counts
     * are the producer's, what failed is the producer's own end (a leak,
     * its last checks); else the sides disagree, on no known side. */
    if (co->said_bye && co->own == GPUIPC_PASS && agree(pr, co) && pr->code == GPUIPC_FAIL)
        return GPUIPC_CELL_BLAMES_PRODUCER;
    return both;
}

/* Whether cell's culprits come from a wait, to be followed along the
 * waits the records name: a pair with no session, or one whose scenario
 * timed out waiting for the other side. */
static int by_wait(const gpuipc_cell *cell)
{
    const gpuipc_cell_side *pr = &cell->prod;
    size_t i;

    if (!pr->have || !pr->met)
        return 1;
    for (i = 0; i < pr->n; i++)
        if (pr->s[i].status != GPUIPC_PASS && pr->s[i].status != GPUIPC_SKIP &&
            pr->s[i].errnum == ETIMEDOUT)
            return 1;
    return 0;
}

/* The rank r waited for, in its pair under way when the verdict's time
 * came (its side's blame GPUIPC_CELL_BLAME_WAITS), or r itself. */
static uint32_t waits_for(const gpuipc_cell *cells, uint32_t size, uint32_t r)
{
    uint32_t k;

    for (k = 0; k < size; k++) {
        if (k == r)
            continue;
        if (cells[(size_t)r * size + k].prod.have &&
            cells[(size_t)r * size + k].prod.blame == GPUIPC_CELL_BLAME_WAITS)
            return k;
        if (cells[(size_t)k * size + r].cons.have &&
            cells[(size_t)k * size + r].cons.blame == GPUIPC_CELL_BLAME_WAITS)
            return k;
    }
    return r;
}

/* The end of r's chain of waits: the rank that waited for nobody (stuck
 * itself, or gone); r where the chain goes round. */
static uint32_t chain_end(const gpuipc_cell *cells, uint32_t size, uint32_t r)
{
    uint32_t at = r, steps, next;

    for (steps = 0; steps < size; steps++) {
        if ((next = waits_for(cells, size, at)) == at)
            return at;
        at = next;
    }
    return r;
}

int gpuipc_rank_culprits(const gpuipc_cell *cells, uint32_t size, const char *const *who,
                         const char *const *mechs, size_t nmech, uint32_t **out)
{
    uint32_t *ends = malloc((size_t)size * sizeof(*ends));
    uint32_t *c = malloc((size_t)size * size * 2 * sizeof(*c));
    uint32_t p, q;

    *out = NULL;
    if (ends == NULL || c == NULL) {
        free(ends);
        free(c);
        return -ENOMEM;
    }
    for (p = 0; p < size; p++)
        ends[p] = chain_end(cells, size, p);
    for (p = 0; p < size; p++)
        for (q = 0; q < size; q++) {
            uint32_t *at = &c[((size_t)p * size + q) * 2];
            const gpuipc_cell *cell = &cells[(size_t)p * size + q];
            unsigned b = p == q ? 0 : gpuipc_cell_blames(cell, who, mechs, nmech);
            /* The waits explain a pair that had no session, or whose side
             * timed out waiting; one that failed on its own data (a
             * scenario's side, a death seen in it, its end, a side stuck
             * in it) names its ranks. */
            int follow = p != q && by_wait(cell);

            at[0] = b & GPUIPC_CELL_BLAMES_PRODUCER ? follow ? ends[p] : p : UINT32_MAX;
            at[1] = b & GPUIPC_CELL_BLAMES_CONSUMER ? follow ? ends[q] : q : UINT32_MAX;
            if (at[1] == at[0])
                at[1] = UINT32_MAX;
        }
    free(ends);
    *out = c;
    return 0;
}

const char *gpuipc_rank_results_line(char *buf, size_t len, int code, uint32_t size,
                                     const gpuipc_cells_tally *t, uint64_t wall_ns)
{
    char took[32] = "";

    if (wall_ns > 0)
        snprintf(took, sizeof(took), ", in %.2f s", (double)wall_ns / 1e9);
    snprintf(buf, len, "%s: %u ranks, %llu ordered pairs: %u proven, %u failed, %u skipped "
             "(their scenarios: %u passed, %u failed, %u skipped)%s (exit %d)",
             gpuipc_exit_word(code), size,
             (unsigned long long)size * (size > 0 ? size - 1 : 0), t->proven, t->failed,
             t->skipped, t->passed, t->sfailed, t->sskipped, took, code);
    return buf;
}
