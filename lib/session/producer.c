/* SPDX-License-Identifier: Apache-2.0 */
/* producer.c: the producer's side of a session: HELLO, the probes, each
 * scenario (BEGIN, READY, OFFER and FDS, REPORT, END, END_ACK) and BYE.
 * docs/protocol.md is the one description of the messages and their order.
 * What this file holds to, whatever happens:
 * - each message of a scenario goes out even when an earlier step failed,
 *   carrying that failure, so both sides take the same steps, agree on the
 *   outcome and meet again at the next BEGIN; only a broken connection ends
 *   the session early;
 * - the verdict comes from what this side can check itself: the consumer's
 *   check must cover every word this side wrote, find none bad and read the
 *   digest written, and this side reads the consumer's pattern back itself;
 *   the consumer's word can only lower the verdict;
 * - the importer releases first (memory pools and legacy IPC require the
 *   exporter to free only after every importer let go);
 * - what the leak check compares is this process's own (FDs, driver
 *   objects, shared memory, GPU memory by NVML), so other processes on the
 *   GPU cannot move it.
 *
 *   P1 BEGIN, P2 baseline (taken first), C2 READY; P3 alloc, fill, export;
 *   P4 OFFER (P4b FDS); C5 REPORT; P5 judge the consumer's check and check
 *   its pattern (or that ours is unchanged); P6 END, C7 END_ACK (and TIMES);
 *   P7 release; P8 count what leaked. */
#include "session/producer.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "core/account.h"
#include "core/clock.h"
#include "core/step.h"
#include "core/stop.h"
#include "core/units.h"
#include "session/link.h"
#include "session/pattern.h"
#include "session/proof.h"
#include "session/role.h"

/* A seed the consumer cannot match by accident: what a wrong seed looks like. */
#define WRONG_SEED_MASK 0x5a5a5a5a5a5a5a5aull

/* Sends msg (filled in by the caller) at step and waits for the reply of
 * type reply, at reply_step, into msg, within the timeout each. Returns 0 or
 * a negative errno with err naming the step. */
static int request(gpuipc_env *env, gpuipc_wire *w, gpuipc_msg *msg, unsigned step,
                   unsigned reply, unsigned reply_step, gpuipc_err *err)
{
    int fds[GPUIPC_WIRE_MAX_FDS];
    int rc;

    gpuipc_env_at(env, w, step);
    rc = gpuipc_wire_send(w, msg, NULL, gpuipc_clock_deadline(env->timeout_ns), step, err);
    if (rc < 0)
        return rc;
    gpuipc_env_waits(env, reply_step);
    return gpuipc_wire_recv(w, GPUIPC_MSG_BIT(reply), msg, fds,
                            gpuipc_clock_deadline(env->timeout_ns), reply_step, err);
}

/* In a job: the consumer's HELLO must prove the token for this pair and
 * both nonces; then this side's proof and facts go in AUTH, and the
 * consumer's facts come back in its AUTH. Returns 0, or a negative errno
 * with err (-EACCES: refused, named). */
static int prove(gpuipc_env *env, gpuipc_wire *w, const uint8_t *nonce_p, unsigned flags,
                 gpuipc_msg *msg, gpuipc_err *err)
{
    const gpuipc_msg_hello *h = &msg->u.hello;
    uint32_t pid = h->pid;
    uint8_t nonce_c[GPUIPC_WIRE_NONCE_LEN], key[GPUIPC_WIRE_KEY_LEN];
    gpuipc_facts facts;
    int rc;

    if (h->rank != env->peer_rank || h->peer_rank != env->rank)
        return gpuipc_err_set(err, -EACCES, "hello: refused the consumer (pid %u): it answers "
                              "as rank %u for pair %u -> %u, and this is pair %u -> %u (a "
                              "process that is not the rank this side meant to meet)", pid,
                              h->rank, h->peer_rank, h->rank, env->rank, env->peer_rank);
    if (!gpuipc_proof_holds(env, GPUIPC_ROLE_CONSUMER, nonce_p, h->nonce, env->rank,
                            env->peer_rank, h->mac))
        return gpuipc_err_set(err, -EACCES, "hello: refused the consumer (pid %u): its HELLO "
                              "does not prove this job's token (HMAC-SHA256 over both nonces "
                              "and ranks): a process that is not rank %u of this job, or of "
                              "another job", pid, env->peer_rank);
    memcpy(nonce_c, h->nonce, sizeof(nonce_c));
    /* From AUTH on, every frame is sealed under the session's key. */
    if ((rc = gpuipc_proof_session_key(env, nonce_p, nonce_c, env->rank, env->peer_rank,
                                       flags, key)) < 0)
        return gpuipc_err_set(err, rc, "hello: this rank's token is not 32 hex digits");
    gpuipc_wire_seal(w, key, GPUIPC_ROLE_PRODUCER, GPUIPC_ROLE_CONSUMER);
    explicit_bzero(key, sizeof(key));
    memset(msg, 0, sizeof(*msg));
    msg->type = GPUIPC_MSG_AUTH;
    msg->u.auth.pid = (uint32_t)getpid();
    msg->u.auth.facts = env->facts;
    if ((rc = gpuipc_proof_make(env, GPUIPC_ROLE_PRODUCER, nonce_p, nonce_c, env->rank,
                                env->peer_rank, msg->u.auth.mac)) < 0)
        return gpuipc_err_set(err, rc, "hello: this rank's token is not 32 hex digits");
    if ((rc = request(env, w, msg, GPUIPC_STEP_HELLO, GPUIPC_MSG_AUTH, GPUIPC_STEP_HELLO,
                      err)) < 0)
        return rc;
    if (msg->u.auth.pid != pid)
        return gpuipc_err_set(err, -EPROTO, "hello: the consumer's AUTH names pid %u, its "
                              "HELLO pid %u", msg->u.auth.pid, pid);
    /* Where the caller reads them. HELLO and AUTH share the message's
     * union at other offsets: the facts go through a copy, never from one
     * member straight into the other, which overlaps it. */
    facts = msg->u.auth.facts;
    msg->u.hello.facts = facts;
    msg->u.hello.pid = pid;
    msg->u.hello.role = GPUIPC_ROLE_CONSUMER;
    return 0;
}

