/* producer.c: the producer's side of a session: HELLO, the probes, each
 * scenario (BEGIN, READY, OFFER and FDS, REPORT, END, END_ACK) and BYE.
 * docs/protocol.md is the one description of the messages and their order.
 * What this file holds to, whatever happens:
 * - each message of a scenario goes out even when an earlier step failed,
 *   carrying that failure, so both sides take the same steps, agree on the
 *   outcome and meet again at the next BEGIN; only a broken connection ends
 *   the session early;
 * - the consumer's check must cover every word and read the digest this
 *   side wrote, and this side checks the consumer's pattern the same way;
 * - the importer releases first (memory pools and legacy IPC require the
 *   exporter to free only after every importer let go);
 * - what the leak check compares is this process's own (FDs, driver
 *   objects, shared memory, GPU memory by NVML), so other processes on the
 *   GPU cannot move it. */
#include "session/producer.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <string.h>
#include <unistd.h>

#include "core/account.h"
#include "core/clock.h"
#include "session/pattern.h"
#include "session/role.h"
#include "core/step.h"
#include "core/units.h"

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

    env->wire = w;
    gpuipc_env_at(env, step);
    rc = gpuipc_wire_send(w, msg, NULL, gpuipc_clock_deadline(env->timeout_ns), step, err);
    if (rc < 0)
        return rc;
    env->step = reply_step;
    return gpuipc_wire_recv(w, GPUIPC_MSG_BIT(reply), msg, fds,
                            gpuipc_clock_deadline(env->timeout_ns), reply_step, err);
}

int gpuipc_producer_hello(gpuipc_env *env, gpuipc_wire *w, unsigned flags, int *peer_pid,
                          gpuipc_err *err)
{
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
    msg.u.hello.facts = env->facts;
    if ((rc = request(env, w, &msg, GPUIPC_STEP_HELLO, GPUIPC_MSG_HELLO, GPUIPC_STEP_HELLO,
                      err)) < 0)
        return rc;
    if (msg.u.hello.role != GPUIPC_ROLE_CONSUMER)
        return gpuipc_err_set(err, -EPROTO, "hello: the peer (pid %u) is not a consumer",
                              msg.u.hello.pid);
    *peer_pid = gpuipc_env_peer_pid(env, msg.u.hello.pid);
    env->peer_pid = *peer_pid;
    env->peer_facts = msg.u.hello.facts;
    env->have_peer_facts = 1;
    return 0;
}

