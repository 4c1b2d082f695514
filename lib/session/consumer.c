/* consumer.c: the consumer's side of the session: it imports what the
 * producer offers, verifies the producer's pattern, writes its own, and
 * releases everything before it answers END, before the producer releases
 * its own. The messages and their order: docs/protocol.md. */
#include "session/consumer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/account.h"
#include "core/clock.h"
#include "session/pattern.h"
#include "core/proc.h"
#include "session/role.h"
#include "core/step.h"
#include "core/units.h"

#define WRONG_SEED_MASK 0xa5a5a5a5a5a5a5a5ull

typedef struct scenario {
    gpuipc_env *env;
    gpuipc_wire *w;
    const char *name;
    gpuipc_status mine;
    gpuipc_buf buf;
    const gpuipc_mech *mech;
    int have_buf;
    int fds[GPUIPC_WIRE_MAX_FDS];
    unsigned nfds;
    uint64_t words;        /* the mapped buffer's words */
    gpuipc_written wrote;  /* what this side's fill wrote */
    int wrote_any;         /* it wrote its pattern */
    gpuipc_err err;
    /* --bench: BEGIN's request, and this side's figures for TIMES. */
    unsigned flags, iters;
    gpuipc_laps laps;
    uint64_t fds_recv[2 * GPUIPC_TIMING_BATCHES]; /* per batch: wait began, received */
    unsigned nfds_recv;
    uint64_t *bw[GPUIPC_BW_COUNT];
} scenario;

/* The peak RSS of scenarios whose peak was reset for their own figure
 * (--bench, --json), for the session's -v line. */
static uint64_t session_hwm;

static void log_step(scenario *s, unsigned step, uint64_t t0, const char *text)
{
    gpuipc_log_step(&s->env->log, GPUIPC_LOG_NORMAL, s->name, step, gpuipc_clock_ns() - t0,
                    "%s", text);
}

static void log_fail(scenario *s, unsigned step, const char *text)
{
    gpuipc_log_step(&s->env->log, GPUIPC_LOG_QUIET, s->name, step, GPUIPC_LOG_NO_TIME,
                    "FAIL %s", text);
}

/* Sends msg in step; next is the step this side waits in afterwards. It is
 * marked before the send, since the producer may answer, or die, before
 * sendmsg() has even returned, and a parent-death report must name it. */
static int send_msg(scenario *s, gpuipc_msg *msg, unsigned step, unsigned next)
{
    s->env->step = (sig_atomic_t)next;
    return gpuipc_wire_send(s->w, msg, NULL, gpuipc_clock_deadline(s->env->timeout_ns), step,
                            &s->err);
}

static int recv_msg(scenario *s, unsigned type, gpuipc_msg *msg, unsigned step)
{
    int rc;

    s->env->step = (sig_atomic_t)step; /* what a parent-death report names */
    rc = gpuipc_wire_recv(s->w, GPUIPC_MSG_BIT(type), msg, s->fds,
                              gpuipc_clock_deadline(s->env->timeout_ns), step, &s->err);

    s->nfds = rc == 0 ? msg->nfds : 0;
    return rc;
}

/* READY carries nothing but this side's status so far. */
static int send_ready(scenario *s)
{
    gpuipc_msg msg;

    gpuipc_env_at(s->env, GPUIPC_STEP_READY);
    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_READY;
    msg.u.ready = s->mine;
    return send_msg(s, &msg, GPUIPC_STEP_READY, GPUIPC_STEP_OFFER);
}

static void fail(scenario *s, unsigned step, const char *what)
{
    gpuipc_wire_status_fail(&s->mine, step, "%s: %s", gpuipc_step_name(step), what);
    log_fail(s, step, s->mine.reason);
}

/* Logs the consumer's answer to a PROBE. A reason the same as the last
 * mechanism's (say, this side cannot see the producer's GPU) is said once:
 * the next mechanisms it stops name the first. */
static void log_probe(gpuipc_env *env, const char *name, const gpuipc_status *st, uint64_t ns)
{
    static char last_reason[sizeof(st->reason)], last_name[GPUIPC_WIRE_NAME_LEN];
    int level = st->code == GPUIPC_FAIL ? GPUIPC_LOG_QUIET : GPUIPC_LOG_NORMAL;
    const char *verdict = st->code == GPUIPC_SKIP ? "SKIP" : "FAIL";

    if (st->code == GPUIPC_PASS) {
        last_reason[0] = '\0';
        gpuipc_log_step(&env->log, level, name, GPUIPC_STEP_PROBE, ns, "can run it");
        return;
    }
    if (strcmp(last_reason, st->reason) == 0) {
        gpuipc_log_step(&env->log, level, name, GPUIPC_STEP_PROBE, ns, "%s: the same reason "
                        "as %s", verdict, last_name);
        return;
    }
    snprintf(last_reason, sizeof(last_reason), "%s", st->reason);
    snprintf(last_name, sizeof(last_name), "%s", name);
    gpuipc_log_step(&env->log, level, name, GPUIPC_STEP_PROBE, ns, "%s %s", verdict, st->reason);
}

/* Finds mechanism name and lets it probe the device named by uuid (opening
 * it if need be). Fills st: PASS, SKIP (the mechanism cannot run here, and
 * why) or FAIL. Returns the mechanism, or NULL if there is none by that name. */
