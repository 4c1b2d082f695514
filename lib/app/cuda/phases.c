/* SPDX-License-Identifier: Apache-2.0 */
/* phases.c: the forked mode's cells across several GPUs run a phase at a
 * time, the cells of a phase at once (run/plan.h: phase 0 each GPU alone;
 * in phase k GPU i exports to GPU i+k, so each GPU exports once and imports
 * once in it). One worker per exporter GPU, a thread with a connection of
 * its own to a worker of the consumer's (the first PHASE brings them), runs
 * its cells of the phase one after another. Each scenario counts its own
 * driver objects (the worker's ledger tag); what the processes hold besides
 * (FDs, shared memory, GPU memory), which every worker moves, both sides
 * count at the phase's beginning and end. A phase whose counts grew runs its
 * cells again one at a time over the session's connection, where every
 * scenario counts everything as in a run without phases: a leak that comes
 * back is named by its cell; one that does not still fails the phase. */
#include "app/cuda/phases.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "app/cuda/process.h"
#include "app/cuda/producer_run.h"
#include "app/cuda/scenario_ask.h"
#include "core/account.h"
#include "core/clock.h"
#include "core/ledger.h"
#include "core/log.h"
#include "core/status.h"
#include "core/step.h"
#include "core/stop.h"
#include "core/watch.h"
#include "run/phase_loop.h"
#include "wire/msg.h"

typedef struct pworker {
    gpuipc_producer_run *run;
    unsigned index;
    gpuipc_env env;     /* the run's, for one worker: its own GPU current on its thread */
    gpuipc_wire *w;     /* to the consumer's worker of the same index */
    const size_t *cells; /* its cells of the phase under way */
    size_t ncells;
    unsigned driven;    /* of those, the ones whose BEGIN could go */
    gpuipc_timing timing;
    int gpu;            /* the GPU it exports from */
    pthread_t thread;
    int started;        /* its thread runs */
} pworker;

typedef struct phases {
    gpuipc_producer_run *run;
    size_t nusable;
    int *usable;        /* the GPUs of the run two processes can share */
    int *phase, *worker; /* each cell's, or -1: not played in a phase */
    size_t *order;      /* the cells by phase, then worker */
    size_t *start;      /* [phase * nusable + worker]: where its cells begin in order */
    pworker *w;
    unsigned cells_ended; /* scenarios whose BEGIN went, over the run */
    int theirs[GPUIPC_PHASE_MAX_WORKERS]; /* the consumer's ends of the connections */
    int sent;           /* the first PHASE took them */
} phases;

/* The position of GPU ordinal g among the usable ones, or -1. */
static int position(const phases *p, int g)
{
    size_t i;

    for (i = 0; i < p->nusable; i++)
        if (p->usable[i] == g)
            return (int)i;
    return -1;
}

int gpuipc_app_phases_wanted(const gpuipc_producer_run *run)
{
    static const char *const filters[] = {"CK_RUN_SUITE", "CK_RUN_CASE", "CK_EXCLUDE_LIST",
                                          "CK_EXCLUDE_CASE", "CK_INCLUDE_TAGS",
                                          "CK_EXCLUDE_TAGS"};
    const char *off = getenv("GPUIPC_PHASES");
    size_t i;

    /* The forked one-shot run over several GPUs only: --pairs times the
     * link (a phase's other cells would share it), a soak compares rounds
     * by the consumer's figures after each scenario, and Check's filters
     * choose cells one by one. */
    if (run->ngpus < 2 || run->child <= 0 || run->o->pairs != NULL || run->o->repeat != 1 ||
        run->o->bench)
        return 0;
    if (off != NULL && strcmp(off, "off") == 0)
        return 0;
    for (i = 0; i < sizeof(filters) / sizeof(filters[0]); i++)
        if (getenv(filters[i]) != NULL && getenv(filters[i])[0] != '\0')
            return 0;
    return 1;
}

/* Sets up p: each cell's phase and worker (cells that run alone, host
 * memory and destructive ones, -1), and the cells in phase and worker
 * order. Returns 0, or -1 out of memory or where there is nothing to play
 * at once. */
