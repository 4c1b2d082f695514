/* SPDX-License-Identifier: Apache-2.0 */
/* ranks_pair.c: the pairs of --ranks as one rank plays them: every pair of
 * the plan it takes part in (run/plan: every ordered pair once, in the
 * phases of the forked mode's schedule, this rank's export and import of a
 * phase at once on two threads, run/phase_loop counting what the process
 * holds at each phase's ends; or with GPUIPC_PHASES=off one at a time in
 * rounds of disjoint pairs), each met at the consumer's listener
 * (launch/meet) if it can be played, then as producer (the forked mode's
 * producer session over the connection) or as consumer (the consumer's
 * session), and this rank's record of it (run/cells): its verdict, its
 * scenarios, the peer found gone or stuck. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "app/cuda/consumer_proc.h"
#include "app/cuda/process.h"
#include "app/cuda/producer_end.h"
#include "app/cuda/producer_run.h"
#include "app/cuda/ranks_run.h"
#include "core/account.h"
#include "core/clock.h"
#include "core/ledger.h"
#include "core/status.h"
#include "core/step.h"
#include "core/stop.h"
#include "core/watch.h"
#include "gpu/gpu.h"
#include "run/phase_loop.h"
#include "run/plan.h"
#include "session/role.h"

/* How long a rank waits for its peer at a pair: twice --timeout (the peer
 * may be finishing a pair whose other rank stalled, which takes up to one
 * --timeout), and never past the time kept for the verdict. */
static uint64_t meet_deadline(const ranks_run *rr)
{
    uint64_t d = gpuipc_clock_deadline(2 * rr->o->timeout_ns);

    return d < rr->pairs_until ? d : rr->pairs_until;
}

/* ---- one pair --------------------------------------------------------------------- */

/* What a failure's errno says of why a pair had no session: a timeout
 * says little (the peer may have been stuck for a cause its own record
 * names), a refusal much. */
static int weight_of(int errnum)
{
    return errnum == ETIMEDOUT ? GPUIPC_CELL_VAGUE
           : errnum == EACCES || errnum == EPERM ? GPUIPC_CELL_SURE : GPUIPC_CELL_PLAIN;
}

static void note(gpuipc_cell_side *side, int code, const char *text)
{
    side->code = code;
    snprintf(side->note, sizeof(side->note), "%.*s", (int)sizeof(side->note) - 1, text);
}

/* Whether this rank and peer, of another node, both listen on TCP; if not,
 * side says which does not and why. */
static int tcp_both(ranks_run *rr, uint32_t peer, gpuipc_cell_side *side)
{
    if (gpuipc_meet_tcp_name(rr->meet)[0] == '\0' && rr->tcp_why[0] == '\0') {
        /* The launcher placed every rank on this node, so none listens on
         * TCP; its boot id says otherwise (a test's faked node). */
        snprintf(side->note, sizeof(side->note), "%.100s is on another node by its boot id, "
                 "but the launcher placed every rank on this node, so none listens on TCP "
                 "(name the network with --ranks-net to meet it)", gpuipc_ranks_who(rr, peer));
        side->code = GPUIPC_SKIP;
        return 0;
    }
    if (gpuipc_meet_remote_clash(rr->meet, peer))
        snprintf(side->note, sizeof(side->note), "%.100s, on another node, publishes %.64s, "
                 "an address of this machine too (a NAT or bridge address every node has): "
                 "it cannot be dialled here; choose the network the nodes share with "
                 "--ranks-net or GPUIPC_RANKS_NET", gpuipc_ranks_who(rr, peer),
                 gpuipc_job_card_of(rr->job, peer)->tcp);
    else if (gpuipc_meet_tcp_name(rr->meet)[0] == '\0')
        snprintf(side->note, sizeof(side->note), "%.100s, on another node, cannot be met: "
                 "this rank has no TCP listener (%.200s)", gpuipc_ranks_who(rr, peer),
                 rr->tcp_why[0] ? rr->tcp_why : "none was opened");
    else if (strcmp(gpuipc_job_card_of(rr->job, peer)->tcp, "none") == 0)
        snprintf(side->note, sizeof(side->note), "%.100s, on another node, publishes no TCP "
                 "listener (its own output says why: choose the network with --ranks-net or "
                 "GPUIPC_RANKS_NET)", gpuipc_ranks_who(rr, peer));
    else
        return 1;
    side->code = GPUIPC_FAIL;
    side->weight = GPUIPC_CELL_SURE;
    return 0;
}

/* Whether the pair with peer can be played: on this node (or another, over
 * TCP), and not gone. */