int gpuipc_producer_hello(gpuipc_env *env, gpuipc_wire *w, unsigned flags, int *peer_pid,
                          gpuipc_err *err)
{
    uint8_t nonce_p[GPUIPC_WIRE_NONCE_LEN] = {0};
    gpuipc_msg msg;
    int rc;

    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_HELLO;
    msg.u.hello.pid = (uint32_t)getpid();
    msg.u.hello.role = GPUIPC_ROLE_PRODUCER;
    msg.u.hello.flags = flags;
    if (gpuipc_inject_sabotage(&env->inject, env->role, GPUIPC_SABOTAGE_NOT_DUMPABLE))
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    gpuipc_facts_gather(&env->facts);
    if (env->token != NULL) {
        /* A job: this side's facts wait for the consumer's proof. */
        if ((rc = gpuipc_proof_nonce(nonce_p, err)) < 0)
            return rc;
        memcpy(msg.u.hello.nonce, nonce_p, sizeof(nonce_p));
        msg.u.hello.rank = env->rank;
        msg.u.hello.peer_rank = env->peer_rank;
    } else {
        msg.u.hello.facts = env->facts;
    }
    if ((rc = request(env, w, &msg, GPUIPC_STEP_HELLO, GPUIPC_MSG_HELLO, GPUIPC_STEP_HELLO,
                      err)) < 0)
        return rc;
    if (msg.u.hello.role != GPUIPC_ROLE_CONSUMER)
        return gpuipc_err_set(err, -EPROTO, "hello: the peer (pid %u) is not a consumer",
                              msg.u.hello.pid);
    if (env->token != NULL && (rc = prove(env, w, nonce_p, flags, &msg, err)) < 0)
        return rc;
    *peer_pid = gpuipc_env_peer_pid(env, msg.u.hello.pid);
    env->peer_pid = *peer_pid;
    env->peer_facts = msg.u.hello.facts;
    env->have_peer_facts = 1;
    return 0;
}

/* The devices of ask into a PROBE or BEGIN: this side's and the consumer's. */
static void put_devices(const gpuipc_scenario_ask *ask, uint8_t *uuid, uint8_t *consumer_uuid)
{
    if (ask->uuid != NULL)
        memcpy(uuid, ask->uuid, GPUIPC_UUID_LEN);
    if (ask->peer_uuid != NULL)
        memcpy(consumer_uuid, ask->peer_uuid, GPUIPC_UUID_LEN);
}

int gpuipc_producer_probe(gpuipc_env *env, gpuipc_wire *w, const gpuipc_scenario_ask *ask,
                          gpuipc_status *st, gpuipc_err *err)
{
    gpuipc_msg msg;
    int rc;

    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_PROBE;
    snprintf(msg.u.probe.mech, sizeof(msg.u.probe.mech), "%s", ask->mech->name);
    put_devices(ask, msg.u.probe.uuid, msg.u.probe.consumer_uuid);
    if ((rc = request(env, w, &msg, GPUIPC_STEP_PROBE, GPUIPC_MSG_PROBE_ACK, GPUIPC_STEP_PROBE,
                      err)) < 0)
        return rc;
    *st = msg.u.probe_ack;
    return 0;
}

int gpuipc_producer_bye(gpuipc_env *env, gpuipc_wire *w, const gpuipc_msg_bye *verdict,
                        gpuipc_status *ack, gpuipc_err *err)
{
    gpuipc_msg msg;
    int rc;

    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_BYE;
    msg.u.bye = *verdict;
    if ((rc = request(env, w, &msg, GPUIPC_STEP_BYE, GPUIPC_MSG_BYE_ACK, GPUIPC_STEP_BYE_ACK,
                      err)) < 0)
        return rc;
    *ack = msg.u.bye_ack;
    return 0;
}