int gpuipc_producer_probe(gpuipc_env *env, gpuipc_wire *w, const gpuipc_mech *mech,
                          gpuipc_status *st, gpuipc_err *err)
{
    gpuipc_msg msg;
    int rc;

    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_PROBE;
    snprintf(msg.u.probe.mech, sizeof(msg.u.probe.mech), "%s", mech->name);
    memcpy(msg.u.probe.uuid, env->uuid, GPUIPC_UUID_LEN);
    memcpy(msg.u.probe.consumer_uuid, env->peer_uuid, GPUIPC_UUID_LEN);
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

/* Everything one scenario holds, so that every exit path can release it. */
typedef struct scenario {
    gpuipc_env *env;
    gpuipc_wire *w;
    const gpuipc_mech *mech;
    gpuipc_result *res;
    gpuipc_status mine;       /* this side's verdict, first failure kept */
    gpuipc_status theirs;     /* the consumer's, first failure kept */
    gpuipc_buf buf;
    int have_buf;
    int fds[GPUIPC_WIRE_MAX_FDS];
    unsigned nfds;
    gpuipc_usage before;      /* P2 */
    int have_before;
    gpuipc_written wrote;     /* what this side's fill wrote */
    gpuipc_err err;
} scenario;

static void log_step(scenario *s, unsigned step, uint64_t t0, const char *fmt, const char *text)
{
    gpuipc_log_step(&s->env->log, GPUIPC_LOG_NORMAL, s->mech->name, step,
                    gpuipc_clock_ns() - t0, fmt, text);
}

/* The consumer's word can only lower this scenario's verdict: a FAIL fails
 * it; a SKIP in READY (it cannot take part) makes it a skip, unless
 * something failed already; a SKIP after it has taken part is no verdict a
 * scenario can have, and fails it. */
static void note_consumer(scenario *s, const gpuipc_status *st, unsigned at)
{
    if (st->code == GPUIPC_SKIP && at == GPUIPC_STEP_READY) {
        if (s->theirs.code == GPUIPC_PASS) {
            gpuipc_wire_status(&s->theirs, GPUIPC_SKIP, st->step, NULL);
            snprintf(s->theirs.reason, sizeof(s->theirs.reason), "consumer %s: %.300s",
                     gpuipc_step_name(st->step), st->reason);
        }
    } else if (st->code == GPUIPC_SKIP) {
        gpuipc_wire_status_fail(&s->theirs, at, "consumer %s: it says SKIP after it took part, "
                                "which no scenario can end with: %.250s", gpuipc_step_name(at),
                                st->reason);
    } else if (st->code == GPUIPC_FAIL) {
        gpuipc_wire_status_fail(&s->theirs, st->step, "consumer %s: %s",
                                gpuipc_step_name(st->step), st->reason);
    }
}

static int send_msg(scenario *s, gpuipc_msg *msg, unsigned step)
{
    return gpuipc_wire_send(s->w, msg, s->fds, gpuipc_clock_deadline(s->env->timeout_ns), step,
                            &s->err);
}

static int recv_msg(scenario *s, unsigned type, gpuipc_msg *msg, unsigned step)
{
    int rc;

    s->env->step = (sig_atomic_t)step;
    rc = gpuipc_wire_recv(s->w, GPUIPC_MSG_BIT(type), msg, s->fds,
                              gpuipc_clock_deadline(s->env->timeout_ns), step, &s->err);

    /* No message the producer receives carries FDs (the type table allows
     * none), so none can be left open here. */
    s->nfds = 0;
    return rc;
}

static void take_baseline(scenario *s)
{
    gpuipc_err e;

    if (gpuipc_usage_take(&s->before, s->env->gpu_bytes, &e) < 0)
        gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_NONE, "FD accounting: %s", e.msg);
    s->have_before = 1;
    gpuipc_log_step(&s->env->log, GPUIPC_LOG_VERBOSE, s->mech->name, GPUIPC_STEP_READY,
                    GPUIPC_LOG_NO_TIME, "baseline: %zu FDs, %llu driver objects, %llu bytes of "
                    "shared memory, GPU memory by NVML: %s%.300s", s->before.fds.n,
                    (unsigned long long)s->before.objects.live,
                    (unsigned long long)s->before.shmem,
                    s->before.gpu == GPUIPC_USAGE_UNKNOWN ? "not attributable: " : "",
                    s->before.gpu == GPUIPC_USAGE_UNKNOWN ? s->before.gpu_why.msg : "");
    if (s->before.gpu != GPUIPC_USAGE_UNKNOWN)
        gpuipc_log_step(&s->env->log, GPUIPC_LOG_VERBOSE, s->mech->name, GPUIPC_STEP_READY,
                        GPUIPC_LOG_NO_TIME, "baseline: %llu bytes of GPU memory by NVML",
                        (unsigned long long)s->before.gpu);
    if (s->env->session_check)
        gpuipc_session_usage_note(&s->env->session, s->env->uuid, s->env->gpu_bytes);
}

/* P8: anything this process holds now that it did not at the baseline is a
 * leak. Returns the count of what grew, named in e. */
static int leaks_since_baseline(scenario *s, gpuipc_err *e)
{
    return s->have_before ? gpuipc_usage_leaks(&s->before, s->env->gpu_bytes,
                                               GPUIPC_ENV_SETTLE_NS, e)
                          : 0;
}

static void release_buf(scenario *s)
{
    uint64_t t = gpuipc_clock_ns();
    gpuipc_err e;

    if (!s->have_buf)
        return;
    s->have_buf = 0;
    if (gpuipc_role_release(s->env, s->mech, s->mech->name, &s->buf, &e) < 0)
        gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_RELEASE, "release: %s", e.msg);
    if (s->env->timing != NULL)
        s->env->timing->release_ns = gpuipc_clock_ns() - t;
}

/* Stores one TIMES slice in the timing. Returns 0, or -EPROTO if it does
 * not fit what this scenario asked for. */
