/* SPDX-License-Identifier: Apache-2.0 */
/* serve.c: --serve PATH: the producer's role for one consumer that
 * connects there. What can be decided without a consumer is decided before
 * the socket exists; connections of other uids are refused and counted,
 * those that close before their HELLO dropped. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app/cuda/deadline.h"
#include "app/cuda/modes.h"
#include "app/cuda/process.h"
#include "app/cuda/producer_devices.h"
#include "app/cuda/producer_run.h"
#include "app/cuda/producer_summary.h"
#include "app/cuda/registry.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"
#include "core/step.h"
#include "core/stop.h"
#include "core/watch.h"
#include "gpu/gpu.h"
#include "run/summary.h"
#include "wire/endpoint.h"

/* Refused connections (another uid): the first is said in full, the rest
 * counted, so that a peer that connects in a loop cannot flood the log. */
typedef struct refusals {
    const gpuipc_log *log;
    unsigned count;
} refusals;

static void log_refused(const char *why, const gpuipc_peer *peer, void *arg)
{
    refusals *r = arg;

    if (r->count++ == 0)
        gpuipc_log_step(r->log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_HELLO, GPUIPC_LOG_NO_TIME,
                        "%s; --allow-uid %u would admit it", why, (unsigned)peer->uid);
}

static void say_refusals(const refusals *r)
{
    if (r->count > 1)
        gpuipc_log_step(r->log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_HELLO, GPUIPC_LOG_NO_TIME,
                        "refused %u connections in all from processes of other users (the "
                        "first is named above)", r->count);
}

/* A refused path is a bad argument (exit 2); anything else a failure. */
static int listen_code(int rc)
{
    return rc == -EPERM || rc == -EEXIST || rc == -ENOTDIR || rc == -EADDRINUSE ||
                   rc == -ENOENT || rc == -EACCES
               ? GPUIPC_USAGE
               : GPUIPC_FAIL;
}

/* How many connections that close before their HELLO (a liveness check of
 * a second --serve, a port scanner) --serve drops while it waits for its
 * consumer, before it gives up. */
#define MAX_DROPPED 64

/* Waits on ep, until deadline_ns, for a consumer that says HELLO: a
 * connection refused for its uid, or one that closes before its HELLO, is
 * dropped and the wait goes on. Returns 0 with run->w open and HELLO done, or
 * a negative errno with err. */
static int accept_consumer(gpuipc_producer_run *run, gpuipc_endpoint *ep, uint64_t deadline_ns,
                           refusals *refused, gpuipc_err *err)
{
    unsigned dropped = 0;
    gpuipc_peer peer;
    int sock, rc;

    for (;;) {
        sock = gpuipc_endpoint_accept(ep, run->o->allow_uid, deadline_ns, log_refused, refused,
                                      &peer, err);
        if (sock < 0 && dropped > 0) {
            size_t used = strlen(err->msg);

            snprintf(err->msg + used, sizeof(err->msg) - used, "; %u connection%s closed "
                     "before its HELLO and %s dropped", dropped, dropped == 1 ? "" : "s",
                     dropped == 1 ? "was" : "were");
        }
        if (sock < 0)
            return sock;
        run->env.cred_pid = peer.pid > 0 ? (int)peer.pid : -1;
        if ((rc = gpuipc_wire_open(&run->w, sock, "consumer", err)) < 0) {
            close(sock);
            return rc;
        }
        rc = gpuipc_app_producer_hello(run, err);
        if (rc == 0) {
            gpuipc_log_step(&run->env.log, GPUIPC_LOG_NORMAL, NULL, GPUIPC_STEP_HELLO,
                            GPUIPC_LOG_NO_TIME, "consumer pid %d (uid %u) connected",
                            (int)peer.pid, (unsigned)peer.uid);
            return 0;
        }
        gpuipc_wire_close(run->w);
        run->w = NULL;
        /* A peer that closed before its HELLO was not a consumer: wait on. */
        if (rc != -EPIPE || gpuipc_stop_signal() != 0)
            return rc;
        if (++dropped > MAX_DROPPED)
            return gpuipc_err_set(err, -EPIPE, "--serve %s: gave up during hello: %u "
                                  "connections closed before their HELLO", run->o->serve,
                                  dropped);
        if (gpuipc_clock_ms_left(deadline_ns) == 0)
            return gpuipc_err_set(err, -ETIMEDOUT, "--serve %s: timed out during hello: the "
                                  "last of %u connections closed before its HELLO and was "
                                  "dropped", run->o->serve, dropped);
        gpuipc_log_step(&run->env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_HELLO,
                        GPUIPC_LOG_NO_TIME, "dropped a connection from pid %d that closed "
                        "before its HELLO (%u so far); still waiting", (int)peer.pid, dropped);
    }
}

