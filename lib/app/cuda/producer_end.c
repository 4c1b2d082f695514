/* SPDX-License-Identifier: Apache-2.0 */
/* producer_end.c: the end of the producer's session, in every mode: the
 * causes of its failures and skips named from both sides' facts, the
 * producer's last checks (what it holds, its FDs), BYE and the consumer's
 * BYE_ACK, and the consumers' exits (the main one's status held to the
 * session's, the sacrificial one's reaped). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "app/cuda/process.h"
#include "app/cuda/producer_end.h"
#include "app/cuda/producer_run.h"
#include "core/clock.h"
#include "core/kmsg.h"
#include "core/log.h"
#include "core/proc.h"
#include "core/step.h"
#include "core/stop.h"
#include "core/units.h"
#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "mech/imex_ctl.h"
#include "run/brief.h"
#include "run/cells.h"
#include "session/diagnose.h"
#include "session/report.h"

/* Waits for consumer pid to exit within the deadline, closing *w first if
 * it is broken (so that a live consumer sees EOF, with only a short grace).
 * Stores its wait status in *status and says how it ended in desc. Returns
 * 1 if it exited by itself, 0 if it had to be killed or the wait failed. */
static int reap(gpuipc_producer_run *run, gpuipc_wire **w, pid_t pid, int *status, char *desc,
                size_t len)
{
    uint64_t wait_ns = run->o->timeout_ns;
    gpuipc_err err;
    int rc;

    *status = -1;
    if (*w == NULL || gpuipc_wire_broken(*w) != NULL) {
        gpuipc_wire_close(*w);
        *w = NULL;
        if (wait_ns > GPUIPC_APP_END_GRACE_NS)
            wait_ns = GPUIPC_APP_END_GRACE_NS;
    }
    rc = gpuipc_proc_wait(pid, gpuipc_clock_deadline(wait_ns), status, &err);
    gpuipc_wire_close(*w);
    *w = NULL;
    if (rc >= 0) /* reaped: its number may be another process's from now */
        gpuipc_stop_forget_peer(pid);
    if (rc < 0) {
        snprintf(desc, len, "%s", err.msg);
        return 0;
    }
    gpuipc_proc_describe(*status, desc, len);
    if (rc >= 1) {
        size_t used = strlen(desc);

        snprintf(desc + used, len - used, " (by the producer: it had not exited in time%s)",
                 rc == 2 ? "; it was stopped: SIGSTOP, job control or a debugger" : "");
        return 0;
    }
    return 1;
}

/* env->reap_peer: a destructive scenario's consumer exits after END_ACK. */
int gpuipc_app_reap_sacrificial(gpuipc_env *env, gpuipc_err *err)
{
    gpuipc_producer_run *run = env->reap_arg;
    int status;

    if (run == NULL || run->child2 <= 0 || run->child2_done)
        return gpuipc_err_set(err, -ECHILD, "no sacrificial consumer is left to wait for");
    run->child2_ok = reap(run, &run->w2, run->child2, &status, run->child2_desc,
                          sizeof(run->child2_desc)) &&
                     WIFEXITED(status) && WEXITSTATUS(status) == 0;
    run->child2_done = 1;
    gpuipc_log_step(&env->log, GPUIPC_LOG_NORMAL, run->destructive, GPUIPC_STEP_END_ACK,
                    GPUIPC_LOG_NO_TIME, "sacrificial consumer %s", run->child2_desc);
    if (!run->child2_ok)
        return gpuipc_err_set(err, -ECHILD, "%s", run->child2_desc);
    return 0;
}

/* BYE for the main consumer: the counts of the scenarios of its session
 * (a destructive one ran with the sacrificial consumer, which the main one
 * never saw and could not vouch for), and the run's verdict, except that a
 * session of which nothing passed while the run passed (every scenario but
 * the sacrificial one's skipped) ends for this consumer as a skip. */
