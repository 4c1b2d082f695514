/* SPDX-License-Identifier: Apache-2.0 */
/* consumer_proc.c: the consumer's process: it reports its producer's death
 * even from inside a driver call, starts CUDA early when HELLO says it will
 * be needed, and serves the session; and how the forked mode starts it. */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "app/cuda/consumer_proc.h"
#include "app/cuda/deadline.h"
#include "app/cuda/process.h"
#include "app/cuda/producer_run.h"
#include "app/cuda/registry.h"
#include "bench/cuda/bandwidth.h"
#include "bench/cuda/link_rate.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/status.h"
#include "core/step.h"
#include "core/stop.h"
#include "core/watch.h"
#include "gpu/gpu.h"
#include "run/outputs.h"
#include "run/plan.h"
#include "run/result_doc.h"
#include "wire/wire.h"

/* SIGTERM, which PR_SET_PDEATHSIG sends when the producer dies, arrives even
 * while this process is inside a driver call; it reports the step it was in
 * with async-signal-safe calls only. A SIGTERM from anyone else keeps its
 * usual meaning. The sender is told apart by si_pid, which the kernel sets to
 * the dying parent, and not by getppid(): every thread has its own parent
 * pointer, the kernel updates them one thread at a time while it sends the
 * signal, and a CUDA driver thread that handles it may still see the dead
 * parent (seen on an H100: the consumer died silently of SIGTERM). */
static void on_parent_death(int sig, siginfo_t *info, void *context)
{
    const char *step;
    char line[256];
    gpuipc_sbuf b;

    (void)context;
    if (info == NULL || info->si_pid != gpuipc_stop_parent()) {
        gpuipc_app_on_stop(sig, info); /* anyone else's SIGTERM stops the run */
        return;
    }
    /* The role has already printed why the connection broke. */
    if (gpuipc_stop_role_lost_reported())
        _exit(GPUIPC_FAIL);
    step = gpuipc_step_name((unsigned)gpuipc_stop_role_step());
    /* The step log's columns, without the time: snprintf is not safe here. */
    gpuipc_sbuf_init(&b, line, sizeof(line));
    gpuipc_sbuf_str(&b, "         -     consumer  -                ");
    gpuipc_sbuf_str(&b, step);
    while (b.len < 50 && !b.dropped) /* pad the step column to 8 */
        gpuipc_sbuf_str(&b, " ");
    gpuipc_sbuf_str(&b, " FAIL peer gone during ");
    gpuipc_sbuf_str(&b, step);
    gpuipc_sbuf_str(&b, ": the producer (pid ");
    gpuipc_sbuf_uint(&b, (uint64_t)gpuipc_stop_parent());
    gpuipc_sbuf_str(&b, ") died (parent-death signal)\n");
    (void)gpuipc_sbuf_write(&b, 1);
    _exit(GPUIPC_FAIL);
}

/* A consumer's run: its session's env, and what env->prepare_cuda and
 * env->last_check need of the mode (their prepare_arg and last_check_arg). */
typedef struct consumer_run {
    gpuipc_env env;
    /* The consumer's options: in the forked mode the same as the
     * producer's, so that it knows the run's GPUs as early as HELLO. */
    const gpuipc_options *o;
    /* The GPU this consumer opens as soon as HELLO says CUDA will be
     * needed, or -1 for none: in the forked mode without --pairs, its
     * options name the producer's GPU, and the context starts alongside
     * the producer's. A --connect consumer learns the GPU from PROBE. */
    int early_device;
    /* This consumer is the sacrificial one (--destructive), with a side of
     * its own on the status page. */
    int sacrificial;
    /* The mode's process: the FDs at the start, for the last check. */
    const gpuipc_app_proc *proc;
} consumer_run;

/* The forked mode over several GPUs: opens the run's GPUs alongside the
 * producer's, all at once, except those whose compute mode keeps two
 * processes apart (their scenarios are skipped). */
static void open_run_gpus(consumer_run *cr, gpuipc_app_modes *modes, int n)
{
    gpuipc_env *env = &cr->env;
    const char *spec = gpuipc_options_devices(cr->o);
    gpuipc_cause why;
    int *ids, *open;
    size_t k, i, m = 0;
    gpuipc_err err;

    /* The sacrificial consumer runs one scenario, on the first GPU. */
    if (spec == NULL || cr->sacrificial || (ids = calloc((size_t)n, sizeof(*ids))) == NULL)
        return;
    open = calloc((size_t)n, sizeof(*open));
    if (open != NULL && gpuipc_plan_devices(spec, n, ids, (size_t)n, &k, &err) == 0 && k > 1) {
        uint64_t t = gpuipc_clock_ns();

        for (i = 0; i < k; i++)
            if (!gpuipc_app_modes_block(modes, ids[i], &why))
                open[m++] = ids[i];
        if (gpuipc_gpu_open_all(open, m, &err) < 0)
            gpuipc_log_step(&env->log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_HELLO,
                            GPUIPC_LOG_NO_TIME, "opening the GPUs: %s (said again by the "
                            "scenarios of that GPU)", err.msg);
        gpuipc_log_step(&env->log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_HELLO,
                        gpuipc_clock_ns() - t, "%zu GPUs opened at once alongside the "
                        "producer's", m);
    }
    free(open);
    free(ids);
}

