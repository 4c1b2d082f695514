/* SPDX-License-Identifier: Apache-2.0 */
/* ranks_verdict.c: the end of --ranks, on a thread of its own that makes no
 * GPU call, so that a verdict comes by the deadline even where a rank is
 * stuck in the driver. The thread waits until the run's thread has played
 * its pairs or the verdict's time comes (the deadline less its reserve,
 * rr->pairs_until), whichever is first. Then each rank publishes its
 * records (run/cells): the pairs it ended, and for the others where it is
 * (its pair, step and call, from its watchdog's page). The lowest living
 * rank (rank 0, unless its process is gone) gathers every rank's as each
 * comes, makes each ordered pair's verdict from both sides, prints the
 * failing and skipped ones with the more specific cause of the two, writes
 * the files and publishes the run's status, and stays until this node's
 * other ranks have left; the others take that status or say why it never
 * came. A rank whose run's thread is still stuck then is ended by this
 * thread with that status. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app/cuda/ranks_run.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"
#include "core/step.h"
#include "core/stop.h"
#include "core/watch.h"
#include "run/brief.h"
#include "run/rank_results.h"

/* How long one PMIx get may wait before the caller looks again at who is
 * gone and at its own deadline. */
#define ASK_NS (1000ull * 1000000ull)

/* ---- this rank's records ------------------------------------------------------------ */

/* Where the run's thread is now in its pair of slot k (RANKS_EXPORTS or
 * RANKS_IMPORTS), for the records it did not end, into buf, and what that
 * is worth as a cause (enum gpuipc_cell_weight): in a driver call, the
 * most; waiting for a peer, little. */
static int where_now(const ranks_run *rr, int k, char *buf, size_t len)
{
    const gpuipc_watch_page *page = gpuipc_watch_page_get();
    const char *me = gpuipc_ranks_who(rr, rr->rank);
    int role = k == RANKS_EXPORTS ? GPUIPC_ROLE_PRODUCER : GPUIPC_ROLE_CONSUMER;
    uint32_t peer = rr->where.as[k].peer;
    uint32_t p = k == RANKS_EXPORTS ? rr->rank : peer, c = k == RANKS_EXPORTS ? peer : rr->rank;
    const char *as = k == RANKS_EXPORTS ? "producer" : "consumer";
    const gpuipc_watch_side *w;
    char call[GPUIPC_WATCH_CALL_LEN];
    uint64_t since;
    unsigned step;

    if (!rr->where.as[k].in_pair) {
        snprintf(buf, len, "%s was between pairs", me);
        return GPUIPC_CELL_VAGUE;
    }
    w = page != NULL ? &page->side[role] : NULL;
    step = w != NULL ? w->step : GPUIPC_STEP_NONE;
    since = w != NULL ? w->since_ns : 0;
    call[0] = '\0';
    if (w != NULL) {
        memcpy(call, w->call, sizeof(call));
        call[sizeof(call) - 1] = '\0';
    }
    if (step == GPUIPC_STEP_NONE) {
        snprintf(buf, len, "%s was in pair %u -> %u as its %s, waiting for its peer to come",
                 me, p, c, as);
        return GPUIPC_CELL_VAGUE;
    }
    if (call[0] == '\0' || since == 0) {
        snprintf(buf, len, "%s was in pair %u -> %u as its %s, at %s", me, p, c, as,
                 gpuipc_step_name(step));
        return GPUIPC_CELL_SURE;
    }
    snprintf(buf, len, "%s was in pair %u -> %u as its %s, at %s in %s for %.1f s", me, p, c,
             as, gpuipc_step_name(step), call,
             (double)(gpuipc_clock_ns() - since) / 1e9);
    return strncmp(call, "cu", 2) == 0 ? GPUIPC_CELL_STUCK
           : strcmp(call, "poll") == 0 ? GPUIPC_CELL_PLAIN : GPUIPC_CELL_SURE;
}