static int plan(phases *p, gpuipc_producer_run *run)
{
    size_t n = run->cells.n, i, g, nb, *count;
    gpuipc_cause why;

    memset(p, 0, sizeof(*p));
    p->run = run;
    p->usable = calloc(run->ngpus, sizeof(*p->usable));
    p->phase = calloc(n ? n : 1, sizeof(*p->phase));
    p->worker = calloc(n ? n : 1, sizeof(*p->worker));
    p->order = calloc(n ? n : 1, sizeof(*p->order));
    if (p->usable == NULL || p->phase == NULL || p->worker == NULL || p->order == NULL)
        return -1;
    for (g = 0; g < run->ngpus; g++)
        if (!gpuipc_app_modes_block(&run->cmodes, run->gpus[g], &why))
            p->usable[p->nusable++] = run->gpus[g];
    if (p->nusable < 2 || p->nusable > GPUIPC_PHASE_MAX_WORKERS)
        return -1;
    nb = p->nusable * p->nusable;
    if ((p->start = calloc(nb + 1, sizeof(*p->start))) == NULL ||
        (p->w = calloc(p->nusable, sizeof(*p->w))) == NULL)
        return -1;
    count = p->start; /* counted first, then turned into starts */
    for (i = 0; i < n; i++) {
        int a = run->cells.pair[i][0], b = run->cells.pair[i][1];
        int pa = position(p, a), pb = position(p, b);

        p->phase[i] = p->worker[i] = -1;
        if (a < 0 || pa < 0 || pb < 0 || run->cells.sel[i]->destructive ||
            run->cells.results[i].status != -1)
            continue;
        p->worker[i] = pa;
        p->phase[i] = (int)(((size_t)pb + p->nusable - (size_t)pa) % p->nusable);
        count[(size_t)p->phase[i] * p->nusable + (size_t)pa + 1]++;
    }
    for (i = 1; i <= nb; i++)
        p->start[i] += p->start[i - 1];
    {
        size_t *at = calloc(nb, sizeof(*at));

        if (at == NULL)
            return -1;
        for (i = 0; i < n; i++) {
            size_t key;

            if (p->phase[i] < 0)
                continue;
            key = (size_t)p->phase[i] * p->nusable + (size_t)p->worker[i];
            p->order[p->start[key] + at[key]++] = i;
        }
        free(at);
    }
    return p->start[nb] > 0 ? 0 : -1;
}

static void plan_free(phases *p)
{
    size_t i;

    for (i = 0; p->w != NULL && i < p->nusable; i++)
        if (p->w[i].w != NULL)
            gpuipc_wire_close(p->w[i].w);
    free(p->w);
    free(p->start);
    free(p->order);
    free(p->worker);
    free(p->phase);
    free(p->usable);
    memset(p, 0, sizeof(*p));
}

/* One worker's cells of the phase, one after another. */
static void *run_worker(void *arg)
{
    pworker *k = arg;
    sigset_t block, was;
    size_t j;

    /* The stop signals are the main thread's to take; a stop wakes every
     * wait through the stop channel all the same. (Where no thread could be
     * made this runs on the main thread, whose mask it gives back.) */
    sigfillset(&block);
    pthread_sigmask(SIG_BLOCK, &block, &was);
    /* A thread of its own each phase: its first cell makes its GPU current
     * here (gpuipc_gpu_point skips that where env names the GPU already). */
    k->env.gpu = NULL;
    /* Its own side of the watchdog's page: every cell in flight is named. */
    gpuipc_watch_thread_worker(GPUIPC_ROLE_PRODUCER, k->index, k->gpu);
    for (j = 0; j < k->ncells; j++) {
        size_t i = k->cells[j];

        gpuipc_ledger_set_tag((uint32_t)i + 1);
        if (gpuipc_stop_signal() != 0) {
            gpuipc_result_set(&k->run->cells.results[i], GPUIPC_STOPPED, GPUIPC_ROLE_PRODUCER,
                              GPUIPC_STEP_BEGIN, NULL, "not run: the run was stopped before it");
            continue;
        }
        k->driven += (unsigned)gpuipc_app_drive_cell(k->run, i, &k->env, k->w, &k->timing);
    }
    gpuipc_ledger_set_tag(0);
    gpuipc_watch_thread_worker(0, 0, -1);
    pthread_sigmask(SIG_SETMASK, &was, NULL);
    return NULL;
}

/* PHASE, and the consumer's PHASE_ACK into st. Returns 0, or a negative
 * errno if the session's connection broke (err). */