static const gpuipc_mech *probe_mech(gpuipc_env *env, const gpuipc_mech *const *mechs, size_t n,
                                     const char *name, const uint8_t *uuid,
                                     const uint8_t *consumer_uuid, gpuipc_status *st)
{
    static const uint8_t none[GPUIPC_UUID_LEN];
    const gpuipc_mech *m;
    uint64_t t = gpuipc_clock_ns();
    gpuipc_err err;
    int rc;

    gpuipc_env_at(env, GPUIPC_STEP_PROBE);
    /* The memory lives on uuid; this side works on consumer_uuid if named. */
    memcpy(env->home_uuid, uuid, GPUIPC_UUID_LEN);
    memcpy(env->uuid, memcmp(consumer_uuid, none, GPUIPC_UUID_LEN) != 0 ? consumer_uuid : uuid,
           GPUIPC_UUID_LEN);
    m = gpuipc_mech_find(mechs, n, name);
    env->mech = m;
    if (m == NULL) {
        gpuipc_wire_status(st, GPUIPC_FAIL, GPUIPC_STEP_PROBE,
                           "probe: this consumer has no such mechanism");
    } else if ((rc = m->probe(env, &err)) == 0) {
        gpuipc_wire_status(st, GPUIPC_PASS, GPUIPC_STEP_PROBE, NULL);
    } else {
        gpuipc_wire_status(st, rc == -ENOTSUP ? GPUIPC_SKIP : GPUIPC_FAIL, GPUIPC_STEP_PROBE,
                           NULL);
        snprintf(st->reason, sizeof(st->reason), "probe: %.370s", err.msg);
    }
    log_probe(env, name, st, gpuipc_clock_ns() - t);
    return m;
}

/* C1: a scenario probes again, as the state may have changed since PROBE. A
 * mechanism the consumer cannot run at this point fails the scenario. */
static void probe(scenario *s, const gpuipc_mech *const *mechs, size_t n,
                  const gpuipc_msg_begin *begin)
{
    gpuipc_status st;

    s->mech = probe_mech(s->env, mechs, n, begin->mech, begin->uuid, begin->consumer_uuid, &st);
    if (st.code != GPUIPC_PASS)
        gpuipc_wire_status_fail(&s->mine, GPUIPC_STEP_PROBE, "%s", st.reason);
}

/* Verifies the second view of the memory, if the mechanism gave one, for
 * the pattern with seed (whose it is: what), written as w. */
static void check_alt(scenario *s, unsigned step, uint64_t seed, const gpuipc_written *w,
                      const char *what)
{
    gpuipc_check k;
    char text[256], why[GPUIPC_ERR_LEN], judged[GPUIPC_ERR_LEN];
    uint64_t t = gpuipc_clock_ns();

    if (s->buf.alt.ops == NULL)
        return;
    if (s->buf.alt.ops->verify(&s->buf.alt, seed, &k, &s->err) < 0) {
        snprintf(why, sizeof(why), "reading %s: %.400s", s->buf.alt_name, s->err.msg);
        fail(s, step, why);
        return;
    }
    gpuipc_pattern_describe(&k, s->buf.alt.first_word, text, sizeof(text));
    if (k.mismatches) {
        snprintf(why, sizeof(why), "%s read through %s: %s", what, s->buf.alt_name, text);
        fail(s, step, why);
        return;
    }
    if (gpuipc_role_judge(&k, s->buf.alt.size / 8, w, "this side", judged,
                          sizeof(judged)) < 0) {
        snprintf(why, sizeof(why), "%s read through %s: %.380s", what, s->buf.alt_name, judged);
        fail(s, step, why);
        return;
    }
    snprintf(why, sizeof(why), "%s read through %s: %s", what, s->buf.alt_name, text);
    log_step(s, step, t, why);
}

/* C3: imports what OFFER brought (its first batch of FDs, if more follow). */
static void import_offer(scenario *s, const gpuipc_msg_offer *offer)
{
    uint64_t t = gpuipc_clock_ns();
    int rc;

    gpuipc_env_at(s->env, GPUIPC_STEP_IMPORT);
    rc = s->mech->import(s->env, offer, s->fds, s->nfds, &s->buf, &s->err);
    gpuipc_laps_add(s->env->laps, GPUIPC_LAP_IMPORT, t);
    if (s->env->laps != NULL)
        s->laps.ns[GPUIPC_LAP_MAPPED] = gpuipc_clock_ns();
    /* The FDs have served their purpose: the import holds its own reference. */
    gpuipc_wire_close_fds(s->fds, s->nfds);
    s->nfds = 0;
    if (rc < 0) {
        fail(s, GPUIPC_STEP_IMPORT, s->err.msg);
        return;
    }
    s->have_buf = 1;
    log_step(s, GPUIPC_STEP_IMPORT, t, s->buf.detail);
}

/* One batch's import_more, its time added to the import lap. */
static int timed_import_more(scenario *s, unsigned first)
{
    uint64_t t = gpuipc_clock_ns();
    int rc = s->mech->import_more(s->env, &s->buf, first, s->fds, s->nfds, &s->err);

    gpuipc_laps_add(s->env->laps, GPUIPC_LAP_IMPORT, t);
    if (s->env->laps != NULL)
        s->laps.ns[GPUIPC_LAP_MAPPED] = gpuipc_clock_ns();
    return rc;
}

/* C3b: the offer's further FDs, one FDS message per batch, numbered on from
 * got. Every batch is received, and its FDs closed, even after a failure,
 * so that both sides stay in step. Sets *whole to 0 if the producer could
 * not send them all. Returns 0, or a negative errno if the connection broke. */
