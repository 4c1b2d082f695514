/* SPDX-License-Identifier: Apache-2.0 */
/* oneshot.c: the forked mode, what ./gpuipc_test does with no --serve or
 * --connect: a socketpair, the consumer forked before any CUDA call (a child
 * forked after cuInit cannot use CUDA), and this process as the producer.
 *
 *   parent   the producer: HELLO; cuInit and open --device; probe every
 *            selected mechanism; run each runnable one as a Check test
 *            (CK_NOFORK: this process holds the CUDA context); BYE with its
 *            verdict; reap the consumer within the deadline; the summary
 *   child    the consumer: PR_SET_PDEATHSIG; serve scenario after scenario
 *            until BYE; answer with its last checks; exit with the session's
 *            status */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app/cuda/bench_mode.h"
#include "app/cuda/consumer_proc.h"
#include "app/cuda/deadline.h"
#include "app/cuda/modes.h"
#include "app/cuda/process.h"
#include "app/cuda/producer_end.h"
#include "app/cuda/producer_run.h"
#include "app/cuda/producer_summary.h"
#include "app/cuda/registry.h"
#include "core/log.h"
#include "core/step.h"
#include "core/stop.h"

/* The forked mode's producer, over sock with child (and the sacrificial
 * consumer's sock2 and child2, or -1). */
static int producer_main(int sock, pid_t child, int sock2, pid_t child2, const gpuipc_options *o,
                         const gpuipc_app_selection *s, const gpuipc_inject *inject,
                         uint64_t t0, gpuipc_app_oneshots *oneshots, gpuipc_app_proc *proc)
{
    /* On the stack: every return below goes through
     * gpuipc_app_producer_finish, which claims the run's end
     * (gpuipc_watch_claim) first, so the deadline's watchdog, which holds a
     * pointer to it, never reads it after this returns. */
    gpuipc_producer_run run;
    gpuipc_err err;
    int code;

    gpuipc_app_producer_init(&run, o, s->sel, s->nsel, s->req, s->nreq, inject, t0);
    run.child = child;
    run.child2 = child2;
    run.oneshots = oneshots;
    run.proc = proc;
    gpuipc_stop_set_peers(child, child2);
    if (gpuipc_app_deadline_producer(&run, t0) < 0) {
        close(sock);
        if (child2 > 0)
            close(sock2);
        snprintf(run.lost, sizeof(run.lost), "--deadline: the watchdog could not start (said "
                 "above)");
        return gpuipc_app_producer_finish(&run, GPUIPC_FAIL, t0);
    }
    run.env.reap_peer = child2 > 0 ? gpuipc_app_reap_sacrificial : NULL;
    run.env.reap_arg = &run;
    if (gpuipc_wire_open(&run.w, sock, "consumer", &err) < 0 ||
        (child2 > 0 && gpuipc_wire_open(&run.w2, sock2, "sacrificial consumer", &err) < 0)) {
        if (run.w == NULL)
            close(sock);
        if (child2 > 0 && run.w2 == NULL)
            close(sock2);
        snprintf(run.lost, sizeof(run.lost), "%s", err.msg);
        return gpuipc_app_producer_finish(&run, GPUIPC_FAIL, t0);
    }
    if (gpuipc_app_producer_hello(&run, &err) < 0) {
        gpuipc_log_step(&run.env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_HELLO,
                        GPUIPC_LOG_NO_TIME, "%s %s", gpuipc_stop_fail_word(), err.msg);
        snprintf(run.lost, sizeof(run.lost), "%s", err.msg);
        return gpuipc_app_producer_finish(&run, GPUIPC_FAIL, t0);
    }
    code = gpuipc_app_producer_scenarios(&run);
    return gpuipc_app_producer_finish(&run, code, t0);
}

/* The forked mode, with --bench's one-shot runs into oneshots, its
 * process's state in proc. */
static int forked_run(const gpuipc_options *o, const gpuipc_app_selection *s,
                      const gpuipc_inject *inject, uint64_t t0, gpuipc_app_oneshots *oneshots,
                      gpuipc_app_proc *proc)
{
    int sv[2], sv2[2] = {-1, -1};
    pid_t child, child2 = -1;
    gpuipc_err err;
    size_t i;

    gpuipc_app_note_fds_at_start(proc);
    gpuipc_app_catch_stop_signals();
    /* The status page the watchdogs read, shared with the consumers. */
    if (gpuipc_watch_map(&err) < 0) {
        gpuipc_log_say("%s", err.msg);
        return GPUIPC_FAIL;
    }
    if (o->bench)
        gpuipc_app_bench_oneshots(o, oneshots);
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        gpuipc_log_say("socketpair AF_UNIX SOCK_SEQPACKET: %s", strerror(errno));
        return GPUIPC_FAIL;
    }
    gpuipc_stop_set_parent(getpid());
    /* A destructive scenario gets a sacrificial consumer of its own, forked
     * like the other before any CUDA call. */
    for (i = 0; i < s->nsel; i++)
        if (s->sel[i]->destructive)
            break;
    if (i < s->nsel) {
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv2) < 0) {
            gpuipc_log_say("socketpair AF_UNIX SOCK_SEQPACKET: %s",
                    strerror(errno));
            close(sv[0]);
            close(sv[1]);
            return GPUIPC_FAIL;
        }
        child2 = gpuipc_app_fork_consumer(sv2, sv, 1, o, inject, t0, proc);
        if (child2 < 0) {
            close(sv[0]);
            close(sv[1]);
            return GPUIPC_FAIL;
        }
    }
    child = gpuipc_app_fork_consumer(sv, sv2, 0, o, inject, t0, proc);
    if (child < 0) {
        if (child2 > 0) {
            close(sv2[0]);
            kill(child2, SIGKILL);
            waitpid(child2, NULL, 0);
        }
        return GPUIPC_FAIL;
    }
    return producer_main(sv[0], child, sv2[0], child2, o, s, inject, t0,
                         o->bench ? oneshots : NULL, proc);
}

int gpuipc_app_oneshot(const gpuipc_options *o, const gpuipc_app_selection *s,
                       const gpuipc_inject *inject, uint64_t t0)
{
    gpuipc_app_oneshots oneshots = {0}; /* --bench's, measured before any CUDA call */
    gpuipc_app_proc proc = {0}; /* the consumers inherit it */
    int code = forked_run(o, s, inject, t0, &oneshots, &proc);

    /* What the bench did not take over (a run that ended before it). */
    gpuipc_samples_free(&oneshots.ns);
    gpuipc_app_proc_free(&proc);
    return code;
}
