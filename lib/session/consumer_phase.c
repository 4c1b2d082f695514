/* SPDX-License-Identifier: Apache-2.0 */
/* consumer_phase.c: the consumer's side of the forked mode's phases, in
 * which the cells of a phase run at once (run/plan.h's schedule): PHASE's
 * first beginning brings one connection per worker, each served here on a
 * thread of its own as a scenario after another (BEGIN to END_ACK, as on
 * the session's own connection) until the producer closes it; each
 * beginning counts what this process holds, each end (once the workers
 * have ended the cells the producer names) counts again and answers
 * PHASE_ACK with what grew. A worker's scenarios count their own driver
 * objects (its ledger tag); the process's FDs, shared memory and GPU memory
 * are the phase's to count, since every worker moves them. */
#include "session/consumer_phase.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/account.h"
#include "core/clock.h"
#include "core/ledger.h"
#include "core/status.h"
#include "core/step.h"
#include "core/watch.h"
#include "session/consumer_scenario.h"

typedef struct worker {
    pthread_t thread;
    int started;
    unsigned index;              /* 0 ..: its tag is index + 1 */
    gpuipc_env env;              /* the session's, for one worker */
    gpuipc_consumer_session cs;  /* the session's, on this worker's connection */
    struct gpuipc_consumer_workers *all;
} worker;

struct gpuipc_consumer_workers {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    unsigned ended;              /* scenarios the workers ended, over the run */
    unsigned passed, producer_failed;
    int failed;                  /* a worker's scenario failed, or its connection broke */
    int broken;                  /* a worker's connection broke: it ends no more scenarios */
    char first_fail[GPUIPC_ERR_LEN];
    size_t n;
    worker w[GPUIPC_PHASE_MAX_WORKERS];
    gpuipc_usage base;           /* what the process held at the phase's beginning */
    int have_base;
};

/* One worker: scenarios on its connection until the producer closes it. A
 * connection that breaks in a scenario fails it (first_fail says why);
 * closed between scenarios, it is the end. */
static void *serve_worker(void *arg)
{
    worker *k = arg;
    struct gpuipc_consumer_workers *all = k->all;
    int fds[GPUIPC_WIRE_MAX_FDS], own, passed, rc;
    sigset_t block;
    gpuipc_msg msg;
    gpuipc_err err;

    /* The stop signals are the session's thread's to take. */
    sigfillset(&block);
    pthread_sigmask(SIG_BLOCK, &block, NULL);
    gpuipc_ledger_set_tag(k->index + 1);
    /* A side of its own on the watchdog's page: every cell in flight is
     * named at the deadline, not the last writer's. */
    gpuipc_watch_thread_worker(GPUIPC_ROLE_CONSUMER, k->index, -1);
    for (;;) {
        /* Between scenarios a worker waits without a deadline of its own:
         * the session's thread waits for PHASE and BYE under --timeout,
         * and the producer closes this connection at the end. */
        rc = gpuipc_wire_recv(k->cs.w, GPUIPC_MSG_BIT(GPUIPC_MSG_BEGIN), &msg, fds,
                              gpuipc_clock_deadline(24ull * 3600 * GPUIPC_NS_PER_S),
                              GPUIPC_STEP_BEGIN, &err);
        if (rc < 0) {
            pthread_mutex_lock(&all->lock);
            /* EPIPE between scenarios: the producer closed it (the end). */
            if (rc != -EPIPE)
                all->broken = 1;
            if (rc != -EPIPE && !all->failed) {
                all->failed = 1;
                snprintf(all->first_fail, sizeof(all->first_fail), "worker %u: %.400s",
                         k->index, err.msg);
            }
            pthread_cond_broadcast(&all->changed);
            pthread_mutex_unlock(&all->lock);
            break;
        }
        rc = gpuipc_consumer_scenario(&k->cs, &msg.u.begin, &own, &passed);
        pthread_mutex_lock(&all->lock);
        all->ended++;
        all->passed += (unsigned)passed;
        all->producer_failed += k->cs.producer_failed;
        k->cs.producer_failed = 0;
        if (rc < 0)
            all->broken = 1;
        if ((own != GPUIPC_PASS || rc < 0) && !all->failed) {
            all->failed = 1;
            snprintf(all->first_fail, sizeof(all->first_fail), "%s", k->cs.first_fail);
        }
        pthread_cond_broadcast(&all->changed);
        pthread_mutex_unlock(&all->lock);
        if (rc < 0)
            break;
    }
    gpuipc_watch_thread_worker(0, 0, -1);
    gpuipc_ledger_set_tag(0);
    return NULL;
}