void gpuipc_result_set(gpuipc_result *r, int status, int side, unsigned step,
                       const gpuipc_err *e, const char *fmt, ...)
{
    va_list ap;

    r->status = status;
    r->failed_side = side;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
    va_end(ap);
    gpuipc_wire_status(&r->failure, status, step, r->reason);
    if (e != NULL)
        gpuipc_wire_status_what(&r->failure, e);
}

void gpuipc_result_of_status(gpuipc_result *r, int status, int side, const gpuipc_status *st)
{
    r->status = status;
    r->failed_side = side;
    r->failure = *st;
    r->failure.code = status;
    snprintf(r->reason, sizeof(r->reason), "%s%.440s",
             side == GPUIPC_ROLE_CONSUMER ? "consumer " : "", st->reason);
}

/* What the producer keeps of one scenario beyond the engine's. */
typedef struct pscen {
    gpuipc_scenario sc;
    gpuipc_result *res;
    uint64_t seed;      /* this side's pattern seed */
    uint32_t fds_total; /* FDs the offer hands over in all */
    unsigned fds_sent;  /* those that went with OFFER itself */
    int offered;        /* OFFER went out saying PASS: there is something to report on */
} pscen;

/* The consumer's word can only lower this scenario's verdict: a FAIL fails
 * it; a SKIP in READY (it cannot take part) makes it a skip, unless
 * something failed already; a SKIP after it has taken part is no verdict a
 * scenario can have, and fails it. */
static void note_consumer(gpuipc_scenario *sc, const gpuipc_status *st, unsigned at)
{
    if (st->code == GPUIPC_SKIP && at == GPUIPC_STEP_READY) {
        if (sc->theirs.code == GPUIPC_PASS)
            sc->theirs = *st;
    } else if (st->code == GPUIPC_SKIP) {
        gpuipc_wire_status_fail(&sc->theirs, at, "%s: it says SKIP after it took part, which "
                                "no scenario can end with: %.250s", gpuipc_step_name(at),
                                st->reason);
    } else if (st->code == GPUIPC_FAIL && sc->theirs.code != GPUIPC_FAIL) {
        sc->theirs = *st;
    }
}

/* Closes the FDs of the offer in hand. */
static void drop_fds(gpuipc_scenario *sc)
{
    gpuipc_wire_close_fds(sc->fds, sc->nfds);
    sc->nfds = 0;
}

/* The offer sabotages (test hooks): FDs of the wrong kind in place of the
 * mechanism's (one added where none travels), or twice the size claimed.
 * Returns 0, or -1 with the failure recorded and the FDs closed if the hook
 * itself failed. */
static int spoil_offer(gpuipc_scenario *sc, gpuipc_msg_offer *offer)
{
    const gpuipc_inject *in = &sc->env->inject;
    int role = sc->env->role, rc = 0;
    unsigned i;

    if (gpuipc_inject_sabotage(in, role, GPUIPC_SABOTAGE_OFFER_SIZE)) {
        offer->size *= 2;
        gpuipc_role_log(sc, GPUIPC_STEP_EXPORT, GPUIPC_LOG_NO_TIME,
                        "SABOTAGE: the offer claims twice the size (test hook)");
        return 0;
    }
    if (!gpuipc_inject_sabotage(in, role, GPUIPC_SABOTAGE_OFFER_MEMFD) &&
        !gpuipc_inject_sabotage(in, role, GPUIPC_SABOTAGE_OFFER_PIPE))
        return 0;
    if (sc->nfds == 0 && !sc->mech->fetched_fd) {
        /* Nothing travels (legacy IPC, fabric): add one FD. A mechanism
         * whose consumer fetches the FD itself spoils that one in export. */
        sc->fds[0] = fcntl(0, F_DUPFD_CLOEXEC, 3);
        if (sc->fds[0] < 0)
            rc = -errno;
        else
            sc->nfds = 1;
    }
    for (i = 0; rc == 0 && i < sc->nfds; i++)
        rc = gpuipc_inject_wrong_fd(in, role, sc->fds[i]) < 0 ? -EIO : 0;
    if (rc < 0) {
        gpuipc_role_fail(sc, GPUIPC_STEP_EXPORT, NULL, "the offer sabotage could not replace "
                         "the FDs");
        drop_fds(sc);
        return -1;
    }
    if (offer->fds_total > 0 && offer->fds_total < sc->nfds)
        offer->fds_total = sc->nfds;
    gpuipc_role_log(sc, GPUIPC_STEP_EXPORT, GPUIPC_LOG_NO_TIME,
                    "SABOTAGE: the offer's FDs are of the wrong kind (test hook)");
    return 0;
}

/* P3 export: the offer's handle and first FDs. Returns 0, or -1 with the
 * failure recorded and no FD open. */