static int store_times(gpuipc_timing *tm, const gpuipc_msg_times *t, gpuipc_err *err)
{
    uint64_t *dst;
    unsigned cap, *n, i;

    if (t->series == GPUIPC_SERIES_LAPS) {
        dst = tm->laps;
        cap = GPUIPC_LAP_COUNT;
        n = &tm->nlaps;
    } else if (t->series == GPUIPC_SERIES_FDS_RECV) {
        dst = tm->fds_recv;
        cap = 2 * GPUIPC_TIMING_BATCHES;
        n = &tm->nfds_recv;
    } else if (t->series >= GPUIPC_SERIES_BW_FIRST &&
               t->series < GPUIPC_SERIES_BW_FIRST + GPUIPC_BW_COUNT &&
               (tm->flags & GPUIPC_BEGIN_BANDWIDTH) &&
               tm->bw[t->series - GPUIPC_SERIES_BW_FIRST] != NULL) {
        dst = tm->bw[t->series - GPUIPC_SERIES_BW_FIRST];
        cap = tm->iters;
        n = &tm->nbw[t->series - GPUIPC_SERIES_BW_FIRST];
    } else {
        return gpuipc_err_set(err, -EPROTO, "TIMES series %u was not asked for", t->series);
    }
    if (t->first != *n || t->count > cap - *n)
        return gpuipc_err_set(err, -EPROTO, "TIMES series %u: values %u to %u, but %u were "
                              "due next of %u", t->series, t->first, t->first + t->count - 1,
                              *n, cap);
    for (i = 0; i < t->count; i++)
        dst[*n + i] = t->v[i];
    *n += t->count;
    return 0;
}

/* --bench: the consumer's TIMES, which follow its END_ACK, up to the one
 * marked last. A series that does not fit fails the scenario, but every
 * message is still taken. Returns 0, or a negative errno if the connection
 * broke. */
static int recv_times(scenario *s)
{
    gpuipc_timing *tm = s->env->timing;
    unsigned limit = 2 + (2 * GPUIPC_TIMING_BATCHES + GPUIPC_WIRE_TIMES_MAX - 1) /
                             GPUIPC_WIRE_TIMES_MAX +
                     GPUIPC_BW_COUNT * ((tm->iters + GPUIPC_WIRE_TIMES_MAX - 1) /
                                        GPUIPC_WIRE_TIMES_MAX);
    gpuipc_msg msg;
    gpuipc_err e;
    unsigned k;

    tm->nlaps = tm->nfds_recv = 0;
    memset(tm->nbw, 0, sizeof(tm->nbw));
    for (k = 0; k < limit; k++) {
        if (recv_msg(s, GPUIPC_MSG_TIMES, &msg, GPUIPC_STEP_END_ACK) < 0)
            return -EPIPE;
        if (store_times(tm, &msg.u.times, &e) < 0)
            gpuipc_wire_status_fail(&s->theirs, GPUIPC_STEP_END_ACK, "consumer's timings: %s",
                                    e.msg);
        if (msg.u.times.flags & GPUIPC_TIMES_LAST)
            return 0;
    }
    /* More messages than this scenario can need: the consumer is not
     * counting the way this side does. */
    return gpuipc_err_set(&s->err, -EPROTO, "the consumer sent more than %u TIMES messages "
                          "without marking one last", limit);
}

/* The offer sabotages (test hooks): FDs of the wrong kind in place of the
 * mechanism's (one added where none travels), or twice the size claimed.
 * Returns 0, or -1 with s->mine failed and the FDs closed if the hook itself
 * failed. */