static int can_meet(ranks_run *rr, uint32_t peer, gpuipc_cell_side *side)
{
    char why[512];
    int gone, stuck;

    if (gpuipc_job_where_is(rr->job, peer, why, sizeof(why)) != GPUIPC_JOB_SAME_NODE &&
        !gpuipc_meet_remote(rr->meet, peer)) {
        char text[GPUIPC_CELL_TEXT_LEN];

        snprintf(text, sizeof(text), "%.300s (--ranks proves pairs within one node, and "
                 "across nodes over TCP, not across namespaces of one)", why);
        note(side, GPUIPC_SKIP, text);
        return 0;
    }
    if (gpuipc_meet_remote(rr->meet, peer) && !tcp_both(rr, peer, side))
        return 0;
    gpuipc_ranks_marks(rr, peer, &gone, &stuck);
    if (gone) {
        snprintf(side->note, sizeof(side->note), "%.200s gone during an earlier pair: not "
                 "waited for", gpuipc_ranks_who(rr, peer));
        side->code = GPUIPC_FAIL;
        side->blame = GPUIPC_CELL_BLAME_PEER;
        return 0;
    }
    if (stuck) {
        snprintf(side->note, sizeof(side->note), "%.200s did not come to an earlier pair in "
                 "time (alive, but stuck or far slower): not waited for",
                 gpuipc_ranks_who(rr, peer));
        side->code = GPUIPC_FAIL;
        side->weight = GPUIPC_CELL_VAGUE;
        side->blame = GPUIPC_CELL_BLAME_PEER;
        return 0;
    }
    if (gpuipc_clock_ns() >= rr->pairs_until) {
        snprintf(side->note, sizeof(side->note), "not run: the run's --deadline is near, and "
                 "its verdict goes first (raise --deadline for this many ranks)");
        side->code = GPUIPC_FAIL;
        side->weight = GPUIPC_CELL_VAGUE;
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
    return gpuipc_stop_signal() == 0 && gpuipc_ranks_is_gone(rr, peer);
}

/* Says the connections refused since the last time, from processes that
 * are no rank of this job (launch/meet.h), once each time more come. */
void gpuipc_ranks_say_refused(ranks_run *rr)
{
    char first[256], line[400];
    unsigned n = gpuipc_meet_refused(rr->meet, first, sizeof(first));
    int more;

    /* Under mu (a phase's two pairs meet at once; the verdict's thread
     * publishes the last line said): each count said once, none after a
     * larger one. */
    if (rr->mu_ready)
        pthread_mutex_lock(&rr->mu);
    more = n > rr->refused_said;
    if (more) {
        rr->refused_said = n;
        snprintf(line, sizeof(line), "refused %u connection%s to its listener from processes "
                 "that are no rank of this job (the first: %.250s)", n, n == 1 ? "" : "s",
                 first);
        snprintf(rr->refused_line, sizeof(rr->refused_line), "%s", line);
    }
    if (rr->mu_ready)
        pthread_mutex_unlock(&rr->mu);
    if (more)
        say(rr, "%s", line);
}

/* A meeting with peer that failed with sock (a negative errno, err): the
 * peer marked gone or stuck as the wait found it, and side saying why. */
static void not_met(ranks_run *rr, uint32_t peer, gpuipc_cell_side *side, int sock,
                    const gpuipc_err *err)
{
    if (sock == GPUIPC_MEET_GONE)
        gpuipc_ranks_mark_gone(rr, peer);
    else if (sock == -ETIMEDOUT)
        gpuipc_ranks_mark_stuck(rr, peer);
    note(side, GPUIPC_FAIL, err->msg);
    side->weight = weight_of(-sock);
    /* The peer gone or not come; a stranger at its name is neither's. */
    side->blame = sock == -EACCES || sock == -EPERM ? GPUIPC_CELL_BLAME_NONE
                                                    : GPUIPC_CELL_BLAME_PEER;
    say_failed(rr, "", err->msg);
}

/* Meets peer for their pair, this rank its producer (producer set) or its
 * consumer: where the pair can be played (can_meet), the session's socket,
 * connected to the consumer's listener and vouched for by the kernel
 * (launch/meet.h), with *cred_pid the peer's pid from its credentials (-1:
 * none), for the session's HELLO (gpuipc_env.cred_pid). Otherwise -1, with
 * side saying why and the peer marked gone or stuck as the wait found it. */
static int meet(ranks_run *rr, uint32_t peer, int producer, gpuipc_cell_side *side,
                uint64_t until, int *cred_pid, int at_once)
{
    const gpuipc_job_card *card = gpuipc_job_card_of(rr->job, peer);
    gpuipc_peer cred;
    gpuipc_err err;
    int sock;

    side->code = GPUIPC_FAIL;
    side->note[0] = '\0';
    if (!can_meet(rr, peer, side))
        return -1;
    sock = producer ? gpuipc_meet_connect(rr->meet, peer, card->endpoint,
                                          gpuipc_ranks_who(rr, peer), until, &cred, &err)
                    : gpuipc_meet_accept(rr->meet, peer, gpuipc_ranks_who(rr, peer), until, &cred,
                                         &err);
    gpuipc_ranks_say_refused(rr);
    if (sock < 0) {
        not_met(rr, peer, side, sock, &err);
        return -1;
    }
    *cred_pid = cred.pid > 0 ? (int)cred.pid : -1;
    /* What each session's last check counts from: the FDs now, which hold
     * the connections of ranks that came early for a later pair (held by
     * launch/meet until then). In a phase the phase counts instead. */
    if (!at_once)
        gpuipc_app_note_fds_at_start(&rr->proc);
    return sock;
}

/* Who consumer c of another node is, for this node's IMEX daemon to list
 * (producer_end.c): its rank, host name and listener's address less the
 * port ("192.0.2.2:41234", "[2001:db8::2]:41234"). */
static void peer_node(ranks_run *rr, uint32_t c, gpuipc_producer_run *run)
{
    const gpuipc_job_card *card = gpuipc_job_card_of(rr->job, c);
    const char *tcp, *colon;
    size_t n;

    run->peer_rank = c;
    if (card == NULL)
        return;
    run->peer_host = card->host;
    tcp = card->tcp;
    if (strcmp(tcp, "none") == 0 || (colon = strrchr(tcp, ':')) == NULL)
        return;
    n = (size_t)(colon - tcp);
    if (tcp[0] == '[' && n >= 2 && tcp[n - 1] == ']') {
        tcp++;
        n -= 2;
    }
    snprintf(run->peer_addr, sizeof(run->peer_addr), "%.*s", (int)n, tcp);
}

/* Whether m is one the run requires (--require). */
static int required(const gpuipc_app_selection *s, const gpuipc_mech *m)
{
    size_t i;

    for (i = 0; i < s->nreq; i++)
        if (s->req[i] == m)
            return 1;
    return 0;
}

/* This rank exports to consumer c over sock (met, the peer's pid
 * cred_pid), into side; at_once: in a phase, its consumer's session at
 * the same time on another thread. */
static void play_producer(ranks_run *rr, uint32_t c, int sock, int cred_pid,
                          gpuipc_cell_side *side, int at_once)
{
    gpuipc_producer_run run; /* this pair's; gpuipc_app_producer_init zeroes it */
    const gpuipc_app_selection *s = rr->s;
    const gpuipc_mech *sub[GPUIPC_APP_NMECH_MAX], *out[GPUIPC_APP_NMECH_MAX];
    char desc[GPUIPC_ERR_LEN + 160];
    gpuipc_err err;
    size_t i, nsub, nout, nrun, nrec;
    int code, other_gpu, other_node, domain, rc;
    char domain_why[300];

    /* On two GPUs, only what crosses GPUs (as the forked mode's ring); on
     * two nodes, only what crosses nodes (its handle in-band, no FD). */
    other_node = gpuipc_meet_remote(rr->meet, c);
    other_gpu = rr->gpus[c].ordinal >= 0 && rr->gpus[rr->rank].ordinal >= 0 &&
                memcmp(rr->gpus[c].uuid, rr->gpus[rr->rank].uuid, GPUIPC_UUID_LEN) != 0;
    /* Between two nodes, what crosses them only where their GPUs' fabric
     * info allows (launch/job.h: one NVLink domain, or not known). */
    domain = other_node ? gpuipc_job_gpu_domain(&rr->gpus[rr->rank], &rr->gpus[c], domain_why,
                                                sizeof(domain_why))
                        : GPUIPC_JOB_DOMAIN_ONE;
    for (i = nsub = nout = 0; i < s->nsel; i++) {
        if ((other_node && (!s->sel[i]->cross_node || domain != GPUIPC_JOB_DOMAIN_ONE)) ||
            (other_gpu && s->sel[i]->needs_cuda && !s->sel[i]->cross_device))
            out[nout++] = s->sel[i];
        else
            sub[nsub++] = s->sel[i];
    }
    gpuipc_app_producer_init(&run, &rr->quiet, sub, nsub, s->req, s->nreq, rr->inject,
                             rr->t0);
    run.env.cred_pid = cred_pid;
    run.env.token = gpuipc_job_token_of(rr->job)->hex;
    run.env.rank = rr->rank;
    run.env.peer_rank = c;
    run.peer_label = gpuipc_ranks_who(rr, c);
    run.proc = &rr->proc;
    if (at_once) {
        /* Its scenarios count their own driver objects; the phase counts
         * the rest (run/phase_loop). */
        run.env.per_phase = 1;
        run.env.session_check = 0;
        run.proc = NULL;
    }
    if (rr->gpus[c].ordinal >= 0)
        memcpy(run.peer_uuid, rr->gpus[c].uuid, GPUIPC_UUID_LEN);
    snprintf(run.where, sizeof(run.where), "rank %u", rr->rank);
    if (other_node)
        peer_node(rr, c, &run);
    if (gpuipc_wire_open(&run.w, sock, "consumer", &err) < 0) {
        close(sock);
        snprintf(run.lost, sizeof(run.lost), "%s", err.msg);
        code = GPUIPC_FAIL;
    } else if ((rc = gpuipc_app_producer_hello(&run, &err)) < 0) {
        snprintf(run.lost, sizeof(run.lost), "%s", err.msg);
        if (rc == -ETIMEDOUT)
            gpuipc_ranks_mark_stuck(rr, c);
        side->weight = weight_of(-rc);
        side->blame = GPUIPC_CELL_BLAME_PEER; /* refused, lost or silent at HELLO */
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

            for (i = 0; i < run.cells.n && first == NULL; i++)
                if (run.cells.results[i].status == GPUIPC_FAIL)
                    first = &run.cells.results[i];
            side->gone = 1;
            snprintf(side->note, sizeof(side->note), "%.160s gone during %s%s%.200s",
                     gpuipc_ranks_who(rr, c),
                     first ? gpuipc_step_name(first->failure.step) : "the session",
                     first ? ": " : "", first ? first->reason : "");
        }
    }
    /* The record's scenarios: the session's, then those left out on two
     * GPUs, at most GPUIPC_CELLS_SCENARIOS_MAX in all, room for them taken
     * at once. */
    nrun = run.started ? run.cells.n : 0;
    if (nrun > GPUIPC_CELLS_SCENARIOS_MAX)
        nrun = GPUIPC_CELLS_SCENARIOS_MAX;
    nrec = run.started ? nrun + nout : 0;
    if (nrec > GPUIPC_CELLS_SCENARIOS_MAX)
        nrec = GPUIPC_CELLS_SCENARIOS_MAX;
    if (gpuipc_cell_side_reserve(side, nrec) < 0) {
        side->code = GPUIPC_FAIL;
        snprintf(side->note, sizeof(side->note), "out of memory for the record of its %zu "
                 "scenarios", nrec);
        say_failed(rr, "", side->note);
    }
    for (i = 0; i < nrun; i++) {
        const gpuipc_result *r = &run.cells.results[i];
        gpuipc_cell_scenario *cs = i < side->n ? &side->s[i] : NULL;

        if (r->status == GPUIPC_FAIL && r->failure.errnum == ETIMEDOUT) {
            int gone, stuck;

            gpuipc_ranks_marks(rr, c, &gone, &stuck);
            if (!gone)
                gpuipc_ranks_mark_stuck(rr, c);
        }
        if (r->status == GPUIPC_FAIL) {
            char line[GPUIPC_ERR_LEN + 64];

            snprintf(line, sizeof(line), "%u -> %u %s: ", rr->rank, c, run.cells.sel[i]->name);
            say_failed(rr, line, r->reason);
        }
        if (cs == NULL)
            continue;
        snprintf(cs->mech, sizeof(cs->mech), "%s", run.cells.sel[i]->name);
        cs->status = r->status;
        cs->side = r->failed_side;
        cs->step = r->failure.step;
        snprintf(cs->call, sizeof(cs->call), "%s", r->failure.call);
        cs->errnum = r->failure.errnum > 0 && r->failure.errnum <= 4095 ? r->failure.errnum : 0;
        cs->cu = r->failure.cu > 0 ? r->failure.cu : 0;
        snprintf(cs->reason, sizeof(cs->reason), "%.*s", (int)sizeof(cs->reason) - 1,
                 r->status == GPUIPC_PASS ? r->detail : r->reason);
        snprintf(cs->what, sizeof(cs->what), "%.*s", (int)sizeof(cs->what) - 1, r->cause.what);
        snprintf(cs->fix, sizeof(cs->fix), "%.*s", (int)sizeof(cs->fix) - 1, r->cause.fix);
    }
    for (i = 0; nrun + i < side->n; i++) {
        gpuipc_cell_scenario *cs = &side->s[nrun + i];

        snprintf(cs->mech, sizeof(cs->mech), "%s", out[i]->name);
        cs->status = GPUIPC_SKIP;
        if (other_node && out[i]->cross_node) {
            /* Not one NVLink domain, or a fabric not ready: the plan's
             * verdict, which --require turns into a failure. */
            cs->status = domain == GPUIPC_JOB_DOMAIN_NOT_READY || required(s, out[i])
                             ? GPUIPC_FAIL : GPUIPC_SKIP;
            cs->side = 0; /* on no side: the plan's */
            snprintf(cs->reason, sizeof(cs->reason), "not run: %.300s%s", domain_why,
                     cs->status == GPUIPC_FAIL && domain != GPUIPC_JOB_DOMAIN_NOT_READY
                         ? " (--require " : "");
            if (cs->status == GPUIPC_FAIL && domain != GPUIPC_JOB_DOMAIN_NOT_READY)
                snprintf(cs->reason + strlen(cs->reason),
                         sizeof(cs->reason) - strlen(cs->reason), "%.31s)", out[i]->name);
        } else if (other_node)
            snprintf(cs->reason, sizeof(cs->reason), "not run: %.100s and %.100s are on "
                     "different nodes, and %.31s shares memory within one node (by an FD or a "
                     "pid; only fabric crosses nodes)", gpuipc_ranks_who(rr, rr->rank),
                     gpuipc_ranks_who(rr, c), out[i]->name);
        else
            snprintf(cs->reason, sizeof(cs->reason), "not run: %.100s and %.100s hold different "
                 "GPUs, and %.31s shares memory within one GPU (the vmm mechanisms cross "
                 "GPUs)", gpuipc_ranks_who(rr, rr->rank), gpuipc_ranks_who(rr, c), out[i]->name);
    }
    gpuipc_app_scenarios_free(&run);
}