static int phase_msg(phases *p, unsigned k, unsigned flags, int *fds, unsigned nfds,
                     gpuipc_status *st, gpuipc_err *err)
{
    gpuipc_producer_run *run = p->run;
    int rfds[GPUIPC_WIRE_MAX_FDS], rc;
    gpuipc_msg m;

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_PHASE;
    m.nfds = (uint16_t)nfds;
    m.u.phase.phase = k;
    m.u.phase.flags = flags;
    m.u.phase.workers = nfds;
    m.u.phase.cells = flags == GPUIPC_PHASE_END ? p->cells_ended : 0;
    gpuipc_env_waits(&run->env, GPUIPC_STEP_BEGIN);
    if ((rc = gpuipc_wire_send(run->w, &m, fds, gpuipc_clock_deadline(run->env.timeout_ns),
                               GPUIPC_STEP_BEGIN, err)) < 0 ||
        (rc = gpuipc_wire_recv(run->w, GPUIPC_MSG_BIT(GPUIPC_MSG_PHASE_ACK), &m, rfds,
                               gpuipc_clock_deadline(run->env.timeout_ns + 
                                                     GPUIPC_ENV_SETTLE_NS),
                               GPUIPC_STEP_BEGIN, err)) < 0)
        return rc;
    *st = m.u.phase_ack.st;
    return 0;
}

/* The workers' connections: a socket pair each, this side's end kept, the
 * other's sent with the first PHASE. Returns 0 or a negative errno (err). */
static int connect_workers(phases *p, int *theirs, gpuipc_err *err)
{
    size_t i;
    int sv[2], rc;

    for (i = 0; i < p->nusable; i++) {
        pworker *k = &p->w[i];

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
            rc = -errno;
            gpuipc_wire_close_fds(theirs, (unsigned)i);
            return gpuipc_err_set(err, rc, "phases: socketpair for worker %zu: %s", i,
                                  strerror(-rc));
        }
        theirs[i] = sv[1];
        if ((rc = gpuipc_wire_open(&k->w, sv[0], "consumer", err)) < 0) {
            close(sv[0]); /* the wire owns it only once open */
            gpuipc_wire_close_fds(theirs, (unsigned)i + 1);
            return rc;
        }
        k->run = p->run;
        k->index = (unsigned)i;
        k->gpu = p->usable[i];
        k->env = p->run->env;
        k->env.per_phase = 1;
        k->env.session_check = 0;
        k->env.gpu = NULL; /* its first cell makes its GPU current on its thread */
    }
    return 0;
}

/* Runs the cells of phase k again, one at a time over the session's
 * connection, each counting everything. Returns how many failed. */
static unsigned run_again(phases *p, size_t k)
{
    gpuipc_producer_run *run = p->run;
    size_t from = p->start[k * p->nusable], to = p->start[(k + 1) * p->nusable], j;
    unsigned failed = 0;

    for (j = from; j < to && gpuipc_stop_signal() == 0; j++) {
        size_t i = p->order[j];
        gpuipc_result *r = &run->cells.results[i], *was = malloc(sizeof(*was));

        /* A cell that failed in the phase keeps that failure, whatever its
         * second run says: the second run is there to name a leak, and a
         * flaky failure passing the second time must not vanish. */
        if (was != NULL)
            *was = *r;
        r->status = -1;
        if (gpuipc_app_drive_cell(run, i, &run->env, run->w, &run->timing))
            gpuipc_app_judge_pair(run, i);
        if (was != NULL && was->status == GPUIPC_FAIL && r->status != GPUIPC_FAIL)
            *r = *was;
        free(was);
        failed += r->status == GPUIPC_FAIL;
    }
    return failed;
}

/* The drift stands: the run fails for it, on the phase's first cell. */
static void drift_stands(void *arg, size_t k, const char *text)
{
    phases *p = arg;
    size_t i = p->order[p->start[k * p->nusable]];

    gpuipc_result_set(&p->run->cells.results[i], GPUIPC_FAIL, GPUIPC_ROLE_PRODUCER,
                      GPUIPC_STEP_RELEASE, NULL, "%s", text);
}

static size_t phase_cells(void *arg, size_t k)
{
    phases *p = arg;

    return p->start[(k + 1) * p->nusable] - p->start[k * p->nusable];
}