static int spoil_offer(scenario *s, gpuipc_msg_offer *offer)
{
    gpuipc_env *env = s->env;
    unsigned i;
    int rc = 0;

    if (gpuipc_inject_sabotage(&env->inject, env->role, GPUIPC_SABOTAGE_OFFER_SIZE)) {
        offer->size *= 2;
        log_step(s, GPUIPC_STEP_EXPORT, gpuipc_clock_ns(), "%s",
                 "SABOTAGE: the offer claims twice the size (test hook)");
        return 0;
    }
    if (!gpuipc_inject_sabotage(&env->inject, env->role, GPUIPC_SABOTAGE_OFFER_MEMFD) &&
        !gpuipc_inject_sabotage(&env->inject, env->role, GPUIPC_SABOTAGE_OFFER_PIPE))
        return 0;
    if (s->nfds == 0 && !s->mech->fetched_fd) {
        /* Nothing travels (legacy IPC, fabric): add one FD. A mechanism
         * whose consumer fetches the FD itself spoils that one in export. */
        s->fds[0] = fcntl(0, F_DUPFD_CLOEXEC, 3);
        if (s->fds[0] < 0)
            rc = -errno;
        else
            s->nfds = 1;
    }
    for (i = 0; rc == 0 && i < s->nfds; i++)
        rc = gpuipc_inject_wrong_fd(&env->inject, env->role, s->fds[i]) < 0 ? -EIO : 0;
    if (rc < 0) {
        gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_EXPORT, "export: the offer sabotage "
                                "could not replace the FDs");
        gpuipc_wire_close_fds(s->fds, s->nfds);
        s->nfds = 0;
        return -1;
    }
    if (offer->fds_total > 0 && offer->fds_total < s->nfds)
        offer->fds_total = s->nfds;
    log_step(s, GPUIPC_STEP_EXPORT, gpuipc_clock_ns(), "%s",
             "SABOTAGE: the offer's FDs are of the wrong kind (test hook)");
    return 0;
}

/* P3: allocate, fill, export. On failure s->mine says why and no FD is open. */
static void prepare_offer(scenario *s, uint64_t size, gpuipc_msg_offer *offer)
{
    gpuipc_env *env = s->env;
    char text[160];
    uint64_t seed, t;

    gpuipc_env_at(env, GPUIPC_STEP_ALLOC);
    t = gpuipc_clock_ns();
    if (s->mech->alloc(env, size, &s->buf, &s->err) < 0) {
        gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_ALLOC, "alloc: %s", s->err.msg);
        return;
    }
    if (env->timing != NULL)
        env->timing->alloc_ns = gpuipc_clock_ns() - t;
    s->have_buf = 1;
    s->res->size = s->buf.size;
    log_step(s, GPUIPC_STEP_ALLOC, t, "%s", s->buf.detail);

    gpuipc_env_at(env, GPUIPC_STEP_FILL);
    seed = gpuipc_pattern_seed(0);
    t = gpuipc_clock_ns();
    if (gpuipc_inject_sabotage(&env->inject, env->role, GPUIPC_SABOTAGE_SKIP_WRITE)) {
        log_step(s, GPUIPC_STEP_FILL, t, "%s", "SABOTAGE: pattern not written (test hook)");
    } else if (s->buf.view.ops->fill(&s->buf.view, seed, &s->wrote, &s->err) < 0) {
        gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_FILL, "fill: %s", s->err.msg);
        return;
    } else if (s->wrote.words != s->buf.view.size / 8) {
        gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_FILL, "fill: the fill wrote %llu of "
                                "%llu words", (unsigned long long)s->wrote.words,
                                (unsigned long long)(s->buf.view.size / 8));
        return;
    } else {
        s->wrote.ns = gpuipc_clock_ns() - t;
        snprintf(text, sizeof(text), "pattern seed 0x%016llx, %.1f GB/s written, digest "
                 "0x%016llx", (unsigned long long)seed, gpuipc_units_gbps(s->buf.size, s->wrote.ns),
                 (unsigned long long)s->wrote.digest);
        log_step(s, GPUIPC_STEP_FILL, t, "%s", text);
        if (gpuipc_role_flip(env, GPUIPC_STEP_FILL, &s->buf.view, seed, &s->err) < 0) {
            gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_FILL, "fill: %s", s->err.msg);
            return;
        }
    }
    offer->seed = seed;
    offer->wrote = s->wrote;
    if (gpuipc_inject_sabotage(&env->inject, env->role, GPUIPC_SABOTAGE_WRONG_SEED))
        offer->seed = seed ^ WRONG_SEED_MASK;

    gpuipc_env_at(env, GPUIPC_STEP_EXPORT);
    t = gpuipc_clock_ns();
    if (s->mech->export(env, &s->buf, offer, s->fds, &s->nfds, &s->err) < 0) {
        gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_EXPORT, "export: %s", s->err.msg);
        s->nfds = 0;
        return;
    }
    if (env->timing != NULL) {
        env->timing->export_start = t;
        env->timing->export_ns = gpuipc_clock_ns() - t;
    }
    if (spoil_offer(s, offer) < 0)
        return;
    if (offer->fds_total == 0)
        offer->fds_total = s->nfds;
    if (offer->fds_total > s->nfds && s->mech->export_more == NULL) {
        gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_EXPORT, "export: %u FDs announced, %u "
                                "returned, and the mechanism has no further batches",
                                offer->fds_total, s->nfds);
        gpuipc_wire_close_fds(s->fds, s->nfds);
        s->nfds = 0;
        return;
    }
    if (offer->fds_total > s->nfds)
        snprintf(text, sizeof(text), "%u FDs, the first %u of them now", offer->fds_total,
                 s->nfds);
    else
        snprintf(text, sizeof(text), "%u FD%s", s->nfds, s->nfds == 1 ? "" : "s");
    log_step(s, GPUIPC_STEP_EXPORT, t, "%s", text);
}