static int import_more(scenario *s, const gpuipc_msg_offer *offer, unsigned got, int *whole)
{
    unsigned batches = 0, first = got;
    uint64_t t = gpuipc_clock_ns();
    char text[GPUIPC_ERR_LEN];
    gpuipc_msg msg;
    int rc;

    *whole = 1;
    while (offer->st.code == GPUIPC_PASS && got < offer->fds_total) {
        uint64_t waited = gpuipc_clock_ns();

        rc = recv_msg(s, GPUIPC_MSG_FDS, &msg, GPUIPC_STEP_OFFER);
        if (rc < 0 && rc != -EMFILE)
            return rc;
        if (s->env->laps != NULL && s->nfds_recv < 2 * GPUIPC_TIMING_BATCHES) {
            s->fds_recv[s->nfds_recv++] = waited;
            s->fds_recv[s->nfds_recv++] = gpuipc_clock_ns();
        }
        if (rc == -EMFILE && s->mine.code == GPUIPC_PASS) /* said once is enough */
            fail(s, GPUIPC_STEP_IMPORT, s->err.msg);
        if (msg.u.fds.st.code != GPUIPC_PASS) {
            *whole = 0;
            snprintf(text, sizeof(text), "the producer sent %u of %u FDs: %.300s", got,
                     offer->fds_total, msg.u.fds.st.reason);
            log_step(s, GPUIPC_STEP_IMPORT, t, text);
            return 0;
        }
        if (msg.u.fds.first != got || msg.nfds > offer->fds_total - got) {
            snprintf(text, sizeof(text), "an FDS batch holds FDs %u to %u, but %u was due next "
                     "and %u were announced", msg.u.fds.first,
                     msg.u.fds.first + msg.nfds - 1, got, offer->fds_total);
            fail(s, GPUIPC_STEP_IMPORT, text);
            gpuipc_wire_close_fds(s->fds, s->nfds);
            s->nfds = 0;
            *whole = 0;
            return 0;
        }
        gpuipc_env_at(s->env, GPUIPC_STEP_IMPORT);
        if (rc == 0 && s->have_buf && s->mine.code == GPUIPC_PASS) {
            if (s->mech->import_more == NULL)
                fail(s, GPUIPC_STEP_IMPORT, "the offer has more FDs than this mechanism takes");
            else if (timed_import_more(s, got) < 0)
                fail(s, GPUIPC_STEP_IMPORT, s->err.msg);
        }
        gpuipc_wire_close_fds(s->fds, s->nfds);
        s->nfds = 0;
        got += msg.nfds;
        batches++;
    }
    if (batches > 0 && s->mine.code == GPUIPC_PASS) {
        snprintf(text, sizeof(text), "FDs %u to %u received in %u more message%s and "
                 "imported, %.1f us per FD", first, got - 1, batches, batches == 1 ? "" : "s",
                 (double)(gpuipc_clock_ns() - t) / 1e3 / (got - first));
        log_step(s, GPUIPC_STEP_IMPORT, t, text);
    }
    return 0;
}

/* --bench: the kernels and a copy, timed over the imported memory and local
 * memory. The imported memory holds this side's pattern again afterwards,
 * for the producer to check as usual. */
static void run_bandwidth(scenario *s, uint64_t seed)
{
    uint64_t t = gpuipc_clock_ns();
    char text[160];
    unsigned i;

    for (i = 0; i < GPUIPC_BW_COUNT; i++) {
        s->bw[i] = calloc(s->iters, sizeof(uint64_t));
        if (s->bw[i] == NULL) {
            fail(s, GPUIPC_STEP_WRITE, "bandwidth runs: out of memory");
            return;
        }
    }
    if (s->env->bandwidth == NULL) {
        fail(s, GPUIPC_STEP_WRITE, "bandwidth runs: this consumer has no CUDA support");
        return;
    }
    if (s->buf.view.dev == 0) {
        fail(s, GPUIPC_STEP_WRITE, "bandwidth runs: the mechanism maps no device memory");
        return;
    }
    if (s->env->bandwidth(s->env, &s->buf.view, seed, s->iters, s->bw, &s->err) < 0) {
        char why[GPUIPC_ERR_LEN];

        snprintf(why, sizeof(why), "bandwidth runs: %.420s", s->err.msg);
        fail(s, GPUIPC_STEP_WRITE, why);
        return;
    }
    snprintf(text, sizeof(text), "bandwidth runs: %u x (fill, verify, copy) over imported and "
             "local memory", s->iters);
    log_step(s, GPUIPC_STEP_WRITE, t, text);
}

