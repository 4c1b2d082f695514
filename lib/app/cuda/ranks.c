/* SPDX-License-Identifier: Apache-2.0 */
/* ranks.c: --ranks, the mode a launcher starts (`mpirun -np 8 gpuipc_test
 * --ranks`, `srun --mpi=pmix ...`): one process per GPU, made by the
 * launcher, not forked. Each rank
 *   1. listens under a random name (launch/meet), then joins the job
 *      through PMIx (launch/pmix): the job's token and every rank's card
 *      (launch/job), which names its listener; it watches each rank of
 *      this node by a pidfd, which tells that it is gone;
 *   2. takes the GPU of its place on the node (its index among the ranks
 *      that share this node, modulo the GPUs it sees) and publishes its UUID;
 *   3. plays its pairs of the plan (run/plan: every ordered pair of ranks
 *      once, in rounds of disjoint pairs): as producer it connects to the
 *      consumer's listener, waits for its GO and runs the forked mode's
 *      producer session over it (probes, scenarios, checks, accounting,
 *      causes); as consumer it takes the producer's connection (the kernel
 *      vouches for its pid) and serves the session. At HELLO each proves
 *      the job's token without sending it; a peer "not on this node" is skipped with
 *      that cause, a peer that died is named, and its later pairs are not
 *      waited for;
 *   4. publishes its records of its pairs (run/cells); rank 0 gathers every
 *      rank's, makes the verdict of each ordered pair from both sides,
 *      prints the failing and skipped ones with each cause once and a
 *      count, writes --json, and publishes the run's status, which every
 *      rank exits with.
 * No MPI library is linked or loaded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "app/cuda/app.h"
#include "app/cuda/producer_end.h"
#include "app/version.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/log.h"
#include "core/outfile.h"
#include "core/random.h"
#include "core/status.h"
#include "core/step.h"
#include "core/stop.h"
#include "core/units.h"
#include "core/watch.h"
#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "launch/job.h"
#include "launch/meet.h"
#include "launch/pmix.h"
#include "run/cells.h"
#include "run/plan.h"
#include "session/report.h"

#define KEY_GPU "gpuipc.gpu"
#define KEY_RESULTS "gpuipc.results"
#define KEY_REFUSED "gpuipc.refused"
#define KEY_VERDICT "gpuipc.verdict"
#define WHO_LEN 160

/* One rank's GPU as it published it. */
typedef struct rank_gpu {
    int ordinal;                   /* -1: none (no driver, no GPU, or none needed) */
    uint8_t uuid[GPUIPC_UUID_LEN];
} rank_gpu;

/* The run, as this rank holds it. */
typedef struct ranks_run {
    const gpuipc_options *o;
    gpuipc_options quiet; /* the sessions': their step log at --quiet unless -v */
    const gpuipc_app_selection *s;
    const gpuipc_inject *inject;
    uint64_t t0;
    gpuipc_launch *l;
    gpuipc_job *job;
    uint32_t rank, size;
    gpuipc_meet *meet;   /* its listener; the others' pidfds */
    unsigned refused_said; /* strangers refused at it, as said so far */
    rank_gpu *gpus;      /* every rank's, by rank */
    char (*who)[WHO_LEN]; /* "rank 2 (node1, GPU 0)" */
    const char **whop;
    unsigned char *gone; /* ranks seen gone */
    gpuipc_cell_side *mine; /* this rank's records, by peer: [peer * 2 + (consumer ? 1 : 0)] */
    int needs_cuda;
    const char *mechs[GPUIPC_APP_NMECH_MAX]; /* the selection's names */
    uint64_t *digests;   /* every rank's options digest, by rank */
    unsigned char *stuck; /* ranks that did not come to a pair in time (alive) */
    uint64_t pairs_until; /* no pair starts after this (CLOCK_MONOTONIC): the verdict's time */
    gpuipc_outfile json;
    int json_checked;
} ranks_run;

/* For the watchdog: where this rank is (async-signal-safe reads). */
static volatile uint32_t g_rank, g_pair_p, g_pair_c;
static volatile int g_in_pair, g_role;
static volatile uint64_t g_deadline_s;

static void on_deadline(void *arg, int sig)
{
    const gpuipc_watch_page *page = gpuipc_watch_page_get();
    char mem[512];
    gpuipc_sbuf b;

    (void)arg;
    gpuipc_sbuf_init(&b, mem, sizeof(mem));
    gpuipc_sbuf_str(&b, "rank ");
    gpuipc_sbuf_uint(&b, g_rank);
    gpuipc_sbuf_str(&b, ": result: ");
    gpuipc_sbuf_str(&b, gpuipc_status_word(sig ? GPUIPC_STOPPED : GPUIPC_FAIL));
    gpuipc_sbuf_str(&b, sig ? ": it did not end in time after the stop signal"
                            : ": --deadline (");
    if (!sig) {
        gpuipc_sbuf_uint(&b, g_deadline_s);
        gpuipc_sbuf_str(&b, " s) passed");
    }
    if (g_in_pair) {
        const gpuipc_watch_side *w = page != NULL ? &page->side[g_role] : NULL;

        gpuipc_sbuf_str(&b, " in pair ");
        gpuipc_sbuf_uint(&b, g_pair_p);
        gpuipc_sbuf_str(&b, " -> ");
        gpuipc_sbuf_uint(&b, g_pair_c);
        gpuipc_sbuf_str(&b, g_role == GPUIPC_ROLE_PRODUCER ? " as its producer" : " as its consumer");
        if (w != NULL && w->step == GPUIPC_STEP_NONE) {
            gpuipc_sbuf_str(&b, ", waiting for its peer to come");
        } else if (w != NULL) {
            gpuipc_sbuf_str(&b, ", at ");
            gpuipc_sbuf_str(&b, gpuipc_step_name(w->step));
            if (w->call[0] != '\0' && w->since_ns != 0) {
                gpuipc_sbuf_str(&b, " in ");
                gpuipc_sbuf_str(&b, w->call);
                gpuipc_sbuf_str(&b, " for ");
                gpuipc_sbuf_secs(&b, gpuipc_clock_ns() - w->since_ns, 1);
                gpuipc_sbuf_str(&b, " s");
            }
        }
    } else {
        gpuipc_sbuf_str(&b, " outside any pair (joining the job, or gathering the results)");
    }
    if (sig) {
        gpuipc_sbuf_str(&b, " (exit ");
        gpuipc_sbuf_uint(&b, 128u + (unsigned)sig);
        gpuipc_sbuf_str(&b, ")\n");
    } else {
        gpuipc_sbuf_str(&b, "; the run's verdict is lost with it (exit 1)\n");
    }
    gpuipc_sbuf_write(&b, 1);
    _exit(sig ? 128 + sig : GPUIPC_FAIL);
}

/* The name of rank r for messages. */
static const char *who(const ranks_run *rr, uint32_t r)
{
    return rr->who[r];
}

static void name_ranks(ranks_run *rr)
{
    uint32_t r;

    for (r = 0; r < rr->size; r++) {
        const gpuipc_job_card *c = gpuipc_job_card_of(rr->job, r);

        if (rr->gpus[r].ordinal >= 0)
            snprintf(rr->who[r], WHO_LEN, "rank %u (%.64s, GPU %d)", r, c ? c->host : "?",
                     rr->gpus[r].ordinal);
        else
            snprintf(rr->who[r], WHO_LEN, "rank %u (%.64s)", r, c ? c->host : "?");
        rr->whop[r] = rr->who[r];
    }
}

