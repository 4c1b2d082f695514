/* SPDX-License-Identifier: Apache-2.0 */
/* consumer.c: the consumer's side of the session: HELLO (in a job, with
 * both proofs), answering each PROBE, running each scenario
 * (consumer_scenario.c, where it imports what the producer offers, verifies
 * the producer's pattern, writes its own and releases everything before it
 * answers END), and judging the producer's verdict in BYE. The messages and
 * their order: docs/protocol.md. Its verdict, on each scenario and on the
 * session, comes from what it checked itself: the producer's word (END,
 * BYE) can only lower it. */
#include "session/consumer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/account.h"
#include "core/clock.h"
#include "core/proc.h"
#include "core/status.h"
#include "core/step.h"
#include "core/stop.h"
#include "session/consumer_phase.h"
#include "session/consumer_scenario.h"
#include "session/proof.h"
#include "session/role.h"

/* Answers PROBE with PROBE_ACK. Returns 0, or a negative errno if the
 * connection broke (err says why). */
static int answer_probe(gpuipc_consumer_session *cs, const gpuipc_msg_probe *probe,
                        gpuipc_err *err)
{
    gpuipc_scenario sc;
    gpuipc_msg msg;

    gpuipc_role_start(&sc, cs->env, cs->w, NULL, probe->mech);
    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_PROBE_ACK;
    gpuipc_consumer_probe(cs, &sc, probe->mech, probe->uuid, probe->consumer_uuid,
                          &msg.u.probe_ack, err);
    gpuipc_env_waits(cs->env, GPUIPC_STEP_BEGIN);
    return gpuipc_wire_send(cs->w, &msg, NULL, gpuipc_clock_deadline(cs->env->timeout_ns),
                            GPUIPC_STEP_PROBE, err);
}

/* The producer's verdict against what this side saw: it can count no more
 * scenarios passed than this side saw pass (the producer may still fail
 * one after END, at its own release), a PASS needs at least one, a failure
 * its END said stands, and after a pass nothing can be a skip or a usage
 * error. A verdict that claims otherwise is a failure of this side, named
 * in why. Returns 0 or -1. */