/* Starts a worker on each of the n connections fds brought. Returns 0, or
 * a negative errno with err (the FDs not taken closed). */
static int start_workers(gpuipc_consumer_session *cs, int *fds, unsigned n, gpuipc_err *err)
{
    struct gpuipc_consumer_workers *all;
    unsigned i;
    int rc;

    if (cs->workers != NULL) {
        gpuipc_wire_close_fds(fds, n);
        return gpuipc_err_set(err, -EPROTO, "phase: a second set of %u workers (the first "
                              "phase brought them)", n);
    }
    if ((all = calloc(1, sizeof(*all))) == NULL) {
        gpuipc_wire_close_fds(fds, n);
        return gpuipc_err_set(err, -ENOMEM, "phase: out of memory for %u workers", n);
    }
    pthread_mutex_init(&all->lock, NULL);
    {
        pthread_condattr_t ca;

        /* A wall clock set back or forth does not move the phase's wait. */
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&all->changed, &ca);
        pthread_condattr_destroy(&ca);
    }
    cs->workers = all;
    for (i = 0; i < n; i++) {
        worker *k = &all->w[i];
        gpuipc_wire *w;

        if ((rc = gpuipc_wire_open(&w, fds[i], "producer", err)) < 0) {
            gpuipc_wire_close_fds(fds + i, n - i);
            return rc;
        }
        all->n = i + 1;
        k->index = i;
        k->all = all;
        k->env = *cs->env;
        k->env.per_phase = 1;
        k->env.session_check = 0;
        k->env.gpu = NULL; /* its first scenario makes its GPU current on its thread */
        k->cs = *cs;
        k->cs.env = &k->env;
        k->cs.w = w;
        k->cs.workers = NULL;
        k->cs.passed = 0;
        k->cs.producer_failed = 0;
        k->cs.first_fail[0] = '\0';
        if ((rc = pthread_create(&k->thread, NULL, serve_worker, k)) != 0) {
            gpuipc_wire_close(w);
            k->cs.w = NULL;
            return gpuipc_err_set(err, -rc, "phase: pthread_create for worker %u: %s", i,
                                  strerror(rc));
        }
        k->started = 1;
    }
    return 0;
}

/* Waits, within --timeout, until the workers have ended cells scenarios
 * over the run. Returns 0, or -ETIMEDOUT with err. */
static int wait_for_cells(struct gpuipc_consumer_workers *all, unsigned cells, uint64_t timeout_ns,
                          gpuipc_err *err)
{
    struct timespec until;
    int rc = 0;

    /* The whole of --timeout, its fraction of a second too (a timeout under
     * a second would otherwise not wait at all), on the monotonic clock the
     * condition waits by (start_workers). */
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(timeout_ns / GPUIPC_NS_PER_S);
    until.tv_nsec += (long)(timeout_ns % GPUIPC_NS_PER_S);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&all->lock);
    /* A failed scenario still ends (its worker goes on); only a broken
     * connection ends no more, and waiting for it would be waiting for
     * nothing. */
    while (all->ended < cells && !all->broken && rc == 0)
        rc = pthread_cond_timedwait(&all->changed, &all->lock, &until);
    if (all->ended < cells && !all->broken)
        gpuipc_err_set(err, -ETIMEDOUT, "phase: the workers ended %u of the %u scenarios the "
                       "producer counts, in --timeout", all->ended, cells);
    rc = all->ended < cells && !all->broken ? -ETIMEDOUT : 0;
    pthread_mutex_unlock(&all->lock);
    return rc;
}