static void consumer_prepare_cuda(gpuipc_env *env, void *arg)
{
    consumer_run *cr = arg;
    uint8_t uuid[GPUIPC_UUID_LEN];
    gpuipc_cause why;
    gpuipc_app_modes modes;
    gpuipc_err err;
    int n = 0;

    /* Results are kept; a failure is reported by the probe that needs the
     * GPU, which opens it then (gpuipc_gpu_attach). */
    if (gpuipc_gpu_init(NULL) < 0 || cr->early_device < 0 || gpuipc_gpu_count(&n, NULL) < 0)
        return;
    /* A GPU that two processes cannot share is not opened here: the
     * producer has it, and its scenarios are skipped. */
    memset(&modes, 0, sizeof(modes));
    if (gpuipc_app_modes_read(&modes, n) < 0)
        return;
    open_run_gpus(cr, &modes, n);
    if (gpuipc_app_modes_block(&modes, cr->early_device, &why) ||
        gpuipc_gpu_uuid_of(cr->early_device, uuid, &err) < 0 ||
        gpuipc_gpu_attach_uuid(env, uuid, &err) < 0) {
        gpuipc_app_modes_free(&modes);
        return;
    }
    gpuipc_app_modes_free(&modes);
    gpuipc_log_step(&env->log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_HELLO, GPUIPC_LOG_NO_TIME,
                    "GPU %d opened alongside the producer's: %s", cr->early_device,
                    gpuipc_gpu_open_times(env->gpu));
}

/* env->last_check: the FDs since the start of the mode's process. */
static size_t consumer_last_check(gpuipc_env *env, void *arg, gpuipc_wire *w, gpuipc_err *why)
{
    const consumer_run *cr = arg;

    (void)env;
    return gpuipc_app_last_check_fds(cr->proc, w, why);
}

/* Sets cr up for the consumer's role under o (the sacrificial one's, or
 * not), in the mode's process proc. */
static void consumer_env(consumer_run *cr, const gpuipc_options *o, const gpuipc_inject *inject,
                         uint64_t t0, int sacrificial, const gpuipc_app_proc *proc)
{
    gpuipc_env *env = &cr->env;

    cr->sacrificial = sacrificial;
    gpuipc_watch_role(sacrificial ? GPUIPC_WATCH_SACRIFICIAL : GPUIPC_ROLE_CONSUMER);
    gpuipc_app_env_init(env, GPUIPC_ROLE_CONSUMER, o, inject, t0);
    /* The producer's process speaks for the run: one progress line, its. */
    gpuipc_progress_enable(0);
    /* A soak's consumer would repeat its step log every round. */
    if ((o->repeat > 1 || o->bench) && env->log.level < GPUIPC_LOG_VERBOSE)
        env->log.level = GPUIPC_LOG_QUIET;
    env->prepare_cuda = consumer_prepare_cuda;
    env->prepare_arg = cr;
    cr->early_device = gpuipc_stop_parent() > 0 && o->pairs == NULL ? o->device : -1;
    /* The forked mode's producer may run a phase's cells at once. */
    env->phases = gpuipc_stop_parent() > 0 && !sacrificial;
    cr->o = o;
    cr->proc = proc;
    env->bandwidth = gpuipc_bandwidth_run;
    env->link = gpuipc_link_rate_run;
    env->gpu_bytes = gpuipc_gpu_process_bytes;
    env->last_check = consumer_last_check;
    env->last_check_arg = cr;
    env->step = GPUIPC_STEP_HELLO; /* from birth it waits for the producer's HELLO */
}

/* The session over sock (closed here) in env: the consumer's role until
 * it ends (in *end), then its GPUs let go of. Returns its status. */
static int serve_on(gpuipc_env *env, int sock, gpuipc_session_end *end)
{
    gpuipc_wire *w;
    gpuipc_err err;
    int verdict;

    if (gpuipc_wire_open(&w, sock, "producer", &err) < 0) {
        close(sock);
        snprintf(end->reason, sizeof(end->reason), "%s", err.msg);
        return GPUIPC_FAIL;
    }
    verdict = gpuipc_consumer_serve(env, w, gpuipc_app_registry, gpuipc_app_nmech, end);
    gpuipc_gpu_close_all();
    env->gpu = NULL;
    gpuipc_wire_close(w);
    return verdict;
}