/* PHASE's beginning (the first brings the workers' connections). */
static int phase_begin(void *arg, size_t k, gpuipc_err *err)
{
    phases *p = arg;
    gpuipc_status st;
    int rc;

    rc = phase_msg(p, (unsigned)k, GPUIPC_PHASE_BEGIN, p->sent ? NULL : p->theirs,
                   p->sent ? 0 : (unsigned)p->nusable, &st, err);
    if (rc < 0)
        return rc;
    if (!p->sent) {
        gpuipc_wire_close_fds(p->theirs, (unsigned)p->nusable);
        p->sent = 1;
    }
    if (st.code != GPUIPC_PASS) {
        /* No workers on the consumer's side, or no count of its own: this
         * phase and the rest run one at a time, as without them. */
        gpuipc_log_step(&p->run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_BEGIN,
                        GPUIPC_LOG_NO_TIME, "phase %zu: the consumer: %s; the cells run one at "
                        "a time from here", k, st.reason);
        return 1;
    }
    return 0;
}

/* The workers, each on a thread of its own, their cells judged after. */
static void phase_play(void *arg, size_t k)
{
    phases *p = arg;
    size_t from = p->start[k * p->nusable], to = p->start[(k + 1) * p->nusable], i;

    for (i = 0; i < p->nusable; i++) {
        pworker *w = &p->w[i];

        w->cells = p->order + p->start[k * p->nusable + i];
        w->ncells = p->start[k * p->nusable + i + 1] - p->start[k * p->nusable + i];
        w->driven = 0;
        w->started = w->ncells > 0 && pthread_create(&w->thread, NULL, run_worker, w) == 0;
        if (w->ncells > 0 && !w->started)
            run_worker(w); /* no thread: on this one, after the others */
    }
    for (i = 0; i < p->nusable; i++) {
        pworker *w = &p->w[i];

        if (w->started)
            pthread_join(w->thread, NULL);
        w->started = 0;
        p->cells_ended += w->driven;
    }
    for (i = from; i < to; i++) {
        p->run->played[p->order[i]] = 1;
        gpuipc_app_judge_pair(p->run, p->order[i]);
    }
}

/* PHASE's end: the consumer's counts. */
static int phase_end(void *arg, size_t k, char *drift, size_t len, gpuipc_err *err)
{
    phases *p = arg;
    gpuipc_status st;
    int rc;

    if ((rc = phase_msg(p, (unsigned)k, GPUIPC_PHASE_END, NULL, 0, &st, err)) < 0)
        return rc;
    if (st.code != GPUIPC_PASS)
        snprintf(drift, len, "the consumer: %.400s", st.reason);
    return 0;
}

static int phase_stopped(void *arg)
{
    (void)arg;
    return gpuipc_stop_signal() != 0;
}

static unsigned phase_again(void *arg, size_t k)
{
    return run_again(arg, k);
}

int gpuipc_app_play_phases(gpuipc_producer_run *run)
{
    gpuipc_phase_loop l;
    phases p;
    int rc;
    gpuipc_err err;

    gpuipc_err_clear(&err);
    if (plan(&p, run) < 0) {
        plan_free(&p);
        return 0;
    }
    if ((run->played = calloc(run->cells.n, 1)) == NULL ||
        connect_workers(&p, p.theirs, &err) < 0) {
        plan_free(&p);
        return 0; /* the cells run one at a time, as without phases */
    }
    memset(&l, 0, sizeof(l));
    l.arg = &p;
    l.nphases = p.nusable;
    l.who = "the producer";
    l.log = &run->env.log;
    l.gpu_bytes = run->env.gpu_bytes;
    l.settle_ns = GPUIPC_ENV_SETTLE_NS;
    l.cells = phase_cells;
    l.begin = phase_begin;
    l.play = phase_play;
    l.end = phase_end;
    l.again = phase_again;
    l.stands = drift_stands;
    l.stopped = phase_stopped;
    /* A stop signal is taken here while the workers run (their waits wake
     * through the stop channel), as during a scenario. */
    gpuipc_app_catch_stop_signals();
    gpuipc_app_block_stop_signals(0);
    rc = gpuipc_phase_loop_run(&l, &err);
    if (rc < 0)
        gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_BEGIN,
                        GPUIPC_LOG_NO_TIME, "%s phases: %s", gpuipc_stop_fail_word(), err.msg);
    gpuipc_app_block_stop_signals(1);
    /* The consumer's ends, where no PHASE took them (it failed, or a stop
     * came first): the FDs are the sender's either way. */
    if (!p.sent)
        gpuipc_wire_close_fds(p.theirs, (unsigned)p.nusable);
    /* Closed before BYE: the consumer's workers end at their next receive. */
    plan_free(&p);
    return rc < 0 ? rc : 0;
}