/* This rank imports from producer p over sock (met, the peer's pid
 * cred_pid), into side; at_once as for play_producer. */
static void play_consumer(ranks_run *rr, uint32_t p, int sock, int cred_pid,
                          gpuipc_cell_side *side, int at_once)
{
    gpuipc_session_end end;
    int code;

    code = gpuipc_app_consumer_session(sock, &rr->quiet, rr->inject, rr->t0,
                                       gpuipc_job_token_of(rr->job)->hex, rr->rank, p, cred_pid,
                                       at_once ? NULL : &rr->proc, &end);
    side->code = code;
    side->met = end.met;
    side->said_bye = end.said_bye;
    side->passed = end.bye.passed;
    side->failed = end.bye.failed;
    side->skipped = end.bye.skipped;
    side->own = end.own;
    snprintf(side->note, sizeof(side->note), "%.390s", end.reason);
    side->weight = weight_of(end.errnum);
    if (!end.met)
        side->blame = GPUIPC_CELL_BLAME_PEER; /* refused, lost or silent at HELLO */
    if (code != GPUIPC_PASS && code != GPUIPC_SKIP) {
        say_failed(rr, "as consumer: ", end.reason[0] ? end.reason : "(said above)");
        if (end.errnum == ETIMEDOUT)
            gpuipc_ranks_mark_stuck(rr, p);
        if (peer_died(rr, p)) {
            char text[GPUIPC_CELL_TEXT_LEN];

            side->gone = 1;
            snprintf(text, sizeof(text), "%.160s gone: %.220s", gpuipc_ranks_who(rr, p),
                     end.reason);
            snprintf(side->note, sizeof(side->note), "%s", text);
        }
    }
}