static void say_bye(const gpuipc_producer_run *run, int code, gpuipc_msg_bye *bye)
{
    gpuipc_counts c = {0, 0, 0, 0};
    size_t i;

    for (i = 0; i < run->cells.n; i++) {
        if (run->cells.sel[i]->destructive)
            continue;
        c.passed += run->cells.results[i].status == GPUIPC_PASS;
        c.failed += run->cells.results[i].status == GPUIPC_FAIL;
        c.skipped += run->cells.results[i].status == GPUIPC_SKIP;
    }
    /* --bench's measurements are scenarios of the session too. */
    c.passed += run->bench_passed;
    c.failed += run->bench_failed;
    memset(bye, 0, sizeof(*bye));
    bye->code = code == GPUIPC_PASS && c.passed == 0 ? GPUIPC_SKIP : code;
    bye->passed = c.passed;
    bye->failed = c.failed;
    bye->skipped = c.skipped;
}

/* The producer's last checks, before its verdict goes out: what it holds
 * against the reference of its scenarios, and for a process that never
 * loaded CUDA, its FDs against the program's start. Returns 1 if they
 * failed, said in run->last. */
static int producer_last_check(gpuipc_producer_run *run)
{
    const int keep[2] = {run->w != NULL ? gpuipc_wire_fd(run->w) : -1,
                         run->w2 != NULL ? gpuipc_wire_fd(run->w2) : -1};
    gpuipc_err e;

    if (gpuipc_session_usage_leaks(&run->env.session, run->env.gpu_bytes,
                                   GPUIPC_ENV_SETTLE_NS, &e) == 0 &&
        gpuipc_app_fds_since_start(run->proc, keep, &e) == 0) {
        uint64_t ns;
        unsigned n;

        gpuipc_usage_cost(&ns, &n);
        if (!run->env.session_check)
            gpuipc_log_step(&run->env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_BYE,
                            GPUIPC_LOG_NO_TIME, "at the end of the session: its scenarios "
                            "counted their own driver objects; what this process holds is "
                            "counted at the phase's end; peak RSS %.1f MiB",
                            (double)gpuipc_proc_hwm() / 1048576.0);
        else
            gpuipc_log_step(&run->env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_BYE,
                            GPUIPC_LOG_NO_TIME, "at the end of the session: nothing held that "
                            "was not held at the first scenario%s; %u counts of what this "
                            "process holds took %.1f ms; peak RSS %.1f MiB",
                            gpuipc_cu.driver_version != 0 || run->proc == NULL
                            ? "" : "; the FDs open are the same as at the start, the "
                            "connections aside", n, (double)ns / 1e6,
                            (double)gpuipc_proc_hwm() / 1048576.0);
        return 0;
    }
    snprintf(run->last, sizeof(run->last), "producer, at the end of the session: %.440s",
             e.msg);
    gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_BYE, GPUIPC_LOG_NO_TIME,
                    "%s %s", gpuipc_stop_fail_word(), run->last);
    gpuipc_brief_note(run->last, NULL);
    return 1;
}

/* A failure at the end of the session, by who at step: said in the step
 * log ("FAIL <prefix><text>") and noted for --brief. */
static void end_failed(gpuipc_producer_run *run, const char *who, unsigned step,
                       const char *prefix, const char *text)
{
    char line[GPUIPC_ERR_LEN];

    snprintf(line, sizeof(line), "%s - %s: %.440s", who, gpuipc_step_name(step), text);
    gpuipc_brief_note(line, NULL);
    gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, step, GPUIPC_LOG_NO_TIME, "%s %s%s",
                    gpuipc_stop_fail_word(), prefix, text);
}

/* Whether a scenario of the run failed on the consumer's side (its row
 * then names the cause). */
static int consumer_failed_one(const gpuipc_producer_run *run)
{
    size_t i;

    for (i = 0; i < run->cells.n; i++)
        if (run->cells.results[i].status == GPUIPC_FAIL &&
            run->cells.results[i].failed_side == GPUIPC_ROLE_CONSUMER)
            return 1;
    return 0;
}

/* BYE with the verdict bye and the consumer's BYE_ACK: a failure of its last
 * checks, of its side, or no answer fails *code. What it said goes into
 * said. Returns 1 if it answered. */