/* P4b: the rest of the offer's FDs, sent FDS message by FDS message as
 * export_more opens them, so that this side holds one batch at a time. A
 * batch that cannot be exported ends the series with a failed FDS, which
 * tells the consumer to stop waiting. Returns 0, or a negative errno if the
 * connection broke. */
static int send_more_fds(scenario *s, uint32_t total, unsigned sent)
{
    gpuipc_timing *timing = s->env->timing;
    unsigned batches = 0, first = sent;
    uint64_t t = gpuipc_clock_ns(), te;
    char text[96];
    gpuipc_msg msg;
    int rc;

    while (sent < total) {
        unsigned max = total - sent < GPUIPC_WIRE_MAX_FDS ? total - sent : GPUIPC_WIRE_MAX_FDS;
        unsigned n = 0;

        gpuipc_env_at(s->env, GPUIPC_STEP_EXPORT);
        memset(&msg, 0, sizeof(msg));
        msg.type = GPUIPC_MSG_FDS;
        msg.u.fds.first = sent;
        te = gpuipc_clock_ns();
        rc = s->mech->export_more(s->env, &s->buf, sent, s->fds, max, &n, &s->err);
        if (timing != NULL)
            timing->export_ns += gpuipc_clock_ns() - te;
        if (rc < 0 || n == 0 || n > max) {
            if (n > max)
                gpuipc_wire_close_fds(s->fds, n);
            gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_EXPORT, "export of FDs %u to %u: %s",
                                    sent, sent + max - 1,
                                    n == 0 || n > max ? "no batch returned" : s->err.msg);
            msg.u.fds.st = s->mine;
            gpuipc_env_at(s->env, GPUIPC_STEP_OFFER);
            return send_msg(s, &msg, GPUIPC_STEP_OFFER);
        }
        s->nfds = n;
        msg.nfds = (uint16_t)n;
        gpuipc_wire_status(&msg.u.fds.st, GPUIPC_PASS, GPUIPC_STEP_NONE, NULL);
        gpuipc_env_at(s->env, GPUIPC_STEP_OFFER);
        if (timing != NULL && timing->nfds_sent < GPUIPC_TIMING_BATCHES)
            timing->fds_sent[timing->nfds_sent++] = gpuipc_clock_ns();
        if (send_msg(s, &msg, GPUIPC_STEP_OFFER) < 0)
            return -EPIPE;
        gpuipc_wire_close_fds(s->fds, s->nfds);
        s->nfds = 0;
        sent += n;
        batches++;
    }
    if (batches > 0) {
        snprintf(text, sizeof(text), "FDs %u to %u sent in %u more message%s", first, total - 1,
                 batches, batches == 1 ? "" : "s");
        log_step(s, GPUIPC_STEP_OFFER, t, "%s", text);
    }
    return 0;
}

/* P5: reads this side's buffer for the pattern of seed (whose: "the
 * consumer's" or "own") into res->backward, and judges it against written:
 * every word read, none bad, the digest of what was written. what names the
 * failure. Returns 0, or -1 with s->mine failed. */