int gpuipc_consumer_phase(gpuipc_consumer_session *cs, const gpuipc_msg_phase *p, int *fds,
                          unsigned nfds, gpuipc_err *err)
{
    gpuipc_env *env = cs->env;
    struct gpuipc_consumer_workers *all;
    gpuipc_msg msg;
    gpuipc_err e;
    int rc = 0, refused = 0;

    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_PHASE_ACK;
    gpuipc_wire_status(&msg.u.phase_ack.st, GPUIPC_PASS, GPUIPC_STEP_NONE, NULL);
    if (p->flags == GPUIPC_PHASE_BEGIN) {
        if (nfds > 0 && (rc = start_workers(cs, fds, nfds, &e)) < 0) {
            gpuipc_wire_status_fail(&msg.u.phase_ack.st, GPUIPC_STEP_BEGIN, "%s", e.msg);
            refused = 1;
        }
        all = cs->workers;
        if (all != NULL) {
            if (all->have_base)
                gpuipc_usage_free(&all->base);
            all->have_base = gpuipc_usage_take(&all->base, env->gpu_bytes, &e) == 0;
            if (!all->have_base)
                gpuipc_wire_status_fail(&msg.u.phase_ack.st, GPUIPC_STEP_BEGIN, "phase %u: "
                                        "FD accounting: %s", p->phase, e.msg);
            gpuipc_usage_figures_of(&all->base, &msg.u.phase_ack.usage);
        } else if (rc == 0) {
            gpuipc_wire_status_fail(&msg.u.phase_ack.st, GPUIPC_STEP_BEGIN, "phase %u: no "
                                    "workers", p->phase);
            refused = 1;
        }
    } else if ((all = cs->workers) == NULL || !all->have_base) {
        gpuipc_wire_status_fail(&msg.u.phase_ack.st, GPUIPC_STEP_BEGIN, "phase %u: an end "
                                "with no beginning", p->phase);
        refused = 1;
    } else {
        gpuipc_usage now;

        if (wait_for_cells(all, p->cells, env->timeout_ns, &e) < 0)
            gpuipc_wire_status_fail(&msg.u.phase_ack.st, GPUIPC_STEP_BEGIN, "%s", e.msg);
        else if (gpuipc_usage_leaks(&all->base, env->gpu_bytes, GPUIPC_ENV_SETTLE_NS, &e) > 0)
            gpuipc_wire_status_fail(&msg.u.phase_ack.st, GPUIPC_STEP_BEGIN, "phase %u: the "
                                    "consumer holds what it did not at the phase's beginning: "
                                    "%.400s", p->phase, e.msg);
        gpuipc_usage_free(&all->base);
        all->have_base = 0;
        gpuipc_usage_take(&now, env->gpu_bytes, &e);
        gpuipc_usage_figures_of(&now, &msg.u.phase_ack.usage);
        gpuipc_usage_free(&now);
    }
    /* A PHASE out of its order fails the session, as any claim out of its
     * state does (protocol.md), not only the producer's phase. */
    if (refused) {
        cs->phase_refused = 1;
        if (cs->first_fail[0] == '\0')
            snprintf(cs->first_fail, sizeof(cs->first_fail), "%s", msg.u.phase_ack.st.reason);
    }
    gpuipc_env_waits(env, GPUIPC_STEP_BEGIN);
    return gpuipc_wire_send(cs->w, &msg, NULL, gpuipc_clock_deadline(env->timeout_ns),
                            GPUIPC_STEP_BEGIN, err);
}

int gpuipc_consumer_workers_end(gpuipc_consumer_session *cs, char *why, size_t len)
{
    struct gpuipc_consumer_workers *all = cs->workers;
    uint64_t deadline;
    size_t i;
    int failed;

    if (all == NULL)
        return 0;
    /* The producer closed the workers' connections before its BYE: each
     * worker ends at its next receive. One still in a scenario is waited
     * for within --timeout and otherwise left behind (the process ends). */
    deadline = gpuipc_clock_deadline(cs->env->timeout_ns);
    for (i = 0; i < all->n; i++) {
        worker *k = &all->w[i];
        struct timespec until;
        uint64_t left = gpuipc_clock_ms_left(deadline);

        if (!k->started)
            continue;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (time_t)(left / 1000);
        until.tv_nsec += (long)(left % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        if (pthread_timedjoin_np(k->thread, NULL, &until) != 0) {
            pthread_mutex_lock(&all->lock);
            if (!all->failed) {
                all->failed = 1;
                snprintf(all->first_fail, sizeof(all->first_fail), "worker %zu did not end "
                         "within --timeout after the producer closed its connection", i);
            }
            pthread_mutex_unlock(&all->lock);
            continue;
        }
        k->started = 0;
        gpuipc_wire_close(k->cs.w);
        k->cs.w = NULL;
    }
    pthread_mutex_lock(&all->lock);
    cs->passed += all->passed;
    cs->producer_failed += all->producer_failed;
    failed = all->failed;
    if (failed)
        snprintf(why, len, "%s", all->first_fail);
    all->passed = all->producer_failed = 0;
    pthread_mutex_unlock(&all->lock);
    if (all->have_base)
        gpuipc_usage_free(&all->base);
    all->have_base = 0;
    /* Freed only once no worker is left that could still touch it. */
    for (i = 0; i < all->n && !all->w[i].started; i++)
        ;
    if (i == all->n) {
        pthread_cond_destroy(&all->changed);
        pthread_mutex_destroy(&all->lock);
        free(all);
        cs->workers = NULL;
    }
    return failed ? -1 : 0;
}