static int exchange_bye(gpuipc_producer_run *run, const gpuipc_msg_bye *bye, int *code,
                        char *said, size_t len)
{
    gpuipc_status ack;
    gpuipc_err err;

    if (gpuipc_producer_bye(&run->env, run->w, bye, &ack, &err) < 0) {
        *code = GPUIPC_FAIL;
        snprintf(said, len, "; it did not answer BYE: %s", err.msg);
        end_failed(run, "producer", GPUIPC_STEP_BYE, "", err.msg);
        return 0;
    }
    if (ack.code != GPUIPC_PASS && ack.step == GPUIPC_STEP_BYE_ACK) {
        *code = GPUIPC_FAIL;
        snprintf(said, len, "; its last checks failed: %s", ack.reason);
        end_failed(run, "consumer", GPUIPC_STEP_BYE_ACK, "the consumer: ", ack.reason);
    } else if (ack.code != GPUIPC_PASS && consumer_failed_one(run)) {
        *code = GPUIPC_FAIL;
        snprintf(said, len, "; its side failed (said above)");
    } else if (ack.code != GPUIPC_PASS) {
        /* A failure of its side that no scenario's END_ACK carried: said
         * here, since nothing above says it. */
        *code = GPUIPC_FAIL;
        snprintf(said, len, "; its side failed: %.300s", ack.reason);
        end_failed(run, "consumer", GPUIPC_STEP_BYE_ACK, "the consumer: ", ack.reason);
    } else {
        snprintf(said, len, "; its last checks passed");
    }
    return 1;
}

/* Ends the session with the verdict code: the producer's last checks, BYE
 * with the verdict and the consumer's BYE_ACK with its last checks, then
 * (forked mode) the consumer's exit, which must carry the same status, and
 * the sacrificial consumer's. Returns the session's status: code, or
 * GPUIPC_FAIL if a last check failed, the consumer did not answer, or it
 * ended otherwise than the session did. Describes the consumer's end in
 * desc. */
static int end_session(gpuipc_producer_run *run, int code, char *desc, size_t len)
{
    char said[GPUIPC_ERR_LEN + 64] = "";
    gpuipc_msg_bye bye;
    int answered = 0, status;

    /* The sacrificial consumer's connection (if any) is no longer needed, and
     * the checks below are about this process alone. */
    if (run->w != NULL && run->started && gpuipc_stop_signal() == 0 &&
        (code == GPUIPC_PASS || code == GPUIPC_SKIP)) {
        run->checked = 1;
        if (producer_last_check(run))
            code = GPUIPC_FAIL;
    }
    say_bye(run, code, &bye);
    if (run->w != NULL && run->started && gpuipc_wire_broken(run->w) == NULL &&
        gpuipc_stop_signal() == 0) {
        answered = exchange_bye(run, &bye, &code, said, sizeof(said));
    } else if (run->started && gpuipc_stop_signal() == 0) {
        /* The connection broke before BYE; a scenario has failed for it. */
        code = GPUIPC_FAIL;
    }
    /* This process's context ends while the consumer's does (each takes
     * tens of ms); nothing below needs it. */
    gpuipc_gpu_close_all();
    run->env.gpu = NULL;
    if (run->child > 0) {
        /* The consumer ends with its session's status: what BYE told it, or
         * a failure that came since. */
        int exited = reap(run, &run->w, run->child, &status, desc, len);
        int expect = code != GPUIPC_FAIL ? bye.code : code;

        if (gpuipc_stop_signal() == 0 && (!exited || !WIFEXITED(status) ||
                                      WEXITSTATUS(status) != expect)) {
            if (answered && exited && WIFEXITED(status)) {
                size_t used = strlen(desc);

                snprintf(desc + used, len - used, ", but the session's status is %d", expect);
            }
            code = GPUIPC_FAIL;
        }
        if (answered) {
            size_t used = strlen(desc);

            snprintf(desc + used, len - used, "%s", said);
        }
    } else {
        char who[96];

        if (run->env.peer_pid > 0)
            snprintf(who, sizeof(who), "pid %d", run->env.peer_pid);
        else if (run->env.have_peer_facts)
            snprintf(who, sizeof(who), "pid %u in its own PID namespace (pid:[%llu])",
                     run->env.peer_facts.pid,
                     (unsigned long long)run->env.peer_facts.ns[GPUIPC_NS_PID]);
        else
            snprintf(who, sizeof(who), "a consumer that never said HELLO");
        if (run->peer_label != NULL)
            snprintf(desc, len, "%.200s, %s%.300s", run->peer_label,
                     !run->started ? "never said HELLO" : answered ? "answered BYE"
                     : "connection lost", said);
        else if (!run->started)
            snprintf(desc, len, "none took part in --serve %s", run->o->serve);
        else
            snprintf(desc, len, "%s, connected to --serve %.200s, %s%.300s", who,
                     run->o->serve, answered ? "answered BYE" : "connection lost", said);
        gpuipc_wire_close(run->w);
        run->w = NULL;
    }
    if (run->child2 > 0 && !run->child2_done) {
        run->child2_ok = reap(run, &run->w2, run->child2, &status, run->child2_desc,
                              sizeof(run->child2_desc)) &&
                         WIFEXITED(status) && WEXITSTATUS(status) == 0;
        run->child2_done = 1;
    }
    if (run->child2 > 0) {
        size_t used = strlen(desc);

        snprintf(desc + used, len - used, "; sacrificial consumer: %s", run->child2_desc);
        if (!run->child2_ok)
            code = GPUIPC_FAIL;
    }
    return code;
}