static int export_offer(pscen *p, gpuipc_msg_offer *offer)
{
    gpuipc_scenario *sc = &p->sc;
    uint64_t t;

    gpuipc_role_at(sc, GPUIPC_STEP_EXPORT);
    t = gpuipc_clock_ns();
    if (sc->mech->export(sc, &sc->buf, offer, sc->fds, &sc->nfds, &sc->err) < 0) {
        gpuipc_role_fail(sc, GPUIPC_STEP_EXPORT, &sc->err, "%s", sc->err.msg);
        sc->nfds = 0;
        return -1;
    }
    if (sc->timing != NULL) {
        sc->timing->export_start = t;
        sc->timing->export_ns = gpuipc_clock_ns() - t;
    }
    if (spoil_offer(sc, offer) < 0)
        return -1;
    if (offer->fds_total == 0)
        offer->fds_total = sc->nfds;
    if (offer->fds_total > sc->nfds && sc->mech->export_more == NULL) {
        gpuipc_role_fail(sc, GPUIPC_STEP_EXPORT, NULL, "%u FDs announced, %u returned, and "
                         "the mechanism has no further batches", offer->fds_total, sc->nfds);
        drop_fds(sc);
        return -1;
    }
    if (offer->fds_total > sc->nfds)
        gpuipc_role_log(sc, GPUIPC_STEP_EXPORT, t, "%u FDs, the first %u of them now",
                        offer->fds_total, sc->nfds);
    else
        gpuipc_role_log(sc, GPUIPC_STEP_EXPORT, t, "%u FD%s", sc->nfds,
                        sc->nfds == 1 ? "" : "s");
    return 0;
}

/* P3: allocate, fill, export. On failure the failure is recorded and no FD
 * is open. */
static void prepare_offer(pscen *p, gpuipc_msg_offer *offer)
{
    gpuipc_scenario *sc = &p->sc;
    uint64_t t;
    int skipped;

    gpuipc_role_at(sc, GPUIPC_STEP_ALLOC);
    t = gpuipc_clock_ns();
    if (sc->mech->alloc(sc, sc->size, &sc->buf, &sc->err) < 0) {
        gpuipc_role_fail(sc, GPUIPC_STEP_ALLOC, &sc->err, "%s", sc->err.msg);
        return;
    }
    if (sc->timing != NULL)
        sc->timing->alloc_ns = gpuipc_clock_ns() - t;
    sc->have_buf = 1;
    p->res->size = sc->buf.size;
    gpuipc_role_log(sc, GPUIPC_STEP_ALLOC, t, "%s", sc->buf.detail);

    p->seed = gpuipc_pattern_seed(0);
    if (gpuipc_role_fill(sc, GPUIPC_STEP_FILL, p->seed, &skipped) < 0)
        return;
    offer->seed = p->seed;
    offer->wrote = sc->wrote;
    if (gpuipc_inject_sabotage(&sc->env->inject, sc->env->role, GPUIPC_SABOTAGE_WRONG_SEED))
        offer->seed = p->seed ^ WRONG_SEED_MASK;
    export_offer(p, offer);
}

/* P4: OFFER, with this side's status (a skip where the consumer is not
 * ready), and its first batch of FDs, which this side then closes. Returns
 * 0, or a negative errno if the connection broke. */
static int send_offer(pscen *p)
{
    gpuipc_scenario *sc = &p->sc;
    gpuipc_msg msg;
    int rc;

    memset(&msg, 0, sizeof(msg));
    if (gpuipc_scenario_ok(sc))
        prepare_offer(p, &msg.u.offer);
    gpuipc_role_at(sc, GPUIPC_STEP_OFFER);
    msg.type = GPUIPC_MSG_OFFER;
    msg.u.offer.st = sc->mine;
    if (!gpuipc_scenario_ok(sc)) {
        drop_fds(sc);
        if (sc->mine.code == GPUIPC_PASS)
            gpuipc_wire_status(&msg.u.offer.st, GPUIPC_SKIP, GPUIPC_STEP_READY,
                               "the consumer is not ready");
        msg.u.offer.fds_total = 0;
    }
    p->fds_total = msg.u.offer.fds_total;
    p->fds_sent = sc->nfds;
    msg.nfds = (uint16_t)sc->nfds;
    if (sc->timing != NULL)
        sc->timing->offer_sent = gpuipc_clock_ns();
    rc = gpuipc_role_send(sc, &msg, GPUIPC_STEP_OFFER, GPUIPC_STEP_OFFER);
    p->offered = rc == 0 && msg.u.offer.st.code == GPUIPC_PASS;
    drop_fds(sc);
    return rc;
}

/* P4b: the rest of the offer's FDs, sent FDS message by FDS message as
 * export_more opens them, so that this side holds one batch at a time. A
 * batch that cannot be exported ends the series with a failed FDS, which
 * tells the consumer to stop waiting. Returns 0, or a negative errno if the
 * connection broke. */