static int check_pattern(scenario *s, uint64_t seed, const gpuipc_written *written,
                         const char *what, const char *suffix)
{
    char text[GPUIPC_ERR_LEN], why[GPUIPC_ERR_LEN];
    gpuipc_check *k = &s->res->backward;
    uint64_t t;
    int honest;

    gpuipc_env_at(s->env, GPUIPC_STEP_CHECK);
    t = gpuipc_clock_ns();
    if (gpuipc_role_read(s->env, &s->buf.view, seed, k, &honest, &s->err) < 0) {
        gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_CHECK, "check: %s", s->err.msg);
        return -1;
    }
    k->ns = gpuipc_clock_ns() - t;
    gpuipc_pattern_describe(k, s->buf.view.first_word, text, sizeof(text));
    if (k->mismatches) {
        gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_CHECK, "%s: %s", what, text);
        gpuipc_log_step(&s->env->log, GPUIPC_LOG_QUIET, s->mech->name, GPUIPC_STEP_CHECK,
                        GPUIPC_LOG_NO_TIME, "FAIL %s: %s", what, text);
        return -1;
    }
    if (honest && gpuipc_role_judge(k, s->buf.view.size / 8, written, "the producer", why,
                                    sizeof(why)) < 0) {
        gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_CHECK, "%s: %s", what, why);
        gpuipc_log_step(&s->env->log, GPUIPC_LOG_QUIET, s->mech->name, GPUIPC_STEP_CHECK,
                        GPUIPC_LOG_NO_TIME, "FAIL %s: %s", what, why);
        return -1;
    }
    snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s, digest 0x%016llx, %.1f GB/s",
             suffix, (unsigned long long)k->digest, gpuipc_units_gbps(s->buf.size, k->ns));
    log_step(s, GPUIPC_STEP_CHECK, t, "%s", text);
    return 0;
}

/* P5 for a read-only consumer: nothing may have changed our pattern. */
static void check_unchanged(scenario *s, uint64_t our_seed)
{
    check_pattern(s, our_seed, &s->wrote, "the producer's bytes changed under a read-only "
                  "mapping", ": own pattern unchanged");
}

/* P5: the consumer wrote its own pattern over ours; read it back. */
static void check_back(scenario *s, const gpuipc_msg_report *report, uint64_t our_seed)
{
    char why[GPUIPC_ERR_LEN];

    gpuipc_env_at(s->env, GPUIPC_STEP_CHECK);
    if (report->seed == our_seed) {
        gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_CHECK, "check: the consumer's seed "
                                "equals the producer's, so its write cannot be told apart");
        return;
    }
    /* The bytes first: a consumer that wrote nothing shows as wrong words. */
    if (check_pattern(s, report->seed, &report->wrote, "check of the consumer's bytes",
                      " from the consumer") == 0 &&
        report->wrote.words != s->buf.view.size / 8) {
        snprintf(why, sizeof(why), "check: the consumer says it wrote %llu of the %llu words",
                 (unsigned long long)report->wrote.words,
                 (unsigned long long)(s->buf.view.size / 8));
        gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_CHECK, "%s", why);
    }
}

/* P5a: the consumer's check of this side's bytes must have read every word
 * this side wrote and, where it found them right, the digest written. */
static void judge_forward(scenario *s, const gpuipc_check *forward)
{
    char why[GPUIPC_ERR_LEN];

    if (s->mine.code != GPUIPC_PASS || s->theirs.code != GPUIPC_PASS)
        return;
    if (gpuipc_role_judge(forward, s->buf.view.size / 8, &s->wrote, "the consumer", why,
                          sizeof(why)) < 0) {
        gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_CHECK, "the consumer's check: %s", why);
        gpuipc_log_step(&s->env->log, GPUIPC_LOG_QUIET, s->mech->name, GPUIPC_STEP_REPORT,
                        GPUIPC_LOG_NO_TIME, "FAIL %s", why);
    }
}

/* Settles the result: the reason is lost (a broken connection, which
 * outranks everything else) or else the first failure on either side. */
static void finish(scenario *s, uint64_t t0, const char *lost)
{
    gpuipc_result *res = s->res;
    const gpuipc_status *first = s->mine.code == GPUIPC_FAIL ? &s->mine : &s->theirs;

    if (s->have_before)
        gpuipc_usage_free(&s->before);
    res->ns = gpuipc_clock_ns() - t0;
    if (lost != NULL) {
        res->status = GPUIPC_FAIL;
        snprintf(res->reason, sizeof(res->reason), "%s", lost);
    } else if (s->mine.code == GPUIPC_PASS && s->theirs.code == GPUIPC_PASS) {
        res->status = GPUIPC_PASS;
        res->reason[0] = '\0';
    } else if (s->mine.code == GPUIPC_PASS && s->theirs.code == GPUIPC_SKIP) {
        res->status = GPUIPC_SKIP;
        snprintf(res->reason, sizeof(res->reason), "%s", s->theirs.reason);
    } else {
        res->status = GPUIPC_FAIL;
        snprintf(res->reason, sizeof(res->reason), "%s", first->reason);
    }
}