/* "0=GPU-1d269889 1=GPU-..." for the GPUs this process sees, into buf;
 * "" where the driver is not loaded. */
static void gpu_map(char *buf, size_t len)
{
    uint8_t uuid[GPUIPC_UUID_LEN];
    char text[48];
    size_t used = 0;
    gpuipc_err e;
    int i, n = 0;

    buf[0] = '\0';
    if (gpuipc_cu.driver_version == 0 || gpuipc_gpu_count(&n, &e) < 0)
        return;
    for (i = 0; i < n && used < len; i++)
        if (gpuipc_gpu_uuid_of(i, uuid, &e) == 0)
            used += (size_t)snprintf(buf + used, len - used, "%s%d=%.12s", used ? " " : "", i,
                                     gpuipc_units_format_uuid(uuid, text, sizeof(text)));
}

/* Names the cause of every failure and skip from both sides' facts. */
static void diagnose_results(gpuipc_producer_run *run)
{
    char gpus[256], fabric[256] = "", link[1024];
    gpuipc_err why;
    size_t i;

    gpu_map(gpus, sizeof(gpus));
    for (i = 0; i < run->cells.n; i++)
        if (run->cells.results[i].failure.cu == GPUIPC_DIAG_CU_SYSTEM_NOT_READY &&
            gpuipc_nvml_fabric_states(fabric, sizeof(fabric), &why) < 0)
            snprintf(fabric, sizeof(fabric), "not known (%.200s)", why.msg);
    for (i = 0; i < run->cells.n; i++) {
        gpuipc_result *r = &run->cells.results[i];
        int a = run->cells.pair != NULL ? run->cells.pair[i][0] : -1;
        int b = run->cells.pair != NULL ? run->cells.pair[i][1] : -1;
        int pair = run->cuda == 0 && a >= 0 && a != b && r->status == GPUIPC_FAIL;
        gpuipc_diag_case c = {
            .mech = run->cells.sel[i]->name,
            .fetched_fd = run->cells.sel[i]->fetched_fd,
            .side = r->failed_side,
            .failure = &r->failure,
            .producer = &run->env.facts,
            .consumer = run->env.have_peer_facts ? &run->env.peer_facts : NULL,
            .producer_gpus = gpus[0] ? gpus : NULL,
            .mig = run->cuda == 0 ? run->modes.mig : -1,
            .cc = run->cuda == 0 ? run->modes.cc : -1,
            .min_gbps = run->o->min_gbps,
            .fabric = fabric[0] ? fabric : NULL,
            .link = NULL,
            /* The consumer, on GPU b, reaches GPU a's memory. */
            .peer_claimed = pair ? gpuipc_gpu_peer_claimed(b, a) : -1,
        };

        if (pair) {
            gpuipc_gpu_link_describe(a, b, link, sizeof(link));
            c.link = link;
        }

        /* A cause said already (a GPU's compute mode) stands. */
        if ((r->status == GPUIPC_FAIL || r->status == GPUIPC_SKIP) && r->cause.what[0] == '\0')
            gpuipc_diagnose(&c, &r->cause);
    }
}