static int send_more_fds(pscen *p, unsigned sent)
{
    gpuipc_scenario *sc = &p->sc;
    gpuipc_timing *timing = sc->timing;
    unsigned batches = 0, first = sent, total = p->fds_total;
    uint64_t t = gpuipc_clock_ns(), te;
    gpuipc_msg msg;
    int rc;

    while (sent < total) {
        unsigned max = total - sent < GPUIPC_WIRE_MAX_FDS ? total - sent : GPUIPC_WIRE_MAX_FDS;
        unsigned n = 0;

        gpuipc_role_at(sc, GPUIPC_STEP_EXPORT);
        memset(&msg, 0, sizeof(msg));
        msg.type = GPUIPC_MSG_FDS;
        msg.u.fds.first = sent;
        te = gpuipc_clock_ns();
        rc = sc->mech->export_more(sc, &sc->buf, sent, sc->fds, max, &n, &sc->err);
        if (timing != NULL)
            timing->export_ns += gpuipc_clock_ns() - te;
        if (rc < 0 || n == 0 || n > max) {
            if (n > max)
                gpuipc_wire_close_fds(sc->fds, n);
            gpuipc_role_fail(sc, GPUIPC_STEP_EXPORT, rc < 0 ? &sc->err : NULL, "FDs %u to %u: "
                             "%s", sent, sent + max - 1,
                             rc < 0 ? sc->err.msg : "no batch returned");
            msg.u.fds.st = sc->mine;
            gpuipc_role_at(sc, GPUIPC_STEP_OFFER);
            return gpuipc_role_send(sc, &msg, GPUIPC_STEP_OFFER, GPUIPC_STEP_REPORT);
        }
        sc->nfds = n;
        msg.nfds = (uint16_t)n;
        gpuipc_wire_status(&msg.u.fds.st, GPUIPC_PASS, GPUIPC_STEP_NONE, NULL);
        gpuipc_role_at(sc, GPUIPC_STEP_OFFER);
        if (timing != NULL && timing->nfds_sent < GPUIPC_TIMING_BATCHES)
            timing->fds_sent[timing->nfds_sent++] = gpuipc_clock_ns();
        rc = gpuipc_role_send(sc, &msg, GPUIPC_STEP_OFFER, GPUIPC_STEP_OFFER);
        drop_fds(sc);
        if (rc < 0)
            return rc;
        sent += n;
        batches++;
    }
    if (batches > 0)
        gpuipc_role_log(sc, GPUIPC_STEP_OFFER, t, "FDs %u to %u sent in %u more message%s",
                        first, total - 1, batches, batches == 1 ? "" : "s");
    return 0;
}

/* P5a: the consumer's check of this side's bytes must have read every word
 * this side wrote, found none bad and read the digest written: its PASS is
 * not taken as proof. */
static void judge_forward(pscen *p)
{
    gpuipc_scenario *sc = &p->sc;
    char why[GPUIPC_ERR_LEN];

    if (!gpuipc_scenario_ok(sc))
        return;
    if (gpuipc_role_judge(&p->res->forward, sc->buf.view.size / 8, &sc->wrote, "the consumer",
                          why, sizeof(why)) < 0) {
        gpuipc_role_fail(sc, GPUIPC_STEP_CHECK, NULL, "the consumer's check: %s", why);
        gpuipc_role_log_fail(sc, GPUIPC_STEP_REPORT, "%s", why);
    }
}

/* P5: the consumer wrote its own pattern over ours: read it back (or, for a
 * read-only consumer, check that ours is unchanged). */
static void check_back(pscen *p, const gpuipc_msg_report *report)
{
    gpuipc_scenario *sc = &p->sc;

    if (sc->mine.code != GPUIPC_PASS || !p->offered)
        return;
    if (sc->mech->prove_read_only != NULL) {
        if (sc->theirs.code == GPUIPC_PASS)
            gpuipc_role_check(sc, GPUIPC_STEP_CHECK, &sc->buf.view, p->seed, &sc->wrote,
                              &p->res->backward, "the producer's bytes changed under a "
                              "read-only mapping", ": own pattern unchanged");
        return;
    }
    if (!(report->flags & GPUIPC_REPORT_WROTE)) {
        if (sc->theirs.code == GPUIPC_PASS)
            gpuipc_role_fail(sc, GPUIPC_STEP_CHECK, NULL, "the consumer did not write its "
                             "pattern");
        return;
    }
    gpuipc_role_at(sc, GPUIPC_STEP_CHECK);
    if (report->seed == p->seed) {
        gpuipc_role_fail(sc, GPUIPC_STEP_CHECK, NULL, "the consumer's seed equals the "
                         "producer's, so its write cannot be told apart");
        return;
    }
    /* The bytes first: a consumer that wrote nothing shows as wrong words. */
    gpuipc_role_check(sc, GPUIPC_STEP_CHECK, &sc->buf.view, report->seed, &report->wrote,
                      &p->res->backward, "the consumer's bytes", " from the consumer");
}

/* Whether a REPORT claims anything: a word read, a digest, a write. */
static int report_claims(const gpuipc_msg_report *r)
{
    static const gpuipc_check no_check;
    static const gpuipc_written no_write;

    return memcmp(&r->check, &no_check, sizeof(no_check)) != 0 ||
           memcmp(&r->wrote, &no_write, sizeof(no_write)) != 0 ||
           (r->flags & GPUIPC_REPORT_WROTE) != 0 || r->seed != 0;
}