/* C4: verify the producer's pattern, write our own. */
static void use_offer(scenario *s, const gpuipc_msg_offer *offer, gpuipc_msg_report *report)
{
    gpuipc_env *env = s->env;
    char text[256], why[GPUIPC_ERR_LEN];
    uint64_t t, seed;
    int honest, skipped;

    gpuipc_env_at(env, GPUIPC_STEP_VERIFY);
    s->words = s->buf.view.size / 8;
    t = gpuipc_clock_ns();
    if (gpuipc_role_read(env, &s->buf.view, offer->seed, &report->check, &honest, &s->err) < 0) {
        fail(s, GPUIPC_STEP_VERIFY, s->err.msg);
        return;
    }
    report->check.ns = gpuipc_clock_ns() - t;
    gpuipc_laps_add(env->laps, GPUIPC_LAP_TOUCH, t);
    gpuipc_pattern_describe(&report->check, s->buf.view.first_word, text, sizeof(text));
    if (report->check.mismatches) {
        snprintf(why, sizeof(why), "the producer's bytes: %s", text);
        fail(s, GPUIPC_STEP_VERIFY, why);
    } else if (honest && gpuipc_role_judge(&report->check, s->words, &offer->wrote,
                                           "this side", why, sizeof(why)) < 0) {
        char line[GPUIPC_ERR_LEN];

        snprintf(line, sizeof(line), "the producer's bytes: %.440s", why);
        fail(s, GPUIPC_STEP_VERIFY, line);
    } else {
        snprintf(text + strlen(text), sizeof(text) - strlen(text), " from the producer, "
                 "digest 0x%016llx%s, %.1f GB/s", (unsigned long long)report->check.digest,
                 honest ? " as written" : " (SABOTAGE: read test hook)",
                 gpuipc_units_gbps(s->buf.size, report->check.ns));
        log_step(s, GPUIPC_STEP_VERIFY, t, text);
    }
    check_alt(s, GPUIPC_STEP_VERIFY, offer->seed, &offer->wrote, "the producer's bytes");

    /* A read-only mapping must refuse writes; this side proves that instead
     * of writing, and the producer checks that its bytes did not change. */
    if (s->mech->prove_read_only != NULL) {
        gpuipc_env_at(env, GPUIPC_STEP_WRITE);
        t = gpuipc_clock_ns();
        if (s->mech->prove_read_only(env, &s->buf, &s->err) < 0) {
            fail(s, GPUIPC_STEP_WRITE, s->err.msg);
        } else {
            snprintf(text, sizeof(text), "refused, as it must be: %.200s", s->err.msg);
            log_step(s, GPUIPC_STEP_WRITE, t, text);
        }
        return;
    }

    /* Write even after a failed verification: the other direction is a
     * separate question with its own answer. */
    gpuipc_env_at(env, GPUIPC_STEP_WRITE);
    seed = gpuipc_pattern_seed(offer->seed);
    t = gpuipc_clock_ns();
    memset(&s->wrote, 0, sizeof(s->wrote));
    skipped = gpuipc_inject_sabotage(&env->inject, env->role, GPUIPC_SABOTAGE_SKIP_WRITE);
    if (skipped) {
        log_step(s, GPUIPC_STEP_WRITE, t, "SABOTAGE: pattern not written (test hook)");
    } else if (s->buf.view.ops->fill(&s->buf.view, seed, &s->wrote, &s->err) < 0) {
        fail(s, GPUIPC_STEP_WRITE, s->err.msg);
        return;
    } else if (s->wrote.words != s->words) {
        snprintf(why, sizeof(why), "the fill wrote %llu of %llu words",
                 (unsigned long long)s->wrote.words, (unsigned long long)s->words);
        fail(s, GPUIPC_STEP_WRITE, why);
        return;
    } else {
        s->wrote.ns = gpuipc_clock_ns() - t;
        snprintf(text, sizeof(text), "pattern seed 0x%016llx, %.1f GB/s written, digest "
                 "0x%016llx", (unsigned long long)seed, gpuipc_units_gbps(s->buf.size, s->wrote.ns),
                 (unsigned long long)s->wrote.digest);
        log_step(s, GPUIPC_STEP_WRITE, t, text);
        if (gpuipc_role_flip(env, GPUIPC_STEP_WRITE, &s->buf.view, seed, &s->err) < 0) {
            fail(s, GPUIPC_STEP_WRITE, s->err.msg);
            return;
        }
    }
    s->wrote_any = 1;
    report->flags |= GPUIPC_REPORT_WROTE;
    report->seed = seed;
    report->wrote = s->wrote;
    /* Under the skip-write hook there is no write of this side's to read
     * back: the producer's check of it is what must fail. */
    if (!skipped)
        check_alt(s, GPUIPC_STEP_WRITE, seed, &s->wrote, "this side's own write");
    if (s->flags & GPUIPC_BEGIN_BANDWIDTH)
        run_bandwidth(s, seed);
    if (gpuipc_inject_sabotage(&env->inject, env->role, GPUIPC_SABOTAGE_WRONG_SEED))
        report->seed = seed ^ WRONG_SEED_MASK;
}

/* C6a: the producer's check in END must have read every word of what it
 * checked (this side's pattern, or its own under a read-only mapping) and,
 * where it found them right, the digest written: a producer that did not
 * read cannot pass this side's bytes. */
static void judge_end(scenario *s, const gpuipc_msg_end *end, const gpuipc_msg_offer *offer)
{
    const gpuipc_written *w = s->wrote_any ? &s->wrote : &offer->wrote;
    char why[GPUIPC_ERR_LEN];

    if (end->st.code != GPUIPC_PASS || s->mine.code != GPUIPC_PASS || s->words == 0 ||
        (!s->wrote_any && s->mech->prove_read_only == NULL))
        return;
    if (gpuipc_role_judge(&end->check, s->words, w, "the producer", why, sizeof(why)) < 0) {
        char line[GPUIPC_ERR_LEN];

        snprintf(line, sizeof(line), "the producer's check of %s: %.400s",
                 s->wrote_any ? "this side's bytes" : "its own bytes", why);
        fail(s, GPUIPC_STEP_END, line);
    }
}