/* Appends text to the cause's what, after "; " where it holds some. */
static void cause_add(const gpuipc_producer_run *run, gpuipc_cause *c, const char *text)
{
    /* What a cause may hold: under --ranks, what goes to rank 0
     * (run/cells.h), else all of it. The rule's words stay whole, the
     * evidence added is cut to fit, said so by "...", or left out where too
     * little room is left. */
    size_t room = run->peer_label != NULL ? GPUIPC_CELL_TEXT_LEN - 1 : sizeof(c->what) - 1;
    size_t used = strlen(c->what), sep = used ? 2 : 0, n = strlen(text);

    if (used + sep + 40 > room)
        return;
    if (used + sep + n <= room)
        snprintf(c->what + used, sizeof(c->what) - used, "%s%s", sep ? "; " : "", text);
    else
        snprintf(c->what + used, sizeof(c->what) - used, "%s%.*s...", sep ? "; " : "",
                 (int)(room - used - sep - 3), text);
}

/* Whether GPU ordinal is one of this session's: its own GPU, the
 * consumer's (one node), or one of the run's GPUs; every GPU of the node
 * where the session's own is not known yet. An Xid line of a GPU the
 * session never touched (another rank's, on a node of eight) is no cause of
 * its failure. */
static int session_gpu(const gpuipc_producer_run *run, int ordinal)
{
    static const uint8_t zero[GPUIPC_UUID_LEN];
    uint8_t uuid[GPUIPC_UUID_LEN];
    gpuipc_err e;
    size_t i;

    if (memcmp(run->uuid, zero, sizeof(zero)) == 0)
        return 1;
    for (i = 0; i < run->ngpus; i++)
        if (run->gpus[i] == ordinal)
            return 1;
    if (gpuipc_gpu_uuid_of(ordinal, uuid, &e) < 0)
        return 1;
    return memcmp(uuid, run->uuid, sizeof(uuid)) == 0 ||
           memcmp(uuid, run->peer_uuid, sizeof(uuid)) == 0;
}

/* Beside each failure on a GPU: the NVIDIA driver's lines in the kernel
 * log (core/kmsg: Xid lines of this session's GPUs, fabric errors) since
 * the run began, where the log is readable and holds any. Read once, only
 * after a failure. */
static void kernel_lines(gpuipc_producer_run *run)
{
    char bus[64][32], name[128], text[GPUIPC_ERR_LEN];
    const char *ids[64];
    gpuipc_kmsg_found *f;
    gpuipc_err why;
    size_t i, n = 0;
    int count = 0, any = 0;

    for (i = 0; i < run->cells.n; i++)
        any |= run->cells.results[i].status == GPUIPC_FAIL && run->cells.sel[i]->needs_cuda;
    if (!any || gpuipc_cu.driver_version == 0 || gpuipc_gpu_count(&count, &why) < 0 ||
        (f = calloc(1, sizeof(*f))) == NULL)
        return;
    for (i = 0; i < (size_t)count && n < 64; i++) {
        if (!session_gpu(run, (int)i))
            continue;
        gpuipc_gpu_describe_ordinal((int)i, name, sizeof(name), bus[n], sizeof(bus[n]));
        if (bus[n][0] != '\0') {
            ids[n] = bus[n];
            n++;
        }
    }
    if (n == 0 ||
        gpuipc_kmsg_gpu_lines(NULL, gpuipc_kmsg_since_us(gpuipc_clock_ns() - run->env.log.t0_ns),
                              ids, n, f, &why) < 0 ||
        !f->readable || f->nmatched == 0) {
        free(f);
        return;
    }
    if (run->o->level >= GPUIPC_LOG_VERBOSE)
        for (i = 0; i < f->nlines; i++)
            printf("kernel log: %s\n", f->line[i]);
    /* Short: a cause goes to rank 0 in 400 characters (run/cells.h). */
    if (f->nmatched > 1)
        snprintf(text, sizeof(text), "kernel log since the run began: %.200s (and %u more: "
                 "dmesg, or -v)", f->line[0], f->nmatched - 1);
    else
        snprintf(text, sizeof(text), "kernel log since the run began: %.200s", f->line[0]);
    for (i = 0; i < run->cells.n; i++) {
        gpuipc_result *r = &run->cells.results[i];

        if (r->status != GPUIPC_FAIL || !run->cells.sel[i]->needs_cuda)
            continue;
        cause_add(run, &r->cause, text);
        if (r->cause.fix[0] == '\0' && strstr(f->line[0], "Xid") != NULL)
            gpuipc_cause_fix(&r->cause, "look its Xid code up in NVIDIA's Xid catalog "
                             "(docs.nvidia.com/deploy/xid-errors), and see the GPU's health "
                             "(nvidia-smi -q)");
        else if (r->cause.fix[0] == '\0')
            gpuipc_cause_fix(&r->cause, "read the NVIDIA driver's lines in the kernel log "
                             "(dmesg) around the run");
    }
    free(f);
}