/* A REPORT is held to the state it answers: after an offer that did not go
 * out (the consumer was not ready, or this side's alloc, fill or export
 * failed), there was nothing to read or write, and a REPORT that claims
 * otherwise does not speak for what ran. Returns 0, or -1 with that recorded
 * as this side's failure. */
static int judge_report_state(pscen *p, const gpuipc_msg_report *r)
{
    gpuipc_scenario *sc = &p->sc;

    if (p->offered || !report_claims(r))
        return 0;
    gpuipc_role_fail(sc, GPUIPC_STEP_REPORT, NULL, "the consumer's REPORT claims %llu words "
                     "read%s, but no offer went out in this scenario (%s): it does not speak "
                     "for what ran", (unsigned long long)r->check.words,
                     (r->flags & GPUIPC_REPORT_WROTE) ? " and its pattern written" : "",
                     sc->theirs.code != GPUIPC_PASS ? "the consumer was not ready"
                     : "this side's offer failed");
    gpuipc_role_log_fail(sc, GPUIPC_STEP_REPORT, "%s", sc->mine.reason);
    return -1;
}

/* C5 REPORT: the consumer's check of this side's bytes, which this side
 * judges, and what it wrote, which this side reads back. Returns 0, or a
 * negative errno if the connection broke. */
static int take_report(pscen *p, uint64_t t)
{
    gpuipc_scenario *sc = &p->sc;
    gpuipc_result *res = p->res;
    char text[GPUIPC_ERR_LEN];
    gpuipc_msg msg;
    int rc;

    if ((rc = gpuipc_role_recv(sc, GPUIPC_MSG_REPORT, &msg, GPUIPC_STEP_REPORT)) < 0)
        return rc;
    note_consumer(sc, &msg.u.report.st, GPUIPC_STEP_REPORT);
    if (judge_report_state(p, &msg.u.report) < 0)
        return 0;
    res->forward = msg.u.report.check;
    res->consumer_wrote = msg.u.report.wrote;
    if (res->forward.words > 0)
        gpuipc_role_log(sc, GPUIPC_STEP_REPORT, t, "consumer found %s, digest 0x%016llx",
                        gpuipc_pattern_describe(&res->forward, 0, text, sizeof(text)),
                        (unsigned long long)res->forward.digest);
    judge_forward(p);
    check_back(p, &msg.u.report);
    return 0;
}

/* Stores one TIMES slice in the timing. Returns 0, or -EPROTO if it does
 * not fit what this scenario asked for. */
static int store_times(gpuipc_timing *tm, const gpuipc_msg_times *t, gpuipc_err *err)
{
    unsigned series = t->series, cap, *n, i;
    uint64_t *dst;

    if (series == GPUIPC_SERIES_LAPS && (tm->flags & GPUIPC_BEGIN_TIMES)) {
        dst = tm->laps;
        cap = GPUIPC_LAP_COUNT;
        n = &tm->nlaps;
    } else if (series == GPUIPC_SERIES_FDS_RECV && (tm->flags & GPUIPC_BEGIN_TIMES)) {
        dst = tm->fds_recv;
        cap = 2 * GPUIPC_TIMING_BATCHES;
        n = &tm->nfds_recv;
    } else if (series >= GPUIPC_SERIES_BW_FIRST && series < GPUIPC_SERIES_BW_FIRST + GPUIPC_BW_COUNT &&
               (tm->flags & GPUIPC_BEGIN_BANDWIDTH) &&
               tm->bw[series - GPUIPC_SERIES_BW_FIRST] != NULL) {
        dst = tm->bw[series - GPUIPC_SERIES_BW_FIRST];
        cap = tm->iters;
        n = &tm->nbw[series - GPUIPC_SERIES_BW_FIRST];
    } else if (series == GPUIPC_SERIES_LINK && (tm->flags & GPUIPC_BEGIN_LINK)) {
        dst = tm->link;
        cap = GPUIPC_LINK_VALUES;
        n = &tm->nlink;
    } else {
        return gpuipc_err_set(err, -EPROTO, "TIMES series %u was not asked for", series);
    }
    if (t->first != *n || t->count > cap - *n)
        return gpuipc_err_set(err, -EPROTO, "TIMES series %u: values %u to %u, but %u were "
                              "due next of %u", series, t->first, t->first + t->count - 1,
                              *n, cap);
    for (i = 0; i < t->count; i++)
        dst[*n + i] = t->v[i];
    *n += t->count;
    return 0;
}

/* --bench, --json and --pairs: the consumer's TIMES, which follow its
 * END_ACK, up to the one marked last. A series that does not fit fails the
 * scenario, but every message is still taken. Returns 0, or a negative
 * errno if the connection broke (or the consumer sent more than the
 * scenario can need). */