/* Ends a --serve run that never listened: it claims the end (the watchdog
 * then never reads the run again), lets go of the GPUs and the scenario
 * tables, and returns code. */
static int end_early(gpuipc_producer_run *run, int code)
{
    gpuipc_watch_claim(code);
    gpuipc_app_deadline_done(run->deadline);
    run->deadline = NULL;
    gpuipc_gpu_close_all();
    run->env.gpu = NULL;
    gpuipc_app_scenarios_free(run);
    return code;
}

/* --serve PATH: the producer's role, for one consumer that connects there,
 * its process's state in proc. What can be decided without a consumer (no
 * GPU, an impossible --size) is decided before the socket exists. */
static int serve(const gpuipc_options *o, const gpuipc_app_selection *s,
                 const gpuipc_inject *inject, uint64_t t0, gpuipc_app_proc *proc)
{
    /* On the stack: every return below goes through
     * gpuipc_app_producer_finish (or end_early), which claims the run's end
     * (gpuipc_watch_claim) first, so the deadline's watchdog, which holds a
     * pointer to it, never reads it after this returns. */
    gpuipc_producer_run run;
    gpuipc_log log = {GPUIPC_ROLE_PRODUCER, o->level, t0, 1};
    refusals refused = {&log, 0};
    gpuipc_endpoint ep;
    gpuipc_err err;
    char line[GPUIPC_ERR_LEN + 128];
    int code, rc;

    gpuipc_app_catch_stop_signals();
    if ((rc = gpuipc_endpoint_check(o->serve, &err)) < 0) {
        gpuipc_log_say("%s", err.msg);
        return listen_code(rc);
    }
    gpuipc_app_note_fds_at_start(proc);
    gpuipc_app_producer_init(&run, o, s->sel, s->nsel, s->req, s->nreq, inject, t0);
    run.proc = proc;
    /* The deadline covers the wait for a consumer too. */
    if (gpuipc_watch_map(&err) < 0) {
        gpuipc_log_say("%s", err.msg);
        return end_early(&run, GPUIPC_FAIL);
    }
    if (gpuipc_app_deadline_producer(&run, t0) < 0)
        return end_early(&run, GPUIPC_FAIL);
    code = gpuipc_app_producer_open(&run);
    if (code == GPUIPC_USAGE)
        return end_early(&run, code);
    if (code == GPUIPC_SKIP) {
        gpuipc_watch_claim(GPUIPC_SKIP);
        gpuipc_summary_skip_line(&run.cells, run.cuda, &run.cuda_why, GPUIPC_SKIP);
        return end_early(&run, GPUIPC_SKIP);
    }
    if (code != 0) {
        gpuipc_watch_claim(GPUIPC_FAIL);
        snprintf(line, sizeof(line), "result: %s: --serve %s: not listening: %.400s (exit %d)",
                 gpuipc_exit_word(GPUIPC_FAIL), o->serve, run.cuda_why.msg, GPUIPC_FAIL);
        gpuipc_log_line(1, line);
        return end_early(&run, GPUIPC_FAIL);
    }
    if ((rc = gpuipc_endpoint_listen(&ep, o->serve, &err)) < 0) {
        gpuipc_log_say("%s", err.msg);
        return end_early(&run, listen_code(rc));
    }
    gpuipc_app_sock_publish(&ep);
    gpuipc_log_step(&log, GPUIPC_LOG_NORMAL, NULL, GPUIPC_STEP_HELLO, GPUIPC_LOG_NO_TIME,
                    "listening on %s%s; waiting up to %.1f s for gpuipc_test --connect %s",
                    o->serve, ep.file ? " (mode 0600)" : " (abstract)",
                    (double)o->timeout_ns / 1e9, o->serve);
    rc = accept_consumer(&run, &ep, gpuipc_clock_deadline(o->timeout_ns), &refused, &err);
    say_refusals(&refused);
    /* One consumer per run: the name goes as soon as it has connected. */
    gpuipc_app_sock_publish(NULL);
    if (gpuipc_stop_file_removed())
        ep.file = 0;
    gpuipc_endpoint_close(&ep);
    if (rc < 0) {
        /* The result line says why, once. */
        snprintf(run.lost, sizeof(run.lost), "%s", err.msg);
        return gpuipc_app_producer_finish(&run, GPUIPC_FAIL, t0);
    }
    code = gpuipc_app_producer_scenarios(&run);
    return gpuipc_app_producer_finish(&run, code, t0);
}

int gpuipc_app_serve(const gpuipc_options *o, const gpuipc_app_selection *s,
                     const gpuipc_inject *inject, uint64_t t0)
{
    gpuipc_app_proc proc = {0};
    int code = serve(o, s, inject, t0, &proc);

    gpuipc_app_proc_free(&proc);
    return code;
}