/* This node's IMEX daemon as nvidia-imex-ctl says it, asked once per
 * process (its two questions take up to 1 s each, and the phases' two
 * threads may both want it): NULL where the tool is not installed or could
 * not be asked. */
static const gpuipc_imex_daemon *this_nodes_daemon(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static gpuipc_imex_daemon *d;
    static int asked;
    const gpuipc_imex_daemon *out;
    gpuipc_err why;

    pthread_mutex_lock(&lock);
    if (!asked) {
        asked = 1;
        if ((d = calloc(1, sizeof(*d))) != NULL &&
            (gpuipc_imex_daemon_ask(NULL, 1000, d, &why) < 0 || !d->tool)) {
            free(d);
            d = NULL;
        }
    }
    out = d;
    pthread_mutex_unlock(&lock);
    return out;
}

/* Beside each failure of a mechanism that crosses nodes, to a consumer of
 * another node (--ranks): what this node's IMEX daemon says of itself and
 * of the consumer's node (mech/imex_ctl.h), where nvidia-imex-ctl is
 * installed. */
static void daemon_lines(gpuipc_producer_run *run)
{
    const gpuipc_imex_daemon *d;
    char text[GPUIPC_ERR_LEN];
    size_t i;
    int any = 0;

    for (i = 0; i < run->cells.n; i++)
        any |= run->cells.results[i].status == GPUIPC_FAIL && run->cells.sel[i]->cross_node;
    if (!any || run->peer_host == NULL || (d = this_nodes_daemon()) == NULL)
        return;
    /* Short: a cause goes to rank 0 in 400 characters (run/cells.h). */
    gpuipc_imex_daemon_of_peer(d, run->peer_addr, run->peer_host, run->peer_rank, text,
                               sizeof(text));
    for (i = 0; i < run->cells.n; i++)
        if (run->cells.results[i].status == GPUIPC_FAIL && run->cells.sel[i]->cross_node)
            cause_add(run, &run->cells.results[i].cause, text);
}

int gpuipc_app_producer_end(gpuipc_producer_run *run, int code, char *consumer, size_t len)
{
    if (!run->started && code == GPUIPC_PASS)
        code = GPUIPC_FAIL;
    if (run->started)
        diagnose_results(run);
    code = end_session(run, code, consumer, len);
    /* What this node's kernel log and IMEX daemon say, beside the causes,
     * once the consumer has its BYE: asking them takes time it must not
     * wait out. */
    if (run->started) {
        daemon_lines(run);
        kernel_lines(run);
    }
    gpuipc_session_usage_free(&run->env.session);
    gpuipc_wire_close(run->w);
    run->w = NULL;
    gpuipc_gpu_close_all();
    run->env.gpu = NULL;
    return code;
}