static int recv_times(gpuipc_scenario *sc)
{
    gpuipc_timing *tm = sc->timing;
    unsigned per = GPUIPC_WIRE_TIMES_MAX;
    unsigned limit = 2 + (2 * GPUIPC_TIMING_BATCHES + per - 1) / per +
                     GPUIPC_BW_COUNT * ((tm->iters + per - 1) / per) +
                     (GPUIPC_LINK_VALUES + per - 1) / per;
    gpuipc_msg msg;
    gpuipc_err e;
    unsigned k;
    int rc;

    tm->nlaps = tm->nfds_recv = tm->nlink = 0;
    memset(tm->nbw, 0, sizeof(tm->nbw));
    for (k = 0; k < limit; k++) {
        if ((rc = gpuipc_role_recv(sc, GPUIPC_MSG_TIMES, &msg, GPUIPC_STEP_END_ACK)) < 0)
            return rc;
        if (store_times(tm, &msg.u.times, &e) < 0)
            gpuipc_wire_status_fail(&sc->theirs, GPUIPC_STEP_END_ACK, "end-ack: its timings: "
                                    "%s", e.msg);
        if (msg.u.times.flags & GPUIPC_TIMES_LAST)
            return 0;
    }
    /* More messages than this scenario can need: the consumer is not
     * counting the way this side does. */
    return gpuipc_err_set(&sc->err, -EPROTO, "the consumer sent more than %u TIMES messages "
                          "without marking one last", limit);
}

/* --pairs, after TIMES: the consumer's link figures, held to what this side
 * has proven itself, the words and digest of the pattern the memory holds:
 * the consumer's, which this side read back (check_back), or, under a
 * read-only mapping, its own. Only a scenario that passed so far is judged
 * (a failed one has its reason) and only figures that held are kept in the
 * result; figures that do not hold fail the scenario, as the consumer's. */
static void judge_link(pscen *p)
{
    gpuipc_scenario *sc = &p->sc;
    gpuipc_timing *tm = sc->timing;
    int write = sc->mech->prove_read_only == NULL;
    char why[GPUIPC_ERR_LEN];
    gpuipc_link_figures f;

    memset(&p->res->link, 0, sizeof(p->res->link));
    if (tm == NULL || !(tm->flags & GPUIPC_BEGIN_LINK) || !gpuipc_scenario_ok(sc))
        return;
    /* Judged apart and put in the result only once they held: the
     * watchdog's document at the deadline renders the result as it is. */
    memset(&f, 0, sizeof(f));
    if (tm->nlink == GPUIPC_LINK_VALUES)
        gpuipc_link_from_values(tm->link, &f);
    if (gpuipc_link_judge(&f, sc->buf.view.size, write ? &p->res->consumer_wrote : &sc->wrote,
                          write, sc->mech->ipc_opened, why, sizeof(why)) < 0) {
        gpuipc_wire_status_fail(&sc->theirs, GPUIPC_STEP_END_ACK, "end-ack: the consumer's "
                                "link figures do not hold: %s", why);
        gpuipc_role_log_fail(sc, GPUIPC_STEP_END_ACK, "%s", sc->theirs.reason);
        return;
    }
    p->res->link = f;
}

/* P6 END (with this side's check, which the consumer judges in turn), C7
 * END_ACK and, for --bench, --json and --pairs, TIMES. Returns 0, or a
 * negative errno if the connection broke. */
static int end_scenario(pscen *p)
{
    gpuipc_scenario *sc = &p->sc;
    gpuipc_msg msg;
    int rc;

    gpuipc_role_at(sc, GPUIPC_STEP_END);
    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_END;
    msg.u.end.st = sc->mine;
    msg.u.end.check = p->res->backward;
    if ((rc = gpuipc_role_send(sc, &msg, GPUIPC_STEP_END, GPUIPC_STEP_END_ACK)) < 0 ||
        (rc = gpuipc_role_recv(sc, GPUIPC_MSG_END_ACK, &msg, GPUIPC_STEP_END_ACK)) < 0)
        return rc;
    note_consumer(sc, &msg.u.end_ack.st, GPUIPC_STEP_END_ACK);
    p->res->consumer_usage = msg.u.end_ack.usage;
    if (sc->timing == NULL ||
        !(sc->timing->flags & (GPUIPC_BEGIN_TIMES | GPUIPC_BEGIN_LINK)))
        return 0;
    if ((rc = recv_times(sc)) < 0)
        return rc;
    judge_link(p);
    return 0;
}

/* Settles the result from both verdicts, lost (a broken connection, which
 * outranks everything else, at step) or else the first failure on either
 * side, or a skip the consumer asked for; what failed, as data, goes with
 * it. */
static void settle(pscen *p, uint64_t t0, const char *lost, unsigned step)
{
    gpuipc_scenario *sc = &p->sc;
    gpuipc_result *res = p->res;

    res->ns = gpuipc_clock_ns() - t0;
    if (lost != NULL)
        /* A stop signal (here, or the peer's, which may end it first)
         * broke off the exchange: no verdict, neither side failed. */
        gpuipc_result_set(res, gpuipc_stop_signal() != 0 ? GPUIPC_STOPPED : GPUIPC_FAIL,
                          GPUIPC_ROLE_PRODUCER, step, &sc->err, "%s", lost);
    else if (sc->mine.code == GPUIPC_FAIL)
        gpuipc_result_of_status(res, GPUIPC_FAIL, GPUIPC_ROLE_PRODUCER, &sc->mine);
    else if (sc->theirs.code != GPUIPC_PASS)
        gpuipc_result_of_status(res, sc->theirs.code, GPUIPC_ROLE_CONSUMER, &sc->theirs);
    else
        res->status = GPUIPC_PASS;
}

