/* SPDX-License-Identifier: Apache-2.0 */
/* consumer_scenario.c: one scenario on the consumer's side: it probes
 * again, imports what the producer offers, verifies the producer's pattern,
 * writes its own, judges END and releases everything before it answers END,
 * before the producer releases its own (--bench: its timed runs and TIMES).
 * The session around it (HELLO, PROBE, BYE): consumer.c.
 *
 *   C1 probe again, baseline; C2 READY; C3 import OFFER (and FDS); C4 verify
 *   the producer's pattern, write this side's (--pairs: then measure the
 *   link); C5 REPORT; C6 judge END, release, count; C7 END_ACK (and TIMES) */
#include "session/consumer_scenario.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/account.h"
#include "core/clock.h"
#include "core/proc.h"
#include "core/status.h"
#include "core/step.h"
#include "session/link.h"
#include "session/pattern.h"
#include "session/role.h"

#define WRONG_SEED_MASK 0xa5a5a5a5a5a5a5a5ull

/* One scenario, as this side runs it: the engine's, and its own. */
typedef struct cscen {
    gpuipc_scenario sc;
    gpuipc_consumer_session *cs;
    gpuipc_msg_offer offer;  /* the producer's offer */
    uint64_t words;          /* the mapped buffer's words */
    int wrote_any;           /* this side wrote its pattern */
    int report_passed;       /* the REPORT this side sent said PASS */
    int end_passed;          /* END said PASS and held up */
    /* --bench: BEGIN's request, and this side's figures for TIMES. */
    unsigned flags, iters;
    gpuipc_laps laps;
    uint64_t fds_recv[2 * GPUIPC_TIMING_BATCHES]; /* per batch: wait began, received */
    unsigned nfds_recv;
    uint64_t *bw[GPUIPC_BW_COUNT];
    gpuipc_link_figures link; /* --pairs: the link's figures, once they held */
} cscen;

/* A failure of this side: recorded (the first is kept) and logged, since
 * this side prints no summary of its own. */