static int judge_bye(const gpuipc_consumer_session *cs, const gpuipc_msg_bye *bye, char *why,
                     size_t len)
{
    unsigned passed = cs->passed;

    /* A failure the producer said in an END is its verdict's too. */
    if (bye->code != GPUIPC_FAIL && cs->producer_failed > 0) {
        snprintf(why, len, "the producer's BYE says %s, but its END said it failed %u "
                 "scenario%s here: it does not speak for what ran here",
                 gpuipc_exit_word(bye->code), cs->producer_failed, cs->producer_failed == 1 ? "" : "s");
        return -1;
    }
    /* Nothing could run (77), or the options were refused (2), after this
     * side saw a scenario pass: this side knows better. */
    if (bye->code != GPUIPC_PASS && bye->code != GPUIPC_FAIL && passed > 0) {
        snprintf(why, len, "the producer's BYE says %s (%s), but this side saw %u scenario%s "
                 "pass: it does not speak for what ran here",
                 gpuipc_exit_word(bye->code),
                 bye->code == GPUIPC_SKIP ? "nothing could run" : "its options were refused",
                 passed, passed == 1 ? "" : "s");
        return -1;
    }
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

/* This side fails the session at step for why (the first reason kept). */
static void end_fail(gpuipc_consumer_session *cs, gpuipc_session_end *end, unsigned step,
                     const char *why)
{
    gpuipc_log_step(&cs->env->log, GPUIPC_LOG_QUIET, NULL, step, GPUIPC_LOG_NO_TIME, "%s %s",
                    gpuipc_stop_fail_word(), why);
    end->own = GPUIPC_FAIL;
    if (end->reason[0] == '\0')
        snprintf(end->reason, sizeof(end->reason), "%s", why);
}

/* The -v line on what counting cost and the peak RSS over the session. */
static void say_costs(gpuipc_consumer_session *cs)
{
    uint64_t ns, hwm = gpuipc_proc_hwm();
    unsigned count;

    gpuipc_usage_cost(&ns, &count);
    gpuipc_log_step(&cs->env->log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_BYE_ACK,
                    GPUIPC_LOG_NO_TIME, "%u counts of what this process holds took %.1f ms; "
                    "peak RSS %.1f MiB", count, (double)ns / 1e6,
                    (double)(hwm > cs->hwm ? hwm : cs->hwm) / 1048576.0);
}

/* BYE: the producer's verdict, judged against what this side saw; this
 * side's last checks (what it holds now against the reference of its
 * scenarios), answered in BYE_ACK; the session's status follows from both
 * sides' verdicts. */
static void answer_bye(gpuipc_consumer_session *cs, const gpuipc_msg_bye *bye,
                       gpuipc_session_end *end)
{
    gpuipc_env *env = cs->env;
    char why[GPUIPC_ERR_LEN];
    gpuipc_msg msg;
    gpuipc_err e, err;

    end->said_bye = 1;
    end->bye = *bye;
    if (judge_bye(cs, bye, why, sizeof(why)) < 0)
        end_fail(cs, end, GPUIPC_STEP_BYE, why);
    gpuipc_env_at(env, cs->w, GPUIPC_STEP_BYE_ACK);
    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_BYE_ACK;
    gpuipc_wire_status(&msg.u.bye_ack, GPUIPC_PASS, GPUIPC_STEP_NONE, NULL);
    /* After a failure the verdict is a failure already, and what it left
     * behind has been named: the last checks would only say it again. */
    if (end->own == GPUIPC_PASS &&
        (gpuipc_session_usage_leaks(&env->session, env->gpu_bytes, GPUIPC_ENV_SETTLE_NS, &e) >
             0 ||
         (env->last_check != NULL && env->last_check(env, env->last_check_arg, cs->w, &e) > 0))) {
        gpuipc_wire_status_err(&msg.u.bye_ack, GPUIPC_STEP_BYE_ACK, &e, "consumer, at the end "
                               "of the session: %s (held now, not at its scenarios' baseline)",
                               e.msg);
        end_fail(cs, end, GPUIPC_STEP_BYE_ACK, msg.u.bye_ack.reason);
    }
    say_costs(cs);
    /* A failure of a scenario (the producer heard of it in END_ACK) travels
     * with no step; one of the last checks with this one's. */
    if (end->own != GPUIPC_PASS)
        gpuipc_wire_status_fail(&msg.u.bye_ack, GPUIPC_STEP_NONE, "%s", end->reason);
    /* The producer may be gone already; its verdict stands either way. */
    gpuipc_wire_send(cs->w, &msg, NULL, gpuipc_clock_deadline(env->timeout_ns),
                     GPUIPC_STEP_BYE_ACK, &err);
    end->code = end->own != GPUIPC_PASS ? GPUIPC_FAIL : bye->code;
}

/* In a job, after the producer's HELLO (in msg): this side's HELLO with its
 * nonce and its proof, then the producer's AUTH, whose proof must hold
 * before this side says anything more; then this side's facts in AUTH. The
 * producer's facts go into msg's HELLO. Returns 0, or a negative errno with
 * err (-EACCES: refused, named). */
static int prove(gpuipc_consumer_session *cs, gpuipc_msg *msg, gpuipc_err *err)
{
    gpuipc_env *env = cs->env;
    uint8_t nonce_p[GPUIPC_WIRE_NONCE_LEN], nonce_c[GPUIPC_WIRE_NONCE_LEN];
    uint8_t key[GPUIPC_WIRE_KEY_LEN];
    int fds[GPUIPC_WIRE_MAX_FDS];
    uint32_t pid = msg->u.hello.pid, flags = msg->u.hello.flags;
    int rc;

    if (msg->u.hello.rank != env->peer_rank || msg->u.hello.peer_rank != env->rank)
        return gpuipc_err_set(err, -EACCES, "hello: refused the producer (pid %u): its HELLO "
                              "is for pair %u -> %u, and this is pair %u -> %u (a process "
                              "that is not the rank this side waits for)", pid,
                              msg->u.hello.rank, msg->u.hello.peer_rank, env->peer_rank,
                              env->rank);
    memcpy(nonce_p, msg->u.hello.nonce, sizeof(nonce_p));
    if ((rc = gpuipc_proof_nonce(nonce_c, err)) < 0)
        return rc;
    memset(msg, 0, sizeof(*msg));
    msg->type = GPUIPC_MSG_HELLO;
    msg->u.hello.pid = (uint32_t)getpid();
    msg->u.hello.role = GPUIPC_ROLE_CONSUMER;
    msg->u.hello.rank = env->rank;
    msg->u.hello.peer_rank = env->peer_rank;
    memcpy(msg->u.hello.nonce, nonce_c, sizeof(nonce_c));
    if ((rc = gpuipc_proof_make(env, GPUIPC_ROLE_CONSUMER, nonce_p, nonce_c, env->peer_rank,
                                env->rank, msg->u.hello.mac)) < 0)
        return gpuipc_err_set(err, rc, "hello: this rank's token is not 32 hex digits");
    gpuipc_env_waits(env, GPUIPC_STEP_HELLO);
    if ((rc = gpuipc_wire_send(cs->w, msg, NULL, gpuipc_clock_deadline(env->timeout_ns),
                               GPUIPC_STEP_HELLO, err)) < 0)
        return rc;
    /* From AUTH on, every frame is sealed under the session's key: one that
     * does not hold comes from a process without the job's token (it made
     * another key), or was altered on the way. */
    if ((rc = gpuipc_proof_session_key(env, nonce_p, nonce_c, env->peer_rank, env->rank,
                                       flags, key)) < 0)
        return gpuipc_err_set(err, rc, "hello: this rank's token is not 32 hex digits");
    gpuipc_wire_seal(cs->w, key, GPUIPC_ROLE_CONSUMER, GPUIPC_ROLE_PRODUCER);
    explicit_bzero(key, sizeof(key));
    rc = gpuipc_wire_recv(cs->w, GPUIPC_MSG_BIT(GPUIPC_MSG_AUTH), msg, fds,
                          gpuipc_clock_deadline(env->timeout_ns), GPUIPC_STEP_HELLO, err);
    if (rc == -EBADMSG)
        return gpuipc_err_set(err, -EACCES, "hello: refused the producer (pid %u): its AUTH "
                              "does not prove this job's token (it is not sealed under the "
                              "session's key, HMAC-SHA256 over the token, both nonces and "
                              "ranks): a process that is not rank %u of this job, or of "
                              "another job, or a frame altered on the way", pid,
                              env->peer_rank);
    if (rc < 0)
        return rc;
    if (msg->u.auth.pid != pid ||
        !gpuipc_proof_holds(env, GPUIPC_ROLE_PRODUCER, nonce_p, nonce_c, env->peer_rank,
                            env->rank, msg->u.auth.mac))
        return gpuipc_err_set(err, -EACCES, "hello: refused the producer (pid %u): its AUTH "
                              "does not prove this job's token (HMAC-SHA256 over both nonces "
                              "and ranks): a process that is not rank %u of this job, or of "
                              "another job, or a HELLO replayed", pid, env->peer_rank);
    env->peer_facts = msg->u.auth.facts;
    memset(msg, 0, sizeof(*msg));
    msg->type = GPUIPC_MSG_AUTH;
    msg->u.auth.pid = (uint32_t)getpid();
    msg->u.auth.facts = env->facts;
    /* Where the caller reads them: the producer's pid, flags and facts. */
    rc = gpuipc_wire_send(cs->w, msg, NULL, gpuipc_clock_deadline(env->timeout_ns),
                          GPUIPC_STEP_HELLO, err);
    msg->u.hello.pid = pid;
    msg->u.hello.flags = flags;
    msg->u.hello.facts = env->peer_facts;
    return rc;
}

/* HELLO: the producer's, then this side's (in a job, with both proofs and
 * then the facts), and CUDA started early if the producer says it will be
 * needed. Returns 0 or a negative errno with err. */
static int hello(gpuipc_consumer_session *cs, gpuipc_err *err)
{
    gpuipc_env *env = cs->env;
    int fds[GPUIPC_WIRE_MAX_FDS];
    gpuipc_msg msg;
    unsigned flags;
    int rc;

    gpuipc_env_at(env, cs->w, GPUIPC_STEP_HELLO);
    rc = gpuipc_wire_recv(cs->w, GPUIPC_MSG_BIT(GPUIPC_MSG_HELLO), &msg, fds,
                          gpuipc_clock_deadline(env->timeout_ns), GPUIPC_STEP_HELLO, err);
    if (rc < 0)
        return rc;
    if (msg.u.hello.role != GPUIPC_ROLE_PRODUCER)
        return gpuipc_err_set(err, -EPROTO, "hello: the peer (pid %u) is not a producer",
                              msg.u.hello.pid);
    gpuipc_facts_gather(&env->facts);
    if (env->token != NULL) {
        /* Before anything else: a process that is not of this job learns
         * nothing of this side but a nonce and a proof bound to its own. */
        if ((rc = prove(cs, &msg, err)) < 0)
            return rc;
        flags = msg.u.hello.flags;
        env->peer_pid = gpuipc_env_peer_pid(env, msg.u.hello.pid);
        env->have_peer_facts = 1;
        gpuipc_env_waits(env, GPUIPC_STEP_BEGIN);
    } else {
        flags = msg.u.hello.flags;
        env->peer_pid = gpuipc_env_peer_pid(env, msg.u.hello.pid);
        env->peer_facts = msg.u.hello.facts;
        env->have_peer_facts = 1;
        memset(&msg, 0, sizeof(msg));
        msg.type = GPUIPC_MSG_HELLO;
        msg.u.hello.pid = (uint32_t)getpid();
        msg.u.hello.role = GPUIPC_ROLE_CONSUMER;
        msg.u.hello.facts = env->facts;
        gpuipc_env_waits(env, GPUIPC_STEP_BEGIN);
        rc = gpuipc_wire_send(cs->w, &msg, NULL, gpuipc_clock_deadline(env->timeout_ns),
                              GPUIPC_STEP_HELLO, err);
    }
    if (rc == 0 && (flags & GPUIPC_HELLO_NEEDS_CUDA) && env->prepare_cuda != NULL)
        env->prepare_cuda(env, env->prepare_arg);
    return rc;
}

/* The session over cs: HELLO, then PROBE, BEGIN or BYE until BYE, a
 * destructive scenario or a broken connection. */
static int serve(gpuipc_consumer_session *cs, gpuipc_session_end *end)
{
    unsigned accept = GPUIPC_MSG_BIT(GPUIPC_MSG_BEGIN) | GPUIPC_MSG_BIT(GPUIPC_MSG_BYE) |
                      GPUIPC_MSG_BIT(GPUIPC_MSG_PROBE) |
                      (cs->env->phases ? GPUIPC_MSG_BIT(GPUIPC_MSG_PHASE) : 0);
    int fds[GPUIPC_WIRE_MAX_FDS], rc, own, passed;
    const gpuipc_mech *m;
    gpuipc_env *env = cs->env;
    gpuipc_msg msg;
    gpuipc_err err;

    if ((rc = hello(cs, &err)) < 0) {
        /* Said first, then marked said: a parent-death signal between the
         * two must not leave the loss unsaid. */
        end_fail(cs, end, GPUIPC_STEP_HELLO, err.msg);
        end->errnum = -rc;
        env->lost_reported = 1;
        return end->code;
    }
    end->met = 1;
    for (;;) {
        /* Between scenarios the consumer waits for PROBE, BEGIN or BYE. The
         * step it names if the producer vanishes here is BEGIN. */
        gpuipc_env_waits(env, GPUIPC_STEP_BEGIN);
        rc = gpuipc_wire_recv(cs->w, accept, &msg, fds, gpuipc_clock_deadline(env->timeout_ns),
                              GPUIPC_STEP_BEGIN, &err);
        if (rc == 0 && msg.type == GPUIPC_MSG_PROBE && (rc = answer_probe(cs, &msg.u.probe,
                                                                          &err)) == 0)
            continue;
        if (rc == 0 && msg.type == GPUIPC_MSG_PHASE &&
            (rc = gpuipc_consumer_phase(cs, &msg.u.phase, fds, msg.nfds, &err)) == 0)
            continue;
        if (rc < 0) {
            end_fail(cs, end, GPUIPC_STEP_BEGIN, err.msg);
            end->errnum = -rc;
            env->lost_reported = 1;
            return end->code;
        }
        if (msg.type == GPUIPC_MSG_BYE) {
            char why[GPUIPC_ERR_LEN];

            /* The phases' workers' scenarios count before BYE is judged. */
            if (cs->phase_refused) {
                end->own = GPUIPC_FAIL;
                if (end->reason[0] == '\0')
                    snprintf(end->reason, sizeof(end->reason), "%s", cs->first_fail);
            }
            if (gpuipc_consumer_workers_end(cs, why, sizeof(why)) < 0) {
                end->own = GPUIPC_FAIL;
                if (end->reason[0] == '\0')
                    snprintf(end->reason, sizeof(end->reason), "%s", why);
            }
            answer_bye(cs, &msg.u.bye, end);
            return end->code;
        }
        rc = gpuipc_consumer_scenario(cs, &msg.u.begin, &own, &passed);
        cs->passed += (unsigned)passed;
        if (own != GPUIPC_PASS) {
            end->own = GPUIPC_FAIL;
            if (end->reason[0] == '\0')
                snprintf(end->reason, sizeof(end->reason), "%s", cs->first_fail);
        }
        if (rc < 0)
            return end->code;
        /* After a destructive scenario this process's context is lost:
         * exiting is what gives its mapping back, and the producer waits
         * for exactly that. Its status is its own side's. */
        m = gpuipc_mech_find(cs->mechs, cs->n, msg.u.begin.mech);
        if (m != NULL && m->destructive) {
            gpuipc_env_waits(env, GPUIPC_STEP_BYE);
            end->code = end->own;
            return end->code;
        }
    }
}

int gpuipc_consumer_serve(gpuipc_env *env, gpuipc_wire *w, const gpuipc_mech *const *mechs,
                          size_t n, gpuipc_session_end *end)
{
    static gpuipc_consumer_session zero;
    gpuipc_consumer_session cs = zero;
    int code;

    cs.env = env;
    cs.w = w;
    cs.mechs = mechs;
    cs.n = n;
    memset(end, 0, sizeof(*end));
    end->own = GPUIPC_PASS;
    end->code = GPUIPC_FAIL;
    code = serve(&cs, end);
    gpuipc_watch_step(GPUIPC_STEP_NONE, ""); /* the session is over */
    /* Whatever way the session ended, its reference goes with it. */
    gpuipc_session_usage_free(&env->session);
    return code;
}