/* The record of the pair with peer (k RANKS_EXPORTS: this rank its
 * producer; RANKS_IMPORTS: its consumer) that the run's thread did not
 * end, into side. */
static void not_ended(const ranks_run *rr, uint32_t peer, int k, gpuipc_cell_side *side)
{
    char where[GPUIPC_CELL_TEXT_LEN - 64];
    int current = rr->where.as[k].in_pair && rr->where.as[k].peer == peer;
    /* A pair after the ones under way: where the rank is, in either. */
    int at = current || rr->where.as[k].in_pair ? k
             : rr->where.as[1 - k].in_pair ? 1 - k : k;
    int weight = where_now(rr, at, where, sizeof(where));

    memset(side, 0, sizeof(*side));
    side->code = GPUIPC_FAIL;
    side->weight = weight;
    /* Stuck in a call or a step of its own: this rank; waiting for its
     * peer in the pair under way: that peer (the culprits follow the
     * wait); a pair after it: nobody. */
    side->blame = weight >= GPUIPC_CELL_SURE ? GPUIPC_CELL_BLAME_SELF
                  : current ? GPUIPC_CELL_BLAME_WAITS : GPUIPC_CELL_BLAME_NONE;
    if (rr->played)
        snprintf(side->note, sizeof(side->note), "not played: the run was stopped before this "
                 "pair");
    else if (current)
        snprintf(side->note, sizeof(side->note), "under way when the verdict's time came "
                 "(--deadline less its reserve): %.320s", where);
    else if (rr->where.as[at].in_pair)
        snprintf(side->note, sizeof(side->note), "not reached: %.320s when the verdict's time "
                 "came", where);
    else {
        snprintf(side->note, sizeof(side->note), "not reached: the verdict's time came first "
                 "(raise --deadline for this many ranks)");
        side->weight = GPUIPC_CELL_VAGUE;
        side->blame = GPUIPC_CELL_BLAME_NONE;
    }
}

/* This rank's records as text, for KEY_RESULTS, with what its listener
 * refused into refused (len): taken under mu, after which the run's
 * thread hands over no more. Returns the text (malloc'd) or NULL out of
 * memory; *own_failed says whether one of its own ended pairs failed. */