/* A fresh record for slot k: the last one was handed over. */
static gpuipc_cell_side *fresh(ranks_run *rr, int k)
{
    gpuipc_cell_side *side = rr->work[k];

    gpuipc_cell_side_free(side);
    side->code = GPUIPC_FAIL;
    side->weight = GPUIPC_CELL_PLAIN;
    return side;
}

/* Every pair of the plan this rank takes part in, one at a time in round
 * order (GPUIPC_PHASES=off). */
static int play_rounds(ranks_run *rr)
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
        int producer = p == rr->rank, k = producer ? RANKS_EXPORTS : RANKS_IMPORTS;
        int role = producer ? GPUIPC_ROLE_PRODUCER : GPUIPC_ROLE_CONSUMER;
        gpuipc_cell_side *side;
        int sock, cred_pid;

        if (p != rr->rank && c != rr->rank)
            continue;
        side = fresh(rr, k);
        gpuipc_ranks_watch_pair(rr, p, c, role);
        gpuipc_watch_role(role);
        gpuipc_watch_step(GPUIPC_STEP_NONE, "");
        sock = meet(rr, producer ? c : p, producer, side, meet_deadline(rr), &cred_pid, 0);
        if (sock >= 0 && producer)
            play_producer(rr, c, sock, cred_pid, side, 0);
        else if (sock >= 0)
            play_consumer(rr, p, sock, cred_pid, side, 0);
        /* Handed over; where the verdict's thread has taken the records
         * already, the pairs end here. */
        if (gpuipc_ranks_record(rr, producer ? c : p, !producer) < 0)
            break;
    }
    free(plan);
    return 0;
}