static void fail(cscen *c, unsigned step, const gpuipc_err *e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail(cscen *c, unsigned step, const gpuipc_err *e, const char *fmt, ...)
{
    char text[GPUIPC_WIRE_REASON_LEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    gpuipc_role_fail(&c->sc, step, e, "%s", text);
    gpuipc_role_log_fail(&c->sc, step, "%s: %s", gpuipc_step_name(step), text);
}

/* Logs the consumer's answer to a PROBE. A reason the same as the last
 * mechanism's (say, this side cannot see the producer's GPU) is said once:
 * the next mechanisms it stops name the first. */
static void log_probe(gpuipc_consumer_session *cs, const char *name, const gpuipc_status *st,
                      uint64_t ns)
{
    int level = st->code == GPUIPC_FAIL ? GPUIPC_LOG_QUIET : GPUIPC_LOG_NORMAL;
    const char *verdict = gpuipc_status_word(st->code == GPUIPC_SKIP ? GPUIPC_SKIP : GPUIPC_FAIL);
    const gpuipc_log *log = &cs->env->log;

    if (st->code == GPUIPC_PASS) {
        cs->last_reason[0] = '\0';
        gpuipc_log_step(log, level, name, GPUIPC_STEP_PROBE, ns, "can run it");
        return;
    }
    if (strcmp(cs->last_reason, st->reason) == 0) {
        gpuipc_log_step(log, level, name, GPUIPC_STEP_PROBE, ns, "%s: the same reason as %s",
                        verdict, cs->last_name);
        return;
    }
    snprintf(cs->last_reason, sizeof(cs->last_reason), "%s", st->reason);
    snprintf(cs->last_name, sizeof(cs->last_name), "%s", name);
    gpuipc_log_step(log, level, name, GPUIPC_STEP_PROBE, ns, "%s %s", verdict, st->reason);
}

/* Points sc at the devices a PROBE or BEGIN names (the memory lives on
 * uuid; this side works on consumer_uuid where one is named), finds its
 * mechanism and lets it probe (opening the device if need be). Fills st:
 * PASS, SKIP (the mechanism cannot run here, and why) or FAIL, with what
 * failed as data, and err with the probe's own reason. */
void gpuipc_consumer_probe(gpuipc_consumer_session *cs, gpuipc_scenario *sc, const char *name,
                           const uint8_t *uuid, const uint8_t *consumer_uuid, gpuipc_status *st,
                           gpuipc_err *err)
{
    static const uint8_t none[GPUIPC_UUID_LEN];
    uint64_t t = gpuipc_clock_ns();
    int rc;

    gpuipc_role_at(sc, GPUIPC_STEP_PROBE);
    memcpy(sc->home_uuid, uuid, GPUIPC_UUID_LEN);
    memcpy(sc->uuid, memcmp(consumer_uuid, none, GPUIPC_UUID_LEN) != 0 ? consumer_uuid : uuid,
           GPUIPC_UUID_LEN);
    sc->mech = gpuipc_mech_find(cs->mechs, cs->n, name);
    if (sc->mech == NULL)
        rc = gpuipc_err_set(err, -EINVAL, "this consumer has no such mechanism");
    else
        rc = sc->mech->probe(sc, err);
    gpuipc_wire_status(st, rc == 0 ? GPUIPC_PASS : rc == -ENOTSUP ? GPUIPC_SKIP : GPUIPC_FAIL,
                       GPUIPC_STEP_PROBE, NULL);
    if (rc < 0) {
        snprintf(st->reason, sizeof(st->reason), "probe: %.370s", err->msg);
        gpuipc_wire_status_what(st, err);
    }
    log_probe(cs, name, st, gpuipc_clock_ns() - t);
}

/* Says once, where this process has a GPU, whether NVML can attribute GPU
 * memory to it: if not, the producer's summary can only say so, and this
 * line says why. */
static void note_accounting(cscen *c)
{
    const gpuipc_usage *u = &c->sc.before;
    gpuipc_env *env = c->sc.env;

    if (c->cs->said_accounting || env->gpu == NULL)
        return;
    c->cs->said_accounting = 1;
    if (env->per_phase)
        gpuipc_log_step(&env->log, GPUIPC_LOG_VERBOSE, c->sc.name, GPUIPC_STEP_PROBE,
                        GPUIPC_LOG_NO_TIME, "accounting: this worker's scenarios count their own "
                        "driver objects; this process's FDs, shared memory and GPU memory by "
                        "NVML are counted at each phase's beginning and end");
    else if (u->gpu == GPUIPC_USAGE_UNKNOWN)
        gpuipc_log_step(&env->log, GPUIPC_LOG_NORMAL, c->sc.name, GPUIPC_STEP_PROBE,
                        GPUIPC_LOG_NO_TIME, "accounting: GPU memory by NVML is not "
                        "attributable here: %.300s; FDs, driver objects and shared memory are "
                        "counted", u->gpu_why.msg);
    else
        gpuipc_log_step(&env->log, GPUIPC_LOG_VERBOSE, c->sc.name, GPUIPC_STEP_PROBE,
                        GPUIPC_LOG_NO_TIME, "accounting: this process holds %llu bytes of GPU "
                        "memory by NVML, %llu driver objects, %llu FDs",
                        (unsigned long long)u->gpu, (unsigned long long)u->objects.live,
                        (unsigned long long)u->fds.n);
}

/* C1, C2: a scenario probes again, as the state may have changed since
 * PROBE (a mechanism it cannot run now fails the scenario); the baseline
 * comes after the probe, which may have opened the driver or the device for
 * the first time; READY carries this side's status so far. Returns 0, or a
 * negative errno if the connection broke. */
static int get_ready(cscen *c, const gpuipc_msg_begin *begin)
{
    gpuipc_scenario *sc = &c->sc;
    gpuipc_status st;
    gpuipc_msg msg;
    gpuipc_err why;

    gpuipc_consumer_probe(c->cs, sc, begin->mech, begin->uuid, begin->consumer_uuid, &st, &why);
    if (st.code != GPUIPC_PASS) /* said by the probe's own line */
        gpuipc_role_fail(sc, GPUIPC_STEP_PROBE, &why, "%s", why.msg);
    gpuipc_role_baseline(sc, GPUIPC_STEP_PROBE);
    note_accounting(c);
    gpuipc_role_at(sc, GPUIPC_STEP_READY);
    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_READY;
    msg.u.ready = sc->mine;
    return gpuipc_role_send(sc, &msg, GPUIPC_STEP_READY, GPUIPC_STEP_OFFER);
}

/* Verifies the second view of the memory, if the mechanism gave one, for
 * the pattern with seed (whose it is: what), written as w. */
static void check_alt(cscen *c, unsigned step, uint64_t seed, const gpuipc_written *w,
                      const char *what)
{
    gpuipc_scenario *sc = &c->sc;
    char text[256], judged[GPUIPC_ERR_LEN];
    uint64_t t = gpuipc_clock_ns();
    gpuipc_check k;

    if (sc->buf.alt.ops == NULL || !gpuipc_role_holds(sc, step, "reading the second view"))
        return;
    if (sc->buf.alt.ops->verify(&sc->buf.alt, seed, &k, &sc->err) < 0) {
        fail(c, step, &sc->err, "reading %s: %.400s", sc->buf.alt_name, sc->err.msg);
        return;
    }
    gpuipc_pattern_describe(&k, sc->buf.alt.first_word, text, sizeof(text));
    if (gpuipc_role_judge(&k, sc->buf.alt.size / 8, w, "this side", judged,
                          sizeof(judged)) < 0) {
        fail(c, step, NULL, "%s read through %s: %.380s", what, sc->buf.alt_name,
             k.mismatches ? text : judged);
        return;
    }
    gpuipc_role_log(sc, step, t, "%s read through %s: %s", what, sc->buf.alt_name, text);
}

/* Adds the time since t0 to the import lap, and marks when the memory was
 * last mapped. */
static void lap_import(cscen *c, uint64_t t0)
{
    gpuipc_laps_add(c->sc.laps, GPUIPC_LAP_IMPORT, t0);
    if (c->sc.laps != NULL)
        c->laps.ns[GPUIPC_LAP_MAPPED] = gpuipc_clock_ns();
}

/* C3: imports what OFFER brought (its first batch of FDs, if more follow),
 * after holding it to the size BEGIN asked for. */
static void import_offer(cscen *c, const gpuipc_msg_begin *begin)
{
    gpuipc_scenario *sc = &c->sc;
    const gpuipc_msg_offer *offer = &c->offer;
    uint64_t t = gpuipc_clock_ns();
    int rc;

    if (offer->size < begin->size) {
        fail(c, GPUIPC_STEP_IMPORT, NULL, "the offer holds %llu bytes, but BEGIN asked for "
             "%llu: the producer does not share what it announced",
             (unsigned long long)offer->size, (unsigned long long)begin->size);
        return;
    }
    gpuipc_role_at(sc, GPUIPC_STEP_IMPORT);
    rc = sc->mech->import(sc, offer, sc->fds, sc->nfds, &sc->buf, &sc->err);
    lap_import(c, t);
    /* The FDs have served their purpose: the import holds its own reference. */
    gpuipc_wire_close_fds(sc->fds, sc->nfds);
    sc->nfds = 0;
    if (rc < 0) {
        fail(c, GPUIPC_STEP_IMPORT, &sc->err, "%s", sc->err.msg);
        return;
    }
    sc->have_buf = 1;
    gpuipc_role_log(sc, GPUIPC_STEP_IMPORT, t, "%s", sc->buf.detail);
}

/* One FDS batch of FDs numbered from got, imported where the scenario still
 * stands. Returns 1 if the producer ended the series (a failed batch, or one
 * that does not add up), 0 to go on. */
static int take_batch(cscen *c, const gpuipc_msg *msg, int rc, unsigned got)
{
    gpuipc_scenario *sc = &c->sc;
    uint64_t t;

    if (rc == -EMFILE && sc->mine.code == GPUIPC_PASS) /* said once is enough */
        fail(c, GPUIPC_STEP_IMPORT, &sc->err, "%s", sc->err.msg);
    if (msg->u.fds.st.code != GPUIPC_PASS) {
        gpuipc_role_log(sc, GPUIPC_STEP_IMPORT, GPUIPC_LOG_NO_TIME, "the producer sent %u of %u "
                        "FDs: %.300s", got, c->offer.fds_total, msg->u.fds.st.reason);
        return 1;
    }
    if (msg->u.fds.first != got || msg->nfds > c->offer.fds_total - got) {
        fail(c, GPUIPC_STEP_IMPORT, NULL, "an FDS batch holds FDs %u to %u, but %u was due next "
             "and %u were announced", msg->u.fds.first, msg->u.fds.first + msg->nfds - 1, got,
             c->offer.fds_total);
        return 1;
    }
    gpuipc_role_at(sc, GPUIPC_STEP_IMPORT);
    if (rc == 0 && sc->have_buf && sc->mine.code == GPUIPC_PASS) {
        t = gpuipc_clock_ns();
        if (sc->mech->import_more == NULL)
            fail(c, GPUIPC_STEP_IMPORT, NULL, "the offer has more FDs than this mechanism "
                 "takes");
        else if (sc->mech->import_more(sc, &sc->buf, got, sc->fds, sc->nfds, &sc->err) < 0)
            fail(c, GPUIPC_STEP_IMPORT, &sc->err, "%s", sc->err.msg);
        lap_import(c, t);
    }
    return 0;
}

/* C3b: the offer's further FDs, one FDS message per batch, numbered on from
 * got. Every batch is received, and its FDs closed, even after a failure,
 * so that both sides stay in step. Sets *whole to 0 if the producer did not
 * send them all. Returns 0, or a negative errno if the connection broke. */
static int import_more(cscen *c, unsigned got, int *whole)
{
    gpuipc_scenario *sc = &c->sc;
    unsigned batches = 0, first = got;
    uint64_t t = gpuipc_clock_ns();
    gpuipc_msg msg;
    int rc, ended;

    *whole = 1;
    while (c->offer.st.code == GPUIPC_PASS && got < c->offer.fds_total) {
        uint64_t waited = gpuipc_clock_ns();

        rc = gpuipc_role_recv(sc, GPUIPC_MSG_FDS, &msg, GPUIPC_STEP_OFFER);
        if (rc < 0 && rc != -EMFILE)
            return rc;
        if (sc->laps != NULL && c->nfds_recv < 2 * GPUIPC_TIMING_BATCHES) {
            c->fds_recv[c->nfds_recv++] = waited;
            c->fds_recv[c->nfds_recv++] = gpuipc_clock_ns();
        }
        ended = take_batch(c, &msg, rc, got);
        gpuipc_wire_close_fds(sc->fds, sc->nfds);
        sc->nfds = 0;
        if (ended) {
            *whole = 0;
            return 0;
        }
        got += msg.nfds;
        batches++;
    }
    if (batches > 0 && sc->mine.code == GPUIPC_PASS)
        gpuipc_role_log(sc, GPUIPC_STEP_IMPORT, t, "FDs %u to %u received in %u more message%s "
                        "and imported, %.1f us per FD", first, got - 1, batches,
                        batches == 1 ? "" : "s",
                        (double)(gpuipc_clock_ns() - t) / 1e3 / (got - first));
    return 0;
}

/* --bench: the kernels and a copy, timed over the imported memory and local
 * memory. The imported memory holds this side's pattern again afterwards,
 * for the producer to check as usual. */
static void run_bandwidth(cscen *c, uint64_t seed)
{
    gpuipc_scenario *sc = &c->sc;
    uint64_t t = gpuipc_clock_ns();
    unsigned i;

    for (i = 0; i < GPUIPC_BW_COUNT; i++) {
        if ((c->bw[i] = calloc(c->iters, sizeof(uint64_t))) == NULL) {
            fail(c, GPUIPC_STEP_WRITE, NULL, "bandwidth runs: out of memory");
            return;
        }
    }
    if (sc->env->bandwidth == NULL) {
        fail(c, GPUIPC_STEP_WRITE, NULL, "bandwidth runs: this consumer has no CUDA support");
        return;
    }
    if (!gpuipc_role_holds(sc, GPUIPC_STEP_WRITE, "bandwidth runs"))
        return;
    if (sc->buf.view.dev == 0) {
        fail(c, GPUIPC_STEP_WRITE, NULL, "bandwidth runs: the mechanism maps no device memory");
        return;
    }
    if (sc->env->bandwidth(sc, &sc->buf.view, seed, c->iters, c->bw, &sc->err) < 0) {
        fail(c, GPUIPC_STEP_WRITE, &sc->err, "bandwidth runs: %.420s", sc->err.msg);
        return;
    }
    gpuipc_role_log(sc, GPUIPC_STEP_WRITE, t, "bandwidth runs: %u x (fill, verify, copy) over "
                    "imported and local memory", c->iters);
}

/* --pairs (BEGIN's GPUIPC_BEGIN_LINK), C4 after this side's checks passed,
 * so that the words are proven before any figure is taken over them: the
 * link's figures over the imported memory, which holds the pattern of seed
 * that once describes (write: the write run too, which leaves that pattern
 * there). Figures that do not hold (the memory not on the producer's GPU, a
 * batch that moved less or other bytes, a read across the link no slower
 * than a read of this GPU's own memory) fail the scenario, named, and none
 * is reported. */
static void measure_link(cscen *c, uint64_t seed, const gpuipc_written *once, int write)
{
    gpuipc_scenario *sc = &c->sc;
    char why[GPUIPC_ERR_LEN], text[GPUIPC_ERR_LEN];
    uint64_t t = gpuipc_clock_ns();

    memset(&c->link, 0, sizeof(c->link));
    if (!(c->flags & GPUIPC_BEGIN_LINK) || sc->mine.code != GPUIPC_PASS)
        return;
    gpuipc_role_at(sc, GPUIPC_STEP_WRITE);
    if (sc->env->link == NULL) {
        fail(c, GPUIPC_STEP_WRITE, NULL, "link figures: this consumer has no CUDA support");
        return;
    }
    if (!gpuipc_role_holds(sc, GPUIPC_STEP_WRITE, "measuring the link"))
        return;
    if (sc->env->link(sc, &sc->buf.view, seed, once, write, &c->link, &sc->err) < 0) {
        memset(&c->link, 0, sizeof(c->link));
        fail(c, GPUIPC_STEP_WRITE, &sc->err, "link figures: %.420s", sc->err.msg);
        return;
    }
    if (gpuipc_link_judge(&c->link, sc->buf.view.size, once, write, sc->mech->ipc_opened, why,
                          sizeof(why)) < 0) {
        memset(&c->link, 0, sizeof(c->link));
        fail(c, GPUIPC_STEP_WRITE, NULL, "link figures: %.420s", why);
        return;
    }
    if (c->link.pointer_ordinal == c->link.home_ordinal)
        gpuipc_role_log(sc, GPUIPC_STEP_WRITE, GPUIPC_LOG_NO_TIME, "link: the imported memory "
                        "lies on GPU %d, the producer's, by cuPointerGetAttribute "
                        "(DEVICE_ORDINAL); this process reads and writes it from GPU %d",
                        c->link.pointer_ordinal, c->link.own_ordinal);
    else
        gpuipc_role_log(sc, GPUIPC_STEP_WRITE, GPUIPC_LOG_NO_TIME, "link: cuPointerGetAttribute "
                        "(DEVICE_ORDINAL) names this process's GPU %d for a cuIpcOpenMemHandle "
                        "mapping (the importing context's GPU); the read of GPU %d's own memory, "
                        "%.1f times faster than the read of the mapping, places the mapping "
                        "across the link on GPU %d, the producer's", c->link.own_ordinal,
                        c->link.own_ordinal, gpuipc_link_gbps(&c->link, GPUIPC_LINK_LOCAL) /
                        gpuipc_link_gbps(&c->link, GPUIPC_LINK_READ), c->link.home_ordinal);
    gpuipc_role_log(sc, GPUIPC_STEP_WRITE, t, "link: %s; every batch's words and digest as its "
                    "passes give, 0 bad", gpuipc_link_describe(&c->link, text, sizeof(text)));
}

/* C4, for a read-only mapping: it must refuse writes; this side proves that
 * instead of writing, and the producer checks that its bytes did not
 * change. */
static void prove_read_only(cscen *c)
{
    gpuipc_scenario *sc = &c->sc;
    uint64_t t;

    gpuipc_role_at(sc, GPUIPC_STEP_WRITE);
    if (!gpuipc_role_holds(sc, GPUIPC_STEP_WRITE, "proving the mapping read-only"))
        return;
    t = gpuipc_clock_ns();
    if (sc->mech->prove_read_only(sc, &sc->buf, &sc->err) < 0)
        fail(c, GPUIPC_STEP_WRITE, &sc->err, "%s", sc->err.msg);
    else
        gpuipc_role_log(sc, GPUIPC_STEP_WRITE, t, "refused, as it must be: %.200s",
                        sc->err.msg);
}

/* C4: verify the producer's pattern, write our own (even after a failed
 * verification: the other direction is a separate question with its own
 * answer). */
static void use_offer(cscen *c, gpuipc_msg_report *report)
{
    gpuipc_scenario *sc = &c->sc;
    const gpuipc_msg_offer *offer = &c->offer;
    uint64_t seed;
    int skipped;

    c->words = sc->buf.view.size / 8;
    gpuipc_role_check(sc, GPUIPC_STEP_VERIFY, &sc->buf.view, offer->seed, &offer->wrote,
                      &report->check, "the producer's bytes", " from the producer");
    check_alt(c, GPUIPC_STEP_VERIFY, offer->seed, &offer->wrote, "the producer's bytes");
    if (sc->mech->prove_read_only != NULL) {
        prove_read_only(c);
        measure_link(c, offer->seed, &offer->wrote, 0);
        return;
    }
    seed = gpuipc_pattern_seed(offer->seed);
    if (gpuipc_role_fill(sc, GPUIPC_STEP_WRITE, seed, &skipped) < 0) {
        gpuipc_role_log_fail(sc, GPUIPC_STEP_WRITE, "%s", sc->mine.reason);
        return;
    }
    c->wrote_any = 1;
    report->flags |= GPUIPC_REPORT_WROTE;
    report->seed = seed;
    report->wrote = sc->wrote;
    /* Under the skip-write hook there is no write of this side's to read
     * back: the producer's check of it is what must fail. */
    if (!skipped)
        check_alt(c, GPUIPC_STEP_WRITE, seed, &sc->wrote, "this side's own write");
    if (c->flags & GPUIPC_BEGIN_BANDWIDTH)
        run_bandwidth(c, seed);
    /* Under the skip-write hook the memory does not hold this side's
     * pattern, and the write run would put it there: no figure is taken,
     * and the producer's check of the bytes fails as it must. */
    if (!skipped)
        measure_link(c, seed, &sc->wrote, 1);
    if (gpuipc_inject_sabotage(&sc->env->inject, sc->env->role, GPUIPC_SABOTAGE_WRONG_SEED))
        report->seed = seed ^ WRONG_SEED_MASK;
}

/* P4 OFFER (and FDS); C3, C4; C5 REPORT. Returns 0, or a negative errno if
 * the connection broke. */
static int take_offer(cscen *c, const gpuipc_msg_begin *begin)
{
    gpuipc_scenario *sc = &c->sc;
    gpuipc_msg msg;
    int rc, whole;

    c->laps.ns[GPUIPC_LAP_OFFER_WAIT] = gpuipc_clock_ns();
    rc = gpuipc_role_recv(sc, GPUIPC_MSG_OFFER, &msg, GPUIPC_STEP_OFFER);
    c->laps.ns[GPUIPC_LAP_OFFER_RECV] = gpuipc_clock_ns();
    if (rc == -EMFILE) /* the offer is sound, its FDs did not all fit */
        fail(c, GPUIPC_STEP_IMPORT, &sc->err, "%s", sc->err.msg);
    else if (rc < 0)
        return rc;
    c->offer = msg.u.offer;
    if (sc->mine.code == GPUIPC_PASS && c->offer.st.code == GPUIPC_PASS)
        import_offer(c, begin);
    gpuipc_wire_close_fds(sc->fds, sc->nfds);
    sc->nfds = 0;
    if ((rc = import_more(c, msg.nfds, &whole)) < 0)
        return rc;
    memset(&msg, 0, sizeof(msg));
    if (sc->mine.code == GPUIPC_PASS && c->offer.st.code == GPUIPC_PASS && whole)
        use_offer(c, &msg.u.report);
    gpuipc_role_at(sc, GPUIPC_STEP_REPORT);
    msg.type = GPUIPC_MSG_REPORT;
    msg.u.report.st = sc->mine;
    c->report_passed = sc->mine.code == GPUIPC_PASS;
    return gpuipc_role_send(sc, &msg, GPUIPC_STEP_REPORT, GPUIPC_STEP_END);
}

/* C6a: the producer's check in END must have read every word of what it
 * checked (this side's pattern, or its own under a read-only mapping),
 * found none bad and read the digest written: a producer that did not read
 * cannot pass this side's bytes. Only then, with this side's own checks
 * passed, has this side seen the scenario pass. */
static void judge_end(cscen *c, const gpuipc_msg_end *end)
{
    static const gpuipc_check no_check;
    gpuipc_scenario *sc = &c->sc;
    const gpuipc_written *w = c->wrote_any ? &sc->wrote : &c->offer.wrote;
    char why[GPUIPC_ERR_LEN];

    /* The producer checks what this side wrote, or, read-only, its own
     * bytes once this side's REPORT passed: with neither there was nothing
     * to check, and an END that counts words does not speak for what ran. */
    if (memcmp(&end->check, &no_check, sizeof(no_check)) != 0 && !c->wrote_any &&
        !(c->report_passed && sc->mech != NULL && sc->mech->prove_read_only != NULL)) {
        fail(c, GPUIPC_STEP_END, NULL, "the producer's END counts %llu words checked, but this "
             "side wrote nothing for it to check: it does not speak for what ran",
             (unsigned long long)end->check.words);
        return;
    }
    if (end->st.code == GPUIPC_FAIL)
        gpuipc_role_log(sc, GPUIPC_STEP_END, GPUIPC_LOG_NO_TIME, "the producer reports a "
                        "failure: %s", end->st.reason);
    if (end->st.code != GPUIPC_PASS || sc->mine.code != GPUIPC_PASS || c->words == 0 ||
        (!c->wrote_any && sc->mech->prove_read_only == NULL))
        return;
    if (gpuipc_role_judge(&end->check, c->words, w, "the producer", why, sizeof(why)) < 0) {
        fail(c, GPUIPC_STEP_END, NULL, "the producer's check of %s: %.400s",
             c->wrote_any ? "this side's bytes" : "its own bytes", why);
        return;
    }
    c->end_passed = 1;
}

/* Sends n values of series in TIMES slices; last marks the final slice as
 * the scenario's last TIMES. Returns 0 or a negative errno. */
static int send_series(cscen *c, unsigned series, const uint64_t *v, unsigned n, int last)
{
    unsigned first = 0;
    gpuipc_msg msg;
    int rc;

    do {
        unsigned count = n - first < GPUIPC_WIRE_TIMES_MAX ? n - first : GPUIPC_WIRE_TIMES_MAX;

        memset(&msg, 0, sizeof(msg));
        msg.type = GPUIPC_MSG_TIMES;
        msg.u.times.series = series;
        msg.u.times.first = first;
        msg.u.times.count = count;
        memcpy(msg.u.times.v, v + first, count * sizeof(uint64_t));
        first += count;
        if (last && first == n)
            msg.u.times.flags = GPUIPC_TIMES_LAST;
        if ((rc = gpuipc_role_send(&c->sc, &msg, GPUIPC_STEP_END_ACK, GPUIPC_STEP_BEGIN)) < 0)
            return rc;
    } while (first < n);
    return 0;
}

/* After END_ACK, what BEGIN asked for: --bench and --json, this side's laps
 * and the FDS batches' arrival times; --bench, the bandwidth samples (zero
 * where a run did not happen); --pairs, the link figures (all zero where
 * none held). The last is marked so. Returns 0 or a negative errno. */
static int send_times(cscen *c)
{
    static const uint64_t zero[GPUIPC_WIRE_TIMES_MAX];
    int laps = (c->flags & GPUIPC_BEGIN_TIMES) != 0;
    int bw = (c->flags & GPUIPC_BEGIN_BANDWIDTH) != 0;
    int link = (c->flags & GPUIPC_BEGIN_LINK) != 0, rc;
    uint64_t v[GPUIPC_LINK_VALUES];
    unsigned i;

    c->laps.ns[GPUIPC_LAP_HWM] = gpuipc_proc_hwm();
    if (laps && (rc = send_series(c, GPUIPC_SERIES_LAPS, c->laps.ns, GPUIPC_LAP_COUNT,
                                  c->nfds_recv == 0 && !bw && !link)) < 0)
        return rc;
    if (laps && c->nfds_recv > 0 &&
        (rc = send_series(c, GPUIPC_SERIES_FDS_RECV, c->fds_recv, c->nfds_recv,
                          !bw && !link)) < 0)
        return rc;
    for (i = 0; bw && i < GPUIPC_BW_COUNT; i++) {
        const uint64_t *s = c->bw[i] != NULL ? c->bw[i] : zero;

        if ((rc = send_series(c, GPUIPC_SERIES_BW_FIRST + i, s, c->bw[i] != NULL ? c->iters : 1,
                              i + 1 == GPUIPC_BW_COUNT && !link)) < 0)
            return rc;
    }
    if (link) {
        gpuipc_link_to_values(&c->link, v);
        if ((rc = send_series(c, GPUIPC_SERIES_LINK, v, GPUIPC_LINK_VALUES, 1)) < 0)
            return rc;
    }
    return 0;
}

/* P6 END; C6 judge it, release and count (a destructive scenario's context
 * is lost: its memory goes back when this process exits, which the producer
 * waits for, so the driver's figure would still show it here; its own count,
 * the ledger, stands); C7 END_ACK with what this process holds now, and
 * TIMES. Returns 0, or a negative errno if the connection broke. */
static int end_scenario(cscen *c)
{
    gpuipc_scenario *sc = &c->sc;
    gpuipc_usage now;
    gpuipc_msg msg;
    gpuipc_err e;
    int rc;

    if ((rc = gpuipc_role_recv(sc, GPUIPC_MSG_END, &msg, GPUIPC_STEP_END)) < 0)
        return rc;
    judge_end(c, &msg.u.end);
    c->cs->producer_failed += msg.u.end.st.code == GPUIPC_FAIL;
    gpuipc_role_release(sc);
    if (gpuipc_role_count_leaks(sc, sc->mech != NULL && sc->mech->destructive
                                        ? NULL : sc->env->gpu_bytes) > 0)
        gpuipc_role_log_fail(sc, GPUIPC_STEP_RELEASE, "%s", sc->mine.reason);
    gpuipc_inject_leak_fd(&sc->env->inject, sc->env->role);
    gpuipc_role_at(sc, GPUIPC_STEP_END_ACK);
    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_END_ACK;
    if (sc->env->per_phase)
        gpuipc_usage_take_objects(&now);
    else
        gpuipc_usage_take(&now, sc->env->gpu_bytes, &e);
    gpuipc_usage_figures_of(&now, &msg.u.end_ack.usage);
    gpuipc_usage_free(&now);
    msg.u.end_ack.st = sc->mine;
    if ((rc = gpuipc_role_send(sc, &msg, GPUIPC_STEP_END_ACK, GPUIPC_STEP_BEGIN)) < 0)
        return rc;
    return (c->flags & (GPUIPC_BEGIN_TIMES | GPUIPC_BEGIN_LINK)) ? send_times(c) : 0;
}

static void free_bench(cscen *c)
{
    unsigned i;

    for (i = 0; i < GPUIPC_BW_COUNT; i++) {
        free(c->bw[i]);
        c->bw[i] = NULL;
    }
}

/* Runs the scenario that begin starts. Sets *own to this side's verdict
 * (GPUIPC_PASS or GPUIPC_FAIL, whose reason goes into cs->first_fail if it
 * is the first) and *passed to 1 if this side saw it pass (its own checks
 * and the producer's END). Returns 0, or -1 if the connection broke (which
 * ends the session; cs->first_fail then says why). */
int gpuipc_consumer_scenario(gpuipc_consumer_session *cs, const gpuipc_msg_begin *begin, int *own,
                             int *passed)
{
    static cscen zero;
    cscen c = zero;
    gpuipc_scenario *sc = &c.sc;
    int lost;

    gpuipc_role_start(sc, cs->env, cs->w, NULL, begin->mech);
    c.cs = cs;
    sc->size = begin->size;
    c.flags = begin->flags;
    c.iters = begin->iters;
    sc->laps = (c.flags & GPUIPC_BEGIN_TIMES) ? &c.laps : NULL;
    if (sc->laps != NULL) {
        /* The peak reported is this scenario's; the session's is kept. */
        uint64_t hwm = gpuipc_proc_hwm();

        if (hwm > cs->hwm)
            cs->hwm = hwm;
        gpuipc_proc_reset_hwm();
    }
    lost = get_ready(&c, begin) < 0 || take_offer(&c, begin) < 0 || end_scenario(&c) < 0;
    free_bench(&c);
    *own = GPUIPC_FAIL;
    *passed = 0;
    if (lost) {
        gpuipc_role_abandon(sc);
        snprintf(cs->first_fail, sizeof(cs->first_fail), "%s", sc->err.msg);
        return -1;
    }
    gpuipc_role_end(sc);
    if (sc->mine.code != GPUIPC_PASS && cs->first_fail[0] == '\0')
        snprintf(cs->first_fail, sizeof(cs->first_fail), "%s: %s", sc->name, sc->mine.reason);
    *own = sc->mine.code == GPUIPC_PASS ? GPUIPC_PASS : GPUIPC_FAIL;
    *passed = *own == GPUIPC_PASS && c.end_passed;
    return 0;
}