static void release_buf(scenario *s)
{
    uint64_t t = gpuipc_clock_ns();

    if (!s->have_buf)
        return;
    s->have_buf = 0;
    if (gpuipc_role_release(s->env, s->mech, s->name, &s->buf, &s->err) < 0)
        fail(s, GPUIPC_STEP_RELEASE, s->err.msg);
    gpuipc_laps_add(s->env->laps, GPUIPC_LAP_RELEASE, t);
}

/* Sends n values of series in TIMES slices; last marks the final slice as
 * the scenario's last TIMES. Returns 0 or a negative errno. */
static int send_series(scenario *s, unsigned series, const uint64_t *v, unsigned n, int last)
{
    unsigned first = 0;
    gpuipc_msg msg;

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
        if (send_msg(s, &msg, GPUIPC_STEP_END_ACK, GPUIPC_STEP_BEGIN) < 0)
            return -EPIPE;
    } while (first < n);
    return 0;
}

/* --bench: after END_ACK, this side's laps, the FDS batches' arrival times
 * and the bandwidth samples (zero where a run did not happen), the last
 * marked so. Returns 0 or a negative errno. */
static int send_times(scenario *s)
{
    int bw = (s->flags & GPUIPC_BEGIN_BANDWIDTH) != 0;
    unsigned i;

    s->laps.ns[GPUIPC_LAP_HWM] = gpuipc_proc_hwm();
    if (send_series(s, GPUIPC_SERIES_LAPS, s->laps.ns, GPUIPC_LAP_COUNT,
                    s->nfds_recv == 0 && !bw) < 0)
        return -EPIPE;
    if (s->nfds_recv > 0 &&
        send_series(s, GPUIPC_SERIES_FDS_RECV, s->fds_recv, s->nfds_recv, !bw) < 0)
        return -EPIPE;
    for (i = 0; bw && i < GPUIPC_BW_COUNT; i++) {
        static const uint64_t zero[GPUIPC_WIRE_TIMES_MAX];
        const uint64_t *v = s->bw[i] != NULL ? s->bw[i] : zero;
        unsigned n = s->bw[i] != NULL ? s->iters : 1;

        if (send_series(s, GPUIPC_SERIES_BW_FIRST + i, v, n, i + 1 == GPUIPC_BW_COUNT) < 0)
            return -EPIPE;
    }
    return 0;
}

static void free_bench(scenario *s)
{
    unsigned i;

    for (i = 0; i < GPUIPC_BW_COUNT; i++) {
        free(s->bw[i]);
        s->bw[i] = NULL;
    }
    s->env->laps = NULL;
}

/* Says once, where this process has a GPU, whether NVML can attribute GPU
 * memory to it: if not, the producer's summary can only say so, and this
 * line says why. */
static void note_accounting(scenario *s, const gpuipc_usage *u)
{
    static int said;

    if (said || s->env->gpu == NULL)
        return;
    said = 1;
    if (u->gpu == GPUIPC_USAGE_UNKNOWN)
        gpuipc_log_step(&s->env->log, GPUIPC_LOG_NORMAL, s->name, GPUIPC_STEP_PROBE,
                        GPUIPC_LOG_NO_TIME, "accounting: GPU memory by NVML is not "
                        "attributable here: %.300s; FDs, driver objects and shared memory are "
                        "counted", u->gpu_why.msg);
    else
        gpuipc_log_step(&s->env->log, GPUIPC_LOG_VERBOSE, s->name, GPUIPC_STEP_PROBE,
                        GPUIPC_LOG_NO_TIME, "accounting: this process holds %llu bytes of GPU "
                        "memory by NVML, %llu driver objects, %llu FDs",
                        (unsigned long long)u->gpu, (unsigned long long)u->objects.live,
                        (unsigned long long)u->fds.n);
}

/* C6b: what this process holds after the release must be what it held at
 * the baseline. */
static void count_leaks(scenario *s, const gpuipc_usage *before, unsigned step)
{
    /* A destructive scenario's context is lost: its memory goes back when
     * this process exits, which the producer waits for, so the driver's
     * figure would still show it here. Its own count (the ledger) stands. */
    gpuipc_usage_gpu_fn gpu = s->mech != NULL && s->mech->destructive ? NULL
                                                                       : s->env->gpu_bytes;
    gpuipc_err e;

    if (gpuipc_usage_leaks(before, gpu, GPUIPC_ENV_SETTLE_NS, &e) > 0) {
        char line[GPUIPC_ERR_LEN];

        snprintf(line, sizeof(line), "consumer leaked: %.480s", e.msg);
        fail(s, step, line);
    }
}

/* END_ACK: this side's verdict and what it holds now, for the soak. */
static int send_end_ack(scenario *s)
{
    gpuipc_usage now;
    gpuipc_msg msg;
    gpuipc_err e;

    gpuipc_env_at(s->env, GPUIPC_STEP_END_ACK);
    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_END_ACK;
    gpuipc_usage_take(&now, s->env->gpu_bytes, &e);
    gpuipc_usage_figures_of(&now, &msg.u.end_ack.usage);
    gpuipc_usage_free(&now);
    msg.u.end_ack.st = s->mine;
    return send_msg(s, &msg, GPUIPC_STEP_END_ACK, GPUIPC_STEP_BEGIN);
}

/* Runs one scenario. Returns GPUIPC_PASS or GPUIPC_FAIL for this side, or
 * -EPIPE if the connection broke (which ends the session). */