/* ---- the phases ------------------------------------------------------------------- */

/* One of a rank's two pairs in a phase: as producer (k RANKS_EXPORTS) to
 * peer, or as consumer (RANKS_IMPORTS) from it, met and played on a thread
 * of its own, so that neither waits for the other's peer. */
typedef struct ranks_half {
    ranks_run *rr;
    int k;
    uint32_t peer;
    uint64_t until; /* the meeting's deadline */
    pthread_t thread;
    int started;
} ranks_half;

typedef struct ranks_phases {
    ranks_run *rr;
    gpuipc_plan_pair *plan; /* run/plan's phases, of the ranks */
    int *ids;           /* the ranks, 0 to size - 1, as the plan names them */
    ranks_half half[2];
    int *held;          /* the connections held for later pairs at the phase's beginning */
    size_t nheld;
} ranks_phases;

int gpuipc_ranks_in_phases(void)
{
    const char *off = getenv("GPUIPC_PHASES");

    return off == NULL || strcmp(off, "off") != 0;
}

static size_t phase_cells(void *arg, size_t k)
{
    (void)arg;
    return k == 0 ? 0 : 2; /* phase 0 would pair each rank with itself */
}

/* The connections launch/meet holds for later pairs now, into *fds
 * (malloc'd; NULL where there are none or no memory). Returns how many. */