/* ---- the GPU of each rank ---------------------------------------------------------- */

/* The options every rank must share, as a 64-bit FNV-1a digest of their
 * text: the mechanisms, --require, --size and --chunks. */
static uint64_t config_digest(const ranks_run *rr)
{
    char text[2048];
    size_t i, n = 0;
    uint64_t h = 1469598103934665603ull;

    for (i = 0; i < rr->s->nsel && n + 40 < sizeof(text); i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%s,", rr->s->sel[i]->name);
    for (i = 0; i < rr->s->nreq && n + 40 < sizeof(text); i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "req=%s,", rr->s->req[i]->name);
    snprintf(text + n, sizeof(text) - n, "size=%llu,chunks=%u",
             (unsigned long long)rr->o->size, rr->o->chunks);
    for (i = 0; text[i] != '\0'; i++) {
        h ^= (unsigned char)text[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* This rank's GPU: its index among the ranks of this node, modulo the GPUs
 * this process sees (several ranks share a GPU where there are fewer), put
 * for the others as "<uuid hex>|none <ordinal> <options digest> <refused>"
 * (refused: rank 0 refused its --json). Then every rank's, after a fence.
 * Returns 0; GPUIPC_USAGE where a rank's options differ from rank 0's or
 * rank 0 refused its own (every rank finds that alike, and says it); or a
 * negative errno with err. */
static int share_gpus(ranks_run *rr, int refused, gpuipc_err *err)
{
    char value[128], got[128], uuid[40];
    uint32_t index = 0, count = 1, r;
    rank_gpu *me = &rr->gpus[rr->rank];
    uint64_t mine = config_digest(rr), zero = 0;
    gpuipc_err why;
    int n = 0, rc, differs = -1, zero_refused = 0;

    me->ordinal = -1;
    gpuipc_err_clear(&why);
    gpuipc_job_node_place(rr->job, &index, &count);
    if (rr->needs_cuda && gpuipc_gpu_init(&why) == 0 && gpuipc_gpu_count(&n, &why) == 0 &&
        n > 0 && gpuipc_gpu_uuid_of((int)(index % (uint32_t)n), me->uuid, &why) == 0)
        me->ordinal = (int)(index % (uint32_t)n);
    if (rr->needs_cuda && me->ordinal < 0)
        printf("rank %u: no GPU for this rank: %s (its GPU scenarios say so too)\n", rr->rank,
               why.msg[0] ? why.msg : "the driver shows none");
    if (me->ordinal >= 0)
        gpuipc_random_hex(uuid, me->uuid, GPUIPC_UUID_LEN);
    else
        snprintf(uuid, sizeof(uuid), "none");
    snprintf(value, sizeof(value), "%s %d %016llx %d", uuid, me->ordinal,
             (unsigned long long)mine, refused);
    if ((rc = gpuipc_launch_put(rr->l, KEY_GPU, value, err)) < 0 ||
        (rc = gpuipc_launch_commit(rr->l, err)) < 0 ||
        (rc = gpuipc_launch_fence(rr->l, "gpus", err)) < 0)
        return rc;
    for (r = 0; r < rr->size; r++) {
        rank_gpu *g = &rr->gpus[r];
        char hex[40];
        unsigned long long digest;
        int ordinal, ref, used = 0;

        if (r == rr->rank) {
            if (r == 0)
                zero = mine, zero_refused = refused;
            continue;
        }
        g->ordinal = -1;
        if ((rc = gpuipc_launch_get(rr->l, r, KEY_GPU, got, sizeof(got), err)) < 0)
            return rc;
        if (sscanf(got, "%39s %d %16llx %d%n", hex, &ordinal, &digest, &ref, &used) != 4 ||
            got[used] != '\0' || ordinal < -1 || ordinal > 65535 || (ref != 0 && ref != 1) ||
            (strcmp(hex, "none") != 0 && (strlen(hex) != 2 * GPUIPC_UUID_LEN ||
                                          gpuipc_random_unhex(g->uuid, hex, GPUIPC_UUID_LEN) < 0)) ||
            (strcmp(hex, "none") == 0) != (ordinal < 0))
            return gpuipc_err_set(err, -EPROTO, "rank %u's GPU: '%.64s' is not \"<uuid>|none "
                                  "<ordinal> <digest> <refused>\" (is it gpuipc_test --ranks of "
                                  "this version?)", r, got);
        g->ordinal = ordinal;
        if (r == 0)
            zero = digest, zero_refused = ref;
        rr->digests[r] = digest;
    }
    rr->digests[rr->rank] = mine;
    if (zero_refused) {
        if (rr->rank != 0)
            printf("rank %u: result: %s: rank 0 refused its options (it says why) (exit %d)\n",
                   rr->rank, gpuipc_exit_word(GPUIPC_USAGE), GPUIPC_USAGE);
        return GPUIPC_USAGE;
    }
    for (r = 1; r < rr->size && differs < 0; r++)
        if (rr->digests[r] != zero)
            differs = (int)r;
    if (differs >= 0) {
        printf("rank %u: result: %s: rank %d's options differ from rank 0's (--only, "
               "--require, --size and --chunks must be the same on every rank: give every rank "
               "one command line) (exit %d)\n",
               rr->rank, gpuipc_exit_word(GPUIPC_USAGE), differs, GPUIPC_USAGE);
        return GPUIPC_USAGE;
    }
    return 0;
}

/* Rank r is gone: its later pairs are not waited for, nor its PMIx keys. */
static void mark_gone(ranks_run *rr, uint32_t r)
{
    rr->gone[r] = 1;
    gpuipc_launch_forget(rr->l, r);
}

/* Whether rank r is known to be gone: seen so in a pair, or, on this node,
 * its process ended now (its pidfd). */
static int is_gone(ranks_run *rr, uint32_t r)
{
    if (!rr->gone[r] && gpuipc_meet_ended(rr->meet, r))
        rr->gone[r] = 1;
    if (rr->gone[r])
        gpuipc_launch_forget(rr->l, r);
    return rr->gone[r];
}

/* Rank r is alive but did not come to a pair in time (stuck in a call, or
 * far slower): its later pairs are not waited for either, so that one
 * stuck rank does not make every pair after it wait out --timeout. */
static void mark_stuck(ranks_run *rr, uint32_t r)
{
    rr->stuck[r] = 1;
}

/* How long a rank waits for its peer at a pair: twice --timeout (the peer
 * may be finishing a pair whose other rank stalled, which takes up to one
 * --timeout), and never past the time kept for the verdict. */
static uint64_t meet_deadline(const ranks_run *rr)
{
    uint64_t d = gpuipc_clock_deadline(2 * rr->o->timeout_ns);

    return d < rr->pairs_until ? d : rr->pairs_until;
}

/* ---- one pair --------------------------------------------------------------------- */

static gpuipc_cell_side *record(ranks_run *rr, uint32_t peer, int consumer)
{
    return &rr->mine[(size_t)peer * 2 + (consumer ? 1 : 0)];
}

static void note(gpuipc_cell_side *side, int code, const char *text)
{
    side->code = code;
    snprintf(side->note, sizeof(side->note), "%.*s", (int)sizeof(side->note) - 1, text);
}

/* Whether the pair with peer can be played: on this node, and not gone. */
static int can_meet(ranks_run *rr, uint32_t peer, gpuipc_cell_side *side)
{
    char why[512];

    if (gpuipc_job_where_is(rr->job, peer, why, sizeof(why)) != GPUIPC_JOB_SAME_NODE) {
        char text[GPUIPC_CELL_TEXT_LEN];

        snprintf(text, sizeof(text), "%.300s (--ranks proves pairs within one node)", why);
        note(side, GPUIPC_SKIP, text);
        return 0;
    }
    if (rr->gone[peer]) {
        snprintf(side->note, sizeof(side->note), "%.200s gone during an earlier pair: not "
                 "waited for", who(rr, peer));
        side->code = GPUIPC_FAIL;
        return 0;
    }
    if (rr->stuck[peer]) {
        snprintf(side->note, sizeof(side->note), "%.200s did not come to an earlier pair in "
                 "time (alive, but stuck or far slower): not waited for", who(rr, peer));
        side->code = GPUIPC_FAIL;
        return 0;
    }
    if (gpuipc_clock_ns() >= rr->pairs_until) {
        snprintf(side->note, sizeof(side->note), "not run: the run's --deadline is near, and "
                 "its verdict goes first (raise --deadline for this many ranks)");
        side->code = GPUIPC_FAIL;
        return 0;
    }
    return 1;
}

static void say(const ranks_run *rr, const char *fmt, const char *text)
{
    char line[GPUIPC_ERR_LEN + 64];

    snprintf(line, sizeof(line), fmt, text);
    if (rr->o->level >= GPUIPC_LOG_QUIET)
        printf("rank %u: %s\n", rr->rank, line);
    fflush(stdout);
}

/* "rank R: FAIL <what><text>". */
static void say_failed(const ranks_run *rr, const char *what, const char *text)
{
    char line[GPUIPC_ERR_LEN + 64];

    snprintf(line, sizeof(line), "%s %s%s", gpuipc_status_word(GPUIPC_FAIL), what, text);
    say(rr, "%s", line);
}

/* Whether peer, met in a session that broke, has died (its process has
 * ended; a stop signal is no death of the peer's). */
static int peer_died(ranks_run *rr, uint32_t peer)
{
    return gpuipc_stop_signal() == 0 && is_gone(rr, peer);
}

/* Says the connections refused since the last time, from processes that
 * are no rank of this job (launch/meet.h), once each time more come. */
static void say_refused(ranks_run *rr)
{
    char first[256], line[400];
    unsigned n = gpuipc_meet_refused(rr->meet, first, sizeof(first));

    if (n == rr->refused_said)
        return;
    rr->refused_said = n;
    snprintf(line, sizeof(line), "refused %u connection%s to its listener from processes "
             "that are no rank of this job (the first: %.250s)", n, n == 1 ? "" : "s", first);
    say(rr, "%s", line);
}

/* Meets peer for their pair, this rank its producer (producer set) or its
 * consumer: where the pair can be played (can_meet), the session's socket,
 * connected to the consumer's listener and vouched for by the kernel
 * (launch/meet.h), with gpuipc_app_cred_pid set from the peer's
 * credentials. Otherwise -1, with side saying why and the peer marked gone
 * or stuck as the wait found it. */
static int meet(ranks_run *rr, uint32_t peer, int producer, gpuipc_cell_side *side,
                uint64_t until)
{
    const gpuipc_job_card *card = gpuipc_job_card_of(rr->job, peer);
    gpuipc_peer cred;
    gpuipc_err err;
    int sock;

    side->code = GPUIPC_FAIL;
    side->note[0] = '\0';
    if (!can_meet(rr, peer, side))
        return -1;
    sock = producer ? gpuipc_meet_connect(rr->meet, peer, card->endpoint, who(rr, peer),
                                          until, &cred, &err)
                    : gpuipc_meet_accept(rr->meet, peer, who(rr, peer), until, &cred, &err);
    say_refused(rr);
    if (sock < 0) {
        if (sock == GPUIPC_MEET_GONE)
            mark_gone(rr, peer);
        else if (sock == -ETIMEDOUT)
            mark_stuck(rr, peer);
        note(side, GPUIPC_FAIL, err.msg);
        say_failed(rr, "", err.msg);
        return -1;
    }
    gpuipc_app_cred_pid = cred.pid > 0 ? (int)cred.pid : -1;
    /* What each session's last check counts from: the FDs now, which hold
     * the connections of ranks that came early for a later pair (held by
     * launch/meet until then). */
    gpuipc_app_note_fds_at_start();
    return sock;
}

/* This rank exports to consumer c. */
static void play_producer(ranks_run *rr, uint32_t c)
{
    static gpuipc_producer_run run;
    gpuipc_cell_side *side = record(rr, c, 0);
    const gpuipc_app_selection *s = rr->s;
    const gpuipc_mech *sub[GPUIPC_APP_NMECH_MAX], *out[GPUIPC_APP_NMECH_MAX];
    char desc[GPUIPC_ERR_LEN + 160];
    gpuipc_err err;
    size_t i, nsub, nout;
    int sock, code, other_gpu, rc;

    if ((sock = meet(rr, c, 1, side, meet_deadline(rr))) < 0)
        return;
    /* On two GPUs, only what crosses GPUs (as the forked mode's ring). */
    other_gpu = rr->gpus[c].ordinal >= 0 && rr->gpus[rr->rank].ordinal >= 0 &&
                memcmp(rr->gpus[c].uuid, rr->gpus[rr->rank].uuid, GPUIPC_UUID_LEN) != 0;
    for (i = nsub = nout = 0; i < s->nsel; i++) {
        if (other_gpu && s->sel[i]->needs_cuda && !s->sel[i]->cross_device)
            out[nout++] = s->sel[i];
        else
            sub[nsub++] = s->sel[i];
    }
    gpuipc_app_producer_init(&run, &rr->quiet, sub, nsub, s->req, s->nreq, rr->inject,
                             rr->t0);
    run.env.token = gpuipc_job_token_of(rr->job)->hex;
    run.env.rank = rr->rank;
    run.env.peer_rank = c;
    run.peer_label = who(rr, c);
    if (rr->gpus[c].ordinal >= 0)
        memcpy(run.peer_uuid, rr->gpus[c].uuid, GPUIPC_UUID_LEN);
    snprintf(run.where, sizeof(run.where), "rank %u", rr->rank);
    if (gpuipc_wire_open(&run.w, sock, "consumer", &err) < 0) {
        close(sock);
        snprintf(run.lost, sizeof(run.lost), "%s", err.msg);
        code = GPUIPC_FAIL;
    } else if ((rc = gpuipc_app_producer_hello(&run, &err)) < 0) {
        snprintf(run.lost, sizeof(run.lost), "%s", err.msg);
        if (rc == -ETIMEDOUT)
            mark_stuck(rr, c);
        code = GPUIPC_FAIL;
    } else {
        /* pidfd_getfd from a sibling needs ptrace permission, which Yama's
         * ptrace_scope 1 gives only to an ancestor or to the process named
         * here. */
        if (run.env.peer_pid > 0)
            prctl(PR_SET_PTRACER, (unsigned long)run.env.peer_pid, 0, 0, 0);
        code = gpuipc_app_producer_scenarios(&run);
    }
    code = gpuipc_app_producer_end(&run, code, desc, sizeof(desc));
    prctl(PR_SET_PTRACER, 0, 0, 0, 0);
    side->code = code;
    side->met = run.started;
    if (!run.started) {
        snprintf(side->note, sizeof(side->note), "%.390s", run.lost);
        (void)peer_died(rr, c);
        say_failed(rr, "", run.lost);
    } else if (code != GPUIPC_PASS && code != GPUIPC_SKIP) {
        snprintf(side->note, sizeof(side->note), "%.390s", run.last[0] ? run.last : desc);
        if (peer_died(rr, c)) {
            /* The consumer died in the session: its cell says so, once. */
            const gpuipc_result *first = NULL;

            for (i = 0; i < run.nsel && first == NULL; i++)
                if (run.results[i].status == GPUIPC_FAIL)
                    first = &run.results[i];
            side->gone = 1;
            snprintf(side->note, sizeof(side->note), "%.160s gone during %s%s%.200s",
                     who(rr, c), first ? gpuipc_step_name(first->failure.step) : "the session",
                     first ? ": " : "", first ? first->reason : "");
        }
    }
    side->n = run.nsel < GPUIPC_CELLS_SCENARIOS_MAX ? run.nsel : GPUIPC_CELLS_SCENARIOS_MAX;
    for (i = 0; i < side->n && run.started; i++) {
        const gpuipc_result *r = &run.results[i];
        gpuipc_cell_scenario *cs = &side->s[i];

        snprintf(cs->mech, sizeof(cs->mech), "%s", run.sel[i]->name);
        cs->status = r->status;
        cs->side = r->failed_side;
        cs->step = r->failure.step;
        if (r->status == GPUIPC_FAIL && r->failure.errnum == ETIMEDOUT && !rr->gone[c])
            mark_stuck(rr, c);
        snprintf(cs->reason, sizeof(cs->reason), "%.*s", (int)sizeof(cs->reason) - 1,
                 r->status == GPUIPC_PASS ? r->detail : r->reason);
        snprintf(cs->cause, sizeof(cs->cause), "%.*s", (int)sizeof(cs->cause) - 1, r->cause);
        if (r->status == GPUIPC_FAIL) {
            char line[GPUIPC_ERR_LEN + 64];

            snprintf(line, sizeof(line), "%u -> %u %s: ", rr->rank, c, run.sel[i]->name);
            say_failed(rr, line, r->reason);
        }
    }
    if (!run.started)
        side->n = 0;
    for (i = 0; run.started && i < nout && side->n < GPUIPC_CELLS_SCENARIOS_MAX; i++) {
        gpuipc_cell_scenario *cs = &side->s[side->n++];

        memset(cs, 0, sizeof(*cs));
        snprintf(cs->mech, sizeof(cs->mech), "%s", out[i]->name);
        cs->status = GPUIPC_SKIP;
        snprintf(cs->reason, sizeof(cs->reason), "not run: %.100s and %.100s hold different "
                 "GPUs, and %.31s shares memory within one GPU (the vmm mechanisms cross "
                 "GPUs)", who(rr, rr->rank), who(rr, c), out[i]->name);
    }
    gpuipc_app_scenarios_free(&run);
}

/* This rank imports from producer p. */
static void play_consumer(ranks_run *rr, uint32_t p)
{
    gpuipc_cell_side *side = record(rr, p, 1);
    gpuipc_session_end end;
    int sock, code;

    if ((sock = meet(rr, p, 0, side, meet_deadline(rr))) < 0)
        return;
    code = gpuipc_app_consumer_session(sock, &rr->quiet, rr->inject, rr->t0,
                                       gpuipc_job_token_of(rr->job)->hex, rr->rank, p, &end);
    side->code = code;
    side->met = end.met;
    side->said_bye = end.said_bye;
    side->passed = end.bye.passed;
    side->failed = end.bye.failed;
    side->skipped = end.bye.skipped;
    side->own = end.own;
    snprintf(side->note, sizeof(side->note), "%.390s", end.reason);
    if (code != GPUIPC_PASS && code != GPUIPC_SKIP) {
        say_failed(rr, "as consumer: ", end.reason[0] ? end.reason : "(said above)");
        if (end.errnum == ETIMEDOUT)
            mark_stuck(rr, p);
        if (peer_died(rr, p)) {
            char text[GPUIPC_CELL_TEXT_LEN];

            side->gone = 1;
            snprintf(text, sizeof(text), "%.160s gone: %.220s", who(rr, p), end.reason);
            snprintf(side->note, sizeof(side->note), "%s", text);
        }
    }
}

/* Every pair of the plan this rank takes part in, in round order. */
static int play(ranks_run *rr)
{
    gpuipc_plan_pair *plan;
    unsigned nrounds = 0;
    size_t i, n;
    int *ids = calloc(rr->size, sizeof(*ids));

    if (ids == NULL)
        return -ENOMEM;
    for (i = 0; i < rr->size; i++)
        ids[i] = (int)i;
    plan = gpuipc_plan_all_pairs(ids, rr->size, &nrounds);
    free(ids);
    if (plan == NULL)
        return -ENOMEM;
    n = (size_t)rr->size * (rr->size - 1);
    for (i = 0; i < n && gpuipc_stop_signal() == 0; i++) {
        uint32_t p = (uint32_t)plan[i].a, c = (uint32_t)plan[i].b;

        if (p != rr->rank && c != rr->rank)
            continue;
        g_pair_p = p;
        g_pair_c = c;
        g_role = p == rr->rank ? GPUIPC_ROLE_PRODUCER : GPUIPC_ROLE_CONSUMER;
        g_in_pair = 1;
        gpuipc_watch_role(g_role);
        gpuipc_watch_step(GPUIPC_STEP_NONE, "");
        if (p == rr->rank)
            play_producer(rr, c);
        else
            play_consumer(rr, p);
        g_in_pair = 0;
    }
    free(plan);
    return 0;
}

/* ---- the verdict ------------------------------------------------------------------ */

/* This rank's records as text, for KEY_RESULTS. Returns it (malloc'd) or
 * NULL out of memory. */
static char *my_results(const ranks_run *rr)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    uint32_t peer;

    if ((buf = malloc(1)) == NULL)
        return NULL;
    buf[0] = '\0';
    cap = 1;
    for (peer = 0; peer < rr->size; peer++) {
        if (peer == rr->rank)
            continue;
        if (gpuipc_cells_encode(&buf, &len, &cap, 1, rr->rank, peer,
                                &rr->mine[(size_t)peer * 2]) < 0 ||
            gpuipc_cells_encode(&buf, &len, &cap, 2, peer, rr->rank,
                                &rr->mine[(size_t)peer * 2 + 1]) < 0) {
            free(buf);
            return NULL;
        }
    }
    return buf;
}

/* The --json document of the run (rank 0), into f. */
static void write_json(const ranks_run *rr, FILE *f, const gpuipc_cell *cells, int code,
                       unsigned proven, unsigned pf, unsigned ps)
{
    gpuipc_json j;
    char uuid[48];
    uint32_t r, p, c;
    size_t i;

    gpuipc_json_init(&j, f);
    gpuipc_json_object(&j, NULL);
    gpuipc_json_string(&j, "schema", "gpuipc-ranks/1");
    gpuipc_json_string(&j, "program", "gpuipc_test " GPUIPC_VERSION);
    gpuipc_json_int(&j, "protocol", GPUIPC_WIRE_VERSION);
    gpuipc_json_string(&j, "mode", "ranks");
    gpuipc_json_int(&j, "exit_code", code);
    gpuipc_json_string(&j, "verdict", gpuipc_exit_word(code));
    gpuipc_json_double(&j, "wall_s", (double)(gpuipc_clock_ns() - rr->t0) / 1e9);
    gpuipc_json_string(&j, "pmix", gpuipc_launch_version(rr->l));
    gpuipc_json_int(&j, "size", rr->size);
    gpuipc_json_int(&j, "pairs_proven", proven);
    gpuipc_json_int(&j, "pairs_failed", pf);
    gpuipc_json_int(&j, "pairs_skipped", ps);
    gpuipc_json_array(&j, "ranks");
    for (r = 0; r < rr->size; r++) {
        const gpuipc_job_card *card = gpuipc_job_card_of(rr->job, r);
        char why[512];

        gpuipc_json_object(&j, NULL);
        gpuipc_json_int(&j, "rank", r);
        gpuipc_json_string(&j, "host", card ? card->host : NULL);
        gpuipc_json_int(&j, "pid", card ? card->pid : 0);
        gpuipc_json_int(&j, "gpu", rr->gpus[r].ordinal);
        gpuipc_json_string(&j, "gpu_uuid", rr->gpus[r].ordinal >= 0
                           ? gpuipc_units_format_uuid(rr->gpus[r].uuid, uuid, sizeof(uuid))
                           : NULL);
        gpuipc_json_bool(&j, "on_this_node",
                         gpuipc_job_where_is(rr->job, r, why, sizeof(why)) ==
                             GPUIPC_JOB_SAME_NODE);
        gpuipc_json_string(&j, "where", why);
        gpuipc_json_end(&j, '}');
    }
    gpuipc_json_end(&j, ']');
    gpuipc_json_array(&j, "pairs");
    for (p = 0; p < rr->size; p++)
        for (c = 0; c < rr->size; c++) {
            const gpuipc_cell *cell = &cells[(size_t)p * rr->size + c];
            char why[GPUIPC_ERR_LEN];
            int v;

            if (p == c)
                continue;
            v = gpuipc_cell_verdict(cell, rr->whop, rr->mechs, rr->s->nsel, why, sizeof(why),
                                    NULL, NULL, NULL);
            gpuipc_json_object(&j, NULL);
            gpuipc_json_int(&j, "producer", p);
            gpuipc_json_int(&j, "consumer", c);
            gpuipc_json_string(&j, "verdict", gpuipc_exit_word(v));
            gpuipc_json_string(&j, "reason", why[0] ? why : NULL);
            gpuipc_json_array(&j, "scenarios");
            for (i = 0; cell->prod.have && i < cell->prod.n; i++) {
                const gpuipc_cell_scenario *s = &cell->prod.s[i];

                gpuipc_json_object(&j, NULL);
                gpuipc_json_string(&j, "mechanism", s->mech);
                gpuipc_json_string(&j, "status", s->status < 0 ? "NOT RUN"
                                   : gpuipc_status_word(s->status));
                gpuipc_json_string(&j, "side", s->side ? gpuipc_role_name(s->side) : NULL);
                gpuipc_json_string(&j, "step", s->step ? gpuipc_step_name(s->step) : NULL);
                gpuipc_json_string(&j, "reason", s->reason[0] ? s->reason : NULL);
                gpuipc_json_string(&j, "cause", s->cause[0] ? s->cause : NULL);
                gpuipc_json_end(&j, '}');
            }
            gpuipc_json_end(&j, ']');
            gpuipc_json_end(&j, '}');
        }
    gpuipc_json_end(&j, ']');
    gpuipc_json_end(&j, '}');
    gpuipc_json_finish(&j);
}

/* Writes the --json document (cells NULL: the run under way, not
 * finished) in place of whatever is at its path (a regular file: the check
 * before the run, or the last writing, said so). Returns 0, or -1 where it
 * could not be written (said). */
static int json_write(ranks_run *rr, const gpuipc_cell *cells, int code, unsigned proven,
                      unsigned pf, unsigned ps)
{
    gpuipc_err err;
    FILE *f;
    int fd;

    gpuipc_err_clear(&err);
    if (!rr->json_checked)
        return 0;
    if ((fd = gpuipc_outfile_open(&rr->json, &err)) < 0 || (f = fdopen(fd, "w")) == NULL) {
        if (fd >= 0)
            close(fd);
        gpuipc_outfile_abort(&rr->json);
        printf("rank 0: --json %s: not written: %s\n", rr->o->json_path, err.msg);
        return -1;
    }
    if (cells != NULL) {
        write_json(rr, f, cells, code, proven, pf, ps);
    } else {
        gpuipc_json j;

        gpuipc_json_init(&j, f);
        gpuipc_json_object(&j, NULL);
        gpuipc_json_string(&j, "schema", "gpuipc-ranks/1");
        gpuipc_json_string(&j, "program", "gpuipc_test " GPUIPC_VERSION);
        gpuipc_json_int(&j, "protocol", GPUIPC_WIRE_VERSION);
        gpuipc_json_string(&j, "mode", "ranks");
        gpuipc_json_int(&j, "exit_code", GPUIPC_FAIL);
        gpuipc_json_string(&j, "verdict", "NOT FINISHED");
        gpuipc_json_string(&j, "reason", "the run is under way, or it ended before rank 0's "
                           "verdict (the deadline, a signal, a crash: each rank's output says "
                           "which)");
        gpuipc_json_end(&j, '}');
        gpuipc_json_finish(&j);
    }
    if (fclose(f) != 0 || gpuipc_outfile_commit(&rr->json, &err) < 0) {
        gpuipc_outfile_abort(&rr->json);
        printf("rank 0: --json %s: not written: %s\n", rr->o->json_path,
               err.msg[0] ? err.msg : "a write failed");
        return -1;
    }
    if (cells != NULL)
        return 0;
    /* The verdict's writing replaces this file, a regular file of ours. */
    gpuipc_outfile_close(&rr->json);
    if (gpuipc_outfile_check(&rr->json, rr->o->json_path, &err) < 0) {
        rr->json_checked = 0;
        printf("rank 0: --json %s: %s\n", rr->o->json_path, err.msg);
        return -1;
    }
    return 0;
}

/* Looks at every rank: the PMIx layer then never waits for a gone one. */
static void look_at_all(ranks_run *rr)
{
    uint32_t r;

    for (r = 0; r < rr->size; r++)
        if (r != rr->rank)
            (void)is_gone(rr, r);
}

/* Rank 0, its verdict committed: stays until every other rank of this node
 * has left (its process ended), at most --timeout, so that none of them
 * finds rank 0 gone and takes it for dead before its verdict. */
static void linger(ranks_run *rr)
{
    uint64_t deadline = gpuipc_clock_deadline(rr->o->timeout_ns);
    struct timespec pause = {0, 20 * 1000000L};
    uint32_t r;

    for (;;) {
        for (r = 1; r < rr->size; r++) {
            char why[256];

            if (!rr->gone[r] &&
                gpuipc_job_where_is(rr->job, r, why, sizeof(why)) == GPUIPC_JOB_SAME_NODE &&
                !gpuipc_meet_ended(rr->meet, r))
                break;
        }
        if (r == rr->size || gpuipc_clock_ms_left(deadline) == 0 || gpuipc_stop_signal())
            return;
        nanosleep(&pause, NULL);
    }
}

/* Rank 0: every rank's records, each pair's verdict, the summary. Returns
 * the run's status. */
static int judge(ranks_run *rr, const char *own, int fenced)
{
    size_t ncells = (size_t)rr->size * rr->size, i, ncauses = 0;
    gpuipc_cell *cells = calloc(ncells, sizeof(*cells));
    char *got = malloc(GPUIPC_LAUNCH_VALUE_MAX);
    const char **causes = calloc(ncells * GPUIPC_CELLS_SCENARIOS_MAX + 1, sizeof(*causes));
    unsigned passed = 0, failed = 0, skipped = 0, proven = 0, pf = 0, ps = 0, silent = 0;
    char refused[400];
    uint32_t r, p, c;
    gpuipc_err err;
    int code;

    if (cells == NULL || got == NULL || causes == NULL) {
        free(cells);
        free(got);
        free(causes);
        printf("rank 0: result: %s: out of memory for the verdicts of %u ranks (exit %d)\n",
               gpuipc_exit_word(GPUIPC_FAIL), rr->size, GPUIPC_FAIL);
        return GPUIPC_FAIL;
    }
    for (r = 0; r < rr->size; r++) {
        const char *text = own;

        if (r != 0) {
            /* A get of a key that a dead rank never put can wait for ever,
             * whatever its timeout (OpenPMIx 4.2, after the rank's exit):
             * a rank of this node whose process has ended is not asked. */
            if (is_gone(rr, r)) {
                printf("rank 0: %s's results never came: it is gone (its process has "
                       "ended)\n", who(rr, r));
                silent++;
                continue;
            }
            if (rr->stuck[r]) {
                printf("rank 0: %s's results are not waited for: it did not come to its pair "
                       "with rank 0 in time\n", who(rr, r));
                silent++;
                continue;
            }
            if (gpuipc_launch_get(rr->l, r, KEY_RESULTS, got, GPUIPC_LAUNCH_VALUE_MAX,
                                  &err) < 0) {
                printf("rank 0: %s's results never came%s: %s\n", who(rr, r),
                       fenced ? "" : " (without a fence: a rank is gone, stuck, or out of "
                       "the fence)", err.msg);
                silent++;
                continue;
            }
            text = got;
            /* What the rank refused at its listener, named here too. */
            if (gpuipc_launch_get(rr->l, r, KEY_REFUSED, refused, sizeof(refused), &err) ==
                    0 && strncmp(refused, "refused ", 8) == 0)
                printf("rank 0: %s %s\n", who(rr, r), refused);
        }
        if (gpuipc_cells_decode(text, r, rr->size, cells, &err) < 0) {
            /* Nothing of a rank that reports nonsense is taken. */
            printf("rank 0: %s's results are refused: %s\n", who(rr, r), err.msg);
            for (p = 0; p < rr->size; p++) {
                cells[(size_t)r * rr->size + p].prod.have = 0;
                cells[(size_t)p * rr->size + r].cons.have = 0;
            }
            silent++;
        }
    }
    for (p = 0; p < rr->size; p++)
        for (c = 0; c < rr->size; c++) {
            gpuipc_cell *cell = &cells[(size_t)p * rr->size + c];
            char why[GPUIPC_ERR_LEN];
            int v;

            if (p == c)
                continue;
            cell->p = p;
            cell->c = c;
            v = gpuipc_cell_verdict(cell, rr->whop, rr->mechs, rr->s->nsel, why, sizeof(why),
                                    &passed, &failed, &skipped);
            proven += v == GPUIPC_PASS;
            pf += v == GPUIPC_FAIL;
            ps += v == GPUIPC_SKIP;
            if (why[0] != '\0') {
                printf("%s %u -> %u: %s\n",
                       gpuipc_status_word(v == GPUIPC_FAIL ? GPUIPC_FAIL : GPUIPC_SKIP), p, c, why);
                continue;
            }
            for (i = 0; i < cell->prod.n; i++) {
                const gpuipc_cell_scenario *s = &cell->prod.s[i];
                size_t k;

                if (s->status == GPUIPC_PASS)
                    continue;
                printf("%s %u -> %u %s: %s%s\n", s->status < 0 ? "NOT RUN"
                       : gpuipc_status_word(s->status), p, c, s->mech,
                       s->reason, s->cause[0] ? " [cause below]" : "");
                for (k = 0; k < ncauses && strcmp(causes[k], s->cause) != 0; k++)
                    ;
                if (s->cause[0] != '\0' && k == ncauses)
                    causes[ncauses++] = s->cause;
            }
        }
    for (i = 0; i < ncauses; i++)
        printf("  %s\n", causes[i]);
    code = pf > 0 || silent > 0 ? GPUIPC_FAIL : proven > 0 ? GPUIPC_PASS : GPUIPC_SKIP;
    code = gpuipc_app_stop_code(code);
    if (json_write(rr, cells, code, proven, pf, ps) < 0)
        code = GPUIPC_FAIL; /* a verdict that cannot be written is no pass */
    printf("result: %s: %u ranks, %u ordered pairs: %u proven, %u failed, %u skipped "
           "(their scenarios: %u passed, %u failed, %u skipped), in %.2f s (exit %d)\n",
           gpuipc_exit_word(code), rr->size,
           rr->size * (rr->size - 1), proven, pf, ps, passed, failed, skipped,
           (double)(gpuipc_clock_ns() - rr->t0) / 1e9, code);
    fflush(stdout);
    free(cells);
    free(got);
    free(causes);
    return code;
}

/* Every rank: publishes its records; rank 0 judges and publishes the
 * status; the others take it. Returns the status this rank exits with. */
static int conclude(ranks_run *rr)
{
    char *own = my_results(rr), got[32], first[256], refused[400] = "none";
    unsigned n;
    gpuipc_err err;
    int fenced = 0, code = GPUIPC_FAIL, own_code = GPUIPC_PASS, rc;
    uint32_t i, gone = 0;

    for (i = 0; i < rr->size * 2; i++)
        if (i / 2 != rr->rank && rr->mine[i].code != GPUIPC_PASS &&
            rr->mine[i].code != GPUIPC_SKIP)
            own_code = GPUIPC_FAIL;
    /* Whatever came to its listener and waits still is refused now, and
     * counted with the rest. */
    gpuipc_meet_sweep(rr->meet);
    say_refused(rr);
    n = gpuipc_meet_refused(rr->meet, first, sizeof(first));
    if (n > 0)
        snprintf(refused, sizeof(refused), "refused %u connection%s from processes that are "
                 "no rank of this job (the first: %.250s)", n, n == 1 ? "" : "s", first);
    if (rr->rank == 0 && n > 0)
        printf("rank 0: %s %s\n", who(rr, 0), refused);
    if (own == NULL || gpuipc_launch_put(rr->l, KEY_RESULTS, own, &err) < 0 ||
        gpuipc_launch_put(rr->l, KEY_REFUSED, refused, &err) < 0 ||
        gpuipc_launch_commit(rr->l, &err) < 0) {
        code = gpuipc_app_stop_code(GPUIPC_FAIL);
        printf("rank %u: result: %s: its results could not be published: %s (exit %d)\n",
               rr->rank, gpuipc_exit_word(code), own == NULL ? "out of memory" : err.msg, code);
        free(own);
        return GPUIPC_FAIL;
    }
    /* With every rank alive, one fence gathers the results. A fence over a
     * job with a dead rank may end at once or only at its timeout: then
     * none, and rank 0 reads each rank's results as they come (a get waits
     * for that rank's commit). */
    look_at_all(rr);
    for (i = 0; i < rr->size; i++)
        gone += rr->gone[i] || rr->stuck[i];
    if (gone == 0) {
        fenced = gpuipc_launch_fence(rr->l, "results", &err) == 0;
        if (!fenced)
            printf("rank %u: %s\n", rr->rank, err.msg);
    }
    g_in_pair = 0;
    if (rr->rank == 0) {
        code = judge(rr, own, fenced);
        free(own);
        /* The others wait for this commit (no fence: a dead rank would
         * hold it), and rank 0 stays until they have it. */
        snprintf(got, sizeof(got), "%d", code);
        if (gpuipc_launch_put(rr->l, KEY_VERDICT, got, &err) < 0 ||
            gpuipc_launch_commit(rr->l, &err) < 0)
            printf("rank 0: the verdict may not reach every rank: %s\n", err.msg);
        linger(rr);
        return code;
    }
    free(own);
    /* A get wakes at rank 0's next commit, of whatever key: ask again
     * while rank 0 is alive, until its verdict or the deadline. */
    for (;;) {
        if (is_gone(rr, 0)) {
            gpuipc_err_set(&err, -ESRCH, "%s is gone", who(rr, 0));
            break;
        }
        rc = gpuipc_launch_get(rr->l, 0, KEY_VERDICT, got, sizeof(got), &err);
        if (rc == 0 &&
            (strcmp(got, "0") == 0 || strcmp(got, "1") == 0 || strcmp(got, "2") == 0 ||
             strcmp(got, "77") == 0 || (atoi(got) > 128 && atoi(got) < 160))) {
            code = atoi(got);
            if (rr->o->level >= GPUIPC_LOG_NORMAL)
                printf("rank %u: result: %s: the run's, from rank 0 (exit %d)\n", rr->rank,
                       gpuipc_exit_word(code), code);
            return code;
        }
        if (rc == 0) {
            gpuipc_err_set(&err, -EPROTO, "'%.20s' is no exit status", got);
            break;
        }
        if (rc != -ENOENT || gpuipc_stop_signal() != 0 ||
            (rr->o->deadline_ns > 0 && gpuipc_clock_ns() >= rr->t0 + rr->o->deadline_ns))
            break;
    }
    code = gpuipc_app_stop_code(GPUIPC_FAIL);
    printf("rank %u: result: %s: rank 0's verdict never came (%s); this rank's own pairs "
           "%s (exit %d)\n", rr->rank, gpuipc_exit_word(code), err.msg,
           own_code == GPUIPC_PASS ? "passed" : "failed", code);
    return GPUIPC_FAIL;
}

/* ---- the mode --------------------------------------------------------------------- */

/* The selection less what two unrelated processes cannot run (a destructive
 * mechanism needs a consumer forked for it). */
static void drop_forked_only(gpuipc_app_selection *s)
{
    size_t i, k = 0;

    for (i = 0; i < s->nsel; i++)
        if (!s->sel[i]->destructive)
            s->sel[k++] = s->sel[i];
    s->nsel = k;
}

static int setup_failed(ranks_run *rr, int code, const char *what, const char *msg)
{
    const char *verdict = gpuipc_exit_word(code);

    if (rr->l != NULL)
        printf("rank %u: result: %s: %s: %s (exit %d)\n", rr->rank, verdict, what, msg, code);
    else
        printf("gpuipc_test: result: %s: %s: %s (exit %d)\n", verdict, what, msg, code);
    return code;
}

/* Rank 0 checks --json's path before the run (a refused one is a usage
 * error); the other ranks write nothing. Returns 0 or -1 after saying why. */
static int rank_zero_json(ranks_run *rr)
{
    gpuipc_err err;

    if (!rr->o->json || rr->rank != 0)
        return 0;
    if (gpuipc_outfile_check(&rr->json, rr->o->json_path, &err) < 0) {
        printf("rank 0: result: %s: --json %s: %s (exit %d)\n", gpuipc_exit_word(GPUIPC_USAGE),
               rr->o->json_path, err.msg, GPUIPC_USAGE);
        return -1;
    }
    rr->json_checked = 1;
    /* From now no earlier run's verdict stays there, however this one ends
     * (the deadline, a signal, a crash): until rank 0's verdict replaces
     * it, the document says the run did not finish. */
    if (json_write(rr, NULL, GPUIPC_FAIL, 0, 0, 0) < 0 && gpuipc_outfile_void(&rr->json) < 0)
        printf("rank 0: --json %s: an earlier run's document may still be there: it could "
               "be neither replaced nor emptied\n", rr->o->json_path);
    return 0;
}

int gpuipc_app_ranks(const gpuipc_options *o, const gpuipc_app_selection *s_in,
                     const gpuipc_inject *inject, uint64_t t0)
{
    static ranks_run rr;
    gpuipc_app_selection s = *s_in;
    gpuipc_fds at_start;
    char why[512];
    gpuipc_err err;
    int have_start, code, rc, refused;
    size_t i;

    memset(&rr, 0, sizeof(rr));
    rr.o = o;
    rr.quiet = *o;
    if (rr.quiet.level == GPUIPC_LOG_NORMAL)
        rr.quiet.level = GPUIPC_LOG_QUIET;
    rr.s = &s;
    rr.inject = inject;
    rr.t0 = t0;
    rr.json.dirfd = -1;
    drop_forked_only(&s);
    for (i = 0; i < s.nsel; i++) {
        rr.needs_cuda |= s.sel[i]->needs_cuda;
        rr.mechs[i] = s.sel[i]->name;
    }
    /* Each session would write Check's files over the last: --ranks writes
     * none (rank 0's --json holds every pair). */
    unsetenv("CK_XML_LOG_FILE_NAME");
    unsetenv("CK_TAP_LOG_FILE_NAME");
    unsetenv("CK_LOG_FILE_NAME");
    /* ... and no rank leaves a scenario out: every pair runs them all. */
    unsetenv("CK_RUN_SUITE");
    unsetenv("CK_RUN_CASE");
    unsetenv("CK_INCLUDE_TAGS");
    unsetenv("CK_EXCLUDE_TAGS");
    gpuipc_app_catch_stop_signals();
    if (s.nsel == 0)
        return setup_failed(&rr, GPUIPC_USAGE, "--ranks", "no mechanism selected that two "
                            "unrelated processes can run");
    if (!gpuipc_launch_detect(why, sizeof(why)))
        return setup_failed(&rr, GPUIPC_USAGE, "--ranks", why);
    have_start = gpuipc_account_snapshot(&at_start, &err) == 0;
    rc = gpuipc_launch_init(&rr.l, o->timeout_ns, &err);
    if (rc < 0) {
        rr.l = NULL;
        if (have_start)
            gpuipc_account_free(&at_start);
        return setup_failed(&rr, rc == -ENOENT ? GPUIPC_USAGE : rc == -ELIBACC ||
                            rc == -ENOTSUP || rc == -ENOSYS ? GPUIPC_SKIP : GPUIPC_FAIL,
                            "joining the job", err.msg);
    }
    rr.rank = g_rank = gpuipc_launch_rank(rr.l);
    rr.size = gpuipc_launch_size(rr.l);
    g_deadline_s = o->deadline_ns / 1000000000ull;
    code = GPUIPC_FAIL;
    if (gpuipc_watch_map(&err) < 0 ||
        (o->deadline_ns > 0 &&
         gpuipc_watch_start(t0 + o->deadline_ns, on_deadline, NULL, &err) < 0)) {
        setup_failed(&rr, GPUIPC_FAIL, "the watchdog", err.msg);
        goto out;
    }
    /* Rank 0's refusal of its --json is every rank's usage error, found
     * when they share their options below. */
    refused = rank_zero_json(&rr) < 0;
    /* Its listener first: the card names it, and nobody can know the name
     * before, so nobody can bind it first. */
    if (gpuipc_meet_open(&rr.meet, rr.size, rr.rank, &err) < 0) {
        setup_failed(&rr, GPUIPC_FAIL, "its listener", err.msg);
        goto out;
    }
    if ((rc = gpuipc_job_join(rr.l, gpuipc_meet_name(rr.meet), &rr.job, &err)) < 0) {
        setup_failed(&rr, GPUIPC_FAIL, "the job's wire-up", err.msg);
        goto out;
    }
    for (i = 0; i < rr.size; i++) {
        char why_not[256];

        if (i != rr.rank && gpuipc_job_where_is(rr.job, (uint32_t)i, why_not,
                                                sizeof(why_not)) == GPUIPC_JOB_SAME_NODE &&
            gpuipc_meet_know(rr.meet, (uint32_t)i,
                             (int32_t)gpuipc_job_card_of(rr.job, (uint32_t)i)->pid,
                             gpuipc_job_card_of(rr.job, (uint32_t)i)->start, &err) < 0) {
            setup_failed(&rr, GPUIPC_FAIL, "watching the ranks of this node", err.msg);
            goto out;
        }
    }
    rr.gpus = calloc(rr.size, sizeof(*rr.gpus));
    rr.who = calloc(rr.size, sizeof(*rr.who));
    rr.whop = calloc(rr.size, sizeof(*rr.whop));
    rr.gone = calloc(rr.size, 1);
    rr.mine = calloc((size_t)rr.size * 2, sizeof(*rr.mine));
    rr.digests = calloc(rr.size, sizeof(*rr.digests));
    rr.stuck = calloc(rr.size, 1);
    if (rr.gpus == NULL || rr.who == NULL || rr.whop == NULL || rr.gone == NULL ||
        rr.mine == NULL || rr.digests == NULL || rr.stuck == NULL) {
        setup_failed(&rr, GPUIPC_FAIL, "setting up", "out of memory");
        goto out;
    }
    for (i = 0; i < (size_t)rr.size * 2; i++) {
        rr.mine[i].code = GPUIPC_FAIL;
        snprintf(rr.mine[i].note, sizeof(rr.mine[i].note), "not played: the run was stopped "
                 "before this pair");
    }
    if ((rc = share_gpus(&rr, refused, &err)) != 0) {
        if (rc == GPUIPC_USAGE)
            code = GPUIPC_USAGE;
        else
            setup_failed(&rr, GPUIPC_FAIL, "sharing the GPUs' names", err.msg);
        goto out;
    }
    name_ranks(&rr);
    /* The sessions' producer opens this rank's GPU. */
    if (rr.gpus[rr.rank].ordinal >= 0)
        rr.quiet.device = rr.gpus[rr.rank].ordinal;
    if (rr.rank == 0 && o->level >= GPUIPC_LOG_NORMAL) {
        uint32_t index, count;

        gpuipc_job_node_place(rr.job, &index, &count);
        printf("ranks: %u ranks (%s); %u on this node; each ordered pair in rounds; "
               "mechanisms:", rr.size, gpuipc_launch_version(rr.l), count);
        for (i = 0; i < s.nsel; i++)
            printf("%s%s", i ? ", " : " ", s.sel[i]->name);
        printf("\n");
        fflush(stdout);
    }
    if (rr.size < 2) {
        code = setup_failed(&rr, GPUIPC_SKIP, "--ranks", "one rank, so no pair: start two or "
                            "more (mpirun -np 2 gpuipc_test --ranks)");
        goto out;
    }
    /* The FDs of the job (PMIx's, the listener, the pidfds) are there from now:
     * each session's last check counts against this. */
    gpuipc_app_note_fds_at_start();
    /* The pairs stop where the deadline less a fifth (2 to 10 s) is left:
     * the verdict's time. */
    rr.pairs_until = UINT64_MAX;
    if (o->deadline_ns > 0) {
        uint64_t keep = o->deadline_ns / 5;

        keep = keep < 2000000000ull ? 2000000000ull : keep > 10000000000ull ? 10000000000ull
               : keep;
        rr.pairs_until = keep < o->deadline_ns ? t0 + o->deadline_ns - keep : t0;
    }
    if (play(&rr) < 0) {
        setup_failed(&rr, GPUIPC_FAIL, "planning the pairs", "out of memory");
        goto out;
    }
    code = conclude(&rr);
out:
    gpuipc_meet_close(rr.meet);
    gpuipc_job_free(rr.job);
    if (gpuipc_launch_finalize(&rr.l, &err) < 0)
        printf("rank %u: %s\n", rr.rank, err.msg);
    if (rr.json_checked)
        gpuipc_outfile_close(&rr.json);
    free(rr.gpus);
    free(rr.who);
    free(rr.whop);
    free(rr.gone);
    free(rr.mine);
    free(rr.digests);
    free(rr.stuck);
    gpuipc_watch_claim(gpuipc_app_stop_code(code));
    code = gpuipc_app_stop_code(code);
    /* What this process holds now that it did not at its start (a process
     * that loaded CUDA keeps the driver's until it exits). */
    if (have_start && gpuipc_cu.driver_version == 0) {
        if (gpuipc_account_leaks_now(&at_start, &err) > 0) {
            printf("rank %u: FAIL at exit: %s (open now, not when it started)\n", rr.rank,
                   err.msg);
            if (code == GPUIPC_PASS || code == GPUIPC_SKIP)
                code = GPUIPC_FAIL;
        }
        gpuipc_account_free(&at_start);
    } else if (have_start) {
        gpuipc_account_free(&at_start);
    }
    fflush(stdout);
    return code;
}