static int run_scenario(gpuipc_env *env, gpuipc_wire *w, const gpuipc_mech *const *mechs,
                        size_t n, const gpuipc_msg_begin *begin, gpuipc_err *first_fail,
                        unsigned *passed)
{
    static scenario zero;
    scenario s = zero;
    gpuipc_usage before;
    int have_before = 0;
    gpuipc_msg_offer offer;
    gpuipc_msg msg;
    gpuipc_err e;
    int rc, end_passed = 0;

    s.env = env;
    s.w = w;
    s.name = begin->mech;
    s.flags = begin->flags;
    s.iters = begin->iters;
    memset(&offer, 0, sizeof(offer));
    env->laps = (s.flags & GPUIPC_BEGIN_TIMES) ? &s.laps : NULL;
    if (env->laps != NULL) {
        /* The peak reported is this scenario's; the session's is kept. */
        uint64_t hwm = gpuipc_proc_hwm();

        if (hwm > session_hwm)
            session_hwm = hwm;
        gpuipc_proc_reset_hwm();
    }
    gpuipc_wire_status(&s.mine, GPUIPC_PASS, GPUIPC_STEP_NONE, NULL);

    /* C1 probe, C2 READY. The baseline comes after the probe, which may
     * have opened the driver or the device for the first time. */
    probe(&s, mechs, n, begin);
    if (gpuipc_usage_take(&before, env->gpu_bytes, &e) < 0)
        fail(&s, GPUIPC_STEP_PROBE, e.msg);
    have_before = 1;
    note_accounting(&s, &before);
    if (env->session_check)
        gpuipc_session_usage_note(&env->session, env->uuid, env->gpu_bytes);
    if (send_ready(&s) < 0)
        goto lost;

    /* P4 OFFER (and FDS); C3, C4; C5 REPORT */
    s.laps.ns[GPUIPC_LAP_OFFER_WAIT] = gpuipc_clock_ns();
    rc = recv_msg(&s, GPUIPC_MSG_OFFER, &msg, GPUIPC_STEP_OFFER);
    s.laps.ns[GPUIPC_LAP_OFFER_RECV] = gpuipc_clock_ns();
    if (rc == -EMFILE) /* the offer is sound, its FDs did not all fit */
        fail(&s, GPUIPC_STEP_IMPORT, s.err.msg);
    else if (rc < 0)
        goto lost;
    {
        unsigned got = msg.nfds;
        int whole;

        offer = msg.u.offer;
        if (s.mine.code == GPUIPC_PASS && offer.st.code == GPUIPC_PASS &&
            offer.size < begin->size) {
            char why[160];

            snprintf(why, sizeof(why), "the offer holds %llu bytes, but BEGIN asked for %llu: "
                     "the producer does not share what it announced",
                     (unsigned long long)offer.size, (unsigned long long)begin->size);
            fail(&s, GPUIPC_STEP_IMPORT, why);
        }
        if (s.mine.code == GPUIPC_PASS && offer.st.code == GPUIPC_PASS)
            import_offer(&s, &offer);
        gpuipc_wire_close_fds(s.fds, s.nfds);
        s.nfds = 0;
        if (import_more(&s, &offer, got, &whole) < 0)
            goto lost;
        memset(&msg, 0, sizeof(msg));
        if (s.mine.code == GPUIPC_PASS && offer.st.code == GPUIPC_PASS && whole)
            use_offer(&s, &offer, &msg.u.report);
    }
    gpuipc_env_at(env, GPUIPC_STEP_REPORT);
    msg.type = GPUIPC_MSG_REPORT;
    msg.u.report.st = s.mine;
    if (send_msg(&s, &msg, GPUIPC_STEP_REPORT, GPUIPC_STEP_END) < 0)
        goto lost;

    /* P6 END; C6 judge it, release and count; C7 END_ACK */
    if (recv_msg(&s, GPUIPC_MSG_END, &msg, GPUIPC_STEP_END) < 0)
        goto lost;
    if (msg.u.end.st.code == GPUIPC_FAIL)
        gpuipc_log_step(&env->log, GPUIPC_LOG_NORMAL, s.name, GPUIPC_STEP_END,
                        GPUIPC_LOG_NO_TIME, "the producer reports a failure: %s",
                        msg.u.end.st.reason);
    judge_end(&s, &msg.u.end, &offer);
    /* Passed, as far as this side can tell: its own checks held, and the
     * producer's check of its bytes (judged above) said so too. */
    end_passed = msg.u.end.st.code == GPUIPC_PASS;
    release_buf(&s);
    count_leaks(&s, &before, GPUIPC_STEP_RELEASE);
    gpuipc_inject_leak_fd(&env->inject, env->role);
    if (send_end_ack(&s) < 0)
        goto lost;
    if ((s.flags & GPUIPC_BEGIN_TIMES) && send_times(&s) < 0)
        goto lost;
    free_bench(&s);
    gpuipc_usage_free(&before);
    if (s.mine.code != GPUIPC_PASS && first_fail->msg[0] == '\0')
        snprintf(first_fail->msg, sizeof(first_fail->msg), "%s: %s", s.name, s.mine.reason);
    if (s.mine.code == GPUIPC_PASS && end_passed)
        (*passed)++;
    return s.mine.code == GPUIPC_PASS ? GPUIPC_PASS : GPUIPC_FAIL;

lost:
    log_fail(&s, (unsigned)env->step, s.err.msg);
    env->lost_reported = 1;
    gpuipc_wire_close_fds(s.fds, s.nfds);
    s.nfds = 0;
    release_buf(&s);
    /* What this process holds is its own to count, peer or no peer. */
    if (have_before && gpuipc_usage_leaks(&before, env->gpu_bytes, GPUIPC_ENV_SETTLE_NS,
                                          &e) > 0)
        gpuipc_log_step(&env->log, GPUIPC_LOG_QUIET, s.name, GPUIPC_STEP_RELEASE,
                        GPUIPC_LOG_NO_TIME, "FAIL consumer leaked: %s", e.msg);
    if (have_before)
        gpuipc_usage_free(&before);
    free_bench(&s);
    snprintf(first_fail->msg, sizeof(first_fail->msg), "%s", s.err.msg);
    return -EPIPE;
}