static size_t held_now(ranks_run *rr, int **fds)
{
    size_t n = gpuipc_meet_held(rr->meet, NULL, 0), got;

    *fds = n > 0 ? calloc(n, sizeof(**fds)) : NULL;
    if (*fds == NULL)
        return 0;
    got = gpuipc_meet_held(rr->meet, *fds, n);
    return got < n ? got : n;
}

/* Phase k of run/plan's schedule, the forked mode's: this rank exports to
 * rank + k and imports from rank - k (mod the ranks). */
static int phase_begin(void *arg, size_t k, gpuipc_err *err)
{
    ranks_phases *ph = arg;
    ranks_run *rr = ph->rr;
    uint64_t until = meet_deadline(rr);
    int i, to, from;

    (void)err;
    free(ph->held);
    ph->nheld = held_now(rr, &ph->held);
    if (gpuipc_plan_phase_peers(ph->plan, ph->ids, rr->size, (unsigned)k, rr->rank, &to,
                                &from) < 0)
        return -EPROTO; /* a plan of another shape: not played at all */
    ph->half[RANKS_EXPORTS].peer = (uint32_t)to;
    ph->half[RANKS_IMPORTS].peer = (uint32_t)from;
    for (i = 0; i < 2; i++) {
        ranks_half *h = &ph->half[i];

        h->rr = rr;
        h->k = i;
        h->until = until;
        fresh(rr, i);
        gpuipc_ranks_watch_pair(rr, i == RANKS_EXPORTS ? rr->rank : h->peer,
                                i == RANKS_EXPORTS ? h->peer : rr->rank,
                                i == RANKS_EXPORTS ? GPUIPC_ROLE_PRODUCER
                                                   : GPUIPC_ROLE_CONSUMER);
    }
    return 0;
}

/* One pair of the phase, met and played on its thread; its record handed
 * over as it ends. */