int gpuipc_app_consumer_session(int sock, const gpuipc_options *o, const gpuipc_inject *inject,
                                uint64_t t0, const char *token, uint32_t rank,
                                uint32_t peer_rank, int cred_pid, const gpuipc_app_proc *proc,
                                gpuipc_session_end *end)
{
    consumer_run cr;

    consumer_env(&cr, o, inject, t0, 0, proc);
    if (proc == NULL) {
        /* At once with another session of this rank: the rank counts what
         * the process holds at the phase's ends. */
        cr.env.per_phase = 1;
        cr.env.session_check = 0;
        cr.env.last_check = NULL;
    }
    cr.env.cred_pid = cred_pid;
    cr.env.token = token;
    cr.env.rank = rank;
    cr.env.peer_rank = peer_rank;
    memset(end, 0, sizeof(*end));
    end->code = GPUIPC_FAIL;
    return serve_on(&cr.env, sock, end);
}

/* The consumer's role over sock (the sacrificial one's, or not), in the
 * mode's process proc; the session's end goes into *end. Returns the exit
 * status. */
static int consumer_main(int sock, const gpuipc_options *o, const gpuipc_inject *inject,
                         uint64_t t0, int cred_pid, int sacrificial,
                         const gpuipc_app_proc *proc, gpuipc_session_end *end)
{
    struct sigaction sa;
    consumer_run cr;
    gpuipc_env *envp = &cr.env;
    gpuipc_deadline *dl = NULL;
    gpuipc_err err;
    int verdict;

    consumer_env(&cr, o, inject, t0, sacrificial, proc);
    envp->cred_pid = cred_pid;
    gpuipc_stop_set_role(&envp->step, &envp->lost_reported);
    if (gpuipc_stop_parent() > 0)
        gpuipc_stop_set_peers(gpuipc_stop_parent(), -1);
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_parent_death;
    sa.sa_flags = SA_SIGINFO;
    if (gpuipc_stop_parent() > 0)
        sigaction(SIGTERM, &sa, NULL);
    if (gpuipc_stop_parent() > 0 && prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
        gpuipc_log_step(&envp->log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_HELLO,
                        GPUIPC_LOG_NO_TIME, "prctl PR_SET_PDEATHSIG: %s", strerror(errno));
    /* The producer may have died before the request took effect, and then
     * no signal will ever come. */
    memset(end, 0, sizeof(*end));
    end->code = GPUIPC_FAIL;
    /* --connect maps a page of its own; forked, the producer's is shared. */
    if (gpuipc_watch_map(&err) < 0 || gpuipc_app_deadline_consumer(o, t0, &dl) < 0) {
        gpuipc_app_deadline_done(dl); /* no watchdog reads it */
        close(sock);
        return GPUIPC_FAIL;
    }
    if (gpuipc_stop_parent() > 0 && getppid() != gpuipc_stop_parent()) {
        gpuipc_log_step(&envp->log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_HELLO, GPUIPC_LOG_NO_TIME,
                        "%s peer gone during hello: the producer (pid %d) exited before "
                        "the consumer started", gpuipc_status_word(GPUIPC_FAIL),
                        (int)gpuipc_stop_parent());
        close(sock);
        return GPUIPC_FAIL;
    }
    verdict = serve_on(envp, sock, end);
    gpuipc_watch_claim(gpuipc_app_stop_code(verdict));
    gpuipc_app_deadline_done(dl);
    /* A session that ended with BYE had its last checks then (and its status
     * is the one both sides agreed on); one that broke is checked now. */
    if (end->said_bye)
        return gpuipc_app_stop_code(verdict);
    return gpuipc_app_check_fds_at_exit(proc, &envp->log, gpuipc_app_stop_code(verdict));
}

int gpuipc_app_consumer_main(int sock, const gpuipc_options *o, const gpuipc_inject *inject,
                             uint64_t t0, int cred_pid, const gpuipc_app_proc *proc,
                             gpuipc_session_end *end)
{
    return consumer_main(sock, o, inject, t0, cred_pid, 0, proc, end);
}

/* Forks a consumer that serves on sv[1]; the other pair's ends (-1: none)
 * are closed in it. Returns its pid, the parent keeping sv[0] only, or -1
 * after saying why (both ends of sv closed). */
pid_t gpuipc_app_fork_consumer(int sv[2], const int other[2], int sacrificial,
                               const gpuipc_options *o, const gpuipc_inject *inject, uint64_t t0,
                               const gpuipc_app_proc *proc)
{
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        gpuipc_log_say("fork: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (pid == 0) {
        gpuipc_session_end end;
        int verdict;

        gpuipc_outputs_drop();
        close(sv[0]);
        if (other[0] >= 0)
            close(other[0]);
        if (other[1] >= 0)
            close(other[1]);
        verdict = consumer_main(sv[1], o, inject, t0, 0, sacrificial, proc, &end);
        fflush(NULL);
        _exit(verdict);
    }
    close(sv[1]);
    return pid;
}