/* Answers PROBE with PROBE_ACK. Returns 0, or a negative errno if the
 * connection broke (err says why). */
static int answer_probe(gpuipc_env *env, gpuipc_wire *w, const gpuipc_mech *const *mechs,
                        size_t n, const gpuipc_msg_probe *probe, gpuipc_err *err)
{
    gpuipc_msg msg;

    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_PROBE_ACK;
    probe_mech(env, mechs, n, probe->mech, probe->uuid, probe->consumer_uuid, &msg.u.probe_ack);
    env->step = GPUIPC_STEP_BEGIN; /* as in send_msg() */
    return gpuipc_wire_send(w, &msg, NULL, gpuipc_clock_deadline(env->timeout_ns),
                            GPUIPC_STEP_PROBE, err);
}

/* BYE: this side's last checks (what it holds now against the reference of
 * its scenarios), answered in BYE_ACK; the session's status follows from
 * the producer's verdict and this side's. */
/* The producer's verdict against what this side saw: it can count no more
 * scenarios passed than this side saw pass (the producer may still fail
 * one after END, at its own release), and a PASS needs at least one. A
 * verdict that claims more is a failure of this side, named in why.
 * Returns 0 or -1. */
static int judge_bye(const gpuipc_msg_bye *bye, unsigned passed, char *why, size_t len)
{
    if (bye->passed > passed) {
        snprintf(why, len, "the producer's BYE counts %u passed, but this side saw %u "
                 "scenario%s pass: it does not speak for what ran here", bye->passed, passed,
                 passed == 1 ? "" : "s");
        return -1;
    }
    if (bye->code == GPUIPC_PASS && passed == 0) {
        snprintf(why, len, "the producer's BYE says PASS, but this side saw no scenario pass");
        return -1;
    }
    return 0;
}

static void answer_bye(gpuipc_env *env, gpuipc_wire *w, const gpuipc_msg_bye *bye,
                       unsigned passed, gpuipc_session_end *end)
{
    char why[GPUIPC_ERR_LEN];
    gpuipc_msg msg;
    gpuipc_err e, err;

    end->said_bye = 1;
    end->bye = *bye;
    if (judge_bye(bye, passed, why, sizeof(why)) < 0) {
        gpuipc_log_step(&env->log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_BYE, GPUIPC_LOG_NO_TIME,
                        "FAIL %s", why);
        end->own = GPUIPC_FAIL;
        if (end->reason[0] == '\0')
            snprintf(end->reason, sizeof(end->reason), "%s", why);
    }
    env->step = GPUIPC_STEP_BYE_ACK;
    gpuipc_env_at(env, GPUIPC_STEP_BYE_ACK);
    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_BYE_ACK;
    gpuipc_wire_status(&msg.u.bye_ack, GPUIPC_PASS, GPUIPC_STEP_NONE, NULL);
    /* After a failed scenario the verdict is a failure already, and what it
     * left behind has been named: the last checks would only say it again. */
    if (end->own == GPUIPC_PASS &&
        (gpuipc_session_usage_leaks(&env->session, env->gpu_bytes, GPUIPC_ENV_SETTLE_NS, &e) >
             0 ||
         (env->last_check != NULL && env->last_check(env, &e) > 0))) {
        gpuipc_wire_status_fail(&msg.u.bye_ack, GPUIPC_STEP_BYE_ACK, "consumer, at the end of "
                                "the session: %s (held now, not at its scenarios' baseline)",
                                e.msg);
        gpuipc_log_step(&env->log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_BYE_ACK,
                        GPUIPC_LOG_NO_TIME, "FAIL %s", msg.u.bye_ack.reason);
        end->own = GPUIPC_FAIL;
        if (end->reason[0] == '\0')
            snprintf(end->reason, sizeof(end->reason), "%s", msg.u.bye_ack.reason);
    }
    {
        uint64_t ns, hwm = gpuipc_proc_hwm();
        unsigned count;

        gpuipc_usage_cost(&ns, &count);
        gpuipc_log_step(&env->log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_BYE_ACK,
                        GPUIPC_LOG_NO_TIME, "%u counts of what this process holds took %.1f "
                        "ms; peak RSS %.1f MiB", count, (double)ns / 1e6,
                        (double)(hwm > session_hwm ? hwm : session_hwm) / 1048576.0);
    }
    /* A failure of a scenario (the producer heard of it in END_ACK) travels
     * with no step; one of the last checks with this one's. */
    if (end->own != GPUIPC_PASS)
        gpuipc_wire_status_fail(&msg.u.bye_ack, GPUIPC_STEP_NONE, "%s", end->reason);
    /* The producer may be gone already; its verdict stands either way. */
    gpuipc_wire_send(w, &msg, NULL, gpuipc_clock_deadline(env->timeout_ns), GPUIPC_STEP_BYE_ACK,
                     &err);
    end->code = end->own != GPUIPC_PASS ? GPUIPC_FAIL : bye->code;
}