static void *run_half(void *arg)
{
    ranks_half *h = arg;
    ranks_run *rr = h->rr;
    gpuipc_cell_side *side = rr->work[h->k];
    int producer = h->k == RANKS_EXPORTS, sock, cred_pid = -1;
    sigset_t block, was;

    /* The stop signals are the run's thread's to take; a stop wakes every
     * wait through the stop channel all the same. */
    sigfillset(&block);
    pthread_sigmask(SIG_BLOCK, &block, &was);
    /* Its own side of the watchdog's page, its own tag on the driver
     * objects it makes, its own result words on the GPU. */
    gpuipc_watch_thread_role(producer ? GPUIPC_ROLE_PRODUCER : GPUIPC_ROLE_CONSUMER);
    gpuipc_watch_step(GPUIPC_STEP_NONE, "");
    gpuipc_ledger_set_tag((uint32_t)h->k + 1);
    gpuipc_gpu_result_slot((unsigned)h->k);
    sock = meet(rr, h->peer, producer, side, h->until, &cred_pid, 1);
    if (sock >= 0 && producer)
        play_producer(rr, h->peer, sock, cred_pid, side, 1);
    else if (sock >= 0)
        play_consumer(rr, h->peer, sock, cred_pid, side, 1);
    if (gpuipc_ranks_record(rr, h->peer, !producer) < 0)
        rr->closed = 1;
    gpuipc_gpu_result_slot(0);
    gpuipc_ledger_set_tag(0);
    gpuipc_watch_thread_role(0);
    pthread_sigmask(SIG_SETMASK, &was, NULL);
    return NULL;
}

/* Both pairs of the phase at once. */
static void phase_play(void *arg, size_t k)
{
    ranks_phases *ph = arg;
    ranks_run *rr = ph->rr;
    uint64_t t = gpuipc_clock_ns();
    int i;

    for (i = 0; i < 2; i++)
        ph->half[i].started = pthread_create(&ph->half[i].thread, NULL, run_half,
                                             &ph->half[i]) == 0;
    /* No thread: here, beside the other's, its meeting's deadline from now. */
    for (i = 0; i < 2; i++)
        if (!ph->half[i].started) {
            ph->half[i].until = meet_deadline(rr);
            run_half(&ph->half[i]);
        }
    for (i = 0; i < 2; i++) {
        if (ph->half[i].started)
            pthread_join(ph->half[i].thread, NULL);
        ph->half[i].started = 0;
    }
    if (rr->o->level >= GPUIPC_LOG_VERBOSE) {
        printf("rank %u: phase %zu: %u -> %u and %u -> %u at once, in %.1f ms\n", rr->rank, k,
               rr->rank, ph->half[RANKS_EXPORTS].peer, ph->half[RANKS_IMPORTS].peer, rr->rank,
               (double)(gpuipc_clock_ns() - t) / 1e6);
        fflush(stdout);
    }
}

/* The connections held for later pairs are no pair's: those held at the
 * phase's beginning leave the base (a pair may take one and close it, and
 * a leak then take its number unseen), those held at its end join it (they
 * came while the phase ran). */
static void phase_not_cells(void *arg, size_t k, gpuipc_usage *base)
{
    ranks_phases *ph = arg;
    int *fds;
    size_t n, i;

    (void)k;
    for (i = 0; i < ph->nheld; i++)
        gpuipc_account_remove(&base->fds, ph->held[i]);
    n = held_now(ph->rr, &fds);
    for (i = 0; i < n; i++)
        if (gpuipc_account_add(&base->fds, fds[i]) < 0)
            break; /* out of memory: the rest count as the phase's */
    free(fds);
}

/* A drift of the phase: both its pairs fail for it (the other ranks are in
 * their next phases, so the pairs cannot run again one at a time). */
static void phase_stands(void *arg, size_t k, const char *text)
{
    ranks_phases *ph = arg;
    int i;

    (void)k;
    say_failed(ph->rr, "", text);
    for (i = 0; i < 2; i++)
        gpuipc_ranks_amend(ph->rr, ph->half[i].peer, i == RANKS_IMPORTS, text);
}

static int phase_stopped(void *arg)
{
    ranks_phases *ph = arg;

    return gpuipc_stop_signal() != 0 || ph->rr->closed;
}

/* What the driver opens once per process and keeps, at a mechanism's
 * first use (the IMEX channel's file, at the first FABRIC allocation), is
 * opened here, before the first phase's count, which would take it for a
 * leak: each selected GPU mechanism's probe, once, on this rank's GPU. */