static char *take_records(ranks_run *rr, char *refused, size_t len, int *own_failed)
{
    gpuipc_cell_side tmp; /* a pair not ended: a note, no scenarios */
    char *buf = malloc(1);
    size_t used = 0, cap = 1, i;
    int rc = 0;

    *own_failed = 0;
    pthread_mutex_lock(&rr->mu);
    rr->published = 1;
    snprintf(refused, len, "%s", rr->refused_line[0] ? rr->refused_line : "none");
    if (buf != NULL)
        buf[0] = '\0';
    for (i = 0; i < (size_t)rr->size * 2 && buf != NULL && rc == 0; i++) {
        uint32_t peer = (uint32_t)(i / 2);
        const gpuipc_cell_side *side = &rr->mine[i];
        int k = (int)(i % 2);

        if (peer == rr->rank)
            continue;
        if (!rr->final[i]) {
            not_ended(rr, peer, k, &tmp);
            side = &tmp;
        }
        *own_failed |= side->code != GPUIPC_PASS && side->code != GPUIPC_SKIP;
        rc = gpuipc_cells_encode(&buf, &used, &cap, k == 0 ? 1 : 2,
                                 k == 0 ? rr->rank : peer, k == 0 ? peer : rr->rank, side);
    }
    pthread_mutex_unlock(&rr->mu);
    if (rc < 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

int gpuipc_ranks_record(ranks_run *rr, uint32_t peer, int consumer)
{
    size_t i = (size_t)peer * 2 + (consumer ? 1 : 0);
    int taken;

    pthread_mutex_lock(&rr->mu);
    taken = !rr->published;
    if (taken) {
        gpuipc_cell_side_move(&rr->mine[i], rr->work[consumer ? 1 : 0]);
        rr->final[i] = 1;
    }
    /* Out of the pair only now, under mu: the verdict's thread never sees
     * this rank between pairs with the pair's record not yet handed over. */
    gpuipc_ranks_watch_no_pair(rr, consumer ? RANKS_IMPORTS : RANKS_EXPORTS);
    pthread_mutex_unlock(&rr->mu);
    return taken ? 0 : -1;
}

void gpuipc_ranks_amend(ranks_run *rr, uint32_t peer, int consumer, const char *text)
{
    size_t i = (size_t)peer * 2 + (consumer ? 1 : 0);
    gpuipc_cell_side *side = &rr->mine[i];

    pthread_mutex_lock(&rr->mu);
    /* A pair that never met (skipped, refused, its peer gone) moved
     * nothing of this process's: its record stands. */
    if (!rr->published && rr->final[i] && side->met) {
        int failed = side->code == GPUIPC_FAIL || (consumer && side->own != GPUIPC_PASS);

        side->code = GPUIPC_FAIL;
        side->own = GPUIPC_FAIL; /* a consumer's record: its own side failed */
        if (!failed) {
            side->weight = GPUIPC_CELL_SURE;
            side->blame = GPUIPC_CELL_BLAME_SELF;
            snprintf(side->note, sizeof(side->note), "%.*s", (int)sizeof(side->note) - 1,
                     text);
        } else {
            /* Its own failure first, with its weight and blame. */
            size_t used = strlen(side->note);

            snprintf(side->note + used, sizeof(side->note) - used, "%s%s", used ? "; and " : "",
                     text);
        }
    }
    pthread_mutex_unlock(&rr->mu);
}

/* ---- the verdict -------------------------------------------------------------------- */

/* The rank that gives the verdict: the lowest one not known to be gone. */
static uint32_t reporter(ranks_run *rr)
{
    uint32_t r;

    for (r = 0; r < rr->size; r++)
        if (r == rr->rank || !gpuipc_ranks_is_gone(rr, r))
            return r;
    return rr->rank;
}

/* Until when the lowest living rank gathers the others' records: with a
 * deadline, a third of its reserve before it (the rest is for the words
 * and the files); without one, twice --timeout from now. */
static uint64_t gather_until(const ranks_run *rr)
{
    uint64_t reserve;

    if (rr->o->deadline_ns == 0 || rr->pairs_until == UINT64_MAX)
        return gpuipc_clock_deadline(2 * rr->o->timeout_ns);
    reserve = rr->t0 + rr->o->deadline_ns - rr->pairs_until;
    return rr->t0 + rr->o->deadline_ns - reserve / 3;
}

/* Asks rank r for key until it comes, r is gone, a stop, or until passes.
 * Returns as gpuipc_launch_get does (-ESRCH: gone). */
static int ask(ranks_run *rr, uint32_t r, const char *key, char *buf, size_t len,
               uint64_t until, gpuipc_err *err)
{
    int rc;

    for (;;) {
        uint64_t t = gpuipc_clock_ns(), left = until > t ? until - t : 0;

        /* The time first: asking whether a rank elsewhere runs may take a
         * probe's time, which is not spent past the gathering's end. */
        if (left == 0)
            return gpuipc_err_set(err, -ENOENT, "nothing came from %s before the verdict's "
                                  "time to gather ended", gpuipc_ranks_who(rr, r));
        if (gpuipc_ranks_is_gone(rr, r))
            return gpuipc_err_set(err, -ESRCH, "%s is gone (its process has ended)",
                                  gpuipc_ranks_who(rr, r));
        rc = gpuipc_launch_get_within(rr->l, r, key, buf, len, left < ASK_NS ? left : ASK_NS,
                                      err);
        if (rc != -ENOENT || gpuipc_stop_signal() != 0 || gpuipc_clock_ns() >= until)
            return rc;
        /* A server that answers at once that nothing is there yet: not a
         * busy loop. */
        if (gpuipc_clock_ns() - t < ASK_NS / 10) {
            struct timespec pause = {0, 20 * 1000000L};

            nanosleep(&pause, NULL);
        }
    }
}

/* The lowest living rank, its verdict given: stays until every other rank
 * has left (its process ended: on this node its pidfd says so, elsewhere
 * its TCP listener refuses a probe), at most --timeout, so that none of
 * them finds it gone and takes it for dead before its verdict. */
static void linger(ranks_run *rr)
{
    uint64_t deadline = gpuipc_clock_deadline(rr->o->timeout_ns);
    struct timespec pause = {0, 20 * 1000000L};
    uint32_t r;

    for (;;) {
        for (r = 0; r < rr->size; r++) {
            char why[256];
            int gone, stuck;

            gpuipc_ranks_marks(rr, r, &gone, &stuck);
            if (r != rr->rank && !gone &&
                (gpuipc_job_where_is(rr->job, r, why, sizeof(why)) == GPUIPC_JOB_SAME_NODE ||
                 gpuipc_meet_remote(rr->meet, r)) &&
                !gpuipc_meet_ended(rr->meet, r))
                break;
        }
        if (r == rr->size || gpuipc_clock_ms_left(deadline) == 0 || gpuipc_stop_signal())
            return;
        nanosleep(&pause, NULL);
    }
}

/* Each rank's node and GPU in words, for the judgement's lines: its host
 * name (with its boot id's last digits where two boots share one: a test's
 * faked nodes) and its GPU's ordinal there. Returns the block that holds
 * them (the caller frees it), or NULL where there is no room. */
static char *places_make(const ranks_run *rr, gpuipc_cells_where *where)
{
    enum { LEN = 96 };
    size_t size = rr->size;
    char *block = calloc(size, 2 * (LEN + sizeof(char *)));
    const char **node = (const char **)(void *)block, **gpu = node + size;
    char *text = block + 2 * size * sizeof(char *);
    uint32_t r, q;

    if (block == NULL)
        return NULL;
    for (r = 0; r < size; r++) {
        const gpuipc_job_card *a = gpuipc_job_card_of(rr->job, r);
        char *n = text + (size_t)r * 2 * LEN, *g = n + LEN;
        int shared = 0;

        /* (Quadratic: not beyond 4096 ranks, where hosts alone are said.) */
        for (q = 0; q < size && size <= 4096 && !shared; q++) {
            const gpuipc_job_card *b = gpuipc_job_card_of(rr->job, q);

            shared = strcmp(a->host, b->host) == 0 &&
                     memcmp(a->boot_id, b->boot_id, sizeof(a->boot_id)) != 0;
        }
        if (shared)
            snprintf(n, LEN, "%.64s/boot:..%02x%02x", a->host, a->boot_id[14], a->boot_id[15]);
        else
            snprintf(n, LEN, "%.64s", a->host);
        if (rr->gpus[r].ordinal >= 0)
            snprintf(g, LEN, "%s:%d", n, rr->gpus[r].ordinal);
        else
            snprintf(g, LEN, "%s:none", n);
        node[r] = n;
        gpu[r] = g;
    }
    where->node = node;
    where->gpu = gpu;
    where->left_out = gpuipc_ranks_left_out;
    where->arg = (void *)rr;
    return block;
}

/* The lowest living rank: every rank's records, each pair's verdict, the
 * words and the files. Returns the run's status. */
static int judge(ranks_run *rr, const char *own, const char *own_refused)
{
    gpuipc_cell *cells = calloc((size_t)rr->size * rr->size, sizeof(*cells));
    char *got = malloc(GPUIPC_LAUNCH_VALUE_MAX);
    uint64_t until = gather_until(rr);
    unsigned silent = 0;
    gpuipc_cells_tally t;
    gpuipc_cells_where where;
    char refused[400], line[512], *places;
    uint32_t r;
    gpuipc_err err;
    int code, rc;

    if (cells == NULL || got == NULL) {
        free(cells);
        free(got);
        gpuipc_ranks_say_result(rr, "%s: out of memory for the verdicts of %u ranks (exit %d)",
                                gpuipc_exit_word(GPUIPC_FAIL), rr->size, GPUIPC_FAIL);
        return GPUIPC_FAIL;
    }
    if (rr->rank != 0)
        printf("rank %u: rank 0 is gone (its process has ended): the lowest living rank, this "
               "one, gives the run's verdict\n", rr->rank);
    for (r = 0; r < rr->size; r++) {
        const char *text = own;

        if (r != rr->rank) {
            /* A get of a key that a dead rank never put can wait for ever,
             * whatever its timeout (OpenPMIx 4.2, after the rank's exit):
             * a rank of this node whose process has ended is not asked. */
            if (ask(rr, r, KEY_RESULTS, got, GPUIPC_LAUNCH_VALUE_MAX, until, &err) < 0) {
                printf("rank %u: %s's results never came: %s\n", rr->rank,
                       gpuipc_ranks_who(rr, r), err.msg);
                silent++;
                continue;
            }
            text = got;
            /* What the rank refused at its listener, named here too. */
            if (gpuipc_launch_get(rr->l, r, KEY_REFUSED, refused, sizeof(refused), &err) ==
                    0 && strncmp(refused, "refused ", 8) == 0)
                printf("rank %u: %s %s\n", rr->rank, gpuipc_ranks_who(rr, r), refused);
        } else if (strncmp(own_refused, "refused ", 8) == 0) {
            printf("rank %u: %s %s\n", rr->rank, gpuipc_ranks_who(rr, r), own_refused);
        }
        if (gpuipc_cells_decode(text, r, rr->size, cells, &err) < 0) {
            /* Nothing of a rank that reports nonsense is taken: the
             * decoder keeps none of its records. */
            printf("rank %u: %s's results are refused: %s\n", rr->rank,
                   gpuipc_ranks_who(rr, r), err.msg);
            silent++;
        }
    }
    places = places_make(rr, &where);
    rc = gpuipc_cells_judge(cells, rr->size, rr->whop, rr->mechs, rr->s->nsel,
                            places != NULL ? &where : NULL, stdout, &t);
    free(places);
    if (rc < 0) {
        printf("rank %u: out of memory for the causes of %u ranks' pairs\n", rr->rank,
               rr->size);
        silent++;
    }
    code = gpuipc_status_verdict(t.proven, t.failed + silent, 0);
    code = gpuipc_app_stop_code(code);
    /* A rank that gives the verdict in rank 0's place checks --json's
     * path now (rank 0 checked it before the run). */
    if (rr->o->json && !rr->json_checked &&
        gpuipc_outfile_check(&rr->json, rr->o->json_path, &err) == 0)
        rr->json_checked = 1;
    else if (rr->o->json && !rr->json_checked)
        printf("rank %u: --json %s: %s\n", rr->rank, rr->o->json_path, err.msg);
    if ((rr->o->json && !rr->json_checked) ||
        gpuipc_ranks_json_write(rr, cells, code, t.proven, t.failed, t.skipped) < 0)
        code = GPUIPC_FAIL; /* a verdict that cannot be written is no pass */
    if (gpuipc_ranks_files_write(rr, cells, code, &t) < 0)
        code = GPUIPC_FAIL;
    memcpy(line, "result: ", 8);
    gpuipc_rank_results_line(line + 8, sizeof(line) - 8, code, rr->size, &t,
                             gpuipc_clock_ns() - rr->t0);
    /* --brief's notes: the first failure said, and its cause. */
    gpuipc_brief_note(t.first[0] ? t.first : NULL, t.cause[0] ? t.cause : NULL);
    fflush(stdout);
    gpuipc_log_line(1, line);
    gpuipc_cells_free(cells, rr->size);
    free(cells);
    free(got);
    return code;
}

/* A rank that does not give the verdict: the run's status from the one
 * that does (another, where that one is found gone meanwhile), until the
 * deadline's grace, or this rank gives it itself where it becomes the
 * lowest living rank. Returns the status this rank exits with. */
static int take_verdict(ranks_run *rr, const char *own, const char *own_refused,
                        int own_failed)
{
    uint64_t until = rr->o->deadline_ns > 0
                     ? rr->t0 + rr->o->deadline_ns + GPUIPC_WATCH_END_GRACE_NS / 2
                     : gpuipc_clock_deadline(3 * rr->o->timeout_ns);
    uint32_t from = 0;
    char got[32];
    gpuipc_err err;
    int code, rc;

    gpuipc_err_clear(&err);
    for (;;) {
        if ((from = reporter(rr)) == rr->rank) {
            code = judge(rr, own, own_refused);
            snprintf(got, sizeof(got), "%d", code);
            if (gpuipc_launch_put(rr->l, KEY_VERDICT, got, &err) < 0 ||
                gpuipc_launch_commit(rr->l, &err) < 0)
                printf("rank %u: the verdict may not reach every rank: %s\n", rr->rank,
                       err.msg);
            linger(rr);
            return code;
        }
        rc = ask(rr, from, KEY_VERDICT, got, sizeof(got), until, &err);
        if (rc == -ESRCH)
            continue; /* gone meanwhile: the next one gives it */
        if (rc == 0 &&
            (strcmp(got, "0") == 0 || strcmp(got, "1") == 0 || strcmp(got, "2") == 0 ||
             strcmp(got, "77") == 0 || (atoi(got) > 128 && atoi(got) < 160))) {
            code = atoi(got);
            if (rr->o->level >= GPUIPC_LOG_NORMAL)
                printf("rank %u: result: %s: the run's, from rank %u (exit %d)\n", rr->rank,
                       gpuipc_exit_word(code), from, code);
            /* The run's one line under --brief is the rank's that gave it. */
            gpuipc_brief_quiet();
            return code;
        }
        if (rc == 0)
            gpuipc_err_set(&err, -EPROTO, "'%.20s' is no exit status", got);
        break;
    }
    code = gpuipc_app_stop_code(GPUIPC_FAIL);
    gpuipc_ranks_say_result(rr, "%s: rank %u's verdict never came (%s); this rank's own pairs "
                            "%s (exit %d)", gpuipc_exit_word(code), from, err.msg,
                            own_failed ? "failed" : "passed", code);
    return code;
}

/* Publishes this rank's records, then gives or takes the verdict. */
static int conclude_here(ranks_run *rr)
{
    char refused[400], where[GPUIPC_CELL_TEXT_LEN];
    gpuipc_err err;
    int own_failed, code, played;
    char *own;

    pthread_mutex_lock(&rr->mu);
    played = rr->played;
    pthread_mutex_unlock(&rr->mu);
    /* From here this thread ends the run: the watchdog, at the deadline,
     * gives it the grace of a run that claimed its end. */
    gpuipc_watch_claim(GPUIPC_FAIL);
    if (!played) {
        int k, n = 0;

        printf("rank %u: the verdict's time came (--deadline less %.1f s) before its pairs "
               "ended: ", rr->rank,
               (double)(rr->t0 + rr->o->deadline_ns - rr->pairs_until) / 1e9);
        for (k = RANKS_EXPORTS; k <= RANKS_IMPORTS; k++) {
            if (!rr->where.as[k].in_pair && (k == RANKS_EXPORTS || n > 0 ||
                                             rr->where.as[RANKS_EXPORTS].in_pair))
                continue;
            (void)where_now(rr, k, where, sizeof(where));
            printf("%s%s", n++ ? "; " : "", where);
        }
        printf("; its records go as they stand\n");
        fflush(stdout);
    }
    own = take_records(rr, refused, sizeof(refused), &own_failed);
    if (own == NULL || gpuipc_launch_put(rr->l, KEY_RESULTS, own, &err) < 0 ||
        gpuipc_launch_put(rr->l, KEY_REFUSED, refused, &err) < 0 ||
        gpuipc_launch_commit(rr->l, &err) < 0) {
        code = gpuipc_app_stop_code(GPUIPC_FAIL);
        gpuipc_ranks_say_result(rr, "%s: its results could not be published: %s (exit %d)",
                                gpuipc_exit_word(code), own == NULL ? "out of memory" : err.msg,
                                code);
        free(own);
        return code;
    }
    code = take_verdict(rr, own, refused, own_failed);
    /* The verdict is given: from here the watchdog, if it must end the
     * process, ends it with this status, not a failure. */
    gpuipc_watch_claim(code);
    free(own);
    return code;
}

static void *verdict_main(void *arg)
{
    ranks_run *rr = arg;
    int code, played;

    pthread_mutex_lock(&rr->mu);
    while (!rr->played) {
        struct timespec ts = {(time_t)(rr->pairs_until / GPUIPC_NS_PER_S),
                              (long)(rr->pairs_until % GPUIPC_NS_PER_S)};

        if (rr->pairs_until == UINT64_MAX)
            pthread_cond_wait(&rr->cv, &rr->mu);
        else if (pthread_cond_timedwait(&rr->cv, &rr->mu, &ts) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&rr->mu);
    code = conclude_here(rr);
    pthread_mutex_lock(&rr->mu);
    rr->verdict_code = code;
    played = rr->played;
    pthread_mutex_unlock(&rr->mu);
    if (!played) {
        /* The run's thread is stuck still (in the driver, or waiting for a
         * stuck peer): the verdict is given, and the process ends here. */
        gpuipc_watch_claim(code);
        fflush(stdout);
        gpuipc_brief_now(code);
        _exit(code);
    }
    return NULL;
}

int gpuipc_ranks_verdict_start(ranks_run *rr, gpuipc_err *err)
{
    pthread_condattr_t attr;
    sigset_t all, old;
    int rc;

    pthread_mutex_init(&rr->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&rr->cv, &attr);
    pthread_condattr_destroy(&attr);
    rr->mu_ready = 1;
    rr->work[0] = calloc(1, sizeof(*rr->work[0]));
    rr->work[1] = calloc(1, sizeof(*rr->work[1]));
    rr->final = calloc((size_t)rr->size * 2, 1);
    if (rr->work[0] == NULL || rr->work[1] == NULL || rr->final == NULL)
        return gpuipc_err_set(err, -ENOMEM, "the verdict's thread: out of memory");
    rr->verdict_code = GPUIPC_FAIL;
    /* Its signals are the run's thread's and the watchdog's. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&rr->verdict, NULL, verdict_main, rr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return gpuipc_err_sys(err, "pthread_create", rc, "the verdict's thread: "
                              "pthread_create: %s", strerror(rc));
    rr->verdict_started = 1;
    return 0;
}

int gpuipc_ranks_conclude(ranks_run *rr)
{
    if (!rr->verdict_started) {
        gpuipc_ranks_say_result(rr, "%s: no verdict's thread (exit %d)",
                                gpuipc_exit_word(GPUIPC_FAIL), GPUIPC_FAIL);
        return GPUIPC_FAIL;
    }
    /* Whatever came to its listener and waits still is refused now, and
     * counted with the rest (the listener is the run's thread's). */
    gpuipc_meet_sweep(rr->meet);
    gpuipc_ranks_say_refused(rr);
    pthread_mutex_lock(&rr->mu);
    rr->played = 1;
    pthread_cond_signal(&rr->cv);
    pthread_mutex_unlock(&rr->mu);
    pthread_join(rr->verdict, NULL);
    rr->verdict_started = 0;
    return rr->verdict_code;
}

void gpuipc_ranks_verdict_free(ranks_run *rr)
{
    int k;

    if (rr->mu_ready) {
        pthread_cond_destroy(&rr->cv);
        pthread_mutex_destroy(&rr->mu);
        rr->mu_ready = 0;
    }
    for (k = 0; k < 2; k++) {
        if (rr->work[k] != NULL)
            gpuipc_cell_side_free(rr->work[k]);
        free(rr->work[k]);
        rr->work[k] = NULL;
    }
    free(rr->final);
    rr->final = NULL;
}