static int serve(gpuipc_env *env, gpuipc_wire *w, const gpuipc_mech *const *mechs, size_t n,
                 gpuipc_session_end *end);

int gpuipc_consumer_serve(gpuipc_env *env, gpuipc_wire *w, const gpuipc_mech *const *mechs,
                          size_t n, gpuipc_session_end *end)
{
    int code = serve(env, w, mechs, n, end);

    /* Whatever way the session ended, its reference goes with it. */
    gpuipc_session_usage_free(&env->session);
    return code;
}

static int serve(gpuipc_env *env, gpuipc_wire *w, const gpuipc_mech *const *mechs, size_t n,
                 gpuipc_session_end *end)
{
    int fds[GPUIPC_WIRE_MAX_FDS];
    gpuipc_msg msg;
    gpuipc_err err, first_fail;
    unsigned passed = 0; /* scenarios this side saw pass */
    int rc;

    memset(end, 0, sizeof(*end));
    end->own = GPUIPC_PASS;
    end->code = GPUIPC_FAIL;
    gpuipc_err_clear(&first_fail);
    env->wire = w;
    gpuipc_env_at(env, GPUIPC_STEP_HELLO);
    rc = gpuipc_wire_recv(w, GPUIPC_MSG_BIT(GPUIPC_MSG_HELLO), &msg, fds,
                          gpuipc_clock_deadline(env->timeout_ns), GPUIPC_STEP_HELLO, &err);
    if (rc == 0 && msg.u.hello.role != GPUIPC_ROLE_PRODUCER)
        rc = gpuipc_err_set(&err, -EPROTO, "hello: the peer (pid %u) is not a producer",
                            msg.u.hello.pid);
    if (rc == 0) {
        unsigned flags = msg.u.hello.flags;

        env->peer_pid = gpuipc_env_peer_pid(env, msg.u.hello.pid);
        env->peer_facts = msg.u.hello.facts;
        env->have_peer_facts = 1;
        gpuipc_facts_gather(&env->facts);
        memset(&msg, 0, sizeof(msg));
        msg.type = GPUIPC_MSG_HELLO;
        msg.u.hello.pid = (uint32_t)getpid();
        msg.u.hello.role = GPUIPC_ROLE_CONSUMER;
        msg.u.hello.facts = env->facts;
        env->step = GPUIPC_STEP_BEGIN; /* as in send_msg() */
        rc = gpuipc_wire_send(w, &msg, NULL, gpuipc_clock_deadline(env->timeout_ns),
                              GPUIPC_STEP_HELLO, &err);
        if (rc == 0 && (flags & GPUIPC_HELLO_NEEDS_CUDA) && env->prepare_cuda != NULL)
            env->prepare_cuda(env);
    }
    if (rc < 0) {
        gpuipc_log_step(&env->log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_HELLO,
                        GPUIPC_LOG_NO_TIME, "FAIL %s", err.msg);
        env->lost_reported = 1;
        end->own = GPUIPC_FAIL;
        snprintf(end->reason, sizeof(end->reason), "%s", err.msg);
        return end->code;
    }

    for (;;) {
        /* Between scenarios the consumer waits for PROBE, BEGIN or BYE. The
         * step it names if the producer vanishes here is BEGIN. */
        env->step = GPUIPC_STEP_BEGIN;
        rc = gpuipc_wire_recv(w, GPUIPC_MSG_BIT(GPUIPC_MSG_BEGIN) | GPUIPC_MSG_BIT(GPUIPC_MSG_BYE) |
                                     GPUIPC_MSG_BIT(GPUIPC_MSG_PROBE),
                              &msg, fds, gpuipc_clock_deadline(env->timeout_ns),
                              GPUIPC_STEP_BEGIN, &err);
        if (rc == 0 && msg.type == GPUIPC_MSG_PROBE) {
            rc = answer_probe(env, w, mechs, n, &msg.u.probe, &err);
            if (rc == 0)
                continue;
        }
        if (rc < 0) {
            gpuipc_log_step(&env->log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_BEGIN,
                            GPUIPC_LOG_NO_TIME, "FAIL %s", err.msg);
            env->lost_reported = 1;
            end->own = GPUIPC_FAIL;
            snprintf(end->reason, sizeof(end->reason), "%s", err.msg);
            return end->code;
        }
        if (msg.type == GPUIPC_MSG_BYE) {
            answer_bye(env, w, &msg.u.bye, passed, end);
            return end->code;
        }
        rc = run_scenario(env, w, mechs, n, &msg.u.begin, &first_fail, &passed);
        if (rc != GPUIPC_PASS) {
            end->own = GPUIPC_FAIL;
            if (end->reason[0] == '\0')
                snprintf(end->reason, sizeof(end->reason), "%s", first_fail.msg);
        }
        if (rc < 0)
            return end->code;
        /* After a destructive scenario this process's context is lost:
         * exiting is what gives its mapping back, and the producer waits
         * for exactly that. Its status is its own side's. */
        if (env->mech != NULL && env->mech->destructive) {
            env->step = GPUIPC_STEP_BYE;
            end->code = end->own;
            return end->code;
        }
    }
}