static void warm_up(ranks_run *rr)
{
    const gpuipc_job_gpu *g = &rr->gpus[rr->rank];
    gpuipc_scenario sc;
    gpuipc_env env;
    gpuipc_err why;
    size_t i;

    if (!rr->needs_cuda || g->ordinal < 0)
        return;
    gpuipc_app_env_init(&env, GPUIPC_ROLE_PRODUCER, &rr->quiet, rr->inject, rr->t0);
    env.gpu_bytes = gpuipc_gpu_process_bytes;
    /* A producer's probe works on the GPU its env has current. */
    if (gpuipc_gpu_attach_uuid(&env, g->uuid, &why) < 0) {
        say_failed(rr, "warming up its GPU before the phases: ", why.msg);
        return;
    }
    for (i = 0; i < rr->s->nsel; i++) {
        const gpuipc_mech *m = rr->s->sel[i];

        if (!m->needs_cuda || m->probe == NULL)
            continue;
        gpuipc_role_start(&sc, &env, NULL, m, m->name);
        memcpy(sc.uuid, g->uuid, GPUIPC_UUID_LEN);
        memcpy(sc.peer_uuid, g->uuid, GPUIPC_UUID_LEN);
        (void)m->probe(&sc, &why); /* each session probes again, and says */
    }
    gpuipc_watch_step(GPUIPC_STEP_NONE, "");
}

/* Whether any pair of this rank runs a GPU mechanism, either way: one of
 * its node does where one is selected; one of another node only where a
 * mechanism that crosses nodes is and their GPUs are of one NVLink domain
 * (as play_producer plans). A rank whose every pair the plan leaves out
 * opens no context (nor needs a driver that can). */
static int uses_its_gpu(ranks_run *rr)
{
    const gpuipc_app_selection *s = rr->s;
    char why[300];
    uint32_t c;
    size_t i;
    int any = 0, across = 0;

    for (i = 0; i < s->nsel; i++) {
        any |= s->sel[i]->needs_cuda;
        across |= s->sel[i]->needs_cuda && s->sel[i]->cross_node;
    }
    for (c = 0; any && c < rr->size; c++) {
        if (c == rr->rank)
            continue;
        if (!gpuipc_meet_remote(rr->meet, c))
            return 1;
        if (across && gpuipc_job_gpu_domain(&rr->gpus[rr->rank], &rr->gpus[c], why,
                                            sizeof(why)) == GPUIPC_JOB_DOMAIN_ONE)
            return 1;
    }
    return 0;
}

static int play_phases(ranks_run *rr)
{
    ranks_phases ph;
    gpuipc_phase_loop l;
    char who[WHO_LEN + 16];
    gpuipc_err err;
    int ordinal = rr->gpus[rr->rank].ordinal, gpu;
    unsigned nphases = 0;
    size_t i;

    memset(&ph, 0, sizeof(ph));
    ph.rr = rr;
    if ((ph.ids = calloc(rr->size, sizeof(*ph.ids))) == NULL)
        return -ENOMEM;
    for (i = 0; i < rr->size; i++)
        ph.ids[i] = (int)i;
    if ((ph.plan = gpuipc_plan_phases(ph.ids, rr->size, &nphases)) == NULL) {
        free(ph.ids);
        return -ENOMEM;
    }
    /* Its GPU's context from the first phase to the last: opened before
     * the first phase's count, which must not take it for a leak, and not
     * ended by each session. */
    gpuipc_gpu_hold(1);
    gpu = rr->needs_cuda && ordinal >= 0 && uses_its_gpu(rr);
    if (gpu && (gpuipc_gpu_init(&err) < 0 || gpuipc_gpu_open_all(&ordinal, 1, &err) < 0))
        say_failed(rr, "opening its GPU before the phases: ", err.msg);
    else if (gpu)
        warm_up(rr);
    snprintf(who, sizeof(who), "%s", gpuipc_ranks_who(rr, rr->rank));
    memset(&l, 0, sizeof(l));
    l.arg = &ph;
    l.nphases = (size_t)nphases + 1; /* phase 0, each rank alone, has no cells here */
    l.who = who;
    l.gpu_bytes = gpu ? gpuipc_gpu_process_bytes : NULL;
    l.settle_ns = GPUIPC_ENV_SETTLE_NS;
    l.cells = phase_cells;
    l.begin = phase_begin;
    l.play = phase_play;
    l.not_cells = phase_not_cells;
    l.stands = phase_stands;
    l.stopped = phase_stopped;
    if (gpuipc_phase_loop_run(&l, &err) < 0)
        say_failed(rr, "planning the phases: ", "run/plan's phases are not of the shape "
                   "this rank reads (an internal error: report it with -v)");
    gpuipc_gpu_hold(0);
    gpuipc_gpu_close_all();
    free(ph.held);
    free(ph.plan);
    free(ph.ids);
    return 0;
}

int gpuipc_ranks_play(ranks_run *rr)
{
    return gpuipc_ranks_in_phases() ? play_phases(rr) : play_rounds(rr);
}