/* P1 BEGIN, after the baseline P2; C2 READY. Returns 0, or a negative errno
 * if the connection broke. */
static int begin(pscen *p, unsigned index)
{
    gpuipc_scenario *sc = &p->sc;
    uint64_t t;
    gpuipc_msg msg;
    int rc;

    gpuipc_role_baseline(sc, GPUIPC_STEP_READY);
    gpuipc_role_at(sc, GPUIPC_STEP_BEGIN);
    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_BEGIN;
    snprintf(msg.u.begin.mech, sizeof(msg.u.begin.mech), "%s", sc->mech->name);
    msg.u.begin.index = index;
    msg.u.begin.size = sc->size;
    if (sc->timing != NULL) {
        sc->timing->nfds_sent = 0;
        msg.u.begin.flags = sc->timing->flags;
        msg.u.begin.iters = sc->timing->iters;
    }
    memcpy(msg.u.begin.uuid, sc->uuid, GPUIPC_UUID_LEN);
    memcpy(msg.u.begin.consumer_uuid, sc->peer_uuid, GPUIPC_UUID_LEN);
    t = gpuipc_clock_ns();
    if ((rc = gpuipc_role_send(sc, &msg, GPUIPC_STEP_BEGIN, GPUIPC_STEP_READY)) < 0 ||
        (rc = gpuipc_role_recv(sc, GPUIPC_MSG_READY, &msg, GPUIPC_STEP_READY)) < 0)
        return rc;
    note_consumer(sc, &msg.u.ready, GPUIPC_STEP_READY);
    gpuipc_role_log(sc, GPUIPC_STEP_READY, t, "%s", msg.u.ready.code == GPUIPC_PASS
                    ? "consumer is ready" : "consumer cannot take part");
    return 0;
}

/* The scenario's messages, P1 to C7. Returns 0, or a negative errno if the
 * connection broke. */
static int exchange(pscen *p, unsigned index)
{
    uint64_t t;
    int rc;

    if ((rc = begin(p, index)) < 0 || (rc = send_offer(p)) < 0)
        return rc;
    t = gpuipc_clock_ns();
    if ((rc = send_more_fds(p, p->fds_sent)) < 0 || (rc = take_report(p, t)) < 0 ||
        (rc = end_scenario(p)) < 0)
        return rc;
    return 0;
}

void gpuipc_producer_scenario(gpuipc_env *env, gpuipc_wire *w, const gpuipc_scenario_ask *ask,
                              gpuipc_result *res)
{
    uint64_t t0 = gpuipc_clock_ns();
    /* Where the scenario runs is the caller's to say (its summary group
     * and GPUs); the rest of the result is this scenario's. */
    const char *group = res->group;
    int gpu = res->gpu, peer_gpu = res->peer_gpu;
    gpuipc_scenario *sc;
    pscen p;

    memset(res, 0, sizeof(*res));
    res->group = group;
    res->gpu = gpu;
    res->peer_gpu = peer_gpu;
    res->mech = ask->mech->name;
    res->status = GPUIPC_FAIL;
    res->size = ask->size;
    gpuipc_role_start(&p.sc, env, w, ask->mech, ask->mech->name);
    sc = &p.sc;
    p.res = res;
    p.seed = 0;
    p.fds_total = 0;
    p.fds_sent = 0;
    p.offered = 0;
    sc->size = ask->size;
    sc->chunks = ask->chunks;
    sc->timing = ask->timing;
    put_devices(ask, sc->uuid, sc->peer_uuid);

    if (exchange(&p, ask->index) < 0) {
        /* The consumer is gone or broken: free what this side holds and
         * report the wire's reason, which names the step. */
        unsigned step = (unsigned)env->step;

        gpuipc_role_abandon(sc);
        settle(&p, t0, sc->err.msg, step);
        return;
    }
    /* A destructive scenario's consumer exits to let go of its mapping:
     * wait for that before releasing and counting. */
    if (sc->mech->destructive && env->reap_peer != NULL && env->reap_peer(env, &sc->err) < 0)
        gpuipc_wire_status_fail(&sc->theirs, GPUIPC_STEP_END_ACK, "end-ack: the sacrificial "
                                "consumer: %s", sc->err.msg);
    /* P7 release, now that the consumer has let go; P8 accounting */
    if (sc->timing != NULL)
        sc->timing->release_ns = gpuipc_role_release(sc);
    else
        gpuipc_role_release(sc);
    gpuipc_role_count_leaks(sc, env->gpu_bytes);
    gpuipc_inject_leak_fd(&env->inject, env->role);
    gpuipc_role_end(sc);
    settle(&p, t0, NULL, GPUIPC_STEP_NONE);
}