void gpuipc_producer_scenario(gpuipc_env *env, gpuipc_wire *w, const gpuipc_mech *mech,
                              uint64_t size, unsigned index, gpuipc_result *res)
{
    static scenario zero;
    scenario s = zero;
    uint64_t t0 = gpuipc_clock_ns(), t, our_seed;
    unsigned fds_total, fds_sent;
    gpuipc_msg msg;

    memset(res, 0, sizeof(*res));
    res->mech = mech->name;
    res->status = GPUIPC_FAIL;
    res->size = size;
    s.env = env;
    s.w = w;
    s.mech = mech;
    s.res = res;
    env->mech = mech;
    gpuipc_wire_status(&s.mine, GPUIPC_PASS, GPUIPC_STEP_NONE, NULL);
    gpuipc_wire_status(&s.theirs, GPUIPC_PASS, GPUIPC_STEP_NONE, NULL);

    /* P2 baseline (taken first: it does not depend on the consumer, whose
     * probe and baseline run meanwhile), P1 BEGIN, C2 READY */
    take_baseline(&s);
    env->wire = w;
    gpuipc_env_at(env, GPUIPC_STEP_BEGIN);
    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_BEGIN;
    snprintf(msg.u.begin.mech, sizeof(msg.u.begin.mech), "%s", mech->name);
    msg.u.begin.index = index;
    msg.u.begin.size = size;
    if (env->timing != NULL) {
        env->timing->nfds_sent = 0;
        msg.u.begin.flags = env->timing->flags;
        msg.u.begin.iters = env->timing->iters;
    }
    memcpy(msg.u.begin.uuid, env->uuid, GPUIPC_UUID_LEN);
    memcpy(msg.u.begin.consumer_uuid, env->peer_uuid, GPUIPC_UUID_LEN);
    t = gpuipc_clock_ns();
    if (send_msg(&s, &msg, GPUIPC_STEP_BEGIN) < 0 ||
        recv_msg(&s, GPUIPC_MSG_READY, &msg, GPUIPC_STEP_READY) < 0)
        goto lost;
    note_consumer(&s, &msg.u.ready, GPUIPC_STEP_READY);
    log_step(&s, GPUIPC_STEP_READY, t, "%s",
             msg.u.ready.code == GPUIPC_PASS ? "consumer is ready" : "consumer cannot take part");

    /* P3 alloc/fill/export, P4 OFFER */
    memset(&msg, 0, sizeof(msg));
    if (s.mine.code == GPUIPC_PASS && s.theirs.code == GPUIPC_PASS)
        prepare_offer(&s, size, &msg.u.offer);
    our_seed = msg.u.offer.seed;
    gpuipc_env_at(env, GPUIPC_STEP_OFFER);
    msg.type = GPUIPC_MSG_OFFER;
    msg.u.offer.st = s.mine;
    if (s.mine.code != GPUIPC_PASS || s.theirs.code != GPUIPC_PASS) {
        gpuipc_wire_close_fds(s.fds, s.nfds);
        s.nfds = 0;
        if (s.mine.code == GPUIPC_PASS)
            gpuipc_wire_status(&msg.u.offer.st, GPUIPC_SKIP, GPUIPC_STEP_READY,
                               "the consumer is not ready");
    }
    if (msg.u.offer.st.code != GPUIPC_PASS)
        msg.u.offer.fds_total = 0;
    fds_total = msg.u.offer.fds_total;
    msg.nfds = (uint16_t)s.nfds;
    t = gpuipc_clock_ns();
    if (env->timing != NULL)
        env->timing->offer_sent = t;
    if (send_msg(&s, &msg, GPUIPC_STEP_OFFER) < 0)
        goto lost;
    fds_sent = s.nfds;
    gpuipc_wire_close_fds(s.fds, s.nfds);
    s.nfds = 0;
    if (send_more_fds(&s, fds_total, fds_sent) < 0)
        goto lost;

    /* C5 REPORT */
    if (recv_msg(&s, GPUIPC_MSG_REPORT, &msg, GPUIPC_STEP_REPORT) < 0)
        goto lost;
    note_consumer(&s, &msg.u.report.st, GPUIPC_STEP_REPORT);
    res->forward = msg.u.report.check;
    res->consumer_wrote = msg.u.report.wrote;
    if (msg.u.report.check.words > 0) {
        char text[GPUIPC_ERR_LEN];

        gpuipc_log_step(&env->log, GPUIPC_LOG_NORMAL, mech->name, GPUIPC_STEP_REPORT,
                        gpuipc_clock_ns() - t, "consumer found %s, digest 0x%016llx",
                        gpuipc_pattern_describe(&res->forward, 0, text, sizeof(text)),
                        (unsigned long long)res->forward.digest);
    }
    judge_forward(&s, &res->forward);

    /* P5 check the consumer's pattern, or that ours is unchanged */
    if (s.mine.code == GPUIPC_PASS && mech->prove_read_only != NULL &&
        s.theirs.code == GPUIPC_PASS)
        check_unchanged(&s, our_seed);
    else if (s.mine.code == GPUIPC_PASS && (msg.u.report.flags & GPUIPC_REPORT_WROTE))
        check_back(&s, &msg.u.report, our_seed);
    else if (s.mine.code == GPUIPC_PASS && s.theirs.code == GPUIPC_PASS)
        gpuipc_wire_status_fail(&s.mine, GPUIPC_STEP_CHECK,
                                "check: the consumer did not write its pattern");

    /* P6 END (with this side's check, which the consumer judges in turn), C7
     * END_ACK */
    gpuipc_env_at(env, GPUIPC_STEP_END);
    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_END;
    msg.u.end.st = s.mine;
    msg.u.end.check = res->backward;
    if (send_msg(&s, &msg, GPUIPC_STEP_END) < 0 ||
        recv_msg(&s, GPUIPC_MSG_END_ACK, &msg, GPUIPC_STEP_END_ACK) < 0)
        goto lost;
    note_consumer(&s, &msg.u.end_ack.st, GPUIPC_STEP_END_ACK);
    res->consumer_usage = msg.u.end_ack.usage;
    if (env->timing != NULL && recv_times(&s) < 0)
        goto lost;

    /* A destructive scenario's consumer exits to let go of its mapping:
     * wait for that before releasing and counting. */
    if (mech->destructive && env->reap_peer != NULL && env->reap_peer(env, &s.err) < 0)
        gpuipc_wire_status_fail(&s.theirs, GPUIPC_STEP_END_ACK, "sacrificial consumer: %s",
                                s.err.msg);

    /* P7 release, now that the consumer has let go; P8 accounting */
    release_buf(&s);
    {
        gpuipc_err e;

        if (leaks_since_baseline(&s, &e) > 0)
            gpuipc_wire_status_fail(&s.mine, GPUIPC_STEP_RELEASE, "producer leaked: %s",
                                    e.msg);
    }
    gpuipc_inject_leak_fd(&env->inject, env->role);
    finish(&s, t0, NULL);
    return;

lost:
    /* The consumer is gone or broken: free what this side holds and report
     * the wire's reason, which names the step. */
    gpuipc_wire_close_fds(s.fds, s.nfds);
    s.nfds = 0;
    gpuipc_log_step(&env->log, GPUIPC_LOG_QUIET, mech->name, (unsigned)env->step,
                    GPUIPC_LOG_NO_TIME, "FAIL %s", s.err.msg);
    release_buf(&s);
    /* What this process holds is counted on this path too: its own figures
     * do not depend on the consumer, stuck or gone. */
    {
        gpuipc_err e;

        if (leaks_since_baseline(&s, &e) > 0) {
            size_t used = strlen(s.err.msg);

            gpuipc_log_step(&env->log, GPUIPC_LOG_QUIET, mech->name, GPUIPC_STEP_RELEASE,
                            GPUIPC_LOG_NO_TIME, "FAIL producer leaked: %s", e.msg);
            snprintf(s.err.msg + used, sizeof(s.err.msg) - used, "; then producer leaked: %.300s",
                     e.msg);
        }
    }
    finish(&s, t0, s.err.msg);
}
